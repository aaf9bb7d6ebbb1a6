"""The scene parser's two model files as onnxruntime CPU sessions: opening one (with its settings read once from
its metadata), and the second network, the attribute classifier, with the crops it reads."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.perception.parser_decoding import Detection, crop_square, object_crops, softmax
from logicval_hf.perception.parser_settings import META_KEY, ClassifierSettings
from logicval_hf.perception.white_balance import balance_crops, illuminant_gains

__all__ = ["AttributeClassifier", "open_session"]


def open_session(path: Path, threads: int | None, what: str, hint: str) -> tuple[Any, dict[str, Any]]:
    """An onnxruntime CPU session of ``path`` and its LogicVal metadata (the raw JSON).

    Raises:
        ImportError: onnxruntime is not installed (with the install line).
        FileNotFoundError: no file at ``path`` (``hint`` says how to make one).
        ValueError: the file is not a readable ONNX graph, or has no LogicVal metadata.
    """
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
    # a parse alternates between two sessions with Python work in between: a pool thread spinning after its run
    # would compete with the next inference session's threads for the same few cores (results are the same either way)
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
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


class AttributeClassifier:
    """The second network: colour / shape / material / size of one object from a crop around it
    (`object_crops`), with calibrated probabilities. Why a second network: the detector reads attributes from
    stride-8 features that also see the neighbours; an occluded object's few visible pixels are read as its
    occluder's."""

    def __init__(self, path: Path, threads: int | None = None):
        self.path = path
        self.session, self.meta = open_session(
            path, threads, "attribute-classifier model",
            "train one with python -m logicval_hf.training.train_attribute_classifier --export FILE")
        self.settings = ClassifierSettings.from_metadata(self.meta, path)
        self._lock = threading.Lock()

    def classify(self, crops: np.ndarray, batch_size: int = 64) -> dict[str, np.ndarray]:
        """Attribute -> (K, classes) calibrated probabilities of ``crops`` (from `object_crops`)."""
        parts = []
        for start in range(0, len(crops), batch_size):
            with self._lock:
                parts.append(self.session.run(["logits"], {"crops": crops[start:start + batch_size]})[0])
        width = sum(map(len, self.settings.classes.values()))
        logits = np.concatenate(parts) if parts else np.zeros((0, width))
        temps = self.settings.temperatures
        return {a: softmax(logits[:, sl] / float(temps.get(a, 1.0))) for a, sl in self.settings.slices.items()}

    def read(self, images: Sequence[np.ndarray], dets: Sequence[Sequence[Detection]], white_balance: bool = True
             ) -> dict[str, np.ndarray] | None:
        """The calibrated probabilities (attribute -> (K, classes)) of every detection, in the order of ``dets``
        flattened (None when there is none): one crop per detection, each image's crops white-balanced
        (`logicval_hf.perception.white_balance`) unless ``white_balance`` is False, all in one batch."""
        crops = []
        for im, ds in zip(images, dets, strict=True):
            if ds:
                long_side = max(im.shape[:2])
                sq = [crop_square(d.cx, d.cy, d.w, d.h, d.vx, d.vy, long_side) for d in ds]
                c = object_crops(im, sq, [(d.vx, d.vy) for d in ds])
                crops.append(balance_crops(c, illuminant_gains(im)) if white_balance else c)
        return self.classify(np.concatenate(crops)) if crops else None
