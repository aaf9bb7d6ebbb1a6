"""The ``vlm`` backend's settings: what a caller may set (`SETTINGS`, with their defaults and meaning) and their
checking (`read_settings`), one line per refusal.

Values may come as text (``logicval serve --setting timeout=30``): numbers and ``null`` are read from it. The
API key itself is never a setting: it is read from the environment variable that ``api_key_env`` names, so that
no command line, server health page, log or result file holds it.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BOX_CONVENTIONS", "RESPONSE_FORMATS", "SETTINGS", "TRANSPORTS", "VLMSettings", "read_settings"]

#: how the model writes a box: ``pixels`` of the image it was given, or ``norm1000``: 0-1000 on both axes
BOX_CONVENTIONS = ("pixels", "norm1000")
#: ``json_schema``: structured output constrained by the domain's schema; ``json_object``: any JSON object;
#: ``none``: no ``response_format`` (a server without structured output), the answer read tolerantly
RESPONSE_FORMATS = ("json_schema", "json_object", "none")
#: ``http``: an OpenAI-compatible endpoint; ``transformers``: a local model (the ``neural`` extra)
TRANSPORTS = ("http", "transformers")

#: every setting: (default, meaning)
SETTINGS: dict[str, tuple[Any, str]] = {
    "url": (None, "the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (http transport; required)"),
    "model": (None, "the served model's name (http) or a hub id / local folder (transformers); required"),
    "transport": ("http", "http (an OpenAI-compatible endpoint) or transformers (a local model)"),
    "api_key_env": (None, "the environment variable holding the API key (none: no Authorization header)"),
    "timeout": (60.0, "seconds per image, every attempt and wait included"),
    "boxes": ("pixels", "pixels (of the image the model was given: Qwen2.5-VL) or norm1000 (0-1000: Qwen2-VL, "
                        "Qwen3-VL, InternVL)"),
    "multiple_of": (1, "resize the sent image so both sides are multiples of this (28 for Qwen2.5-VL, so that "
                       "the server's own resize leaves it as sent)"),
    "max_pixels": (None, "downscale the sent image to at most this many pixels (none: as it is)"),
    "min_pixels": (None, "upscale the sent image to at least this many pixels (none: as it is)"),
    "concurrency": (8, "requests in flight at once (http)"),
    "max_retries": (3, "attempts after the first for timeouts, refused connections and HTTP 408/409/425/429/5xx"),
    "backoff": (1.0, "seconds before the first retry, doubled each time (a Retry-After header decides instead)"),
    "max_tokens": (2048, "the answer's token budget"),
    "temperature": (0.0, "sampling temperature (0: greedy; only then are answers cached in the process)"),
    "response_format": ("json_schema", "json_schema (structured output from the domain's schema), json_object "
                                       "or none (plain text, read tolerantly)"),
    "max_objects": (64, "an answer listing more objects is an error"),
    "image_format": ("png", "png or jpeg: how the image travels"),
    "device": (None, "transformers: cuda, cpu, ... (none: CUDA when available)"),
    "dtype": (None, "transformers: bfloat16, float16, float32 (none: the checkpoint's)"),
    "batch_size": (8, "transformers: images per forward pass"),
}


@dataclass(frozen=True)
class VLMSettings:
    """Checked settings (`SETTINGS` says what each means)."""

    url: str | None
    model: str
    transport: str = "http"
    api_key_env: str | None = None
    timeout: float = 60.0
    boxes: str = "pixels"
    multiple_of: int = 1
    max_pixels: int | None = None
    min_pixels: int | None = None
    concurrency: int = 8
    max_retries: int = 3
    backoff: float = 1.0
    max_tokens: int = 2048
    temperature: float = 0.0
    response_format: str = "json_schema"
    max_objects: int = 64
    image_format: str = "png"
    device: str | None = None
    dtype: str | None = None
    batch_size: int = 8

    def api_key(self) -> str | None:
        """The key from the environment (None without ``api_key_env``).

        Raises:
            ValueError: ``api_key_env`` names a variable that is not set.
        """
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ValueError(f"vlm backend: the environment variable {self.api_key_env} (api_key_env) is not set")
        return key

    def request_key(self) -> tuple[Any, ...]:
        """What decides an answer besides the image and the prompt (the answer cache's key)."""
        return (self.transport, self.url, self.model, self.max_tokens, self.temperature, self.response_format)


def _fail(msg: str) -> ValueError:
    return ValueError(f"vlm backend: {msg}")


def _text(key: str, v: Any, choices: tuple[str, ...] | None = None, optional: bool = False) -> str | None:
    if v is None and optional:
        return None
    if not isinstance(v, str) or not v.strip():
        raise _fail(f"{key} must be {'a name' if choices is None else 'one of ' + ', '.join(choices)}, got {v!r}")
    v = v.strip()
    if choices is not None and v.lower() not in choices:
        raise _fail(f"{key} must be one of {', '.join(choices)}, got {v!r}")
    return v.lower() if choices is not None else v


def _number(key: str, v: Any, lo: float, integer: bool, optional: bool = False, above: bool = False) -> Any:
    if isinstance(v, str):
        with contextlib.suppress(json.JSONDecodeError):  # text that is no number stays text and is refused below
            v = json.loads(v)
    if v is None and optional:
        return None
    ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
          and (v > lo if above else v >= lo) and (not integer or float(v).is_integer()))
    if not ok:
        kind = "an integer" if integer else "a number"
        raise _fail(f"{key} must be {kind} {'>' if above else '>='} {lo:g}, got {v!r}")
    return int(v) if integer else float(v)


def read_settings(settings: Mapping[str, Any]) -> VLMSettings:
    """Checked `VLMSettings` from a caller's settings (``domain`` aside: the backend receives it apart).

    Raises:
        ValueError: one line naming the setting: an unknown one (with the closest known), ``api_key`` given as a
            setting, a missing ``url`` (http) or ``model``, a value of the wrong kind or out of range.
    """
    if "api_key" in settings:
        raise _fail("the API key is never a setting (it would be shown and stored): put it in an environment "
                    "variable and name that variable with api_key_env")
    unknown = sorted(k for k in settings if k not in SETTINGS)
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(SETTINGS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise _fail(f"unknown setting {unknown[0]!r}{hint} (known: {', '.join(SETTINGS)})")
    s = {k: settings.get(k, default) for k, (default, _) in SETTINGS.items()}
    transport = _text("transport", s["transport"], TRANSPORTS)
    if s["model"] is None:
        raise _fail("the setting 'model' is missing (the served model's name, e.g. model=Qwen/Qwen2.5-VL-7B-Instruct)")
    if transport == "http" and s["url"] is None:
        raise _fail("the setting 'url' is missing (the endpoint's base URL, e.g. url=http://127.0.0.1:8000/v1)")
    out = VLMSettings(
        url=_text("url", s["url"], optional=True), model=str(_text("model", s["model"])), transport=str(transport),
        api_key_env=_text("api_key_env", s["api_key_env"], optional=True),
        timeout=_number("timeout", s["timeout"], 0, False, above=True),
        boxes=str(_text("boxes", s["boxes"], BOX_CONVENTIONS)),
        multiple_of=_number("multiple_of", s["multiple_of"], 1, True),
        max_pixels=_number("max_pixels", s["max_pixels"], 1, True, optional=True),
        min_pixels=_number("min_pixels", s["min_pixels"], 1, True, optional=True),
        concurrency=_number("concurrency", s["concurrency"], 1, True),
        max_retries=_number("max_retries", s["max_retries"], 0, True),
        backoff=_number("backoff", s["backoff"], 0, False),
        max_tokens=_number("max_tokens", s["max_tokens"], 1, True),
        temperature=_number("temperature", s["temperature"], 0, False),
        response_format=str(_text("response_format", s["response_format"], RESPONSE_FORMATS)),
        max_objects=_number("max_objects", s["max_objects"], 1, True),
        image_format=str(_text("image_format", s["image_format"], ("png", "jpeg"))),
        device=_text("device", s["device"], optional=True), dtype=_text("dtype", s["dtype"], optional=True),
        batch_size=_number("batch_size", s["batch_size"], 1, True))
    if out.min_pixels is not None and out.max_pixels is not None and out.min_pixels > out.max_pixels:
        raise _fail(f"min_pixels ({out.min_pixels}) is above max_pixels ({out.max_pixels})")
    return out

