"""Matching predicted objects to true ones by box centre: the one matcher behind every "which detection is
which object" question (the main job's scene differences, meta-evaluation's scene-graph accuracy, the scene
parser's validation, the perception benchmark)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["MATCH_METHODS", "match_centres"]

MATCH_METHODS = ("hungarian", "greedy")


def _centres(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.size == 0:
        return np.zeros((0, 2))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{what} centres must be a [K, 2] array, got shape {arr.shape}")
    return arr


def match_centres(predicted: Any, true: Any, max_distance: float | None = None, *, method: str = "hungarian",
                  assign_far: bool = False) -> list[tuple[int, int]]:
    """Pairs ``(predicted index, true index)`` of centres matched one to one, sorted.

    Args:
        predicted: ``[N, 2]`` centres (any units; the same as ``true``'s).
        true: ``[M, 2]`` centres.
        max_distance: pairs farther apart (Euclidean) are never matched; None: no limit.
        method: ``"hungarian"`` minimises the total distance (`scipy.optimize.linear_sum_assignment`);
            ``"greedy"`` takes the closest remaining pair first (ties: lower predicted, then true index).
        assign_far: Hungarian only. False (default): pairs beyond ``max_distance`` take no part in the assignment,
            so as many pairs as possible lie within it. True: the assignment is made over every pair and the far
            ones are dropped afterwards (fewer pairs where a far pair made the total smaller; the scene parser's
            validation figures and the perception benchmark are measured so).
    Returns:
        The matched pairs, sorted.
    Raises:
        ValueError: an unknown ``method``, or centres that are not ``[K, 2]``.
    """
    if method not in MATCH_METHODS:
        raise ValueError(f"matching method must be 'hungarian' or 'greedy', got {method!r}")
    a, b = _centres(predicted, "predicted"), _centres(true, "true")
    if len(a) == 0 or len(b) == 0:
        return []
    dist = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    limit = math.inf if max_distance is None else float(max_distance)
    if method == "greedy":
        pairs: list[tuple[int, int]] = []
        used_a: set[int] = set()
        used_b: set[int] = set()
        for k in np.argsort(dist, axis=None, kind="mergesort"):
            i, j = divmod(int(k), dist.shape[1])
            if dist[i, j] > limit:
                break
            if i not in used_a and j not in used_b:
                pairs.append((i, j))
                used_a.add(i)
                used_b.add(j)
        return sorted(pairs)
    from scipy.optimize import linear_sum_assignment

    cost = dist if assign_far or math.isinf(limit) else np.where(dist <= limit, dist, 1e6 + dist.max())
    rows, cols = linear_sum_assignment(cost)
    return sorted((int(i), int(j)) for i, j in zip(rows, cols, strict=True) if dist[i, j] <= limit)
