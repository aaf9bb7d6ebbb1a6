"""The scene parser's arithmetic around its two networks: the detector's input, its outputs decoded into
detections, the attribute classifier's crops, the two networks' probabilities combined, and the scene
confidence. Plain numpy (and OpenCV for resampling); no model file is read here.

Box convention: the detector predicts each object's *projected 3D centre* (CLEVR's ``pixel_coords``), because the
project derives regions and left/right/front/behind from box centres and CLEVR's ground truth does so from
``pixel_coords``; the box size is regressed only to emit a plausible box.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from logicval_hf.perception.parser_settings import ConfidenceSettings, DetectorSettings, ScaleSettings

__all__ = ["CANDIDATE_FLOOR", "CROP", "Detection", "adaptive_scale", "cell_probs", "combine_experts",
           "corrected_confidence", "crop_square", "decode", "object_crops", "prepare", "product_confidence",
           "reading_features", "resize", "scene_confidence", "softmax", "target_scale"]

#: the network input is padded right and bottom to a multiple of this many pixels (`pad_to_multiple`)
MULTIPLE = 32
#: Peaks down to this heat value are kept as candidates (objects the parser may have missed) for the confidence.
CANDIDATE_FLOOR = 0.08
MAX_CANDIDATES = 16


# ---- the detector's input ----------------------------------------------------------------------------------
def target_scale(width: int, height: int, long_side: int) -> float:
    return long_side / max(width, height)


def resize(rgb: np.ndarray, scale: float) -> np.ndarray:
    """Area filter when shrinking (no aliasing of thin highlights), bilinear when enlarging."""
    import cv2

    if abs(scale - 1.0) < 1e-6:
        return rgb
    h, w = rgb.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return cv2.resize(rgb, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)


def pad_to_multiple(rgb: np.ndarray, multiple: int = MULTIPLE, fill: int | None = None) -> np.ndarray:
    """Pad right and bottom to a multiple of ``multiple``, replicating the border (not zeros): the padded strip
    then looks like floor, not like an edge the network could mistake for an object boundary. ``fill``: a
    constant instead (training pads an object map with "no object" the same way as its image)."""
    import cv2

    h, w = rgb.shape[:2]
    ph, pw = -h % multiple, -w % multiple
    if ph == 0 and pw == 0:
        return rgb
    if fill is not None:
        return cv2.copyMakeBorder(rgb, 0, ph, 0, pw, cv2.BORDER_CONSTANT, value=fill)
    return cv2.copyMakeBorder(rgb, 0, ph, 0, pw, cv2.BORDER_REPLICATE)


def prepare(rgb: np.ndarray, scale: float, multiple: int = MULTIPLE) -> np.ndarray:
    """The network input of one image read at ``scale``: float32 CHW in [0, 1], padded."""
    x = pad_to_multiple(resize(rgb, float(scale)), multiple)
    return np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32) * np.float32(1 / 255)


def adaptive_scale(sizes: Sequence[float], width: int, height: int, scale: ScaleSettings) -> float:
    """The scale at which an image is read whose first look found objects of ``sizes`` (the longer side of each
    box, in image pixels): their median becomes ``object_size``, the longer image side stays within
    ``long_side_range``; no objects: the longer side becomes ``long_side``."""
    long = max(width, height)
    lo, hi = scale.long_side_range
    s = scale.object_size / max(float(np.median(sizes)), 1.0) if len(sizes) else float(scale.long_side) / long
    return min(max(s, lo / long), hi / long)


# ---- the detector's outputs ------------------------------------------------------------------------------
def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


@dataclass
class Detection:
    cx: float
    cy: float
    w: float
    h: float
    score: float
    probs: dict[str, np.ndarray]  # attribute -> calibrated class probabilities (metadata class order)
    cell: tuple[int, int] = (0, 0)  # (x, y) grid cell the attributes were read at
    vx: float = 0.0  # the object's most visible point in image pixels
    vy: float = 0.0
    scale: float = 1.0  # the scale the image was read at (network input pixels per image pixel)


def cell_probs(logits: np.ndarray, settings: DetectorSettings, x: int, y: int) -> dict[str, np.ndarray]:
    """Per attribute the calibrated class probabilities the detector reads at cell (``x``, ``y``): softmax of
    that cell's logits over the attribute's temperature."""
    temps = settings.temperatures
    return {a: softmax(logits[sl, y, x] / float(temps.get(a, 1.0))) for a, sl in settings.slices.items()}


def decode(peak: np.ndarray, reg: np.ndarray, logits: np.ndarray, vis: np.ndarray, settings: DetectorSettings,
           scale: float, width: int, height: int, threshold: float, max_objects: int) -> list[Detection]:
    """Objects of one image from the network outputs (``peak``: 1 x h x w heat values at local maxima, else 0;
    ``reg``: offset x/y and log box size; ``logits``: attribute logits stacked in class order; ``vis``: offset
    from a peak's cell to the object's most visible point, where its attributes are read: an occluded object's
    centre may sit on its occluder)."""
    stride = settings.stride
    ys, xs = np.nonzero(peak[0] >= threshold)
    if len(ys) == 0:
        return []
    scores = peak[0, ys, xs]
    order = np.argsort(-scores, kind="stable")[:max_objects]
    ys, xs, scores = ys[order], xs[order], scores[order]
    bx, by = settings.offset_bias
    cx = (xs + reg[0, ys, xs] - bx) * stride / scale
    cy = (ys + reg[1, ys, xs] - by) * stride / scale
    bw = np.exp(reg[2, ys, xs]) * stride / scale
    bh = np.exp(reg[3, ys, xs]) * stride / scale
    out = []
    for i in range(len(ys)):
        if not (0 <= cx[i] < width and 0 <= cy[i] < height):  # a peak in the padding
            continue
        gx, gy = xs[i] + vis[0, ys[i], xs[i]], ys[i] + vis[1, ys[i], xs[i]]
        ax = min(max(math.floor(float(gx)), 0), logits.shape[2] - 1)
        ay = min(max(math.floor(float(gy)), 0), logits.shape[1] - 1)
        vx = min(max(float(gx * stride / scale), 0.0), width - 1.0)
        vy = min(max(float(gy * stride / scale), 0.0), height - 1.0)
        out.append(Detection(float(cx[i]), float(cy[i]), float(bw[i]), float(bh[i]), float(scores[i]),
                             cell_probs(logits, settings, ax, ay), (ax, ay), vx, vy, float(scale)))
    return out


# ---- the attribute classifier's crops ---------------------------------------------------------------------
#: Attribute-classifier crops: CROP x CROP pixels, a square of CONTEXT x the object's box (at least
#: MIN_SIDE x the image's longer side), RGB plus a fourth channel marking the object's most visible point.
CROP = 64
CONTEXT = 1.3
MIN_SIDE = 32 / 480
MARK_SIGMA = 0.1  # of the crop size


def crop_square(cx: float, cy: float, w: float, h: float, vx: float, vy: float, image_long_side: int
                ) -> tuple[float, float, float]:
    """(centre x, centre y, side) of an object's crop in image pixels: around its centre, enlarged so its
    most visible point (which may lie far off-centre when the object is occluded) stays well inside."""
    side = max(CONTEXT * max(w, h), MIN_SIDE * image_long_side)
    side = max(side, 2.5 * max(abs(vx - cx), abs(vy - cy)) + 0.25 * side)
    return cx, cy, side


def object_crops(rgb: np.ndarray, squares: Sequence[tuple[float, float, float]],
                 marks: Sequence[tuple[float, float]], crop: int = CROP) -> np.ndarray:
    """(K, 4, crop, crop) float32 classifier inputs: each square of ``rgb`` (uint8 H x W x 3) resampled to
    ``crop`` pixels (area filter when shrinking), RGB in [0, 1], channel 4 a Gaussian at the mark (the
    object's most visible point). Squares past the border are filled by replicating the edge."""
    import cv2

    out = np.zeros((len(squares), 4, crop, crop), np.float32)
    yy, xx = np.mgrid[0:crop, 0:crop].astype(np.float32) + 0.5
    for k, ((cx, cy, side), (mx, my)) in enumerate(zip(squares, marks, strict=True)):
        n = max(2, round(float(side)))
        patch = cv2.getRectSubPix(rgb, (n, n), (float(cx), float(cy)))
        patch = cv2.resize(patch, (crop, crop), interpolation=cv2.INTER_AREA if n > crop else cv2.INTER_LINEAR)
        out[k, :3] = patch.transpose(2, 0, 1) * np.float32(1 / 255)
        f = crop / n
        px, py = (mx - (cx - n / 2)) * f, (my - (cy - n / 2)) * f
        sig = MARK_SIGMA * crop
        out[k, 3] = np.exp(-((xx - px) ** 2 + (yy - py) ** 2) / (2 * sig * sig))
    return out


def combine_experts(p_det: np.ndarray, p_cls: np.ndarray, weights: tuple[float, float] = (1.0, 1.0)
                    ) -> np.ndarray:
    """One attribute's class probabilities from the detector's (``p_det``) and the classifier's (``p_cls``):
    the product of ``p_det ** weights[0]`` and ``p_cls ** weights[1]``, renormalised (a weighted product of
    experts: the detector sees the whole scene, the classifier the object up close; where one is unsure the
    other decides). Powers below 1 temper an expert that is sure and wrong too often, so the product's
    probabilities stay calibrated where the two disagree. Falls back to ``p_det`` where the product vanishes."""
    wd, wc = weights
    logq = wd * np.log(np.clip(p_det, 1e-12, 1.0)) + wc * np.log(np.clip(p_cls, 1e-12, 1.0))
    q = np.exp(logq - logq.max())
    total = q.sum()
    return q / total if np.isfinite(total) and total > 0 else p_det


# ---- the scene confidence ----------------------------------------------------------------------------------
def _interp(x: float, table: Sequence[Sequence[float]]) -> float:
    xs, ys = zip(*table, strict=True)
    return float(np.interp(x, xs, ys))


#: a candidate peak counts in the feature ``candidates`` from this heat (weaker ones are floor texture)
CANDIDATE_COUNTED = 0.15
#: a box touches the frame when it comes within this share of the image's side of the edge
FRAME_MARGIN = 0.01


def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - ix * iy
    return ix * iy / union if union > 0 else 0.0


def reading_features(rgb: np.ndarray, dets: Sequence[Detection], candidates: Sequence[float]
                     ) -> dict[str, float]:
    """What the scene confidence's terms weigh (`parser_settings.CONFIDENCE_FEATURES`), for one image (``rgb``:
    H x W x 3 uint8) and its reading: signs that the image is not what the networks trained on, or that the
    reading went wrong in ways the calibrated parts do not see.

    * ``candidates``: peaks below the threshold with heat >= `CANDIDATE_COUNTED`; ``max_candidate``: the
      strongest one's heat (reflections, glass and light patches leave many such peaks);
    * ``touching_frame``: objects whose box reaches the frame's edge (cut objects, walls read as objects);
    * ``overlap``: the largest IoU of two boxes (stacks, reflections under an object);
    * ``border_cast``: how far the frame's border strip strays from grey (the largest channel mean minus the
      mean of the three, / 255: coloured room light); ``saturation``: the image's mean HSV saturation / 255;
    * ``objects``: the number of objects read."""
    import cv2

    h, w = rgb.shape[:2]
    boxes = [(d.cx - d.w / 2, d.cy - d.h / 2, d.cx + d.w / 2, d.cy + d.h / 2) for d in dets]
    mx, my = FRAME_MARGIN * w, FRAME_MARGIN * h
    touching = sum(1 for b in boxes if b[0] <= mx or b[1] <= my or b[2] >= w - 1 - mx or b[3] >= h - 1 - my)
    k = max(1, min(h, w) // 10)
    border = np.concatenate([rgb[:k].reshape(-1, 3), rgb[-k:].reshape(-1, 3), rgb[:, :k].reshape(-1, 3),
                             rgb[:, -k:].reshape(-1, 3)]).astype(np.float32)
    means = border.mean(0)
    small = cv2.resize(rgb, (max(1, w // 4), max(1, h // 4)), interpolation=cv2.INTER_AREA) if min(h, w) >= 8 else rgb
    sat = cv2.cvtColor(np.ascontiguousarray(small), cv2.COLOR_RGB2HSV)[..., 1]
    return {"candidates": float(sum(1 for c in candidates if c >= CANDIDATE_COUNTED)),
            "max_candidate": float(max(candidates, default=0.0)),
            "touching_frame": float(touching),
            "overlap": max((_iou(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), default=0.0),
            "border_cast": float(np.abs(means - means.mean()).max() / 255.0),
            "saturation": float(sat.mean() / 255.0),
            "objects": float(len(dets))}


def product_confidence(dets: Sequence[Detection], candidates: Sequence[float], width: int, height: int,
                       conf: ConfidenceSettings, attributes: Sequence[str]) -> float:
    """The product of the calibrated parts (`scene_confidence`) at power 1, as a log-probability."""
    table = conf.peak_calibration
    logp = 0.0
    for d in dets:
        logp += math.log(max(_interp(d.score, table), 1e-6))
        for a in attributes:
            if a in d.probs:
                logp += math.log(max(float(np.max(d.probs[a])), 1e-6))
        sigma = conf.centre_sigma / max(d.scale, 1e-6)
        for dist in (d.cx - width / 2, d.cy - height / 2):
            logp += math.log(max(0.5 * (1 + math.erf(abs(dist) / (sigma * math.sqrt(2)))), 1e-6))
    for score in candidates:
        logp += math.log(max(1.0 - _interp(score, table), 1e-6))
    return logp


#: the product's probability is clipped to [EPS, 1 - EPS] before its logit is taken
LOGIT_EPS = 1e-6


def corrected_confidence(log_product: float, conf: ConfidenceSettings, features: Mapping[str, float] | None
                         ) -> float:
    """The confidence from the product's log-probability at power 1: ``exp(power * log_product)``, then, where the
    file carries terms, the logistic correction of `ConfidenceSettings` with ``features`` (`reading_features`).

    Raises:
        ValueError: the settings carry terms and ``features`` lacks one of them.
    """
    p = float(min(1.0, max(0.0, math.exp(conf.power * log_product))))
    if not conf.terms and conf.scale == 1.0 and conf.bias == 0.0:
        return p
    q = min(max(p, LOGIT_EPS), 1 - LOGIT_EPS)
    z = conf.scale * math.log(q / (1 - q)) + conf.bias
    for name, weight in conf.terms:
        if features is None or name not in features:
            raise ValueError(f"scene confidence: the feature {name!r} was not computed")
        z += weight * float(features[name])
    return float(1.0 / (1.0 + math.exp(-min(max(z, -60.0), 60.0))))


def scene_confidence(dets: Sequence[Detection], candidates: Sequence[float], width: int, height: int,
                     conf: ConfidenceSettings, attributes: Sequence[str],
                     features: Mapping[str, float] | None = None) -> float:
    """The probability that a parsed scene graph is exactly right, as a product of calibrated parts:

    * every detection is a real object (its heat value mapped by ``peak_calibration``, fitted on held-out
      renders) and no candidate peak below the threshold is one (1 - its calibrated value);
    * every object's perceived attributes are right (the largest calibrated class probability, per attribute);
    * every object's region is right: its centre lies on the same side of each midline as the truth's, with
      a Gaussian centre error of ``centre_sigma`` input pixels (``Detection.scale``: the image's reading scale);

    raised to ``power`` (fitted on held-out renders: the parts are not independent), then corrected by the
    file's terms over ``features`` (`reading_features`; `corrected_confidence`) where it has any."""
    return corrected_confidence(product_confidence(dets, candidates, width, height, conf, attributes), conf, features)
