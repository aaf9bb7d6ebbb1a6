"""The pairs of a scene's objects that stand in a relation, decided for all pairs at once.

`Relation.holds` (`logicval_hf.contract.domain`) decides one pair of boxes in Python; a scene's facts for the
solver need every pair of every relation a spec reads, which is n^2 calls. `true_pairs` computes the same
decisions with numpy over the n x n grid. Orders of centres, areas and containment are sums, products and
comparisons, which numpy computes bit for bit as Python does; GenEval's offset rule (and GIR-Bench's, which
measures the raw centre offset) ends in a square root and a comparison with a threshold, so pairs within a hair of
the threshold are decided by `Relation.holds` itself. The result is the scalar rule's, pair for pair
(tests/asp/test_verify_scale.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from logicval_hf.contract.domain import Relation

__all__ = ["true_pairs"]

#: offsets this close to a box_offset relation's threshold (relative) are decided by the scalar rule
_NEAR = 1e-9


def _grid(boxes: np.ndarray, relation: Relation) -> np.ndarray:
    """``holds[i, j]`` for every ordered pair (the diagonal included; the caller clears it)."""
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
    kind, sign = relation.kind, relation.sign
    if kind == "centre_order":
        c = (x0 + x1) / 2 if relation.axis == "x" else (y0 + y1) / 2
        return sign * (c[:, None] - c[None, :]) > 0
    if kind == "box_inside":  # sign -1: a lies within b; +1: a contains b
        inside = ((x0[:, None] >= x0[None, :]) & (y0[:, None] >= y0[None, :])
                  & (x1[:, None] <= x1[None, :]) & (y1[:, None] <= y1[None, :]))
        return inside if sign < 0 else inside.T
    if kind == "box_area":
        area = (x1 - x0) * (y1 - y0)
        diff = area[:, None] - area[None, :]
        return sign * diff > 1e-9 * np.maximum(np.abs(area)[:, None], np.abs(area)[None, :])
    if kind == "box_offset":
        return _offsets(boxes, relation)
    raise ValueError(f"unknown relation kind {kind!r}")


def _offsets(boxes: np.ndarray, relation: Relation) -> np.ndarray:
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    dx, dy = cx[:, None] - cx[None, :], cy[:, None] - cy[None, :]
    w, h = x1 - x0, y1 - y0
    sx = relation.margin * (w[:, None] + w[None, :])
    sy = relation.margin * (h[:, None] + h[None, :])
    rx = np.maximum(np.abs(dx) - sx, 0.0) * np.sign(dx)
    ry = np.maximum(np.abs(dy) - sy, 0.0) * np.sign(dy)
    none = (np.abs(rx) < 1e-3) & (np.abs(ry) < 1e-3)
    norm = np.sqrt(dx * dx + dy * dy)
    # GIR-Bench's measure reads the raw centre offset's direction; the shrunk one only decides "no relation"
    ox, oy = (dx, dy) if relation.measure == "centre" else (rx, ry)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = relation.sign * (ox if relation.axis == "x" else oy) / norm
    value = np.where(none, 0.0, value)
    threshold = relation.threshold
    holds = value > threshold
    near = np.abs(value - threshold) <= _NEAR * max(1.0, abs(threshold))
    for i, j in zip(*np.nonzero(near & ~none), strict=True):
        holds[i, j] = relation.holds(boxes[i], boxes[j])
    return holds & ~none


def true_pairs(relation: Relation, boxes: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Every ``(a, b)`` with ``a != b`` for which ``relation.holds(boxes[a], boxes[b])``, in row-major order.

    Args:
        relation: how the relation is decided.
        boxes: ``[x0, y0, x1, y1]`` per object.
    Returns:
        The pairs, ``a`` ascending, then ``b``.
    """
    if len(boxes) < 2:
        return []
    grid = _grid(np.asarray([list(b)[:4] for b in boxes], dtype=np.float64), relation)
    np.fill_diagonal(grid, False)
    return [(int(a), int(b)) for a, b in zip(*np.nonzero(grid), strict=True)]
