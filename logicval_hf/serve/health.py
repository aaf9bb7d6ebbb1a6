"""What ``GET /health`` reports: whether the perception model is loaded and its files are where they should be.

The failure this guards against is the one users of the GenEval reward server report: after a bad install the
reward collapses to 0 and training goes on, learning nothing. Here a backend whose model file is missing, or whose
model failed to load in the workers, makes ``/health`` answer 503 naming the problem, and the scoring routes refuse
to answer (503) instead of returning zeros.

Nothing here names a path of the server's machine: a model file is named relative to the package
(``perception/scene_parser_int8.onnx``), a file elsewhere (a ``model_path`` setting) by its name alone, and every
message (a backend's check, a load error) is passed through `without_paths` before a client or the log sees it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from logicval_hf.common.fingerprint import PACKAGE_ROOT

__all__ = ["Health", "model_files", "shown_path", "without_paths"]

#: an absolute path: a slash, then folders, then a last part (kept)
_ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"():,]+/)+(?=[^\s/'\"():,])")


def shown_path(path: str | os.PathLike) -> str:
    """How the server names a file: relative to the package when it is one of the package's files, else its name."""
    p = Path(path)
    try:
        return p.resolve().relative_to(PACKAGE_ROOT).as_posix()
    except ValueError:
        return p.name


def without_paths(text: str) -> str:
    """``text`` with the package's folder removed from its files' paths and every other absolute path cut to its
    last part (a message from a backend or a library may name files anywhere on the machine)."""
    return _ABSOLUTE.sub("", text.replace(f"{PACKAGE_ROOT}{os.sep}", ""))


def model_files(backend: str, settings: Mapping[str, Any]) -> list[Path]:
    """The files the backend's model is read from: ``model_path`` when the settings name one, else the backend's
    declared ``model_files`` (the clevr scene parser: detector and attribute classifier)."""
    from logicval_hf.perception import get_backend

    if settings.get("model_path"):
        return [Path(settings["model_path"])]
    return list(get_backend(backend).model_files)


class Health:
    """The server's health record: ``starting`` until the workers have loaded the model, then ``ok`` or
    ``unavailable`` (the load failed, or a model file has gone missing since)."""

    def __init__(self, backend: str, settings: Mapping[str, Any]):
        self.backend = backend
        self.files = model_files(backend, settings)
        self.state = "starting"
        self.error: str | None = None
        self.workers: list[dict[str, Any]] = []

    def loaded(self, workers: list[dict[str, Any]]) -> None:
        self.state, self.workers = "ok", workers

    def failed(self, error: BaseException) -> None:
        self.state, self.error = "failed", without_paths(f"{type(error).__name__}: {error}")

    def problems(self) -> list[str]:
        """Why the server cannot score (empty when it can, or while it is still starting): the backend's own check
        (model files, required modules; `PerceptionBackend.check`), a ``model_path`` that is not there, a failed
        load."""
        from logicval_hf.perception import get_backend

        out = [without_paths(p) for p in get_backend(self.backend).check()]
        out += [f"model file {shown_path(p)} is missing" for p in self.files if not os.path.isfile(p)
                and f"model file {shown_path(p)} is missing" not in out]
        if self.error:
            out.append(f"the {self.backend} backend could not load its model: {self.error}")
        return out

    def report(self) -> dict[str, Any]:
        from logicval_hf.perception import get_backend

        problems = self.problems()
        status = "unavailable" if problems else ("ok" if self.state == "ok" else "starting")
        return {
            "status": status,
            "model_loaded": self.state == "ok" and not problems,
            "backend": self.backend,
            "description": get_backend(self.backend).description,
            "model_files": [{"path": shown_path(p), "present": os.path.isfile(p)} for p in self.files],
            "problems": problems,
        }
