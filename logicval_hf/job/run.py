"""The main job: benchmark -> images -> scene graphs -> verdicts -> report, offline, in one call.

``run(out_dir)`` reads the benchmark (`logicval_hf.benchmark.sampler.cached_benchmark`: from the user-level cache,
or built once), generates one image per
specification with each generator (`logicval_hf.generation.builtin`: ``oracle``, ``naive``, ``perturbed``), scores
every image (`logicval_hf.scoring.evaluation.to_scenes` and `verify_scenes`; perception backend ``"clevr"`` by
default: the shipped CLEVR scene parser), compares the metric's verdicts with the generators' *known truth* (the
solver's verdict on the scene each generator intended) and writes a report. A folder of images named by benchmark
id (``<id>.png`` / ``.jpg`` / ``.jpeg`` / ``.webp``: a user's model outputs) is scored the same way; ids without
an image count as failed generations (verdict false, listed in the report).

The stages live in their own modules: `plan` (which generators and rows), `cache` (fingerprints and what may be
reused), `workers` (the process pool), `generate` (stage 1), `score` (stage 2), `analysis` (stage 3), `timer`
(seconds per stage) and `report` (the files).

Output folder::

    report.md, report.html      the tables for every generator, agreement with the known truth
    summary.json                headline numbers (see `logicval_hf.job.report.SUMMARY_KEYS`), timings per stage
    plots/*.png                 per-class and per-package bars per generator, agreement per package
    gallery/<generator>/<id>.jpg    a few thumbnails per generator (failures first) with the perceived boxes
    disagreements.json          every image where the metric and the known truth differ, worst first
    benchmark.json              the rows used (cache; reused on resume when seed and code are unchanged)
    images/<generator>/<id>.png     generated images (all, the failures or none: ``keep_images``)
    intended/<generator>/<id>.json  the scene each generator intended and its metadata (known truth, change made)
    verdicts/<generator>/<id>.json  per-image verdict and perceived scene (cache, keyed by the backend, a hash
                                    of its code and model, and the image hash)
    repairs/<generator>.json        every perceived scene's cheapest repair (cache, keyed by the spec and scene)

Every file is written to a temporary name in its directory and renamed into place, so an interrupted run
leaves no partial file; ``resume=True`` (default) reuses every image, intended scene and verdict already
written (checked against the spec, seed, backend and image hash), so a second run only redoes what is
missing. Generation and perception use ``jobs`` worker processes (default: up to 2).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import DEFAULT_IMAGE_SIZE, default_solver
from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES
from logicval_hf.common.atomic import atomic_write_json, remove_stale_temps
from logicval_hf.common.version import __version__
from logicval_hf.contract.spec import as_spec
from logicval_hf.job import cache
from logicval_hf.job.analysis import WORST_SHOWN, analyse, known_truth
from logicval_hf.job.gallery import KEEP_IMAGES, pick_examples, prune_images, write_gallery
from logicval_hf.job.generate import generate, render_settings
from logicval_hf.job.plan import BUILTIN_GENERATORS, folder_rows, limit_rows, resolve_generators
from logicval_hf.job.repairs import repair_records, repair_summary, self_correct
from logicval_hf.job.score import score
from logicval_hf.job.timer import StageTimer
from logicval_hf.job.workers import Workers

#: one line per stage (`logicval run` shows them on stderr; the progress bars show the rest)
log = logging.getLogger(__name__)

__all__ = ["DEFAULT_GENERATORS", "DEFAULT_OUT", "MissingImagesWarning", "run"]

DEFAULT_GENERATORS = BUILTIN_GENERATORS
DEFAULT_OUT = "logicval_report"


class MissingImagesWarning(UserWarning):
    """A folder of images lacks images for some specs of the run (see `run`'s ``only_present``)."""


def run(
    out_dir: str | Path = DEFAULT_OUT,
    generators: Iterable[str] | str = DEFAULT_GENERATORS,
    seed: int = DEFAULT_SEED,
    backend: str = "clevr",
    image_folder: str | Path | None = None,
    resume: bool = True,
    progress: bool = True,
    limit: int | None = None,
    jobs: int | None = None,
    image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE,
    renderer: str = "numpy",
    assets: str | Path | None = None,
    only_present: bool = False,
    keep_images: str = "all",
    repair: bool = False,
) -> dict[str, Any]:
    """Generate, perceive, verify and report; returns the summary (also written to ``summary.json``).

    Args:
        out_dir: the report folder (created; see the module docstring for its layout).
        generators: built-in generator names (``oracle``, ``naive``, ``perturbed``) and/or folders of images
            named by benchmark id (scored as a model's outputs; named after the folder).
        seed: benchmark seed (`cached_benchmark`); also seeds the generators.
        backend: perception backend (default ``"clevr"``, the shipped CLEVR scene parser).
        image_folder: one more folder of images to score (same as listing it in ``generators``).
        resume: reuse images, intended scenes and verdicts already in ``out_dir`` (each checked against the spec,
            seed, image hash and perception backend); ``False`` regenerates and re-scores every image. The
            benchmark rows cached in ``benchmark.json`` are reused either way when seed and code match.
        progress: tqdm progress bars on stderr.
        limit: only the first ``limit`` specs of every package (quick runs, tests).
        jobs: worker processes for generation and perception (default ``min(2, cpu count)``). Workers start
            from a fresh interpreter (forkserver / spawn), so, as with any such multiprocessing code, a script
            that calls `run` must do so under ``if __name__ == "__main__":``.
        image_size: size of generated images ``(W, H)``.
        renderer: how the built-in generators draw their scenes: ``"numpy"`` (fast, default) or ``"blender"``
            (the CLEVR look, from the official assets in ``assets``; seconds per image; see
            `logicval_hf.generation.blender_process` for where bpy runs).
        assets: the official CLEVR generator's ``image_generation/data/`` folder, for ``renderer="blender"``.
        only_present: score a folder of images on the specs it has an image for only (by default an id without
            an image counts as a failed generation). Either way a folder with missing images gets a warning
            (`MissingImagesWarning`, and in the summary's and the report's ``warnings``).
        keep_images: which generated images stay in ``images/`` once scored: ``"all"`` (default),
            ``"failures"`` (those the metric rejects or that disagree with the known truth) or ``"none"``; the
            report's gallery keeps small thumbnails either way, and a later run draws deleted images again.
            Images of a folder are never touched.
        repair: also run one round of self-correction on every generator's images (`logicval_hf.job.repairs`: the
            repaired scene drawn by the built-in renderer, perceived again and verified); every perceived scene's
            cheapest repair is computed either way (the repair-cost distribution, the gallery's instructions).
    Raises:
        ValueError: an unknown generator / missing folder, a folder with no image named by a benchmark id, a
            bad ``limit`` or ``keep_images``.
    """
    from logicval_hf.job.report import write_report
    from logicval_hf.scoring.evaluation import images_in_folder

    timer = StageTimer()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    plan = resolve_generators(generators, image_folder)
    cache.backend_fingerprint(backend)  # an unknown or broken backend is reported before any work
    jobs = max(1, int(jobs if jobs is not None else min(2, os.cpu_count() or 1)))
    size = (int(image_size[0]), int(image_size[1]))
    render = render_settings(renderer, assets, jobs)
    if keep_images not in KEEP_IMAGES:
        raise ValueError(f"keep_images must be one of {list(KEEP_IMAGES)}, got {keep_images!r}")
    with timer.stage("benchmark"):
        log.info("benchmark: reading the prompts of seed %s from a cache, or building them (~15 s on 2 cores)",
                 seed)
        # the rows cache is checked against the seed and the code, so it is reused even without `resume`
        rows = limit_rows(cache.load_rows(seed, out / "benchmark.json", reuse=True), limit)
    log.info("benchmark: %d specifications ready in %.1f s", len(rows), timer.wall["benchmark"])
    solver = default_solver()
    specs = {r["id"]: as_spec(r["spec_json"], solver.catalog) for r in rows}
    gens: dict[str, dict[str, Any]] = {}
    work: dict[str, dict[str, int]] = {}
    disagreements: dict[str, list[dict[str, Any]]] = {}
    shown: dict[str, tuple] = {}  # per generator, what its gallery is drawn from
    repairs: dict[str, dict[str, dict]] = {}  # per generator, id -> the repair of its perceived scene
    workers = Workers(jobs)
    try:
        for name, folder in plan:
            intended: dict[str, dict] | None = None
            scored_rows = rows
            notes: list[str] = []
            items: list[tuple[dict, Path | None]]
            with timer.stage(f"generate/{name}") as stage:
                log.info("generate/%s: %s", name, f"drawing {len(rows)} image(s) with {jobs} worker(s), reusing "
                         "those already drawn" if folder is None else f"reading the images of {folder}")
                if folder is None:
                    intended, work[name], worker_cpu = generate(name, seed, size, rows, out, resume, workers,
                                                                progress, render)
                    stage.add_cpu(worker_cpu)
                    items = [(r, out / "images" / name / f"{r['id']}.png") for r in rows]
                else:
                    found = images_in_folder(folder, [r["id"] for r in rows])
                    scored_rows, notes = folder_rows(folder, rows, found, only_present)
                    for note in notes:  # before the long part, so a wrong folder can be stopped at once
                        warnings.warn(note, MissingImagesWarning, stacklevel=2)
                    items = [(r, found.get(r["id"])) for r in scored_rows]
                    work[name] = {"found": len(found)}
            scored = score(name, items, specs, out, backend, resume, workers, progress, solver, timer)
            work[name].update(scored.work)
            gens[name], found_disagreements = analyse(name, folder, scored_rows, specs, scored.records,
                                                      scored.failed, intended)
            scored_ids = {r["id"] for r in scored_rows}
            gens[name].update(left_out=[r["id"] for r in rows if r["id"] not in scored_ids], warnings=notes)
            if intended is not None:
                disagreements[name] = found_disagreements
            with timer.stage(f"repair/{name}"):
                log.info("repair/%s: the cheapest repair of every perceived scene%s", name,
                         ", then one round of self-correction" if repair else "")
                repairs[name] = repair_records(out, name, scored.records, progress)
                gens[name]["repair"] = repair_summary(repairs[name], scored.records)
                if repair:
                    gens[name]["self_correction"] = self_correct(name, scored.records, seed, size, backend, renderer,
                                                                 assets, progress)
            shown[name] = (folder, scored_rows, {r["id"]: p for r, p in items}, scored.records,
                           known_truth(rows, intended))
    finally:
        workers.close()
        remove_stale_temps(out)

    timer.begin("report")  # ended by write_report, just before it writes summary.json
    log.info("report: thumbnails, tables and plots into %s", out)
    for name, (folder, scored_rows, images, records, truth) in shown.items():
        picked = pick_examples(scored_rows, records, truth)
        gens[name]["gallery"] = write_gallery(out, name, picked, images, records, truth)
        for entry in gens[name]["gallery"]:  # what would make each shown image right
            entry["instructions"] = repairs[name].get(entry["id"], {}).get("instructions")
        if folder is None:
            work[name]["deleted_images"] = prune_images(out / "images" / name, [r["id"] for r in rows], records,
                                                        truth or {}, keep_images)
    summary = {
        "logicval_version": __version__,
        "seed": seed,
        "backend": backend,
        "backend_fingerprint": cache.backend_fingerprint(backend),
        "image_size": list(size),
        "limit": limit,
        "n_specs": len(rows),
        "packages": {p: sum(1 for r in rows if r["package"] == p) for p in PACKAGE_NAMES},
        "generators": gens,
        "jobs": jobs,
        "timings": timer.wall,
        "cpu_seconds": timer.cpu,
        "work": work,
    }
    atomic_write_json(out / "disagreements.json", disagreements, indent=1)
    write_report(out, summary, {name: d[:WORST_SHOWN] for name, d in disagreements.items()}, timer=timer)
    return summary
