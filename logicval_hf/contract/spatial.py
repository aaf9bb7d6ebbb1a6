"""Geometry of the spatial vocabulary (regions.md): which axis each relation orders and in which direction.

Relations read ``rel(a, b)`` = "a is rel b". Image coordinates: x grows to the right, y grows downwards,
so "behind" (farther from the camera) is a smaller y.
"""

from __future__ import annotations

# relation -> (axis, sign): rel(a, b) iff sign * (coord(a) - coord(b)) > 0
RELATION_GEOMETRY: dict[str, tuple[str, int]] = {
    "left": ("x", -1),
    "right": ("x", +1),
    "behind": ("y", -1),
    "front": ("y", +1),
}

# The canonical relation of each axis (the one the solver chooses; the other is its inverse).
AXIS_RELATION = {"x": "left", "y": "behind"}
INVERSE = {"left": "right", "right": "left", "behind": "front", "front": "behind"}


def axis_of(rel: str) -> str:
    return RELATION_GEOMETRY[rel][0]


def region_of(cx: float, cy: float, width: float, height: float) -> str:
    """Region of a box centre: column 0 iff cx < W/2, row 0 iff cy < H/2 (midline -> right / front)."""
    col = 0 if cx < width / 2 else 1
    row = 0 if cy < height / 2 else 1
    return f"r{2 * row + col}"


def region_cell(region: str) -> tuple[int, int]:
    """(column, row) of a region name r0..r3."""
    k = int(region[1:])
    return k % 2, k // 2
