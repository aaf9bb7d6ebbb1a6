"""`meta_evaluate`: correlation, ROC-AUC and agreement per metric and model, scene-graph accuracy per model, and
the annotation flags' summary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from logicval_hf.scoring.meta.records import FLAGS, MetaRecord
from logicval_hf.scoring.meta.scene_accuracy import scene_graph_accuracy
from logicval_hf.scoring.meta.statistics import agreement, point_biserial, roc_auc, roc_curve

__all__ = ["ALL_MODELS", "flag_summary", "meta_evaluate"]

ALL_MODELS = "all"


def _derive_human(records: Sequence[MetaRecord]) -> int:
    """Fill missing human verdicts from annotated scenes and specs (h = annotated scene |= spec)."""
    todo = [r for r in records if r.human is None and r.annotated_scene is not None and r.spec_json]
    if not todo:
        return 0
    from logicval_hf.asp.solver import default_solver

    verdicts = default_solver().verify_many([(r.spec_json, r.annotated_scene) for r in todo], count="strict")
    for r, v in zip(todo, verdicts, strict=True):
        r.human = int(v.ok)
    return len(todo)


def meta_evaluate(records: Sequence[MetaRecord], matching: str = "hungarian",
                  max_distance: float | None = 0.1) -> dict[str, Any]:
    """Point-biserial correlation, ROC-AUC (+ curve), agreement (binary metrics) per metric and model, and
    scene-graph accuracy per model. Models are reported one by one and, if there are several, pooled as
    ``"all"``. The verdict of a record is its human one, else the one derived from its annotated scene graph,
    else its known truth; ``verdicts`` counts each source."""
    records = list(records)
    n_human = sum(1 for r in records if r.human is not None)
    derived = _derive_human(records)
    known = 0
    for r in records:  # a human verdict, given or derived from an annotated scene graph, comes first
        if r.human is None and r.known_truth is not None:
            r.human, known = r.known_truth, known + 1
    usable = [r for r in records if r.human is not None]
    models = sorted({r.model for r in usable})
    groups = {m: [r for r in usable if r.model == m] for m in models}
    if len(models) > 1:
        groups[ALL_MODELS] = usable
    metrics = sorted({name for r in usable for name in r.scores})
    result: dict[str, Any] = {
        "n_records": len(records), "n_without_human": len(records) - len(usable), "n_human_derived": derived,
        "verdicts": {"human": n_human, "derived from annotated scene graphs": derived, "known truth": known},
        "models": list(groups), "metrics": metrics,
        "images": {m: {"n": len(rs),
                       "human_correct": sum(r.human for r in rs if r.human is not None) / len(rs) if rs else None}
                   for m, rs in groups.items()},
        "by_metric": {},
        "scene_graph_accuracy": {},
        "matching": {"method": matching, "max_distance": max_distance},
    }
    for name in metrics:
        per_model = {}
        for m, rs in groups.items():
            pairs = [(r.scores[name], r.human) for r in rs if name in r.scores and r.human is not None]
            if not pairs:
                continue
            s, h = [p[0] for p in pairs], [p[1] for p in pairs]
            fpr, tpr, _ = roc_curve(s, h)
            entry = {
                "n": len(s), "n_pos": int(sum(h)), "n_neg": len(h) - int(sum(h)),
                "mean_score_pos": float(np.mean([x for x, y in pairs if y == 1])) if sum(h) else None,
                "mean_score_neg": float(np.mean([x for x, y in pairs if y == 0])) if len(h) - sum(h) else None,
                "point_biserial": point_biserial(s, h), "roc_auc": roc_auc(s, h),
                "roc": {"fpr": fpr, "tpr": tpr},
            }
            agree = agreement(s, h)
            if agree is not None:
                entry.update(agree)
            per_model[m] = entry
        result["by_metric"][name] = per_model
    for m, rs in groups.items():
        scenes = [(r.predicted_scene, r.annotated_scene) for r in rs
                  if r.predicted_scene is not None and r.annotated_scene is not None]
        if scenes:
            result["scene_graph_accuracy"][m] = scene_graph_accuracy(scenes, matching, max_distance)
    flagged = {m: flag_summary(rs, metrics) for m, rs in groups.items() if any(r.flags for r in rs)}
    result["flags"] = flagged
    return result


def _mean(xs: Sequence[float]) -> float | None:
    return float(np.mean(xs)) if len(xs) else None


def flag_summary(records: Sequence[MetaRecord], metrics: Sequence[str] = ()) -> dict[str, Any]:
    """Annotation flags of one model's images: the rate of each flag (and of images with a deformed object,
    paper Table 4) overall and per package, and the success rates with and without the flagged images.

    Rates are over the images that carry the flag's annotation. ``success``: the human verdicts' rate and each
    metric's mean score on ``all`` images, on the ``unflagged`` ones (no rendering error, no deformed object)
    and on the ``flagged`` ones.
    """
    annotated = [r for r in records if r.flags]

    def rates(rs: Sequence[MetaRecord]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(rs)}
        for f in FLAGS:
            marked = [r.flags[f] for r in rs if f in r.flags]
            out[f] = sum(marked) / len(marked) if marked else None
        known = [r.flagged for r in rs if r.flagged is not None]
        out["flagged"] = sum(known) / len(known) if known else None
        return out

    summary = rates(annotated)
    packages = sorted({r.package for r in annotated if r.package})
    summary["by_package"] = {p: rates([r for r in annotated if r.package == p]) for p in packages}
    subsets = {"all": annotated, "unflagged": [r for r in annotated if r.flagged is False],
               "flagged": [r for r in annotated if r.flagged]}
    success: dict[str, Any] = {}
    for key, rs in subsets.items():
        entry: dict[str, Any] = {"n": len(rs), "human": _mean([r.human for r in rs if r.human is not None])}
        for name in metrics:
            entry[name] = _mean([r.scores[name] for r in rs if name in r.scores])
        success[key] = entry
    summary["success"] = success
    return summary
