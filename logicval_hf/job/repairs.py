"""Repairs in the main job: every perceived scene's cheapest repair (`logicval_hf.repair`), the repair-cost
distribution per generator, and, when asked (``run(..., repair=True)``, ``logicval run --repair``), one round of
self-correction on the built-in generators' images (`logicval_hf.repairs.loop`: the generator's renderer draws the
repaired scene, the perception backend reads it again, the solver verifies it).

Repairs are kept in ``repairs/<generator>.json`` (id -> the repair's JSON and a key of its spec and scene), written
atomically, and reused on resume while the key matches.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.scene import Scene
from logicval_hf.scoring.scores import Record

__all__ = ["repair_records", "repair_summary", "self_correct"]


def _key(rec: Record) -> str:
    text = rec.spec.key() + (rec.scene.to_json() if rec.scene is not None else "")
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def repair_records(out: Path, name: str, records: Mapping[str, Record], progress: bool = False) -> dict[str, dict]:
    """The repair (JSON) of every record with a perceived scene, reusing ``repairs/<name>.json``; ``{"error": ...}``
    where there is none to give (a scene past the repair's limit, a spec not labelled within the budget)."""
    from tqdm import tqdm

    from logicval_hf.repairs.api import REPAIR_TIMEOUT
    from logicval_hf.repairs.model import Repair
    from logicval_hf.repairs.scores import repair_many

    path = out / "repairs" / f"{name}.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        cached = {}
    keys = {i: _key(rec) for i, rec in records.items() if rec.scene is not None}
    todo = [i for i, key in keys.items() if not (isinstance(cached.get(i), dict) and cached[i].get("key") == key)]
    items = tqdm([(records[i].spec, records[i].scene) for i in todo], desc=f"repair {name}", disable=not progress,
                 unit="img", leave=False)
    fresh = {i: {"key": keys[i], "repair": r.to_dict() if isinstance(r, Repair) else {"error": r}}
             for i, r in zip(todo, repair_many(items, timeout=REPAIR_TIMEOUT), strict=True)}
    done: dict[str, dict] = {i: fresh[i] if i in fresh else cached[i] for i in keys}
    atomic_write_json(path, done, indent=1)
    return {i: d["repair"] for i, d in done.items()}


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
                 renderer: str = "numpy", assets: str | Path | None = None, progress: bool = False) -> dict[str, Any]:
    """One round of self-correction on ``name``'s images (`logicval_hf.repairs.loop.summarise` of the outcome)."""
    from tqdm import tqdm

    from logicval_hf.generation.builtin import make_generator, seed_for
    from logicval_hf.repairs.loop import correct, summarise

    read = _reader(backend)
    editor = make_generator("oracle", seed=seed, image_size=size, renderer=renderer,
                            assets=None if assets is None else str(assets))
    items = [(i, rec.spec, rec.scene) for i, rec in records.items() if rec.scene is not None]
    with tqdm(total=len(items), desc=f"self-correct {name}", disable=not progress, unit="img", leave=False) as bar:
        outcome = correct(items, lambda rid, r: editor.render(r.scene, seed_for("self-correct", name, rid))[0],
                          read, progress=bar.update)
    return summarise(outcome)


def _reader(backend: str) -> Callable[[Sequence[Any]], list[Scene]]:
    """The judge's reading of the edited images (the benchmark's specs are CLEVR: the backend's default domain);
    an image it cannot read stops the round with its error, as a broken renderer should."""
    from logicval_hf.scoring.judge import JudgeOptions, read_scenes

    options = JudgeOptions(backend=backend)

    def read(images: Sequence[Any]) -> list[Scene]:
        scenes = read_scenes(images, None, options)
        for s in scenes:
            if not isinstance(s, Scene):
                raise s
        return scenes  # type: ignore[return-value]

    return read
