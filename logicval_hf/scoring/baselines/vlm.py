"""Vision-language model backends for VLM-Judge and Soft-TIFA.

A backend answers two requests over (image, prompt) pairs:

* ``generate(images, prompts, max_new_tokens)``: the greedy text answer (VLM-Judge);
* ``top_logprobs(images, prompts, k)``: the ``k`` most likely *next tokens* of the answer as
  ``[(token_text, logprob), ...]``, most likely first (Soft-TIFA's single-token scoring).

Two implementations:

`TransformersVLM`
    A local ``transformers`` image-text-to-text model (LLaVA, Qwen2-VL, Idefics, ... anything
    ``AutoModelForImageTextToText`` + ``AutoProcessor`` load) run in batches with left padding. The
    top-k log-probabilities are the log-softmax of the last position's logits; token texts are
    ``tokenizer.decode([id])`` (so a leading space stays visible). Chat formatting uses the processor's chat
    template (a user turn holding the image then the text); without one the prompt is
    ``"<image token>\\n" + prompt``.

`OpenAIChatVLM`
    Any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, SGLang, llama.cpp server, ...):
    the image travels as a base64 PNG data URL; log-probabilities come from ``logprobs: true,
    top_logprobs: k`` with ``max_tokens: 1``. The key is read from ``api_key`` or the environment variable
    ``api_key_env`` (``OPENAI_API_KEY``); timeouts, connection errors and HTTP 408/409/425/429/5xx are
    retried with exponential back-off (``Retry-After`` honoured), other HTTP errors fail at once. Requests of a
    batch run on ``max_workers`` threads.
"""

from __future__ import annotations

import base64
import io
import json
import os
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.scoring.baselines.base import BaselineError

__all__ = ["VLMBackend", "TransformersVLM", "OpenAIChatVLM", "VLMRequestError", "VLMResponseError",
           "image_data_url"]

TopLogprobs = list[tuple[str, float]]


class VLMRequestError(BaselineError):
    """A request to a VLM failed (HTTP error, timeout, connection refused) after the allowed retries."""


class VLMResponseError(BaselineError):
    """A VLM answered, but not in the expected shape (no choices, no logprobs, not JSON)."""


class VLMBackend(ABC):
    """Answers (image, prompt) pairs; see the module docstring."""

    @abstractmethod
    def generate(self, images: Sequence[Any], prompts: Sequence[str], max_new_tokens: int = 128,
                 return_exceptions: bool = False) -> list[Any]:
        """Greedy text answers (with ``return_exceptions``, a failed item is its exception instead)."""

    @abstractmethod
    def top_logprobs(self, images: Sequence[Any], prompts: Sequence[str], k: int = 20,
                     return_exceptions: bool = False) -> list[Any]:
        """The ``k`` most likely first answer tokens ``[(text, logprob), ...]`` of every pair."""


# ---------------------------------------------------------------------------------------------------
# local transformers models
# ---------------------------------------------------------------------------------------------------
class TransformersVLM(VLMBackend):
    """A local ``transformers`` VLM (already constructed model + processor, or `from_pretrained`)."""

    def __init__(self, model: Any, processor: Any, *, device: str | None = None, batch_size: int = 8) -> None:
        torch = require("torch", "neural", "the local transformers VLM")

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.processor = processor
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size must be positive")

    @classmethod
    def from_pretrained(cls, model_id_or_path: str, *, device: str | None = None, dtype: Any = None,
                        batch_size: int = 8, **kwargs: Any) -> TransformersVLM:
        """Load with ``AutoModelForImageTextToText`` / ``AutoProcessor`` from a hub id or a local directory."""
        require("transformers", "neural", "the local transformers VLM")
        from transformers import AutoModelForImageTextToText, AutoProcessor

        processor = AutoProcessor.from_pretrained(model_id_or_path)
        extra = dict(kwargs)
        if dtype is not None:
            extra["dtype"] = dtype
        model = AutoModelForImageTextToText.from_pretrained(model_id_or_path, **extra)
        return cls(model, processor, device=device, batch_size=batch_size)

    @property
    def tokenizer(self) -> Any:
        return getattr(self.processor, "tokenizer", self.processor)

    def chat_text(self, prompt: str) -> str:
        """The model input text of one prompt (chat template with an image, or a plain fallback)."""
        if getattr(self.processor, "chat_template", None):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        image_token = getattr(self.processor, "image_token", None) or "<image>"
        return f"{image_token}\n{prompt}"

    def _inputs(self, images: Sequence[Any], prompts: Sequence[str]) -> dict[str, Any]:
        from logicval_hf.scoring.baselines.base import to_pil

        tok = self.tokenizer
        old = getattr(tok, "padding_side", None)
        tok.padding_side = "left"  # the next token of every row is at the last position
        try:
            batch = self.processor(images=[to_pil(im) for im in images], text=[self.chat_text(p) for p in prompts],
                                   return_tensors="pt", padding=True)
        finally:
            if old is not None:
                tok.padding_side = old
        dtype = next(self.model.parameters()).dtype
        out = {}
        for k, v in batch.items():
            if hasattr(v, "to"):
                moved = v.to(self.device)
                out[k] = moved.to(dtype) if moved.is_floating_point() else moved
            else:
                out[k] = v
        return out

    def _chunks(self, n: int):
        for s in range(0, n, self.batch_size):
            yield slice(s, min(n, s + self.batch_size))

    def top_logprobs(self, images: Sequence[Any], prompts: Sequence[str], k: int = 20,
                     return_exceptions: bool = False) -> list[TopLogprobs]:
        import torch

        images, prompts = list(images), list(prompts)
        out: list[TopLogprobs] = []
        for sl in self._chunks(len(prompts)):
            inputs = self._inputs(images[sl], prompts[sl])
            with torch.inference_mode():
                logits = self.model(**inputs).logits[:, -1, :].float()
            lp = torch.log_softmax(logits, -1)
            vals, ids = lp.topk(min(k, lp.shape[-1]), dim=-1)
            for v_row, i_row in zip(vals.tolist(), ids.tolist(), strict=True):
                out.append([(self.tokenizer.decode([i]), float(v)) for i, v in zip(i_row, v_row, strict=True)])
        return out

    def generate(self, images: Sequence[Any], prompts: Sequence[str], max_new_tokens: int = 128,
                 return_exceptions: bool = False) -> list[str]:
        import torch

        images, prompts = list(images), list(prompts)
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        out: list[str] = []
        for sl in self._chunks(len(prompts)):
            inputs = self._inputs(images[sl], prompts[sl])
            with torch.inference_mode():
                seq = self.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad)
            new = seq[:, inputs["input_ids"].shape[1]:]
            out.extend(tok.batch_decode(new, skip_special_tokens=True))
        return out


# ---------------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP API
# ---------------------------------------------------------------------------------------------------
def image_data_url(image: Any, fmt: str = "PNG") -> str:
    """``data:image/png;base64,...`` of an image (PIL, array or path)."""
    from logicval_hf.scoring.baselines.base import to_pil

    buf = io.BytesIO()
    to_pil(image).save(buf, format=fmt)
    mime = "jpeg" if fmt.upper() in ("JPG", "JPEG") else fmt.lower()
    return f"data:image/{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OpenAIChatVLM(VLMBackend):
    """An OpenAI-compatible chat-completions API (see the module docstring).

    ``base_url`` defaults to ``$OPENAI_BASE_URL`` or ``https://api.openai.com/v1``. Pass ``api_key="EMPTY"``
    (or any string) for local servers that need none; with neither ``api_key`` nor the variable
    ``api_key_env`` set, construction fails with a `BaselineError` that names the variable.
    """

    def __init__(self, model: str, base_url: str | None = None, *, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0, max_retries: int = 3,
                 backoff: float = 1.0, max_backoff: float = 30.0, max_workers: int = 4, image_format: str = "PNG",
                 temperature: float = 0.0, max_tokens_field: str = "max_tokens",
                 extra_body: dict[str, Any] | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        if not model:
            raise BaselineError("OpenAIChatVLM needs a model name (e.g. 'gpt-4o')")
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        if not key:
            raise BaselineError(
                f"no API key for {model!r}: set the environment variable {api_key_env} or pass api_key=... "
                "(any non-empty string, e.g. 'EMPTY', for a local server that needs none)")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self._key = key
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_workers = max(1, int(max_workers))
        self.image_format = image_format
        self.temperature = temperature
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self._sleep = sleep

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatVLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return self.base_url + "/chat/completions"

    def _body(self, image: Any, prompt: str, max_tokens: int, k: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": image_data_url(image, self.image_format)}},
            ]}],
            self.max_tokens_field: max_tokens,
            "temperature": self.temperature,
        }
        if k is not None:
            body["logprobs"] = True
            body["top_logprobs"] = int(k)
        body.update(self.extra_body)
        return body

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * (2 ** attempt))

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST one chat-completions request with retries; the parsed JSON answer."""
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self._key}"}
        last = ""
        for attempt in range(self.max_retries + 1):
            req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            retry_after = None
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                try:
                    return json.loads(raw)
                except json.JSONDecodeError as e:
                    raise VLMResponseError(f"{self.url}: answer is not JSON ({e}): {raw[:200]!r}") from None
            except urllib.error.HTTPError as e:
                text = e.read()[:300].decode("utf-8", "replace")
                last = f"HTTP {e.code}: {text}"
                if e.code not in _RETRY_STATUS:
                    hint = " (check the API key)" if e.code in (401, 403) else ""
                    raise VLMRequestError(f"{self.url}: {last}{hint}") from None
                retry_after = e.headers.get("Retry-After") if e.headers else None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                reason = getattr(e, "reason", e)
                last = f"{type(reason).__name__}: {reason}"
            if attempt < self.max_retries:
                self._sleep(self._delay(attempt, retry_after))
        raise VLMRequestError(f"{self.url}: failed after {self.max_retries + 1} attempts; last error {last}")

    @staticmethod
    def _choice(answer: dict[str, Any]) -> dict[str, Any]:
        try:
            return answer["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise VLMResponseError(f"answer without choices: {str(answer)[:200]}") from None

    def _map(self, fn: Callable[[int], Any], n: int, return_exceptions: bool) -> list[Any]:
        def safe(i: int) -> Any:
            try:
                return fn(i)
            except BaselineError as e:
                if return_exceptions:
                    return e
                raise

        if n <= 1 or self.max_workers == 1:
            return [safe(i) for i in range(n)]
        with ThreadPoolExecutor(min(self.max_workers, n)) as ex:
            return list(ex.map(safe, range(n)))

    def generate(self, images: Sequence[Any], prompts: Sequence[str], max_new_tokens: int = 128,
                 return_exceptions: bool = False) -> list[Any]:
        images, prompts = list(images), list(prompts)

        def one(i: int) -> str:
            msg = self._choice(self.post(self._body(images[i], prompts[i], max_new_tokens, None))).get("message") or {}
            content = msg.get("content")
            if isinstance(content, list):  # content parts
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if not isinstance(content, str):
                raise VLMResponseError(f"answer without message content: {str(msg)[:200]}")
            return content

        return self._map(one, len(prompts), return_exceptions)

    def top_logprobs(self, images: Sequence[Any], prompts: Sequence[str], k: int = 20,
                     return_exceptions: bool = False) -> list[Any]:
        images, prompts = list(images), list(prompts)

        def one(i: int) -> TopLogprobs:
            choice = self._choice(self.post(self._body(images[i], prompts[i], 1, k)))
            try:
                first = choice["logprobs"]["content"][0]
                top = first.get("top_logprobs") or [{"token": first["token"], "logprob": first["logprob"]}]
                pairs = [(str(t["token"]), float(t["logprob"])) for t in top]
            except (KeyError, IndexError, TypeError, ValueError):
                raise VLMResponseError(
                    f"answer without logprobs (does {self.model!r} support logprobs/top_logprobs?): "
                    f"{str(choice)[:200]}") from None
            pairs.sort(key=lambda p: -p[1])
            return pairs

        return self._map(one, len(prompts), return_exceptions)
