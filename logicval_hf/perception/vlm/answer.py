"""Reading a VLM's answer into a `Scene`: a tolerant JSON parse, a strict vocabulary, boxes mapped to the image.

The parse tolerates what servers without structured output wrap around JSON: a Markdown code fence, text
before or after it, a bare list of objects instead of ``{"objects": [...]}``, Qwen-VL's own box key
``bbox_2d`` for ``bbox``, values in another letter case or with surrounding spaces. Keys an object carries
beyond the domain's attributes and its box are ignored. Nothing else is repaired: an answer that is not JSON, an
object without one of the domain's attributes, a value outside the vocabulary, a box that is not four numbers,
is empty, or lies outside the image is an `AnswerError` naming what was wrong, never a guessed object.

Boxes are read in the ``boxes`` convention: ``pixels`` of the image the model saw, or ``norm1000``. A box lies
outside the image when its centre does (the rule of every scene graph, `Scene.from_dict`); a box that only
overhangs an edge is kept as it is, since a model's box for an object cut by the frame may. The box is then
scaled to the original image's pixels and rounded to a thousandth of a pixel.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.perception.images import PerceptionError

__all__ = ["AnswerError", "answer_text", "parse_json", "read_objects"]

#: opening brackets tried when the answer has text around its JSON
_MAX_STARTS = 32


class AnswerError(PerceptionError):
    """The VLM answered, but not with a scene graph of the domain (the message says what was wrong)."""


def _fail(msg: str) -> AnswerError:
    return AnswerError(f"vlm answer: {msg}")


def answer_text(answer: Mapping[str, Any]) -> tuple[str, str | None]:
    """The text of a chat-completions answer (``choices[0].message.content``, text parts joined) and its
    ``finish_reason``."""
    try:
        choice = answer["choices"][0]
        msg = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _fail(f"no choices in the endpoint's answer: {str(answer)[:200]}") from None
    content = msg.get("content") if isinstance(msg, Mapping) else None
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    if not isinstance(content, str):
        raise _fail(f"no message content in the endpoint's answer: {str(msg)[:200]}")
    return content, choice.get("finish_reason")


def _usable(value: Any) -> bool:
    """Whether a JSON value found inside an answer's text can be its scene: ``{"objects": ...}`` or a list of
    objects (not an object or a box read out of a longer answer that was cut off)."""
    if isinstance(value, Mapping):
        return "objects" in value
    return isinstance(value, list) and all(isinstance(v, Mapping) for v in value)


def parse_json(text: str) -> Any:
    """The JSON value of an answer (module docstring: a fence or text around it is tolerated).

    Raises:
        json.JSONDecodeError: no JSON value could be read.
    """
    t = text.strip()
    fence = re.search(r"```(?:json|JSON)?\s*\n?(.*?)```", t, re.S)
    if fence:
        t = fence.group(1).strip()
    try:
        return json.loads(t)
    except json.JSONDecodeError as first:
        decoder = json.JSONDecoder()
        for k, m in enumerate(re.finditer(r"[\[{]", t)):
            if k == _MAX_STARTS:
                break
            try:
                value = decoder.raw_decode(t, m.start())[0]
            except json.JSONDecodeError:
                continue
            if _usable(value):
                return value
        raise first from None


def _objects(value: Any) -> list[Any]:
    if isinstance(value, Mapping) and "objects" in value:
        value = value["objects"]
    elif isinstance(value, Mapping):
        raise _fail(f"the JSON has no 'objects' list (keys {sorted(value)[:8]})")
    if not isinstance(value, list):
        raise _fail(f"'objects' must be a list, got {type(value).__name__}")
    return value


def _value(where: str, obj: Mapping[str, Any], attribute: str, domain: Domain) -> str:
    if attribute not in obj:
        raise _fail(f"{where} has no {attribute!r} (an object has {', '.join(domain.perceived_attributes)}, bbox)")
    v = obj[attribute]
    if domain.is_open(attribute):  # free text: any string, stored folded as the domain folds it
        if not isinstance(v, str):
            raise _fail(f"{where}.{attribute} {v!r} is not text ({attribute} is free text in domain {domain.name!r})")
        return domain.canonical_value(attribute, v)
    canon = {x.lower(): x for x in domain.attributes[attribute]}
    key = v.strip().lower() if isinstance(v, str) else None
    if key not in canon:
        raise _fail(f"{where}.{attribute} {v!r} is outside the vocabulary: {domain.expected(attribute, v)}")
    return canon[key]


def _box(where: str, obj: Mapping[str, Any], boxes: str, seen: tuple[float, float], image: tuple[float, float]
         ) -> tuple[float, float, float, float]:
    raw = obj.get("bbox", obj.get("bbox_2d"))
    if raw is None:
        raise _fail(f"{where} has no 'bbox'")
    if (not isinstance(raw, (list, tuple)) or len(raw) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in raw)):
        raise _fail(f"{where}.bbox must be four numbers [x0, y0, x1, y1], got {str(raw)[:80]}")
    x0, y0, x1, y1 = (float(v) for v in raw)
    if not (x1 > x0 and y1 > y0):
        raise _fail(f"{where}.bbox {list(raw)} is empty or reversed (needs x1 > x0 and y1 > y0)")
    span = seen if boxes == "pixels" else (1000.0, 1000.0)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    if not (0 <= cx <= span[0] and 0 <= cy <= span[1]):
        frame = f"{seen[0]:g}x{seen[1]:g} image" if boxes == "pixels" else "0-1000 frame"
        raise _fail(f"{where}.bbox {list(raw)} lies outside the {frame} ({boxes} boxes): its centre "
                    f"({cx:g}, {cy:g}) is not in it")
    sx, sy = image[0] / span[0], image[1] / span[1]
    return round(x0 * sx, 3), round(y0 * sy, 3), round(x1 * sx, 3), round(y1 * sy, 3)


def read_objects(text: str, domain: Domain, *, boxes: str, seen: tuple[float, float], image: tuple[float, float],
                 max_objects: int, finish_reason: str | None = None,
                 provenance: Mapping[str, Any] | None = None) -> Scene:
    """The scene of an answer's text.

    Args:
        text: the model's answer.
        domain: the domain asked for (its vocabulary is the only one accepted).
        boxes: ``pixels`` or ``norm1000``.
        seen: (W, H) of the image as the model saw it (pixel boxes are in it).
        image: (W, H) of the original image (the scene's boxes are in it).
        max_objects: more objects is an error.
        finish_reason: the endpoint's; ``length`` names a cut-off answer in the error.
        provenance: recorded in the scene.
    Raises:
        AnswerError: one line naming what was wrong (module docstring).
    """
    try:
        value = parse_json(text)
    except json.JSONDecodeError as e:
        cut = " (the answer was cut off at max_tokens)" if finish_reason == "length" else ""
        excerpt = text.strip()[:120]
        raise _fail(f"malformed JSON{cut}: {e.msg} at character {e.pos}: {excerpt!r}") from None
    objs = _objects(value)
    if len(objs) > max_objects:
        raise _fail(f"{len(objs)} objects, more than max_objects ({max_objects})")
    out = []
    for i, o in enumerate(objs):
        where = f"objects[{i}]"
        if not isinstance(o, Mapping):
            raise _fail(f"{where} must be a JSON object, got {type(o).__name__}")
        attrs = {a: _value(where, o, a, domain) for a in domain.perceived_attributes}
        out.append(SceneObject(attrs, _box(where, o, boxes, seen, image)))
    return Scene((image[0], image[1]), tuple(out), domain, provenance=dict(provenance) if provenance else None)

