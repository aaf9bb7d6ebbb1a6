"""Refit what an exported scene parser fits after training, on held-out renders, without training.

    python -m logicval_hf.training.refit_parser --model $CHECKPOINTS/detector/model.onnx \\
        --attribute-model $CHECKPOINTS/classifier/scene_parser_attributes.onnx \\
        --data $RENDERS/t2i_fit --data $SHARED/data/clevr_blender:0.05 --out scene_parser.onnx

Two parts of the shipped pair (`logicval_hf/perception/scene_parser.py`) are fitted on held-out images after
the networks are trained, and both depend on the pair, not on either network alone
(`logicval_hf.training.parser_fit`):

* **how the two experts' attribute probabilities are combined**: per attribute a power of the detector's and
  of the classifier's calibrated probabilities (metadata ``expert_weights``, `combine_experts`). Each
  network's temperatures were fitted on its own, so where the two disagree their plain product trusts
  whichever is surer, and a classifier that is sure and wrong (a cylinder seen from above read as a sphere at
  0.99) wins against a detector that was right. One power per attribute for both networks (a temperature of the
  product: every object keeps the class the plain product gives it) minimises the held-out negative
  log-likelihood of the true classes (`fit_expert_weights`).
* **the scene confidence's power** (`scene_confidence`), fitted again through the new combination, and its
  **terms** (`fit_confidence_terms`): a logistic correction over features of the reading and the image that
  mark a look the networks did not train on (candidate peaks below the threshold, boxes touching the frame or
  each other, the border's colour cast, saturation, the number of objects), each allowed only to lower the
  confidence. Why: the calibrated parts are sure on any image that resembles what the networks saw, and real
  generated pictures (glossy rooms under coloured light, glass) are read wrong at high confidence; the renders
  of those looks (`logicval render-clevr --variations`, profile ``t2i_real``) show what the features say when
  the reading fails.

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
from dataclasses import replace
from pathlib import Path
from typing import Any

from logicval_hf.perception.parser_models import AttributeClassifier
from logicval_hf.perception.parser_settings import META_KEY
from logicval_hf.perception.scene_parser import DEFAULT_MODEL, SceneParser, attribute_model_beside
from logicval_hf.training.loop import command, parse
from logicval_hf.training.parser_data import Record, dataset_name, load_folder, parse_held_out_folder, split_holdout
from logicval_hf.training.parser_fit import (
    best_power,
    calibration_at,
    confidence_outcomes,
    fit_confidence_terms,
    fit_experts,
    fit_power,
    read_experts,
)

__all__ = ["main", "refit", "write_metadata"]


def _folder(spec: str) -> tuple[Path, float]:
    """``DIR[:FRACTION]`` for argparse: a CLEVR-layout folder and the last share of it (by name) to read."""
    try:
        return parse_held_out_folder(spec)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def refit(model: Path, attribute_model: Path, records: list[Record]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the detector's new metadata, figures): ``expert_weights`` and the confidence's power fitted on
    ``records`` for the pair (``model``, ``attribute_model``)."""
    parser = SceneParser(model, attribute_model=False)
    readings = read_experts(parser, AttributeClassifier(attribute_model), records)
    weights, per_attribute = fit_experts(readings)
    conf = parser.settings.confidence
    raw, exact = confidence_outcomes(readings.combined(dict(parser.settings.expert_weights)), conf)
    before = calibration_at(raw, exact, conf.power)
    power_only = best_power(raw, exact)
    kept = calibration_at(raw, exact, power_only)
    combined = readings.combined({a: (w[0], w[1]) for a, w in weights.items()})
    plain = replace(conf, terms=(), scale=1.0, bias=0.0)  # the product's power is fitted without the old terms
    power, after = fit_power(combined, plain)
    with_terms, term_figures = fit_confidence_terms(combined, replace(plain, power=round(power, 4)))
    meta = json.loads(json.dumps(parser.meta))
    meta["expert_weights"] = weights
    meta["confidence"] = {**(meta.get("confidence") or {}), "power": round(power, 4),
                          "terms": dict(with_terms.terms), "scale": with_terms.scale, "bias": with_terms.bias}
    figures = {"images": len(records), "attributes": per_attribute,
               # the file as it was; its combination with only the power refitted (what the weights add beyond
               # a new power); the refit
               "confidence_before": {"power": conf.power, **_rounded(before)},
               "confidence_power_only": {"power": round(power_only, 4), **_rounded(kept)},
               "confidence_after": {"power": round(power, 4), **_rounded(after)},
               "confidence_terms": {"terms": dict(with_terms.terms), "scale": with_terms.scale,
                                    "bias": with_terms.bias, **term_figures}}
    return meta, figures


def _rounded(figures: dict[str, Any]) -> dict[str, Any]:
    return {k: v if isinstance(v, int) else round(float(v), 4) for k, v in figures.items()}


def write_metadata(model: Path, meta: dict[str, Any], out: Path) -> None:
    """A copy of the ONNX file ``model`` with its LogicVal metadata replaced by ``meta``, written atomically
    to ``out`` (which may be ``model``); the graph and its weights are copied as they are."""
    import onnx

    from logicval_hf.common.atomic import atomic_path

    graph = onnx.load(str(model))
    entries = [e for e in graph.metadata_props if e.key == META_KEY]
    if not entries:
        raise ValueError(f"{model}: not a LogicVal scene-parser model (no {META_KEY!r} metadata)")
    entries[0].value = json.dumps(meta)
    with atomic_path(out) as tmp:
        onnx.save(graph, str(tmp))


def main(argv: list[str] | None = None) -> int:
    ap = command("logicval_hf.training.refit_parser", __doc__)
    ap.add_argument("--data", type=_folder, action="append", required=True, metavar="DIR[:FRACTION]",
                    help="held-out renders in the CLEVR layout that neither network trained on (repeatable); "
                         ":FRACTION reads only the last share of the folder by file name (a training hold-out)")
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                    help=f"the detector file to refit (default: the shipped {DEFAULT_MODEL.name})")
    ap.add_argument("--attribute-model", type=Path, default=None,
                    help="the attribute classifier that ships beside it (default: the file beside --model)")
    ap.add_argument("--out", type=Path, required=True, help="write the refitted detector file here")
    args = parse(ap, argv)
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
        sources.append({"folder": dataset_name(folder), "fraction": fraction, "images": len(recs),
                        "first": recs[0].name if recs else None})
    if not records:
        ap.error("no usable held-out scene in --data")
    meta, figures = refit(args.model, amodel, records)
    meta.setdefault("provenance", {})["refit"] = {
        "data": sources, "attribute_model": amodel.name, "attribute_model_sha256": _digest(amodel), **figures}
    write_metadata(args.model, meta, args.out)
    print(json.dumps({"out": str(args.out), "expert_weights": meta["expert_weights"], **figures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
