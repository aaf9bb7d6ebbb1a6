"""Optional extras: one helper for every import that needs a heavy, optional stack.

The default install covers the logic core, the main job, the dataset and the ``evaluate`` metric. The heavy
stacks are extras (``pip install "logicval-hf[EXTRA]"``): `EXTRAS` says what each one unlocks. Code that
needs one calls `require` at the point of use::

    torch = require("torch", "neural", "the neural perception backend")

which imports and returns the module, or raises `MissingExtraError`: an `ImportError` whose message is the one
line the ``logicval`` command prints before exiting with status 2::

    the neural perception backend needs the "neural" extra (torch is not installed): pip install "logicval-hf[neural]"
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MODULE_EXTRAS", "BACKEND_EXTRAS", "MissingExtraError", "require", "require_backend",
           "install_hint", "extra_for_module", "missing_extra"]

#: extra -> what it unlocks (the README's table says the same)
EXTRAS = {
    "neural": "the neural perception backend (Grounding DINO + CLIP), the CLIPScore and local VLM baselines",
    "space": "the Gradio Space (Explore, Compose, Check, Annotate) and the metric's Space app",
    "train": "LoRA fine-tuning and image generation with diffusers pipelines",
    "serve": "the RL reward server (`logicval serve`: FastAPI + uvicorn)",
    "serve-ray": "the reward server scaled out on Ray Serve (`logicval serve --ray`)",
    "ocr": "OCR with PP-OCRv6 (rapidocr): the ocr perception backend, `logicval text-score`, Sudoku reading",
    "test": "everything above plus pytest, hypothesis and playwright",
}


#: top-level module -> the extra that installs it (how a bare ``ModuleNotFoundError`` is named to the user)
MODULE_EXTRAS = {
    "torch": "neural", "torchvision": "neural", "transformers": "neural", "open_clip": "neural",
    "safetensors": "neural",
    "gradio": "space", "gradio_client": "space", "gradio_image_annotation": "space",
    "diffusers": "train", "peft": "train", "accelerate": "train",
    "fastapi": "serve", "uvicorn": "serve", "ray": "serve-ray",
    "rapidocr": "ocr",
}

#: perception backend -> (extra, modules it imports)
BACKEND_EXTRAS = {"neural": ("neural", ("torch", "transformers", "open_clip")), "ocr": ("ocr", ("rapidocr",))}


class MissingExtraError(ImportError):
    """A feature needs an optional extra that is not installed; the message is one line naming the extra."""

    def __init__(self, message: str, extra: str, module: str):
        super().__init__(message)
        self.extra = extra
        self.module = module

    def __reduce__(self):  # travels intact from worker processes
        return type(self), (str(self), self.extra, self.module)


def install_hint(extra: str) -> str:
    return f'pip install "logicval-hf[{extra}]"'


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module`` or raise `MissingExtraError` saying that ``what`` needs ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        missing = getattr(e, "name", None) or module
        raise MissingExtraError(
            f'{what} needs the "{extra}" extra ({missing} is not installed): {install_hint(extra)}',
            extra, missing) from None


def require_backend(backend: str) -> None:
    """Check that a perception backend's extra is installed (``"neural"``: torch, transformers, open_clip)."""
    if backend in BACKEND_EXTRAS:
        extra, modules = BACKEND_EXTRAS[backend]
        for m in modules:
            require(m, extra, f"the {backend} perception backend")


def extra_for_module(name: str | None) -> str | None:
    """The extra that provides a (possibly dotted) module name, or ``None`` if no extra does."""
    if not name:
        return None
    return MODULE_EXTRAS.get(name.split(".")[0])


def missing_extra(error: ImportError, what: str | None = None) -> MissingExtraError | None:
    """A `MissingExtraError` for an ``ImportError`` of a module an extra provides (``None`` otherwise)."""
    if isinstance(error, MissingExtraError):
        return error
    name = getattr(error, "name", None)
    extra = extra_for_module(name)
    if extra is None or name is None:  # no extra provides an unnamed module
        return None
    what = what or "this command"
    return MissingExtraError(f'{what} needs the "{extra}" extra ({name} is not installed): {install_hint(extra)}',
                             extra, name)
