"""Stage 2 of the main job: perceive every image of one generator and judge it against its spec.

Worker processes read the images (`logicval_hf.scoring.judge.read_scenes`, running ahead) while this process
judges the scene graphs chunk by chunk (`logicval_hf.scoring.judge.judge`, one solver for the run). A backend of
`IN_PROCESS_BACKENDS` (``vlm``: its work is waiting on an endpoint) reads in this process instead, through the same
judge, `PERCEIVE_CHUNK` images at a time, so that its ``concurrency`` requests (8) are in flight at once rather
than one per worker. A verdict file ``verdicts/<generator>/<id>.json`` is written after every chunk (with the
scene's ``provenance``: a VLM's prompt and answer) and reused on resume while the image bytes, the spec and the
backend's fingerprint (its code, model and settings) are unchanged. An id without an image, or with one that cannot
be read, is a failed generation: not ok under either count mode, nothing satisfied; an unreadable image's verdict
file says why (and is read again on resume).
"""

from __future__ import annotations

import logging
import pickle
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
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

__all__ = ["IN_PROCESS_BACKENDS", "PERCEIVE_CHUNK", "SCORE_CHUNK", "GeneratorImages", "Scored", "score"]

#: the stage line of each generator's scoring (`logicval run` shows it on stderr)
log = logging.getLogger(__name__)

#: images perceived and verified per chunk (verdict files are written after each chunk)
SCORE_CHUNK = 128
#: backends that read in this process rather than on the worker processes: their work is waiting on an endpoint
#: (``vlm``: ``concurrency`` requests in flight; its local ``transformers`` transport: one model, not one per worker)
IN_PROCESS_BACKENDS = frozenset({"vlm"})
#: images decoded and handed to an in-process backend at a time (a few times the vlm backend's 8 requests in flight,
#: so that a slow answer holds few others back; 32 images of 4 megapixels: about 0.4 GB)
PERCEIVE_CHUNK = 32


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


#: one image to perceive: its file, the backend's name, definition and settings, and the domain to perceive
_Task = tuple[str, str, Any, Mapping[str, Any], Domain | None]
#: what perceiving it gave: ``(scene dict, None)`` or ``(None, why it could not be read)``
_Perceived = tuple[dict | None, str | None]


def _outcome(got: Scene | ValueError) -> _Perceived:
    return (got.to_dict(), None) if isinstance(got, Scene) else (None, str(got))


def _perceive_task(task: _Task) -> tuple[_Perceived, float]:
    """Scene graph of one image file, read by the judge on a worker: ``(outcome, CPU seconds)``."""
    from logicval_hf.scoring.judge import JudgeOptions, read_scenes

    c0 = time.process_time()
    path, backend, definition, settings, domain = task
    use_backend(backend, definition)
    (got,) = read_scenes([Path(path)], domain, JudgeOptions(backend=backend, backend_settings=settings), [path])
    return _outcome(got), time.process_time() - c0


def _perceive_here(tasks: Sequence[_Task]) -> Iterator[tuple[_Perceived, float]]:
    """The scene graphs of the images, read in this process by the judge (`PERCEIVE_CHUNK` at a time, one
    `read_scenes` call per domain), in order; CPU seconds are this process's own (0 here)."""
    from logicval_hf.scoring.judge import JudgeOptions, read_scenes

    for start in range(0, len(tasks), PERCEIVE_CHUNK):
        part = tasks[start:start + PERCEIVE_CHUNK]
        groups: dict[Domain | None, list[int]] = {}
        for k, task in enumerate(part):
            groups.setdefault(task[4], []).append(k)
        got: dict[int, _Perceived] = {}
        for domain, ks in groups.items():
            _, backend, _, settings, _ = part[ks[0]]
            options = JudgeOptions(backend=backend, backend_settings=settings, chunk=PERCEIVE_CHUNK)
            scenes = read_scenes([Path(part[k][0]) for k in ks], domain, options, [part[k][0] for k in ks])
            got.update((k, _outcome(s)) for k, s in zip(ks, scenes, strict=True))
        for k in range(len(part)):
            yield got[k], 0.0


def _unreadable(images: GeneratorImages, ctx: JobContext, fingerprint: str, result: Scored, row: BenchmarkRow,
                digest: str | None, error: str) -> None:
    """A failed generation whose image could not be read, and its verdict file saying why (never reused: the
    image is read again on resume, an endpoint that failed may answer then)."""
    result.fail(row, "unreadable", error)
    atomic_write_json(ctx.out / "verdicts" / images.name / f"{row.id}.json", {
        "id": row.id, "generator": images.name, "backend": ctx.options.backend, "backend_fingerprint": fingerprint,
        "image_sha1": digest, "spec_json": row.spec_json, "verdict": None, "unreadable": error})


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
            _unreadable(images, ctx, fingerprint, result, row, None, f"{path}: cannot read the file: "
                                                                     f"{e.strerror or e}")
            continue
        verdict = cache.cached_verdict(vdir / f"{row.id}.json", ctx.options.backend, fingerprint, digest,
                                       row.spec_json, row) if ctx.options.resume else None
        if verdict is not None:
            result.records[row.id] = Record.from_sample(row.spec, verdict)
        else:
            pending.append((row, path, digest))
    return pending


def _judge_chunk(images: GeneratorImages, ctx: JobContext, fingerprint: str, result: Scored,
                 chunk: Sequence[tuple[BenchmarkRow, Path, str]], perceived: Sequence[_Perceived]) -> None:
    """Judge one chunk's scene graphs (one `judge` call) and write their verdict files."""
    from logicval_hf.scoring.judge import judge

    good = []
    for (row, _, digest), (scene, error) in zip(chunk, perceived, strict=True):
        if scene is None:
            _unreadable(images, ctx, fingerprint, result, row, digest, str(error))
        else:
            good.append((row, digest, Scene.from_dict(scene, row.spec.domain)))
    judged = judge([row for row, _, _ in good], [s for _, _, s in good], ctx.judge_options, solver=ctx.solver)
    for (row, digest, _), j in zip(good, judged, strict=True):
        if j.error is not None:  # a scene graph the solver cannot take: as good as unreadable
            _unreadable(images, ctx, fingerprint, result, row, digest, j.error)
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
    settings = ctx.options.backend_settings
    fingerprint = ctx.backend_fingerprint
    definition = get_backend(backend)
    result = Scored()
    pending = _pending(images, ctx, fingerprint, result)
    result.work = {"scored": len(pending),
                   "reused_verdicts": len(images.items) - len(pending) - len(result.failed)}
    log.info("score/%s: perceiving (backend %s) and verifying %d image(s); %d verdict(s) reused, %d missing or "
             "unreadable", name, backend, len(pending), result.work["reused_verdicts"], len(result.failed))
    tasks: list[_Task] = [(str(p), backend, definition, settings, perceived_domain(row.spec.domain))
                          for row, p, _ in pending]
    here = backend in IN_PROCESS_BACKENDS or ctx.workers.runs_here(len(tasks))
    results: Iterator[tuple[_Perceived, float]]
    if backend in IN_PROCESS_BACKENDS:
        results = _perceive_here(tasks)
    else:
        try:
            pickle.dumps((definition, settings))
            results = ctx.workers.imap(_perceive_task, tasks)
        except (pickle.PicklingError, AttributeError, TypeError):  # functions defined inside a function: stay here
            results, here = map(_perceive_task, tasks), True
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
                    if not here:  # a worker's CPU seconds (this process's own are booked by the stage)
                        stage.add_cpu(c)
            with timer.stage(f"verify/{name}"):
                _judge_chunk(images, ctx, fingerprint, result, chunk, perceived)
            bar.update(len(chunk))
    return result
