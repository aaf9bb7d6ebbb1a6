"""The baseline metrics of a run (``logicval run --baselines``): built once, scoring every image beside LogicVal.

Stage 2b, after LogicVal's verdicts (`logicval_hf.job.score`): the baselines asked for
(`RunOptions.baselines`: CLIPScore, the VLM judge, Soft-TIFA; `logicval_hf.scoring.baselines`) score each image
of a generator against its row's prompt (or sub-questions), in batches, here in the main process (a model is
loaded once). Each image's records go into its verdict file, ``verdicts/<generator>/<id>.json``, under
``baselines`` (``{name: {"score", ..., "fingerprint"}}``), and are reused on resume while the verdict file stands
(same image, spec and backend) and the baseline's fingerprint (code, decisive settings, weights) is unchanged. A
failed generation gets no score, with the reason.

`summarise` gives the generator's ``baselines`` summary entry; `write_scores` writes ``scores.jsonl``: one line
per image with LogicVal's verdict, every baseline's score and the known truth (built-in generators), the input of
``logicval meta RUN_DIR``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.common.atomic import atomic_write_json, atomic_write_text
from logicval_hf.job.cache import public_settings, read_json
from logicval_hf.job.options import JobContext

__all__ = ["BATCH", "RunBaselines", "describe", "score_generator", "score_images", "start", "summarise",
           "write_scores"]

log = logging.getLogger(__name__)

#: images scored per batch (a verdict file is updated after each)
BATCH = 32


@dataclass(frozen=True)
class RunBaselines:
    """The baselines of one run: each metric, its checked settings and its fingerprint, by name."""

    metrics: Mapping[str, Any]
    settings: Mapping[str, Mapping[str, Any]]
    fingerprints: Mapping[str, str]


def start(names: Iterable[str], settings: Mapping[str, Mapping[str, Any]], progress: bool = True
          ) -> RunBaselines | None:
    """The run's baselines, built before any work (a missing extra, weight or endpoint: one line); None without.
    Without ``progress``, the loading bars of ``transformers`` stay off too."""
    names = list(names)
    if not names:
        return None
    from logicval_hf.scoring.baselines.factory import baseline_fingerprint, build_baselines, check_baselines

    checked = check_baselines(names, settings)
    log.info("baselines: loading %s", ", ".join(names))
    with _quiet_loading(not progress):
        metrics = build_baselines({n: settings.get(n) or {} for n in names})
    return RunBaselines(metrics, checked, {n: baseline_fingerprint(n, s) for n, s in checked.items()})


@contextlib.contextmanager
def _quiet_loading(quiet: bool) -> Iterator[None]:
    """``transformers``' progress bars off while models load (when asked, and when it is imported already: a
    baseline that needs it has imported it by then, one that does not never loads it)."""
    hf_logging = sys.modules.get("transformers.utils.logging") if quiet else None
    if hf_logging is None or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()


def score_images(baselines: RunBaselines, out: Path, generator: str, rows: Sequence[BenchmarkRow],
                 images: Mapping[str, Path | None], failed: Mapping[str, Mapping[str, str]], progress: bool
                 ) -> dict[str, dict[str, dict[str, Any]]]:
    """``{id: {baseline: record}}`` for every row: reused from its verdict file, or scored now and written there.

    Args:
        baselines: the run's baselines.
        out: the run's folder.
        generator: the generator's name (its verdict folder).
        rows: the rows it was scored on.
        images: each row's image file (None: missing).
        failed: the failed generations (no image, or one that cannot be read): no score.
        progress: a tqdm bar on stderr.
    """
    from tqdm.auto import tqdm

    from logicval_hf.scoring.baselines.items import baseline_item, prompt_fields, score_baselines

    vdir = out / "verdicts" / generator
    result: dict[str, dict[str, dict[str, Any]]] = {}
    todo: list[tuple[BenchmarkRow, Path, dict[str, Any], list[str]]] = []
    for row in rows:
        path = images.get(row.id)
        if row.id in failed or path is None:
            why = f"no score: failed generation ({failed.get(row.id, {}).get('failed', 'missing')})"
            result[row.id] = {n: {"score": None, "reason": why} for n in baselines.metrics}
            continue
        verdict = read_json(vdir / f"{row.id}.json")
        if not isinstance(verdict, dict):  # a verdict file is written for every image that was read
            result[row.id] = {n: {"score": None, "reason": "no verdict file"} for n in baselines.metrics}
            continue
        have = verdict.get("baselines")
        have = have if isinstance(have, dict) else {}
        result[row.id] = {n: r for n, r in have.items()
                          if n in baselines.metrics and isinstance(r, dict) and
                          r.get("fingerprint") == baselines.fingerprints[n]}
        missing = [n for n in baselines.metrics if n not in result[row.id]]
        if missing:
            todo.append((row, path, verdict, missing))
    log.info("baselines/%s: scoring %d image(s) with %s; %d reused", generator, len(todo),
             ", ".join(baselines.metrics), len(rows) - len(todo))
    fields = prompt_fields(baselines.metrics)
    tifa = any(m.name == "soft_tifa" for m in baselines.metrics.values())
    with tqdm(total=len(todo), desc=f"baselines {generator}", unit="img", disable=not progress, leave=False,
              file=sys.stderr) as bar:
        for start_at in range(0, len(todo), BATCH):
            batch = todo[start_at:start_at + BATCH]
            for name in baselines.metrics:
                part = [b for b in batch if name in b[3]]
                if not part:
                    continue
                scored = score_baselines({name: baselines.metrics[name]}, [str(p) for _, p, _, _ in part],
                                         [baseline_item(r, fields, tifa) for r, _, _, _ in part])[name]
                for (row, _, _, _), rec in zip(part, scored, strict=True):
                    result[row.id][name] = {**rec, "fingerprint": baselines.fingerprints[name]}
            for row, _, verdict, _ in batch:
                verdict["baselines"] = {**(verdict.get("baselines") or {}), **result[row.id]}
                atomic_write_json(vdir / f"{row.id}.json", verdict)
            bar.update(len(batch))
    return result


def score_generator(ctx: JobContext, name: str, items: Sequence[tuple[BenchmarkRow, Path | None]],
                    failed: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, dict[str, Any]]]:
    """`score_images` for one generator of the run ``ctx``, timed as ``baselines/<name>`` (empty without
    baselines)."""
    if ctx.baselines is None:
        return {}
    with ctx.timer.stage(f"baselines/{name}"):
        return score_images(ctx.baselines, ctx.out, name, [r for r, _ in items], {r.id: p for r, p in items},
                            failed, ctx.options.progress)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarise(names: Iterable[str], rows: Sequence[BenchmarkRow], records: Mapping[str, Mapping[str, Any]],
              truth: Mapping[str, bool] | None) -> dict[str, Any]:
    """One generator's ``baselines`` entry: per baseline the mean score over the images it scored, how many it
    scored and did not, the mean per package and, with a known truth, the ROC-AUC and point-biserial correlation
    of its scores with it (None where the truth is all one way)."""
    from logicval_hf.scoring.meta.statistics import point_biserial, roc_auc

    out: dict[str, Any] = {}
    for name in names:
        scored = [(r, records[r.id][name]["score"]) for r in rows if records[r.id][name].get("score") is not None]
        packages = sorted({r.package for r, _ in scored})
        entry: dict[str, Any] = {
            "mean": _mean([s for _, s in scored]), "n_scored": len(scored), "n_unscored": len(rows) - len(scored),
            "by_package": {p: {"n": sum(1 for r, _ in scored if r.package == p),
                               "mean": _mean([s for r, s in scored if r.package == p])} for p in packages},
            "roc_auc": None, "point_biserial": None,
        }
        if truth is not None and scored:
            scores, verdicts = [s for _, s in scored], [int(truth[r.id]) for r, _ in scored]
            entry["roc_auc"], entry["point_biserial"] = roc_auc(scores, verdicts), point_biserial(scores, verdicts)
        out[name] = entry
    return out


def describe(baselines: RunBaselines, generators: Sequence[Any]) -> dict[str, Any]:
    """The summary's ``baselines``: each one's ``settings`` and ``fingerprint`` (``metrics``) and, over the images
    of the built-in generators pooled, how well each metric (LogicVal's verdict too, as 0/1) ranks them by the
    known truth (``known_truth``: ``n``, ``generators``, ``by_metric``: ``roc_auc`` and ``point_biserial``)."""
    from logicval_hf.scoring.meta.statistics import point_biserial, roc_auc

    scores: dict[str, list[tuple[float, int]]] = {"logicval": [], **{n: [] for n in baselines.metrics}}
    builtin = [g for g in generators if g.truth is not None]
    for g in builtin:
        truth = g.truth
        for row in g.rows:
            if row.id not in (g.unread or {}):
                scores["logicval"].append((float(g.scored.records[row.id].strict.ok), int(truth[row.id])))
            for name, rec in (g.baselines.get(row.id) or {}).items():
                if rec.get("score") is not None:
                    scores[name].append((float(rec["score"]), int(truth[row.id])))
    by_metric = {}
    for name, pairs in scores.items():
        s, t = [p[0] for p in pairs], [p[1] for p in pairs]
        by_metric[name] = {"n": len(pairs), "roc_auc": roc_auc(s, t) if pairs else None,
                           "point_biserial": point_biserial(s, t) if pairs else None}
    return {"metrics": {n: {"settings": public_settings(baselines.settings[n]),
                            "fingerprint": baselines.fingerprints[n]} for n in baselines.metrics},
            "known_truth": {"generators": [g.name for g in builtin], "by_metric": by_metric} if builtin else None}


def write_scores(out: Path, generators: Sequence[Any]) -> Path:
    """``scores.jsonl``: per generator and image, ``id``, ``model`` (the generator), ``package``, ``label``,
    ``spec_json``, ``known_truth`` (1/0; built-in generators only), ``logicval`` (1/0; null when set apart as
    unread), each baseline's score by name, and ``predicted_scene`` (the scene graph LogicVal read)."""
    import json

    lines = []
    for g in generators:
        truth = g.truth
        for row in g.rows:
            rec = g.scored.records[row.id]
            line: dict[str, Any] = {"id": row.id, "model": g.name, "package": row.package, "label": row.label,
                                    "spec_json": row.spec_json}
            if truth is not None:
                line["known_truth"] = int(truth[row.id])
            line["logicval"] = None if row.id in (g.unread or {}) else int(rec.strict.ok)
            for name, b in (g.baselines.get(row.id) or {}).items():
                line[name] = b.get("score")
            if rec.scene is not None:
                line["predicted_scene"] = rec.scene.to_dict()
            lines.append(json.dumps(line, separators=(",", ":")))
    path = out / "scores.jsonl"
    atomic_write_text(path, "\n".join(lines) + "\n" if lines else "")
    return path
