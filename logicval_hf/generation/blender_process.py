"""Blender in an interpreter of its own.

``bpy`` 5.0.1 requires ``numpy < 2``; the default install (``datasets`` 5 needs ``pyarrow >= 24``, which needs
``numpy >= 2``) cannot share an environment with it. So Blender lives in a second virtual environment and the
package talks to it through a child process. Where ``bpy`` does import in the current interpreter (a
Blender-only environment), everything runs in-process instead.

Setting it up once::

    python3 -m venv .venv-blender && .venv-blender/bin/pip install bpy==5.0.1 pillow tqdm
    export LOGICVAL_BLENDER_PYTHON=$PWD/.venv-blender/bin/python

The child imports this package from its source folder (a link to it is put on ``PYTHONPATH``, never the
parent environment's ``site-packages``, whose numpy 2 would shadow Blender's numpy 1.26). Only the standard
library, numpy, Pillow, tqdm and bpy are needed there.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.generation.blender import INSTALL_HINT, BlenderLayoutError, BlenderUnavailable

__all__ = ["ENV_VAR", "RemoteSceneRenderer", "blender_python", "bpy_in_process", "child_env", "run_cli",
           "scene_renderer"]

#: The environment variable naming the Blender environment's interpreter.
ENV_VAR = "LOGICVAL_BLENDER_PYTHON"
SETUP_HINT = INSTALL_HINT
_PKG = Path(__file__).resolve().parents[1]


def bpy_in_process() -> bool:
    """Whether ``bpy`` can run in this interpreter (checked without importing it, which takes seconds): it is
    installed and numpy is older than 2 (bpy 5.0.1 is built against numpy 1.x)."""
    if "bpy" in sys.modules:
        return sys.modules["bpy"] is not None
    return importlib.util.find_spec("bpy") is not None and int(np.__version__.split(".")[0]) < 2


def blender_python(explicit: str | os.PathLike | None = None) -> str:
    """The Blender environment's interpreter: ``explicit``, else ``$LOGICVAL_BLENDER_PYTHON``.

    Raises:
        BlenderUnavailable: neither is set, or the path is not an executable file.
    """
    path = os.fspath(explicit) if explicit else os.environ.get(ENV_VAR, "")
    if not path:
        raise BlenderUnavailable(f"Blender renders need bpy, which does not run here; {SETUP_HINT}")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BlenderUnavailable(f"{ENV_VAR}={path!r} is not an executable Python interpreter; {SETUP_HINT}")
    return path


def child_env() -> dict[str, str]:
    """Environment of the child: this package reachable through a folder holding only a link to it."""
    link_dir = Path(tempfile.gettempdir()) / f"logicval-blender-path-{os.getuid()}"
    link_dir.mkdir(exist_ok=True)
    link = link_dir / "logicval_hf"
    if not (link.is_symlink() and link.resolve() == _PKG):
        tmp = link_dir / f".logicval_hf.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(_PKG, target_is_directory=True)
        os.replace(tmp, link)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(link_dir)
    return env


def run_cli(argv: Sequence[str], python: str | None = None) -> int:
    """Run ``logicval render-clevr ARGV`` in the Blender environment; returns its exit status."""
    cmd = [blender_python(python), "-m", "logicval_hf.cli.render_clevr", "render-clevr", *argv]
    return subprocess.call(cmd, env=child_env())


class RemoteSceneRenderer:
    """`BlenderSceneRenderer` in a long-lived child process (one Blender start-up for many scenes).

    Requests and answers are JSON lines; images travel as PNG files in a private temporary folder.
    ``render(scene)`` returns ``(rgb uint8 array, Scene with boxes from the masks)`` like the in-process one.
    """

    def __init__(self, assets: str | os.PathLike, python: str | None = None, **settings: Any) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="logicval-blender-")
        self._proc = subprocess.Popen(
            [blender_python(python), "-m", "logicval_hf.generation.blender_worker"], env=child_env(),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._count = 0
        self._call({"init": {"assets": os.fspath(assets), **settings}})

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        if self._proc.poll() is not None:
            raise RuntimeError(f"the Blender worker exited with status {self._proc.returncode}")
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Blender worker exited (status {self._proc.wait()}); its error is above")
        answer = json.loads(line)
        if "error" in answer:
            kind = {"BlenderLayoutError": BlenderLayoutError, "AssetsError": ValueError,
                    "BlenderUnavailable": BlenderUnavailable, "ValueError": ValueError}.get(answer.get("kind"),
                                                                                            RuntimeError)
            raise kind(answer["error"])
        return answer

    def render(self, scene: Any) -> tuple[np.ndarray, Any]:
        from PIL import Image

        from logicval_hf.contract.scene import Scene

        self._count += 1
        out = Path(self._tmp.name) / f"{self._count}.png"
        answer = self._call({"scene": scene.to_dict(), "out": str(out)})
        with Image.open(out) as im:
            rgb = np.asarray(im.convert("RGB")).copy()
        out.unlink(missing_ok=True)
        return rgb, Scene.from_dict(answer["scene"])

    def close(self) -> None:
        if self._proc.poll() is None:
            with contextlib.suppress(Exception):
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._tmp.cleanup()

    def __enter__(self) -> RemoteSceneRenderer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def scene_renderer(assets: str | os.PathLike, python: str | None = None, **settings: Any) -> Any:
    """A Blender scene renderer: in-process where bpy imports, else in the Blender environment.

    Raises:
        BlenderUnavailable: no bpy here and no Blender environment configured (the message says how).
        AssetsError: the assets folder is missing or incomplete.
    """
    from logicval_hf.generation.blender import BlenderSceneRenderer, load_assets

    load_assets(assets)  # a bad folder is reported before any process starts
    if bpy_in_process() and python is None:
        return BlenderSceneRenderer(assets, **settings)
    return RemoteSceneRenderer(assets, python=python, **settings)
