"""Geometry of the spatial vocabulary (docs/regions.md): regions of box centres and the box arithmetic the domains'
relations read. Image coordinates: x grows to the right, y grows downwards, so "behind" (farther from the camera)
is a smaller y.
"""

from __future__ import annotations


def region_of(cx: float, cy: float, width: float, height: float) -> str:
    """Region of a box centre: column 0 iff cx < W/2, row 0 iff cy < H/2 (midline -> right / front)."""
    col = 0 if cx < width / 2 else 1
    row = 0 if cy < height / 2 else 1
    return f"r{2 * row + col}"


def region_cell(region: str) -> tuple[int, int]:
    """(column, row) of a region name r0..r3."""
    k = int(region[1:])
    return k % 2, k // 2


# ---- box geometry shared by every domain's relations (logicval_hf.contract.domain.Relation) ----------------
def centre(box) -> tuple[float, float]:
    x0, y0, x1, y1 = box[:4]
    return (x0 + x1) / 2, (y0 + y1) / 2


def area(box) -> float:
    x0, y0, x1, y1 = box[:4]
    return (x1 - x0) * (y1 - y0)


def within(inner, outer) -> bool:
    """Whether box ``inner`` lies within box ``outer`` (edges may touch)."""
    return inner[0] >= outer[0] and inner[1] >= outer[1] and inner[2] <= outer[2] and inner[3] <= outer[3]


def normalised_offset(a, b, margin: float, measure: str = "shrunk") -> tuple[float, float]:
    """GenEval's position of box a relative to box b: the centre offset, each axis shrunk towards 0 by
    ``margin`` x (sum of both boxes' sizes on that axis), divided by the length of the raw offset.
    ``measure="centre"`` is GIR-Bench's: the raw centre offset over its length (its direction); the shrunk offset
    only decides whether there is a relation at all.

    (0, 0) when the shrunk offset is below 1e-3 on both axes (no relation, as in GenEval and GIR-Bench).
    """
    (ax, ay), (bx, by) = centre(a), centre(b)
    dx, dy = ax - bx, ay - by
    sx = margin * ((a[2] - a[0]) + (b[2] - b[0]))
    sy = margin * ((a[3] - a[1]) + (b[3] - b[1]))
    rx = max(abs(dx) - sx, 0.0) * (1 if dx > 0 else -1 if dx < 0 else 0)
    ry = max(abs(dy) - sy, 0.0) * (1 if dy > 0 else -1 if dy < 0 else 0)
    if abs(rx) < 1e-3 and abs(ry) < 1e-3:
        return 0.0, 0.0
    norm = (dx * dx + dy * dy) ** 0.5
    if measure == "centre":
        return dx / norm, dy / norm
    return rx / norm, ry / norm


def score_ranks(groups, scores) -> list[int]:
    """Rank of each object's score within its group (1 = highest; equal or missing scores keep input order)."""
    ranks = []
    for i, g in enumerate(groups):
        si = scores[i] if scores[i] is not None else float("-inf")
        higher = 0
        for j, h in enumerate(groups):
            if j == i or h != g:
                continue
            sj = scores[j] if scores[j] is not None else float("-inf")
            if sj > si or (sj == si and j < i):
                higher += 1
        ranks.append(higher + 1)
    return ranks
