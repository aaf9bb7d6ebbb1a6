"""Vision-language model backends for VLM-Judge and Soft-TIFA.

A backend answers two requests over (image, prompt) pairs:

* ``generate(images, prompts, max_new_tokens)``: the greedy text answer (VLM-Judge);
* ``top_logprobs(images, prompts, k)``: the ``k`` most likely *next tokens* of the answer as
  ``[(token_text, logprob), ...]``, most likely first (Soft-TIFA's single-token scoring).

Two implementations:

`TransformersVLM`
    A local ``transformers`` image-text-to-text model (`logicval_hf.perception.vlm.local.LocalVLM`: LLaVA,
    Qwen2-VL, Idefics, ... anything ``AutoModelForImageTextToText`` + ``AutoProcessor`` load) run in batches with
    left padding. The top-k log-probabilities are the log-softmax of the last position's logits; token texts are
    ``tokenizer.decode([id])`` (so a leading space stays visible).

`OpenAIChatVLM`
    Any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, SGLang, llama.cpp server, ...), through
    `logicval_hf.perception.vlm.endpoint.ChatEndpoint`: the image travels as a base64 PNG data URL;
    log-probabilities come from ``logprobs: true, top_logprobs: k`` with ``max_tokens: 1``. The key is read from
    ``api_key`` or the environment variable ``api_key_env`` (``OPENAI_API_KEY``); timeouts, connection errors and
    HTTP 408/409/425/429/5xx are retried with exponential back-off (``Retry-After`` honoured), other HTTP errors
    fail at once. Requests of a batch run on ``max_workers`` threads.
"""

from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from logicval_hf.perception.vlm.endpoint import AnswerFormatError, ChatEndpoint, EndpointError, image_data_url
from logicval_hf.perception.vlm.local import LocalVLM
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
class TransformersVLM(LocalVLM, VLMBackend):
    """A local ``transformers`` VLM (already constructed model + processor, or `from_pretrained`); greedy answers
    come from `LocalVLM.generate`."""

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


# ---------------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP API
# ---------------------------------------------------------------------------------------------------
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
        try:
            self._endpoint = ChatEndpoint(self.base_url, key, timeout=timeout, max_retries=max_retries,
                                          backoff=backoff, max_backoff=max_backoff, sleep=sleep)
        except ValueError as e:
            raise BaselineError(str(e)) from None
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_workers = max(1, int(max_workers))
        self.image_format = image_format
        self.temperature = temperature
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIChatVLM(model={self.model!r}, base_url={self._endpoint.url.removesuffix('/chat/completions')!r})"

    @property
    def url(self) -> str:
        return self._endpoint.url

    @property
    def endpoint(self) -> ChatEndpoint:
        """The transport (`logicval_hf.perception.vlm.endpoint.ChatEndpoint`: retries, deadlines, a hidden key)."""
        return self._endpoint

    def _urls(self, images: Sequence[Any]) -> Callable[[int], str]:
        """``url(i)``: the data URL of ``images[i]``, encoded once per distinct image object, by the request thread
        that needs it first (Soft-TIFA asks one image many questions, and a PNG encoding costs more than the rest
        of a request's work)."""
        images = list(images)
        slots: dict[int, list[Any]] = {}
        guard = threading.Lock()

        def url(i: int) -> str:
            with guard:
                slot = slots.setdefault(id(images[i]), [threading.Lock(), None])
            with slot[0]:
                if slot[1] is None:
                    slot[1] = image_data_url(images[i], self.image_format)
                return slot[1]

        return url

    def _body(self, url: str, prompt: str, max_tokens: int, k: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": url}},
            ]}],
            self.max_tokens_field: max_tokens,
            "temperature": self.temperature,
        }
        if k is not None:
            body["logprobs"] = True
            body["top_logprobs"] = int(k)
        body.update(self.extra_body)
        return body

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST one chat-completions request with retries; the parsed JSON answer."""
        try:
            return self._endpoint.post(body)
        except AnswerFormatError as e:
            raise VLMResponseError(str(e)) from None
        except EndpointError as e:
            raise VLMRequestError(str(e)) from None

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
        url, prompts = self._urls(images), list(prompts)

        def one(i: int) -> str:
            msg = self._choice(self.post(self._body(url(i), prompts[i], max_new_tokens, None))).get("message") or {}
            content = msg.get("content")
            if isinstance(content, list):  # content parts
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if not isinstance(content, str):
                raise VLMResponseError(f"answer without message content: {str(msg)[:200]}")
            return content

        return self._map(one, len(prompts), return_exceptions)

    def top_logprobs(self, images: Sequence[Any], prompts: Sequence[str], k: int = 20,
                     return_exceptions: bool = False) -> list[Any]:
        url, prompts = self._urls(images), list(prompts)

        def one(i: int) -> TopLogprobs:
            choice = self._choice(self.post(self._body(url(i), prompts[i], 1, k)))
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
