"""What a run covers: which generators (built-in names or folders of images) and which rows (the benchmark of a
seed, or a dataset folder's), and whether they fit each other (`check_plan`), before any work."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.dataset_folder import DatasetRows
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.contract.domain import Domain
from logicval_hf.perception.images import IMAGE_EXTENSIONS

__all__ = ["BUILTIN_GENERATORS", "check_plan", "dataset_rows", "folder_rows", "limit_rows", "package_order",
           "resolve_generators", "run_rows"]

#: the built-in generators (`logicval_hf.generation.builtin.GENERATORS`), in report order
BUILTIN_GENERATORS = ("oracle", "naive", "perturbed")


def limit_rows(rows: Sequence[BenchmarkRow], limit: int | None) -> list[BenchmarkRow]:
    """At most ``limit`` rows per package, evenly spaced through the package (so a small limit still reaches
    several classes of 1SAT), in benchmark order."""
    if limit is None:
        return list(rows)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number of specs per package, got {limit!r}")
    by_pkg: dict[str, list[BenchmarkRow]] = {}
    for r in rows:
        by_pkg.setdefault(r.package, []).append(r)
    keep: set[str] = set()
    for members in by_pkg.values():
        k = len(members)
        picks = range(k) if k <= limit else sorted({(i * k) // limit for i in range(limit)})
        keep.update(members[i].id for i in picks)
    return [r for r in rows if r.id in keep]


def run_rows(seed: int, cache_file: Path, limit: int | None) -> list[BenchmarkRow]:
    """The rows a run covers: the benchmark of ``seed`` (`logicval_hf.job.cache.load_rows`: from ``cache_file`` when
    it matches the seed and the code, which is checked even without resuming) cut to ``limit`` per package."""
    from logicval_hf.job.cache import load_rows

    return limit_rows(load_rows(seed, cache_file, reuse=True), limit)


def dataset_rows(dataset: DatasetRows, cache_file: Path, limit: int | None) -> list[BenchmarkRow]:
    """The rows a run covers of a dataset folder (cut to ``limit`` per package), recorded in ``cache_file`` (the
    run's ``benchmark.json``, naming the dataset and its fingerprint: never taken for a seed's benchmark)."""
    from logicval_hf.common.atomic import atomic_write_json
    from logicval_hf.common.version import __version__
    from logicval_hf.job.cache import ROW_FIELDS

    rows = limit_rows(dataset.rows, limit)
    atomic_write_json(cache_file, {"dataset": dataset.name, "fingerprint": dataset.fingerprint,
                                   "logicval_version": __version__, "rows": [r.to_dict(ROW_FIELDS) for r in rows]})
    return rows


def package_order(rows: Iterable[BenchmarkRow]) -> list[str]:
    """The packages of ``rows``: the benchmark's in its order (1SAT ... 6UNSAT), then any other in order of first
    appearance (an imported dataset's sources)."""
    from logicval_hf.benchmark.sampler import PACKAGE_NAMES

    present = dict.fromkeys(r.package for r in rows)
    return [p for p in PACKAGE_NAMES if p in present] + [p for p in present if p not in PACKAGE_NAMES]


def check_plan(plan: Sequence[tuple[str, Path | None]], rows: Sequence[BenchmarkRow], backend: str,
               settings: Mapping[str, Any], self_correction: bool) -> None:
    """Refuse, in one line and before any work, a run whose parts do not fit its rows: a built-in generator (or
    self-correction, which redraws with it) for specs outside the CLEVR domain it draws, or a backend that does not
    perceive the rows' domains.

    Raises:
        ValueError: what does not fit, and what would.
    """
    from logicval_hf.perception import check_backend
    from logicval_hf.scoring.judge import perceived_domain

    domains: dict[str, tuple[Domain, str]] = {}  # name -> (domain, the first row in it)
    for r in rows:
        d = perceived_domain(r.spec.domain)
        if d is not None:
            domains.setdefault(d.name, (d, r.id))
    if domains:
        names = ", ".join(repr(n) for n in domains)
        builtin = [name for name, folder in plan if folder is None]
        if builtin or self_correction:
            what = f"generator {builtin[0]!r}" if builtin else "self-correction (--repair)"
            raise ValueError(f"{what} draws CLEVR scenes only, and the rows' specs are in domain {names} (e.g. "
                             f"{next(iter(domains.values()))[1]}): score a folder of images named by the rows' ids "
                             "(--generator FOLDER) with a backend that reads that domain (--backend neural, vlm, or "
                             "given with <id>.json scene graphs)")
        for d, rid in domains.values():
            try:
                check_backend(backend, {**settings, "domain": d})
            except ValueError as e:
                raise ValueError(f"row {rid}: {e}") from None


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "custom"


def resolve_generators(generators: Iterable[str] | str | None, image_folder: str | Path | None = None
                       ) -> list[tuple[str, Path | None]]:
    """``[(name, folder or None)]``: built-in names stay; anything else must be a folder of images and is named
    after the folder (``custom`` when that name is empty or taken)."""
    if isinstance(generators, (str, os.PathLike)):
        generators = [generators]
    items: list[str | os.PathLike[str]] = list(generators or [])
    if image_folder is not None:
        items.append(image_folder)
    if not items:
        raise ValueError("no generator given")
    out: list[tuple[str, Path | None]] = []
    names: set[str] = set()
    for g in items:
        g_str = os.fspath(g)
        if g_str in BUILTIN_GENERATORS:
            if g_str in names:
                continue
            out.append((g_str, None))
            names.add(g_str)
            continue
        folder = Path(g_str).expanduser()
        if not folder.is_dir():
            raise ValueError(f"generator {g_str!r} is neither one of {list(BUILTIN_GENERATORS)} nor a folder of "
                             "images")
        name = _safe_name(folder.resolve().name)
        if name in names or name in BUILTIN_GENERATORS:
            name = "custom"
        k = 2
        base = name
        while name in names:
            name = f"{base}-{k}"
            k += 1
        out.append((name, folder))
        names.add(name)
    return out


def folder_rows(folder: Path, rows: Sequence[BenchmarkRow], found: Mapping[str, Path], only_present: bool,
                extensions: Sequence[str] = IMAGE_EXTENSIONS) -> tuple[list[BenchmarkRow], list[str]]:
    """The rows a folder of images is scored on, and what a reader must be told about them.

    Every row by default (an id without an image is a failed generation, not ok); with ``only_present`` only
    the rows with an image. The messages say how many specs have no image and what that does to the score.

    Raises:
        ValueError: no row has an image in the folder (a wrong folder, or images not named by benchmark id).
    """
    n, k = len(rows), len(found)
    if not found:
        example = f" (e.g. {rows[0].id}{extensions[0]})" if rows else ""
        kinds = ", ".join(f"<id>{e}" if k == 0 else e for k, e in enumerate(extensions))
        what = "scene graph" if tuple(extensions) == (".json",) else "image"
        raise ValueError(f"no {what} in {str(folder)!r} is named by a benchmark id of this run{example}; {what}s are "
                         f"found as {kinds}")
    if only_present:
        notes = [f"only the {k} of {n} specs with an image in {folder} are scored (--only-present); the "
                 f"{n - k} without one are left out, so the score is not comparable with a full run"] if k < n else []
        return [r for r in rows if r.id in found], notes
    if k == n:
        return list(rows), []
    return list(rows), [f"{n - k} of {n} specs have no image in {folder}: each counts as a failed generation (not "
                        f"ok), so the score is over all {n} specs with {k} images; to score only the images found, "
                        "run with --only-present"]
