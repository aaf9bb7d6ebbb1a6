"""Score images (or scene graphs) against specs: the function behind the ``evaluate`` metric and the main job.

``compute(predictions, references)``: predictions are images (PIL, uint8 arrays, paths) or scene graphs
(`Scene`, dicts, JSON strings); references are specs (`Spec`, dicts, JSON strings) or benchmark rows (dicts
with ``spec_json`` and optionally ``id``, ``package``, ``label``). Images go through a perception backend
(default ``"clevr"``, weight-free); scene graphs are used as given. Verdicts come from the solver in batches.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from logicval_hf.errors import SpecError
from logicval_hf.contract.scene import Scene
from logicval_hf.scoring.scores import Record, aggregate
from logicval_hf.asp.solver import Solver, default_solver
from logicval_hf.contract.spec import Spec


def _is_scene_graph(x: Any) -> bool:
    if isinstance(x, Scene):
        return True
    if isinstance(x, Mapping):
        return "objects" in x
    if isinstance(x, str):
        s = x.lstrip()
        return s.startswith("{")
    return False


def parse_reference(ref: Any, solver: Solver) -> tuple[Spec, dict[str, Any]]:
    """A reference as (spec, metadata with id / package / label when the reference carries them)."""
    meta: dict[str, Any] = {}
    if isinstance(ref, Mapping) and "spec_json" in ref:
        meta = {k: ref[k] for k in ("id", "package", "label") if k in ref and ref[k] is not None}
        ref = ref["spec_json"]
    if isinstance(ref, (str, bytes)):
        try:
            ref = json.loads(ref)
        except json.JSONDecodeError as e:
            raise SpecError(f"reference is not valid spec JSON ({e})") from None
    spec = ref if isinstance(ref, Spec) else Spec.from_dict(ref, catalog=solver.catalog)
    return spec, meta


def to_scenes(predictions: Sequence[Any], backend: str = "clevr", **settings: Any) -> list[Scene]:
    """Scene graphs for predictions: images through the perception backend, scene graphs parsed."""
    scenes: list[Scene | None] = [None] * len(predictions)
    image_idx = []
    for i, p in enumerate(predictions):
        if backend == "given" or _is_scene_graph(p):
            try:
                scenes[i] = p if isinstance(p, Scene) else Scene.from_dict(p)
            except ValueError as e:
                raise type(e)(f"predictions[{i}]: {e}") from None
        else:
            image_idx.append(i)
    if image_idx:
        from logicval_hf.perception import extract_scenes

        extracted = extract_scenes([predictions[i] for i in image_idx], backend=backend, **settings)
        for i, s in zip(image_idx, extracted):
            scenes[i] = s
    return scenes  # type: ignore[return-value]


def compute(
    predictions: Sequence[Any],
    references: Sequence[Any],
    backend: str = "clevr",
    per_sample: bool = True,
    solver: Solver | None = None,
    backend_settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Verdicts, scores and breakdowns for paired predictions and references.

    Args:
        predictions: images or scene graphs, one per reference.
        references: specs or benchmark rows.
        backend: perception backend for images (``"clevr"``, ``"neural"``) or ``"given"`` (scene graphs only).
        per_sample: include every sample's verdicts and scene graph.
        solver: a `Solver` to reuse (default: the shared one).
        backend_settings: keyword settings for the perception backend (model ids, thresholds, ...).
    Returns:
        ``aggregate`` of the records (``logicval_score``, ``relaxed_score``, ``abstention_rate``, breakdowns)
        plus ``per_sample`` when asked.
    Raises:
        ValueError: lengths differ, or a prediction / reference is malformed (the message names its index).
    """
    if isinstance(predictions, (str, bytes)) or isinstance(references, (str, bytes)):
        raise ValueError("predictions and references must be lists (one item per sample)")
    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions for {len(references)} references")
    solver = solver or default_solver()
    parsed = []
    for i, ref in enumerate(references):
        try:
            parsed.append(parse_reference(ref, solver))
        except ValueError as e:
            raise type(e)(f"references[{i}]: {e}") from None
    scenes = to_scenes(predictions, backend=backend, **dict(backend_settings or {}))
    labels = [meta.get("label") or solver.solve(spec).label for spec, meta in parsed]
    pairs = [(spec, scene) for (spec, _), scene in zip(parsed, scenes)]
    strict = solver.verify_many(pairs, count="strict", labels=labels)
    relaxed = solver.verify_many(pairs, count="relaxed", labels=labels)
    records = [
        Record(spec, label, s, r, meta.get("package"), meta.get("id"))
        for (spec, meta), label, s, r in zip(parsed, labels, strict, relaxed)
    ]
    out = aggregate(records)
    if per_sample:
        out["per_sample"] = [
            {
                "id": rec.id,
                "package": rec.package,
                "label": rec.label,
                "ok": rec.strict.ok,
                "relaxed_ok": rec.relaxed.ok,
                "count_ok": rec.strict.count_ok,
                "violated": list(rec.strict.violated),
                "n_objects": rec.strict.n_objects,
                "scene": scene.to_dict(),
            }
            for rec, scene in zip(records, scenes)
        ]
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
