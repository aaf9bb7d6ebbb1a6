"""Learned CLEVR scene parser: one image in, every object with its centre, box, colour, shape and material out.

Two small networks, trained by the recipe in ``logicval_hf.training`` on Blender renders of the official CLEVR
assets and on the project's numpy renders, never on real CLEVR, run as ONNX graphs with ``onnxruntime`` (no
torch):

1. **The detector** (``scene_parser_int8.onnx`` by default, ``scene_parser.onnx`` with ``precision="fp32"``), a
   CenterNet-style network at stride 8: a centre heat map, a sub-cell offset, a box size, per-location attribute
   logits and the offset to each object's most visible point. Objects are the local maxima of the heat map above
   the threshold. It reads each image twice: a first look at 224 px measures the objects, then the image is read
   at the scale where the median object is 58 px (`parser_decoding.adaptive_scale`).
2. **The second look** (`logicval_hf.perception.second_look`) reads uncertain peaks again, closer.
3. **The attribute classifier** (``scene_parser_attributes.onnx``) reads colour, shape and material from a crop
   around each object (white-balanced first, `logicval_hf.perception.white_balance`); its probabilities and the
   detector's are multiplied, each raised to a power fitted on held-out renders
   (`parser_decoding.combine_experts`).

Every scene carries ``confidence``, the probability that the whole scene graph is right
(`parser_decoding.scene_confidence`). Each file's settings are read from its metadata once
(`logicval_hf.perception.parser_settings`). The emitted box is centred on the predicted projected 3D centre
rounded to whole pixels (CLEVR rounds ``pixel_coords`` the same way), with the predicted extent of the visible
object, shrunk symmetrically where it would leave the image, so the centre never moves.

Entry points::

    from logicval_hf.perception.scene_parser import extract, extract_batch, load_model
    scene = extract(rgb)                          # rgb: H x W x 3 uint8
    scenes = extract_batch([rgb1, rgb2], threshold=0.35)
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.perception.backend import PerceptionBackend
from logicval_hf.perception.parser_decoding import (
    CANDIDATE_FLOOR,
    MAX_CANDIDATES,
    adaptive_scale,
    combine_experts,
    decode,
    prepare,
    reading_features,
    scene_confidence,
    target_scale,
)
from logicval_hf.perception.parser_models import AttributeClassifier, open_session
from logicval_hf.perception.parser_settings import DetectorSettings, ReadSettings, split_settings
from logicval_hf.perception.second_look import Found, rescore

__all__ = ["BACKEND", "DEFAULT_MODEL", "INT8_MODEL", "MODEL_PATHS", "SHIPPED_DETECTORS", "SceneParser",
           "attribute_model_beside", "extract", "extract_batch", "int8_copy_of", "load_model"]

#: The shipped detector in floating point: what the recipe refits and quantises, read with ``precision="fp32"``.
DEFAULT_MODEL = Path(__file__).with_name("scene_parser.onnx")
#: Suffix of an 8-bit copy of a detector file (`logicval_hf.training.quantize_parser`).
INT8_SUFFIX = "_int8"
#: Suffix of the attribute classifier beside a detector file (``scene_parser.onnx`` ->
#: ``scene_parser_attributes.onnx``); used when present.
ATTRIBUTE_SUFFIX = "_attributes"


def int8_copy_of(detector: Path) -> Path:
    """Where the 8-bit copy of the float ``detector`` file lies: ``<stem>_int8.onnx`` beside it."""
    return detector.with_name(detector.stem + INT8_SUFFIX + ".onnx")


def attribute_model_beside(detector: Path) -> Path:
    """The classifier file that pairs with ``detector``: ``<stem>_attributes.onnx``, the stem without an 8-bit
    copy's ``_int8`` (a detector and its 8-bit copy share one classifier)."""
    stem = detector.stem.removesuffix(INT8_SUFFIX)
    return detector.with_name(stem + ATTRIBUTE_SUFFIX + ".onnx")


#: The shipped detector in 8 bits, made from `DEFAULT_MODEL`: read by default (``precision="int8"``).
INT8_MODEL = int8_copy_of(DEFAULT_MODEL)
#: The shipped detector per ``precision`` setting; the default reads about 1.5 times faster at the same
#: accuracy on every measured set.
SHIPPED_DETECTORS = {"int8": INT8_MODEL, "fp32": DEFAULT_MODEL}
DEFAULT_PRECISION = "int8"
#: the model files `BACKEND` declares: cached verdicts are stale when they change (`PerceptionBackend.model_files`)
MODEL_PATHS = (DEFAULT_MODEL, INT8_MODEL, attribute_model_beside(DEFAULT_MODEL))
#: a parse with every setting at the file's default
DEFAULT_READ = ReadSettings()


class SceneParser:
    """A detector file (and the attribute classifier beside it), ready to parse batches of images.

    ``path``: a detector file; default the shipped one of ``precision`` (``"int8"``, the default, or
    ``"fp32"``; `SHIPPED_DETECTORS`). ``attribute_model``: the classifier file; default the one beside the
    detector (``<stem>_attributes.onnx``) when there is one; ``False``: the detector's own attribute heads.

    Raises:
        ValueError: an unknown ``precision``, or ``precision`` given with ``path`` (a file is what it is).
    """

    def __init__(self, path: str | os.PathLike | None = None, threads: int | None = None,
                 attribute_model: str | os.PathLike | bool | None = None, precision: str | None = None):
        self.path = Path(path) if path is not None else SHIPPED_DETECTORS[_shipped_precision(precision, path)]
        # ``meta``: the file's metadata as written (the recipe copies and rewrites it); the read uses ``settings``
        self.session, self.meta = open_session(
            self.path, threads, "scene-parser model",
            "train one with python -m logicval_hf.training.train_scene_parser --export FILE")
        #: what the file says about itself, read once
        self.settings = DetectorSettings.from_metadata(self.meta, self.path)
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

    def forward(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(peak, reg, logits, vis) of a batch of prepared images (`parser_decoding.prepare`)."""
        with self._lock:  # one session, many threads: onnxruntime already uses all intra-op threads
            peak, reg, logits, vis = self.session.run(["peak", "reg", "logits", "vis"], {"image": batch})
        return peak, reg, logits, vis

    def look(self, items: Sequence[tuple[np.ndarray, float]], threshold: float, max_objects: int = 32,
             batch_size: int = 8, floor: float = 0.0) -> Found:
        """One read of every ``(image, scale)``: per image the detections at or above ``threshold`` (at most
        ``max_objects``, strongest first) and the candidate peaks in [``floor``, ``threshold``) (0: none).
        Images of equal prepared shape share a forward pass; others run apart, so mixed sizes cost nothing but
        smaller batches."""
        st = self.settings
        prepared = [prepare(im, sc, st.multiple) for im, sc in items]
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, x in enumerate(prepared):
            groups.setdefault(x.shape[1:], []).append(i)
        out: Found = [([], []) for _ in items]
        low = min(threshold, floor) if floor > 0 else threshold
        for idx in groups.values():
            for start in range(0, len(idx), batch_size):
                chunk = idx[start:start + batch_size]
                peak, reg, logits, vis = self.forward(np.stack([prepared[i] for i in chunk]))
                for k, i in enumerate(chunk):
                    im, scale = items[i]
                    dets = decode(peak[k], reg[k], logits[k], vis[k], st, float(scale), im.shape[1], im.shape[0],
                                  low, max_objects + MAX_CANDIDATES)
                    kept = [d for d in dets if d.score >= threshold][:max_objects]
                    out[i] = (kept, [d for d in dets if d.score < threshold])
        return out

    def scales(self, images: Sequence[np.ndarray], threshold: float | None = None, batch_size: int = 8
               ) -> list[float]:
        """The scale each image is read at, from a first look that measures the objects found above
        ``threshold`` (default: the file's own; a parse passes that whatever threshold the caller reads at,
        since the first look only measures)."""
        sc = self.settings.scale
        probe = self.look([(im, target_scale(im.shape[1], im.shape[0], sc.probe_side)) for im in images],
                          self.settings.threshold if threshold is None else float(threshold), 64, batch_size)
        return [adaptive_scale([max(d.w, d.h) for d in dets], im.shape[1], im.shape[0], sc)
                for im, (dets, _) in zip(images, probe, strict=True)]

    def detect(self, images: Sequence[np.ndarray], read: ReadSettings = DEFAULT_READ) -> Found:
        """(detections, candidate peaks below the threshold) per image: the first look, the read at each
        image's scale, the second look where ``read`` or the file turns it on, and the classifier's
        probabilities merged into every detection's (`combine_experts` with the file's powers; all crops in one
        batch)."""
        look = self.settings.look(read.second_look)
        thr = self.settings.decision_threshold(read.second_look) if read.threshold is None else read.threshold
        scales = self.scales(images, None, read.batch_size)
        out = self.look(list(zip(images, scales, strict=True)), thr, read.max_objects, read.batch_size,
                        CANDIDATE_FLOOR)
        if look is not None:
            out = rescore(self, images, out, look, thr, read.max_objects, read.batch_size)
        probs = None if self.attributes is None else self.attributes.read(images, [d for d, _ in out],
                                                                            read.white_balance)
        if probs is not None:
            weights = self.settings.expert_weights
            for k, d in enumerate(det for ds, _ in out for det in ds):
                d.probs = {a: combine_experts(p, probs[a][k], weights.get(a, (1.0, 1.0))) if a in probs else p
                           for a, p in d.probs.items()}
        return out

    def parse_batch(self, images: Sequence[np.ndarray], read: ReadSettings = DEFAULT_READ) -> list[Scene]:
        """`Scene` per image: the attributes the project's domain perceives (colour, shape, material) with their
        calibrated probabilities, and the scene's ``confidence``; the network's size head serves training only
        (the domain has no size)."""
        dom = load_catalog().domain
        classes = self.settings.classes
        scenes = []
        for im, (ds, candidates) in zip(images, self.detect(images, read), strict=True):
            h, w = im.shape[:2]
            objs = []
            for d in ds:
                attrs, probs = {}, {}
                for a in dom.perceived_attributes:
                    p = d.probs[a]
                    attrs[a] = classes[a][int(np.argmax(p))]
                    probs[a] = {v: float(p[classes[a].index(v)]) for v in dom.attributes[a]}
                # whole pixels, as CLEVR's pixel_coords (round(x * W)): a centre within half a pixel of a
                # midline then falls on the side CLEVR's rounded truth puts it
                cx = min(max(math.floor(d.cx + 0.5), 1), w - 1)
                cy = min(max(math.floor(d.cy + 0.5), 1), h - 1)
                hw = max(min(d.w / 2, cx, w - cx), 0.5)
                hh = max(min(d.h / 2, cy, h - cy), 0.5)
                objs.append(SceneObject(attrs, (cx - hw, cy - hh, cx + hw, cy + hh), round(d.score, 4), probs))
            cands = [c.score for c in candidates]
            cs = self.settings.confidence
            conf = scene_confidence(ds, cands, w, h, cs, dom.perceived_attributes,
                                    reading_features(im, ds, cands) if cs.terms else None)
            scenes.append(Scene((w, h), tuple(objs), dom, round(conf, 4)))
        return scenes


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


def extract_batch(images: Iterable[np.ndarray], **settings: Any) -> list[Scene]:
    """`Scene` per RGB uint8 image. Settings (`logicval_hf.perception.parser_settings`): ``threshold`` (heat-map
    peak, default from the model), ``max_objects`` (32), ``batch_size`` (8), ``second_look`` (read uncertain
    peaks again, closer: `logicval_hf.perception.second_look`; default from the model), ``white_balance``
    (balance the attribute classifier's crops against the image's colour cast; default true), ``model_path``,
    ``attribute_model`` (the classifier's file; default the one beside the model when present; ``False``: the
    detector's own attribute heads), ``precision`` (``"int8"``, the default, or ``"fp32"``), ``threads``
    (onnxruntime intra-op threads). Any other setting is refused in one line naming it."""
    files, read = split_settings(settings)
    model = load_model(files.get("model_path"), files.get("threads"), files.get("attribute_model"),
                       files.get("precision"))
    return model.parse_batch(list(images), read)


def extract(rgb: np.ndarray, **settings: Any) -> Scene:
    """`Scene` of one RGB uint8 image (same settings as `extract_batch`)."""
    return extract_batch([rgb], **settings)[0]


#: the ``clevr`` perception backend (`logicval_hf.perception.BACKENDS`): CLEVR images, batched, two model files
BACKEND = PerceptionBackend(
    "clevr", extract, extract_batch, domains=("clevr",), model_files=MODEL_PATHS, requires=("onnxruntime",),
    description="the shipped CLEVR scene parser (ONNX, CPU)", check_settings=split_settings)

