"""Perception: turn an image into a `Scene` (objects with colour, shape, material and a box).

Usage::

    from logicval_hf.perception import extract_scene, extract_scenes
    scene = extract_scene("image.png")                 # default backend "clevr"
    scenes = extract_scenes([img1, img2], backend="clevr", n_jobs=2)
    scene = extract_scene("photo.png", backend="neural", domain="coco")   # COCO objects (80 classes, 10 colours)
    scenes = extract_scenes(images, backend="vlm", url="http://127.0.0.1:8000/v1", model="Qwen/Qwen2.5-VL-7B-Instruct",
                            multiple_of=28, errors="return")     # a grounding VLM; a bad answer is that image's error

An image may be a PIL image, a ``numpy`` array of ``uint8`` (``H x W x 3`` RGB, ``H x W x 4`` RGBA or
``H x W`` grey) or a path (``str`` / ``pathlib.Path``). Bad input raises `PerceptionError` (a `ValueError`)
with a message that says what was wrong.

A backend is a `PerceptionBackend` (`logicval_hf.perception.backend`: the written contract) kept by name in
`BACKENDS`: its ``extract`` (and optional ``extract_batch``), the domains it perceives, whether it takes raw
input (``given``: scene graphs) and the model files it depends on. `register_backend` adds one (a
`PerceptionBackend`, a plain function ``fn(rgb, **settings) -> Scene``, or a lazy ``"module:attribute"``
reference to either); backends are imported lazily, so registering one costs nothing until it is used.

The ``domain`` setting (a name such as ``"coco"``, a domain file or a `Domain`) says which domain to perceive.
A backend declares the domains it perceives (``neural``, ``vlm`` and ``given``: any, and they receive the resolved
`Domain` as ``domain=``; ``clevr``, the shipped CLEVR scene parser: CLEVR only); asking a backend for a domain
it does not perceive is a `PerceptionError`. Without ``domain`` a backend perceives its default domain (CLEVR).
The scenes that come back are checked to be scenes, and to be in the domain asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, overload

from logicval_hf.common.registry import Registry
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.perception.backend import PerceptionBackend, as_backend
from logicval_hf.perception.images import MAX_PIXELS, BackendUnavailable, PerceptionError, load_image

__all__ = [
    "BACKENDS", "BackendUnavailable", "MAX_PIXELS", "PerceptionBackend", "PerceptionError", "check_backend",
    "extract_scene", "extract_scenes", "get_backend", "load_image", "register_backend", "resolve_domain",
]

#: Images decoded and handed to a batched backend (``extract_batch``) per call.
BATCH_CHUNK = 64

#: Perception backends by name: a `PerceptionBackend`, or a lazy ``"module:attribute"`` reference to one (or to
#: a plain function, wrapped), imported on first use.
BACKENDS: Registry[PerceptionBackend] = Registry("perception backend", {
    "clevr": "logicval_hf.perception.scene_parser:BACKEND",
    "given": "logicval_hf.perception.given:BACKEND",
    "neural": "logicval_hf.perception.neural:BACKEND",
    "vlm": "logicval_hf.perception.vlm:BACKEND",
    "ocr": "logicval_hf.perception.ocr:BACKEND",
}, adapt=as_backend)


def register_backend(name: str, backend: PerceptionBackend | Callable[..., Scene] | str, *,
                     replace: bool = False) -> None:
    """Register a perception backend under ``name``.

    Args:
        name: the name callers pass as ``backend=``.
        backend: a `PerceptionBackend`, a plain function ``fn(rgb_uint8_array, **settings) -> Scene`` (wrapped
            by `PerceptionBackend.from_callable`), or a lazy ``"package.module:attribute"`` reference to either.
        replace: allow replacing a backend already registered under ``name``.

    Raises:
        ValueError: a name already taken, a string that is not a ``"module:attribute"`` reference, or an
            object that is neither a backend nor a function (the message names the backend).
    """
    if not (callable(backend) or isinstance(backend, (str, PerceptionBackend))):
        raise ValueError(f"perception backend {name!r} must be a PerceptionBackend, a function "
                         f"fn(rgb, **settings) -> Scene or a 'module:attribute' string, got {type(backend).__name__}")
    # a function is wrapped here rather than by the registry's adapt, so that the registry keeps its typed entries
    BACKENDS.register(name, backend if isinstance(backend, str) else as_backend(name, backend), replace=replace)


def get_backend(name: str) -> PerceptionBackend:
    """The `PerceptionBackend` registered as ``name`` (imported on first use).

    Raises:
        UnknownNameError: no such backend (a `ValueError`; the message suggests close names).
        ValueError: its lazy reference is broken or names something that is not a backend.
    """
    return BACKENDS.get(name)


def check_backend(name: str, settings: Mapping[str, Any] | None = None) -> PerceptionBackend:
    """The backend ``name``, checked with ``settings`` before any image is read (what a command, the main job and
    a server run first, so that a bad setting is one line rather than an error per image): its extra installed,
    the ``domain`` setting known and perceived by it, and the other settings accepted by its ``check_settings``
    (``vlm``: a missing ``url`` or ``model``, an endpoint that does not answer; ``neural``: weights that can be
    neither found locally nor downloaded).

    Raises:
        UnknownNameError: no such backend (a `ValueError` suggesting close names).
        MissingExtraError: its extra is not installed.
        ValueError: a setting it refuses (`PerceptionError` for the domain), one line.
    """
    from logicval_hf.common.extras import require_backend

    b = get_backend(name)
    require_backend(name, import_modules=False)  # found, not imported: torch alone takes seconds
    rest = dict(settings or {})
    domain = resolve_domain(rest.pop("domain", None))
    if domain is not None:
        _domain_settings(b, domain, rest)  # a backend that does not perceive it: one line
    if b.check_settings is not None:
        b.check_settings(rest)
    return b


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


def _domain_settings(backend: PerceptionBackend, domain: Domain | None,
                     settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a backend gets for ``domain``: ``domain=`` for a backend that takes one; nothing more for
    one that perceives it without being told; a `PerceptionError` for one that does not perceive it."""
    if domain is None:
        return settings
    if not backend.perceives(domain):
        names = " or ".join(repr(d) for d in backend.domains or ())
        raise PerceptionError(
            f"the {backend.name!r} perception backend perceives {names} scenes only, not domain {domain.name!r}; "
            f"use a backend that takes a domain, e.g. backend='neural' (any domain) or 'given' (scene graphs)")
    return {**settings, "domain": domain} if backend.takes_domain else settings


def _checked(scene: Any, backend: PerceptionBackend, domain: Domain | None, what: str = "image") -> Scene:
    """``scene`` when it is a `Scene` in ``domain`` (when given); a `PerceptionError` naming ``what`` otherwise."""
    if not isinstance(scene, Scene):
        raise PerceptionError(f"{what}: the {backend.name!r} backend returned {type(scene).__name__}, not a Scene")
    if domain is not None and scene.domain != domain:
        raise PerceptionError(f"{what}: the {backend.name!r} backend returned a scene in domain "
                              f"{scene.domain.name!r}, not {domain.name!r}")
    return scene


# ---- entry points ---------------------------------------------------------------------------------
def extract_scene(image: Any, backend: str = "clevr", *, domain: Any = None, **settings: Any) -> Scene:
    """Perceive one image with the named backend and return its `Scene` (in ``domain`` when given: a name such
    as ``"coco"`` or a `Domain`)."""
    b = BACKENDS.get(backend)
    dom = resolve_domain(domain)
    settings = _domain_settings(b, dom, settings)
    item = image if b.raw_input else load_image(image)  # raw input ("given"): a scene graph, not pixels
    return _checked(b.extract(item, **settings), b, dom)


def _init_worker(backend: PerceptionBackend) -> None:
    """Worker start-up: the backend's ``init_worker`` (e.g. one thread per process, warm caches)."""
    if backend.init_worker is not None:
        backend.init_worker()


def _work(args: tuple[Any, PerceptionBackend, dict[str, Any], bool, str]) -> Any:
    image, backend, settings, keep_errors, what = args
    return _one(backend, image, what, settings, keep_errors)


@overload
def extract_scenes(images: Iterable[Any], backend: str = ..., *, n_jobs: int = ..., domain: Any = ...,
                   errors: Literal["raise"] = ..., **settings: Any) -> list[Scene]: ...
@overload
def extract_scenes(images: Iterable[Any], backend: str = ..., *, n_jobs: int = ..., domain: Any = ...,
                   errors: Literal["return"], **settings: Any) -> list[Scene | PerceptionError]: ...
def extract_scenes(
    images: Iterable[Any], backend: str = "clevr", *, n_jobs: int = 1, domain: Any = None, errors: str = "raise",
    **settings: Any
) -> list[Any]:
    """Perceive several images; the result equals ``[extract_scene(im, backend, **settings) for im in images]``
    (``domain`` as for `extract_scene`).

    ``errors="raise"`` (default): the first image that cannot be read raises its `PerceptionError` (named
    ``images[i]``). ``errors="return"``: that image's entry is its `PerceptionError` instead and the others are
    read (an image that does not decode, an answer a backend could not read: the ``vlm`` backend's malformed
    JSON); errors of the whole call (bad settings, an unknown domain, a backend that cannot start) still raise.

    A backend with ``extract_batch`` gets the images in chunks of `BATCH_CHUNK`. Otherwise ``n_jobs > 1``
    spreads the images over that many worker processes started with "forkserver" (or "spawn"), never "fork"
    (OpenCV/BLAS thread pools make forked children hang), so a calling script needs the usual
    ``if __name__ == "__main__":`` guard and the backend's functions must be module-level (picklable). Paths
    travel cheaply; arrays and PIL images are decoded and validated here first, so errors for them name the
    offending image by its index.
    """
    b = BACKENDS.get(backend)
    items: Sequence[Any] = list(images)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer, got {n_jobs!r}")
    if errors not in ("raise", "return"):
        raise ValueError(f"errors must be 'raise' or 'return', got {errors!r}")
    dom = resolve_domain(domain)
    settings = _domain_settings(b, dom, settings)
    scenes = _extract_scenes(b, items, n_jobs, settings, errors == "return")
    out: list[Any] = []
    for i, s in enumerate(scenes):
        if isinstance(s, ValueError):  # the image's own error (a backend's extract_batch may return one)
            msg = str(s)
            cls = type(s) if isinstance(s, PerceptionError) else PerceptionError
            err = cls(msg if msg.startswith(f"images[{i}]") else f"images[{i}]: {msg}")
            if errors == "raise":
                raise err
            out.append(err)
        else:
            out.append(_checked(s, b, dom, f"images[{i}]"))
    return out


def _decoded(part: Sequence[Any], start: int, keep_errors: bool) -> list[Any]:
    """The chunk's images decoded (a `PerceptionError` in place of one that does not, with ``keep_errors``)."""
    out: list[Any] = []
    for i, im in enumerate(part):
        try:
            out.append(load_image(im, f"images[{start + i}]"))
        except PerceptionError as e:
            if not keep_errors:
                raise
            out.append(e)
    return out


def _batched(b: PerceptionBackend, chunk: list[Any], start: int, settings: dict[str, Any]) -> list[Any]:
    assert b.extract_batch is not None
    good = [i for i, x in enumerate(chunk) if not isinstance(x, PerceptionError)]
    if len(good) < len(chunk):  # images that did not decode keep their errors; the others are read
        read = _batched(b, [chunk[i] for i in good], start, settings) if good else []
        merged = list(chunk)
        for i, scene in zip(good, read, strict=True):
            merged[i] = scene
        return merged
    scenes = b.extract_batch(chunk, **settings)
    if not isinstance(scenes, (list, tuple)) or len(scenes) != len(chunk):
        got = f"{len(scenes)} scenes" if isinstance(scenes, (list, tuple)) else type(scenes).__name__
        raise PerceptionError(f"images[{start}:{start + len(chunk)}]: the {b.name!r} backend's extract_batch "
                              f"returned {got} for {len(chunk)} images")
    return list(scenes)


def _one(b: PerceptionBackend, item: Any, what: str, settings: dict[str, Any], keep_errors: bool) -> Any:
    try:
        return b.extract(item if b.raw_input else load_image(item, what), **settings)
    except ValueError as e:  # PerceptionError, SceneError: this image's own
        if keep_errors:
            return e
        raise


def _extract_scenes(b: PerceptionBackend, items: Sequence[Any], n_jobs: int,
                    settings: dict[str, Any], keep_errors: bool = False) -> list[Any]:
    if b.extract_batch is not None:  # BATCH_CHUNK images decoded at a time: host memory stays bounded
        out: list[Any] = []
        for start in range(0, len(items), BATCH_CHUNK):
            part = items[start:start + BATCH_CHUNK]
            chunk = list(part) if b.raw_input else _decoded(part, start, keep_errors)
            out.extend(_batched(b, chunk, start, settings))
        return out
    if b.raw_input or n_jobs == 1 or len(items) < 2:
        return [_one(b, im, f"images[{i}]", settings, keep_errors) for i, im in enumerate(items)]
    # validate cheaply up front so that errors carry the index
    items = [im if isinstance(im, (str, os.PathLike)) else _decoded([im], i, keep_errors)[0]
             for i, im in enumerate(items)]
    todo = [i for i, im in enumerate(items) if not isinstance(im, PerceptionError)]
    import multiprocessing as mp

    # not "fork": a process whose OpenCV/BLAS thread pools already ran can deadlock in forked children.
    # "forkserver" forks from a clean helper process (cheap); "spawn" elsewhere.
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload([__name__, getattr(b.extract, "__module__", None) or __name__])
    # the backend object itself travels to the workers (its functions pickled by reference, so they must be
    # importable: module-level functions); workers need not have it registered
    # concurrent.futures rather than multiprocessing.Pool: a worker that dies (e.g. a calling script without the
    # __main__ guard, or the OOM killer) raises BrokenProcessPool instead of hanging forever
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max(1, min(n_jobs, len(todo))), mp_context=ctx, initializer=_init_worker,
                                 initargs=(b,)) as pool:
            read = pool.map(_work, [(items[i], b, settings, keep_errors, f"images[{i}]") for i in todo],
                            chunksize=max(1, len(todo) // (4 * n_jobs)))
            merged = list(items)
            for i, scene in zip(todo, read, strict=True):
                merged[i] = scene
            return merged
    except BrokenProcessPool as e:
        raise RuntimeError(
            f"extract_scenes(n_jobs={n_jobs}): a worker process died. Worker processes re-import the calling "
            "script, so a script must call this under `if __name__ == \"__main__\":`; otherwise the worker ran out "
            "of memory or crashed (use n_jobs=1 to see the error in-process)") from e
