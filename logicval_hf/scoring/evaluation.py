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
from logicval_hf.asp.solver import Solver, check_mode, default_solver
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SolverTimeout
from logicval_hf.scoring import inputs
from logicval_hf.scoring.scores import Record, aggregate

__all__ = ["PROBABILISTIC_SETTINGS", "compute", "images_in_folder", "parse_reference", "perceived_domain",
           "to_scenes", "verify_scenes"]

#: settings of the probabilistic score (`logicval_hf.scoring.probabilistic.probability`)
PROBABILISTIC_SETTINGS = ("max_exact", "samples", "seed", "epsilon")


def parse_reference(ref: Any, solver: Solver | None = None) -> tuple[Spec, dict[str, Any]]:
    """A reference as (spec, metadata with id / package / label when the reference carries them)."""
    return inputs.parse_reference(ref, (solver or default_solver()).catalog)


def perceived_domain(domain: Domain | None) -> Domain | None:
    """The ``domain=`` a perception backend is asked for, for a prediction whose spec is in ``domain``: None for
    CLEVR (every backend's default, so a CLEVR-only backend is never asked), the domain otherwise."""
    return None if domain is None or domain == load_catalog().domain else domain


def to_scenes(predictions: Sequence[Any], backend: str = "clevr", domains: Sequence[Domain | None] | None = None,
              **settings: Any) -> list[Scene]:
    """Scene graphs for predictions: images through the perception backend, scene graphs parsed (one kind per
    call; see `logicval_hf.scoring.inputs.normalise_predictions`).

    ``domains``: the domain of each prediction (its reference's spec's). Scene graphs are read in it; images of
    a domain other than CLEVR are perceived with ``domain=`` that domain (a ``domain`` in ``settings`` is used for
    every image instead; `perceived_domain`); CLEVR images are perceived as without domains.
    """
    checked = inputs.normalise_predictions(predictions, backend=backend, domains=domains)
    scenes: list[Scene | None] = [p if isinstance(p, Scene) else None for p in checked]
    image_idx = [i for i, s in enumerate(scenes) if s is None]
    if image_idx:
        from logicval_hf.common.extras import require_backend
        from logicval_hf.perception import extract_scenes

        require_backend(backend)  # e.g. "neural" without its extra: one line naming `logicval-hf[neural]`
        groups: dict[Any, list[int]] = {}
        for i in image_idx:
            d = None if domains is None or "domain" in settings else perceived_domain(domains[i])
            groups.setdefault(d, []).append(i)
        for d, idx in groups.items():
            extra = {} if d is None else {"domain": d}
            try:
                extracted = extract_scenes([checked[i] for i in idx], backend=backend, **settings, **extra)
            except ValueError as e:
                if inputs.takes_raw_input(backend):  # raw items are cheap to read again: name the one refused
                    _raise_for_first_refused(checked, idx, backend, {**settings, **extra})
                if d is None:
                    raise
                raise type(e)(f"predictions[{idx[0]}]: its spec is in domain {d.name!r}: {e}") from None
            for i, s in zip(idx, extracted, strict=True):
                scenes[i] = s
    return scenes  # type: ignore[return-value]


def _raise_for_first_refused(items: Sequence[Any], idx: Sequence[int], backend: str, settings: Mapping[str, Any]
                             ) -> None:
    """Read the raw items one by one and raise the first refusal as ``predictions[i]: ...``."""
    from logicval_hf.perception import extract_scene

    for i in idx:
        try:
            extract_scene(items[i], backend=backend, **settings)
        except ValueError as e:
            raise type(e)(f"predictions[{i}]: {e}") from None


def _probabilistic_settings(probabilistic: Any) -> dict[str, Any] | None:
    if probabilistic is None or probabilistic is False:
        return None
    if probabilistic is True:
        return {}
    if isinstance(probabilistic, Mapping):
        unknown = sorted(set(probabilistic) - set(PROBABILISTIC_SETTINGS))
        if unknown:
            raise ValueError(f"probabilistic: unknown setting(s) {unknown}; known: {list(PROBABILISTIC_SETTINGS)}")
        return dict(probabilistic)
    raise ValueError(f"probabilistic must be True, False or a dict of settings, got {type(probabilistic).__name__}")


def verify_scenes(specs: Sequence[Spec], scenes: Sequence[Scene], *, labels: Sequence[str | None] | None = None,
                  ids: Sequence[str | None] | None = None, packages: Sequence[str | None] | None = None,
                  solver: Solver | None = None, timeout: float | None = DEFAULT_TIMEOUT) -> list[Record]:
    """Verify each (spec, scene) pair once: one `Record` per pair, with the strict verdict, the count-relaxed
    one derived from it (no second solver call) and the scene.

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
        ValueError: lists of different lengths; a scene in another domain than its spec (the solver's check,
        naming the item).
        SolverTimeout: labelling spec ``k`` exceeded ``timeout`` (the message names it).
    """
    n = len(specs)
    for name, xs in (("scenes", scenes), ("labels", labels), ("ids", ids), ("packages", packages)):
        if xs is not None and len(xs) != n:
            raise ValueError(f"verify_scenes: {len(xs)} {name} for {n} specs")
    solver = solver or default_solver()
    solved: list[str] = []
    for k, spec in enumerate(specs):
        try:
            solved.append((labels[k] if labels is not None else None) or solver.solve(spec, timeout=timeout).label)
        except SolverTimeout as e:
            raise SolverTimeout(f"references[{k}]: {e}", e.budget) from None
    strict = solver.verify_many(list(zip(specs, scenes, strict=True)), count="strict", labels=solved)
    return [Record(spec, label, v, v.with_count("relaxed"), packages[k] if packages is not None else None,
                   ids[k] if ids is not None else None, scene)
            for k, (spec, label, v, scene) in enumerate(zip(specs, solved, strict, scenes, strict=True))]


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
) -> dict[str, Any]:
    """Verdicts, scores and breakdowns for paired predictions and references.

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
    Returns:
        ``aggregate`` of the records (``logicval_score``, ``relaxed_score``, ``abstention_rate``, ``by_load``,
        breakdowns) plus ``per_sample`` when asked.
    Raises:
        ValueError: no samples, lengths differ, images mixed with scene graphs, or a malformed prediction /
        reference (the message names its index); `SolverTimeout` (a ValueError) naming the reference whose label
        exceeded ``timeout``.
    """
    predictions, references = inputs.check_lists(predictions, references)
    check_mode(count)
    settings = _probabilistic_settings(probabilistic)
    solver = solver or default_solver()
    specs, metas = [], []
    for i, ref in enumerate(references):
        try:
            spec, meta = inputs.parse_reference(ref, solver.catalog)
        except ValueError as e:
            raise type(e)(f"references[{i}]: {e}") from None
        specs.append(spec)
        metas.append(meta)
    # each prediction is read (or perceived) in its spec's domain: that read is the one domain check per pair
    scenes = to_scenes(predictions, backend=backend, domains=[spec.domain for spec in specs],
                       **dict(backend_settings or {}))
    records = verify_scenes(specs, scenes, labels=[m.get("label") for m in metas], ids=[m.get("id") for m in metas],
                            packages=[m.get("package") for m in metas], solver=solver,
                            timeout=timeout)
    out = aggregate(records)
    results = None
    if settings is not None:
        from logicval_hf.scoring.probabilistic import probability

        results = [probability(rec.spec, rec.scene, count=count, label=rec.label, solver=solver, **settings)
                   for rec in records]
        out["probabilistic_score"] = float(np.mean([r.p for r in results]))
    repairs = None
    if repair:
        from logicval_hf.repairs.scores import mean_costs, repair_many

        repairs = repair_many([(rec.spec, rec.scene) for rec in records], count=count, timeout=timeout,
                              solver=solver)
        out["mean_repair_cost"], per_package = mean_costs(repairs, [rec.package for rec in records])
        for package, mean in per_package.items():
            out["by_package"][package]["mean_repair_cost"] = mean
    if per_sample:
        out["per_sample"] = []
        for k, rec in enumerate(records):
            sample = rec.to_sample(probs)
            if results is not None:
                r = results[k]
                sample.update(probability=r.p, probability_exact=r.exact, probability_stderr=r.stderr)
            if repairs is not None:
                from logicval_hf.repairs.scores import sample_fields

                sample.update(sample_fields(repairs[k]))
            out["per_sample"].append(sample)
    return out


def images_in_folder(folder: str | Path, ids: Sequence[str]) -> dict[str, Path]:
    """Images named by benchmark id in a folder (``<id>.png``/``.jpg``/``.jpeg``/``.webp``); missing ids omitted."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"image folder {str(folder)!r} does not exist")
    found: dict[str, Path] = {}
    for i in ids:
        for ext in (".png", ".jpg", ".jpeg", ".webp"):
            p = folder / f"{i}{ext}"
            if p.is_file():
                found[i] = p
                break
    return found
