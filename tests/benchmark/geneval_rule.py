"""GenEval's correctness rule over detections, re-implemented from its published description (the public
``evaluate_images.py`` of github.com/djghosh13/geneval), independently of logicval_hf (nothing here imports it).

A detection is ``{"class", "color", "bbox": [x0, y0, x1, y1], "score"}``; `geneval_correct(metadata,
detections)` says whether GenEval would score the image correct. `random_detections` draws detection sets
that make the verdict often true and often false, for differential tests against LogicVal's import.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

THRESHOLD, COUNTING_THRESHOLD = 0.3, 0.9
MAX_OBJECTS = 16  # detections kept per class
POSITION_THRESHOLD = 0.1
COLORS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white"]
DISTRACTORS = ["person", "car", "bench", "bird", "cup", "chair", "book", "clock", "traffic light", "hair drier"]
IMAGE = 512


def relative_position(a: Sequence[float], b: Sequence[float]) -> set[str]:
    """GenEval's relations of box a to box b ("left of", "right of", "above", "below")."""
    offset = [(a[0] + a[2]) / 2 - (b[0] + b[2]) / 2, (a[1] + a[3]) / 2 - (b[1] + b[3]) / 2]
    dims = [(a[2] - a[0]) + (b[2] - b[0]), (a[3] - a[1]) + (b[3] - b[1])]
    revised = [math.copysign(max(abs(o) - POSITION_THRESHOLD * d, 0.0), o) if o else 0.0
               for o, d in zip(offset, dims, strict=True)]
    if all(abs(r) < 1e-3 for r in revised):
        return set()
    norm = math.hypot(*offset)
    dx, dy = revised[0] / norm, revised[1] / norm
    out = set()
    if dx < -0.5:
        out.add("left of")
    if dx > 0.5:
        out.add("right of")
    if dy < -0.5:
        out.add("above")
    if dy > 0.5:
        out.add("below")
    return out


def kept(metadata: Mapping[str, Any], detections: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Per class, the detections above the tag's threshold, most confident first (equal scores: input order),
    at most 16."""
    threshold = COUNTING_THRESHOLD if metadata["tag"] == "counting" else THRESHOLD
    by_class: dict[str, list[Mapping[str, Any]]] = {}
    for d in detections:
        if d["score"] > threshold:
            by_class.setdefault(d["class"], []).append(d)
    return {c: sorted(ds, key=lambda d: -d["score"])[:MAX_OBJECTS] for c, ds in by_class.items()}


def geneval_correct(metadata: Mapping[str, Any], detections: Sequence[Mapping[str, Any]]) -> bool:
    """Whether GenEval scores an image with these detections correct for this metadata line."""
    objects = kept(metadata, detections)
    correct = True
    groups: list[list[Mapping[str, Any]] | None] = []
    for req in metadata.get("include", []):
        found = objects.get(req["class"], [])[:req["count"]]
        matched = len(found) >= req["count"]
        if matched and "color" in req:
            matched = all(d["color"] == req["color"] for d in found)
        if matched and "position" in req:
            rel, j = req["position"]
            targets = groups[j]
            if targets is None:
                matched = False
            else:
                matched = all(rel in relative_position(d["bbox"], t["bbox"]) for d in found for t in targets)
        groups.append(found if matched else None)
        correct = correct and matched
    for req in metadata.get("exclude", []):
        if len(objects.get(req["class"], [])) >= req["count"]:
            correct = False
    return correct


def _box(rng: random.Random, side: str | None = None) -> list[float]:
    """A random box inside the image; ``side`` ("left", "right", "top", "bottom") keeps it small and in that
    part of the image, so that GenEval's relations between two sides tend to hold."""
    if side is None:
        w, h = rng.uniform(8, 220), rng.uniform(8, 220)
        x0, y0 = rng.uniform(0, IMAGE - w), rng.uniform(0, IMAGE - h)
        return [x0, y0, x0 + w, y0 + h]
    w, h = rng.uniform(8, 120), rng.uniform(8, 120)
    lo_x, hi_x, lo_y, hi_y = 0.0, IMAGE - w, 0.0, IMAGE - h
    third = IMAGE / 3
    if side == "left":
        hi_x = third - w / 2
    elif side == "right":
        lo_x = 2 * third - w / 2
    elif side == "top":
        hi_y = third - h / 2
    else:
        lo_y = 2 * third - h / 2
    x0, y0 = rng.uniform(max(lo_x, 0.0), max(hi_x, 0.0)), rng.uniform(max(lo_y, 0.0), max(hi_y, 0.0))
    return [x0, y0, x0 + w, y0 + h]


_SIDES = {"left of": ("left", "right"), "right of": ("right", "left"), "above": ("top", "bottom"),
          "below": ("bottom", "top")}


def _score(rng: random.Random, threshold: float, clean: bool) -> float:
    r = rng.random()
    if clean and r < 0.9:
        return rng.uniform(threshold + 0.005, 1.0)
    if r < 0.1:
        return threshold  # exactly at the threshold: not kept (strict >)
    if r < 0.55:
        return min(max(threshold + rng.uniform(-0.08, 0.08), 0.01), 0.999)
    return rng.uniform(threshold, 1.0) if r < 0.85 else rng.uniform(0.01, 1.0)


def random_detections(metadata: Mapping[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """Detections for one metadata line: 0..count+2 of each class the line names, mostly of the asked colour,
    scores near the tag's threshold, random boxes, and up to two distractor classes; shuffled.

    Half the sets are "clean" (the asked count more often, scores mostly above the threshold, the asked
    colours, a position's two classes on the asked sides) so that verdicts are often true as well as false."""
    threshold = COUNTING_THRESHOLD if metadata["tag"] == "counting" else THRESHOLD
    clean = rng.random() < 0.5
    include = metadata.get("include", [])
    wanted: dict[str, tuple[int, list[str]]] = {}
    for req in include:
        n, colours = wanted.get(req["class"], (0, []))
        wanted[req["class"]] = (max(n, req["count"]), colours + ([req["color"]] if "color" in req else []))
    for req in metadata.get("exclude", []):
        wanted.setdefault(req["class"], (req["count"], []))
    sides: dict[str, str] = {}
    if rng.random() < (0.8 if clean else 0.2):
        for req in include:
            if "position" in req:
                source, target = _SIDES[req["position"][0]]
                sides.setdefault(req["class"], source)
                sides.setdefault(include[req["position"][1]]["class"], target)
    out = []
    for cls, (n, colours) in wanted.items():
        # often exactly the asked count, otherwise anything in 0..count+2
        k = n if rng.random() < (0.6 if clean else 0.3) else rng.randint(0, n + 2)
        for _ in range(k):
            asked = colours and rng.random() < (0.92 if clean else 0.7)
            colour = rng.choice(colours) if asked else rng.choice(COLORS)
            out.append({"class": cls, "color": colour, "bbox": _box(rng, sides.get(cls)),
                        "score": _score(rng, threshold, clean)})
    for cls in rng.sample(DISTRACTORS, rng.randint(0, 2)):
        out.append({"class": cls, "color": rng.choice(COLORS), "bbox": _box(rng),
                    "score": _score(rng, threshold, False)})
    rng.shuffle(out)
    # distinct scores among kept detections (GenEval leaves the order of equal scores to numpy's sort)
    seen: set[float] = set()
    for d in out:
        while d["score"] in seen and d["score"] > threshold:
            d["score"] = rng.uniform(threshold, 1.0)
        seen.add(d["score"])
    return out
