"""Named image shifts: the ways text-to-image output differs from CLEVR v1.0, applied to a real image whose scene
graph is known, so a perception backend's robustness can be measured (``benchmarks/clevr_perception.py
--suite``) and tested.

Each shift is deterministic (noise from a fixed seed) and takes an RGB uint8 image plus the objects' projected
centres; it returns the shifted image and the centres in it. Only ``square`` moves pixels: it crops the largest
square that cuts no object (objects' extents estimated from their depth as CLEVR's camera sees them), or
refuses the image with `ShiftRefused` when every square would cut one.

    from logicval_hf.perception.shifts import SHIFTS, apply_shift
    rgb2, centres2 = apply_shift("exposure_0.7", rgb, centres)
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import numpy as np

from logicval_hf.common.registry import Registry

__all__ = ["SHIFTS", "ShiftRefused", "apply_shift", "object_extent"]

#: CLEVR's camera: 35 mm lens on a 32 mm sensor fitted to the image width
CLEVR_FOCAL_PER_WIDTH = 35.0 / 32.0
#: how far an object reaches from its centre, in object radii (a cube's corners, a little margin)
REACH = 1.6
LARGE_RADIUS = 0.7


class ShiftRefused(ValueError):
    """The shift cannot be applied to this image (e.g. every square frame would cut an object)."""


Centres = Sequence[Sequence[float]]  # (x, y) or CLEVR's (x, y, depth)


def object_extent(centre: Sequence[float], width: int, radius: float = LARGE_RADIUS) -> float:
    """Half the extent in pixels of an object of world ``radius`` at CLEVR's ``pixel_coords`` ``centre``
    (x, y, depth); without a depth, a tenth of the width."""
    if len(centre) < 3 or not centre[2] or centre[2] <= 0:
        return 0.1 * width
    return CLEVR_FOCAL_PER_WIDTH * width * radius * REACH / float(centre[2])


def _square(rgb: np.ndarray, centres: Centres, radii: Sequence[float] | None = None) -> tuple[np.ndarray, list]:
    h, w = rgb.shape[:2]
    side = min(h, w)
    ext = [object_extent(c, w, radii[i] if radii else LARGE_RADIUS) for i, c in enumerate(centres)]
    horizontal = w >= h
    span = (w if horizontal else h) - side
    best, best_margin = 0, -np.inf
    for off in range(span + 1):  # the offset that keeps every object furthest inside the frame
        margins = []
        for c, e in zip(centres, ext, strict=True):
            v = c[0] if horizontal else c[1]
            margins.append(min(v - e - off, off + side - v - e))
        m = min(margins) if margins else 0.0
        if m > best_margin:
            best, best_margin = off, m
    if best_margin < 0:
        raise ShiftRefused("every square frame cuts an object")
    if horizontal:
        out = rgb[:, best:best + side]
        moved = [[c[0] - best, *c[1:]] for c in centres]
    else:
        out = rgb[best:best + side]
        moved = [[c[0], c[1] - best, *c[2:]] for c in centres]
    return np.ascontiguousarray(out), moved


def _linear(rgb: np.ndarray, gains: Sequence[float]) -> np.ndarray:
    x = np.power(rgb.astype(np.float32) / 255.0, 2.2) * np.asarray(gains, np.float32)
    return (np.power(np.clip(x, 0, 1), 1 / 2.2) * 255 + 0.5).astype(np.uint8)


def _scale_values(rgb: np.ndarray, gains: Sequence[float]) -> np.ndarray:
    return np.clip(rgb.astype(np.float32) * np.asarray(gains, np.float32) + 0.5, 0, 255).astype(np.uint8)


def _saturation(rgb: np.ndarray, k: float) -> np.ndarray:
    x = rgb.astype(np.float32)
    grey = (x @ np.array([0.299, 0.587, 0.114], np.float32))[..., None]  # PIL's ImageEnhance.Color
    return np.clip(grey + k * (x - grey) + 0.5, 0, 255).astype(np.uint8)


def _blur(rgb: np.ndarray, sigma: float) -> np.ndarray:
    import cv2

    return cv2.GaussianBlur(rgb, (0, 0), sigma)


def _noise(rgb: np.ndarray, sigma: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.clip(rgb.astype(np.float32) + rng.normal(0, sigma, rgb.shape) + 0.5, 0, 255).astype(np.uint8)


def _jpeg(rgb: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG", quality=quality)
    buf.seek(0)
    with Image.open(buf) as im:
        return np.asarray(im.convert("RGB"))


def _pixels(fn: Callable[[np.ndarray], np.ndarray]):
    return lambda rgb, centres, radii=None: (fn(rgb), [list(c) for c in centres])


#: name -> fn(rgb, centres, radii) -> (rgb, centres)
SHIFTS: Registry[Callable] = Registry("image shift", {
    "square": _square,
    "exposure_0.7": _pixels(lambda x: _linear(x, (0.7, 0.7, 0.7))),
    "exposure_1.3": _pixels(lambda x: _linear(x, (1.3, 1.3, 1.3))),
    "brightness_0.7": _pixels(lambda x: _scale_values(x, (0.7, 0.7, 0.7))),
    "brightness_1.3": _pixels(lambda x: _scale_values(x, (1.3, 1.3, 1.3))),
    "saturation_0.6": _pixels(lambda x: _saturation(x, 0.6)),
    "tint_warm": _pixels(lambda x: _scale_values(x, (1.08, 1.0, 0.85))),
    "tint_cool": _pixels(lambda x: _scale_values(x, (0.88, 0.98, 1.1))),
    "blur_1.5": _pixels(lambda x: _blur(x, 1.5)),
    "noise_8": _pixels(lambda x: _noise(x, 8.0)),
    "jpeg_50": _pixels(lambda x: _jpeg(x, 50)),
})


def apply_shift(name: str, rgb: np.ndarray, centres: Centres, radii: Sequence[float] | None = None
                ) -> tuple[np.ndarray, list[list[float]]]:
    """``SHIFTS[name]`` applied to ``rgb`` (uint8 H x W x 3) with its objects' ``centres`` (CLEVR's
    ``pixel_coords``: x, y, depth) and world ``radii`` (CLEVR: 0.7 large, 0.35 small; default large).

    Raises:
        UnknownNameError: an unknown shift (the message lists the known ones).
        ShiftRefused: the shift does not apply to this image.
    """
    return SHIFTS.get(name)(np.ascontiguousarray(rgb), centres, radii)
