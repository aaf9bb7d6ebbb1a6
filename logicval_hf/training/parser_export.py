"""Validate, calibrate and export the scene parser's detector, through the parser users run.

Validation runs the exported ONNX graph with `logicval_hf.perception.scene_parser.SceneParser` (its first look,
scale choice, two looks and decoding), so the figures, the threshold and the calibration describe exactly what
ships. From held-out records it fits: the detection threshold (most exact scene graphs), the attribute softmax
temperatures, the offset head's median bias, and the scene confidence's parts (`scene_confidence`): the
probability that a peak of a given heat is an object (isotonic fit), the centre error, and the power that
corrects the product of the parts (they are not independent). With the attribute classifier beside, the
powers of the two experts' product (`fit_expert_weights`, metadata ``expert_weights``) are fitted, and the
confidence's power on the pair's output. The second look at uncertain peaks (`logicval_hf.perception.second_look`)
gets its decision threshold from the same records, before the confidence's power is fitted through it.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.matching import match_centres
from logicval_hf.training import loop
from logicval_hf.training.parser_augment import DEFAULT, Augmentation
from logicval_hf.training.parser_data import ATTRIBUTES, Record
from logicval_hf.training.parser_model import Export

__all__ = ["EXPERT_POWERS", "MATCH_RADIUS", "THRESHOLDS", "ExpertReadings", "calibrate", "evaluate", "expert_nll",
           "export_onnx", "fit_expert_weights", "fit_experts", "fit_second_look", "fit_temperature", "isotonic_table",
           "meta_for", "read_experts", "scene_exact"]

THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
#: matched when the predicted centre lies within this share of the image width of the truth's
MATCH_RADIUS = 0.08


def scale_meta(aug: Augmentation = DEFAULT) -> dict[str, Any]:
    from logicval_hf.perception.scene_parser import ADAPTIVE_DEFAULTS

    return {**ADAPTIVE_DEFAULTS, "probe_side": aug.probe_side, "object_size": aug.object_size,
            "long_side": aug.fixed_side}


def meta_for(cls, temperatures: dict[str, float], threshold: float, provenance: dict[str, Any],
             flip: bool = False, offset_bias: Sequence[float] = (0.0, 0.0), adaptive: bool = True,
             confidence: dict[str, Any] | None = None, aug: Augmentation = DEFAULT) -> dict[str, Any]:
    from logicval_hf.perception.scene_parser import LONG_SIDE, MULTIPLE, STRIDE

    meta = {"version": 3 if adaptive else 2, "visible_point": True, "flip": flip,
            "offset_bias": [round(float(b), 4) for b in offset_bias], "attributes": list(ATTRIBUTES),
            "classes": {a: list(v) for a, v in cls.items()}, "stride": STRIDE, "long_side": LONG_SIDE,
            "multiple": MULTIPLE, "input": "float32 NCHW RGB in [0, 1]", "temperatures": temperatures,
            "threshold": threshold, "provenance": provenance}
    if adaptive:
        meta["scale"] = scale_meta(aug)
    if confidence is not None:
        meta["confidence"] = confidence
    return meta


def export_onnx(net, path: Path, meta: dict[str, Any], canvas: tuple[int, int] = (320, 320)) -> None:
    """ONNX with dynamic batch and image size, metadata embedded; written atomically."""
    import torch

    outputs = ["peak", "reg", "logits", "heat", "vis"] + (["vpeak", "vreg"] if getattr(net, "visible_peaks", False)
                                                          else [])
    axes = {"image": {0: "n", 2: "h", 3: "w"}, **{o: {0: "n", 2: "gh", 3: "gw"} for o in outputs}}
    loop.export_onnx(Export.wrap(net), net, path, torch.zeros(1, 3, canvas[1], canvas[0]), ["image"], outputs,
                     axes, meta, "LogicVal-HF CLEVR scene parser (see logicval_hf/perception/scene_parser.md)")


def scene_exact(dets, rec: Record, pairs, attributes: Sequence[str]) -> bool:
    """Whether ``dets`` (matched to ``rec``'s objects by ``pairs``) read ``rec`` exactly: the count, every
    matched object's ``attributes`` and the region of its centre rounded as the parser emits it."""
    from logicval_hf.contract.spatial import region_of

    H, W = rec.rgb.shape[:2]
    if len(dets) != len(rec.centres) or len(pairs) != len(dets):
        return False
    for i, j in pairs:
        d = dets[i]
        for k, a in enumerate(attributes):
            if int(np.argmax(d.probs[a])) != rec.labels[j, k]:
                return False
        cx, cy = math.floor(d.cx + 0.5), math.floor(d.cy + 0.5)  # as the parser emits box centres
        rx, ry = rec.centres[j]
        if region_of(cx, cy, W, H) != region_of(rx, ry, W, H):
            return False
    return True


def evaluate(model_path: Path, records: Sequence[Record], flip: bool, attribute_model: Any = False,
             thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    """Run the parser at ``model_path`` on held-out ``records`` and collect what calibration needs: figures per
    threshold, matched detections' class probabilities (at the model's temperatures), centre errors in the
    reading scale's pixels, every peak's heat and whether it is an object, and per image the detections and
    candidates at the model's threshold."""
    from logicval_hf.perception.scene_parser import SceneParser

    parser = SceneParser(model_path, attribute_model=attribute_model)
    keep = parser.decision_threshold()  # the model's own, after its second look where the file turns it on
    low = min(thresholds)
    found = parser._detect([r.rgb for r in records], low, 64, 8, flip)
    per_thr = {t: {"count": 0, "exact": 0} for t in thresholds}
    probs: dict[str, list] = {a: [] for a in ATTRIBUTES}
    labels: dict[str, list] = {a: [] for a in ATTRIBUTES}
    errors, peaks, images = [], [], []
    attrs3 = ("color", "shape", "material")
    for rec, (dets, cands) in zip(records, found, strict=True):
        W = rec.rgb.shape[1]
        for t in thresholds:
            dt = [d for d in dets if d.score >= t]
            pairs = match_centres([(d.cx, d.cy) for d in dt], rec.centres, MATCH_RADIUS * W, assign_far=True)
            per_thr[t]["count"] += len(dt) == len(rec.centres)
            per_thr[t]["exact"] += scene_exact(dt, rec, pairs, attrs3)
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


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The softmax temperature minimising the held-out negative log-likelihood (grid search; bounded so a
    held-out set without errors cannot make the model arbitrarily sure)."""
    if len(labels) == 0:
        return 1.0
    best, best_t = None, 1.0
    for t in np.exp(np.linspace(math.log(0.5), math.log(5.0), 61)):
        z = logits / t
        z = z - z.max(1, keepdims=True)
        nll = -(z[np.arange(len(labels)), labels] - np.log(np.exp(z).sum(1))).mean()
        if best is None or nll < best - 1e-9:
            best, best_t = nll, float(t)
    return best_t


def isotonic_table(pairs: Sequence[tuple[float, bool]], knots: int = 12) -> list[list[float]]:
    """A monotone map from a peak's heat value to the probability that it is an object: pool-adjacent-violators
    over the sorted heats, read at ``knots`` quantiles, with [0, 0] and [1, 1] at the ends (few peaks near
    either end: the heat itself)."""
    if not pairs:
        return [[0.0, 0.0], [1.0, 1.0]]
    xs = np.array([p[0] for p in pairs], float)
    ys = np.array([1.0 if p[1] else 0.0 for p in pairs])
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    blocks = [[y, 1.0] for y in ys]  # (mean, weight), merged while a later block's mean is lower
    means, weights, ends = [], [], []
    for i, (y, w) in enumerate(blocks):
        means.append(y)
        weights.append(w)
        ends.append(i)
        while len(means) > 1 and means[-2] > means[-1]:
            m = (means[-2] * weights[-2] + means[-1] * weights[-1]) / (weights[-2] + weights[-1])
            weights[-2] += weights[-1]
            means[-2] = m
            ends[-2] = ends[-1]
            means.pop(), weights.pop(), ends.pop()
    fitted = np.empty(len(xs))
    start = 0
    for m, e in zip(means, ends, strict=True):
        fitted[start:e + 1] = m
        start = e + 1
    qs = np.unique(np.quantile(xs, np.linspace(0, 1, knots)))
    table = [[0.0, 0.0]] + [[round(float(q), 4), round(float(np.interp(q, xs, fitted)), 4)] for q in qs
                            if 0 < q < 1] + [[1.0, 1.0]]
    for k in range(1, len(table)):  # keep it monotone after interpolation and rounding
        table[k][1] = max(table[k][1], table[k - 1][1])
    return table


def confidence_outcomes(per_image, conf_meta: dict[str, Any], attributes: Sequence[str]
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(log of the confidence product at power 1, whether the scene graph is exact) per held-out image of
    ``per_image`` ((record, detections, candidates) each)."""
    from logicval_hf.perception.scene_parser import scene_confidence

    raw, exact = [], []
    base = {**conf_meta, "power": 1.0}
    for rec, dets, cands in per_image:
        H, W = rec.rgb.shape[:2]
        raw.append(math.log(max(scene_confidence(dets, [c.score for c in cands], W, H, base, attributes), 1e-12)))
        pairs = match_centres([(d.cx, d.cy) for d in dets], rec.centres, MATCH_RADIUS * W, assign_far=True)
        exact.append(scene_exact(dets, rec, pairs, ("color", "shape", "material")))
    return np.array(raw, float), np.array(exact, float)


def calibration_at(raw: np.ndarray, exact: np.ndarray, power: float) -> dict[str, float]:
    """The calibration figures of the confidence at ``power`` (from `confidence_outcomes`; ECE over 10 bins)."""
    p = np.exp(power * raw)
    return {"images": len(exact), "exact_rate": float(exact.mean()) if len(exact) else 0.0,
            "mean_confidence": float(p.mean()) if len(p) else 0.0, "ece": expected_calibration_error(p, exact)}


def best_power(raw: np.ndarray, exact: np.ndarray) -> float:
    """The power of the confidence product (from `confidence_outcomes`) minimising the negative log-likelihood
    of "this scene graph is exact" (grid over [0.2, 3])."""
    best, best_g = None, 1.0
    for g in np.exp(np.linspace(math.log(0.2), math.log(3.0), 57)):
        p = np.clip(np.exp(g * raw), 1e-6, 1 - 1e-6)
        nll = -(exact * np.log(p) + (1 - exact) * np.log(1 - p)).mean()
        if best is None or nll < best - 1e-12:
            best, best_g = nll, float(g)
    return best_g


def fit_power(per_image, conf_meta: dict[str, Any], attributes: Sequence[str]) -> tuple[float, dict[str, float]]:
    """The power of the confidence product minimising the negative log-likelihood of "this scene graph is
    exact" on held-out images (`best_power`), and the calibration figures at that power (`calibration_at`)."""
    raw_a, ex = confidence_outcomes(per_image, conf_meta, attributes)
    g = best_power(raw_a, ex)
    return g, calibration_at(raw_a, ex, g)


#: The powers `fit_expert_weights` chooses from (log-spaced): below 1 tempers an expert, above sharpens it;
#: bounded so a held-out set without errors cannot make either expert arbitrarily sure or silent.
EXPERT_POWERS = tuple(round(float(v), 4) for v in np.exp(np.linspace(math.log(0.25), math.log(2.0), 19)))
#: Fewer held-out objects than this on which the two experts' choices differ leave the plain product (1, 1).
MIN_DISAGREEMENTS = 8


def expert_nll(p_det: np.ndarray, p_cls: np.ndarray, labels: np.ndarray, weights: tuple[float, float]
               ) -> tuple[float, int]:
    """(mean negative log-likelihood, errors) of the weighted product of experts (`combine_experts`) over
    held-out objects: ``p_det`` and ``p_cls`` (K, classes), ``labels`` (K,) class indices."""
    if len(labels) == 0:
        return 0.0, 0
    z = weights[0] * np.log(np.clip(p_det, 1e-12, 1)) + weights[1] * np.log(np.clip(p_cls, 1e-12, 1))
    z = z - z.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return float(-logp[np.arange(len(labels)), labels].mean()), int((z.argmax(1) != labels).sum())


def fit_expert_weights(p_det: np.ndarray, p_cls: np.ndarray, labels: np.ndarray, tied: bool = True
                       ) -> tuple[tuple[float, float], dict[str, Any]]:
    """The powers (detector, classifier) of one attribute's product of experts minimising the negative
    log-likelihood of held-out objects' true classes (grid `EXPERT_POWERS` squared; ties: the pair closest to
    (1, 1)), and the figures before and after. With fewer than `MIN_DISAGREEMENTS` objects whose two argmaxes
    differ there is too little to learn which expert to trust: (1, 1) stays (``fitted``: False).

    ``tied`` (the default): one power for both experts, a temperature of the plain product: the class each
    object gets stays the plain product's, only how sure the probabilities are changes (fitted whenever there
    are objects). Free powers (``tied=False``) may change classes: on the 2026-12-02 fitting renders they gave
    real CLEVR under JPEG q50 three wrong scene graphs more, tied ones none (model card)."""
    labels = np.asarray(labels, int)
    disagree = int((np.asarray(p_det).argmax(1) != np.asarray(p_cls).argmax(1)).sum()) if len(labels) else 0
    plain = expert_nll(p_det, p_cls, labels, (1.0, 1.0))
    best, fitted = (1.0, 1.0), (len(labels) > 0 if tied else disagree >= MIN_DISAGREEMENTS)
    if fitted:
        pairs = [(a, a) for a in EXPERT_POWERS] if tied else [(a, b) for a in EXPERT_POWERS for b in EXPERT_POWERS]
        scored = [(round(expert_nll(p_det, p_cls, labels, w)[0], 9), abs(math.log(w[0])) + abs(math.log(w[1])), w)
                  for w in pairs]
        best = min(scored)[2]
    after = expert_nll(p_det, p_cls, labels, best)
    return best, {"objects": len(labels), "disagreements": disagree, "fitted": fitted, "tied": tied,
                  "nll_plain": round(plain[0], 5), "errors_plain": plain[1],
                  "nll_fitted": round(after[0], 5), "errors_fitted": after[1]}


@dataclass
class ExpertReadings:
    """The two experts' readings of held-out records: per image (record, detections with the detector's own
    probabilities, candidate peaks); the classifier's probabilities of every detection in that order
    (attribute -> (K, classes); None without detections); per attribute (detector probabilities, classifier
    probabilities, true class indices) of the detections matched to a true object."""

    per_image: list[tuple[Any, list, list]]
    classifier: dict[str, np.ndarray] | None
    samples: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]

    def combined(self, weights: dict[str, tuple[float, float]]) -> list[tuple[Any, list, list]]:
        """``per_image`` with every detection's probabilities combined with the classifier's
        (`combine_experts` at ``weights``; (1, 1) for attributes without), as copies."""
        import copy

        from logicval_hf.perception.scene_parser import combine_experts

        out, k = [], 0
        for rec, dets, cands in self.per_image:
            new = []
            for d in dets:
                d2 = copy.copy(d)
                if self.classifier is not None:
                    d2.probs = {a: combine_experts(p, self.classifier[a][k], weights.get(a, (1.0, 1.0)))
                                if a in self.classifier else p for a, p in d.probs.items()}
                new.append(d2)
                k += 1
            out.append((rec, new, cands))
        return out


def read_experts(parser, classifier, records: Sequence[Record], flip: bool = False) -> ExpertReadings:
    """`ExpertReadings` of held-out ``records``: ``parser`` (loaded with ``attribute_model=False``, so its
    detections keep the detector's own probabilities; its second look as its file says) finds the objects as a
    parse with default settings would, ``classifier`` reads the same detections (`classifier_probs`; mirrored
    too where the parser's metadata sets ``classifier_flip``)."""
    from logicval_hf.perception.scene_parser import classifier_probs

    if parser.attributes is not None:
        raise ValueError("read_experts: load the parser with attribute_model=False (its classifier is read apart)")
    found = parser._detect([r.rgb for r in records], None, 32, 8, flip)
    cls_probs = classifier_probs(classifier, [r.rgb for r in records], [d for d, _ in found],
                                 mirror=parser.classifier_flip)
    attrs = ("color", "shape", "material")
    cols: dict[str, tuple[list, list, list]] = {a: ([], [], []) for a in attrs}
    k = 0
    for rec, (ds, _) in zip(records, found, strict=True):
        pairs = dict(match_centres([(d.cx, d.cy) for d in ds], rec.centres, MATCH_RADIUS * rec.rgb.shape[1],
                                   assign_far=True))
        for i, d in enumerate(ds):
            j = pairs.get(i)
            for a, (pd, pc, y) in cols.items():
                lab = int(rec.labels[j, ATTRIBUTES.index(a)]) if j is not None else -1
                if lab >= 0 and cls_probs is not None and a in d.probs and a in cls_probs:
                    pd.append(d.probs[a])
                    pc.append(cls_probs[a][k + i])
                    y.append(lab)
        k += len(ds)
    samples = {a: (np.array(pd, float) if y else np.zeros((0, 0)), np.array(pc, float) if y else np.zeros((0, 0)),
                   np.array(y, int)) for a, (pd, pc, y) in cols.items()}
    return ExpertReadings([(rec, d, c) for rec, (d, c) in zip(records, found, strict=True)], cls_probs, samples)


def fit_experts(readings: ExpertReadings, tied: bool = True) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """`fit_expert_weights` per attribute of ``readings``: (metadata ``expert_weights``, figures)."""
    weights, figures = {}, {}
    for a, (pd, pc, y) in readings.samples.items():
        w, figures[a] = fit_expert_weights(pd, pc, y, tied)
        weights[a] = [float(w[0]), float(w[1])]
    return weights, figures


def expected_calibration_error(p: np.ndarray, outcome: np.ndarray, bins: int = 10) -> float:
    """Mean |confidence - accuracy| over equal-width confidence bins, weighted by their share of images."""
    p, outcome = np.asarray(p, float), np.asarray(outcome, float)
    if len(p) == 0:
        return 0.0
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    return float(sum(abs(p[which == b].mean() - outcome[which == b].mean()) * (which == b).mean()
                     for b in range(bins) if (which == b).any()))


def fit_second_look(model_path: Path, records: Sequence[Record], flip: bool, threshold: float
                    ) -> tuple[dict[str, Any], dict[str, int]]:
    """The second look's settings (`logicval_hf.perception.second_look`, its decision threshold fitted on the
    band peaks of held-out ``records``) for the model at ``model_path`` (whose file has none yet), and the
    wrong band decisions with and without it."""
    from logicval_hf.perception.scene_parser import SceneParser
    from logicval_hf.perception.second_look import SECOND_LOOK_DEFAULTS, fit_threshold, labelled_band_peaks

    parser = SceneParser(model_path, attribute_model=False)
    cfg = dict(SECOND_LOOK_DEFAULTS)
    first, second, is_object = labelled_band_peaks(parser, [r.rgb for r in records], [r.centres for r in records],
                                                   cfg, threshold, flip, MATCH_RADIUS)
    cfg["threshold"], figures = fit_threshold(first, second, is_object, cfg["weight"], threshold)
    return cfg, figures


def calibrate(net, cls, records: Sequence[Record], flip: bool, provenance: dict[str, Any],
              attribute_model: Any = None, aug: Augmentation = DEFAULT, second_look: bool = True
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metadata, figures) of ``net`` calibrated on held-out ``records`` (see the module docstring);
    ``second_look``: fit and turn on `logicval_hf.perception.second_look`."""
    from logicval_hf.perception.scene_parser import CONFIDENCE_DEFAULTS, STRIDE

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "parser.onnx"
        ones = dict.fromkeys(ATTRIBUTES, 1.0)
        export_onnx(net, path, meta_for(cls, ones, 0.35, {}, flip, (0.0, 0.0)))
        v = evaluate(path, records, flip)
        temps = {a: fit_temperature(np.log(np.clip(v["probs"][a][0], 1e-9, 1)), v["probs"][a][1])
                 if len(v["probs"][a][1]) else 1.0 for a in ATTRIBUTES}
        by = v["by_threshold"]  # most exact scenes, then best count, then closest to 0.35
        thr = float(max(by, key=lambda t: (by[t]["exact_rate"], by[t]["count_accuracy"], -abs(float(t) - 0.35))))
        err = v["centre_errors"]
        bias = (np.median(err, axis=0) / STRIDE).tolist() if len(err) else [0.0, 0.0]
        resid = err - np.array(bias) * STRIDE if len(err) else err
        sigma = float(1.4826 * np.median(np.abs(resid))) if len(err) else CONFIDENCE_DEFAULTS["centre_sigma"]
        conf = {"peak_calibration": isotonic_table(v["peaks"]), "centre_sigma": round(max(sigma, 0.25), 4),
                "power": 1.0}
        meta = meta_for(cls, temps, thr, provenance, flip, bias, confidence=conf, aug=aug)
        export_onnx(net, path, meta)
        look_figures = None
        if second_look:
            meta["second_look"], look_figures = fit_second_look(path, records, flip, thr)
            export_onnx(net, path, meta)
        expert_figures = None
        if attribute_model:
            from logicval_hf.perception.scene_parser import AttributeClassifier, SceneParser

            readings = read_experts(SceneParser(path, attribute_model=False),
                                    AttributeClassifier(Path(attribute_model)), records, flip)
            meta["expert_weights"], expert_figures = fit_experts(readings)
            export_onnx(net, path, meta)
        final = evaluate(path, records, flip, attribute_model=attribute_model)
        power, cal = fit_power(final["per_image"], {**CONFIDENCE_DEFAULTS, **conf}, ("color", "shape", "material"))
        conf["power"] = round(power, 4)
    figures = {"val_images": v["images"], "threshold": thr, "temperatures": temps, "offset_bias_cells": bias,
               "val_at_threshold": by[str(thr)], "by_threshold": by, "confidence": conf,
               "confidence_calibration": cal}
    if look_figures is not None:
        figures["second_look"] = {"threshold": meta["second_look"]["threshold"], **look_figures}
    if expert_figures is not None:
        figures["expert_weights"] = {"weights": meta["expert_weights"], **expert_figures}
    return meta, figures


def write_history(out: Path, history: list[dict[str, Any]]) -> None:
    (out / "history.json").write_text(json.dumps(history, indent=1))
