"""A second, closer look at the scene parser's uncertain peaks: a stage after the first read.

Why: most count errors on images in a text-to-image look are peaks near the threshold: hard shadows, floor
texture at the frame's edge and second peaks on large objects just above it, objects mostly hidden behind
others just below it. One read of the whole image cannot tell them apart at its scale. Each peak whose heat
lies in the uncertain ``band`` is read again in a window around it (``context`` x its box's longer side),
enlarged ``zoom`` x beyond the scale the image was read at (still within the sizes the network was trained
on); the heat of the second read's strongest peak within ``radius`` x the box of the first's centre is
averaged with the first (``weight``), and the object is kept when that average reaches ``threshold``
(`SecondLookSettings`, fitted on held-out renders by the training recipe). Peaks outside the band are decided
by their first heat; centres, boxes and attributes stay the first read's.

A model file turns it on with a ``second_look`` entry in its metadata; the setting ``second_look=False`` turns it
off. The stage reads through any `Reader` (the scene parser's public `look`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from logicval_hf.perception.parser_decoding import Detection
from logicval_hf.perception.parser_settings import SecondLookSettings

__all__ = ["Found", "Reader", "band_items", "in_band", "rescore", "second_heat"]

#: per image: (detections kept, candidate peaks below the threshold)
Found = list[tuple[list[Detection], list[Detection]]]


class Reader(Protocol):
    def look(self, items: Sequence[tuple[np.ndarray, float]], threshold: float, max_objects: int = 32,
             batch_size: int = 8, floor: float = 0.0) -> Found:
        """One read of every ``(image, scale)``: (detections at or above ``threshold``, peaks in [``floor``,
        ``threshold``)) per image."""
        ...


def in_band(score: float, cfg: SecondLookSettings) -> bool:
    lo, hi = cfg.band
    return lo <= score < hi


def band_items(found: Found, cfg: SecondLookSettings) -> list[tuple[int, Detection]]:
    """(image index, peak) of every detection or candidate of ``found`` whose heat lies in the band."""
    return [(i, d) for i, (dets, cands) in enumerate(found) for d in (*dets, *cands) if in_band(d.score, cfg)]


def _window(rgb: np.ndarray, d: Detection, context: float) -> tuple[np.ndarray, int, int]:
    """The part of the image around a detection (clipped at the border: replicated edges would add floor
    that is not there) and its top-left corner."""
    h, w = rgb.shape[:2]
    half = max(1, math.ceil(max(d.w, d.h) * context / 2))
    x0, y0 = max(0, int(d.cx) - half), max(0, int(d.cy) - half)
    x1, y1 = min(w, int(d.cx) + half), min(h, int(d.cy) + half)
    return np.ascontiguousarray(rgb[y0:max(y1, y0 + 1), x0:max(x1, x0 + 1)]), x0, y0


def second_heat(reader: Reader, images: Sequence[np.ndarray], items: Sequence[tuple[int, Detection]],
                cfg: SecondLookSettings, batch_size: int = 8) -> list[float]:
    """The second read's heat of each ``(image index, detection)``: the strongest peak within ``radius`` of the
    detection's centre in its enlarged window (0 when there is none). Windows of one shape share a forward
    pass."""
    if not items:
        return []
    windows, corners = [], []
    for i, d in items:
        win, x0, y0 = _window(images[i], d, cfg.context)
        windows.append((win, d.scale * cfg.zoom))
        corners.append((x0, y0))
    found = reader.look(windows, cfg.floor, 64, batch_size)
    out = []
    for (_, d), (x0, y0), (dets, _) in zip(items, corners, found, strict=True):
        reach = cfg.radius * max(d.w, d.h)
        near = [q.score for q in dets if math.hypot(q.cx + x0 - d.cx, q.cy + y0 - d.cy) <= reach]
        out.append(max(near, default=0.0))
    return out


def rescore(reader: Reader, images: Sequence[np.ndarray], found: Found, cfg: SecondLookSettings, threshold: float,
            max_objects: int, batch_size: int = 8) -> Found:
    """(kept, candidates) per image after the second look: every detection or candidate in the band gets the
    average of its two heats as its score; kept are those reaching ``threshold`` (at most ``max_objects``,
    strongest first), the rest stay candidates for the confidence."""
    items = band_items(found, cfg)
    w = cfg.weight
    for (_, d), s2 in zip(items, second_heat(reader, images, items, cfg, batch_size), strict=True):
        d.score = (1 - w) * d.score + w * s2
    out = []
    for dets, cands in found:
        every = sorted((*dets, *cands), key=lambda d: -d.score)
        kept = [d for d in every if d.score >= threshold][:max_objects]
        out.append((kept, [d for d in every if d.score < threshold]))
    return out
