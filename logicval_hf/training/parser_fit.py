"""What the scene-parser recipe fits on held-out renders after training, through the parser users run.

* **Temperatures** of each attribute's softmax (`fit_temperature`) and the **scene confidence**
  (`logicval_hf.perception.parser_decoding.scene_confidence`): the probability that a peak of a given heat is an
  object (`isotonic_table`), and the power that corrects the product of the parts (`fit_power`: the parts are not
  independent).
* **How the two networks' attribute probabilities combine** (`fit_experts`): per attribute one power for both
  experts' product, a temperature of the plain product, so every object keeps the class the plain product gives
  it and only how sure the probabilities are changes (metadata ``expert_weights``).
* **The second look's decision threshold** (`fit_second_look`, `logicval_hf.perception.second_look`): on the
  averaged heats of band peaks of held-out images, the threshold that errs least, judged by its worst
  neighbourhood so it lands on a plateau.

`logicval_hf.training.parser_export` fits all of them when a detector is exported; `refit_parser` fits the
combination and the confidence's power again for a new pair of files.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.matching import match_centres
from logicval_hf.perception.parser_decoding import (
    LOGIT_EPS,
    Detection,
    combine_experts,
    reading_features,
    scene_confidence,
)
from logicval_hf.perception.parser_models import AttributeClassifier
from logicval_hf.perception.parser_settings import (
    CONFIDENCE_FEATURES,
    ConfidenceSettings,
    ReadSettings,
    SecondLookSettings,
)
from logicval_hf.perception.scene_parser import SceneParser
from logicval_hf.perception.second_look import band_items, in_band, second_heat
from logicval_hf.training.parser_data import ATTRIBUTES, Record

__all__ = ["EXPERT_POWERS", "FIT_WINDOW", "MATCH_RADIUS", "MIN_FIT_ERRORS", "PERCEIVED", "TERM_PENALTY",
           "ExpertReadings", "averaged_heat", "best_power", "calibration_at", "confidence_outcomes",
           "expected_calibration_error", "expert_nll", "fit_confidence_terms", "fit_expert_weights", "fit_experts",
           "fit_logistic_terms", "fit_power", "fit_second_look", "fit_temperature", "fit_threshold", "isotonic_table",
           "labelled_band_peaks", "read_experts", "scene_exact", "term_samples", "wrong_decisions"]

#: matched when the predicted centre lies within this share of the image width of the truth's
MATCH_RADIUS = 0.08
#: one held-out image as the fits read it: its record, the detections kept and the candidate peaks below them
PerImage = tuple[Record, list[Detection], list[Detection]]
#: the attributes the project's domain perceives (the networks' size head serves training only)
PERCEIVED = ("color", "shape", "material")


def scene_exact(dets, rec: Record, pairs, attributes: Sequence[str] = PERCEIVED) -> bool:
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


# ---- the scene confidence ----------------------------------------------------------------------------------
def confidence_outcomes(per_image, conf: ConfidenceSettings, attributes: Sequence[str] = PERCEIVED
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(log of the confidence product at power 1, whether the scene graph is exact) per held-out image of
    ``per_image`` ((record, detections, candidates) each)."""
    raw, exact = [], []
    base = replace(conf, power=1.0)
    for rec, dets, cands in per_image:
        H, W = rec.rgb.shape[:2]
        raw.append(math.log(max(scene_confidence(dets, [c.score for c in cands], W, H, base, attributes), 1e-12)))
        pairs = match_centres([(d.cx, d.cy) for d in dets], rec.centres, MATCH_RADIUS * W, assign_far=True)
        exact.append(scene_exact(dets, rec, pairs))
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


def fit_power(per_image, conf: ConfidenceSettings, attributes: Sequence[str] = PERCEIVED
              ) -> tuple[float, dict[str, float]]:
    """The power of the confidence product minimising the negative log-likelihood of "this scene graph is
    exact" on held-out images (`best_power`), and the calibration figures at that power (`calibration_at`)."""
    raw_a, ex = confidence_outcomes(per_image, conf, attributes)
    g = best_power(raw_a, ex)
    return g, calibration_at(raw_a, ex, g)


def expected_calibration_error(p: np.ndarray, outcome: np.ndarray, bins: int = 10) -> float:
    """Mean |confidence - accuracy| over equal-width confidence bins, weighted by their share of images."""
    p, outcome = np.asarray(p, float), np.asarray(outcome, float)
    if len(p) == 0:
        return 0.0
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    return float(sum(abs(p[which == b].mean() - outcome[which == b].mean()) * (which == b).mean()
                     for b in range(bins) if (which == b).any()))


# ---- the confidence's terms ---------------------------------------------------------------------------------
#: the L2 penalty on each term's weight (features standardised): few held-out errors must not buy large weights
TERM_PENALTY = 1.0


def term_samples(per_image, conf: ConfidenceSettings, names: Sequence[str] = CONFIDENCE_FEATURES,
                 attributes: Sequence[str] = PERCEIVED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(logit of the product at ``conf``'s power, features (images x ``names``), whether the scene graph is
    exact) per held-out image of ``per_image``."""
    base, feats = [], []
    raw, exact = confidence_outcomes(per_image, conf, attributes)
    for (rec, dets, cands), r in zip(per_image, raw, strict=True):
        p = min(max(math.exp(conf.power * r), LOGIT_EPS), 1 - LOGIT_EPS)
        base.append(math.log(p / (1 - p)))
        f = reading_features(rec.rgb, dets, [c.score for c in cands])
        feats.append([f[n] for n in names])
    return np.array(base, float), np.array(feats, float).reshape(len(base), len(names)), exact


def fit_logistic_terms(base: np.ndarray, feats: np.ndarray, exact: np.ndarray, penalty: float = TERM_PENALTY,
                       iterations: int = 200) -> tuple[float, float, np.ndarray]:
    """(scale, bias, weights) of sigmoid(scale * ``base`` + bias + ``feats`` @ weights) maximising the penalised
    log-likelihood of ``exact``, every weight <= 0 (a sign of an unfamiliar look may only lower the confidence:
    on real images the features reach values no render showed, and a term that raised the confidence there
    would raise it where the networks know least). Projected gradient steps with a backtracking line search;
    the penalty (`TERM_PENALTY`) is on the standardised weights and on the scale's distance from 1."""
    n, k = feats.shape
    sd = feats.std(0) if n else np.ones(k)
    sd = np.where(sd > 1e-9, sd, 1.0)
    x = np.column_stack([base, np.ones(n), feats / sd])
    prior = np.r_[1.0, np.zeros(k + 1)]  # the product as it is: scale 1, no bias, no terms
    theta = prior.copy()
    pen = np.r_[penalty, 0.0, np.full(k, penalty)]

    def objective(t: np.ndarray) -> float:
        z = x @ t
        return float((np.logaddexp(0, z) - exact * z).sum() + 0.5 * (pen * (t - prior) ** 2).sum())

    value = objective(theta)
    for _ in range(iterations):
        z = x @ theta
        grad = x.T @ (1 / (1 + np.exp(-z)) - exact) + pen * (theta - prior)
        step, moved = 1.0 / max(n, 1), False
        while step > 1e-12:
            new = theta - step * grad
            new[2:] = np.minimum(new[2:], 0.0)
            v = objective(new)
            if v < value - 1e-10:
                theta, value, moved = new, v, True
                break
            step /= 2
        if not moved:
            break
    return float(theta[0]), float(theta[1]), theta[2:] / sd


def fit_confidence_terms(per_image, conf: ConfidenceSettings, names: Sequence[str] = CONFIDENCE_FEATURES
                         ) -> tuple[ConfidenceSettings, dict[str, Any]]:
    """``conf`` with its logistic terms (`ConfidenceSettings`: ``scale``, ``bias``, ``terms``) fitted on held-out
    ``per_image`` (`fit_logistic_terms`), and the calibration before and after (ECE, and of the images read
    with confidence >= 0.5 how many are exact). Terms whose weight is 0 are left out."""
    base, feats, exact = term_samples(per_image, conf, names)
    scale, bias, weights = fit_logistic_terms(base, feats, exact)
    fitted = replace(conf, scale=round(scale, 4), bias=round(bias, 4),
                     terms=tuple((n, round(float(w), 4)) for n, w in zip(names, weights, strict=True) if w < -1e-4))

    def figures(p: np.ndarray) -> dict[str, Any]:
        sure = p >= 0.5
        return {"ece": round(expected_calibration_error(p, exact), 4), "read_at_0.5": int(sure.sum()),
                "exact_at_0.5": int((exact[sure] > 0).sum())}

    plain = 1 / (1 + np.exp(-base))
    terms = dict(fitted.terms)
    z = fitted.scale * base + fitted.bias + feats @ np.array([terms.get(n, 0.0) for n in names])
    return fitted, {"images": len(exact), "exact": int(exact.sum()), "before": figures(plain),
                    "after": figures(1 / (1 + np.exp(-z)))}


# ---- the two experts ---------------------------------------------------------------------------------------
#: The powers `fit_expert_weights` chooses from (log-spaced): below 1 tempers an expert, above sharpens it;
#: bounded so a held-out set without errors cannot make either expert arbitrarily sure or silent.
EXPERT_POWERS = tuple(round(float(v), 4) for v in np.exp(np.linspace(math.log(0.25), math.log(2.0), 19)))


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


def fit_expert_weights(p_det: np.ndarray, p_cls: np.ndarray, labels: np.ndarray
                       ) -> tuple[tuple[float, float], dict[str, Any]]:
    """The power (one for both experts: a temperature of the plain product, so the class each object gets stays
    the plain product's) of one attribute's product of experts minimising the negative log-likelihood of
    held-out objects' true classes (grid `EXPERT_POWERS`; ties: the power closest to 1), and the figures before
    and after. Without objects the plain product (1, 1) stays (``fitted``: False)."""
    labels = np.asarray(labels, int)
    disagree = int((np.asarray(p_det).argmax(1) != np.asarray(p_cls).argmax(1)).sum()) if len(labels) else 0
    plain = expert_nll(p_det, p_cls, labels, (1.0, 1.0))
    best, fitted = (1.0, 1.0), len(labels) > 0
    if fitted:
        best = min((round(expert_nll(p_det, p_cls, labels, (a, a))[0], 9), abs(math.log(a)), (a, a))
                   for a in EXPERT_POWERS)[2]
    after = expert_nll(p_det, p_cls, labels, best)
    return best, {"objects": len(labels), "disagreements": disagree, "fitted": fitted,
                  "nll_plain": round(plain[0], 5), "errors_plain": plain[1],
                  "nll_fitted": round(after[0], 5), "errors_fitted": after[1]}


@dataclass
class ExpertReadings:
    """The two experts' readings of held-out records: per image (record, detections with the detector's own
    probabilities, candidate peaks); the classifier's probabilities of every detection in that order
    (attribute -> (K, classes); None without detections); per attribute (detector probabilities, classifier
    probabilities, true class indices) of the detections matched to a true object."""

    per_image: list[PerImage]
    classifier: dict[str, np.ndarray] | None
    samples: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]

    def combined(self, weights: dict[str, tuple[float, float]]) -> list[PerImage]:
        """``per_image`` with every detection's probabilities combined with the classifier's
        (`combine_experts` at ``weights``; (1, 1) for attributes without), as copies."""
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


def read_experts(parser: SceneParser, classifier: AttributeClassifier, records: Sequence[Record]) -> ExpertReadings:
    """`ExpertReadings` of held-out ``records``: ``parser`` (loaded with ``attribute_model=False``, so its
    detections keep the detector's own probabilities; its second look as its file says) finds the objects as a
    parse with default settings would, ``classifier`` reads the same detections."""
    if parser.attributes is not None:
        raise ValueError("read_experts: load the parser with attribute_model=False (its classifier is read apart)")
    images = [r.rgb for r in records]
    found = parser.detect(images)
    cls_probs = classifier.read(images, [d for d, _ in found])
    cols: dict[str, tuple[list, list, list]] = {a: ([], [], []) for a in PERCEIVED}
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


def fit_experts(readings: ExpertReadings) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """`fit_expert_weights` per attribute of ``readings``: (metadata ``expert_weights``, figures)."""
    weights, figures = {}, {}
    for a, (pd, pc, y) in readings.samples.items():
        w, figures[a] = fit_expert_weights(pd, pc, y)
        weights[a] = [float(w[0]), float(w[1])]
    return weights, figures


# ---- the second look's threshold ---------------------------------------------------------------------------
#: Fewer wrong first-read decisions than this among a held-out set's band peaks leave too wide a range of
#: equally good thresholds to choose from: `fit_threshold` then keeps the default (`SecondLookSettings`).
MIN_FIT_ERRORS = 8

#: Half the width of the window of thresholds `fit_threshold` judges each candidate by (the most wrong
#: decisions within +- this). Why: a few hundred band peaks give an error curve with narrow dips; a minimum on
#: the edge of a cliff (one curve read 14 / 13 / 11 / 18 errors at 0.45 / 0.50 / 0.52 / 0.55, and 0.52 missed
#: 14 more objects on other sets) is luck in the sample, not a better threshold.
FIT_WINDOW = 0.03


def labelled_band_peaks(parser: SceneParser, records: Sequence[Record], cfg: SecondLookSettings, threshold: float
                        ) -> tuple[list[float], list[float], list[bool]]:
    """Every band peak of the first read (no second look) of held-out ``records``, its first and second heat,
    and whether it is an object (matched to a true centre within `MATCH_RADIUS` x the image width, Hungarian)."""
    images = [r.rgb for r in records]
    found = parser.detect(images, ReadSettings(threshold=threshold, max_objects=64, second_look=False))
    is_object = []
    for rec, (dets, cands) in zip(records, found, strict=True):
        allp = [*dets, *cands]
        pairs = match_centres([(d.cx, d.cy) for d in allp], rec.centres, MATCH_RADIUS * rec.rgb.shape[1],
                              assign_far=True)
        real = {i for i, _ in pairs}
        is_object += [i in real for i, d in enumerate(allp) if in_band(d.score, cfg)]
    items = band_items(found, cfg)
    return [d.score for _, d in items], second_heat(parser, images, items, cfg), is_object


def averaged_heat(first: Sequence[float], second: Sequence[float], weight: float) -> np.ndarray:
    """The heats the second look decides on: ``weight`` of the second read's, the rest the first's."""
    return (1 - weight) * np.asarray(first, float) + weight * np.asarray(second, float)


def wrong_decisions(heat: Sequence[float] | np.ndarray, threshold: float, is_object: Sequence[bool]) -> int:
    """Peaks kept that are not objects plus objects dropped, keeping those whose ``heat`` reaches ``threshold``."""
    return int(((np.asarray(heat, float) >= threshold) != np.asarray(is_object, bool)).sum())


def fit_threshold(first: Sequence[float], second: Sequence[float], is_object: Sequence[bool], weight: float,
                  first_threshold: float) -> tuple[float, dict[str, Any]]:
    """The decision threshold on the averaged heat that errs least over band peaks of held-out images, and the
    wrong decisions of the first read alone (at ``first_threshold``) and of the second look.

    Each candidate is judged by its worst neighbourhood: the most wrong decisions at any threshold within
    `FIT_WINDOW` of it, so the fit lands on a plateau, not on a narrow dip. Ties: the median of the tied
    thresholds. The default stays (``fitted``: False) with fewer than `MIN_FIT_ERRORS` first-read errors to
    learn from, and also (``fitted``: True, ``threshold_moved``: False) when no candidate beats the default
    both in its neighbourhood and at the threshold itself, so a fitted threshold never errs more than the
    default on the fitting peaks."""
    avg = averaged_heat(first, second, weight)
    grid = np.round(np.arange(0.30, 0.651, 0.01), 2)
    first_errors = wrong_decisions(first, first_threshold, is_object)
    default = SecondLookSettings().threshold
    t, moved = default, False
    fitted = first_errors >= MIN_FIT_ERRORS
    if fitted:
        errors = np.array([wrong_decisions(avg, g, is_object) for g in grid])
        worst = np.array([errors[np.abs(grid - g) <= FIT_WINDOW + 1e-9].max() for g in grid])
        tied = [k for k in range(len(grid)) if worst[k] == worst.min()]
        k = tied[len(tied) // 2]
        at_default = int(np.argmin(np.abs(grid - default)))
        if worst[k] < worst[at_default] and errors[k] <= errors[at_default]:
            t, moved = float(grid[k]), True
    return t, {"band_peaks": len(is_object), "errors_first_read": first_errors,
               "errors_second_look": wrong_decisions(avg, t, is_object), "fitted": fitted,
               "threshold_moved": moved}


def fit_second_look(model_path: Path, records: Sequence[Record], threshold: float
                    ) -> tuple[SecondLookSettings, dict[str, Any]]:
    """The second look's settings, its decision threshold fitted on the band peaks of held-out ``records``, for
    the detector at ``model_path`` (read at first-read ``threshold``), and the wrong band decisions with and
    without it."""
    cfg = SecondLookSettings()
    first, second, is_object = labelled_band_peaks(SceneParser(model_path, attribute_model=False), records, cfg,
                                                   threshold)
    t, figures = fit_threshold(first, second, is_object, cfg.weight, threshold)
    return replace(cfg, threshold=t), figures
