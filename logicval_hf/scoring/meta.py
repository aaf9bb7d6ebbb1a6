"""Meta-evaluation: how well automatic metrics agree with human verdicts (paper §4.4, §6; Tables 5–7,
Figure 5).

Input: one record per (model, image) with the human verdict ``h`` (1 = the image satisfies its spec) and
one or more metric scores ``s``. Per metric and model (and pooled over models) this computes

* the point-biserial correlation between ``s`` and ``h`` (Pearson's r with a binary variable; Table 5);
* the ROC-AUC of ``s`` for ``h`` from ranks (Mann-Whitney U with mid-ranks, so ties count one half;
  Figure 5), with the ROC curve for the plot;
* for binary metrics (every score 0 or 1, e.g. LogicVal): the exact agreement with ``h`` and the confusion
  counts (Table 6);

and, when predicted and human-annotated scene graphs are given, the scene-graph extraction accuracy per model
(Table 7): exact recovery of the full object list (count, colour, shape, material and region, as multisets),
count accuracy, and per-attribute accuracy on objects matched by box centre (Hungarian or greedy, within a
distance threshold), with detection precision and recall.

File formats (`load_records`): CSV, JSON Lines or a JSON list. *Wide*: columns ``id``, ``model``, ``human``
and one numeric column per metric. *Long*: columns ``id``, ``model``, ``metric``, ``score``, ``human``.
Optional columns: ``predicted_scene`` (or ``scene``) and ``annotated_scene`` (scene-graph JSON), and
``spec_json``: a record without ``human`` but with an annotated scene and a spec gets the paper's human
verdict ``h = [annotated scene |= spec]`` (an empty scene for UNSAT specs).

Annotation flags (the Space's Annotate export, ``annotations.jsonl`` / ``flags.jsonl``, or columns of the input):
``rendering_error``, ``deformed`` and ``empty_scene`` (0/1). With them, `meta_evaluate` reports per model (and
per package) the rate of each flag, the rate of images with a deformed object (paper Table 4), and the success
rates with and without the *flagged* images (a rendering error or a deformed object; an empty scene is an
answer, not a defect): the human verdicts' and each metric's mean score.

`meta_evaluate` returns a JSON-ready dict; `format_markdown` and `plot_roc` render it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from logicval_hf.common.markdown import md_table
from logicval_hf.contract.scene import Scene

__all__ = [
    "MetaRecord", "point_biserial", "roc_auc", "roc_curve", "agreement", "match_objects", "scene_graph_accuracy",
    "load_records", "meta_evaluate", "format_markdown", "plot_roc", "write_report", "FLAGS", "DEFECT_FLAGS",
    "flag_summary",
]

#: columns that are never metric scores in the wide format
RESERVED = frozenset({
    "id", "model", "human", "metric", "score", "spec_json", "predicted_scene", "annotated_scene", "scene",
    "package", "label", "prompt", "image", "path", "file", "split", "n", "m",
    "rendering_error", "deformed", "empty_scene", "notes", "n_boxes", "updated_by", "updated_at", "annotation",
})
#: the annotation flags of the Space's Annotate tab (`logicval_hf.space.annotate.FLAGS`)
FLAGS = ("rendering_error", "deformed", "empty_scene")
#: flags that mark a defective image (an empty scene is an answer: correct for UNSAT specifications)
DEFECT_FLAGS = ("rendering_error", "deformed")
ALL_MODELS = "all"
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f"}


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Scene-graph extraction accuracy
# ---------------------------------------------------------------------------------------------
def _centres(scene: Scene) -> np.ndarray:
    w, h = scene.image_size
    return np.array([[o.center[0] / w, o.center[1] / h] for o in scene.objects], dtype=float).reshape(-1, 2)


def match_objects(predicted: Scene, annotated: Scene, method: str = "hungarian",
                  max_distance: float | None = 0.1) -> list[tuple[int, int]]:
    """Pairs ``(predicted index, annotated index)`` matched by box centre.

    Centres are normalised by each scene's image size (annotations may be at another resolution); the
    distance is ``sqrt((dx^2 + dy^2) / 2)`` in those units, so 1 is the image diagonal. ``"hungarian"``
    minimises the total distance; ``"greedy"`` takes the closest remaining pair first. Pairs farther apart
    than ``max_distance`` are not matched (``None``: no limit).
    """
    if method not in ("hungarian", "greedy"):
        raise ValueError(f"matching method must be 'hungarian' or 'greedy', got {method!r}")
    if not predicted.objects or not annotated.objects:
        return []
    a, b = _centres(predicted), _centres(annotated)
    dist = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / 2)
    limit = math.inf if max_distance is None else float(max_distance)
    if method == "hungarian":
        from scipy.optimize import linear_sum_assignment

        big = 1e6
        cost = np.where(dist <= limit, dist, big)
        rows, cols = linear_sum_assignment(cost)
        pairs = [(int(i), int(j)) for i, j in zip(rows, cols) if dist[i, j] <= limit]
    else:
        pairs = []
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


def _object_keys(scene: Scene, attributes: Sequence[str]) -> Counter:
    regions = scene.regions()
    return Counter(tuple([*(o.attributes[a] for a in attributes), regions[i]]) for i, o in enumerate(scene.objects))


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
    correct = Counter()
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


# ---------------------------------------------------------------------------------------------
# Records and loading
# ---------------------------------------------------------------------------------------------
@dataclass
class MetaRecord:
    """One (model, image): the human verdict, metric scores, and optionally scene graphs and the spec."""

    id: str
    model: str
    human: int | None
    scores: dict[str, float] = field(default_factory=dict)
    predicted_scene: Scene | None = None
    annotated_scene: Scene | None = None
    spec_json: str | None = None
    flags: dict[str, bool] = field(default_factory=dict)
    package: str | None = None

    @property
    def flagged(self) -> bool | None:
        """A rendering error or a deformed object (`DEFECT_FLAGS`); ``None`` without flag annotations."""
        if not any(f in self.flags for f in DEFECT_FLAGS):
            return None
        return any(self.flags.get(f, False) for f in DEFECT_FLAGS)


_PACKAGE_PREFIX = re.compile(r"^(\d+(?:UN)?SAT)-")


def _package_of(rid: str, value: Any) -> str | None:
    if not _missing(value):
        return str(value)
    m = _PACKAGE_PREFIX.match(rid)
    return m.group(1) if m else None


def _read_flags(rec: MetaRecord, r: Mapping[str, Any], where: str) -> None:
    for f in FLAGS:
        if not _missing(r.get(f)):
            rec.flags[f] = bool(_human(r[f], f"{where} {f}"))


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip() == "") or (isinstance(v, float) and math.isnan(v))


def _human(v: Any, where: str) -> int | None:
    if _missing(v):
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)) and v in (0, 1):
        return int(v)
    t = str(v).strip().lower()
    if t in _TRUE:
        return 1
    if t in _FALSE:
        return 0
    try:
        f = float(t)
    except ValueError:
        f = None
    if f in (0.0, 1.0):
        return int(f)
    raise ValueError(f"{where}: human verdict must be 0 or 1, got {v!r}")


def _number(v: Any) -> float | None:
    if _missing(v):
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    t = str(v).strip().lower()
    if t in ("true", "false"):
        return float(t == "true")
    try:
        f = float(t)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _scene(v: Any, where: str) -> Scene | None:
    if _missing(v):
        return None
    from logicval_hf.perception.given import to_scene

    return to_scene(v, what=where)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8-sig")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
        return [dict(r) for r in reader]
    stripped = text.lstrip()
    if suffix == ".json" or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ValueError(f"{path}: expected a JSON list of objects (one per image)")
        return data
    if suffix == ".jsonl" or stripped.startswith("{"):
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path} line {lineno}: not valid JSON ({e})") from None
                if not isinstance(r, dict):
                    raise ValueError(f"{path} line {lineno}: expected a JSON object")
                rows.append(r)
        return rows
    reader = csv.DictReader(io.StringIO(text))
    return [dict(r) for r in reader]


def load_records(path: str | Path, annotations: str | Path | None = None,
                 metrics: Sequence[str] | None = None) -> list[MetaRecord]:
    """Read records (wide or long format; see the module docstring) and join annotations.

    ``annotations``: a file of ``{"id", optional "model", "scene" | "annotated_scene", optional
    "predicted_scene"}`` records (JSON Lines / JSON list / CSV), matched by (model, id) then by id.
    ``metrics`` restricts the metric columns. Raises `ValueError` naming the row of bad input.
    """
    path = Path(path)
    rows = _read_rows(path)
    if not rows:
        raise ValueError(f"{path}: no rows")
    long = all("metric" in r and "score" in r for r in rows)
    records: dict[tuple[str, str], MetaRecord] = {}
    for k, r in enumerate(rows):
        where = f"{path} row {k + 1}"
        if _missing(r.get("id")):
            raise ValueError(f"{where}: missing 'id'")
        rid = str(r["id"])
        model = str(r.get("model")) if not _missing(r.get("model")) else "model"
        key = (model, rid)
        rec = records.get(key)
        if rec is None:
            rec = records[key] = MetaRecord(rid, model, None)
        h = _human(r.get("human"), where)
        if h is not None:
            if rec.human is not None and rec.human != h:
                raise ValueError(f"{where}: conflicting human verdicts for model {model!r}, id {rid!r}")
            rec.human = h
        if long:
            name = str(r["metric"])
            s = _number(r["score"])
            if s is None and not _missing(r["score"]):
                raise ValueError(f"{where}: score {r['score']!r} is not a number")
            if s is not None and (metrics is None or name in metrics):
                rec.scores[name] = s
        else:
            for name, v in r.items():
                if name in RESERVED or (metrics is not None and name not in metrics):
                    continue
                s = _number(v)
                if s is not None:
                    rec.scores[name] = s
                elif not _missing(v) and metrics is not None:
                    raise ValueError(f"{where}: {name} = {v!r} is not a number")
        pred = r.get("predicted_scene", r.get("scene"))
        if not _missing(pred):
            rec.predicted_scene = _scene(pred, f"{where} predicted_scene")
        if not _missing(r.get("annotated_scene")):
            rec.annotated_scene = _scene(r["annotated_scene"], f"{where} annotated_scene")
        if not _missing(r.get("spec_json")):
            rec.spec_json = r["spec_json"] if isinstance(r["spec_json"], str) else json.dumps(r["spec_json"])
        _read_flags(rec, r, where)
        rec.package = rec.package or _package_of(rid, r.get("package"))
    if not long and metrics is None:  # a wide column is a metric only if every non-empty value is a number
        numeric = {name for r in rows for name in r if name not in RESERVED}
        for r in rows:
            numeric -= {n for n, v in r.items() if n in numeric and not _missing(v) and _number(v) is None}
        for rec in records.values():
            rec.scores = {n: s for n, s in rec.scores.items() if n in numeric}
    if annotations is not None:
        _join_annotations(list(records.values()), Path(annotations))
    return list(records.values())


def _join_annotations(records: list[MetaRecord], path: Path) -> None:
    rows = _read_rows(path)
    by_key: dict[tuple[str | None, str], dict[str, Any]] = {}
    for k, r in enumerate(rows):
        if _missing(r.get("id")):
            raise ValueError(f"{path} row {k + 1}: missing 'id'")
        model = None if _missing(r.get("model")) else str(r["model"])
        by_key[(model, str(r["id"]))] = r
    for rec in records:
        r = by_key.get((rec.model, rec.id)) or by_key.get((None, rec.id))
        if r is None:
            continue
        where = f"{path} id {rec.id!r}"
        ann = next((r[c] for c in ("annotated_scene", "scene", "annotation") if not _missing(r.get(c))), None)
        if ann is not None:
            rec.annotated_scene = _scene(ann, f"{where} annotated scene")
        if not _missing(r.get("predicted_scene")):
            rec.predicted_scene = _scene(r["predicted_scene"], f"{where} predicted_scene")
        if rec.spec_json is None and not _missing(r.get("spec_json")):
            rec.spec_json = r["spec_json"] if isinstance(r["spec_json"], str) else json.dumps(r["spec_json"])
        if rec.human is None and not _missing(r.get("human")):
            rec.human = _human(r["human"], where)
        _read_flags(rec, r, where)
        if rec.package is None:
            rec.package = _package_of(rec.id, r.get("package"))


def _derive_human(records: Sequence[MetaRecord]) -> int:
    """Fill missing human verdicts from annotated scenes and specs (h = annotated scene |= spec)."""
    todo = [r for r in records if r.human is None and r.annotated_scene is not None and r.spec_json]
    if not todo:
        return 0
    from logicval_hf.asp.solver import default_solver

    verdicts = default_solver().verify_many([(r.spec_json, r.annotated_scene) for r in todo], count="strict")
    for r, v in zip(todo, verdicts):
        r.human = int(v.ok)
    return len(todo)


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------
def meta_evaluate(records: Sequence[MetaRecord], matching: str = "hungarian",
                  max_distance: float | None = 0.1) -> dict[str, Any]:
    """Point-biserial correlation, ROC-AUC (+ curve), agreement (binary metrics) per metric and model, and
    scene-graph accuracy per model. Models are reported one by one and, if there are several, pooled as
    ``"all"``."""
    records = list(records)
    derived = _derive_human(records)
    usable = [r for r in records if r.human is not None]
    models = sorted({r.model for r in usable})
    groups = {m: [r for r in usable if r.model == m] for m in models}
    if len(models) > 1:
        groups[ALL_MODELS] = usable
    metrics = sorted({name for r in usable for name in r.scores})
    result: dict[str, Any] = {
        "n_records": len(records), "n_without_human": len(records) - len(usable), "n_human_derived": derived,
        "models": list(groups), "metrics": metrics,
        "images": {m: {"n": len(rs), "human_correct": sum(r.human for r in rs) / len(rs) if rs else None}
                   for m, rs in groups.items()},
        "by_metric": {},
        "scene_graph_accuracy": {},
        "matching": {"method": matching, "max_distance": max_distance},
    }
    for name in metrics:
        per_model = {}
        for m, rs in groups.items():
            pairs = [(r.scores[name], r.human) for r in rs if name in r.scores]
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
        pairs = [(r.predicted_scene, r.annotated_scene) for r in rs
                 if r.predicted_scene is not None and r.annotated_scene is not None]
        if pairs:
            result["scene_graph_accuracy"][m] = scene_graph_accuracy(pairs, matching, max_distance)
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


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{100 * v:.1f}" if pct else f"{v:.3f}"
    return str(v)


def format_markdown(result: Mapping[str, Any]) -> str:
    """The report as Markdown tables (correlation, ROC-AUC, agreement, scene-graph accuracy)."""
    models, metrics, bm = result["models"], result["metrics"], result["by_metric"]
    parts = ["# Meta-evaluation against human verdicts", ""]
    parts.append(f"{result['n_records']} records; {result['n_without_human']} without a human verdict (skipped); "
                 f"{result['n_human_derived']} human verdicts derived from annotated scene graphs.")
    parts += ["", "## Images per model", "",
              md_table(["model", "images", "human-correct"],
                        [[m, result["images"][m]["n"], _fmt(result["images"][m]["human_correct"])] for m in models])]

    def per_metric(key: str, pct: bool = False) -> str:
        return md_table(["metric", *models],
                         [[name, *(_fmt(bm[name].get(m, {}).get(key), pct) for m in models)] for name in metrics])

    parts += ["", "## Point-biserial correlation with human verdicts", "", per_metric("point_biserial")]
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
        parts += ["", "## Exact agreement of binary metrics with human verdicts (%)", "",
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
    fig.suptitle("ROC curves against human verdicts")
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
