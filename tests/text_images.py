"""Images of rendered text for the OCR tests: Pillow's bundled font (always there), and the DejaVu fonts where the
system has them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

_DEJAVU = Path("/usr/share/fonts/truetype/dejavu")


def fonts(size: int) -> list[ImageFont.FreeTypeFont]:
    """Pillow's own font, then the DejaVu faces found on this system."""
    out = [ImageFont.load_default(size=size)]
    for name in ("DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf"):
        if (_DEJAVU / name).is_file():
            out.append(ImageFont.truetype(str(_DEJAVU / name), size))
    return out


def render_lines(lines: list[str], size: int = 40, font: ImageFont.FreeTypeFont | None = None,
                 colour=(0, 0, 0), background=(255, 255, 255), width: int = 640,
                 noise: float = 0.0, seed: int = 0) -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """An RGB image with one line of text per entry, top to bottom, and each line's ink box. At least half as tall
    as wide: the OCR's detector scales the short side to 736 pixels, so a flat strip would cost it far more."""
    font = font or ImageFont.load_default(size=size)
    height = max(40 + len(lines) * int(size * 2), width // 2)
    im = Image.new("RGB", (width, height), background)
    d = ImageDraw.Draw(im)
    boxes = []
    for k, text in enumerate(lines):
        xy = (30, 20 + k * int(size * 2))
        d.text(xy, text, fill=colour, font=font)
        boxes.append(tuple(int(v) for v in d.textbbox(xy, text, font=font)))
    rgb = np.asarray(im).astype(np.int16)
    if noise:
        rng = np.random.default_rng(seed)
        rgb = rgb + rng.normal(0, noise, rgb.shape).round().astype(np.int16)
    return np.clip(rgb, 0, 255).astype(np.uint8), boxes
