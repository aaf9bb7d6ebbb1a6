"""Input hygiene for perception: any image a user hands us becomes a contiguous ``H x W x 3`` ``uint8`` RGB array,
or a `PerceptionError` that names the image and says what was wrong. Sizes are checked from the file header
before decoding, so an oversized file is refused without spending its memory.

`open_checked` is the one place an image file or encoded bytes are opened: the Space, the metric's inputs, the
command line, the main job, the T2I clients and the training data loaders all come through it, so every one of
them refuses a header claiming 100000x100000 pixels with the same one-line message.
"""

from __future__ import annotations

import io
import os
import re
import warnings
from pathlib import Path
from typing import Any, BinaryIO, Union

import numpy as np

__all__ = ["IMAGE_EXTENSIONS", "BackendUnavailable", "MAX_PIXELS", "PerceptionError", "check_size", "load_image",
           "open_checked", "to_pil"]

#: the file endings of the images a folder is searched for (lower case)
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")
#: what `open_checked` opens: a path, encoded bytes or a binary file object
ImageSource = Union[str, "os.PathLike[str]", bytes, bytearray, BinaryIO]

#: Largest image accepted (pixels). Larger ones are refused before they are decoded.
MAX_PIXELS = 40_000_000


class PerceptionError(ValueError):
    """An image could not be read or is not a usable RGB image (wrong type, shape, dtype, size, corrupt file)."""


class BackendUnavailable(PerceptionError):
    """The backend itself cannot read any image now (an endpoint that refuses or does not answer, a key it
    rejects): reading the images again one by one would only repeat the same failure for each."""


# ---- input hygiene --------------------------------------------------------------------------------
def check_size(w: int, h: int, what: str) -> None:
    if w <= 0 or h <= 0:
        raise PerceptionError(f"{what}: empty image ({w}x{h})")
    if w * h > MAX_PIXELS:
        raise PerceptionError(
            f"{what}: image of {w}x{h} = {w * h / 1e6:.1f} megapixels exceeds the limit of "
            f"{MAX_PIXELS / 1e6:.0f} megapixels; downscale it first"
        )


def _bomb_message(error: Exception, what: str) -> str:
    """PIL's refusal of a header it thinks is a decompression bomb, in the words of `check_size`."""
    m = re.search(r"\((\d+) pixels\)", str(error))
    claimed = f"image of {int(m.group(1)) / 1e6:.0f} megapixels" if m else "image"
    return f"{what}: {claimed} exceeds the limit of {MAX_PIXELS / 1e6:.0f} megapixels; downscale it first"


def open_checked(source: ImageSource, what: str) -> Any:
    """The image opened by PIL, its header read and its size within `MAX_PIXELS`, its pixels not decoded yet.

    Use it as ``with open_checked(path, "image 'x.png'") as im: ...`` (the file is closed on exit).

    Args:
        source: a path, encoded bytes, or a binary file object.
        what: how messages name the image.
    Returns:
        The open `PIL.Image.Image`.
    Raises:
        PerceptionError: not an image, corrupt header, unreadable file, or too many pixels (PIL's own
            decompression-bomb refusal included, which otherwise escapes as a traceback before any size check).
    """
    from PIL import Image, UnidentifiedImageError

    fp = io.BytesIO(bytes(source)) if isinstance(source, (bytes, bytearray)) else source
    try:
        # a header over PIL's warning threshold (89 megapixels, above our cap) becomes the refusal below
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(fp)
    except UnidentifiedImageError:
        raise PerceptionError(f"{what}: not an image file (expected PNG, JPEG, WebP or another format PIL "
                              "reads)") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise PerceptionError(_bomb_message(e, what)) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        raise PerceptionError(f"{what}: cannot read the file ({e.strerror})") from None
    except (OSError, ValueError, SyntaxError, EOFError) as e:
        raise PerceptionError(f"{what}: corrupt or truncated image ({e})") from None
    try:
        check_size(*im.size, what)
    except PerceptionError:
        im.close()
        raise
    return im


def _from_pil(im: Any, what: str) -> np.ndarray:
    from PIL import Image

    w, h = im.size
    check_size(w, h, what)
    try:
        if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
            rgba = im.convert("RGBA")
            bg = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            # CLEVR PNGs are RGBA with an opaque alpha channel; composite anything translucent on white.
            im = Image.alpha_composite(bg, rgba)
        arr = np.asarray(im.convert("RGB"), dtype=np.uint8)
    except (OSError, ValueError, SyntaxError) as e:  # truncated / corrupt data surfaces on decode
        raise PerceptionError(f"{what}: could not decode the image ({e})") from None
    return np.ascontiguousarray(arr)


def _from_array(a: np.ndarray, what: str) -> np.ndarray:
    if a.dtype != np.uint8:
        raise PerceptionError(
            f"{what}: array dtype must be uint8 (0..255), got {a.dtype}; convert with "
            "(x * 255).round().astype(np.uint8) for floats in [0, 1]"
        )
    if a.ndim == 2:
        check_size(a.shape[1], a.shape[0], what)
        a = np.repeat(a[:, :, None], 3, axis=2)
    elif a.ndim == 3 and a.shape[2] in (3, 4):
        check_size(a.shape[1], a.shape[0], what)
        if a.shape[2] == 4:
            alpha = a[:, :, 3:4].astype(np.float32) / 255.0
            a = (a[:, :, :3] * alpha + 255.0 * (1 - alpha)).round().astype(np.uint8)
    else:
        raise PerceptionError(f"{what}: array must be H x W x 3 (RGB), H x W x 4 (RGBA) or H x W, got shape {a.shape}")
    if min(a.shape[:2]) < 8:
        raise PerceptionError(f"{what}: image of {a.shape[1]}x{a.shape[0]} pixels is too small (need at least 8x8)")
    return np.ascontiguousarray(a)


def load_image(image: Any, what: str = "image") -> np.ndarray:
    """Return ``image`` as a contiguous ``H x W x 3`` ``uint8`` RGB array, or raise `PerceptionError`."""
    from PIL import Image

    if isinstance(image, np.ndarray):
        return _from_array(image, what)
    if isinstance(image, Image.Image):
        return _from_array(_from_pil(image, what), what)
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        what = f"{what} {str(path)!r}"
        if not path.is_file():
            raise PerceptionError(f"{what}: no such file")
        with open_checked(path, what) as im:  # header only: refused before decoding
            try:
                im.load()
            except (OSError, ValueError, SyntaxError, EOFError) as e:
                raise PerceptionError(f"{what}: corrupt or truncated image ({e})") from None
            return _from_array(_from_pil(im, what), what)
    raise PerceptionError(
        f"{what}: expected a PIL image, a numpy uint8 array or a path, got {type(image).__name__}"
    )


def to_pil(image: Any, what: str = "image") -> Any:
    """A PIL RGB image from a PIL image, a uint8 array or a path (checked as `load_image` checks it)."""
    from PIL import Image

    return Image.fromarray(load_image(image, what), "RGB")
