"""The perception-backend contract: one typed object that says everything a caller needs about a backend.

A backend turns an image into a `Scene`. It is a `PerceptionBackend` registered by name in
`logicval_hf.perception.BACKENDS`, as the object itself or as a lazy ``"package.module:attribute"`` reference
(imported on first use, so registering costs nothing). Each built-in backend declares its object beside its
code (``BACKEND`` in `scene_parser`, `given`, `neural`)::

    from logicval_hf.perception import PerceptionBackend, register_backend

    def extract(rgb, **settings):                 # rgb: H x W x 3 uint8 array
        ...
        return scene                              # a logicval_hf.Scene

    register_backend("mine", PerceptionBackend("mine", extract, model_files=("weights.onnx",)))
    register_backend("mine", "my_package.perception:BACKEND", replace=True)     # the same, lazily

A plain function registers too (`register_backend` wraps it: `PerceptionBackend.from_callable`). Who reads which
field: `extract_scene` (``extract``, ``raw_input``, the domain fields), `extract_scenes` (also ``extract_batch``
and ``init_worker``), the main job (``model_files`` and the code's source files in its cache fingerprint;
`source_files`), a server (`check`, `info`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logicval_hf.contract.domain import DEFAULT_DOMAIN, Domain, domain_names, load_domain
from logicval_hf.contract.scene import Scene

__all__ = ["PerceptionBackend", "as_backend"]


def _fail(name: Any, msg: str) -> ValueError:
    return ValueError(f"perception backend {name!r}: {msg}")


def _type_name(x: Any) -> str:
    return type(x).__name__


@dataclass(frozen=True)
class PerceptionBackend:
    """A perception backend: its entry points and what it declares about itself.

    Args:
        name: the name it is registered under (`register_backend` sets it to the registry's name).
        extract: ``extract(image, **settings) -> Scene``. ``image`` is an RGB ``uint8`` array ``H x W x 3``
            (decoded and checked by `logicval_hf.perception.load_image`), or the caller's item untouched when
            ``raw_input``. ``settings`` are the caller's keyword settings (the metric's ``backend_settings``),
            plus ``domain=`` (a `Domain`) when ``takes_domain`` and a domain was asked for.
        extract_batch: optional ``extract_batch(images, **settings) -> list[Scene]``, one scene per image in
            order (same inputs and settings as ``extract``): used for every list of images when present
            (one forward pass for many images). An image it could not read may get a `PerceptionError` in place
            of its scene (its message says what was wrong; ``vlm``: an answer outside the domain), so that the
            others are still read: `extract_scenes` raises it, or returns it with ``errors="return"``.
        domains: names of the domains it perceives (default CLEVR only); ``None``: any domain. Asking for
            another domain is a `PerceptionError` before any image is touched.
        takes_domain: it receives the asked-for domain as ``domain=`` (required when ``domains`` is None).
        raw_input: ``extract`` takes the caller's item as it is (e.g. ``given``: a scene graph), not pixels.
        init_worker: optional ``init_worker()``, run once in each worker process before its first image
            (thread limits, warm caches).
        model_files: files whose bytes decide its output (weights): cached results are reused only while
            they are unchanged, and `check` reports a missing one.
        requires: importable modules it needs beyond the core install (``"torch"``); `check` reports missing
            ones without importing anything.
        extra: the ``logicval-hf[EXTRA]`` extra that installs ``requires`` (for the install hint).
        description: one line for listings and a server's health page.
        check_settings: optional ``check_settings(settings)``: raises ValueError (one line) for settings the
            backend does not take, so that a server or a job refuses them before it starts a worker.

    Raises:
        ValueError: a field of the wrong kind (the message names the backend and the field).
    """

    name: str
    extract: Callable[..., Scene]
    extract_batch: Callable[..., Sequence[Scene]] | None = None
    domains: tuple[str, ...] | None = (DEFAULT_DOMAIN,)
    takes_domain: bool = False
    raw_input: bool = False
    init_worker: Callable[[], Any] | None = None
    model_files: tuple[Path, ...] = ()
    requires: tuple[str, ...] = ()
    extra: str | None = None
    description: str = ""
    check_settings: Callable[[Mapping[str, Any]], Any] | None = None

    def __post_init__(self) -> None:
        name = self.name
        if not isinstance(name, str) or not name:
            raise ValueError(f"a perception backend's name must be a non-empty string, got {name!r}")
        if not callable(self.extract):
            raise _fail(name, f"extract must be a function extract(image, **settings) -> Scene, "
                              f"got {_type_name(self.extract)}")
        for field in ("extract_batch", "init_worker", "check_settings"):
            value = getattr(self, field)
            if value is not None and not callable(value):
                raise _fail(name, f"{field} must be a function or None, got {_type_name(value)}")
        for field in ("takes_domain", "raw_input"):
            if not isinstance(getattr(self, field), bool):
                raise _fail(name, f"{field} must be True or False, got {getattr(self, field)!r}")
        if self.domains is not None:
            object.__setattr__(self, "domains", self._names("domains", self.domains))
        elif not self.takes_domain:
            raise _fail(name, "a backend for any domain (domains=None) must take the domain it is asked for "
                              "(takes_domain=True)")
        object.__setattr__(self, "requires", self._names("requires", self.requires, empty_ok=True))
        if self.extra is not None and (not isinstance(self.extra, str) or not self.extra):
            raise _fail(name, f"extra must be the name of an extra or None, got {self.extra!r}")
        if isinstance(self.model_files, (str, os.PathLike)) or not isinstance(self.model_files, (tuple, list)):
            raise _fail(name, f"model_files must be a tuple of paths, got {_type_name(self.model_files)}")
        for f in self.model_files:
            if not isinstance(f, (str, os.PathLike)):
                raise _fail(name, f"model_files must hold paths, got {_type_name(f)}")
        object.__setattr__(self, "model_files", tuple(Path(f) for f in self.model_files))
        if not isinstance(self.description, str):
            raise _fail(name, f"description must be a string, got {_type_name(self.description)}")

    def _names(self, field: str, value: Any, empty_ok: bool = False) -> tuple[str, ...]:
        if isinstance(value, str) or not isinstance(value, (tuple, list, frozenset, set)):
            raise _fail(self.name, f"{field} must be a tuple of names, got {value!r}")
        if not empty_ok and not value:
            raise _fail(self.name, f"{field} must name at least one (None: any domain)")
        if not all(isinstance(v, str) and v for v in value):
            raise _fail(self.name, f"{field} must hold non-empty strings, got {list(value)!r}")
        return tuple(value)

    # ---- what callers ask ------------------------------------------------------------------------
    def perceives(self, domain: Domain) -> bool:
        """Whether it perceives ``domain``. A domain that reuses a shipped domain's name (``"clevr"``) must be
        that domain: a user's edited copy of CLEVR is not what a CLEVR-only backend was trained on."""
        if self.domains is None:
            return True
        if domain.name not in self.domains:
            return False
        return domain.name not in domain_names() or domain == load_domain(domain.name)

    def source_files(self) -> list[Path]:
        """The source files of the modules that define its functions (part of a cache fingerprint); for a
        function defined in a package's ``__init__`` (``neural``), every module of that package."""
        files: list[Path] = []
        for fn in (self.extract, self.extract_batch, self.init_worker):
            if fn is None:
                continue
            try:
                path = Path(inspect.getfile(inspect.unwrap(fn) if inspect.isroutine(fn) else type(fn)))
            except (TypeError, OSError):  # built in, or defined where no file is (an interactive session)
                continue
            found = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
            files.extend(f for f in found if f.is_file() and f not in files)
        return files

    def check(self) -> list[str]:
        """What stops it from running here, one line each (empty: ready): missing model files, required
        modules that are not installed. Imports nothing."""
        problems = [f"model file {f} is missing" for f in self.model_files if not f.is_file()]
        hint = f' (pip install "logicval-hf[{self.extra}]")' if self.extra else ""
        for module in self.requires:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                problems.append(f"module {module} is not installed{hint}")
        return problems

    def info(self) -> dict[str, Any]:
        """A JSON-able description (a server's health page, a listing)."""
        problems = self.check()
        return {
            "name": self.name, "description": self.description,
            "domains": list(self.domains) if self.domains is not None else "any",
            "takes_domain": self.takes_domain, "raw_input": self.raw_input, "batched": self.extract_batch is not None,
            "model_files": [str(f) for f in self.model_files], "requires": list(self.requires), "extra": self.extra,
            "ready": not problems, "problems": problems,
        }

    @classmethod
    def from_callable(cls, name: str, fn: Callable[..., Scene]) -> PerceptionBackend:
        """The backend of a plain function ``fn(image, **settings) -> Scene``: CLEVR images, one at a time."""
        if not callable(fn):
            raise _fail(name, f"must be a PerceptionBackend or a function fn(image, **settings) -> Scene, "
                              f"got {_type_name(fn)}")
        return cls(name=name, extract=fn)


def as_backend(name: str, obj: Any) -> PerceptionBackend:
    """What `BACKENDS` stores for ``obj`` registered as ``name``: a `PerceptionBackend` (renamed to ``name``
    when registered under another name) or a plain function wrapped by `PerceptionBackend.from_callable`.

    Raises:
        ValueError: ``obj`` is neither (the message names the backend).
    """
    if isinstance(obj, PerceptionBackend):
        return obj if obj.name == name else dataclasses.replace(obj, name=name)
    return PerceptionBackend.from_callable(name, obj)
