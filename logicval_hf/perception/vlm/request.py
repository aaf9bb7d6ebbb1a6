"""What the ``vlm`` backend sends: the instruction naming the domain's vocabulary, the JSON schema of the answer
built from the domain, and the image as the model gets it.

The instruction lists every perceived attribute with its values (CLEVR: colour, shape, material; COCO: the 80
classes and 10 colours) and asks for ``{"objects": [{"<attribute>": "<value>", ..., "bbox": [x0, y0, x1, y1]}]}``
with boxes in the convention of the ``boxes`` setting: ``pixels`` of the image as sent (its size is named), or
``norm1000`` (0-1000 on both axes). With ``response_format=json_schema`` the same shape goes to the endpoint as a
JSON schema (each attribute an ``enum`` of its values, the box four numbers), so a server with structured output
(vLLM's guided decoding, SGLang, llama.cpp, OpenAI) cannot answer outside it.

The sent image may be resized first (`fit_size`): to sides that are multiples of ``multiple_of`` and a pixel count
within ``min_pixels`` / ``max_pixels``, by Qwen-VL's own rule (``smart_resize``), so that a server which resizes
to its patch grid leaves the image as sent and a model that grounds in absolute pixels counts in the sent
image's pixels; boxes are mapped back to the original image's pixels when read (`logicval_hf.perception.vlm.answer`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from logicval_hf.contract.domain import Domain

__all__ = ["answer_schema", "chat_body", "fit_size", "instruction", "prepare_image", "response_format"]


#: how the instruction asks for an attribute whose values are free text (a domain's ``open_attributes``: GIR-Bench's
#: object names and colours), by attribute name; ``*`` for any other
_FREE_TEXT = {
    "class": "free text: what the object is, in one or two plain words (e.g. apple, red car -> car)",
    "color": "free text: the object's main colour in one word, or an empty string when it has none",
    "text": "free text: the words it shows, exactly as written",
    "*": "free text: the object's {a}, in a few plain words",
}


def instruction(domain: Domain, boxes: str, size: tuple[int, int]) -> str:
    """The text sent with the image: the domain's vocabulary and the answer's form (module docstring)."""
    attrs = domain.perceived_attributes
    lines = [f"- {a}: {_FREE_TEXT.get(a, _FREE_TEXT['*']).format(a=a)}" if domain.is_open(a)
             else f"- {a}: {', '.join(domain.attributes[a])}" for a in attrs]
    w, h = size
    if boxes == "pixels":
        where = (f"in pixels of this {w}x{h} image: x from 0 at the left edge to {w} at the right edge, y from 0 at "
                 f"the top edge to {h} at the bottom edge")
    else:
        where = ("normalised to 0-1000: x from 0 at the left edge to 1000 at the right edge, y from 0 at the top "
                 "edge to 1000 at the bottom edge")
    example = ", ".join(f'"{a}": "..."' for a in attrs)
    return "\n".join([
        "Find every object in this image and list each one exactly once.",
        "Describe each object with these attributes, each set to exactly one of the values listed"
        + (" (free text where it says so):" if any(domain.is_open(a) for a in attrs) else ":"),
        *lines,
        f'and its bounding box "bbox": [x0, y0, x1, y1], the left, top, right and bottom edges of the object, {where}.',
        "Answer with JSON only, in this form:",
        f'{{"objects": [{{{example}, "bbox": [x0, y0, x1, y1]}}]}}',
        'If there is no object, answer {"objects": []}.',
    ])


def answer_schema(domain: Domain) -> dict[str, Any]:
    """The JSON schema of an answer in ``domain``: an object whose ``objects`` each carry every perceived attribute
    (an ``enum`` of its values; any string for a free-text one) and a ``bbox`` of four numbers, nothing else."""
    props: dict[str, Any] = {a: {"type": "string"} if domain.is_open(a) else
                             {"type": "string", "enum": list(domain.attributes[a])}
                             for a in domain.perceived_attributes}
    props["bbox"] = {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}
    item = {"type": "object", "properties": props, "required": [*domain.perceived_attributes, "bbox"],
            "additionalProperties": False}
    return {"type": "object", "properties": {"objects": {"type": "array", "items": item}},
            "required": ["objects"], "additionalProperties": False}


def response_format(kind: str, domain: Domain) -> dict[str, Any] | None:
    """The request's ``response_format`` for the setting ``kind`` (``none``: None, no field)."""
    if kind == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": "scene_graph", "schema": answer_schema(domain), "strict": True}}
    if kind == "json_object":
        return {"type": "json_object"}
    return None


def fit_size(w: int, h: int, multiple_of: int = 1, min_pixels: int | None = None,
             max_pixels: int | None = None) -> tuple[int, int]:
    """The size ``(W, H)`` an image of ``w x h`` is sent at: each side rounded to a multiple of ``multiple_of``,
    then scaled (keeping the aspect ratio) into ``[min_pixels, max_pixels]``: Qwen-VL's ``smart_resize``, so
    that a Qwen-VL server's own resize of the result is the identity."""
    f = multiple_of
    hb, wb = max(f, round(h / f) * f), max(f, round(w / f) * f)
    if max_pixels is not None and hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb, wb = max(f, math.floor(h / beta / f) * f), max(f, math.floor(w / beta / f) * f)
    elif min_pixels is not None and hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / f) * f, math.ceil(w * beta / f) * f
    return wb, hb


def prepare_image(rgb: np.ndarray, multiple_of: int = 1, min_pixels: int | None = None,
                  max_pixels: int | None = None) -> Any:
    """The PIL image sent for ``rgb`` (``H x W x 3`` uint8), resized by `fit_size` when that changes its size
    (bicubic, as Qwen-VL's processor)."""
    from PIL import Image

    pil = Image.fromarray(rgb, "RGB")
    size = fit_size(pil.width, pil.height, multiple_of, min_pixels, max_pixels)
    return pil if size == pil.size else pil.resize(size, Image.Resampling.BICUBIC)


def chat_body(model: str, prompt: str, image_url: str, *, max_tokens: int, temperature: float,
              response_format: dict[str, Any] | None) -> dict[str, Any]:
    """The ``/chat/completions`` request: one user turn holding the image, then the instruction."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": image_url}},
            {"type": "text", "text": prompt},
        ]}],
        "max_tokens": max_tokens,
        "temperature": temperature,
    }
    if response_format is not None:
        body["response_format"] = response_format
    return body
