"""Reading images with a VLM: requests in flight at once over an endpoint, or batched forwards of a local model;
each image gets its own scene or its own error.

Over HTTP, ``concurrency`` requests are in flight at once (threads: the work is waiting). Each image has
``timeout`` seconds from the moment its request is prepared, retries and waits included
(`logicval_hf.perception.vlm.endpoint`). An image whose request fails or whose answer is not a scene graph of
the domain gets a `PerceptionError` in its place; the others are read. When the endpoint itself is wrong
(nothing listens at the URL, HTTP 401/403/404), the requests not yet sent fail at once with the same error, and
if no image was read the call raises it: one line for the whole call rather than one per image.

With ``temperature`` 0 the scenes of answered requests are kept in a small per-process cache keyed by
everything that decides the answer (the endpoint or model, the request's settings, the prompt, the image's
bytes), so an image asked for again (a server retrying a batch one image at a time) costs no second request.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.perception.images import BackendUnavailable, PerceptionError
from logicval_hf.perception.vlm.answer import AnswerError, answer_text, read_objects
from logicval_hf.perception.vlm.endpoint import (
    AnswerFormatError,
    ChatEndpoint,
    EndpointUnreachable,
    RequestFailed,
    image_data_url,
    public_url,
)
from logicval_hf.perception.vlm.request import chat_body, instruction, prepare_image, response_format
from logicval_hf.perception.vlm.settings import VLMSettings

__all__ = ["CACHE_SIZE", "clear_cache", "endpoint_of", "read_images"]

#: scenes kept by the answer cache (module docstring)
CACHE_SIZE = 1024
#: HTTP statuses that say the endpoint, not the image, is wrong (a key refused, no such route or model)
ENDPOINT_STATUSES = frozenset({401, 403, 404})

_CACHE: OrderedDict[tuple, Scene] = OrderedDict()
_MODELS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget every cached scene and loaded local model."""
    with _LOCK:
        _CACHE.clear()
        _MODELS.clear()


def _cached(key: tuple | None) -> Scene | None:
    if key is None:
        return None
    with _LOCK:
        scene = _CACHE.get(key)
        if scene is not None:
            _CACHE.move_to_end(key)
        return scene


def _keep(key: tuple | None, scene: Scene) -> None:
    if key is None:
        return
    with _LOCK:
        _CACHE[key] = scene
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)


def endpoint_of(s: VLMSettings) -> ChatEndpoint:
    """The endpoint of the settings, its key read from the environment now.

    Raises:
        ValueError: a URL that is not http(s), or ``api_key_env`` naming an unset variable (one line)."""
    try:
        return ChatEndpoint(str(s.url), s.api_key(), timeout=s.timeout, max_retries=s.max_retries, backoff=s.backoff,
                            max_backoff=s.timeout)
    except ValueError as e:
        msg = str(e)
        raise ValueError(msg if msg.startswith("vlm backend:") else f"vlm backend: {msg}") from None


def _provenance(s: VLMSettings, domain: Domain, prompt: str, sent: tuple[int, int], answer: str,
                seen: tuple[int, int] | None = None) -> dict[str, Any]:
    """How a scene was made, enough to send the same request again (never the key)."""
    rec: dict[str, Any] = {"backend": "vlm", "transport": s.transport, "model": s.model}
    if s.transport == "http":
        rec["url"] = public_url(str(s.url))
    rec.update(domain=domain.name, boxes=s.boxes, response_format=s.response_format, max_tokens=s.max_tokens,
               temperature=s.temperature, image_format=s.image_format, sent_size=list(sent))
    if seen is not None and seen != sent:
        rec["seen_size"] = list(seen)
    rec.update(prompt=prompt, answer=answer)
    return rec


def read_images(images: Sequence[np.ndarray], domain: Domain, s: VLMSettings) -> list[Scene | PerceptionError]:
    """One scene or one error per image (``H x W x 3`` uint8 arrays), in order (module docstring).

    Raises:
        BackendUnavailable: the endpoint is wrong and no image was read.
        PerceptionError: a missing key variable.
        MissingExtraError: the transformers transport without the ``neural`` extra.
    """
    if s.transport == "transformers":
        return _read_local(images, domain, s)
    try:
        endpoint = endpoint_of(s)
    except ValueError as e:
        raise PerceptionError(str(e)) from None
    fatal: list[RequestFailed] = []
    stop = threading.Event()
    fmt = response_format(s.response_format, domain)

    def one(i: int) -> Scene | PerceptionError:
        start = time.monotonic()
        if stop.is_set():
            return PerceptionError(f"vlm request: {fatal[0]}")
        rgb = images[i]
        pil = prepare_image(rgb, s.multiple_of, s.min_pixels, s.max_pixels)
        prompt = instruction(domain, s.boxes, pil.size)
        data_url = image_data_url(pil, s.image_format.upper())
        key = ((*s.request_key(), domain.key, s.boxes, prompt, hashlib.sha1(data_url.encode()).hexdigest())
               if s.temperature == 0 else None)
        hit = _cached(key)
        if hit is not None:
            return hit
        body = chat_body(s.model, prompt, data_url, max_tokens=s.max_tokens, temperature=s.temperature,
                         response_format=fmt)
        try:
            answer = endpoint.post(body, deadline=start + s.timeout)
            text, finish = answer_text(answer)
            scene = read_objects(text, domain, boxes=s.boxes, seen=pil.size, image=(rgb.shape[1], rgb.shape[0]),
                                 max_objects=s.max_objects, finish_reason=finish,
                                 provenance=_provenance(s, domain, prompt, pil.size, text))
        except (EndpointUnreachable, RequestFailed) as e:
            if isinstance(e, EndpointUnreachable) or e.status in ENDPOINT_STATUSES:
                fatal.append(e)
                stop.set()
            limit = f" (timeout {s.timeout:g} s)" if e.timed_out else ""
            return PerceptionError(f"vlm request: {e}{limit}")
        except AnswerFormatError as e:
            return AnswerError(f"vlm answer: {e}")
        except AnswerError as e:
            return e
        _keep(key, scene)
        return scene

    n = len(images)
    if n == 1 or s.concurrency == 1:
        results = [one(i) for i in range(n)]
    else:
        with ThreadPoolExecutor(min(s.concurrency, n), thread_name_prefix="logicval-vlm") as pool:
            results = list(pool.map(one, range(n)))
    if fatal and not any(isinstance(r, Scene) for r in results):
        raise BackendUnavailable(f"vlm backend: {fatal[0]}")
    return results


def _local_model(s: VLMSettings) -> Any:
    from logicval_hf.common.extras import require

    require("transformers", "neural", "the vlm backend's transformers transport")
    from logicval_hf.perception.vlm.local import LocalVLM

    key = (s.model, s.device, s.dtype, s.batch_size)
    with _LOCK:
        model = _MODELS.get(key)
    if model is None:
        model = LocalVLM.from_pretrained(s.model, device=s.device, dtype=s.dtype, batch_size=s.batch_size)
        with _LOCK:
            _MODELS[key] = model
    return model


def _read_local(images: Sequence[np.ndarray], domain: Domain, s: VLMSettings) -> list[Scene | PerceptionError]:
    """The transformers transport: batched greedy generation; pixel boxes are read in the size the processor
    gave each image (`LocalVLM.generate_sized`)."""
    model = _local_model(s)
    pils = [prepare_image(rgb, s.multiple_of, s.min_pixels, s.max_pixels) for rgb in images]
    prompts = [instruction(domain, s.boxes, p.size) for p in pils]
    answers = model.generate_sized(pils, prompts, max_new_tokens=s.max_tokens)
    out: list[Scene | PerceptionError] = []
    for rgb, pil, prompt, (text, model_size) in zip(images, pils, prompts, answers, strict=True):
        seen = model_size or pil.size
        try:
            out.append(read_objects(text, domain, boxes=s.boxes, seen=seen, image=(rgb.shape[1], rgb.shape[0]),
                                    max_objects=s.max_objects,
                                    provenance=_provenance(s, domain, prompt, pil.size, text, seen)))
        except AnswerError as e:
            out.append(e)
    return out
