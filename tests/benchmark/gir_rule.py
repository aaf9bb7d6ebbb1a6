"""GIR-Bench's verdicts on a scene graph, re-implemented from its evaluation scripts' rules (eval/
eval_NumericalReasoning.py, eval/eval_SpatialLayout.py) independently of the package: the reference the imported
specs are compared with. A scene object stands for a detection of ``"<color> <name>"`` (or ``"<name>"`` when the
prompt gives the object no colour); names and colours compare folded, as the specs do."""

from __future__ import annotations

import math
import re


def fold(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9\s]", "", text.lower()).split())


def gir_relation(a, b, direction: str, threshold: float = 0.25) -> bool:
    """Box a (x0, y0, x1, y1) in ``direction`` of box b by GIR-Bench's check_relation."""
    ca = ((a[0] + a[2]) / 2, (a[1] + a[3]) / 2)
    cb = ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
    off = (ca[0] - cb[0], ca[1] - cb[1])
    dims = (abs(a[2] - a[0]) + abs(b[2] - b[0]), abs(a[3] - a[1]) + abs(b[3] - b[1]))
    shrunk = [max(abs(o) - threshold * d, 0.0) for o, d in zip(off, dims, strict=True)]
    if all(s < 1e-3 for s in shrunk):
        return False
    norm = math.hypot(*off)
    if norm <= 0:
        return False
    dx, dy = off[0] / norm, off[1] / norm
    return {"left": dx < -0.5, "right": dx > 0.5, "up": dy < -0.5, "above": dy < -0.5, "down": dy > 0.5,
            "below": dy > 0.5}[direction]


def _matches(obj, name, colour) -> bool:
    return fold(obj["class"]) == fold(name) and (not colour or fold(obj["color"]) == fold(colour))


def numerical_correct(task, objects) -> bool:
    """Every listed name's count equals its number, and none is missing."""
    for name, k in zip(task["objects"], task["number"], strict=True):
        n = sum(fold(o["class"]) == fold(name) for o in objects)
        if n != k or n == 0:
            return False
    return True


def spatial_correct(task, objects) -> bool:
    """Every object found exactly once and every relation true between the found boxes (objects given by index or
    by name; no groups)."""
    names = task["objects"]
    colours = list(task.get("colors") or []) + [""] * len(names)
    found = []
    for name, colour in zip(names, colours, strict=False):
        hits = [o for o in objects if _matches(o, name, colour)]
        if len(hits) != 1:
            return False
        found.append(hits[0]["bbox"])

    def index(ref):
        return ref if isinstance(ref, int) else [fold(n) for n in names].index(fold(ref))

    return all(gir_relation(found[index(r["subject"])], found[index(r["object"])], r["direction"])
               for r in task["relative_position"])
