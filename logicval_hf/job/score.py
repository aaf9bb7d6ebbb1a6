"""Stage 2 of the main job: perceive every image of one generator and judge it against its spec.

Worker processes read the images (`logicval_hf.scoring.judge.read_scenes`, running ahead) while this process
judges the scene graphs chunk by chunk (`logicval_hf.scoring.judge.judge`, one solver for the run); a verdict file
``verdicts/<generator>/<id>.json`` is written after every chunk and reused on resume while the image bytes, the spec
and the backend's fingerprint are unchanged. An id without an image, or with one that cannot be read, is a failed
generation: not ok under either count mode, nothing satisfied.
"""

from __future__ import annotations

import logging
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import Verdict
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.job import cache
from logicval_hf.job.options import JobContext
from logicval_hf.job.workers import use_backend
from logicval_hf.scoring.scores import Record

__all__ = ["SCORE_CHUNK", "GeneratorImages", "Scored", "score"]

#: the stage line of each generator's scoring (`logicval run` shows it on stderr)
log = logging.getLogger(__name__)

#: images perceived and verified per chunk (verdict files are written after each chunk)
SCORE_CHUNK = 128


@dataclass(frozen=True)
class GeneratorImages:
    """One generator's images to score: each row with its image file (None: missing)."""

    name: str
    items: Sequence[tuple[BenchmarkRow, Path | None]]


@dataclass
class Scored:
    """One generator's outcome: a `Record` per id (a failed generation's has no scene), why each failed one
    failed (``{id: {"failed": "missing" | "unreadable", "error": ...}}``) and the work done."""

    records: dict[str, Record] = field(default_factory=dict)
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    work: dict[str, int] = field(default_factory=dict)

    def fail(self, row: BenchmarkRow, why: str, detail: str | None = None) -> None:
        """A failed generation (no image / unreadable image): false under both count modes, nothing satisfied."""
        strict = Verdict(False, False, tuple(range(row.m)), row.label, "strict", -1)  # -1: never an abstention
        self.records[row.id] = Record(row.spec, row.label, strict, strict.with_count("relaxed"), row.package, row.id)
        self.failed[row.id] = {"failed": why, **({"error": detail} if detail else {})}


def _perceive_task(task: tuple[str, str, Any, Domain | None]) -> tuple[tuple[dict | None, str | None], float]:
    """Scene graph of one image file, read by the judge: ``((scene dict, None) or (None, error), CPU seconds)``."""
    from logicval_hf.scoring.judge import JudgeOptions, read_scenes

    c0 = time.process_time()
    path, backend, definition, domain = task
    use_backend(backend, definition)
    (got,) = read_scenes([Path(path)], domain, JudgeOptions(backend=backend), ["image"])
    out = (got.to_dict(), None) if isinstance(got, Scene) else (None, str(got))
    return out, time.process_time() - c0


def _pending(images: GeneratorImages, ctx: JobContext, fingerprint: str, result: Scored
             ) -> list[tuple[BenchmarkRow, Path, str]]:
    """The images to perceive; the others are missing, unreadable, or judged already (their verdict files)."""
    vdir = ctx.out / "verdicts" / images.name
    pending: list[tuple[BenchmarkRow, Path, str]] = []
    for row, path in images.items:
        if path is None:
            result.fail(row, "missing")
            continue
        try:
            digest = cache.sha1(path.read_bytes())
        except OSError as e:
            result.fail(row, "unreadable", str(e))
            continue
        verdict = cache.cached_verdict(vdir / f"{row.id}.json", ctx.options.backend, fingerprint, digest,
                                       row.spec_json) if ctx.options.resume else None
        if verdict is not None:
            result.records[row.id] = Record.from_sample(row.spec, verdict)
        else:
            pending.append((row, path, digest))
    return pending


def _judge_chunk(images: GeneratorImages, ctx: JobContext, fingerprint: str, result: Scored,
                 chunk: Sequence[tuple[BenchmarkRow, Path, str]], perceived: Sequence[tuple[dict | None, str | None]]
                 ) -> None:
    """Judge one chunk's scene graphs (one `judge` call) and write their verdict files."""
    from logicval_hf.scoring.judge import judge

    good = []
    for (row, _, digest), (scene, error) in zip(chunk, perceived, strict=True):
        if scene is None:
            result.fail(row, "unreadable", error)
        else:
            good.append((row, digest, Scene.from_dict(scene, row.spec.domain)))
    judged = judge([row for row, _, _ in good], [s for _, _, s in good], ctx.judge_options, solver=ctx.solver)
    for (row, digest, _), j in zip(good, judged, strict=True):
        if j.error is not None:  # a scene graph the solver cannot take: as good as unreadable
            result.fail(row, "unreadable", j.error)
            continue
        rec = result.records[row.id] = j.record()
        atomic_write_json(ctx.out / "verdicts" / images.name / f"{row.id}.json", {
            "id": row.id, "generator": images.name, "backend": ctx.options.backend, "backend_fingerprint": fingerprint,
            "image_sha1": digest, "spec_json": row.spec_json, "verdict": rec.to_sample()})


def score(images: GeneratorImages, ctx: JobContext) -> Scored:
    """Records of one generator's images, cached per image; perception and verification time go to the run's
    timer as ``perceive/<name>`` and ``verify/<name>``.

    Args:
        images: the generator's name and its rows with their image files.
        ctx: the run (its folder, backend, resume flag, workers, solver, timer).
    Returns:
        The records, the failed generations and the work done.
    """
    from tqdm.auto import tqdm

    from logicval_hf.perception import get_backend
    from logicval_hf.scoring.judge import perceived_domain

    name, backend, timer = images.name, ctx.options.backend, ctx.timer
    fingerprint = cache.backend_fingerprint(backend)
    definition = get_backend(backend)
    result = Scored()
    pending = _pending(images, ctx, fingerprint, result)
    result.work = {"scored": len(pending),
                   "reused_verdicts": len(images.items) - len(pending) - len(result.failed)}
    log.info("score/%s: perceiving (backend %s) and verifying %d image(s); %d verdict(s) reused, %d missing or "
             "unreadable", name, backend, len(pending), result.work["reused_verdicts"], len(result.failed))
    tasks = [(str(p), backend, definition, perceived_domain(row.spec.domain)) for row, p, _ in pending]
    try:
        pickle.dumps(definition)
        results = ctx.workers.imap(_perceive_task, tasks)
    except (pickle.PicklingError, AttributeError, TypeError):  # functions defined inside a function: stay here
        results = map(_perceive_task, tasks)
    timer.add(f"perceive/{name}")
    timer.add(f"verify/{name}")
    with tqdm(total=len(images.items), initial=len(images.items) - len(pending), desc=f"score {name}", unit="img",
              disable=not ctx.options.progress, leave=False, file=sys.stderr) as bar:
        for start in range(0, len(pending), SCORE_CHUNK):
            chunk = pending[start:start + SCORE_CHUNK]
            with timer.stage(f"perceive/{name}") as stage:
                perceived = []
                for _ in chunk:
                    res, c = next(results)
                    perceived.append(res)
                    stage.add_cpu(c)
            with timer.stage(f"verify/{name}"):
                _judge_chunk(images, ctx, fingerprint, result, chunk, perceived)
            bar.update(len(chunk))
    return result
