"""Text-to-image generation harness: open models through diffusers, proprietary models through their HTTP APIs,
and a resumable runner that writes ``<id>.png`` files and a per-id generation log.

Generators (each maps ``(prompt, seed)`` to a PIL image, or raises `GenerationRefused` / `GenerationFailed`):

* `DiffusersGenerator` — FLUX.1-dev (28 steps, guidance 3.5) or Qwen-Image (50 steps, true-CFG scale 4.0
  with the empty negative prompt ``" "``), 1024x688 (paper, Appendix C), from a hub id or a local folder,
  optionally with a LoRA folder (`pipe.load_lora_weights`). The seed drives a CPU ``torch.Generator``. The
  pipeline class and the settings of each model family come from `logicval_hf.generation.families`.
* `OpenAIImageGenerator` — ``POST {base_url}/images/generations`` of an OpenAI-compatible images API
  (``gpt-image-2``, low quality, 1024x1024 by default); the key comes from ``OPENAI_API_KEY`` (or the env var
  named by ``api_key_env``), the base URL from ``base_url`` / ``OPENAI_BASE_URL``. A ``b64_json`` answer is
  decoded; a ``url`` answer is downloaded.
* `GeminiImageGenerator` — ``POST {base_url}/models/{model}:generateContent`` with image output
  (``gemini-3-pro-image-preview`` at ``1K``); the key comes from ``GEMINI_API_KEY`` (header
  ``x-goog-api-key``).

HTTP uses urllib only, with a timeout per request and retries with exponential back-off (and ``Retry-After``,
capped) on 408/409/425/429/5xx, timeouts and connection errors. Other 4xx answers fail at once.

**Refused vs failed.** ``refused``: the service answered but gave no image on purpose or by outcome — a
safety/moderation block (OpenAI ``moderation_blocked`` / ``content_policy_violation``; Gemini
``promptFeedback.blockReason``, a blocking ``finishReason`` such as ``SAFETY``/``IMAGE_SAFETY``/
``PROHIBITED_CONTENT``/``NO_IMAGE``, or a text-only answer). These are the paper's "Gemini failed to generate
an image for some prompts" gaps, and they are not retried by default. ``failed``: no usable answer (HTTP
errors after the retries, timeouts, malformed responses, exceptions in a local pipeline); retried on the
next run.

`run_generation` drives a generator over ``(id, prompt)`` items: the image goes to ``<out>/<id>.png``
(written to a temporary file in the same folder, then renamed), and ``<out>/generation_log.jsonl`` holds one
JSON object per id (``id``, ``status`` ok|refused|failed, ``error``, ``model``, ``seconds``, ``seed``,
``attempts``, ``time``), rewritten atomically after every id. Ids whose image exists are skipped (resume),
so are ids logged as refused unless ``retry_refused``. The seed of an id is `image_seed(seed, id)`, so a
resumed run draws the same noise as an uninterrupted one.
"""

from __future__ import annotations

import abc
import base64
import concurrent.futures
import hashlib
import inspect
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_path, atomic_write_jsonl
from logicval_hf.generation.families import FAMILIES, detect_model_type, get_family

__all__ = [
    "STATUS_OK", "STATUS_REFUSED", "STATUS_FAILED", "LOG_NAME", "DIFFUSERS_SETTINGS", "GenerationRefused",
    "GenerationFailed", "Generator", "DiffusersGenerator", "OpenAIImageGenerator", "GeminiImageGenerator",
    "HttpClient", "image_seed", "save_png_atomic", "read_log", "run_generation",
]

STATUS_OK, STATUS_REFUSED, STATUS_FAILED = "ok", "refused", "failed"
LOG_NAME = "generation_log.jsonl"
#: a tokenizer ``model_max_length`` above this states no limit (transformers' "very large" default)
_UNBOUNDED_TOKENS = 100_000

#: Appendix C generation settings of the open models (the families' ``generation_defaults``, at import time)
DIFFUSERS_SETTINGS: dict[str, dict[str, Any]] = {
    name: dict(FAMILIES.get(name).generation_defaults) for name in FAMILIES.names()}
DEFAULT_WIDTH, DEFAULT_HEIGHT = 1024, 688


class GenerationRefused(Exception):
    """The model/service answered without an image (safety block, text-only answer, ...)."""


class GenerationFailed(Exception):
    """No usable answer (HTTP error after retries, timeout, malformed response, pipeline error)."""


class Generator(abc.ABC):
    """Base class: ``generate(prompt, seed) -> PIL.Image``; ``model`` names the model in the log."""

    model: str = "unknown"
    #: whether this kind of model gets the white-background prompt variant by default (paper, Appendix C)
    white_background: bool = False
    _tls = threading.local()

    @property
    def last_attempts(self) -> int:
        """HTTP attempts made by this thread's last `generate` call (1 for local models)."""
        return getattr(self._tls, "attempts", 1)

    @last_attempts.setter
    def last_attempts(self, value: int) -> None:
        self._tls.attempts = int(value)

    @abc.abstractmethod
    def generate(self, prompt: str, seed: int):
        """One image (PIL) for a prompt; raise GenerationRefused / GenerationFailed when there is none."""

    def text_context(self) -> tuple[int, Callable[[str], int]] | None:
        """How much of a prompt the model reads: ``(tokens, count)`` where ``count(prompt)`` is the prompt's length
        in the same tokens, or None where that is not known (the API models)."""
        return None


# ---------------------------------------------------------------------------------------------------------
# Diffusers
# ---------------------------------------------------------------------------------------------------------
class DiffusersGenerator(Generator):
    """FLUX.1-dev / Qwen-Image through diffusers (hub id or local folder, optional LoRA).

    Args:
        model: hub id or local pipeline folder (ignored when ``pipeline`` is given).
        model_type: a family name of `logicval_hf.generation.families` (``flux``, ``qwen-image``; default:
            detected from the pipeline, the folder or the name).
        lora: a LoRA folder or ``.safetensors`` file for ``pipe.load_lora_weights``.
        lora_scale: LoRA strength (1.0 = as trained).
        width, height: image size (default 1024x688).
        steps, guidance_scale, true_cfg_scale, negative_prompt: override the Appendix C settings (each only
            where the family has that setting: FLUX takes ``guidance_scale``, Qwen-Image ``true_cfg_scale``
            and ``negative_prompt``).
        device, dtype: where and in which precision to run (default: cuda + bfloat16 if available, else cpu +
            float32).
        pipeline: an already built pipeline (tests).
        cpu_offload: use ``enable_model_cpu_offload()`` instead of moving the pipeline to the device.
    """

    white_background = False

    def __init__(self, model: str | Path | None = None, model_type: str | None = None, lora: str | Path | None = None,
                 lora_scale: float = 1.0, width: int = DEFAULT_WIDTH, height: int = DEFAULT_HEIGHT,
                 steps: int | None = None, guidance_scale: float | None = None, true_cfg_scale: float | None = None,
                 negative_prompt: str | None = None, device: str | None = None, dtype: Any = None,
                 pipeline: Any = None, cpu_offload: bool = False, max_sequence_length: int | None = None,
                 progress: bool = False):
        import torch

        if pipeline is None and model is None:
            raise ValueError("DiffusersGenerator needs a model (hub id or folder) or a pipeline")
        self.model_type = model_type or detect_model_type(pipeline if pipeline is not None else model)
        family = get_family(self.model_type)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype is None:
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        elif isinstance(dtype, str):
            dtype = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16,
                     "fp16": torch.float16, "float32": torch.float32, "fp32": torch.float32}[dtype]
        if pipeline is None:
            pipeline = family.pipeline_class().from_pretrained(str(model), dtype=dtype)
            if cpu_offload:
                pipeline.enable_model_cpu_offload()
            else:
                pipeline.to(device)
        self.pipe = pipeline
        self.pipe.set_progress_bar_config(disable=not progress)
        self.lora = str(lora) if lora is not None else None
        if lora is not None:
            lp = Path(lora)
            if lp.is_file():
                self.pipe.load_lora_weights(str(lp.parent), weight_name=lp.name, adapter_name="logicval")
            else:
                self.pipe.load_lora_weights(str(lp), adapter_name="logicval")
            self.pipe.set_adapters(["logicval"], adapter_weights=[float(lora_scale)])
        name = str(model) if model is not None else type(pipeline).__name__
        self.model = name + (f"+lora:{self.lora}" if self.lora else "")
        settings = family.generation_settings(
            num_inference_steps=None if steps is None else int(steps),
            guidance_scale=None if guidance_scale is None else float(guidance_scale),
            true_cfg_scale=None if true_cfg_scale is None else float(true_cfg_scale),
            negative_prompt=negative_prompt)
        if max_sequence_length is not None:
            settings["max_sequence_length"] = int(max_sequence_length)
        settings["width"], settings["height"] = int(width), int(height)
        self.settings = settings

    def text_context(self) -> tuple[int, Callable[[str], int]] | None:
        """The pipeline's longest-reading text encoder and a counter of its tokenizer's tokens. The first tokenizer
        (CLIP in FLUX and SD3) reads its ``model_max_length`` (77); the others (T5), and a tokenizer that states no
        limit, read at most the sequence length the pipeline is run with (``max_sequence_length``: this
        generator's setting, else the pipeline's default, 512 for FLUX)."""
        cap = self.settings.get("max_sequence_length")
        if cap is None:
            default = inspect.signature(self.pipe.__call__).parameters.get("max_sequence_length")
            cap = default.default if default is not None and isinstance(default.default, int) else None
        best: tuple[int, Any] | None = None
        for name in ("tokenizer", "tokenizer_2", "tokenizer_3"):
            tok = getattr(self.pipe, name, None)
            length = getattr(tok, "model_max_length", None)
            if tok is None:
                continue
            if not isinstance(length, int) or length > _UNBOUNDED_TOKENS:  # a tokenizer that states no limit
                length = cap
            elif cap is not None and name != "tokenizer":
                length = min(length, cap)
            if length is not None and (best is None or length > best[0]):
                best = (length, tok)
        if best is None:
            return None
        length, tok = best
        # verbose=False: counting a long prompt is the point, not a mistake to warn of
        return length, lambda prompt: len(tok(prompt, truncation=False, verbose=False)["input_ids"])

    def generate(self, prompt: str, seed: int):
        import torch

        self.last_attempts = 1
        try:
            g = torch.Generator(device="cpu").manual_seed(int(seed))
            out = self.pipe(prompt=prompt, generator=g, **self.settings)
            return out.images[0]
        except Exception as e:  # OOM, bad settings, ...: recorded, the run goes on
            raise GenerationFailed(f"{type(e).__name__}: {e}") from e


# ---------------------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------------------
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass
class HttpResponse:
    status: int
    body: bytes
    headers: Mapping[str, str]
    attempts: int

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise GenerationFailed(f"HTTP {self.status}: response is not JSON: {self.body[:200]!r}") from None


@dataclass
class HttpClient:
    """POST/GET with a timeout per attempt and retries with exponential back-off and jitter.

    Retries on 408/409/425/429/5xx, timeouts and connection errors (``retries`` extra attempts); honours
    ``Retry-After`` (seconds) up to ``max_retry_after``. Returns the last response for any other status
    (the caller decides); raises `GenerationFailed` when every attempt failed without a response.
    """

    timeout: float = 300.0
    retries: int = 3
    backoff: float = 2.0
    max_backoff: float = 60.0
    max_retry_after: float = 120.0
    sleep: Callable[[float], None] = time.sleep
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    def request(self, method: str, url: str, body: Any = None, headers: Mapping[str, str] | None = None
                ) -> HttpResponse:
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            hdrs.setdefault("Content-Type", "application/json")
        last_error = "no attempt made"
        attempts = 0
        for attempt in range(self.retries + 1):
            attempts = attempt + 1
            req = urllib.request.Request(url, data=data, headers=hdrs, method=method)
            wait = None
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return HttpResponse(resp.status, resp.read(), dict(resp.headers), attempts)
            except urllib.error.HTTPError as e:
                payload = e.read() if hasattr(e, "read") else b""
                if e.code not in _RETRY_STATUS:
                    return HttpResponse(e.code, payload, dict(e.headers or {}), attempts)
                last_error = f"HTTP {e.code}: {_snippet(payload)}"
                wait = _retry_after(e.headers, self.max_retry_after)
                if attempt == self.retries:
                    return HttpResponse(e.code, payload, dict(e.headers or {}), attempts)
            except TimeoutError as e:
                last_error = f"timeout after {self.timeout:g} s ({e})"
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last_error = f"timeout after {self.timeout:g} s"
                else:
                    last_error = f"connection error: {reason}"
            except (ConnectionError, OSError) as e:
                last_error = f"connection error: {e}"
            if attempt < self.retries:
                if wait is None:
                    wait = min(self.max_backoff, self.backoff * (2 ** attempt)) * (0.5 + self._rng.random() / 2)
                self.sleep(wait)
        err = GenerationFailed(f"{last_error} (after {attempts} attempts)")
        err.attempts = attempts  # type: ignore[attr-defined]
        raise err


def _retry_after(headers: Any, cap: float) -> float | None:
    try:
        value = headers.get("Retry-After") if headers is not None else None
        return min(float(value), cap) if value is not None else None
    except (TypeError, ValueError):
        return None


def _snippet(payload: bytes, n: int = 300) -> str:
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
    return " ".join(text.split())[:n]


def _decode_image(data: str | bytes):
    from logicval_hf.perception.images import open_checked

    try:
        raw = base64.b64decode(data, validate=False)
        img = open_checked(raw, "image")  # the pixel cap before decoding
        img.load()
        return img
    except Exception as e:
        raise GenerationFailed(f"cannot decode the returned image: {e}") from e


def _api_key(explicit: str | None, env: str) -> str:
    key = explicit or os.environ.get(env)
    if not key:
        raise ValueError(f"no API key: set the environment variable {env}")
    return key


# ---------------------------------------------------------------------------------------------------------
# OpenAI-compatible images API
# ---------------------------------------------------------------------------------------------------------
_OPENAI_REFUSAL_CODES = {"moderation_blocked", "content_policy_violation", "safety_violation", "content_filter"}


class OpenAIImageGenerator(Generator):
    """``POST {base_url}/images/generations`` (OpenAI or any compatible server).

    Args:
        model: model id (default ``gpt-image-2``).
        base_url: API root (default ``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``).
        api_key_env: environment variable holding the key (default ``OPENAI_API_KEY``); ``api_key`` overrides.
        size, quality: image size and quality tier (default ``1024x1024``, ``low``: the paper's settings).
        extra: more JSON fields for the request body.
        timeout, retries, backoff: HTTP behaviour (see `HttpClient`).
    """

    white_background = True

    def __init__(self, model: str = "gpt-image-2", base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 api_key: str | None = None, size: str = "1024x1024", quality: str | None = "low",
                 extra: Mapping[str, Any] | None = None, timeout: float = 300.0, retries: int = 3,
                 backoff: float = 2.0, client: HttpClient | None = None):
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key = _api_key(api_key, api_key_env)
        self.size, self.quality = size, quality
        self.extra = dict(extra or {})
        self.client = client or HttpClient(timeout=timeout, retries=retries, backoff=backoff)

    def generate(self, prompt: str, seed: int):
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, "n": 1, "size": self.size}
        if self.quality:
            body["quality"] = self.quality
        body.update(self.extra)
        resp = self.client.request("POST", f"{self.base_url}/images/generations", body,
                                   {"Authorization": f"Bearer {self.api_key}"})
        self.last_attempts = resp.attempts
        if resp.status != 200:
            err = _openai_error(resp)
            code = str(err.get("code") or err.get("type") or "")
            message = str(err.get("message") or _snippet(resp.body))
            if code in _OPENAI_REFUSAL_CODES or "safety system" in message.lower():
                raise GenerationRefused(f"{code or 'refused'}: {message}")
            raise GenerationFailed(f"HTTP {resp.status} {code}: {message} (after {resp.attempts} attempts)")
        data = resp.json().get("data") or []
        if not data:
            raise GenerationRefused("no image in the response (empty data)")
        item = data[0]
        if item.get("b64_json"):
            return _decode_image(item["b64_json"])
        if item.get("url"):
            img = self.client.request("GET", item["url"])
            if img.status != 200:
                raise GenerationFailed(f"HTTP {img.status} downloading {item['url']}")
            return _decode_image(base64.b64encode(img.body))
        raise GenerationFailed(f"response item has neither b64_json nor url: {sorted(item)}")


def _openai_error(resp: HttpResponse) -> dict[str, Any]:
    try:
        obj = json.loads(resp.body.decode("utf-8"))
        err = obj.get("error", obj) if isinstance(obj, dict) else {}
        return err if isinstance(err, dict) else {"message": str(err)}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}


# ---------------------------------------------------------------------------------------------------------
# Gemini generateContent
# ---------------------------------------------------------------------------------------------------------
#: finish reasons that mean "no image on purpose or by policy" (anything but STOP/MAX_TOKENS without an image
#: is treated the same way)
GEMINI_REFUSAL_REASONS = {"SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "IMAGE_PROHIBITED_CONTENT", "BLOCKLIST",
                          "SPII", "RECITATION", "IMAGE_RECITATION", "NO_IMAGE", "IMAGE_OTHER", "OTHER",
                          "LANGUAGE", "MALFORMED_FUNCTION_CALL"}


class GeminiImageGenerator(Generator):
    """``POST {base_url}/models/{model}:generateContent`` with ``responseModalities`` including ``IMAGE``.

    Args:
        model: model id (default ``gemini-3-pro-image-preview``).
        base_url: API root (default ``https://generativelanguage.googleapis.com/v1beta``).
        api_key_env: environment variable holding the key (default ``GEMINI_API_KEY``); ``api_key`` overrides.
        image_size: ``imageConfig.imageSize`` (``1K`` as in the paper; None to omit).
        aspect_ratio: ``imageConfig.aspectRatio`` (e.g. ``"3:2"``; None to omit).
        timeout, retries, backoff: HTTP behaviour (see `HttpClient`).
    """

    white_background = True

    def __init__(self, model: str = "gemini-3-pro-image-preview", base_url: str | None = None,
                 api_key_env: str = "GEMINI_API_KEY", api_key: str | None = None, image_size: str | None = "1K",
                 aspect_ratio: str | None = None, timeout: float = 300.0, retries: int = 3, backoff: float = 2.0,
                 client: HttpClient | None = None):
        self.model = model
        self.base_url = (base_url or os.environ.get("GEMINI_BASE_URL")
                         or "https://generativelanguage.googleapis.com/v1beta").rstrip("/")
        self.api_key = _api_key(api_key, api_key_env)
        self.image_size, self.aspect_ratio = image_size, aspect_ratio
        self.client = client or HttpClient(timeout=timeout, retries=retries, backoff=backoff)

    def generate(self, prompt: str, seed: int):
        config: dict[str, Any] = {"responseModalities": ["TEXT", "IMAGE"]}
        image_config = {}
        if self.image_size:
            image_config["imageSize"] = self.image_size
        if self.aspect_ratio:
            image_config["aspectRatio"] = self.aspect_ratio
        if image_config:
            config["imageConfig"] = image_config
        body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}], "generationConfig": config}
        resp = self.client.request("POST", f"{self.base_url}/models/{self.model}:generateContent", body,
                                   {"x-goog-api-key": self.api_key})
        self.last_attempts = resp.attempts
        if resp.status != 200:
            raise GenerationFailed(f"HTTP {resp.status}: {_snippet(resp.body)} (after {resp.attempts} attempts)")
        obj = resp.json()
        feedback = obj.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            raise GenerationRefused(f"prompt blocked: {feedback['blockReason']}")
        candidates = obj.get("candidates") or []
        if not candidates:
            raise GenerationRefused("no candidates in the response")
        cand = candidates[0]
        texts = []
        for part in (cand.get("content") or {}).get("parts") or []:
            inline = part.get("inlineData") or part.get("inline_data")
            if inline and str(inline.get("mimeType") or inline.get("mime_type") or "image/").startswith("image/"):
                return _decode_image(inline.get("data", ""))
            if part.get("text") and not part.get("thought"):
                texts.append(part["text"])
        reason = cand.get("finishReason") or "STOP"
        said = f"; text: {_snippet(' '.join(texts).encode(), 200)}" if texts else ""
        if reason in GEMINI_REFUSAL_REASONS:
            raise GenerationRefused(f"finishReason {reason}, no image{said}")
        raise GenerationRefused(f"no image returned (finishReason {reason}){said}")


# ---------------------------------------------------------------------------------------------------------
# Runner
# ---------------------------------------------------------------------------------------------------------
def image_seed(seed: int, item_id: str) -> int:
    """The generation seed of one id: stable across runs and independent of the order of the ids."""
    digest = hashlib.sha256(f"logicval-t2i/{seed}/{item_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def save_png_atomic(image: Any, path: str | Path) -> Path:
    """Write a PNG atomically (no partial ``<id>.png`` ever)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:  # a handle: generators may return image-likes
        image.save(fh, format="PNG")
    return Path(path)


def read_log(path: str | Path) -> dict[str, dict[str, Any]]:
    """``{id: record}`` from a generation log (the last line of an id wins; unreadable lines are skipped)."""
    out: dict[str, dict[str, Any]] = {}
    p = Path(path)
    if not p.is_file():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict) and "id" in rec:
            out[str(rec["id"])] = rec
    return out


def _write_log(path: Path, records: Mapping[str, Mapping[str, Any]]) -> None:
    atomic_write_jsonl(path, records.values())


def run_generation(
    generator: Generator,
    items: Iterable[tuple[str, str]],
    out_dir: str | Path,
    seed: int = 0,
    retry_refused: bool = False,
    workers: int = 1,
    progress: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Generate ``<out_dir>/<id>.png`` for every ``(id, prompt)``; resumable; returns counts per status.

    ``extra`` fields are added to every log record (e.g. the package and the prompt variant). ``workers > 1``
    runs that many generations at once in threads (for API backends).
    """
    from tqdm.auto import tqdm

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / LOG_NAME
    records = read_log(log_path)
    lock = threading.Lock()
    counts = {"ok": 0, "refused": 0, "failed": 0, "skipped": 0}
    todo: list[tuple[str, str]] = []
    for raw_id, prompt in items:
        item_id = str(raw_id)
        if "/" in item_id or item_id.startswith("."):
            raise ValueError(f"unsafe id for a file name: {item_id!r}")
        if (out / f"{item_id}.png").is_file():
            counts["skipped"] += 1
            continue
        prev = records.get(item_id)
        if prev is not None and prev.get("status") == STATUS_REFUSED and not retry_refused:
            counts["skipped"] += 1
            continue
        todo.append((item_id, prompt))

    def one(item: tuple[str, str]) -> dict[str, Any]:
        item_id, prompt = item
        s = image_seed(seed, item_id)
        t0 = time.perf_counter()
        status, error, attempts = STATUS_OK, None, None
        generator.last_attempts = 1
        try:
            image = generator.generate(prompt, s)
            save_png_atomic(image, out / f"{item_id}.png")
        except GenerationRefused as e:
            status, error = STATUS_REFUSED, str(e)
        except GenerationFailed as e:
            status, error, attempts = STATUS_FAILED, str(e), getattr(e, "attempts", None)
        except Exception as e:  # noqa: BLE001  a bug in a generator must not stop a 500-prompt run (logged)
            status, error = STATUS_FAILED, f"{type(e).__name__}: {e}"
        return {"id": item_id, "status": status, "error": error, "model": generator.model,
                "seconds": round(time.perf_counter() - t0, 3), "seed": s,
                "attempts": attempts or generator.last_attempts,
                "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **dict(extra or {})}

    def record(rec: dict[str, Any]) -> None:
        with lock:
            records[rec["id"]] = rec
            _write_log(log_path, records)
            counts[rec["status"]] += 1

    with tqdm(total=len(todo), desc=f"generating ({generator.model})", unit="img", disable=not progress) as bar:
        if workers <= 1:
            for item in todo:
                record(one(item))
                bar.update(1)
                bar.set_postfix(ok=counts["ok"], refused=counts["refused"], failed=counts["failed"])
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                for rec in pool.map(one, todo):
                    record(rec)
                    bar.update(1)
                    bar.set_postfix(ok=counts["ok"], refused=counts["refused"], failed=counts["failed"])
    counts["total"] = len(todo) + counts["skipped"]
    return counts
