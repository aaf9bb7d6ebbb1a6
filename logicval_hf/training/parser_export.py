"""Validate, calibrate and export the scene parser's detector, through the parser users run.

Validation runs the exported ONNX graph with `logicval_hf.perception.scene_parser.SceneParser` (its first look,
scale choice, second look and decoding), so the figures, the threshold and the calibration describe exactly what
ships. From held-out records it fits (`logicval_hf.training.parser_fit`): the detection threshold (most exact
scene graphs), the attribute softmax temperatures, the offset head's median bias, the scene confidence's parts
(`scene_confidence`: the probability that a peak of a given heat is an object, the centre error, the power that
corrects the product), the second look's decision threshold and, with the attribute classifier that ships
beside, the powers of the two experts' product (metadata ``expert_weights``) and the confidence's power on the
pair's output.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.matching import match_centres
from logicval_hf.perception.parser_decoding import MULTIPLE
from logicval_hf.perception.parser_models import AttributeClassifier
from logicval_hf.perception.parser_settings import ConfidenceSettings, ReadSettings, ScaleSettings
from logicval_hf.perception.scene_parser import SceneParser
from logicval_hf.training import loop
from logicval_hf.training.parser_augment import DEFAULT, Augmentation
from logicval_hf.training.parser_data import ATTRIBUTES, Record
from logicval_hf.training.parser_fit import (
    MATCH_RADIUS,
    fit_experts,
    fit_power,
    fit_second_look,
    fit_temperature,
    isotonic_table,
    read_experts,
    scene_exact,
)
from logicval_hf.training.parser_model import Export

__all__ = ["STRIDE", "THRESHOLDS", "calibrate", "evaluate", "export_onnx", "meta_for"]

#: the detectors' output stride (`logicval_hf.training.parser_model.build_model`)
STRIDE = 8
#: the detection thresholds the export chooses among (most exact held-out scene graphs)
THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)


def meta_for(cls, temperatures: dict[str, float], threshold: float, provenance: dict[str, Any],
             offset_bias: Sequence[float] = (0.0, 0.0), confidence: dict[str, Any] | None = None,
             aug: Augmentation = DEFAULT) -> dict[str, Any]:
    """A detector file's metadata (`logicval_hf.perception.parser_settings.DetectorSettings`)."""
    scale = ScaleSettings(probe_side=aug.probe_side, object_size=aug.object_size, long_side=aug.fixed_side)
    meta = {"version": 3, "offset_bias": [round(float(b), 4) for b in offset_bias], "attributes": list(ATTRIBUTES),
            "classes": {a: list(v) for a, v in cls.items()}, "stride": STRIDE, "multiple": MULTIPLE,
            "input": "float32 NCHW RGB in [0, 1]", "temperatures": temperatures, "threshold": threshold,
            "scale": scale.to_metadata(), "provenance": provenance}
    if confidence is not None:
        meta["confidence"] = confidence
    return meta


def export_onnx(net, path: Path, meta: dict[str, Any], canvas: tuple[int, int] = (320, 320)) -> None:
    """ONNX with dynamic batch and image size, metadata embedded; written atomically."""
    import torch

    outputs = ["peak", "reg", "logits", "heat", "vis"]
    axes = {"image": {0: "n", 2: "h", 3: "w"}, **{o: {0: "n", 2: "gh", 3: "gw"} for o in outputs}}
    loop.export_onnx(Export.wrap(net), net, path, torch.zeros(1, 3, canvas[1], canvas[0]), ["image"], outputs,
                     axes, meta, "LogicVal-HF CLEVR scene parser (see logicval_hf/perception/scene_parser.md)")


def evaluate(model_path: Path, records: Sequence[Record], attribute_model: Any = False,
             thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    """Run the parser at ``model_path`` on held-out ``records`` and collect what calibration needs: figures per
    threshold, matched detections' class probabilities (at the model's temperatures), centre errors in the
    reading scale's pixels, every peak's heat and whether it is an object, and per image the detections and
    candidates at the model's threshold."""
    parser = SceneParser(model_path, attribute_model=attribute_model)
    keep = parser.settings.decision_threshold()  # the model's own, after its second look where the file has one
    found = parser.detect([r.rgb for r in records], ReadSettings(threshold=min(thresholds), max_objects=64))
    per_thr = {t: {"count": 0, "exact": 0} for t in thresholds}
    probs: dict[str, list] = {a: [] for a in ATTRIBUTES}
    labels: dict[str, list] = {a: [] for a in ATTRIBUTES}
    errors, peaks, images = [], [], []
    for rec, (dets, cands) in zip(records, found, strict=True):
        W = rec.rgb.shape[1]
        for t in thresholds:
            dt = [d for d in dets if d.score >= t]
            pairs = match_centres([(d.cx, d.cy) for d in dt], rec.centres, MATCH_RADIUS * W, assign_far=True)
            per_thr[t]["count"] += len(dt) == len(rec.centres)
            per_thr[t]["exact"] += scene_exact(dt, rec, pairs)
        allp = list(dets) + list(cands)
        pairs = match_centres([(d.cx, d.cy) for d in allp], rec.centres, MATCH_RADIUS * W, assign_far=True)
        real = {i for i, _ in pairs}
        peaks += [(d.score, i in real) for i, d in enumerate(allp)]
        for i, j in pairs:
            d = allp[i]
            if d.score < keep:
                continue
            errors.append([(d.cx - rec.centres[j, 0]) * d.scale, (d.cy - rec.centres[j, 1]) * d.scale])
            for k, a in enumerate(ATTRIBUTES):
                if rec.labels[j, k] >= 0 and a in d.probs:
                    probs[a].append(d.probs[a])
                    labels[a].append(rec.labels[j, k])
        images.append((rec, [d for d in dets if d.score >= keep], [d for d in allp if d.score < keep]))
    n = max(len(records), 1)
    return {"images": len(records), "threshold": keep,
            "by_threshold": {str(t): {"count_accuracy": v["count"] / n, "exact_rate": v["exact"] / n}
                             for t, v in per_thr.items()},
            "probs": {a: (np.array(probs[a]), np.array(labels[a], int)) for a in ATTRIBUTES},
            "centre_errors": np.array(errors).reshape(-1, 2), "peaks": peaks, "per_image": images}


def calibrate(net, cls, records: Sequence[Record], provenance: dict[str, Any], attribute_model: Any = None,
              aug: Augmentation = DEFAULT) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, figures) of ``net`` calibrated on held-out ``records`` (see the module docstring), with the
    second look on and, given ``attribute_model``, the powers of the pair's product fitted."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "parser.onnx"
        ones = dict.fromkeys(ATTRIBUTES, 1.0)
        export_onnx(net, path, meta_for(cls, ones, 0.35, {}))
        v = evaluate(path, records)
        temps = {a: fit_temperature(np.log(np.clip(v["probs"][a][0], 1e-9, 1)), v["probs"][a][1])
                 if len(v["probs"][a][1]) else 1.0 for a in ATTRIBUTES}
        by = v["by_threshold"]  # most exact scenes, then best count, then closest to 0.35
        thr = float(max(by, key=lambda t: (by[t]["exact_rate"], by[t]["count_accuracy"], -abs(float(t) - 0.35))))
        err = v["centre_errors"]
        bias = (np.median(err, axis=0) / STRIDE).tolist() if len(err) else [0.0, 0.0]
        resid = err - np.array(bias) * STRIDE if len(err) else err
        sigma = float(1.4826 * np.median(np.abs(resid))) if len(err) else ConfidenceSettings().centre_sigma
        conf = {"peak_calibration": isotonic_table(v["peaks"]), "centre_sigma": round(max(sigma, 0.25), 4),
                "power": 1.0}
        meta = meta_for(cls, temps, thr, provenance, bias, confidence=conf, aug=aug)
        export_onnx(net, path, meta)
        look, look_figures = fit_second_look(path, records, thr)
        meta["second_look"] = look.to_metadata()
        export_onnx(net, path, meta)
        expert_figures = None
        if attribute_model:
            detector = SceneParser(path, attribute_model=False)
            readings = read_experts(detector, AttributeClassifier(Path(attribute_model)), records)
            meta["expert_weights"], expert_figures = fit_experts(readings)
            export_onnx(net, path, meta)
        final = evaluate(path, records, attribute_model=attribute_model)
        power, cal = fit_power(final["per_image"], ConfidenceSettings.from_metadata(conf))
        conf["power"] = round(power, 4)
    figures = {"val_images": v["images"], "threshold": thr, "temperatures": temps, "offset_bias_cells": bias,
               "val_at_threshold": by[str(thr)], "by_threshold": by, "confidence": conf,
               "confidence_calibration": cal, "second_look": {"threshold": look.threshold, **look_figures}}
    if expert_figures is not None:
        figures["expert_weights"] = {"weights": meta["expert_weights"], **expert_figures}
    return meta, figures


def write_history(out: Path, history: list[dict[str, Any]]) -> None:
    (out / "history.json").write_text(json.dumps(history, indent=1))
