"""One gate for every image the Space receives (Check uploads, the Annotate widget's image, annotation folders).

Checked before anything is decoded: the file exists, its size (``max_bytes``, the same cap the server enforces
with ``max_file_size``), that it is an image at all (PIL reads the header) and its size from the header only,
with `logicval_hf.perception.images.open_checked` (the package's one opener and pixel cap,
`logicval_hf.perception.MAX_PIXELS`, the same check the decoder and the metric's inputs make). `decode` then hands
the opened image to `logicval_hf.perception.load_image`, the package's one decoder. Errors are `ImageInputError`
(a `ValueError`) with a sentence a user can act on, naming the file (never a server path).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

import logicval_hf.perception as perception
from logicval_hf.perception.images import open_checked

#: default upload cap in bytes (the server's ``max_file_size`` uses the same number)
DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
#: what the error messages call a file without a name
UPLOAD = "the uploaded file"


class ImageInputError(ValueError):
    """An image input the Space refuses (missing, too large, not an image, too many pixels, corrupt)."""


def human_bytes(n: float) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


@contextlib.contextmanager
def open_image(path: Any, max_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
               name: str | None = None) -> Iterator[Image.Image]:
    """The image at ``path``, opened (header read, pixels not decoded) after the size, type and pixel checks."""
    if path is None or (isinstance(path, str) and not path.strip()):
        raise ImageInputError("no image given: choose a PNG, JPEG or WebP file")
    p = Path(str(path))
    name = name or p.name or UPLOAD
    if not p.is_file():
        raise ImageInputError(f"{name}: the file is missing on the server; upload it again")
    size = p.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise ImageInputError(f"{name}: file of {human_bytes(size)} exceeds the upload limit of "
                              f"{human_bytes(max_bytes)}")
    if size == 0:
        raise ImageInputError(f"{name}: the file is empty")
    try:
        with open_checked(p, name) as im:  # the package's one opener: type, pixel cap (PIL's bomb check too)
            yield im
    except perception.PerceptionError as e:
        raise ImageInputError(str(e)) from None


def image_size(path: Any, max_bytes: int | None = DEFAULT_MAX_FILE_BYTES, name: str | None = None) -> tuple[int, int]:
    """(width, height) from the header, after the same checks as `open_image`; nothing is decoded."""
    with open_image(path, max_bytes, name) as im:
        return im.size


def decode(path: Any, max_bytes: int | None = DEFAULT_MAX_FILE_BYTES, name: str | None = None) -> np.ndarray:
    """The checked image as an RGB uint8 array (decoded by `logicval_hf.perception.load_image`)."""
    with open_image(path, max_bytes, name) as im:
        name = name or Path(str(path)).name
        try:
            im.load()
        except (OSError, ValueError, SyntaxError, EOFError) as e:  # the pixel data, past a valid header
            raise ImageInputError(f"{name}: corrupt or truncated image ({e})") from None
        return perception.load_image(im, what=name)


def drawing_canvas(image: Any, scene_size: tuple[float, float], min_width: int = 800
                   ) -> tuple[Image.Image, ImageDraw.ImageDraw, float, float, Any]:
    """What the Check tab draws a scene's boxes or edits on: a copy of the image (upscaled to ``min_width`` so that
    labels stay legible), its draw handle, the scale from the scene's coordinates (x, y) and a label font sized to
    the canvas."""
    im = Image.fromarray(image) if isinstance(image, np.ndarray) else image.convert("RGB")
    if im.width < min_width:
        im = im.resize((min_width, max(1, round(im.height * min_width / im.width))), Image.Resampling.BICUBIC)
    else:
        im = im.copy()
    W, H = im.size
    try:
        font = ImageFont.load_default(size=max(12, round(min(W, 1.5 * H) / 48)))
    except TypeError:  # Pillow 10.0 (the oldest the package takes) has only its bitmap font
        font = ImageFont.load_default()
    return im, ImageDraw.Draw(im), W / float(scene_size[0]), H / float(scene_size[1]), font
