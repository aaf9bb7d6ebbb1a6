"""Statistics of metric scores against 0/1 human verdicts: point-biserial correlation, ROC-AUC from mid-ranks,
the ROC curve, and the exact agreement of a binary metric (paper Tables 5 and 6, Figure 5)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["agreement", "point_biserial", "roc_auc", "roc_curve"]


def _arrays(scores: Sequence[float], human: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    h = np.asarray(human, dtype=float)
    if s.shape != h.shape or s.ndim != 1:
        raise ValueError(f"scores and human verdicts must be equally long lists, got {s.shape} and {h.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite numbers")
    if not np.all((h == 0) | (h == 1)):
        raise ValueError("human verdicts must be 0 or 1")
    return s, h


def point_biserial(scores: Sequence[float], human: Sequence[int]) -> float | None:
    """Point-biserial correlation (= Pearson's r) between scores and 0/1 verdicts; ``None`` when either side
    is constant or there are fewer than two items."""
    s, h = _arrays(scores, human)
    if len(s) < 2 or np.ptp(s) == 0 or np.ptp(h) == 0:
        return None
    sd, hd = s - s.mean(), h - h.mean()
    r = float(np.dot(sd, hd) / math.sqrt(float(np.dot(sd, sd)) * float(np.dot(hd, hd))))
    return max(-1.0, min(1.0, r))


def roc_auc(scores: Sequence[float], human: Sequence[int]) -> float | None:
    """ROC-AUC from mid-ranks: P(score of a positive > score of a negative) + 0.5 P(tie).

    ``None`` unless both classes occur.
    """
    from scipy.stats import rankdata

    s, h = _arrays(scores, human)
    n_pos = int(h.sum())
    n_neg = len(h) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(s, method="average")
    u = float(ranks[h == 1].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def roc_curve(scores: Sequence[float], human: Sequence[int]) -> tuple[list[float], list[float], list[float]]:
    """``(fpr, tpr, thresholds)`` with one point per distinct score (descending), starting at (0, 0).

    The trapezoidal area under it equals `roc_auc` (tied scores give a diagonal segment).
    """
    s, h = _arrays(scores, human)
    n_pos = h.sum()
    n_neg = len(h) - n_pos
    if n_pos == 0 or n_neg == 0:
        return [], [], []
    order = np.argsort(-s, kind="mergesort")
    s, h = s[order], h[order]
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]  # last index of each run of equal scores
    tp = np.cumsum(h)[last]
    fp = (last + 1) - tp
    return ([0.0, *(fp / n_neg).tolist()], [0.0, *(tp / n_pos).tolist()], [math.inf, *s[last].tolist()])


def agreement(scores: Sequence[float], human: Sequence[int]) -> dict[str, Any] | None:
    """Exact agreement of a binary (0/1) metric with the human verdicts, with the confusion counts;
    ``None`` if some score is not 0 or 1."""
    s, h = _arrays(scores, human)
    if not np.all((s == 0) | (s == 1)) or len(s) == 0:
        return None
    tp = int(((s == 1) & (h == 1)).sum())
    tn = int(((s == 0) & (h == 0)).sum())
    fp = int(((s == 1) & (h == 0)).sum())
    fn = int(((s == 0) & (h == 1)).sum())
    errors = fp + fn
    return {
        "agreement": (tp + tn) / len(s), "tp": tp, "tn": tn, "fp": fp, "fn": fn,
        "false_positive_share": fp / errors if errors else None,
    }
