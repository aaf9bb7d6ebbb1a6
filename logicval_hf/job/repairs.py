"""Repairs in the main job: every perceived scene's cheapest repair (`logicval_hf.repair`), the repair-cost
distribution per generator, and, when asked (``run(..., repair=True)``, ``logicval run --repair``), one round of
self-correction on the built-in generators' images (`logicval_hf.repairs.loop`: the generator's renderer draws the
repaired scene, the perception backend reads it again, the solver verifies it).

Repairs are computed on the run's worker processes and kept in ``repairs/<generator>.json`` (id -> the repair's JSON
and a key of its spec and scene), written atomically as they come (every `SAVE_EVERY` repairs, so an interrupted run
keeps them), and reused on resume while the key matches. ``cheapest_repairs=False`` (``logicval run --no-repair``)
skips this stage.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.job.workers import WORKER, Workers
from logicval_hf.scoring.scores import Record

__all__ = ["SAVE_EVERY", "repair_records", "repair_summary", "self_correct"]

#: repairs computed between two writes of ``repairs/<generator>.json``
SAVE_EVERY = 64


def _key(rec: Record) -> str:
    text = rec.spec.key() + (rec.scene.to_json() if rec.scene is not None else "")
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _repair_task(task: tuple[str, Spec, Scene]) -> tuple[tuple[str, dict[str, Any]], float]:
    """One scene's repair (JSON, or ``{"error": ...}``), on a worker's solver: ``((id, repair), CPU seconds)``."""
    from logicval_hf.repairs.api import REPAIR_TIMEOUT
    from logicval_hf.repairs.costs import repair_many
    from logicval_hf.repairs.model import Repair

    c0 = time.process_time()
    rid, spec, scene = task
    (r,) = repair_many([(spec, scene)], timeout=REPAIR_TIMEOUT, solver=WORKER.get("solver"))
    return (rid, r.to_dict() if isinstance(r, Repair) else {"error": r}), time.process_time() - c0


def repair_records(out: Path, name: str, records: Mapping[str, Record], progress: bool = False,
                   workers: Workers | None = None) -> tuple[dict[str, dict], float]:
    """The repair (JSON) of every record with a perceived scene, reusing ``repairs/<name>.json``; ``{"error": ...}``
    where there is none to give (a scene past the repair's limit, a spec not labelled within the budget).

    Args:
        out: the run's folder.
        name: the generator.
        records: a `Record` per id.
        progress: a progress bar.
        workers: the run's worker processes (None: here).
    Returns:
        The repairs by id, and the CPU seconds the worker processes spent on them.
    """
    from tqdm import tqdm

    path = out / "repairs" / f"{name}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        cached = {}
    cached = cached if isinstance(cached, dict) else {}
    keys = {i: _key(rec) for i, rec in records.items() if rec.scene is not None}
    done: dict[str, dict] = {i: cached[i] for i, key in keys.items()
                             if isinstance(cached.get(i), dict) and cached[i].get("key") == key}
    tasks = [(i, records[i].spec, records[i].scene) for i in keys if i not in done]
    workers = workers or Workers(1)
    results = workers.imap(_repair_task, tasks)
    cpu = 0.0
    with tqdm(total=len(tasks), desc=f"repair {name}", disable=not progress, unit="img", leave=False) as bar:
        for k, ((i, repair), c) in enumerate(results, 1):
            done[i] = {"key": keys[i], "repair": repair}
            cpu += c
            bar.update()
            if k % SAVE_EVERY == 0:  # an interrupted run keeps what is done
                atomic_write_json(path, done, indent=1)
    done = {i: done[i] for i in keys}  # in the records' order, without the repairs of scenes gone
    atomic_write_json(path, done, indent=1)
    return {i: d["repair"] for i, d in done.items()}, 0.0 if workers.runs_here(len(tasks)) else cpu


def repair_summary(repairs: Mapping[str, Mapping[str, Any]], records: Mapping[str, Record]) -> dict[str, Any]:
    """The repair-cost distribution: images, mean and median cost, images per cost, per package, how many repairs
    were not proven optimal within the budget and how many images got none (``errors``)."""
    costs = {i: int(r["cost"]) for i, r in repairs.items() if "error" not in r}
    by_package: dict[str, list[int]] = {}
    for i, c in costs.items():
        package = records[i].package
        if package:
            by_package.setdefault(package, []).append(c)
    return {
        "n": len(costs),
        "mean": statistics.fmean(costs.values()) if costs else None,
        "median": statistics.median(costs.values()) if costs else None,
        "costs": {str(k): v for k, v in sorted(Counter(costs.values()).items())},
        "by_package": {p: statistics.fmean(v) for p, v in by_package.items()},
        "unproven": sum(not r["optimal"] for r in repairs.values() if "error" not in r),
        "errors": sum("error" in r for r in repairs.values()),
    }


def self_correct(name: str, records: Mapping[str, Record], seed: int, size: tuple[int, int], backend: str,
                 renderer: str = "numpy", assets: str | Path | None = None, progress: bool = False,
                 backend_settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One round of self-correction on ``name``'s images (`logicval_hf.repairs.loop.summarise` of the outcome)."""
    from tqdm import tqdm

    from logicval_hf.generation.builtin import make_generator, seed_for
    from logicval_hf.repairs.loop import correct, summarise

    read = _reader(backend, backend_settings or {})
    editor = make_generator("oracle", seed=seed, image_size=size, renderer=renderer,
                            assets=None if assets is None else str(assets))
    items = [(i, rec.spec, rec.scene) for i, rec in records.items() if rec.scene is not None]
    with tqdm(total=len(items), desc=f"self-correct {name}", disable=not progress, unit="img", leave=False) as bar:
        outcome = correct(items, lambda rid, r: editor.render(r.scene, seed_for("self-correct", name, rid))[0],
                          read, progress=bar.update)
    return summarise(outcome)


def _reader(backend: str, settings: Mapping[str, Any]) -> Callable[[Sequence[Any]], list[Scene]]:
    """The judge's reading of the edited images (the benchmark's specs are CLEVR: the backend's default domain);
    an image it cannot read stops the round with its error, as a broken renderer should."""
    from logicval_hf.scoring.judge import JudgeOptions, read_scenes

    options = JudgeOptions(backend=backend, backend_settings=settings)

    def read(images: Sequence[Any]) -> list[Scene]:
        scenes = read_scenes(images, None, options)
        for s in scenes:
            if not isinstance(s, Scene):
                raise s
        return scenes  # type: ignore[return-value]

    return read
