"""Score images (or scene graphs) against specs: the function behind the ``evaluate`` metric and the main job.

``compute(predictions, references)``: predictions are images (PIL, uint8 arrays, paths, encoded bytes) or scene
graphs (`Scene`, dicts, JSON strings), one kind per call; references are specs (`Spec`, dicts, JSON strings) or
benchmark rows (dicts with ``spec_json`` and optionally ``id``, ``package``, ``label``); see
`logicval_hf.scoring.inputs`. Images go through a perception backend (default ``"clevr"``, the shipped CLEVR scene
parser); scene graphs are used as given. Each (spec, scene) is verified once, in batches; the count-relaxed verdict
is derived from the same result.

Two levels: `compute` takes what a user has (raw predictions and references) and returns scores; underneath,
`to_scenes` turns predictions into `Scene` objects and `verify_scenes` turns parsed specs and scenes into
`Record` objects (the main job calls these two directly: it has specs and scenes already).

Every prediction is read in the domain of its reference's spec (``"domain": "coco"`` in the spec; none: CLEVR):
a scene graph that names no domain is taken to be in it, one in another domain is an error naming the item;
images of a spec in another domain than CLEVR are perceived in that domain (``domain=`` to the backend, e.g.
``"neural"``; the CLEVR scene parser refuses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.solver import Solver, default_solver
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.perception.images import IMAGE_EXTENSIONS
from logicval_hf.scoring import inputs
from logicval_hf.scoring.judge import (
    PROBABILISTIC_SETTINGS,
    Judgement,
    JudgeOptions,
    judge,
    perceived_domain,
    read_scenes,
)
from logicval_hf.scoring.scores import Record, aggregate

__all__ = ["IMAGE_EXTENSIONS", "PROBABILISTIC_SETTINGS", "compute", "images_in_folder", "parse_reference",
           "perceived_domain", "summarise", "to_scenes", "verify_scenes"]

#: the files a folder of images is searched for, per id, in this order


def parse_reference(ref: Any, solver: Solver | None = None) -> tuple[Spec, dict[str, Any]]:
    """A reference as (spec, metadata with id / package / label when the reference carries them)."""
    from logicval_hf.scoring.judge import parse_reference as parse

    return parse(ref, (solver or default_solver()).catalog)


def to_scenes(predictions: Sequence[Any], backend: str = "clevr", domains: Sequence[Domain | None] | None = None,
              **settings: Any) -> list[Scene]:
    """Scene graphs for predictions: images through the perception backend (the judge's reading,
    `logicval_hf.scoring.judge.read_scenes`), scene graphs parsed (one kind per call; see
    `logicval_hf.scoring.inputs.normalise_predictions`).

    ``domains``: the domain of each prediction (its reference's spec's). Scene graphs are read in it; images of
    a domain other than CLEVR are perceived with ``domain=`` that domain (a ``domain`` in ``settings`` is used for
    every image instead; `perceived_domain`); CLEVR images are perceived as without domains.

    Raises:
        ValueError: the first prediction that cannot be read, named (``predictions[i]: ...``).
    """
    predictions = list(predictions)
    if domains is not None and len(domains) != len(predictions):
        raise ValueError(f"got {len(domains)} domains for {len(predictions)} predictions")
    inputs.check_one_kind(predictions, backend)
    options = JudgeOptions(backend=backend, backend_settings=settings)
    scenes: list[Scene | None] = [None] * len(predictions)
    groups: dict[Any, list[int]] = {}
    for i, p in enumerate(predictions):
        domain = None if domains is None else domains[i]
        if inputs.is_scene_graph(p):
            scenes[i] = inputs.normalise_prediction(p, f"predictions[{i}]", backend, domain)
        else:
            groups.setdefault(None if domains is None or "domain" in settings else perceived_domain(domain),
                              []).append(i)
    for domain, idx in groups.items():
        names = [f"predictions[{i}]" for i in idx]
        for i, got in zip(idx, read_scenes([predictions[i] for i in idx], domain, options, names), strict=True):
            if not isinstance(got, Scene):
                raise got
            scenes[i] = got
    return scenes  # type: ignore[return-value]


def verify_scenes(specs: Sequence[Spec], scenes: Sequence[Scene], *, labels: Sequence[str | None] | None = None,
                  ids: Sequence[str | None] | None = None, packages: Sequence[str | None] | None = None,
                  solver: Solver | None = None, timeout: float | None = DEFAULT_TIMEOUT) -> list[Record]:
    """Verify each (spec, scene) pair once (the judge, `logicval_hf.scoring.judge.judge`): one `Record` per
    pair, with the strict verdict, the count-relaxed one derived from it (no second solver call) and the scene.

    Args:
        specs: parsed specifications.
        scenes: one per spec, in its spec's domain (`to_scenes` reads predictions so).
        labels: each spec's ``SAT`` / ``UNSAT`` label where known (a benchmark row's); the others are solved.
        ids: benchmark ids carried into the records (optional).
        packages: benchmark packages carried into the records (optional).
        solver: a `Solver` to reuse (default: the shared one); scenes of one spec share its grounding.
        timeout: time budget in seconds for labelling each spec without a label (None: no budget).
    Returns:
        The records, in input order.
    Raises:
        ValueError: lists of different lengths; a scene in another domain than its spec (naming the item).
        SolverTimeout: labelling spec ``k`` exceeded ``timeout`` (the message names it).
    """
    n = len(specs)
    for name, xs in (("scenes", scenes), ("labels", labels), ("ids", ids), ("packages", packages)):
        if xs is not None and len(xs) != n:
            raise ValueError(f"verify_scenes: {len(xs)} {name} for {n} specs")
    results = judge(specs, scenes, JudgeOptions(backend="given", timeout=timeout, errors="raise"), solver=solver,
                    labels=labels)
    return [Record(j.spec, j.label, j.strict, j.relaxed, packages[k] if packages is not None else None,  # type: ignore[arg-type]
                   ids[k] if ids is not None else None, j.scene) for k, j in enumerate(results)]


def summarise(results: Sequence[Judgement], options: JudgeOptions | None = None, per_sample: bool = True,
              probs: bool = False) -> dict[str, Any]:
    """The metric's answer for judged items: `aggregate` of the scored ones, ``probabilistic_score`` and
    ``mean_repair_cost`` when ``options`` asked for them, ``per_sample`` when asked; with ``min_confidence``, also
    ``min_confidence``, ``n_read`` (items read with at least that confidence: the scores are theirs) and
    ``n_unread`` (every sample also says ``unread``: None, or why it was set apart).

    Raises:
        ValueError: an item failed (its error).
    """
    for j in results:
        if j.exception is not None:
            raise j.exception
    options = options or JudgeOptions()
    min_confidence = options.min_confidence
    scored = [j for j in results if j.scored]
    out = aggregate([j.record() for j in scored])
    if min_confidence is not None:
        out.update(n_samples=len(results), min_confidence=min_confidence, n_read=len(scored),
                   n_unread=len(results) - len(scored))
    if options.probability_settings is not None:
        with_p = [j.probability.p for j in scored if j.probability is not None]
        out["probabilistic_score"] = float(np.mean(with_p)) if with_p else None
    if options.repair:
        from logicval_hf.repairs.costs import mean_costs

        out["mean_repair_cost"], per_package = mean_costs([j.repair or j.repair_error for j in scored],
                                                          [j.package for j in scored])
        for package, mean in per_package.items():
            out["by_package"][package]["mean_repair_cost"] = mean
    if per_sample:
        out["per_sample"] = [j.to_sample(probs, with_unread=min_confidence is not None) for j in results]
    return out


def compute(
    predictions: Sequence[Any],
    references: Sequence[Any],
    backend: str = "clevr",
    per_sample: bool = True,
    solver: Solver | None = None,
    backend_settings: Mapping[str, Any] | None = None,
    count: str = "strict",
    probabilistic: bool | Mapping[str, Any] = False,
    probs: bool = False,
    timeout: float | None = DEFAULT_TIMEOUT,
    repair: bool = False,
    min_confidence: float | None = None,
    baselines: str | Sequence[Any] | Mapping[str, Any] | None = None,
    baseline_settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Verdicts, scores and breakdowns for paired predictions and references (the judge,
    `logicval_hf.scoring.judge.judge`, then `summarise`).

    Args:
        predictions: images or scene graphs (not both), one per reference.
        references: specs or benchmark rows.
        backend: perception backend for images (``"clevr"``, ``"neural"``), ``"given"`` (scene graphs only) or
            any registered backend; one that takes raw input gets every prediction that is not a scene graph
            untouched.
        per_sample: include every sample's verdict, violated constraints and scene graph.
        solver: a `Solver` to reuse (default: the shared one).
        backend_settings: keyword settings for the perception backend (model ids, thresholds, ...).
        count: count mode of the probabilistic score, ``"strict"`` or ``"relaxed"`` (both deterministic scores
            are always reported).
        probabilistic: also compute the probability that each scene satisfies its spec under the perceived
            attribute probabilities (``True``, or a dict of settings: ``max_exact``, ``samples``, ``seed``,
            ``epsilon``); adds ``probabilistic_score`` and per-sample ``probability`` fields.
        probs: keep the objects' attribute probability tables in the per-sample scene graphs.
        timeout: time budget in seconds for labelling each spec given without its label (None: no budget).
        repair: also compute each sample's cheapest repair (`logicval_hf.repair`, under ``count``, within
            ``timeout`` each): adds ``mean_repair_cost`` (overall and per package in ``by_package``) and per-sample
            ``repair_cost``, ``repair_optimal``, ``edits`` and ``instructions``.
        min_confidence: set apart as *unread* every sample whose scene confidence is below it (or that has none):
            scored neither as a pass nor as a failure; the scores are over the others, and ``n_read``,
            ``n_unread``, ``min_confidence`` and per-sample ``unread`` (the reason) say so.
        baselines: also score every image with these baseline metrics (`logicval_hf.scoring.baselines`): names
            (``"clipscore,vlm-judge"`` or a list), built metrics, or ``{name: metric}``; adds ``baselines``
            (``{name: {"mean", "n_scored", "n_unscored"}}``) and per-sample ``baselines`` (``{name: record}``,
            `logicval_hf.scoring.baselines.items.baseline_record`). Images only: a baseline reads no scene graph.
        baseline_settings: ``{name: {setting: value}}`` for the baselines named in ``baselines``
            (``logicval baselines`` lists the settings).
    Returns:
        ``aggregate`` of the records (``logicval_score``, ``relaxed_score``, ``abstention_rate``, ``by_load``,
        breakdowns) plus ``per_sample`` when asked.
    Raises:
        ValueError: no samples, lengths differ, images mixed with scene graphs, a ``min_confidence`` outside
        [0, 1], or a malformed prediction / reference (the message names its index); `SolverTimeout` (a
        ValueError) naming the reference whose label exceeded ``timeout``.
    """
    predictions, references = inputs.check_lists(predictions, references)
    metrics = None
    if baselines:
        from logicval_hf.scoring.baselines.factory import resolve_baselines

        if any(inputs.is_scene_graph(p) for p in predictions):
            raise ValueError("baselines score images against prompts; the predictions are scene graphs")
        metrics = resolve_baselines(baselines, baseline_settings)  # refused in one line before any work
    options = JudgeOptions(backend=backend, backend_settings=backend_settings or {}, count=count,
                           probabilistic=probabilistic, repair=repair, min_confidence=min_confidence,
                           timeout=timeout, errors="raise")
    inputs.check_one_kind(predictions, backend)
    result = summarise(judge(references, predictions, options, solver=solver), options, per_sample, probs)
    if metrics:
        from logicval_hf.scoring.baselines.items import add_baselines

        add_baselines(result, metrics, predictions, references)
    return result


def images_in_folder(folder: str | Path, ids: Sequence[str],
                     extensions: Sequence[str] = IMAGE_EXTENSIONS) -> dict[str, Path]:
    """Images named by benchmark id in a folder (``<id>.png``/``.jpg``/``.jpeg``/``.webp``, or the ``extensions``
    given: ``(".json",)`` for the scene graphs of the ``given`` backend); missing ids omitted."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"image folder {str(folder)!r} does not exist")
    found: dict[str, Path] = {}
    for i in ids:
        for ext in extensions:
            p = folder / f"{i}{ext}"
            if p.is_file():
                found[i] = p
                break
    return found
