"""Loading the neural pipeline's models from hub ids or local paths, the cache of loaded pipelines (one per model
settings), and `check_settings`: whether the models can be had at all, found out in seconds (offline, loading
retries the Hub for minutes before it fails)."""

from __future__ import annotations

import difflib
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from logicval_hf.perception.neural.pipeline import NeuralPipeline
from logicval_hf.perception.neural.settings import DEFAULTS, MODEL_SETTINGS, default_device, merge_settings

__all__ = ["HUB_PROBE_TIMEOUT", "check_settings", "clear_cache", "load_clip", "load_detector", "load_pipeline"]

#: seconds the one try to reach the Hugging Face Hub waits
HUB_PROBE_TIMEOUT = 3.0


def _hub_cached(repo: str) -> bool:
    """Whether the Hugging Face cache holds a snapshot of the model repository ``repo``."""
    from huggingface_hub import constants

    snapshots = Path(constants.HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(p.is_dir() and any(p.iterdir()) for p in snapshots.iterdir())


def _clip_repo(clip_model: str, pretrained: Any) -> str | None:
    """The Hub repository open_clip downloads ``clip_model``'s weights from (None: none to download: a local file,
    no pretrained weights, or a URL)."""
    if clip_model.startswith("hf-hub:"):
        return clip_model.removeprefix("hf-hub:")
    if pretrained is None or os.path.isfile(str(pretrained)):
        return None
    import open_clip

    hub = open_clip.get_pretrained_cfg(clip_model, str(pretrained)).get("hf_hub")
    return hub.strip("/") if hub else None


def _hub_unreachable() -> str | None:
    """Why the Hub cannot be downloaded from (offline mode, or no answer to one short try); None when it answers."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or os.environ.get("TRANSFORMERS_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return "downloads are off (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set)"
    try:
        urllib.request.urlopen(urllib.request.Request(constants.ENDPOINT, method="HEAD"),
                               timeout=HUB_PROBE_TIMEOUT).close()
    except urllib.error.HTTPError:
        return None  # it answered
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        return f"the Hub ({constants.ENDPOINT}) did not answer within {HUB_PROBE_TIMEOUT:g} s ({reason})"
    return None


def check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse, in one line and within seconds, what the neural backend cannot run with: an unknown setting, and
    models that are neither a local path nor in the Hugging Face cache while the Hub cannot be reached (downloads
    turned off, or no answer to one short try); loading them would retry the Hub for minutes before failing.

    Raises:
        ValueError: what is wrong, one line.
    """
    known = [*MODEL_SETTINGS, *DEFAULTS, "pipeline"]
    unknown = sorted(k for k in settings if k not in known)
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        raise ValueError(f"neural backend: unknown setting {unknown[0]!r}" + (f"; did you mean {close[0]!r}?" if close
                         else "") + f" (known: {', '.join(known)})")
    if settings.get("pipeline") is not None:
        return
    model = {k: settings.get(k, v) for k, v in MODEL_SETTINGS.items()}
    detector = str(model["detector"])
    if not os.path.isdir(detector) and not _hub_cached(detector):
        _need_hub(f"detector {detector!r}", "--setting detector=DIR (a save_pretrained folder)")
    repo = _clip_repo(str(model["clip_model"]), model["clip_pretrained"])
    if repo is not None and not _hub_cached(repo):
        _need_hub(f"CLIP weights {model['clip_model']}/{model['clip_pretrained']} (from {repo!r})",
                  "--setting clip_pretrained=FILE (a state dict)")


def _need_hub(what: str, local: str) -> None:
    why = _hub_unreachable()
    if why is not None:
        raise ValueError(f"neural backend: the {what} is not in the Hugging Face cache and cannot be downloaded: "
                         f"{why}; download it where the Hub is reachable (HF_HOME says where the cache is), or give "
                         f"a local copy: {local}")


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
