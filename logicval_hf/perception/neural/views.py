"""The pixels the CLIP half looks at: square views of an object (paper, Appendix E) and GenEval's colour crop; and
the image checks every half shares."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["VIEW_SCALES", "VIEW_SPECS", "as_pil", "check_rgb", "geneval_crop", "render_view", "view_window"]

#: Canvas side as a multiple of the box's longer side, per view size.
VIEW_SCALES: dict[str, float] = {"tight": 1.0, "medium": 1.5, "wide": 2.5}

#: Views per attribute: (view size, background) with background "grey" (only the box's pixels are copied
#: onto a grey canvas) or "original" (the canvas shows the image around the box). Paper, Appendix E.
#: Attributes not listed use ``"default"``.
VIEW_SPECS: dict[str, tuple[tuple[str, str], ...]] = {
    "shape": (("tight", "grey"), ("medium", "grey")),
    "color": (("tight", "grey"), ("medium", "grey"), ("wide", "grey")),
    "material": (("medium", "original"),),
    "default": (("tight", "grey"), ("medium", "grey")),
}


def view_window(bbox: Sequence[float], scale: float) -> tuple[int, int, int]:
    """The square canvas of a view, in image pixels: ``(x0, y0, side)``.

    The canvas is centred on the box centre and its side is ``scale`` times the box's longer side (at least
    one pixel), rounded to whole pixels. It may reach outside the image (that part is grey).
    """
    x0, y0, x1, y1 = (float(v) for v in bbox)
    side = max(1, math.ceil(scale * max(x1 - x0, y1 - y0) - 1e-9))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return math.floor(cx - side / 2 + 0.5), math.floor(cy - side / 2 + 0.5), side


def render_view(rgb: np.ndarray, bbox: Sequence[float], scale: float, background: str,
                grey: int = 128) -> np.ndarray:
    """One view of an object as a ``side x side x 3`` uint8 canvas (see `view_window`).

    ``background="grey"``: the canvas is grey and only the pixels inside the object's box (whole pixels
    touched by the box) are copied; ``"original"``: every canvas pixel that lies in the image is copied.
    """
    if background not in ("grey", "original"):
        raise ValueError(f"view background must be 'grey' or 'original', got {background!r}")
    H, W = rgb.shape[:2]
    ox, oy, side = view_window(bbox, scale)
    canvas = np.full((side, side, 3), int(grey), dtype=np.uint8)
    # source region in the image
    sx0, sy0, sx1, sy1 = ox, oy, ox + side, oy + side
    if background == "grey":
        bx0, by0, bx1, by1 = (float(v) for v in bbox)
        sx0, sy0 = max(sx0, math.floor(bx0)), max(sy0, math.floor(by0))
        sx1, sy1 = min(sx1, math.ceil(bx1)), min(sy1, math.ceil(by1))
    sx0, sy0, sx1, sy1 = max(sx0, 0), max(sy0, 0), min(sx1, W), min(sy1, H)
    if sx1 > sx0 and sy1 > sy0:
        canvas[sy0 - oy: sy1 - oy, sx0 - ox: sx1 - ox] = rgb[sy0:sy1, sx0:sx1]
    return canvas


def geneval_crop(rgb: np.ndarray, bbox: Sequence[float], size: tuple[int, int]) -> np.ndarray:
    """GenEval's colour crop as ``size = (H, W)`` uint8 pixels: the box cut from the image (``PIL.Image.crop``,
    which rounds the box), resized so that its short side fits (bicubic) and centre-cropped, as open_clip's
    evaluation transform does."""
    from PIL import Image

    x0, y0, x1, y1 = (round(float(v)) for v in bbox)  # PIL's own rounding of a float box
    im = as_pil(rgb).crop((x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)))
    w, h = im.size
    th, tw = int(size[0]), int(size[1])
    side = max(th, tw)
    if w <= h:  # torchvision's Resize(int): the short side becomes `side`, the long one int(side * long / short)
        nw, nh = side, int(side * h / w)
    else:
        nw, nh = int(side * w / h), side
    if (nw, nh) != (w, h):
        im = im.resize((nw, nh), Image.Resampling.BICUBIC)
    top, left = round((nh - th) / 2.0), round((nw - tw) / 2.0)
    return np.asarray(im.crop((left, top, left + tw, top + th)))


def as_pil(rgb: np.ndarray):
    from PIL import Image

    return Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8), "RGB")


def check_rgb(rgb: Any, what: str) -> np.ndarray:
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        from logicval_hf.perception import load_image

        return load_image(rgb, what)
    return rgb
