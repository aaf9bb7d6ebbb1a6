"""The meta-evaluation report: Markdown tables, ``meta.json`` and the ROC plot."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.markdown import md_table
from logicval_hf.scoring.meta.analysis import ALL_MODELS as ALL

__all__ = ["compared", "format_markdown", "plot_roc", "write_report"]


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{100 * v:.1f}" if pct else f"{v:.3f}"
    return str(v)


def _verdict_words(result: Mapping[str, Any]) -> str:
    """What the verdicts are: human, known-truth, or both."""
    v = result.get("verdicts") or {}
    known = v.get("known truth", 0)
    human = result["n_records"] - result["n_without_human"] - known
    return "known-truth" if known and not human else "human and known-truth" if known else "human"


def compared(result: Mapping[str, Any]) -> tuple[str, list[list[Any]]]:
    """Every metric side by side over all images (the models pooled): ``(group, rows)``, a row per metric with
    the images, the mean score where the verdict is 1 and where it is 0, the point-biserial correlation, the
    ROC-AUC and, for a binary metric, the agreement (%)."""
    models = result["models"]
    group = ALL if ALL in models else (models[0] if models else "")
    rows = []
    for name in result["metrics"]:
        e = result["by_metric"][name].get(group)
        if e:
            rows.append([name, e["n"], _fmt(e["mean_score_pos"]), _fmt(e["mean_score_neg"]),
                         _fmt(e["point_biserial"]), _fmt(e["roc_auc"]), _fmt(e.get("agreement"), True)])
    return group, rows


def format_markdown(result: Mapping[str, Any]) -> str:
    """The report as Markdown tables (every metric compared, correlation, ROC-AUC, agreement, scene-graph
    accuracy)."""
    models, metrics, bm = result["models"], result["metrics"], result["by_metric"]
    words = _verdict_words(result)
    v = result.get("verdicts") or {}
    parts = [f"# Meta-evaluation against {words} verdicts", ""]
    parts.append(f"{result['n_records']} records; {result['n_without_human']} without a verdict (skipped); "
                 f"{result['n_human_derived']} human verdicts derived from annotated scene graphs"
                 + (f"; {v['known truth']} known-truth verdicts (the solver's verdict on the scene a built-in "
                    "generator intended)" if v.get("known truth") else "") + ".")
    group, rows = compared(result)
    if rows:
        parts += ["", "## Metrics compared", "",
                  f"Every metric against the {words} verdicts over the images of "
                  + ("all models" if group == ALL else f"`{group}`")
                  + ": mean score where the verdict is 1 and where it is 0, point-biserial correlation, ROC-AUC "
                    "(0.5 = chance, 1 = perfect) and, for a binary metric, agreement (%). ROC curves: `roc.png`.",
                  "",
                  md_table(["metric", "images", "mean (verdict 1)", "mean (verdict 0)", "point-biserial", "ROC-AUC",
                            "agreement"], rows)]
    parts += ["", "## Images per model", "",
              md_table(["model", "images", "correct (verdict 1)"],
                        [[m, result["images"][m]["n"], _fmt(result["images"][m]["human_correct"])] for m in models])]

    def per_metric(key: str, pct: bool = False) -> str:
        return md_table(["metric", *models],
                         [[name, *(_fmt(bm[name].get(m, {}).get(key), pct) for m in models)] for name in metrics])

    parts += ["", f"## Point-biserial correlation with {words} verdicts", "", per_metric("point_biserial")]
    parts += ["", "## ROC-AUC (0.5 = chance, 1 = perfect)", "", per_metric("roc_auc")]
    binary = [n for n in metrics if any("agreement" in e for e in bm[n].values())]
    if binary:
        rows = []
        for name in binary:
            for m in models:
                e = bm[name].get(m)
                if e and "agreement" in e:
                    rows.append([name, m, e["n"], _fmt(e["agreement"], True), e["tp"], e["tn"], e["fp"], e["fn"],
                                 _fmt(e["false_positive_share"], True)])
        parts += ["", f"## Exact agreement of binary metrics with {words} verdicts (%)", "",
                  md_table(["metric", "model", "n", "agreement", "TP", "TN", "FP", "FN", "FP share of errors"],
                            rows)]
    flags = result.get("flags") or {}
    if flags:
        fm = list(flags)
        packages = sorted({p for e in flags.values() for p in e["by_package"]})
        rows = [[m, flags[m]["n"], *(_fmt(flags[m]["by_package"].get(p, {}).get("deformed"), True) for p in packages),
                 _fmt(flags[m]["deformed"], True), _fmt(flags[m]["rendering_error"], True),
                 _fmt(flags[m]["empty_scene"], True)] for m in fm]
        parts += ["", "## Images with a deformed object (%, paper Table 4)", "",
                  "From the annotators' scene flags; per package, then over all annotated images, with the rates of "
                  "rendering errors and empty scenes.", "",
                  md_table(["model", "annotated images", *(f"deformed {p}" for p in packages), "deformed (all)",
                            "rendering error", "empty scene"], rows)]
        rows = []
        for m in fm:
            sc = flags[m]["success"]
            for key in ("all", "unflagged", "flagged"):
                rows.append([m, key, sc[key]["n"], _fmt(sc[key]["human"], True),
                             *(_fmt(sc[key].get(n)) for n in metrics)])
        parts += ["", "## Success with and without flagged images", "",
                  "*Flagged*: a rendering error or a deformed object. `human (%)`: human-correct rate; metric "
                  "columns: mean score (for a binary metric such as LogicVal, its success rate).", "",
                  md_table(["model", "images", "n", "human (%)", *metrics], rows)]
    sga = result["scene_graph_accuracy"]
    if sga:
        attrs = [k for k in next(iter(sga.values())) if k not in
                 ("n", "exact", "count", "matched_objects", "precision", "recall")]
        rows = [[m, e["n"], _fmt(e.get("exact"), True), _fmt(e.get("count"), True),
                 *(_fmt(e.get(a), True) for a in attrs), _fmt(e.get("precision"), True),
                 _fmt(e.get("recall"), True)] for m, e in sga.items()]
        match = result.get("matching", {})
        parts += ["", "## Scene-graph extraction accuracy (%)", "",
                  "`exact`: full object list (count, attributes and region) equal to the annotation; attribute "
                  f"columns: accuracy on objects matched by box centre ({match.get('method')}, max distance "
                  f"{match.get('max_distance')} of the image diagonal).", "",
                  md_table(["model", "images", "exact", "count", *attrs, "precision", "recall"], rows)]
    return "\n".join(parts) + "\n"


def plot_roc(result: Mapping[str, Any], path: str | Path) -> Path:
    """ROC curves of every metric, one panel per model (Agg canvas, no GUI)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    models = list(result["models"]) or ["(none)"]
    cols = min(3, len(models))
    rows = math.ceil(len(models) / cols)
    fig = Figure(figsize=(4.2 * cols, 4 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    for k, m in enumerate(models):
        ax = fig.add_subplot(rows, cols, k + 1)
        ax.plot([0, 1], [0, 1], color="0.7", linestyle="--", linewidth=1)
        for name in result["metrics"]:
            e = result["by_metric"][name].get(m)
            if not e or not e["roc"]["fpr"]:
                continue
            ax.plot(e["roc"]["fpr"], e["roc"]["tpr"], drawstyle="default", linewidth=1.6,
                    label=f"{name} (AUC {_fmt(e['roc_auc'])})")
        ax.set_title(f"{m} (n={result['images'].get(m, {}).get('n', 0)})")
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_aspect("equal")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"ROC curves against {_verdict_words(result)} verdicts")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    return path


def write_report(result: Mapping[str, Any], out: str | Path) -> dict[str, Path]:
    """Write ``meta.md``, ``meta.json`` and ``roc.png`` into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "meta.md"
    md.write_text(format_markdown(result), encoding="utf-8")
    js = out / "meta.json"
    js.write_text(json.dumps(result, indent=2, allow_nan=False, default=_json_default), encoding="utf-8")
    png = plot_roc(result, out / "roc.png")
    return {"markdown": md, "json": js, "plot": png}


def _json_default(o: Any) -> Any:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
