"""Scene-graph extraction accuracy against annotated scene graphs (paper Table 7): objects matched by box centre
(`logicval_hf.common.matching.match_centres`), exact recovery, counts, per-attribute accuracy, precision and
recall."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from logicval_hf.common.matching import match_centres
from logicval_hf.contract.scene import Scene

__all__ = ["match_objects", "scene_graph_accuracy"]


def _centres(scene: Scene) -> np.ndarray:
    """Box centres normalised by the image size and scaled by 1/sqrt(2), so that their Euclidean distance is
    ``sqrt((dx^2 + dy^2) / 2)``: 1 is the image diagonal."""
    w, h = scene.image_size
    return np.array([[o.center[0] / w, o.center[1] / h] for o in scene.objects], dtype=float).reshape(-1, 2) \
        / math.sqrt(2)


def match_objects(predicted: Scene, annotated: Scene, method: str = "hungarian",
                  max_distance: float | None = 0.1) -> list[tuple[int, int]]:
    """Pairs ``(predicted index, annotated index)`` matched by box centre.

    Centres are normalised by each scene's image size (annotations may be at another resolution); the
    distance is ``sqrt((dx^2 + dy^2) / 2)`` in those units, so 1 is the image diagonal. ``"hungarian"``
    minimises the total distance; ``"greedy"`` takes the closest remaining pair first. Pairs farther apart
    than ``max_distance`` are not matched (``None``: no limit).
    """
    return match_centres(_centres(predicted), _centres(annotated), max_distance, method=method)


def _object_keys(scene: Scene, attributes: Sequence[str]) -> Counter:
    regions = scene.regions()
    return Counter((*(o.attributes[a] for a in attributes), regions[i]) for i, o in enumerate(scene.objects))


def scene_graph_accuracy(pairs: Iterable[tuple[Scene, Scene]], method: str = "hungarian",
                         max_distance: float | None = 0.1) -> dict[str, Any]:
    """Accuracy of predicted scene graphs against annotations (paper Table 7).

    ``exact``: fraction of images whose object list (count, every perceived attribute and region, as a
    multiset) equals the annotation's; ``count``: fraction with the right number of objects; per attribute
    (and ``region``): accuracy over matched objects; ``precision`` / ``recall``: matched objects over
    predicted / annotated objects (pooled over images).
    """
    pairs = list(pairs)
    if not pairs:
        return {"n": 0}
    attributes = pairs[0][1].domain.perceived_attributes
    exact = count = 0
    correct: Counter[str] = Counter()
    matched = n_pred = n_ann = 0
    for pred, ann in pairs:
        exact += _object_keys(pred, attributes) == _object_keys(ann, attributes)
        count += len(pred) == len(ann)
        n_pred += len(pred)
        n_ann += len(ann)
        m = match_objects(pred, ann, method, max_distance)
        matched += len(m)
        pr, ar = pred.regions(), ann.regions()
        for i, j in m:
            for a in attributes:
                correct[a] += pred.objects[i].attributes[a] == ann.objects[j].attributes[a]
            correct["region"] += pr[i] == ar[j]
    n = len(pairs)
    out: dict[str, Any] = {"n": n, "exact": exact / n, "count": count / n, "matched_objects": matched}
    for a in (*attributes, "region"):
        out[a] = correct[a] / matched if matched else None
    out["precision"] = matched / n_pred if n_pred else None
    out["recall"] = matched / n_ann if n_ann else None
    return out
