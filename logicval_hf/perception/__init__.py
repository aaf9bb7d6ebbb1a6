"""Perception: turn an image into a `Scene` (objects with colour, shape, material and a box).

Usage::

    from logicval_hf.perception import extract_scene, extract_scenes
    scene = extract_scene("image.png")                 # default backend "clevr"
    scenes = extract_scenes([img1, img2], backend="clevr", n_jobs=2)
    scene = extract_scene("photo.png", backend="neural", domain="coco")   # COCO objects (80 classes, 10 colours)

An image may be a PIL image, a ``numpy`` array of ``uint8`` (``H x W x 3`` RGB, ``H x W x 4`` RGBA or
``H x W`` grey) or a path (``str`` / ``pathlib.Path``). Bad input raises `PerceptionError` (a `ValueError`)
with a message that says what was wrong.

Backends are plain callables ``fn(rgb: np.ndarray[H, W, 3] uint8, **settings) -> Scene`` kept in
`BACKENDS`; `register_backend` adds one (e.g. a neural pipeline or a "given" backend that returns
annotated scenes). Backends are imported lazily, so registering one costs nothing until it is used.

The ``domain`` setting (a name such as ``"coco"``, a domain file or a `Domain`) says which domain to perceive.
A backend that perceives several domains says so with ``fn.takes_domain = True`` (``neural``, ``given``) and
receives the resolved `Domain` as ``domain=``; any other backend (``clevr``, the shipped CLEVR scene parser)
perceives CLEVR only, and asking it for another domain is a `PerceptionError`. Without ``domain`` a backend
perceives its default domain (CLEVR). The scenes that come back are checked to be in the domain asked for.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Iterable, Sequence

from logicval_hf.common.registry import Registry
from logicval_hf.contract.domain import DEFAULT_DOMAIN, Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.perception.images import MAX_PIXELS, PerceptionError, load_image

__all__ = [
    "BACKENDS", "MAX_PIXELS", "PerceptionError", "extract_scene", "extract_scenes", "load_image",
    "register_backend", "resolve_domain",
]

#: Images decoded and handed to a batched backend (``extract_batch``) per call.
BATCH_CHUNK = 64

#: Perception backends by name: a callable ``fn(rgb_uint8_array, **settings) -> Scene`` or a lazy
#: ``"module:function"`` reference, imported on first use.
BACKENDS: Registry[Callable[..., Scene]] = Registry("perception backend", {
    "clevr": "logicval_hf.perception.scene_parser:extract",
    "given": "logicval_hf.perception.given:extract",
    "neural": "logicval_hf.perception.neural:extract",
})


def register_backend(name: str, fn: Callable[..., Scene] | str, *, replace: bool = False) -> None:
    """Register a backend under ``name``: a callable ``fn(rgb_uint8_array, **settings) -> Scene`` or a
    lazy ``"package.module:function"`` reference."""
    if not (callable(fn) or isinstance(fn, str)):  # a string's 'module:function' form is the registry's check
        raise ValueError("backend must be a callable or a 'module:function' string")
    BACKENDS.register(name, fn, replace=replace)


# ---- domains ---------------------------------------------------------------------------------------
def resolve_domain(domain: Any) -> Domain | None:
    """The `Domain` of a ``domain`` setting (a name, a domain file path or a `Domain`; None stays None)."""
    if domain is None or isinstance(domain, Domain):
        return domain
    from logicval_hf.contract.domain import load_domain

    try:
        return load_domain(domain)
    except ValueError as e:
        raise PerceptionError(f"domain: {e}") from None


def _domain_settings(backend: str, fn: Callable[..., Scene], domain: Domain | None,
                     settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a backend gets for ``domain``: ``domain=`` for a backend that takes one; nothing for a CLEVR
    backend asked for CLEVR; a `PerceptionError` for a CLEVR backend asked for another domain."""
    if domain is None:
        return settings
    if getattr(fn, "takes_domain", False):
        return {**settings, "domain": domain}
    from logicval_hf.contract.catalog import load_catalog

    if domain == load_catalog().domain:
        return settings
    raise PerceptionError(
        f"the {backend!r} perception backend perceives {DEFAULT_DOMAIN!r} scenes only, not domain {domain.name!r}; "
        f"use a backend that takes a domain, e.g. backend='neural' (any domain) or 'given' (scene graphs)")


def _check_domain(scene: Scene, domain: Domain | None, backend: str, what: str = "image") -> Scene:
    if domain is not None and isinstance(scene, Scene) and scene.domain != domain:
        raise PerceptionError(f"{what}: the {backend!r} backend returned a scene in domain {scene.domain.name!r}, "
                              f"not {domain.name!r}")
    return scene


# ---- entry points ---------------------------------------------------------------------------------
def extract_scene(image: Any, backend: str = "clevr", *, domain: Any = None, **settings: Any) -> Scene:
    """Perceive one image with the named backend and return its `Scene` (in ``domain`` when given: a name such
    as ``"coco"`` or a `Domain`)."""
    fn = BACKENDS.get(backend)
    dom = resolve_domain(domain)
    settings = _domain_settings(backend, fn, dom, settings)
    if getattr(fn, "raw_input", False):  # e.g. "given": the input is a scene graph, not pixels
        return _check_domain(fn(image, **settings), dom, backend)
    return _check_domain(fn(load_image(image), **settings), dom, backend)


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
    images: Iterable[Any], backend: str = "clevr", *, n_jobs: int = 1, domain: Any = None, **settings: Any
) -> list[Scene]:
    """Perceive several images; the result equals ``[extract_scene(im, backend, **settings) for im in images]``
    (``domain`` as for `extract_scene`).

    ``n_jobs > 1`` spreads the images over that many worker processes started with "forkserver" (or
    "spawn"), never "fork" (OpenCV/BLAS thread pools make forked children hang), so a calling script needs the
    usual ``if __name__ == "__main__":`` guard and the backend must be a module-level (picklable) function.
    Paths travel cheaply; arrays and PIL images are decoded and validated here first, so errors for them name
    the offending image by its index.
    """
    fn = BACKENDS.get(backend)
    items: Sequence[Any] = list(images)
    if not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    dom = resolve_domain(domain)
    settings = _domain_settings(backend, fn, dom, settings)
    if dom is not None:
        scenes = _extract_scenes(fn, items, n_jobs, settings)
        return [_check_domain(s, dom, backend, f"images[{i}]") for i, s in enumerate(scenes)]
    return _extract_scenes(fn, items, n_jobs, settings)


def _extract_scenes(fn: Callable[..., Scene], items: Sequence[Any], n_jobs: int,
                    settings: dict[str, Any]) -> list[Scene]:
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
