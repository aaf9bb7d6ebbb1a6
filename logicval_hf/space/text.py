"""The Text tab: an uploaded image read by OCR, scored against a target text (GIR-Bench's text rendering score), and
a spec over its text lines (the ``text`` domain) verified and repaired; the lines drawn boxed.

Uploads go through `logicval_hf.space.images` (size, type, pixel cap) before the OCR decodes anything. Errors are
`ValueError`s with a sentence a user can act on.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from PIL import Image

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.space import images
from logicval_hf.space.common import MAX_SPEC_CHARS

__all__ = ["draw_lines", "read_upload", "result_markdown"]

_GOOD, _OTHER = (20, 140, 60), (200, 60, 20)


def read_upload(path: Any, target: str, spec_text: str, min_confidence: float = 0.5,
                max_bytes: int | None = images.DEFAULT_MAX_FILE_BYTES) -> dict[str, Any]:
    """Read the image's lines; with a target, ``score`` (and ``target``); with a spec JSON (``text`` domain),
    its ``label``, ``verdict`` and, when it fails, a ``repair`` naming the text to change.

    Raises:
        ValueError: no target and no spec, an empty target, a spec that is not valid JSON or not in the text
            domain, or an image the gate refuses.
    """
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.spec import as_spec
    from logicval_hf.perception.ocr import lines_scene, read_lines
    from logicval_hf.tasks.text_rendering import check_target, read_text, text_score

    target, spec_text = (target or "").strip(), (spec_text or "").strip()
    if not target and not spec_text:
        raise ValueError("give a target text (what the image must show), a text spec (JSON), or both")
    if target:
        check_target(target, "target text")
    spec = None
    if spec_text:
        if len(spec_text) > MAX_SPEC_CHARS:
            raise ValueError(f"the spec is longer than {MAX_SPEC_CHARS} characters")
        try:
            spec = as_spec(json.loads(spec_text))
        except json.JSONDecodeError as e:
            raise ValueError(f"the spec is not valid JSON ({e.msg} at column {e.colno})") from None
        if spec.domain.name != "text":
            raise ValueError(f"the spec is in domain {spec.domain.name!r}; give a spec of the 'text' domain "
                             '({"domain": "text", "constraints": [...]})')
    rgb = images.decode(path, max_bytes)
    lines = read_lines(rgb, min_confidence)
    out: dict[str, Any] = {"lines": [ln.to_dict() for ln in lines], "read": read_text(lines),
                           "image_size": [int(rgb.shape[1]), int(rgb.shape[0])]}
    if target:
        out.update(score=text_score(target, out["read"]), target=target)
    if spec is not None:
        from logicval_hf.repairs import repair

        solver = default_solver()
        scene = lines_scene(lines, (rgb.shape[1], rgb.shape[0]))
        label = solver.solve(spec, timeout=DEFAULT_TIMEOUT).label
        verdict = solver.verify(spec, scene, label=label)
        out.update(label=label, verdict=verdict.to_dict(), scene=scene.to_dict())
        if not verdict.ok and label == "SAT":
            out["repair"] = repair(spec, scene, timeout=DEFAULT_TIMEOUT).to_dict()
    return out


def draw_lines(rgb: np.ndarray, result: dict[str, Any]) -> Image.Image:
    """The image with every line read boxed and labelled with its text and confidence (green when the line holds
    a word of the target, orange otherwise)."""
    from logicval_hf.contract.folding import fold_text

    im, draw, sx, sy, font = images.drawing_canvas(rgb, tuple(result["image_size"]), 640)
    words = set(fold_text(result.get("target", "")).split())
    width = max(2, round(min(im.size) / 250))
    for ln in result["lines"]:
        x0, y0, x1, y1 = ln["box"]
        colour = _GOOD if words & set(fold_text(ln["text"]).split()) or not words else _OTHER
        box = (x0 * sx, y0 * sy, x1 * sx, y1 * sy)
        draw.rectangle(box, outline=colour, width=width)
        label = f"{ln['text']} ({ln['confidence']:.2f})"
        tb = draw.textbbox((0, 0), label, font=font)
        y = box[1] - (tb[3] - tb[1]) - 6 if box[1] > tb[3] - tb[1] + 6 else box[3]
        draw.rectangle((box[0], y, box[0] + tb[2] - tb[0] + 6, y + tb[3] - tb[1] + 6), fill=colour)
        draw.text((box[0] + 3, y + 3 - tb[1]), label, fill=(255, 255, 255), font=font)
    return im


def result_markdown(result: dict[str, Any]) -> str:
    """The score, the text read and, for a spec, the verdict and the repair's instructions."""
    parts = []
    if "score" in result:
        parts.append(f"**Score {result['score']:.3f}** (GIR-Bench's word-level continuous substring score) for "
                     f"the target “{result['target']}”.")
    parts.append(f"Read: “{result['read']}”" if result["read"] else "No text read (no line above the confidence).")
    if "verdict" in result:
        v = result["verdict"]
        failing = ", ".join(str(i + 1) for i in v["violated"]) or "none"
        parts.append(f"**Spec: {'satisfied' if v['ok'] else 'not satisfied'}** (label {result['label']}; failing "
                     f"constraints: {failing}).")
        rep = result.get("repair")
        if rep and rep.get("instructions"):
            parts.append("Repair: " + " ".join(rep["instructions"]))
    return "\n\n".join(parts)
