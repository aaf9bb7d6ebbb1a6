"""Learned CLEVR scene parser: one image in, every object with its centre, box, colour, shape and material out.

A small fully convolutional CenterNet-style network (trained by ``logicval_hf.training.train_scene_parser`` on
Blender renders of the official CLEVR assets and on the project's numpy renders, never on real CLEVR) predicts
at stride 8 a centre heat map, a sub-cell offset, a box size and per-location logits for colour, shape,
material and size. Objects are the local maxima of the heat map above ``threshold``.

Inference runs the exported ONNX graph with ``onnxruntime`` (no torch). The model file carries its own
metadata (class order, input normalisation, calibrated softmax temperatures, default threshold, how to scale
the input, the confidence's calibration), so a newer model file needs no code change.

Scale: a scale-adaptive model (metadata ``scale.mode == "adaptive"``) takes a first look at the whole image
with its longer side at 224 px, then reads the image at the scale where the median object is 58 px (a T2I
model's single cube may fill a 1024 px frame; CLEVR's objects are 30-130 px at 480x320). Older models scale
the longer side to 480 px.

Confidence: every scene carries ``confidence``, the probability that the whole scene graph is right
(`scene_confidence`: calibrated detections, candidate peaks that may be missed objects, attribute
probabilities, the chance that a centre near a midline falls on the wrong side), so a user knows which images
to look at. The attribute probabilities are the detector's and the classifier's multiplied, each raised to a
power fitted on held-out renders (metadata ``expert_weights``, `combine_experts`; the shipped file's tied
powers below 1 temper a product whose two experts were both too sure).

Box convention: the network predicts the object's *projected 3D centre* (CLEVR's ``pixel_coords``), because
the project derives regions and left/right/front/behind from box centres and CLEVR's ground truth does so from
``pixel_coords``. The emitted box is centred on that point rounded to whole pixels (CLEVR rounds
``pixel_coords`` the same way, so an object within half a pixel of a midline gets the truth's region), with the
predicted extent of the visible object; where it would leave the image it is shrunk symmetrically, so the
centre never moves.

Entry points::

    from logicval_hf.perception.scene_parser import extract, extract_batch, load_model
    scene = extract(rgb)                          # rgb: H x W x 3 uint8
    scenes = extract_batch([rgb1, rgb2], threshold=0.35)
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.perception.backend import PerceptionBackend
from logicval_hf.perception.second_look import SECOND_LOOK_DEFAULTS, rescore
from logicval_hf.perception.visible_peaks import OUTPUTS as VISIBLE_PEAK_OUTPUTS
from logicval_hf.perception.visible_peaks import VISIBLE_PEAK_DEFAULTS, hidden_objects
from logicval_hf.perception.white_balance import balance_crops, illuminant_gains

__all__ = ["DEFAULT_MODEL", "INT8_MODEL", "SHIPPED_DETECTORS", "META_KEY", "SceneParser", "load_model", "extract",
           "extract_batch", "prepare",
           "cell_probs", "decode", "adaptive_scale", "scene_confidence", "combine_experts", "classifier_probs"]

#: The shipped detector in floating point (ONNX graph with metadata): what training starts from and refits
#: (`logicval_hf.training.refit_parser`), read with ``precision="fp32"``.
DEFAULT_MODEL = Path(__file__).with_name("scene_parser.onnx")
#: Suffix of an 8-bit copy of a detector file (`logicval_hf.training.quantize_parser`).
INT8_SUFFIX = "_int8"


def int8_copy_of(detector: Path) -> Path:
    """Where the 8-bit copy of the float ``detector`` file lies: ``<stem>_int8.onnx`` beside it."""
    return detector.with_name(detector.stem + INT8_SUFFIX + ".onnx")


#: The shipped detector in 8 bits, made from `DEFAULT_MODEL`: read by default (``precision="int8"``).
INT8_MODEL = int8_copy_of(DEFAULT_MODEL)
#: The shipped detector per ``precision`` setting; the default reads about 1.5 times faster at the same
#: accuracy on every measured set (model card, *Inference cost*).
SHIPPED_DETECTORS = {"int8": INT8_MODEL, "fp32": DEFAULT_MODEL}
DEFAULT_PRECISION = "int8"
#: Suffix of the attribute classifier beside a detector file (``scene_parser.onnx`` ->
#: ``scene_parser_attributes.onnx``); used when present.
ATTRIBUTE_SUFFIX = "_attributes"


def attribute_model_beside(detector: Path) -> Path:
    """The classifier file that pairs with ``detector``: ``<stem>_attributes.onnx``, the stem without an 8-bit
    copy's ``_int8`` (a detector and its 8-bit copy share one classifier)."""
    stem = detector.stem.removesuffix(INT8_SUFFIX)
    return detector.with_name(stem + ATTRIBUTE_SUFFIX + ".onnx")


#: the model files `BACKEND` declares: cached verdicts are stale when they change (`PerceptionBackend.model_files`)
MODEL_PATHS = (DEFAULT_MODEL, INT8_MODEL, attribute_model_beside(DEFAULT_MODEL))
#: ONNX metadata key holding the model's JSON description.
META_KEY = "logicval_scene_parser"
#: whether onnxruntime's pool threads busy-wait for work after a run (its own default); off, see `_session`
ORT_SPINNING = False

#: Geometry shared with training. Models with fixed scaling (metadata without ``scale``) scale the longer image
#: side to LONG_SIDE (CLEVR's 480: objects then have the size they have in 480x320 renders); padded to a
#: multiple of MULTIPLE.
LONG_SIDE = 480
MULTIPLE = 32
STRIDE = 8

#: Scale-adaptive models (metadata ``scale.mode == "adaptive"``): a first look at the whole image with its longer
#: side at ``probe_side`` measures the objects; the image is then scaled so that their median size (the longer
#: side of each box) is ``object_size`` pixels, its longer side kept within ``long_side_range``. Why: images
#: users score frame objects at any size (a T2I model's single cube may fill a 1024 px square), and a small
#: network reads objects best at the sizes it was trained on. Without any object in the first look, the image
#: is read at ``long_side``.
ADAPTIVE_DEFAULTS = {"mode": "adaptive", "probe_side": 224, "object_size": 58.0, "long_side": LONG_SIDE,
                     "long_side_range": [192, 960]}


def target_scale(width: int, height: int, long_side: int = LONG_SIDE) -> float:
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


def prepare(rgb: np.ndarray, long_side: int = LONG_SIDE, multiple: int = MULTIPLE, scale: float | None = None
            ) -> tuple[np.ndarray, float]:
    """The network input of one image (float32 CHW in [0, 1], padded) and the scale applied to it (``scale``,
    else the one that makes the longer side ``long_side``)."""
    h, w = rgb.shape[:2]
    s = target_scale(w, h, long_side) if scale is None else float(scale)
    x = pad_to_multiple(resize(rgb, s), multiple)
    return np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32) * np.float32(1 / 255), s


def adaptive_scale(sizes: Sequence[float], width: int, height: int, scale_meta: dict[str, Any]) -> float:
    """The scale at which a scale-adaptive model reads an image whose first look found objects of ``sizes``
    (the longer side of each box, in image pixels): their median becomes ``object_size``, the longer image
    side stays within ``long_side_range``; no objects: the longer side becomes ``long_side``."""
    long = max(width, height)
    lo, hi = scale_meta.get("long_side_range", ADAPTIVE_DEFAULTS["long_side_range"])
    if len(sizes) == 0:
        s = float(scale_meta.get("long_side", LONG_SIDE)) / long
    else:
        s = float(scale_meta.get("object_size", ADAPTIVE_DEFAULTS["object_size"])) / max(float(np.median(sizes)), 1.0)
    return min(max(s, lo / long), hi / long)


def attribute_slices(meta: dict[str, Any]) -> dict[str, slice]:
    """Where each attribute's logits lie in a model's stacked logits (metadata order, one per class)."""
    out, start = {}, 0
    for a in meta["attributes"]:
        k = len(meta["classes"][a])
        out[a] = slice(start, start + k)
        start += k
    return out


def _softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


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


@dataclass
class Detection:
    cx: float
    cy: float
    w: float
    h: float
    score: float
    probs: dict[str, np.ndarray]  # attribute -> calibrated class probabilities (metadata class order)
    cell: tuple[int, int] = (0, 0)  # (x, y) grid cell the attributes were read at
    vx: float = 0.0  # the object's most visible point in image pixels (its centre for models without that head)
    vy: float = 0.0
    scale: float = 1.0  # the scale the image was read at (network input pixels per image pixel)
    source: str = "centre"  # the heat map that found it: "centre", or "visible" (`visible_peaks`)


def cell_probs(logits: np.ndarray, meta: dict[str, Any], x: int, y: int) -> dict[str, np.ndarray]:
    """Per attribute the calibrated class probabilities the detector reads at cell (``x``, ``y``): softmax of
    that cell's logits (stacked in metadata order) over the attribute's temperature."""
    temps = meta.get("temperatures", {})
    return {a: _softmax(logits[sl, y, x] / float(temps.get(a, 1.0))) for a, sl in attribute_slices(meta).items()}


def decode(peak: np.ndarray, reg: np.ndarray, logits: np.ndarray, meta: dict[str, Any], scale: float,
           width: int, height: int, threshold: float, max_objects: int, vis: np.ndarray | None = None
           ) -> list[Detection]:
    """Objects of one image from the network outputs (``peak``: 1 x h x w heat values at local maxima, else 0;
    ``reg``: offset x/y and log box size; ``logits``: attribute logits stacked in metadata order; ``vis``:
    offset from a peak's cell to the object's most visible point, where its attributes are read; None: at
    the peak, as models without that head)."""
    stride = meta["stride"]
    ys, xs = np.nonzero(peak[0] >= threshold)
    if len(ys) == 0:
        return []
    scores = peak[0, ys, xs]
    order = np.argsort(-scores, kind="stable")[:max_objects]
    ys, xs, scores = ys[order], xs[order], scores[order]
    bx, by = meta.get("offset_bias", (0.0, 0.0))  # the offset head's median error on held-out renders
    cx = (xs + reg[0, ys, xs] - bx) * stride / scale
    cy = (ys + reg[1, ys, xs] - by) * stride / scale
    bw = np.exp(reg[2, ys, xs]) * stride / scale
    bh = np.exp(reg[3, ys, xs]) * stride / scale
    out = []
    for i in range(len(ys)):
        if not (0 <= cx[i] < width and 0 <= cy[i] < height):  # a peak in the padding
            continue
        ax, ay = int(xs[i]), int(ys[i])
        vx, vy = float(cx[i]), float(cy[i])
        if vis is not None:  # an occluded object's centre may sit on its occluder: read where it shows
            gx, gy = xs[i] + vis[0, ys[i], xs[i]], ys[i] + vis[1, ys[i], xs[i]]
            ax = min(max(math.floor(float(gx)), 0), logits.shape[2] - 1)
            ay = min(max(math.floor(float(gy)), 0), logits.shape[1] - 1)
            vx = min(max(float(gx * stride / scale), 0.0), width - 1.0)
            vy = min(max(float(gy * stride / scale), 0.0), height - 1.0)
        probs = cell_probs(logits, meta, ax, ay)
        out.append(Detection(float(cx[i]), float(cy[i]), float(bw[i]), float(bh[i]), float(scores[i]), probs,
                             (ax, ay), vx, vy, float(scale)))
    return out


def _session(path: Path, threads: int | None, what: str, hint: str) -> tuple[Any, dict[str, Any]]:
    """An onnxruntime CPU session of ``path`` and its LogicVal metadata."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise ImportError(
            "the clevr scene parser needs onnxruntime: pip install onnxruntime (CPU wheel: about 28 MB "
            "download, 80 MB installed)") from None
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} not found ({hint})")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
    opts.inter_op_num_threads = 1
    # A parse alternates between two sessions (detector, classifier, detector again for the second look) with
    # Python work in between; a pool thread that spins after its run then competes for the same few cores
    # with the next session's threads. Without spinning, one image at a time at 512x512 on 2 cores went from
    # 20-24 to 30-34 images/s (benchmarks/bench_ort_spinning.py); the results are bit for bit the same.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if ORT_SPINNING else "0")
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001  onnxruntime's own errors (bad protobuf, bad graph) name no file
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{path}: not a readable ONNX {what} ({reason})") from None
    raw = session.get_modelmeta().custom_metadata_map.get(META_KEY)
    if raw is None:
        raise ValueError(f"{path}: not a LogicVal {what} (no {META_KEY!r} metadata)")
    return session, json.loads(raw)


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


def classifier_probs(classifier: AttributeClassifier, images: Sequence[np.ndarray], dets: list[list[Detection]],
                     white_balance: bool = True, mirror: bool = False) -> dict[str, np.ndarray] | None:
    """The second stage's calibrated probabilities (attribute -> (K, classes)) of every detection, in the order
    of ``dets`` flattened (None when there is none): one crop per detection (`object_crops`), each image's crops
    white-balanced (`logicval_hf.perception.white_balance`) unless ``white_balance`` is False, all in one batch;
    ``mirror``: each crop also read mirrored, the two readings' logits averaged (`AttributeClassifier.classify`)."""
    crops = []
    for im, ds in zip(images, dets, strict=True):
        if ds:
            long_side = max(im.shape[:2])
            sq = [crop_square(d.cx, d.cy, d.w, d.h, d.vx, d.vy, long_side) for d in ds]
            c = object_crops(im, sq, [(d.vx, d.vy) for d in ds])
            crops.append(balance_crops(c, illuminant_gains(im)) if white_balance else c)
    if not crops:
        return None
    probs, _ = classifier.classify(np.concatenate(crops), mirror=mirror)
    return probs


class AttributeClassifier:
    """The second stage: colour / shape / material / size of one object from a crop around it (`object_crops`),
    with calibrated probabilities. Why a second stage: the detector reads attributes from stride-8 features
    that also see the neighbours; an occluded object's few visible pixels were read as its occluder's."""

    def __init__(self, path: Path, threads: int | None = None):
        self.path = path
        self.session, self.meta = _session(
            path, threads, "attribute-classifier model",
            "train one with python -m logicval_hf.training.train_attribute_classifier --export FILE")
        self.outputs = {o.name for o in self.session.get_outputs()}
        self._lock = threading.Lock()

    def classify(self, crops: np.ndarray, batch_size: int = 64, mirror: bool = False
                 ) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
        """(attribute -> (K, classes) calibrated probabilities, (K, 2) centre offsets in crop pixels or None
        for a model without them) of ``crops`` (from `object_crops`). ``mirror``: also read every crop mirrored
        left to right (colour, shape and material do not change in a mirror; the classifier was trained with
        flips) and average the two readings' logits; centres stay the plain reading's."""
        logits, centre = self._logits(crops, batch_size)
        if mirror and len(crops):
            logits = (logits + self._logits(np.ascontiguousarray(crops[..., ::-1]), batch_size)[0]) / 2
        temps = self.meta["temperatures"]
        probs = {a: _softmax(logits[:, sl] / float(temps.get(a, 1.0))) for a, sl in attribute_slices(self.meta).items()}
        return probs, centre

    def _logits(self, crops: np.ndarray, batch_size: int) -> tuple[np.ndarray, np.ndarray | None]:
        """(K, classes) raw logits and the centre head's (K, 2) offsets (None without that head) of ``crops``."""
        names = ["logits"] + (["centre"] if "centre" in self.outputs else [])
        parts = []
        for start in range(0, len(crops), batch_size):
            with self._lock:
                parts.append(self.session.run(names, {"crops": crops[start:start + batch_size]}))
        width = sum(map(len, self.meta["classes"].values()))
        logits = np.concatenate([p[0] for p in parts]) if parts else np.zeros((0, width))
        centre = (np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, 2))) if len(names) == 2 else None
        return logits, centre


class SceneParser:
    """An ONNX scene-parser model and its metadata, ready to parse batches of images.

    ``path``: a detector file; default the shipped one of ``precision`` (``"int8"``, the default, or
    ``"fp32"``; `SHIPPED_DETECTORS`). ``attribute_model``: the second-stage classifier (`AttributeClassifier`);
    default the file beside the detector (``<stem>_attributes.onnx``) when there is one; ``False``: the
    detector's own attribute heads.

    Raises:
        ValueError: an unknown ``precision``, or ``precision`` given with ``path`` (a file is what it is).
    """

    def __init__(self, path: str | os.PathLike | None = None, threads: int | None = None,
                 attribute_model: str | os.PathLike | bool | None = None, precision: str | None = None):
        self.path = Path(path) if path is not None else SHIPPED_DETECTORS[_shipped_precision(precision, path)]
        self.session, self.meta = _session(
            self.path, threads, "scene-parser model",
            "train one with python -m logicval_hf.training.train_scene_parser --export FILE")
        self.outputs = {o.name for o in self.session.get_outputs()}
        self._lock = threading.Lock()
        self.attributes: AttributeClassifier | None = None
        if attribute_model is None or attribute_model is True:
            beside = attribute_model_beside(self.path)
            if beside.is_file():
                self.attributes = AttributeClassifier(beside, threads)
            elif attribute_model is True:
                raise FileNotFoundError(f"no attribute-classifier model beside {self.path} ({beside.name})")
        elif attribute_model is not False:
            self.attributes = AttributeClassifier(Path(attribute_model), threads)

    @property
    def threshold(self) -> float:
        return float(self.meta.get("threshold", 0.35))

    def forward(self, batch: np.ndarray, flip: bool = False, extra: Sequence[str] = ()) -> tuple[Any, ...]:
        """(peak, reg, logits, vis) of a batch (vis None for a model without the visible-point head).
        ``flip``: also run the mirrored images and average their offsets and logits into the original's (the
        scene is the same up to the mirror: two looks per object at twice the cost); peaks, hence the object
        count, stay those of the original view, because averaging two heat maps whose peaks sit in
        neighbouring cells can split or drop an object. ``extra``: names of further outputs, returned after
        those four (the original view's)."""
        vis_name = ["vis"] if "vis" in self.outputs else []
        names = ["peak", "reg", "logits", *vis_name, *extra]
        if not flip:
            with self._lock:  # one session, many threads: onnxruntime already uses all intra-op threads
                outs = self.session.run(names, {"image": batch})
            return (*outs[:3], outs[3] if vis_name else None, *outs[3 + len(vis_name):])
        n = len(batch)
        with self._lock:
            outs = self.session.run(names, {"image": np.concatenate([batch, batch[..., ::-1]])})
        peak, reg, logits = outs[:3]
        rest = [o[:n] for o in outs[3 + len(vis_name):]]

        def mirror_offsets(r):
            rf = r[n:, ..., ::-1].copy()
            rf[:, 0] = 1 - rf[:, 0]  # mirrored cell j' = gw - 1 - j holds x offset 1 - ox
            return (r[:n] + rf) / 2

        vis = mirror_offsets(outs[3]) if vis_name else None
        logits = (logits[:n] + logits[n:, ..., ::-1]) / 2
        return (peak[:n], mirror_offsets(reg), logits, vis, *rest)

    def detect_batch(self, images: Sequence[np.ndarray], threshold: float | None = None, max_objects: int = 32,
                     batch_size: int = 8, flip: bool | None = None, second_look: bool | None = None
                     ) -> list[list[Detection]]:
        """Detections per image. Images of equal prepared shape share a forward pass; others run apart, so
        mixed sizes cost nothing but smaller batches."""
        return [d for d, _ in self._detect(images, threshold, max_objects, batch_size, flip, second_look)]

    @property
    def scale_meta(self) -> dict[str, Any] | None:
        """The scale-adaptive settings of the model (None: fixed longer side)."""
        sm = self.meta.get("scale")
        return {**ADAPTIVE_DEFAULTS, **sm} if isinstance(sm, dict) and sm.get("mode") == "adaptive" else None

    def scales(self, images: Sequence[np.ndarray], threshold: float | None = None, batch_size: int = 8
               ) -> list[float]:
        """The scale each image is read at: fixed longer side, or (scale-adaptive models) from a first look
        that measures the objects found above ``threshold`` (default: the model's own; the parse passes it
        whatever threshold the caller reads at, since the first look only measures)."""
        sm = self.scale_meta
        if sm is None:
            long_side = self.meta.get("long_side", LONG_SIDE)
            return [target_scale(im.shape[1], im.shape[0], long_side) for im in images]
        probe = self._run([(im, target_scale(im.shape[1], im.shape[0], int(sm["probe_side"]))) for im in images],
                          self.threshold if threshold is None else float(threshold), 64, batch_size, False, 0.0)
        return [adaptive_scale([max(d.w, d.h) for d in dets], im.shape[1], im.shape[0], sm)
                for im, (dets, _) in zip(images, probe, strict=True)]

    @property
    def second_look(self) -> dict[str, Any] | None:
        """The second look's settings (`logicval_hf.perception.second_look`) when the model file turns it on."""
        sl = self.meta.get("second_look")
        return {**SECOND_LOOK_DEFAULTS, **sl} if isinstance(sl, dict) else None

    def look_settings(self, second_look: bool | None = None) -> dict[str, Any] | None:
        """The second look a parse uses: None as the model file says, True on (the file's settings, else the
        defaults), False off (None)."""
        if second_look is None:
            return self.second_look
        if not second_look:
            return None
        return self.second_look or dict(SECOND_LOOK_DEFAULTS)

    @property
    def has_visible_peak_outputs(self) -> bool:
        """Whether the detector was trained with the visible-peak head (``--visible-peaks``)."""
        return all(o in self.outputs for o in VISIBLE_PEAK_OUTPUTS)

    @property
    def visible_peaks(self) -> dict[str, Any] | None:
        """The read of objects where they show (`logicval_hf.perception.visible_peaks`) when the model file turns
        it on (its metadata ``visible_peaks``; the file must have the outputs)."""
        vp = self.meta.get("visible_peaks")
        return {**VISIBLE_PEAK_DEFAULTS, **vp} if isinstance(vp, dict) and self.has_visible_peak_outputs else None

    def peak_settings(self, visible_peaks: bool | None = None) -> dict[str, Any] | None:
        """The visible-peak read a parse uses: None as the model file says, True on (the file's settings, else
        the defaults; refused by name for a file without the outputs), False off (None)."""
        if visible_peaks is None:
            return self.visible_peaks
        if not visible_peaks:
            return None
        if not self.has_visible_peak_outputs:
            raise ValueError(f"clevr scene parser: visible_peaks=True needs a detector trained with "
                             f"--visible-peaks; {self.path.name} has no outputs {', '.join(VISIBLE_PEAK_OUTPUTS)}")
        return self.visible_peaks or dict(VISIBLE_PEAK_DEFAULTS)

    def decision_threshold(self, second_look: bool | None = None) -> float:
        """The default threshold objects are kept at: the second look's (on averaged heats) where it is on,
        else the first read's."""
        look = self.look_settings(second_look)
        return float(look["threshold"]) if look is not None else self.threshold

    def _detect(self, images: Sequence[np.ndarray], threshold: float | None, max_objects: int, batch_size: int,
                flip: bool | None, second_look: bool | None = None, white_balance: bool | None = None,
                classifier_flip: bool | None = None, visible_peaks: bool | None = None
                ) -> list[tuple[list[Detection], list[Detection]]]:
        """(detections, candidate peaks below the threshold) per image. ``second_look``
        (`logicval_hf.perception.second_look`): None as the model file says, True on (the file's settings, else
        the defaults), False off; a caller's ``threshold`` also decides the second look's averaged heats.
        ``white_balance`` (`logicval_hf.perception.white_balance`): the classifier's crops balanced (None or True)
        or not (False). ``classifier_flip``: the classifier also reads each crop mirrored (None: as the model
        file's metadata ``classifier_flip`` says, default off). ``visible_peaks``
        (`logicval_hf.perception.visible_peaks`): None as the model file says, True on, False off; its objects
        join after the second look, which judges centre peaks only."""
        look = self.look_settings(second_look)
        vpeaks = self.peak_settings(visible_peaks)
        thr = self.decision_threshold(second_look) if threshold is None else float(threshold)
        flip = bool(self.meta.get("flip", False)) if flip is None else bool(flip)
        scales = self.scales(images, self.threshold, batch_size)
        raw: list[Any] = [None] * len(images)
        out = self._run(list(zip(images, scales, strict=True)), thr, max_objects, batch_size, flip, CANDIDATE_FLOOR,
                        raw if vpeaks is not None else None)
        if look is not None:
            out = rescore(self, images, out, look, thr, max_objects, batch_size)
        if vpeaks is not None:
            for i, (im, (kept, cands)) in enumerate(zip(images, out, strict=True)):
                vpeak, vreg, logits, scale = raw[i]
                room = max(max_objects - len(kept), 0)
                new = hidden_objects(vpeak, vreg, logits, self.meta, scale, im.shape[1], im.shape[0], kept, vpeaks,
                                     room)
                out[i] = (kept + new, cands)
        if self.attributes is not None:
            mirror = self.classifier_flip if classifier_flip is None else bool(classifier_flip)
            self._classify(self.attributes, images, [d for d, _ in out], white_balance is not False,
                           self.expert_weights, mirror)
        return out

    def _run(self, items: Sequence[tuple[np.ndarray, float]], thr: float, max_objects: int, batch_size: int,
             flip: bool, floor: float, raw: list[Any] | None = None
             ) -> list[tuple[list[Detection], list[Detection]]]:
        """One look at every image at its scale: detections above ``thr`` and the candidate peaks in
        [``floor``, ``thr``). ``raw``: filled per image with (vpeak, vreg, logits, scale) for the visible-peak
        read."""
        multiple = self.meta.get("multiple", MULTIPLE)
        prepared = [prepare(im, multiple=multiple, scale=sc) for im, sc in items]
        groups: dict[tuple[int, int], list[int]] = {}
        for i, (x, _) in enumerate(prepared):
            groups.setdefault(x.shape[1:], []).append(i)
        out: list[tuple[list[Detection], list[Detection]]] = [([], []) for _ in items]
        low = min(thr, floor) if floor > 0 else thr
        for idx in groups.values():
            for start in range(0, len(idx), batch_size):
                chunk = idx[start:start + batch_size]
                outs = self.forward(np.stack([prepared[i][0] for i in chunk]), flip,
                                    VISIBLE_PEAK_OUTPUTS if raw is not None else ())
                peak, reg, logits, vis = outs[:4]
                for k, i in enumerate(chunk):
                    if raw is not None:
                        raw[i] = (outs[4][k], outs[5][k], logits[k], prepared[i][1])
                    h, w = items[i][0].shape[:2]
                    dets = decode(peak[k], reg[k], logits[k], self.meta, prepared[i][1], w, h, low,
                                  max_objects + MAX_CANDIDATES, None if vis is None else vis[k])
                    kept = [d for d in dets if d.score >= thr][:max_objects]
                    out[i] = (kept, [d for d in dets if d.score < thr])
        return out

    @property
    def classifier_flip(self) -> bool:
        """The file's default for the classifier's mirrored read (metadata ``classifier_flip``; off without it)."""
        return bool(self.meta.get("classifier_flip", False))

    @property
    def expert_weights(self) -> dict[str, tuple[float, float]]:
        """Per attribute, the powers (detector, classifier) of the two experts' product (`combine_experts`):
        metadata ``expert_weights``, fitted on held-out renders with the classifier the file was calibrated
        with; (1, 1) for attributes or files without it (the plain product)."""
        raw = self.meta.get("expert_weights") or {}
        return {a: (float(w[0]), float(w[1])) for a, w in raw.items()}

    @staticmethod
    def _classify(classifier: AttributeClassifier, images: Sequence[np.ndarray], dets: list[list[Detection]],
                  white_balance: bool = True, weights: dict[str, tuple[float, float]] | None = None,
                  mirror: bool = False) -> None:
        """Merge the second stage's attribute probabilities into every detection's (all crops in one batch,
        `combine_experts` with ``weights``), each image's crops white-balanced first
        (`logicval_hf.perception.white_balance`) unless ``white_balance`` is False.
        Centres stay the detector's: the classifier's centre head is an auxiliary training task (metadata
        ``refine_centre: false``; its centres were worse, median error 0.46 vs 0.39 px on held-out renders)."""
        probs = classifier_probs(classifier, images, dets, white_balance, mirror)
        if probs is None:
            return
        weights = weights or {}
        for k, d in enumerate(det for ds in dets for det in ds):
            d.probs = {a: combine_experts(p, probs[a][k], weights.get(a, (1.0, 1.0))) if a in probs else p
                       for a, p in d.probs.items()}

    def parse_batch(self, images: Sequence[np.ndarray], **settings: Any) -> list[Any]:
        """`Scene` per image: attributes the project's domain perceives (colour, shape, material) with their
        calibrated probabilities, and the scene's ``confidence`` (`scene_confidence`); the network's size head
        serves training only (the domain has no size)."""
        from logicval_hf import Scene, SceneObject, load_catalog

        dom = load_catalog().domain
        found = self._detect(images, settings.get("threshold"), settings.get("max_objects", 32),
                             settings.get("batch_size", 8), settings.get("flip"), settings.get("second_look"),
                             settings.get("white_balance"), settings.get("classifier_flip"),
                             settings.get("visible_peaks"))
        scenes = []
        for im, (ds, candidates) in zip(images, found, strict=True):
            h, w = im.shape[:2]
            objs = []
            for d in ds:
                attrs, probs = {}, {}
                for a in dom.perceived_attributes:
                    classes = self.meta["classes"][a]
                    p = d.probs[a]
                    attrs[a] = classes[int(np.argmax(p))]
                    probs[a] = {v: float(p[classes.index(v)]) for v in dom.attributes[a]}
                # whole pixels, as CLEVR's pixel_coords (round(x * W)): a centre within half a pixel of a
                # midline then falls on the side CLEVR's rounded truth puts it
                cx = min(max(math.floor(d.cx + 0.5), 1), w - 1)
                cy = min(max(math.floor(d.cy + 0.5), 1), h - 1)
                hw = max(min(d.w / 2, cx, w - cx), 0.5)
                hh = max(min(d.h / 2, cy, h - cy), 0.5)
                objs.append(SceneObject(attrs, (cx - hw, cy - hh, cx + hw, cy + hh), round(d.score, 4), probs))
            conf = scene_confidence(ds, [c.score for c in candidates], w, h, self.confidence_meta,
                                    dom.perceived_attributes)
            scenes.append(Scene((w, h), tuple(objs), dom, round(conf, 4)))
        return scenes

    @property
    def confidence_meta(self) -> dict[str, Any]:
        return {**CONFIDENCE_DEFAULTS, **(self.meta.get("confidence") or {})}


#: Peaks down to this heat value are kept as candidates (objects the parser may have missed) for the confidence.
CANDIDATE_FLOOR = 0.08
MAX_CANDIDATES = 16
#: Until a model file carries fitted values: a peak's heat value as the probability that it is an object, a
#: centre error of one input pixel (at the scale the image was read), no correction of the product.
CONFIDENCE_DEFAULTS: dict[str, Any] = {"peak_calibration": [[0.0, 0.0], [1.0, 1.0]], "centre_sigma": 1.0,
                                       "power": 1.0}


def _interp(x: float, table: Sequence[Sequence[float]]) -> float:
    xs, ys = zip(*table, strict=True)
    return float(np.interp(x, xs, ys))


def scene_confidence(dets: Sequence[Detection], candidates: Sequence[float], width: int, height: int,
                     conf_meta: dict[str, Any], attributes: Sequence[str]) -> float:
    """The probability that a parsed scene graph is exactly right, as a product of calibrated parts:

    * every detection is a real object (its heat value mapped by ``peak_calibration``, fitted on held-out
      renders) and no candidate peak below the threshold is one (1 - its calibrated value);
    * every object's perceived attributes are right (the largest calibrated class probability, per attribute);
    * every object's region is right: its centre lies on the same side of each midline as the truth's, with
      a Gaussian centre error of ``centre_sigma`` input pixels (``Detection.scale``: the image's reading scale);

    raised to ``power`` (fitted on held-out renders: the parts are not independent)."""
    table = conf_meta["peak_calibration"]
    logp = 0.0
    for d in dets:
        logp += math.log(max(_interp(d.score, table), 1e-6))
        for a in attributes:
            if a in d.probs:
                logp += math.log(max(float(np.max(d.probs[a])), 1e-6))
        sigma = float(conf_meta["centre_sigma"]) / max(d.scale, 1e-6)
        for dist in (d.cx - width / 2, d.cy - height / 2):
            logp += math.log(max(0.5 * (1 + math.erf(abs(dist) / (sigma * math.sqrt(2)))), 1e-6))
    for score in candidates:
        logp += math.log(max(1.0 - _interp(score, table), 1e-6))
    return float(min(1.0, max(0.0, math.exp(float(conf_meta["power"]) * logp))))


def _shipped_precision(precision: Any, path: Any) -> str:
    """The ``precision`` setting checked: which shipped detector to read (`SHIPPED_DETECTORS`; the default when
    None). Refused by name: an unknown value, or one given with a model file of the caller's own."""
    if precision is None:
        return DEFAULT_PRECISION
    if not isinstance(precision, str) or precision not in SHIPPED_DETECTORS:
        raise ValueError(f"clevr scene parser: precision must be one of {', '.join(SHIPPED_DETECTORS)}, "
                         f"not {precision!r}")
    if path is not None:
        raise ValueError("clevr scene parser: precision picks a shipped detector; with model_path the file "
                         "decides (quantize a file of your own with python -m logicval_hf.training.quantize_parser)")
    return precision


_CACHE: dict[tuple[str, int | None, str, str], SceneParser] = {}
_CACHE_LOCK = threading.Lock()


def load_model(path: str | os.PathLike | None = None, threads: int | None = None,
               attribute_model: str | os.PathLike | bool | None = None, precision: str | None = None
               ) -> SceneParser:
    """The model at ``path`` (default: the shipped one of ``precision``, `SceneParser`), loaded once per
    process, path, attribute model and precision."""
    amodel = (str(Path(attribute_model).resolve()) if isinstance(attribute_model, (str, os.PathLike))
              else str(attribute_model))
    key = (str(Path(path).resolve()) if path is not None else "", threads, amodel, _shipped_precision(precision, path))
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = SceneParser(path, threads, attribute_model, precision)
        return _CACHE[key]


def _split_settings(settings: dict[str, Any]) -> tuple[SceneParser, dict[str, Any]]:
    settings = dict(settings)
    model = load_model(settings.pop("model_path", None), settings.pop("threads", None),
                       settings.pop("attribute_model", None), settings.pop("precision", None))
    unknown = set(settings) - {"threshold", "max_objects", "batch_size", "flip", "second_look", "white_balance",
                               "classifier_flip", "visible_peaks"}
    if unknown:
        raise ValueError(f"unknown settings {sorted(unknown)} for the clevr scene parser; known: threshold, "
                         "max_objects, batch_size, flip, second_look, white_balance, classifier_flip, visible_peaks, "
                         "model_path, attribute_model, precision, threads")
    _check_values(settings)
    return model, settings


def _check_values(settings: dict[str, Any]) -> None:
    """Refuse values that would otherwise be coerced into something else (``flip="false"`` is truthy; a
    threshold of 2 finds nothing) with the setting's name."""
    for name in ("flip", "second_look", "white_balance", "classifier_flip", "visible_peaks"):
        v = settings.get(name)
        if v is not None and not isinstance(v, (bool, np.bool_)):
            raise ValueError(f"clevr scene parser: {name} must be true or false, not {v!r}")
    thr = settings.get("threshold")
    if thr is not None and (isinstance(thr, bool) or not isinstance(thr, (int, float, np.floating))
                            or not 0 < float(thr) <= 1):
        raise ValueError(f"clevr scene parser: threshold must be a number in (0, 1], not {thr!r}")
    for name in ("max_objects", "batch_size"):
        v = settings.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
            raise ValueError(f"clevr scene parser: {name} must be a whole number >= 1, not {v!r}")


def extract_batch(images: Iterable[np.ndarray], **settings: Any) -> list[Any]:
    """`Scene` per RGB uint8 image. Settings: ``threshold`` (heat-map peak, default from the model),
    ``max_objects`` (32), ``batch_size`` (8), ``flip`` (also parse the mirrored image and average; default
    from the model), ``second_look`` (read uncertain peaks again, closer: `logicval_hf.perception.second_look`;
    default from the model), ``white_balance`` (balance the attribute classifier's crops against the image's
    colour cast: `logicval_hf.perception.white_balance`; default true), ``classifier_flip`` (the attribute
    classifier also reads each object's crop mirrored and averages; default from the model), ``visible_peaks``
    (also find objects where they show, for those whose centre is hidden behind another:
    `logicval_hf.perception.visible_peaks`; default from the model), ``model_path``,
    ``attribute_model`` (the second stage's file; default the one beside the model when present; ``False``: the
    detector's own attribute heads), ``threads`` (onnxruntime intra-op threads)."""
    model, rest = _split_settings(settings)
    return model.parse_batch(list(images), **rest)


def extract(rgb: np.ndarray, **settings: Any) -> Any:
    """`Scene` of one RGB uint8 image (same settings as `extract_batch`)."""
    return extract_batch([rgb], **settings)[0]


#: the ``clevr`` perception backend (`logicval_hf.perception.BACKENDS`): CLEVR images, batched, two model files
BACKEND = PerceptionBackend(
    "clevr", extract, extract_batch, domains=("clevr",), model_files=MODEL_PATHS, requires=("onnxruntime",),
    description="the shipped CLEVR scene parser (ONNX, CPU)")
