"""Stage 3 of the main job: from one generator's records to its summary entry.

The metric's scores (`logicval_hf.scoring.scores.aggregate` plus abstention per UNSAT package); for the
built-in generators also the *known truth* (the solver's verdict on the scene each generator intended, from its
metadata), the agreement between the two, and every disagreement with how the perceived scene differs from the
intended one (`scene_diff`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import Verdict
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.common.matching import match_centres
from logicval_hf.contract.scene import Scene
from logicval_hf.scoring.scores import Record

__all__ = ["LEAST_CERTAIN_SHOWN", "WORST_SHOWN", "analyse", "confidence_summary", "known_truth", "scene_diff",
           "unread_images"]

#: worst disagreements kept per generator in the summary / report (all go to disagreements.json)
WORST_SHOWN = 15
#: least certain images listed per generator (by the perception backend's scene confidence)
LEAST_CERTAIN_SHOWN = 10
#: objects of the intended and the perceived scene are matched when their centres lie this close, as a
#: fraction of the image diagonal
MATCH_REACH = 0.25


def _scores(records: Sequence[Record]) -> dict[str, Any]:
    """`scoring.aggregate` plus the abstention rate per UNSAT package."""
    from logicval_hf.scoring.scores import aggregate

    agg = aggregate(records)
    abst: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.label == "UNSAT" and r.package:
            a = abst.setdefault(r.package, {"n": 0, "abstained": 0})
            a["n"] += 1
            a["abstained"] += int(r.abstained)
    agg["abstention_by_package"] = {k: {"n": v["n"], "rate": v["abstained"] / v["n"]} for k, v in sorted(abst.items())}
    return agg


def _truth_record(row: BenchmarkRow, rec: Mapping[str, Any]) -> Record:
    """The known truth of one generated image: the solver's verdicts on the scene its generator intended."""
    meta = rec["metadata"]
    violated = tuple(meta.get("truth_violated") or ())
    label, n_objects = meta["label"], len(rec["intended"]["objects"])
    strict = Verdict(bool(meta["truth_ok"]), bool(meta["truth_count_ok"]), violated, label, "strict", n_objects)
    relaxed = Verdict(bool(meta["truth_relaxed_ok"]), bool(meta["truth_count_ok"]), violated, label, "relaxed",
                      n_objects)
    return Record(row.spec, row.label, strict, relaxed, row.package, row.id)


def _as_scene(x: Scene | Mapping[str, Any]) -> Scene:
    return x if isinstance(x, Scene) else Scene.from_dict(x)


def scene_diff(intended: Scene | Mapping[str, Any], perceived: Scene | Mapping[str, Any] | None) -> dict[str, Any]:
    """How a perceived scene differs from the intended one: objects matched by box centre (`match_centres`,
    within a quarter of the image diagonal), then attribute and region mismatches counted.

    Returns ``{"missed", "extra", "attribute_errors", "region_errors", "errors" (the sum), "exact", "text"}``.
    """
    import numpy as np

    a = _as_scene(intended)
    if perceived is None:
        return {"missed": len(a), "extra": 0, "attribute_errors": 0, "region_errors": 0, "errors": len(a),
                "exact": False, "text": "no scene (failed generation)"}
    b = _as_scene(perceived)
    w, h = a.image_size
    sx = b.image_size[0] / w if b.image_size[0] else 1.0
    sy = b.image_size[1] / h if b.image_size[1] else 1.0
    centres_a = np.array([o.center for o in a.objects], float).reshape(-1, 2)
    centres_b = np.array([(o.center[0] / sx, o.center[1] / sy) for o in b.objects], float).reshape(-1, 2)
    matches = match_centres(centres_b, centres_a, MATCH_REACH * (w * w + h * h) ** 0.5)
    attr_err, reg_err, notes = 0, 0, []
    for j, i in sorted(matches, key=lambda p: p[1]):
        oa, ob = a.objects[i], b.objects[j]
        for k in a.domain.perceived_attributes:
            if oa.attributes[k] != ob.attributes[k]:
                attr_err += 1
                notes.append(f"obj {i} {k} {oa.attributes[k]}->{ob.attributes[k]}")
        if a.region(i) != b.region(j):
            reg_err += 1
            notes.append(f"obj {i} region {a.region(i)}->{b.region(j)}")
    missed = len(a) - len(matches)
    extra = len(b) - len(matches)
    head = []
    if missed:
        head.append(f"missed {missed}")
    if extra:
        head.append(f"{extra} extra")
    text = "; ".join(head + notes[:6] + (["..."] if len(notes) > 6 else [])) or "scene recovered exactly"
    errors = missed + extra + attr_err + reg_err
    return {"missed": missed, "extra": extra, "attribute_errors": attr_err, "region_errors": reg_err,
            "errors": errors, "exact": errors == 0, "text": text}


def _confusion(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """Accuracy and confusion counts of (truth, metric) pairs; positive = satisfied."""
    tp = sum(1 for t, m in pairs if t and m)
    tn = sum(1 for t, m in pairs if not t and not m)
    fp = sum(1 for t, m in pairs if not t and m)
    fn = sum(1 for t, m in pairs if t and not m)
    n = len(pairs)
    return {"n": n, "accuracy": (tp + tn) / n if n else None, "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def _agreement(rows: Sequence[BenchmarkRow], intended: Mapping[str, dict], records: Mapping[str, Record]
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    strict_pairs, relaxed_pairs = [], []
    by_pkg: dict[str, list[tuple[bool, bool]]] = {}
    disagreements, exact = [], []
    for row in rows:
        rec, v = intended[row.id], records[row.id]
        meta = rec["metadata"]
        t, m = bool(meta["truth_ok"]), v.strict.ok
        strict_pairs.append((t, m))
        relaxed_pairs.append((bool(meta["truth_relaxed_ok"]), v.relaxed.ok))
        by_pkg.setdefault(row.package, []).append((t, m))
        diff = scene_diff(rec["intended"], v.scene)
        exact.append(diff["exact"])
        if t != m:
            disagreements.append({
                "id": row.id, "package": row.package, "label": row.label,
                "truth": t, "metric": m, "kind": "false positive" if m else "false negative",
                "intended_objects": len(rec["intended"]["objects"]),
                "perceived_objects": None if v.scene is None else v.strict.n_objects,
                "scene_errors": diff["errors"], "diff": diff["text"],
                "truth_violated": meta.get("truth_violated"), "metric_violated": list(v.strict.violated),
                "n": row.n, "truth_count_ok": meta.get("truth_count_ok"),
                "metric_count_ok": None if v.scene is None else v.strict.count_ok,
                "generation": meta.get("description"), "confidence": v.confidence,
            })
    disagreements.sort(key=lambda d: (-d["scene_errors"], d["id"]))
    out = _confusion(strict_pairs)
    out["relaxed_accuracy"] = _confusion(relaxed_pairs)["accuracy"]
    out["by_package"] = {p: _confusion(by_pkg[p]) for p in [*PACKAGE_NAMES, *by_pkg] if p in by_pkg}
    out["scene_exact_rate"] = sum(exact) / len(exact) if exact else None
    out["disagreements"] = len(disagreements)
    out["worst"] = [d["id"] for d in disagreements[:WORST_SHOWN]]
    return out, disagreements


def _perturbations(rows: Sequence[BenchmarkRow], intended: Mapping[str, dict]) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for r in rows:
        m = intended[r.id]["metadata"]
        k = f"{m['perturbation']['kind']}/{m['broken']['what']}"
        kinds[k] = kinds.get(k, 0) + 1
    return {"perturbations": dict(sorted(kinds.items())),
            "inexact_perturbations": [r.id for r in rows if not intended[r.id]["metadata"].get("exact", True)]}


def known_truth(rows: Sequence[BenchmarkRow], intended: Mapping[str, dict] | None) -> dict[str, bool] | None:
    """``{id: whether the intended scene satisfies its spec}`` of a built-in generator; None for a folder."""
    if intended is None:
        return None
    return {r.id: bool(intended[r.id]["metadata"]["truth_ok"]) for r in rows}


def confidence_summary(rows: Sequence[BenchmarkRow], records: Mapping[str, Record],
                       truth: Mapping[str, bool] | None = None) -> dict[str, Any] | None:
    """How sure the perception backend was of its scene graphs (`Scene.confidence`): their number, mean and
    lowest, and the `LEAST_CERTAIN_SHOWN` least certain images, lowest first (the ones to look at); None when
    the backend gives no confidence."""
    rated = [(c, r) for r in rows if (c := records[r.id].confidence) is not None]
    if not rated:
        return None
    rated.sort(key=lambda cr: (cr[0], cr[1].id))
    least = []
    for c, r in rated[:LEAST_CERTAIN_SHOWN]:
        rec = records[r.id]
        least.append({"id": r.id, "package": r.package, "confidence": c, "ok": rec.strict.ok,
                      "truth": None if truth is None else truth[r.id], "violated": list(rec.strict.violated),
                      "n_objects": rec.strict.n_objects, "count_ok": rec.strict.count_ok, "n": r.n,
                      "label": rec.label})
    values = [c for c, _ in rated]
    return {"n": len(values), "mean": sum(values) / len(values), "min": values[0], "least_certain": least}


def unread_images(rows: Sequence[BenchmarkRow], records: Mapping[str, Record], min_confidence: float | None,
                  backend: str = "clevr") -> dict[str, str]:
    """``{id: why}`` of the images set apart under ``min_confidence`` (`logicval_hf.scoring.judge.unread_reason`);
    a failed generation (no scene) is a failure, never unread. Empty without a minimum."""
    from logicval_hf.scoring.judge import unread_reason

    out: dict[str, str] = {}
    for r in rows:
        rec = records[r.id]
        why = None if rec.scene is None else unread_reason(rec.confidence, min_confidence, backend)
        if why is not None:
            out[r.id] = why
    return out


def analyse(name: str, folder: Path | None, rows: Sequence[BenchmarkRow], records: Mapping[str, Record],
            failed: Mapping[str, Mapping[str, str]], intended: Mapping[str, dict] | None,
            unread: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One generator's summary entry (`logicval_hf.job.report.GENERATOR_KEYS`) and its disagreements with the
    known truth (none for a folder of images: it has no known truth).

    Args:
        name: the generator.
        folder: its folder of images (None: a built-in generator).
        rows: the rows it is scored on.
        records: a `Record` per id.
        failed: why each failed generation failed.
        intended: a built-in generator's intended scenes and metadata by id (the known truth).
        unread: ``{id: why}`` of the images set apart under a minimum confidence (`unread_images`): every score,
            the known truth's and the agreement included, is over the other rows.
    Returns:
        The entry and the disagreements.
    """
    scored = [r for r in rows if r.id not in (unread or {})]
    entry: dict[str, Any] = {
        "kind": "builtin" if folder is None else "folder",
        "folder": str(folder) if folder is not None else None,
        "n_images": sum(1 for r in rows if failed.get(r.id, {}).get("failed") != "missing"),
        "missing": [r.id for r in rows if failed.get(r.id, {}).get("failed") == "missing"],
        "unreadable": [r.id for r in rows if failed.get(r.id, {}).get("failed") == "unreadable"],
        "unreadable_reasons": {r.id: failed[r.id].get("error") or "unreadable" for r in rows
                               if failed.get(r.id, {}).get("failed") == "unreadable"},
        "metric": _scores([records[r.id] for r in scored]),
        "truth": None,
        "agreement": None,
    }
    entry["confidence"] = confidence_summary(rows, records, known_truth(rows, intended))
    if unread is not None:
        entry["unread"] = {"n_read": sum(1 for r in scored if records[r.id].scene is not None),
                           "n_unread": len(unread), "images": [{"id": i, "reason": why} for i, why in unread.items()]}
    if intended is None:
        return entry, []
    changes = _perturbations(scored, intended) if name == "perturbed" else {}
    entry["truth"] = _scores([_truth_record(r, intended[r.id]) for r in scored])
    entry["agreement"], disagreements = _agreement(scored, intended, records)
    entry.update(changes)
    return entry, disagreements
