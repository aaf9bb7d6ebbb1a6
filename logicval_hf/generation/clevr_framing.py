"""Where the t2i look's camera stands and how a frame cuts objects (pure: no ``bpy``).

`frame_camera` aims the camera on placed objects so that every one is inside the frame; `cut_shift` moves the
frame afterwards (a lens shift: the perspective stays) so that its edge cuts an object, the
``cut_by_frame`` variation (`clevr_variations`); `overscan` is the larger frame that shows what the cut frame
hides, from which a cut object's visible fraction is measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["CUBE_REACH", "EDGES", "cut_shift", "frame_camera", "overscan"]

CUBE_REACH = math.sqrt(2.0)  # a cube's corners reach r * sqrt(2) from its centre
EDGES = ("left", "right", "top", "bottom")


def _r(v: float, nd: int = 4) -> float:
    return round(float(v), nd)


def frame_camera(camera: Mapping[str, Any], objects: Sequence[Mapping[str, Any]], width: int, height: int,
                 wider: int = 0, closer: int = 0) -> dict[str, Any]:
    """Where the t2i look puts its camera for placed ``objects`` (dicts with x, y, r, shape, stretch, and ``z0``
    where an object rests on another).

    The camera aims at the objects' centroid (plus the drawn jitter) from the drawn azimuth and elevation, at the
    distance where the objects' bounding circle fills ``fill`` of half the frame's shorter side (with the drawn
    focal length on Blender's 32 mm sensor, fitted to the longer side). Each retry (``attempt``) frames a little
    wider, so a scene whose perspective pushed an object past the border fits on a later try.
    """
    pts = np.array([[float(o["x"]), float(o["y"])] for o in objects], dtype=np.float64).reshape(-1, 2)
    jx, jy = camera["target_jitter"]
    cx, cy = (pts.mean(axis=0) if len(pts) else np.zeros(2)) + np.array([jx, jy])
    reach, top = [0.0], [0.7]
    for o, p in zip(objects, pts, strict=True):
        sx, sy, sz = o.get("stretch", (1.0, 1.0, 1.0))
        k = CUBE_REACH if o.get("shape") == "cube" else 1.0
        reach.append(float(np.hypot(p[0] - cx, p[1] - cy)) + float(o["r"]) * max(sx, sy) * k)
        top.append(float(o.get("z0", 0.0)) + 2.0 * float(o["r"]) * sz)
    target = (float(cx), float(cy), 0.5 * max(top) * 0.6)
    radius = max(*reach, 0.5 * max(top))
    tan_long = 16.0 / float(camera["lens_mm"])
    tan_short = tan_long * min(width, height) / max(width, height)
    median_r = float(np.median([float(o["r"]) for o in objects])) if len(objects) else 0.5
    distance = max(median_r / (float(camera["object_size"]) * tan_short),  # the median object's width
                   radius / (float(camera["fill_max"]) * tan_short))          # everything inside the frame
    distance = max(distance * 1.07 ** wider * 0.92 ** closer, radius + 1.0)
    fill = radius / (distance * tan_short)
    az, el = math.radians(float(camera["azimuth_deg"])), math.radians(float(camera["elevation_deg"]))
    location = (target[0] + distance * math.cos(el) * math.cos(az), target[1] + distance * math.cos(el) * math.sin(az),
                target[2] + distance * math.sin(el))
    return {"location": [_r(v) for v in location], "target": [_r(v) for v in target], "lens_mm": camera["lens_mm"],
            "distance": _r(distance), "fill": _r(fill)}


def cut_shift(box: Sequence[int], edge: str, keep: float, width: int, height: int) -> tuple[float, float]:
    """The lens shift (Blender's ``shift_x``, ``shift_y``: fractions of the frame's longer side) that moves the
    frame so that ``edge`` of it crosses an object's inclusive pixel box ``[x0, y0, x1, y1]`` with ``keep`` of
    the box's extent across that edge still inside the frame.

    A positive ``shift_x`` moves the view right (the image's content left); a positive ``shift_y`` moves the
    content down (image rows grow downwards).
    """
    if edge not in EDGES:
        raise ValueError(f"unknown frame edge {edge!r} (known: {', '.join(EDGES)})")
    x0, y0, x1, y1 = (float(v) for v in box)
    w, h = x1 - x0 + 1.0, y1 - y0 + 1.0
    cut = 1.0 - float(keep)
    side = float(max(width, height))
    if edge == "left":  # the content moves left by dx: the box's left part leaves the frame
        return (x0 + cut * w) / side, 0.0
    if edge == "right":
        return -(float(width) - (x1 + 1.0) + cut * w) / side, 0.0
    if edge == "top":  # the content moves up: the view moves up, a negative shift_y
        return 0.0, -(y0 + cut * h) / side
    return 0.0, (float(height) - (y1 + 1.0) + cut * h) / side


def overscan(width: int, height: int, sensor_mm: float, shift: tuple[float, float], pad: int
             ) -> tuple[int, int, float, tuple[float, float]]:
    """A frame ``pad`` pixels larger on every side with the same pixel grid, centre and perspective: its size,
    sensor width and lens shift (the sensor spans the longer side, the shift is in units of it; Blender's
    sensor fit AUTO). The cut frame is the overscan's window ``[pad:pad + height, pad:pad + width]``."""
    w, h = int(width) + 2 * int(pad), int(height) + 2 * int(pad)
    ratio = max(w, h) / max(int(width), int(height))
    return w, h, float(sensor_mm) * ratio, (float(shift[0]) / ratio, float(shift[1]) / ratio)
