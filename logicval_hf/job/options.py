"""What one run of the main job is asked to do (`RunOptions`, checked when built) and what its stages share
(`JobContext`: the folder, the benchmark rows, the solver, the worker pool, the timer, the judge's options)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import DEFAULT_IMAGE_SIZE, Solver
from logicval_hf.benchmark.dataset_folder import DatasetRows
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.benchmark.sampler import DEFAULT_SEED
from logicval_hf.job.gallery import KEEP_IMAGES
from logicval_hf.job.plan import BUILTIN_GENERATORS
from logicval_hf.job.timer import StageTimer
from logicval_hf.job.workers import Workers
from logicval_hf.scoring.judge import JudgeOptions, check_min_confidence

__all__ = ["DEFAULT_OUT", "KEEP_IMAGES", "JobContext", "RunOptions", "render_settings"]

DEFAULT_OUT = "logicval_report"


@dataclass(frozen=True)
class RunOptions:
    """Everything `logicval_hf.job.run.run` is asked to do.

    Args:
        out_dir: the report folder (created).
        generators: built-in generator names (``oracle``, ``naive``, ``perturbed``) and/or folders of images
            named by benchmark id (scored as a model's outputs; named after the folder).
        seed: benchmark seed; also seeds the generators.
        dataset: a LogicVal dataset folder (a ``logicval import`` or ``logicval build-dataset`` output) whose rows
            are scored instead of the benchmark of ``seed`` (`logicval_hf.benchmark.dataset_folder.read_dataset`);
            None: the benchmark.
        backend: perception backend (default ``"clevr"``, the shipped CLEVR scene parser).
        backend_settings: the backend's settings (``vlm``: ``url``, ``model``, ``boxes``, ...), checked before any
            work (its ``check_settings``); the ones that decide what is read are part of the verdicts' cache key,
            so that one model's verdicts are never reused for another's.
        image_folder: one more folder of images to score (same as listing it in ``generators``).
        resume: reuse images, intended scenes and verdicts already in ``out_dir`` (each checked against the spec,
            seed, image hash and perception backend); False regenerates and re-scores every image.
        progress: tqdm progress bars on stderr.
        limit: only the first ``limit`` specs of every package (quick runs, tests).
        jobs: worker processes for generation and perception (default ``min(2, cpu count)``).
        image_size: size of generated images ``(W, H)``.
        renderer: ``"numpy"`` (fast, default) or ``"blender"`` (the CLEVR look, from ``assets``).
        assets: the official CLEVR generator's ``image_generation/data/`` folder, for ``renderer="blender"``.
        only_present: score a folder of images on the specs it has an image for only.
        keep_images: which generated images stay once scored: ``"all"``, ``"failures"`` or ``"none"``.
        repair: also run one round of self-correction on every generator's images.
        cheapest_repairs: compute every perceived scene's cheapest repair (the report's repair costs and the
            gallery's fixes); False (``logicval run --no-repair``) skips that stage, the longest on one's own images.
        min_confidence: images whose scene confidence is below it (or that have none) are set apart as unread:
            the scores are over the others, and the summary and report say how many were read (None: all).
        baselines: baseline metrics that also score every image, beside LogicVal (``"clipscore,vlm-judge"`` or a
            list; `logicval_hf.scoring.baselines.BASELINE_INFO` declares them).
        baseline_settings: ``{baseline: {setting: value}}`` (e.g. ``{"clipscore": {"model": "path/to/clip"}}``).
    Raises:
        ValueError: a bad ``keep_images``, ``limit`` or ``min_confidence``; an unknown baseline or setting;
            self-correction (``repair``) without the cheapest repairs it starts from.
        MissingExtraError: a baseline needs an extra that is not installed.
    """

    out_dir: str | Path = DEFAULT_OUT
    generators: Iterable[str] | str = BUILTIN_GENERATORS
    seed: int = DEFAULT_SEED
    dataset: str | Path | None = None
    backend: str = "clevr"
    backend_settings: Mapping[str, Any] = field(default_factory=dict)
    image_folder: str | Path | None = None
    resume: bool = True
    progress: bool = True
    limit: int | None = None
    jobs: int | None = None
    image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE
    renderer: str = "numpy"
    assets: str | Path | None = None
    only_present: bool = False
    keep_images: str = "all"
    repair: bool = False
    min_confidence: float | None = None
    baselines: Iterable[str] | str = ()
    baseline_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cheapest_repairs: bool = True

    def __post_init__(self) -> None:
        if self.keep_images not in KEEP_IMAGES:
            raise ValueError(f"keep_images must be one of {list(KEEP_IMAGES)}, got {self.keep_images!r}")
        limit = self.limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ValueError(f"limit must be a positive number of specs per package, got {limit!r}")
        gens = (self.generators,) if isinstance(self.generators, (str, os.PathLike)) else tuple(self.generators)
        object.__setattr__(self, "generators", gens)
        object.__setattr__(self, "min_confidence", check_min_confidence(self.min_confidence))
        object.__setattr__(self, "backend_settings", dict(self.backend_settings or {}))
        if self.repair and not self.cheapest_repairs:
            raise ValueError("self-correction (repair, --repair) repairs every perceived scene: it cannot be run "
                             "without the cheapest repairs (cheapest_repairs=False, --no-repair)")
        object.__setattr__(self, "image_size", (int(self.image_size[0]), int(self.image_size[1])))
        if self.baselines or self.baseline_settings:
            from logicval_hf.scoring.baselines.factory import check_baselines, parse_names

            names = parse_names(self.baselines) if self.baselines else []
            check_baselines(names, self.baseline_settings)  # names, settings and extras, before any work
            object.__setattr__(self, "baselines", tuple(names))
        else:
            object.__setattr__(self, "baselines", ())

    @property
    def workers(self) -> int:
        """Worker processes: ``jobs``, or ``min(2, cpu count)``."""
        return max(1, int(self.jobs if self.jobs is not None else min(2, os.cpu_count() or 1)))


def render_settings(renderer: str, assets: str | Path | None, jobs: int) -> dict[str, Any]:
    """How the built-in generators draw (``renderer`` and, for Blender, its assets and threads), checked before
    any work.

    Raises:
        ValueError: an unknown renderer; Blender without ``assets`` or with a folder that is not the assets.
    """
    render: dict[str, Any] = {"renderer": renderer}
    if renderer == "blender":
        from logicval_hf.generation.blender import load_assets

        if assets is None:
            raise ValueError("--renderer blender needs --assets DIR (the official CLEVR generator's "
                             "image_generation/data/ folder)")
        load_assets(assets)  # a bad folder is reported before any work
        render.update(assets=str(assets), blender={"threads": 1 if jobs > 1 else 2})
    elif renderer != "numpy":
        raise ValueError(f"unknown renderer {renderer!r}; known renderers: numpy, blender")
    return render


@dataclass
class JobContext:
    """What every stage of one run shares."""

    options: RunOptions
    out: Path
    rows: list[BenchmarkRow]
    solver: Solver
    workers: Workers
    timer: StageTimer
    render: dict[str, Any] = field(default_factory=dict)
    plan: list[tuple[str, Path | None]] = field(default_factory=list)
    baselines: Any = None  # `logicval_hf.job.baselines.RunBaselines` when the run has baselines
    dataset: DatasetRows | None = None  # the dataset folder read, when the run scores one (``--dataset``)
    backend_fingerprint: str = ""  # `logicval_hf.job.cache.backend_fingerprint`, hashed once per run

    @property
    def judge_options(self) -> JudgeOptions:
        """How the judge reads and verifies this run's images (the minimum confidence is applied on the records,
        so that cached verdicts stay valid whatever it is)."""
        return JudgeOptions(backend=self.options.backend, backend_settings=self.options.backend_settings)
