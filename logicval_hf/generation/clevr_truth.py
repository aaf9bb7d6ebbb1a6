"""What a CLEVR render's truth holds, from its placed objects and its instance mask (pure: no ``bpy``).

CLEVR's relationships between objects, per-object mask statistics, and which drawn things count as objects:
every object of the plain profiles; under the variations (`clevr_variations`) not the distractors, and not an
object that the frame cuts to less than its visible share. The mask is relabelled to match: value i+1 is
counted object i, the values after them the things drawn that do not count (``uncounted`` in the scene file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["RELATION_EPS", "compute_relationships", "count_objects", "counted_cut", "cut_fractions", "mask_stats",
           "relabel", "visible_point"]

RELATION_EPS = 0.2


def compute_relationships(objects: Sequence[Mapping[str, Any]], directions: Mapping[str, Sequence[float]],
                          eps: float = RELATION_EPS) -> dict[str, list[list[int]]]:
    """CLEVR's relationships: ``out[rel][i]`` lists the objects j that are ``rel`` of object i (margin ``eps``)."""
    out: dict[str, list[list[int]]] = {}
    for name in ("behind", "front", "left", "right"):
        d = np.asarray(directions[name], dtype=np.float64)
        rows = []
        for i, a in enumerate(objects):
            ca = np.asarray(a["3d_coords"], dtype=np.float64)
            rows.append([j for j, b in enumerate(objects)
                         if j != i and float(np.dot(np.asarray(b["3d_coords"]) - ca, d)) > eps])
        out[name] = rows
    return out


def mask_stats(mask: np.ndarray, n: int, first: int = 1) -> list[dict[str, Any]]:
    """Per object i (mask value ``first`` + i): pixel count and inclusive bounds ``[x0, y0, x1, y1]`` (None if
    empty)."""
    counts = np.bincount(mask.ravel(), minlength=first + n + 1)
    out = []
    for i in range(n):
        ys, xs = np.nonzero(mask == first + i)
        box = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None
        out.append({"mask_index": first + i, "mask_pixels": int(counts[first + i]), "bbox_xyxy": box})
    return out


def counted_cut(inside: int, total: int, need: int, min_visible: float) -> bool:
    """Whether an object cut by the frame counts: ``inside`` of its ``total`` silhouette pixels (in a frame
    that holds it whole) lie in the frame, at least ``min_visible`` of them and at least ``need`` pixels."""
    return total > 0 and inside >= max(1, need) and inside / total >= float(min_visible)


def relabel(mask: np.ndarray, counted: Sequence[int], uncounted: Sequence[int]) -> np.ndarray:
    """The mask with value ``counted[i]`` as i+1 and ``uncounted[j]`` as ``len(counted)`` + j + 1; every other
    value 0 (things no longer in the frame, the floor)."""
    lut = np.zeros(256, np.uint8)
    for new, old in enumerate([*counted, *uncounted], start=1):
        lut[int(old)] = new
    return lut[mask]


def visible_point(mask: np.ndarray, value: int) -> list[int] | None:
    """The pixel ``[x, y]`` of the mask's ``value`` nearest its pixels' centroid (on the object: a cut object's
    visible part stands for it), or None where the value shows nowhere."""
    ys, xs = np.nonzero(mask == value)
    if len(xs) == 0:
        return None
    k = int(np.argmin((xs - xs.mean()) ** 2 + (ys - ys.mean()) ** 2))
    return [int(xs[k]), int(ys[k])]


def cut_fractions(over: np.ndarray, pad: int, width: int, height: int, n: int) -> list[tuple[int, int]]:
    """Per object i (mask value i+1) of an overscan mask (`clevr_framing.overscan`): (its pixels inside the
    frame's window, its pixels in all)."""
    inside = np.bincount(over[pad:pad + height, pad:pad + width].ravel(), minlength=n + 1)
    total = np.bincount(over.ravel(), minlength=n + 1)
    return [(int(inside[i + 1]), int(total[i + 1])) for i in range(n)]


def count_objects(mask: np.ndarray, n: int, n_distractors: int, fractions: Sequence[tuple[int, int]] | None,
                  need: int, min_visible: float) -> tuple[list[int], list[tuple[int, str]]]:
    """Which drawn things are objects of the truth, from the render's mask (object i at value i+1, distractor j
    at n+1+j): every object, except one the frame cuts (``fractions``: `cut_fractions`) below ``min_visible``
    or ``need`` pixels. Returns the counted objects' indices and the uncounted things that show, as (mask value,
    reason: ``cut_by_frame`` or ``out_of_vocabulary``)."""
    counts = np.bincount(mask.ravel(), minlength=n + n_distractors + 1)
    counted, uncounted = [], []
    for i in range(n):
        if fractions is None or counted_cut(*fractions[i], need, min_visible):
            counted.append(i)
        elif counts[i + 1] > 0:
            uncounted.append((i + 1, "cut_by_frame"))
    uncounted += [(n + 1 + j, "out_of_vocabulary") for j in range(n_distractors) if counts[n + 1 + j] > 0]
    return counted, uncounted
