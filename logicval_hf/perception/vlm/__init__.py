"""The ``vlm`` perception backend: a grounding vision-language model (Qwen2.5-VL, Qwen3-VL, InternVL, ...) reads
an image into a scene graph of the asked-for domain.

Usage::

    from logicval_hf.perception import extract_scene, extract_scenes
    vlm = {"url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-VL-7B-Instruct", "multiple_of": 28}
    scene = extract_scene("image.png", backend="vlm", **vlm)                     # CLEVR
    scenes = extract_scenes(images, backend="vlm", domain="coco", **vlm, boxes="pixels")
    scenes = extract_scenes(images, backend="vlm", errors="return", **vlm)       # a bad answer: its own error

    logicval serve --backend vlm --setting url=http://127.0.0.1:8000/v1 --setting model=Qwen/Qwen2.5-VL-7B-Instruct

Two transports: ``http`` (default), any OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang,
llama.cpp's server, a hosted API), ``concurrency`` requests in flight at once; ``transformers``, a local model
loaded from a hub id or a folder (the ``neural`` extra), batched. Each request holds the image and an
instruction that names the domain's vocabulary and asks for ``{"objects": [{"<attribute>": "<value>", ...,
"bbox": [x0, y0, x1, y1]}]}`` (`logicval_hf.perception.vlm.request`); with ``response_format=json_schema`` the
endpoint is held to the domain's JSON schema. The answer is read tolerantly as JSON but strictly in the domain
(`logicval_hf.perception.vlm.answer`): a value outside the vocabulary, a box outside the image or malformed
JSON is that image's error, never an invented object. Boxes follow the ``boxes`` setting: ``pixels`` of the
image the model saw (Qwen2.5-VL; send ``multiple_of=28`` so that the server keeps the image's size) or
``norm1000`` (Qwen2-VL, Qwen3-VL, InternVL), and come back in the image's pixels.

Each scene's ``provenance`` records the request (model, URL without credentials, the prompt, the settings that
shape the answer, the size the image was sent at) and the answer's text. The API key is read from the
environment variable ``api_key_env`` names and goes nowhere but the request's header.

Settings: `logicval_hf.perception.vlm.settings.SETTINGS` (``url``, ``model``, ``api_key_env``, ``timeout``,
``boxes``, ``concurrency`` (8), ...); `check_settings` refuses bad ones in one line and, over HTTP, asks the
endpoint's ``/models`` whether it is reachable and serves the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.perception.backend import PerceptionBackend
from logicval_hf.perception.images import PerceptionError
from logicval_hf.perception.vlm.endpoint import serving_problem
from logicval_hf.perception.vlm.reader import clear_cache, endpoint_of, read_images
from logicval_hf.perception.vlm.settings import SETTINGS, VLMSettings, read_settings

__all__ = ["BACKEND", "SETTINGS", "VLMSettings", "check_settings", "clear_cache", "extract", "extract_batch",
           "read_settings"]

#: seconds the reachability check of `check_settings` waits at most
PROBE_TIMEOUT = 5.0


def _settings(settings: Mapping[str, Any]) -> VLMSettings:
    try:
        return read_settings(settings)
    except ValueError as e:
        raise PerceptionError(str(e)) from None


def check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse settings the backend cannot run with, in one line: unknown or malformed ones, a missing ``url`` or
    ``model``, an unset key variable; over HTTP, an endpoint that does not answer ``GET /models`` within
    `PROBE_TIMEOUT` seconds, refuses the key, or lists its models without this one.

    Raises:
        ValueError: what is wrong, one line.
    """
    s = read_settings(settings)
    if s.transport != "http":
        return
    problem = serving_problem(endpoint_of(s), s.model, min(PROBE_TIMEOUT, s.timeout),
                              "the environment variable named by api_key_env")
    if problem is not None:
        raise ValueError(f"vlm backend: {problem}")


def _domain(domain: Domain | None) -> Domain:
    return load_catalog().domain if domain is None else domain


def extract(rgb: Any, domain: Domain | None = None, **settings: Any) -> Scene:
    """Backend entry point: the scene of one image (``H x W x 3`` uint8) in ``domain`` (default CLEVR).

    Raises:
        PerceptionError: the image's request failed or its answer is not a scene graph of the domain (one line
            naming what was wrong); bad settings; an endpoint that cannot be reached.
    """
    out = read_images([rgb], _domain(domain), _settings(settings))[0]
    if isinstance(out, PerceptionError):
        raise out
    return out


def extract_batch(images: Sequence[Any], domain: Domain | None = None, **settings: Any) -> list[Any]:
    """Batched entry point: one `Scene`, or one `PerceptionError` saying what was wrong, per image."""
    return read_images(list(images), _domain(domain), _settings(settings))


#: the ``vlm`` perception backend (`logicval_hf.perception.BACKENDS`): any domain, batched (requests in flight at
#: once), no model files (the model lives behind the endpoint, or is a setting)
BACKEND = PerceptionBackend(
    "vlm", extract, extract_batch, domains=None, takes_domain=True, check_settings=check_settings,
    description="a grounding VLM behind an OpenAI-compatible endpoint (or a local transformers model)")
