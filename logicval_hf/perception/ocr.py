"""OCR with real weights: an image -> text lines, each with its text, box and confidence; the ``ocr`` perception
backend (the lines as objects of the ``text`` box domain); batched recognition of small crops (Sudoku digits).

The networks are PaddleOCR's PP-OCRv6 small text detector and recogniser, as ONNX files inside the ``rapidocr``
wheel (``pip install "logicval-hf[ocr]"``; Apache-2.0 for the code and the weights). The wheel checks the files'
hashes and never downloads anything. Like GIR-Bench's reader (PP-OCRv5 without the text-line orientation
classifier), lines are read upright, and a line is kept when its recognition confidence is above a threshold
(0.5 by default, strictly above, as GIR-Bench keeps them).

Usage::

    from logicval_hf.perception.ocr import read_lines
    for line in read_lines("poster.png"):            # TextLine(text, box, confidence, polygon)
        print(line.text, line.box, line.confidence)
    scene = extract_scene("poster.png", backend="ocr", domain="text")   # lines as objects: {"text", "bbox", "score"}
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.extras import require
from logicval_hf.contract.domain import Domain, load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.perception.backend import PerceptionBackend
from logicval_hf.perception.images import load_image

__all__ = ["BACKEND", "DEFAULT_MIN_CONFIDENCE", "MODEL_FILES", "TextLine", "extract", "lines_scene", "read_lines",
           "reading_order", "recognise_crops"]

#: GIR-Bench keeps OCR segments whose confidence is above this
DEFAULT_MIN_CONFIDENCE = 0.5
#: the bundled networks (inside the rapidocr wheel): detection, recognition, orientation
MODEL_FILES = ("PP-OCRv6_det_small.onnx", "PP-OCRv6_rec_small.onnx", "ch_ppocr_mobile_v2.0_cls_mobile.onnx")
#: a crop's side in pixels at recognition: the recogniser's input height (its width follows the crop's shape)
_REC_HEIGHT = 48


@dataclass(frozen=True)
class TextLine:
    """One line read: its text as recognised, its axis-aligned ``box`` ``(x0, y0, x1, y1)`` in image pixels, the
    recogniser's ``confidence`` (0..1) and the detector's four corners (``polygon``, clockwise from top left)."""

    text: str
    box: tuple[float, float, float, float]
    confidence: float
    polygon: tuple[tuple[float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "box": [round(v, 2) for v in self.box], "confidence": round(self.confidence, 4),
                "polygon": [[round(x, 2), round(y, 2)] for x, y in self.polygon]}


def _model_dir() -> Path | None:
    """rapidocr's folder of bundled networks, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "models"


def _model_paths() -> tuple[Path, ...]:
    folder = _model_dir()
    return tuple(folder / name for name in MODEL_FILES) if folder is not None else ()


_lock = threading.Lock()


@functools.cache
def _engine(kind: str) -> Any:
    """One rapidocr engine per kind: ``"lines"`` (detect, then recognise each line) or ``"crops"`` (recognise only,
    each crop at its own width: a 48-pixel digit is not padded to the 320-pixel line width, ~7x less work)."""
    rapidocr = require("rapidocr", "ocr", "OCR (the ocr perception backend, text scores, Sudoku reading)")
    params: dict[str, Any] = {"Global.log_level": "error", "Global.text_score": 0.0, "Global.use_cls": False}
    if kind == "crops":
        params.update({"Global.use_det": False, "Rec.rec_img_shape": [3, _REC_HEIGHT, _REC_HEIGHT],
                       "Rec.rec_batch_num": 96})
    return rapidocr.RapidOCR(params=params)


def _bgr(rgb: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rgb[:, :, ::-1])  # rapidocr takes arrays in OpenCV's channel order


def read_lines(image: Any, min_confidence: float = DEFAULT_MIN_CONFIDENCE, *, what: str = "image") -> list[TextLine]:
    """The text lines of an image in reading order (`reading_order`), each kept when its confidence is above
    ``min_confidence`` (0 keeps every line read).

    Args:
        image: a path, a PIL image or an RGB ``uint8`` array (checked by `load_image`).
        min_confidence: lines with confidence at or below it are dropped (GIR-Bench: 0.5).
        what: how errors name the image.
    Returns:
        The lines; empty when no text is found.
    Raises:
        PerceptionError: the image cannot be read (the message names it).
        MissingExtraError: rapidocr is not installed.
        ValueError: ``min_confidence`` outside [0, 1).
    """
    _check_confidence(min_confidence)
    rgb = load_image(image, what)
    engine = _engine("lines")
    with _lock:  # the engine's sessions are shared: one image at a time
        out = engine(_bgr(rgb))
    boxes, txts, scores = getattr(out, "boxes", None), getattr(out, "txts", None), getattr(out, "scores", None)
    if boxes is None or txts is None or scores is None:
        return []
    lines = []
    for quad, text, score in zip(boxes, txts, scores, strict=True):
        pts = np.asarray(quad, dtype=float).reshape(-1, 2)
        if not text.strip() or not score > min_confidence:
            continue
        x0, y0 = pts.min(axis=0)
        x1, y1 = pts.max(axis=0)
        lines.append(TextLine(text.strip(), (float(x0), float(y0), float(x1), float(y1)), float(score),
                              tuple((float(x), float(y)) for x, y in pts)))
    return reading_order(lines)


def reading_order(lines: Sequence[TextLine]) -> list[TextLine]:
    """Lines top to bottom, and left to right within a row: a box joins the row above when its vertical centre
    lies within that row's last box (boxes of one row differ in height with ascenders and descenders)."""
    rows: list[list[TextLine]] = []
    for ln in sorted(lines, key=lambda ln: (ln.box[1] + ln.box[3]) / 2):
        centre = (ln.box[1] + ln.box[3]) / 2
        if rows and rows[-1][-1].box[1] <= centre <= rows[-1][-1].box[3]:
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return [ln for row in rows for ln in sorted(row, key=lambda ln: ln.box[0])]


def recognise_crops(crops: Sequence[np.ndarray]) -> list[tuple[str, float]]:
    """Text and confidence for each crop (``H x W`` grey or ``H x W x 3`` RGB ``uint8``), each read as one line
    without detection, all in one batch.

    Raises:
        MissingExtraError: rapidocr is not installed.
    """
    if not crops:
        return []
    imgs = []
    for crop in crops:
        c = np.asarray(crop, dtype=np.uint8)
        imgs.append(np.repeat(c[:, :, None], 3, axis=2) if c.ndim == 2 else _bgr(c))
    engine = _engine("crops")
    with _lock:
        out = engine.recognize_txt(imgs)
    return [(str(t).strip(), float(s)) for t, s in zip(out.txts, out.scores, strict=True)]


def _check_confidence(v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
        raise ValueError(f"min_confidence must be a number in [0, 1), got {v!r}")


def lines_scene(lines: Sequence[TextLine], image_size: tuple[float, float], domain: Domain | None = None) -> Scene:
    """Lines as a scene of the ``text`` domain: one object per line (its text, box and confidence as score)."""
    dom = domain or load_domain("text")
    w, h = image_size
    objects = []
    for ln in lines:
        x0, y0, x1, y1 = ln.box
        box = (max(0.0, x0), max(0.0, y0), min(float(w), max(x1, x0 + 1e-3)), min(float(h), max(y1, y0 + 1e-3)))
        objects.append(SceneObject({"text": dom.canonical_value("text", ln.text)}, box, ln.confidence))
    return Scene((float(w), float(h)), tuple(objects), dom)


def extract(rgb: np.ndarray, min_confidence: float = DEFAULT_MIN_CONFIDENCE, domain: Domain | None = None) -> Scene:
    """The ``ocr`` backend: an RGB array -> a ``text``-domain scene of the lines kept."""
    lines = read_lines(rgb, min_confidence)
    return lines_scene(lines, (rgb.shape[1], rgb.shape[0]), domain)


def _check_settings(settings: Mapping[str, Any]) -> None:
    unknown = [k for k in settings if k not in ("min_confidence",)]
    if unknown:
        raise ValueError(f"the ocr backend takes the setting min_confidence only, got {unknown}")
    if "min_confidence" in settings:
        _check_confidence(settings["min_confidence"])


BACKEND = PerceptionBackend(
    "ocr", extract, domains=("text",), model_files=_model_paths(), requires=("rapidocr",), extra="ocr",
    description="text lines read by PP-OCRv6 (rapidocr, ONNX, CPU) as objects of the text domain: the line's text, "
                "box and confidence",
    check_settings=_check_settings)
