"""Box geometry of detections: pairwise IoU, containment, and the duplicate suppression that keeps one box per
object (paper, Appendix E)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["box_iou", "containment", "suppress_duplicates"]


def _area(b: np.ndarray) -> np.ndarray:
    return np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)


def _intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise intersection areas of boxes ``a[N, 4]`` and ``b[M, 4]`` (``[N, M]``)."""
    x0 = np.maximum(a[:, None, 0], b[None, :, 0])
    y0 = np.maximum(a[:, None, 1], b[None, :, 1])
    x1 = np.minimum(a[:, None, 2], b[None, :, 2])
    y1 = np.minimum(a[:, None, 3], b[None, :, 3])
    return np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)


def box_iou(a: Any, b: Any) -> np.ndarray:
    """Pairwise IoU of ``[x0, y0, x1, y1]`` boxes (``[N, M]``)."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    inter = _intersection(a, b)
    union = _area(a)[:, None] + _area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def containment(a: Any, b: Any) -> np.ndarray:
    """``[N, M]``: the fraction of box ``a[i]``'s area that lies inside box ``b[j]``."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    inter = _intersection(a, b)
    area = _area(a)[:, None]
    return np.where(area > 0, inter / np.where(area > 0, area, 1), 0.0)


def suppress_duplicates(boxes: Any, scores: Any, iou_threshold: float = 0.5,
                        containment_threshold: float = 0.85) -> list[int]:
    """Indices of the boxes kept, highest score first (ties: lower index first).

    Boxes are visited by decreasing score; one is dropped when its IoU with an already kept box exceeds
    ``iou_threshold`` or when more than ``containment_threshold`` of its own area lies inside a kept box
    (paper, Appendix E: suppress a lower-confidence detection that overlaps or is mostly contained in a
    higher-confidence one). A threshold of ``None`` (or >= 1 for the IoU) disables that rule.
    """
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    scores = np.asarray(scores, float).reshape(-1)
    if len(boxes) != len(scores):
        raise ValueError(f"{len(boxes)} boxes but {len(scores)} scores")
    order = np.argsort(-scores, kind="stable")
    iou = box_iou(boxes, boxes)
    cont = containment(boxes, boxes)
    kept: list[int] = []
    for i in (int(k) for k in order):
        dup = False
        for j in kept:
            if iou_threshold is not None and iou[i, j] > iou_threshold:
                dup = True
                break
            if containment_threshold is not None and cont[i, j] > containment_threshold:
                dup = True
                break
        if not dup:
            kept.append(i)
    return kept
