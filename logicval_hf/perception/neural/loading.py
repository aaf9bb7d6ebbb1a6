"""Loading the neural pipeline's models from hub ids or local paths, and the cache of loaded pipelines (one per
model settings)."""

from __future__ import annotations

import threading
from typing import Any

from logicval_hf.perception.neural.pipeline import NeuralPipeline
from logicval_hf.perception.neural.settings import MODEL_SETTINGS, default_device, merge_settings

__all__ = ["clear_cache", "load_clip", "load_detector", "load_pipeline"]


def load_detector(detector: str, device: str | None = None) -> tuple[Any, Any]:
    """``(model, processor)`` from a hub id or a local directory (``save_pretrained`` layout)."""
    from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

    processor = AutoProcessor.from_pretrained(detector)
    model = AutoModelForZeroShotObjectDetection.from_pretrained(detector)
    return model.to(device or default_device()).eval(), processor


def load_clip(name: str, pretrained: str | None = None, device: str | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of an open_clip model; ``pretrained`` is a weight tag or a local file."""
    import open_clip

    model, _, _ = open_clip.create_model_and_transforms(name, pretrained=pretrained, device=device or default_device())
    return model.eval(), open_clip.get_tokenizer(name)


_CACHE: dict[tuple, NeuralPipeline] = {}
_CACHE_LOCK = threading.Lock()


def load_pipeline(**settings: Any) -> NeuralPipeline:
    """The pipeline of the model settings (`MODEL_SETTINGS`), loaded once and cached; other keys are run
    settings (`DEFAULTS`) and become the pipeline's defaults only when it is first built."""
    model = {k: settings.pop(k, v) for k, v in MODEL_SETTINGS.items()}
    model["device"] = model["device"] or default_device()
    key = tuple(sorted((k, str(v)) for k, v in model.items()))
    with _CACHE_LOCK:
        pipe = _CACHE.get(key)
        if pipe is None:
            det, proc = load_detector(model["detector"], model["device"])
            clip, tok = load_clip(model["clip_model"], model["clip_pretrained"], model["device"])
            pipe = NeuralPipeline(det, proc, clip, tok, device=model["device"])
            _CACHE[key] = pipe
    merge_settings(pipe.settings, settings, pipe.domain)  # validate the run settings now
    return pipe


def clear_cache() -> None:
    """Forget every loaded pipeline."""
    with _CACHE_LOCK:
        _CACHE.clear()
