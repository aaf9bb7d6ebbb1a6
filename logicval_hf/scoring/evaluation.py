"""Score images (or scene graphs) against specs: the function behind the ``evaluate`` metric and the main job.

``compute(predictions, references)``: predictions are images (PIL, uint8 arrays, paths, encoded bytes) or scene
graphs (`Scene`, dicts, JSON strings), one kind per call; references are specs (`Spec`, dicts, JSON strings) or
benchmark rows (dicts with ``spec_json`` and optionally ``id``, ``package``, ``label``); see
`logicval_hf.scoring.inputs`. Images go through a perception backend (default ``"clevr"``, the shipped CLEVR scene parser); scene
graphs are used as given. Each (spec, scene) is verified once, in batches; the count-relaxed verdict is derived
from the same result.

Every prediction is read in the domain of its reference's spec (``"domain": "coco"`` in the spec; none: CLEVR):
a scene graph that names no domain is taken to be in it, one in another domain is an error naming the item;
images of a spec in another domain than CLEVR are perceived in that domain (``domain=`` to the backend, e.g.
``"neural"``; the CLEVR scene parser refuses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.scoring import inputs
from logicval_hf.scoring.scores import Record, aggregate
from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.solver import Solver, check_mode, default_solver
from logicval_hf.errors import SolverTimeout

#: settings of the probabilistic score (`logicval_hf.scoring.probabilistic.probability`)
PROBABILISTIC_SETTINGS = ("max_exact", "samples", "seed", "epsilon")


def parse_reference(ref: Any, solver: Solver | None = None) -> tuple[Spec, dict[str, Any]]:
    """A reference as (spec, metadata with id / package / label when the reference carries them)."""
    return inputs.parse_reference(ref, (solver or default_solver()).catalog)


def to_scenes(predictions: Sequence[Any], backend: str = "clevr", domains: Sequence[Domain | None] | None = None,
              **settings: Any) -> list[Scene]:
    """Scene graphs for predictions: images through the perception backend, scene graphs parsed (one kind per
    call; see `logicval_hf.scoring.inputs.normalise_predictions`).

    ``domains``: the domain of each prediction (its reference's spec's). Scene graphs are read in it; images of
    a domain other than CLEVR are perceived with ``domain=`` that domain (a ``domain`` in ``settings`` is used for
    every image instead); CLEVR images are perceived as without domains.
    """
    checked = inputs.normalise_predictions(predictions, backend=backend, domains=domains)
    scenes: list[Scene | None] = [p if isinstance(p, Scene) else None for p in checked]
    image_idx = [i for i, s in enumerate(scenes) if s is None]
    if image_idx:
        from logicval_hf.common.extras import require_backend
        from logicval_hf.perception import extract_scenes

        require_backend(backend)  # e.g. "neural" without its extra: one line naming `logicval-hf[neural]`
        groups: dict[Any, list[int]] = {}
        clevr = load_catalog().domain
        for i in image_idx:
            d = None if domains is None or "domain" in settings or domains[i] in (None, clevr) else domains[i]
            groups.setdefault(d, []).append(i)
        for d, idx in groups.items():
            extra = {} if d is None else {"domain": d}
            try:
                extracted = extract_scenes([checked[i] for i in idx], backend=backend, **settings, **extra)
            except ValueError as e:
                if d is None:
                    raise
                raise type(e)(f"predictions[{idx[0]}]: its spec is in domain {d.name!r}: {e}") from None
            for i, s in zip(idx, extracted):
                scenes[i] = s
    return scenes  # type: ignore[return-value]


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


def _scene_dict(scene: Scene, probs: bool) -> dict[str, Any]:
    d = scene.to_dict()
    if not probs:
        for o in d["objects"]:
            o.pop("probs", None)
    return d


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
) -> dict[str, Any]:
    """Verdicts, scores and breakdowns for paired predictions and references.

    Args:
        predictions: images or scene graphs (not both), one per reference.
        references: specs or benchmark rows.
        backend: perception backend for images (``"clevr"``, ``"neural"``) or ``"given"`` (scene graphs only).
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
    parsed = []
    for i, ref in enumerate(references):
        try:
            parsed.append(inputs.parse_reference(ref, solver.catalog))
        except ValueError as e:
            raise type(e)(f"references[{i}]: {e}") from None
    domains = [spec.domain for spec, _ in parsed]
    scenes = to_scenes(predictions, backend=backend, domains=domains, **dict(backend_settings or {}))
    for i, (scene, domain) in enumerate(zip(scenes, domains)):
        inputs.check_domain(scene, domain, f"predictions[{i}]")
    labels = []
    for i, (spec, meta) in enumerate(parsed):
        try:
            labels.append(meta.get("label") or solver.solve(spec, timeout=timeout).label)
        except SolverTimeout as e:
            raise SolverTimeout(f"references[{i}]: {e}", e.budget) from None
    strict = solver.verify_many([(spec, scene) for (spec, _), scene in zip(parsed, scenes)], count="strict",
                                labels=labels)
    records = [
        Record(spec, label, s, s.with_count("relaxed"), meta.get("package"), meta.get("id"))
        for (spec, meta), label, s in zip(parsed, labels, strict)
    ]
    out = aggregate(records)
    results = None
    if settings is not None:
        from logicval_hf.scoring.probabilistic import probability

        results = [probability(rec.spec, scene, count=count, label=rec.label, solver=solver, **settings)
                   for rec, scene in zip(records, scenes)]
        out["probabilistic_score"] = float(np.mean([r.p for r in results]))
    if per_sample:
        out["per_sample"] = []
        for k, (rec, scene) in enumerate(zip(records, scenes)):
            sample = {
                "id": rec.id,
                "package": rec.package,
                "label": rec.label,
                "ok": rec.strict.ok,
                "relaxed_ok": rec.relaxed.ok,
                "count_ok": rec.strict.count_ok,
                "violated": list(rec.strict.violated),
                "n_objects": rec.strict.n_objects,
                "load": rec.load,
                "scene": _scene_dict(scene, probs),
            }
            if results is not None:
                r = results[k]
                sample.update(probability=r.p, probability_exact=r.exact, probability_stderr=r.stderr)
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
