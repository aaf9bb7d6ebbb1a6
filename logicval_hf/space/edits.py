"""The Check tab's repair: the cheapest edits after which the perceived scene satisfies the spec
(`logicval_hf.repair`), drawn on the image beside their sentences.

Each edit gets a number, the same on the image and in the list: a removed object is crossed out in red, a moved one
is drawn at its new place in orange with an arrow from where it is, an added one in green, a changed value in purple
on the object's box (``color: red → gray``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.space.images import drawing_canvas

#: the colour of each kind of edit on the image
EDIT_COLOURS = {"remove": (220, 20, 20), "move": (230, 120, 0), "add": (0, 150, 60), "set": (130, 50, 190)}


def repair_of(spec: Spec, scene: Scene, label: str, timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """The repair's JSON (`Repair.to_dict`), or ``{"error": ...}`` when it cannot be had (the verdicts still
    stand)."""
    from logicval_hf.repairs import repair

    try:
        return repair(spec, scene, timeout=timeout if timeout is not None else float("inf")).to_dict()
    except ValueError as e:  # a scene past the repair's limit, a budget spent before any repair
        return {"error": str(e)}


def repair_markdown(result: Mapping[str, Any]) -> str:
    """The repair as a numbered list of sentences (numbers as on the drawing)."""
    r = result.get("repair")
    if not r:
        return ""
    if "error" in r:
        return f"### Repair\n\nNo repair: {r['error']}"
    if not r["edits"]:
        return "### Repair\n\nNothing to repair: the scene already satisfies the spec."
    proof = "the fewest possible" if r["optimal"] else "the best found within the time budget"
    edits = "edit" if r["cost"] == 1 else "edits"
    head = f"### Repair: {r['cost']} {edits} ({proof})"
    lines = [f"{k}. {text}" for k, text in enumerate(r["instructions"], 1)]
    return "\n".join([head, "", *lines])


def _dashed(draw: ImageDraw.ImageDraw, box: Sequence[float], colour: tuple[int, int, int], width: int,
            dash: float) -> None:
    x0, y0, x1, y1 = box
    for (ax, ay), (bx, by) in (((x0, y0), (x1, y0)), ((x1, y0), (x1, y1)), ((x1, y1), (x0, y1)), ((x0, y1), (x0, y0))):
        length = max(abs(bx - ax), abs(by - ay))
        steps = max(1, int(length // dash))
        for k in range(0, steps, 2):
            t0, t1 = k / steps, min(1.0, (k + 1) / steps)
            draw.line([(ax + (bx - ax) * t0, ay + (by - ay) * t0), (ax + (bx - ax) * t1, ay + (by - ay) * t1)],
                      fill=colour, width=width)


def _tag(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, colour: tuple[int, int, int],
         font: Any, size: tuple[int, int]) -> None:
    tb = draw.textbbox((0, 0), text, font=font)
    tw, th = tb[2] - tb[0] + 6, tb[3] - tb[1] + 6
    x = min(max(0.0, xy[0]), max(0.0, size[0] - tw))
    y = min(max(0.0, xy[1] - th), max(0.0, size[1] - th))
    draw.rectangle((x, y, x + tw, y + th), fill=colour)
    draw.text((x + 3, y + 3 - tb[1]), text, fill=(255, 255, 255), font=font)


def draw_edits(image: Any, scene: Scene, repair: Mapping[str, Any], min_width: int = 800) -> Image.Image:
    """The image with the repair's edits drawn on it, numbered as its sentences (module docstring)."""
    im, draw, sx, sy, font = drawing_canvas(image, scene.image_size, min_width)
    W, H = im.size
    width = max(2, round(min(W, H) / 200))

    def px(box: Sequence[float]) -> tuple[float, float, float, float]:
        return box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy

    for k, e in enumerate(repair.get("edits", ()), 1):
        colour = EDIT_COLOURS[e["kind"]]
        old = px(scene.objects[e["object"]].bbox) if e["object"] is not None else None
        if e["kind"] == "remove" and old is not None:
            draw.rectangle(old, outline=colour, width=width)
            draw.line([(old[0], old[1]), (old[2], old[3])], fill=colour, width=width)
            draw.line([(old[0], old[3]), (old[2], old[1])], fill=colour, width=width)
            _tag(draw, (old[0], old[1]), f"{k} remove", colour, font, (W, H))
        elif e["kind"] == "set" and old is not None:
            draw.rectangle(old, outline=colour, width=width)
            _tag(draw, (old[0], old[1]), f"{k} {e['attribute']}: {e['old']} → {e['new']}", colour, font, (W, H))
        elif e["kind"] == "move" and old is not None:
            new = px(e["bbox"])
            _dashed(draw, old, colour, max(1, width // 2), 8)
            draw.rectangle(new, outline=colour, width=width)
            a, b = ((old[0] + old[2]) / 2, (old[1] + old[3]) / 2), ((new[0] + new[2]) / 2, (new[1] + new[3]) / 2)
            draw.line([a, b], fill=colour, width=width)
            draw.ellipse((b[0] - 2 * width, b[1] - 2 * width, b[0] + 2 * width, b[1] + 2 * width), fill=colour)
            _tag(draw, (new[0], new[1]), f"{k} move here", colour, font, (W, H))
        elif e["kind"] == "add":
            new = px(e["bbox"])
            _dashed(draw, new, colour, width, 8)
            words = " ".join(str(v) for v in e["new"].values())
            _tag(draw, (new[0], new[1]), f"{k} add {words}", colour, font, (W, H))
    return im


__all__ = ["EDIT_COLOURS", "draw_edits", "repair_markdown", "repair_of"]
