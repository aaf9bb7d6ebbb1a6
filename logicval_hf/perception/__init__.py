"""Perception: turn an image into a `Scene` (objects with colour, shape, material and a box).

Usage::

    from logicval_hf.perception import extract_scene, extract_scenes
    scene = extract_scene("image.png")                 # default backend "clevr"
    scenes = extract_scenes([img1, img2], backend="clevr", n_jobs=2)

An image may be a PIL image, a ``numpy`` array of ``uint8`` (``H x W x 3`` RGB, ``H x W x 4`` RGBA or
``H x W`` grey) or a path (``str`` / ``pathlib.Path``). Bad input raises `PerceptionError` (a `ValueError`)
with a message that says what was wrong.

Backends are plain callables ``fn(rgb: np.ndarray[H, W, 3] uint8, **settings) -> Scene`` kept in
`BACKENDS`; `register_backend` adds one (e.g. a neural pipeline or a "given" backend that returns
annotated scenes). Backends are imported lazily, so registering one costs nothing until it is used.
"""

from __future__ import annotations

import importlib
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from logicval_hf.contract.scene import Scene

__all__ = [
    "BACKENDS", "MAX_PIXELS", "PerceptionError", "extract_scene", "extract_scenes", "load_image",
    "register_backend",
]

#: Largest image accepted (pixels). Larger ones are refused before they are decoded.
MAX_PIXELS = 40_000_000
#: Images decoded and handed to a batched backend (``extract_batch``) per call.
BATCH_CHUNK = 64


class PerceptionError(ValueError):
    """An image could not be read or is not a usable RGB image (wrong type, shape, dtype, size, corrupt file)."""


# name -> callable, or "module:function" string resolved on first use
BACKENDS: dict[str, Callable[..., Scene] | str] = {
    "clevr": "logicval_hf.perception.clevr:extract",
    "given": "logicval_hf.perception.given:extract",
    "neural": "logicval_hf.perception.neural:extract",
}


def register_backend(name: str, fn: Callable[..., Scene] | str, *, replace: bool = False) -> None:
    """Register a backend under ``name``: a callable ``fn(rgb_uint8_array, **settings) -> Scene`` or a
    lazy ``"package.module:function"`` reference."""
    if not isinstance(name, str) or not name:
        raise ValueError("backend name must be a non-empty string")
    if name in BACKENDS and not replace:
        raise ValueError(f"backend {name!r} is already registered (pass replace=True to override)")
    if not (callable(fn) or (isinstance(fn, str) and ":" in fn)):
        raise ValueError("backend must be a callable or a 'module:function' string")
    BACKENDS[name] = fn


def _resolve(backend: str) -> Callable[..., Scene]:
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"unknown perception backend {backend!r}; known backends: {sorted(BACKENDS)}")
    fn = BACKENDS[backend]
    if isinstance(fn, str):
        mod, _, attr = fn.partition(":")
        fn = getattr(importlib.import_module(mod), attr)
        BACKENDS[backend] = fn
    return fn


# ---- input hygiene --------------------------------------------------------------------------------
def _check_size(w: int, h: int, what: str) -> None:
    if w <= 0 or h <= 0:
        raise PerceptionError(f"{what}: empty image ({w}x{h})")
    if w * h > MAX_PIXELS:
        raise PerceptionError(
            f"{what}: image of {w}x{h} = {w * h / 1e6:.1f} megapixels exceeds the limit of "
            f"{MAX_PIXELS / 1e6:.0f} megapixels"
        )


def _from_pil(im: Any, what: str) -> np.ndarray:
    from PIL import Image

    _check_size(*im.size, what)
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
        _check_size(a.shape[1], a.shape[0], what)
        a = np.repeat(a[:, :, None], 3, axis=2)
    elif a.ndim == 3 and a.shape[2] in (3, 4):
        _check_size(a.shape[1], a.shape[0], what)
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
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, np.ndarray):
        return _from_array(image, what)
    if isinstance(image, Image.Image):
        return _from_array(_from_pil(image, what), what)
    if isinstance(image, (str, os.PathLike)):
        path = Path(image)
        what = f"{what} {str(path)!r}"
        if not path.is_file():
            raise PerceptionError(f"{what}: no such file")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(path) as im:
                    _check_size(*im.size, what)  # header only: refuse before decoding
                    im.load()
                    return _from_array(_from_pil(im, what), what)
        except PerceptionError:
            raise
        except UnidentifiedImageError:
            raise PerceptionError(f"{what}: not an image file PIL can read") from None
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise PerceptionError(f"{what}: refused as a possible decompression bomb ({e})") from None
        except (OSError, ValueError, SyntaxError, EOFError) as e:
            raise PerceptionError(f"{what}: corrupt or truncated image ({e})") from None
    raise PerceptionError(
        f"{what}: expected a PIL image, a numpy uint8 array or a path, got {type(image).__name__}"
    )


# ---- entry points ---------------------------------------------------------------------------------
def extract_scene(image: Any, backend: str = "clevr", **settings: Any) -> Scene:
    """Perceive one image with the named backend and return its `Scene`."""
    fn = _resolve(backend)
    if getattr(fn, "raw_input", False):  # e.g. "given": the input is a scene graph, not pixels
        return fn(image, **settings)
    return fn(load_image(image), **settings)


def _batch_function(fn: Callable[..., Scene]) -> Callable[..., list[Scene]] | None:
    """A backend's batched form: ``extract_batch`` beside its function (one forward pass for many images)."""
    module = importlib.import_module(getattr(fn, "__module__", __name__))
    batch = getattr(module, "extract_batch", None)
    return batch if callable(batch) else None


def _init_worker(fn: Callable[..., Scene]) -> None:
    """Worker start-up: a backend may define ``fn.init_worker()`` (e.g. one thread per process, warm caches)."""
    init = getattr(fn, "init_worker", None)
    if callable(init):
        init()


def _work(args: tuple[Any, Callable[..., Scene], dict[str, Any]]) -> Scene:
    image, fn, settings = args
    return fn(load_image(image), **settings)


def extract_scenes(
    images: Iterable[Any], backend: str = "clevr", *, n_jobs: int = 1, **settings: Any
) -> list[Scene]:
    """Perceive several images; the result equals ``[extract_scene(im, backend, **settings) for im in images]``.

    ``n_jobs > 1`` spreads the images over that many worker processes started with "forkserver" (or
    "spawn"), never "fork" (OpenCV/BLAS thread pools make forked children hang), so a calling script needs the
    usual ``if __name__ == "__main__":`` guard and the backend must be a module-level (picklable) function.
    Paths travel cheaply; arrays and PIL images are decoded and validated here first, so errors for them name
    the offending image by its index.
    """
    fn = _resolve(backend)
    items: Sequence[Any] = list(images)
    if not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    if getattr(fn, "raw_input", False):
        return [fn(x, **settings) for x in items]
    batch = _batch_function(fn)
    if batch is not None:  # BATCH_CHUNK images decoded at a time: host memory stays bounded for long lists
        out: list[Scene] = []
        for start in range(0, len(items), BATCH_CHUNK):
            chunk = [load_image(im, f"images[{start + i}]") for i, im in enumerate(items[start:start + BATCH_CHUNK])]
            out.extend(batch(chunk, **settings))
        return out
    if n_jobs == 1 or len(items) < 2:
        out = []
        for i, im in enumerate(items):
            out.append(fn(load_image(im, f"images[{i}]"), **settings))
        return out
    # validate cheaply up front so that errors carry the index
    items = [im if isinstance(im, (str, os.PathLike)) else load_image(im, f"images[{i}]") for i, im in enumerate(items)]
    import multiprocessing as mp

    # not "fork": a process whose OpenCV/BLAS thread pools already ran can deadlock in forked children.
    # "forkserver" forks from a clean helper process (cheap); "spawn" elsewhere.
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload([__name__, getattr(fn, "__module__", __name__)])
    # the backend callable itself travels to the workers (pickled by reference, so it must be importable:
    # a module-level function); workers need not have it registered
    # concurrent.futures rather than multiprocessing.Pool: a worker that dies (e.g. a calling script without the
    # __main__ guard, or the OOM killer) raises BrokenProcessPool instead of hanging forever
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(min(n_jobs, len(items)), mp_context=ctx, initializer=_init_worker,
                                 initargs=(fn,)) as pool:
            return list(pool.map(_work, [(im, fn, settings) for im in items],
                                 chunksize=max(1, len(items) // (4 * n_jobs))))
    except BrokenProcessPool as e:
        raise RuntimeError(
            f"extract_scenes(n_jobs={n_jobs}): a worker process died. Worker processes re-import the calling "
            "script, so a script must call this under `if __name__ == \"__main__\":`; otherwise the worker ran out "
            "of memory or crashed (use n_jobs=1 to see the error in-process)") from e
