"""The main job: benchmark -> images -> scene graphs -> verdicts -> report, offline, in one call.

``run(out_dir, **settings)`` (or ``run(RunOptions(...))``: `logicval_hf.job.options.RunOptions`) reads the
benchmark's typed rows (`logicval_hf.benchmark.rows.BenchmarkRow`: from the user-level cache, or built once),
generates one image per specification with each generator (`logicval_hf.generation.builtin`: ``oracle``,
``naive``, ``perturbed``), judges every image (`logicval_hf.scoring.judge`: perception backend ``"clevr"`` by
default, the shipped CLEVR scene parser), compares the metric's verdicts with the generators' *known truth* (the
solver's verdict on the scene each generator intended) and writes a report. A folder of images named by benchmark
id (``<id>.png`` / ``.jpg`` / ``.jpeg`` / ``.webp``: a user's model outputs) is scored the same way; ids without
an image count as failed generations (verdict false, listed in the report).

The stages live in their own modules: `options` (what a run is asked, what its stages share), `plan` (which
generators and rows), `cache` (fingerprints and what may be reused), `workers` (the process pool), `generate`
(stage 1), `score` (stage 2), `analysis` (stage 3), `timer` (seconds per stage) and `report` (the files). With a
minimum confidence (``min_confidence``) the images read below it are set apart as unread: every score is over the
others, and the summary and the report say how many were read and which were not, with the reason.

Output folder::

    report.md, report.html      the tables for every generator, agreement with the known truth
    summary.json                headline numbers (see `logicval_hf.job.report.SUMMARY_KEYS`), timings per stage
    plots/*.png                 per-class and per-package bars per generator, agreement per package
    gallery/<generator>/<id>.jpg    a few thumbnails per generator (failures first) with the perceived boxes
    disagreements.json          every image where the metric and the known truth differ, worst first
    benchmark.json              the rows used (cache; reused on resume when seed and code are unchanged)
    images/<generator>/<id>.png     generated images (all, the failures or none: ``keep_images``)
    intended/<generator>/<id>.json  the scene each generator intended and its metadata (known truth, change made)
    verdicts/<generator>/<id>.json  per-image verdict and perceived scene, with how the scene was made (its
                                    ``provenance``: a VLM's prompt and answer), or the reason the image could not
                                    be read (cache, keyed by the backend, a hash of its code, model and settings,
                                    and the image hash)
    repairs/<generator>.json        every perceived scene's cheapest repair (cache, keyed by the spec and scene;
                                    not with ``cheapest_repairs=False``)
    scores.jsonl                    per image: LogicVal's verdict, the baselines' scores, the known truth
                                    (``logicval meta DIR`` compares the metrics)

With ``baselines`` (``logicval run --baselines clipscore,vlm-judge``) every image is also scored by those baseline
metrics (`logicval_hf.job.baselines`): their scores go into the verdict files, the summary, the report's table and
``scores.jsonl``.

Every file is written to a temporary name in its directory and renamed into place, so an interrupted run
leaves no partial file; ``resume=True`` (default) reuses every image, intended scene and verdict already
written (checked against the spec, seed, backend and image hash), so a second run only redoes what is
missing; an interrupted run (Ctrl-C) goes on from there. Generation, perception and the repairs use ``jobs`` worker
processes (default: up to 2); a backend that waits on an endpoint (``vlm``) reads in this process instead, several
requests in flight at once (`logicval_hf.job.score`).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import default_solver
from logicval_hf.benchmark.dataset_folder import read_dataset
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.common.atomic import atomic_write_json, remove_stale_temps
from logicval_hf.common.version import __version__
from logicval_hf.job import baselines, cache
from logicval_hf.job.analysis import WORST_SHOWN, analyse, known_truth, unread_images
from logicval_hf.job.gallery import pick_examples, prune_images, write_gallery
from logicval_hf.job.generate import generate
from logicval_hf.job.options import DEFAULT_OUT, JobContext, RunOptions, render_settings
from logicval_hf.job.plan import (
    BUILTIN_GENERATORS,
    check_plan,
    dataset_rows,
    folder_rows,
    package_order,
    resolve_generators,
    run_rows,
)
from logicval_hf.job.repairs import repair_records, repair_summary, self_correct
from logicval_hf.job.score import GeneratorImages, Scored, score
from logicval_hf.job.timer import StageTimer
from logicval_hf.job.workers import Workers

#: one line per stage (`logicval run` shows them on stderr; the progress bars show the rest)
log = logging.getLogger(__name__)

__all__ = ["DEFAULT_GENERATORS", "DEFAULT_OUT", "GeneratorResult", "MissingImagesWarning", "RunOptions", "run"]

DEFAULT_GENERATORS = BUILTIN_GENERATORS


class MissingImagesWarning(UserWarning):
    """A folder of images lacks images for some specs of the run (see `RunOptions.only_present`)."""


@dataclass
class GeneratorResult:
    """Everything one generator's stages produced: the rows it was scored on with their image files, its
    records, its summary entry, the work done, its disagreements with the known truth (None for a folder), the
    repair of every perceived scene, the images set apart as unread and each image's baseline records."""

    name: str
    folder: Path | None
    rows: list[BenchmarkRow]
    images: dict[str, Path | None]
    scored: Scored
    intended: dict[str, dict] | None
    entry: dict[str, Any]
    work: dict[str, Any]
    disagreements: list[dict[str, Any]] | None
    repairs: dict[str, dict]
    unread: dict[str, str] | None = None
    baselines: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def truth(self) -> dict[str, bool] | None:
        """The known truth by id (None for a folder of images)."""
        return known_truth(self.rows, self.intended)


def run(options: RunOptions | str | Path | None = None, /, **settings: Any) -> dict[str, Any]:
    """Generate, perceive, judge and report; returns the summary (also written to ``summary.json``).

    Args:
        options: a `RunOptions`, or the report folder (``out_dir``); the keyword settings are `RunOptions`'s
            fields (``run("out", generators=["oracle"], limit=2)`` builds the options).
        settings: `RunOptions` fields, when ``options`` is not one.
    Returns:
        The summary (`logicval_hf.job.report.SUMMARY_KEYS`).
    Raises:
        ValueError: an unknown generator / missing folder, a folder with no image named by a benchmark id, a
            bad ``limit``, ``keep_images`` or ``min_confidence``.
        TypeError: a setting `RunOptions` does not have, or settings beside a `RunOptions`.

    Workers start from a fresh interpreter (forkserver / spawn), so, as with any such multiprocessing code, a
    script that calls `run` must do so under ``if __name__ == "__main__":``.
    """
    if isinstance(options, RunOptions):
        if settings:
            raise TypeError(f"run: settings {sorted(settings)} beside a RunOptions; put them in the options")
        opts = options
    else:
        opts = RunOptions(**settings) if options is None else RunOptions(options, **settings)
    ctx = _start(opts)
    try:
        results = [_one_generator(ctx, name, folder) for name, folder in ctx.plan]
    finally:
        ctx.workers.close()
        remove_stale_temps(ctx.out)
    return _finish(ctx, results)


def _start(opts: RunOptions) -> JobContext:
    """The run's folder, plan, checks made before any work, and the benchmark rows."""
    from logicval_hf.perception import check_backend

    timer = StageTimer()
    # an unknown backend, a setting it refuses (an endpoint that does not answer, weights that cannot be had): one
    # line before any work
    check_backend(opts.backend, opts.backend_settings)
    fingerprint = cache.backend_fingerprint(opts.backend, opts.backend_settings)  # hashes code and model files
    run_baselines = baselines.start(opts.baselines, opts.baseline_settings, opts.progress)  # refused here
    plan = resolve_generators(opts.generators, opts.image_folder)
    # a dataset folder is read and checked against the generators and backend before the output folder is touched
    dataset = None if opts.dataset is None else read_dataset(opts.dataset)
    if dataset is not None:
        check_plan(plan, dataset.rows, opts.backend, opts.backend_settings, opts.repair)
    out = Path(opts.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    render = render_settings(opts.renderer, opts.assets, opts.workers)
    with timer.stage("benchmark"):
        if dataset is None:
            log.info("benchmark: reading the prompts of seed %s from a cache, or building them (~15 s on 2 cores)",
                     opts.seed)
            rows = run_rows(opts.seed, out / "benchmark.json", opts.limit)
        else:
            log.info("benchmark: the rows of dataset %s (fingerprint %s)", dataset.name, dataset.fingerprint)
            rows = dataset_rows(dataset, out / "benchmark.json", opts.limit)
    log.info("benchmark: %d specifications ready in %.1f s", len(rows), timer.wall["benchmark"])
    return JobContext(opts, out, rows, default_solver(), Workers(opts.workers), timer, render, plan, run_baselines,
                      dataset, fingerprint)


def _images(ctx: JobContext, name: str, folder: Path | None
            ) -> tuple[list[tuple[BenchmarkRow, Path | None]], dict[str, dict] | None, dict[str, Any], list[str]]:
    """Stage 1: a built-in generator draws its images (or a folder's are found): each row with its image file,
    the intended scenes (None for a folder), the work done and what a reader must be told."""
    opts, rows = ctx.options, ctx.rows
    with ctx.timer.stage(f"generate/{name}") as stage:
        log.info("generate/%s: %s", name, f"drawing {len(rows)} image(s) with {opts.workers} worker(s), reusing "
                 "those already drawn" if folder is None else f"reading the images of {folder}")
        if folder is None:
            intended, work, worker_cpu = generate(name, opts.seed, opts.image_size, rows, ctx.out, opts.resume,
                                                  ctx.workers, opts.progress, ctx.render)
            stage.add_cpu(worker_cpu)
            return [(r, ctx.out / "images" / name / f"{r.id}.png") for r in rows], intended, dict(work), []
        from logicval_hf.scoring.evaluation import IMAGE_EXTENSIONS, images_in_folder
        from logicval_hf.scoring.inputs import takes_raw_input

        # a backend that takes raw input (given) reads the scene graphs <id>.json, not images
        extensions = (".json",) if takes_raw_input(opts.backend) else IMAGE_EXTENSIONS
        found = images_in_folder(folder, [r.id for r in rows], extensions)
        scored_rows, notes = folder_rows(folder, rows, found, opts.only_present, extensions)
        for note in notes:  # before the long part, so a wrong folder can be stopped at once
            warnings.warn(note, MissingImagesWarning, stacklevel=5)
        return [(r, found.get(r.id)) for r in scored_rows], None, {"found": len(found)}, notes


def _one_generator(ctx: JobContext, name: str, folder: Path | None) -> GeneratorResult:
    """Stages 1 to 3 and the repairs of one generator."""
    opts = ctx.options
    items, intended, work, notes = _images(ctx, name, folder)
    scored = score(GeneratorImages(name, items), ctx)
    work.update(scored.work)
    rows = [r for r, _ in items]
    by_baseline = baselines.score_generator(ctx, name, items, scored.failed)
    unread = None if opts.min_confidence is None else \
        unread_images(rows, scored.records, opts.min_confidence, opts.backend)
    entry, disagreements = analyse(name, folder, rows, scored.records, scored.failed, intended, unread)
    if ctx.baselines is not None:
        entry["baselines"] = baselines.summarise(ctx.baselines.metrics, rows, by_baseline, known_truth(rows, intended))
    scored_ids = {r.id for r in rows}
    entry.update(left_out=[r.id for r in ctx.rows if r.id not in scored_ids], warnings=notes)
    entry["repair"] = None  # without the cheapest repairs (--no-repair)
    repairs = _repairs(ctx, name, scored, entry) if opts.cheapest_repairs else {}
    return GeneratorResult(name, folder, rows, {r.id: p for r, p in items}, scored, intended, entry, work,
                           disagreements if intended is not None else None, repairs, unread, by_baseline)


def _repairs(ctx: JobContext, name: str, scored: Scored, entry: dict[str, Any]) -> dict[str, dict]:
    """The cheapest repair of every perceived scene (on the worker pool) and their summary in ``entry``; then,
    when asked, one round of self-correction."""
    opts = ctx.options
    with ctx.timer.stage(f"repair/{name}") as stage:
        log.info("repair/%s: the cheapest repair of every perceived scene%s", name,
                 ", then one round of self-correction" if opts.repair else "")
        repairs, worker_cpu = repair_records(ctx.out, name, scored.records, opts.progress, ctx.workers)
        stage.add_cpu(worker_cpu)
        entry["repair"] = repair_summary(repairs, scored.records)
        if opts.repair:
            entry["self_correction"] = self_correct(name, scored.records, opts.seed, opts.image_size, opts.backend,
                                                    opts.renderer, opts.assets, opts.progress,
                                                    opts.backend_settings)
    return repairs


def _finish(ctx: JobContext, results: list[GeneratorResult]) -> dict[str, Any]:
    """The report stage: galleries, pruned images, ``summary.json``, ``disagreements.json`` and the report."""
    opts, timer = ctx.options, ctx.timer
    timer.begin("report")  # ended by write_report, just before it writes summary.json
    log.info("report: thumbnails, tables and plots into %s", ctx.out)
    for g in results:
        truth = known_truth(ctx.rows, g.intended)
        picked = pick_examples(g.rows, g.scored.records, truth)
        g.entry["gallery"] = write_gallery(ctx.out, g.name, picked, g.images, g.scored.records, truth)
        for shot in g.entry["gallery"]:  # what would make each shown image right
            shot["instructions"] = g.repairs.get(shot["id"], {}).get("instructions")
        if g.folder is None:
            g.work["deleted_images"] = prune_images(ctx.out / "images" / g.name, [r.id for r in ctx.rows],
                                                    g.scored.records, truth or {}, opts.keep_images)
    summary: dict[str, Any] = {
        "logicval_version": __version__,
        # a dataset's run is named by the dataset; the seed then only seeds the built-in generators, if any
        "seed": opts.seed if ctx.dataset is None or any(f is None for _, f in ctx.plan) else None,
        "dataset": None if ctx.dataset is None else ctx.dataset.describe(),
        "backend": opts.backend,
        "backend_fingerprint": ctx.backend_fingerprint,
        **({} if not opts.backend_settings else {"backend_settings": cache.public_settings(opts.backend_settings)}),
        **({} if opts.min_confidence is None else {"min_confidence": opts.min_confidence}),
        **({} if ctx.baselines is None else {"baselines": baselines.describe(ctx.baselines, results)}),
        "image_size": list(opts.image_size),
        "limit": opts.limit,
        "n_specs": len(ctx.rows),
        "packages": {p: sum(1 for r in ctx.rows if r.package == p)
                     for p in (PACKAGE_NAMES if ctx.dataset is None else package_order(ctx.rows))},
        "generators": {g.name: g.entry for g in results},
        "jobs": opts.workers,
        "timings": timer.wall,
        "cpu_seconds": timer.cpu,
        "work": {g.name: g.work for g in results},
    }
    from logicval_hf.job.report import write_report

    disagreements = {g.name: g.disagreements for g in results if g.disagreements is not None}
    atomic_write_json(ctx.out / "disagreements.json", disagreements, indent=1)
    baselines.write_scores(ctx.out, results)
    write_report(ctx.out, summary, {name: d[:WORST_SHOWN] for name, d in disagreements.items()}, timer=timer)
    return summary
