"""Refit what an exported scene parser fits after training, on held-out renders, without training.

    python -m logicval_hf.training.refit_parser --data /work/cache/clevr_renders/t2i_fit \\
        --data ../shared/data/clevr_blender:0.05 --out /tmp/scene_parser.onnx

Two parts of the shipped pair (`logicval_hf/perception/scene_parser.py`) are fitted on held-out images after
the networks are trained, and both depend on the pair, not on either network alone:

* **how the two experts' attribute probabilities are combined**: per attribute a power of the detector's and
  of the classifier's calibrated probabilities (metadata ``expert_weights``, `combine_experts`). Each
  network's temperatures were fitted on its own, so where the two disagree their plain product trusts
  whichever is surer, and a classifier that is sure and wrong (a cylinder seen from above read as a sphere at
  0.99) wins against a detector that was right. The powers minimise the held-out negative log-likelihood of
  the true classes (`parser_export.fit_expert_weights`); with too few disagreements to learn from an
  attribute keeps the plain product.
* **the scene confidence's power** (`scene_confidence`), fitted again through the new combination.

The renders must be ones neither network trained on: the last ``FRACTION`` of a training folder by name
(``DIR:0.05``, the training hold-out), or whole folders rendered for this (``DIR``). Nothing else in the
file changes (weights, threshold, temperatures, second look); the fit and its figures are recorded under
``provenance.refit``. The model is written atomically to ``--out`` (it may be the input file). Refit the float
detector, then make its 8-bit copy again (`logicval_hf.training.quantize_parser`): the copy carries the metadata
it was made with.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from logicval_hf.training.parser_data import Record, load_folder, parse_held_out_folder, split_holdout

__all__ = ["VISIBLE_PEAK_GRID", "choose_visible_threshold", "fit_visible_peaks", "main", "refit", "write_metadata"]

#: the visible-peak thresholds `fit_visible_peaks` chooses among
VISIBLE_PEAK_GRID = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8)


def _folder(spec: str) -> tuple[Path, float]:
    """``DIR[:FRACTION]`` for argparse: a CLEVR-layout folder and the last share of it (by name) to read."""
    try:
        return parse_held_out_folder(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def choose_visible_threshold(records: list[Record], found: list[list[Any]], radius: float,
                             grid: tuple[float, ...] = VISIBLE_PEAK_GRID) -> tuple[dict[str, Any] | None, dict]:
    """(the ``visible_peaks`` metadata entry, figures) from each record's detections ``found`` by a parse with
    the visible-peak read at the lowest threshold of ``grid``: the threshold under which most records read
    exactly (ties: the higher threshold, fewer objects added), or None where none reads more of them exactly
    than the read without visible peaks. The objects a higher threshold adds are those of at least that heat."""
    from logicval_hf.common.matching import match_centres
    from logicval_hf.training.parser_export import MATCH_RADIUS, scene_exact

    attrs = ("color", "shape", "material")

    def exact_at(t: float | None) -> int:
        n = 0
        for rec, dets in zip(records, found, strict=True):
            ds = [d for d in dets if d.source != "visible" or (t is not None and d.score >= t)]
            pairs = match_centres([(d.cx, d.cy) for d in ds], rec.centres, MATCH_RADIUS * rec.rgb.shape[1],
                                  assign_far=True)
            n += scene_exact(ds, rec, pairs, attrs)
        return n

    base = exact_at(None)
    by = {t: exact_at(t) for t in grid}
    added = {t: sum(d.source == "visible" and d.score >= t for ds in found for d in ds) for t in grid}
    best = max(grid, key=lambda t: (by[t], t))
    figures = {"images": len(records), "radius": radius, "exact_without": base,
               "exact_by_threshold": {str(t): by[t] for t in grid},
               "objects_added_by_threshold": {str(t): added[t] for t in grid}}
    if by[best] <= base:
        return None, {**figures, "chosen": None}
    return {"threshold": best, "radius": radius}, {**figures, "chosen": best}


def fit_visible_peaks(model: Path, attribute_model: Path, records: list[Record], radius: float = 2.0,
                      grid: tuple[float, ...] = VISIBLE_PEAK_GRID) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """`choose_visible_threshold` over the pair's parse of ``records`` (one parse, at the lowest threshold).

    Raises:
        ValueError: ``model`` has no visible-peak outputs (trained without ``--visible-peaks``).
    """
    from logicval_hf.perception.scene_parser import SceneParser

    parser = SceneParser(model, attribute_model=attribute_model)
    if not parser.has_visible_peak_outputs:
        raise ValueError(f"{model}: no visible-peak outputs (train the detector with --visible-peaks)")
    parser.meta["visible_peaks"] = {"threshold": min(grid), "radius": radius}
    found = parser._detect([r.rgb for r in records], None, 32, 8, None)
    return choose_visible_threshold(records, [d for d, _ in found], radius, grid)


def refit(model: Path, attribute_model: Path, records: list[Record], tied: bool = True,
          classifier_flip: bool | None = None, visible_peaks: dict[str, Any] | bool | None = None
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the detector's new metadata, figures): ``expert_weights`` (``tied``: one power per attribute for both
    experts) and the confidence's power fitted on ``records`` for the pair (``model``, ``attribute_model``).
    ``classifier_flip``: set the file's default mirrored classifier read (`AttributeClassifier.classify`) and
    fit with it; None keeps the file's. ``visible_peaks``: the metadata entry of the visible-peak read to set
    and fit with (`fit_visible_peaks`), False to remove it, None to keep the file's."""
    from logicval_hf.perception.scene_parser import CONFIDENCE_DEFAULTS, AttributeClassifier, SceneParser
    from logicval_hf.training.parser_export import (
        best_power,
        calibration_at,
        confidence_outcomes,
        fit_experts,
        fit_power,
        read_experts,
    )

    parser = SceneParser(model, attribute_model=False)
    if classifier_flip is not None:
        parser.meta["classifier_flip"] = bool(classifier_flip)
    if visible_peaks is False:
        parser.meta.pop("visible_peaks", None)
    elif isinstance(visible_peaks, dict):
        parser.meta["visible_peaks"] = dict(visible_peaks)
    readings = read_experts(parser, AttributeClassifier(attribute_model), records)
    weights, per_attribute = fit_experts(readings, tied)
    conf = {**CONFIDENCE_DEFAULTS, **(parser.meta.get("confidence") or {})}
    attrs = ("color", "shape", "material")
    old = {a: (float(w[0]), float(w[1])) for a, w in (parser.meta.get("expert_weights") or {}).items()}
    raw, exact = confidence_outcomes(readings.combined(old), conf, attrs)
    before = calibration_at(raw, exact, float(conf["power"]))
    power_only = best_power(raw, exact)
    kept = calibration_at(raw, exact, power_only)
    power, after = fit_power(readings.combined({a: (w[0], w[1]) for a, w in weights.items()}), conf, attrs)
    meta = json.loads(json.dumps(parser.meta))
    meta["expert_weights"] = weights
    meta["confidence"] = {**(meta.get("confidence") or {}), "power": round(power, 4)}
    figures = {"images": len(records), "attributes": per_attribute,
               # the file as it was; its combination with only the power refitted (what the weights add beyond
               # a new power); the refit
               "confidence_before": {"power": conf["power"], **_rounded(before)},
               "confidence_power_only": {"power": round(power_only, 4), **_rounded(kept)},
               "confidence_after": {"power": round(power, 4), **_rounded(after)}}
    return meta, figures


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, int) else round(float(v), 4) for k, v in figures.items()}


def write_metadata(model: Path, meta: dict[str, Any], out: Path) -> None:
    """A copy of the ONNX file ``model`` with its LogicVal metadata replaced by ``meta``, written atomically
    to ``out`` (which may be ``model``)."""
    import onnx

    from logicval_hf.common.atomic import atomic_path
    from logicval_hf.perception.scene_parser import META_KEY

    graph = onnx.load(str(model))
    entries = [e for e in graph.metadata_props if e.key == META_KEY]
    if not entries:
        raise ValueError(f"{model}: not a LogicVal scene-parser model (no {META_KEY!r} metadata)")
    entries[0].value = json.dumps(meta)
    with atomic_path(out) as tmp:
        onnx.save(graph, str(tmp))


def main(argv: list[str] | None = None) -> int:
    from logicval_hf.perception.scene_parser import DEFAULT_MODEL, attribute_model_beside

    ap = argparse.ArgumentParser(prog="python -m logicval_hf.training.refit_parser",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=_folder, action="append", required=True, metavar="DIR[:FRACTION]",
                    help="held-out renders in the CLEVR layout that neither network trained on (repeatable); "
                         ":FRACTION reads only the last share of the folder by file name (a training hold-out)")
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                    help=f"the detector file to refit (default: the shipped {DEFAULT_MODEL.name})")
    ap.add_argument("--attribute-model", type=Path, default=None,
                    help="the attribute classifier that ships beside it (default: the file beside --model)")
    ap.add_argument("--out", type=Path, required=True, help="write the refitted detector file here")
    ap.add_argument("--powers", choices=("tied", "free"), default="tied",
                    help="tied (default): one power for both experts per attribute, a temperature of their "
                         "product, so every object keeps the class the plain product gives it and only how sure "
                         "the probabilities and the confidence are changes; free: a power for each expert, which "
                         "may also change classes (on the 2026-12-02 renders it lost three JPEG q50 images)")
    ap.add_argument("--classifier-flip", choices=("on", "off"), default=None,
                    help="set the file's default for the classifier's mirrored read (each crop also read mirrored, "
                         "the two readings averaged; setting classifier_flip) and fit with it (default: keep the "
                         "file's; off when it has none)")
    ap.add_argument("--visible-peaks", choices=("fit", "off"), default=None,
                    help="fit: choose the visible-peak threshold (objects found where they show, for those whose "
                         "centre is hidden; logicval_hf.perception.visible_peaks) on --data, kept only where it "
                         "reads more images exactly than without, then fit the rest with it; off: remove the "
                         "read from the file (default: keep the file's)")
    args = ap.parse_args(argv)
    try:
        import onnx  # noqa: F401  the refit rewrites the model file's metadata
    except ImportError:
        ap.error("refitting needs the onnx package: pip install 'logicval-hf[train]'")
    amodel = args.attribute_model or attribute_model_beside(args.model)
    for path, what in ((args.model, "--model"), (amodel, "--attribute-model")):
        if not path.is_file():
            ap.error(f"{what}: {str(path)!r} not found")
    records: list[Record] = []
    sources = []
    for folder, fraction in args.data:
        recs = load_folder(folder, who="refit_parser")
        recs = split_holdout(recs, fraction)[1] if fraction < 1 else recs
        records += recs
        sources.append({"folder": str(folder), "fraction": fraction, "images": len(recs),
                        "first": recs[0].name if recs else None})
    if not records:
        ap.error("no usable held-out scene in --data")
    flip = None if args.classifier_flip is None else args.classifier_flip == "on"
    visible: dict[str, Any] | bool | None = None if args.visible_peaks is None else False
    peak_figures = None
    if args.visible_peaks == "fit":
        try:
            entry, peak_figures = fit_visible_peaks(args.model, amodel, records)
        except ValueError as e:
            ap.error(f"--visible-peaks fit: {e}")
        visible = entry if entry is not None else False
    meta, figures = refit(args.model, amodel, records, args.powers == "tied", flip, visible)
    if peak_figures is not None:
        figures["visible_peaks"] = peak_figures
    meta.setdefault("provenance", {})["refit"] = {
        "data": sources, "attribute_model": amodel.name, "attribute_model_sha256": _digest(amodel), **figures}
    write_metadata(args.model, meta, args.out)
    print(json.dumps({"out": str(args.out), "expert_weights": meta["expert_weights"], **figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
