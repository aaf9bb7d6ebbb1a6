"""Stage 2 of the main job: perceive every image of one generator and verify it against its spec.

Worker processes perceive the images (running ahead) while this process verifies them chunk by chunk with
`logicval_hf.scoring.evaluation.verify_scenes`; a verdict file ``verdicts/<generator>/<id>.json`` is written
after every chunk and reused on resume while the image bytes, the spec and the backend's fingerprint are
unchanged. An id without an image, or with one that cannot be read, is a failed generation: not ok under
either count mode, nothing satisfied.
"""

from __future__ import annotations

import logging
import pickle
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import Solver, Verdict
from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.job import cache
from logicval_hf.job.timer import StageTimer
from logicval_hf.job.workers import Workers, use_backend
from logicval_hf.scoring.scores import Record

__all__ = ["SCORE_CHUNK", "Scored", "score"]

#: the stage line of each generator's scoring (`logicval run` shows it on stderr)
log = logging.getLogger(__name__)

#: images perceived and verified per chunk (verdict files are written after each chunk)
SCORE_CHUNK = 128


@dataclass
class Scored:
    """One generator's outcome: a `Record` per id (a failed generation's has no scene), why each failed one
    failed (``{id: {"failed": "missing" | "unreadable", "error": ...}}``) and the work done."""

    records: dict[str, Record] = field(default_factory=dict)
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    work: dict[str, int] = field(default_factory=dict)


def _perceive_task(task: tuple[str, str, Any, Domain | None]) -> tuple[tuple[dict | None, str | None], float]:
    """Scene graph of one image file: ``((scene dict, None) or (None, error), CPU seconds)``."""
    from logicval_hf.scoring.evaluation import to_scenes

    c0 = time.process_time()
    path, backend, definition, domain = task
    use_backend(backend, definition)
    try:
        out: tuple[dict | None, str | None] = (
            to_scenes([Path(path)], backend=backend, domains=[domain])[0].to_dict(), None)
    except ValueError as e:  # PerceptionError: unreadable / unusable image
        out = (None, str(e))
    return out, time.process_time() - c0


def _failed(spec: Spec, row: Mapping[str, Any], why: str, detail: str | None = None
            ) -> tuple[Record, dict[str, Any]]:
    """A failed generation (no image / unreadable image): false under both count modes, nothing satisfied;
    the record and its verdict entry."""
    violated = tuple(range(row["m"]))
    strict = Verdict(False, False, violated, row["label"], "strict", -1)  # -1: never an abstention
    rec = Record(spec, row["label"], strict, strict.with_count("relaxed"), row["package"], row["id"])
    return rec, {"failed": why, **({"error": detail} if detail else {})}


def score(name: str, items: Sequence[tuple[dict, Path | None]], specs: Mapping[str, Spec], out: Path, backend: str,
          resume: bool, workers: Workers, progress: bool, solver: Solver, timer: StageTimer) -> Scored:
    """Records of one generator's images (``items``: each row with its image file, None when missing),
    cached per image; perception and verification time go to ``timer`` as ``perceive/<name>`` and
    ``verify/<name>``."""
    from tqdm.auto import tqdm

    from logicval_hf.perception import get_backend
    from logicval_hf.scoring.evaluation import verify_scenes

    vdir = out / "verdicts" / name
    fingerprint = cache.backend_fingerprint(backend)
    definition = get_backend(backend)
    result = Scored()
    pending: list[tuple[dict, Path, str]] = []
    for row, path in items:
        spec = specs[row["id"]]
        if path is None:
            result.records[row["id"]], result.failed[row["id"]] = _failed(spec, row, "missing")
            continue
        try:
            digest = cache.sha1(path.read_bytes())
        except OSError as e:
            result.records[row["id"]], result.failed[row["id"]] = _failed(spec, row, "unreadable", str(e))
            continue
        verdict = cache.cached_verdict(vdir / f"{row['id']}.json", backend, fingerprint, digest,
                                       row["spec_json"]) if resume else None
        if verdict is not None:
            result.records[row["id"]] = Record.from_sample(spec, verdict)
            continue
        pending.append((row, path, digest))
    result.work = {"scored": len(pending), "reused_verdicts": len(items) - len(pending) - len(result.failed)}
    log.info("score/%s: perceiving (backend %s) and verifying %d image(s); %d verdict(s) reused, %d missing or "
             "unreadable", name, backend, len(pending), result.work["reused_verdicts"], len(result.failed))
    tasks = [(str(p), backend, definition, specs[row["id"]].domain) for row, p, _ in pending]
    try:
        pickle.dumps(definition)
        results = workers.imap(_perceive_task, tasks)
    except (pickle.PicklingError, AttributeError, TypeError):  # functions defined inside a function: stay here
        results = map(_perceive_task, tasks)
    timer.add(f"perceive/{name}")
    timer.add(f"verify/{name}")
    with tqdm(total=len(items), initial=len(items) - len(pending), desc=f"score {name}", unit="img",
              disable=not progress, leave=False, file=sys.stderr) as bar:
        for start in range(0, len(pending), SCORE_CHUNK):
            chunk = pending[start:start + SCORE_CHUNK]
            with timer.stage(f"perceive/{name}") as stage:
                perceived = []
                for _ in chunk:
                    res, c = next(results)
                    perceived.append(res)
                    stage.add_cpu(c)
            with timer.stage(f"verify/{name}"):
                good = []
                for (row, _, digest), (scene, error) in zip(chunk, perceived, strict=True):
                    spec = specs[row["id"]]
                    if scene is None:
                        result.records[row["id"]], result.failed[row["id"]] = _failed(spec, row, "unreadable",
                                                                                      error)
                    else:
                        good.append((row, digest, Scene.from_dict(scene, spec.domain)))
                records = verify_scenes([specs[r["id"]] for r, _, _ in good], [s for _, _, s in good],
                                        labels=[r["label"] for r, _, _ in good], ids=[r["id"] for r, _, _ in good],
                                        packages=[r["package"] for r, _, _ in good], solver=solver)
                for (row, digest, _), rec in zip(good, records, strict=True):
                    result.records[row["id"]] = rec
                    atomic_write_json(vdir / f"{row['id']}.json", {
                        "id": row["id"], "generator": name, "backend": backend, "backend_fingerprint": fingerprint,
                        "image_sha1": digest, "spec_json": row["spec_json"], "verdict": rec.to_sample()})
            bar.update(len(chunk))
    return result
