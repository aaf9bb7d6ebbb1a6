"""The main job: benchmark -> images -> scene graphs -> verdicts -> report, offline, in one call.

``run(out_dir)`` builds the benchmark (`logicval_hf.benchmark.sampler.cached_benchmark`), generates one image per
specification with each generator (`logicval_hf.generation.builtin`: ``oracle``, ``naive``, ``perturbed``), scores
every image with `logicval_hf.scoring.evaluation.compute` (perception backend ``"clevr"`` by default: the shipped CLEVR scene parser),
compares the metric's verdicts with the generators' *known truth* (the solver's verdict on the scene each
generator intended) and writes a report. A folder of images named by benchmark id (``<id>.png`` / ``.jpg`` /
``.jpeg`` / ``.webp``: a user's model outputs) is scored the same way; ids without an image count as failed
generations (verdict false, listed in the report).

Output folder::

    report.md, report.html      the paper's tables for every generator, agreement with the known truth
    summary.json                headline numbers (see `logicval_hf.job.report.SUMMARY_KEYS`), timings per stage
    plots/*.png                 per-class and per-package bars per generator, agreement per package
    disagreements.json          every image where the metric and the known truth differ, worst first
    benchmark.json              the rows used (cache; reused on resume when seed and code are unchanged)
    images/<generator>/<id>.png     generated images
    intended/<generator>/<id>.json  the scene each generator intended and its metadata (known truth, change made)
    verdicts/<generator>/<id>.json  per-image verdict and perceived scene (cache, keyed by the backend, a hash
                                    of its code and model, and the image hash)

Every file is written to a temporary name in its directory and renamed into place, so an interrupted run
leaves no partial file; ``resume=True`` (default) reuses every image, intended scene and verdict already
written (checked against the spec, seed, backend and image hash), so a second run only redoes what is
missing. Generation and perception use ``jobs`` worker processes (default: up to 2).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
import multiprocessing as mp
import os
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from logicval_hf import __version__
from logicval_hf.common.atomic import atomic_write_bytes, atomic_write_json, remove_stale_temps
from logicval_hf.common.cpu import cpu_seconds
from logicval_hf.common.fingerprint import files_hash, modules_hash
from logicval_hf.benchmark.fingerprint import benchmark_fingerprint
from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES
from logicval_hf.asp.solver import DEFAULT_IMAGE_SIZE, Solver, Verdict, default_solver
from logicval_hf.contract.spec import Spec, as_spec

#: one line per stage (`logicval run` shows them on stderr; the progress bars show the rest)
log = logging.getLogger(__name__)

__all__ = ["DEFAULT_GENERATORS", "BUILTIN_GENERATORS", "run", "atomic_write_bytes", "atomic_write_json",
           "backend_fingerprint", "generator_fingerprint", "load_rows", "resolve_generators", "scene_diff"]

#: the built-in generators (`logicval_hf.generation.builtin.GENERATORS`), in report order
BUILTIN_GENERATORS = ("oracle", "naive", "perturbed")
DEFAULT_GENERATORS = BUILTIN_GENERATORS
DEFAULT_OUT = "logicval_report"
#: images perceived and verified per `compute` call (verdict files are written after each chunk)
SCORE_CHUNK = 128
#: worst disagreements kept per generator in the summary / report (all go to disagreements.json)
WORST_SHOWN = 15
_ROW_FIELDS = ("id", "package", "n", "m", "label", "classes", "templates", "spec_json", "witness", "core",
               "chance_rate", "prompt_short")
_GENERATOR_MODULES = ("generation/builtin", "generation/render", "contract/layout")


def _read_json(path: Path) -> Any | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _png_bytes(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Benchmark rows (cached on disk for resumed runs)
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def generator_fingerprint() -> str:
    """Hash of the generators' and renderer's sources: a generated image is reused only when it matches."""
    return modules_hash(_GENERATOR_MODULES, __version__)


def load_rows(seed: int = DEFAULT_SEED, cache: str | Path | None = None, reuse: bool = True) -> list[dict]:
    """The benchmark rows (the fields the job needs): read from ``cache`` when ``reuse`` and it matches the seed
    and the code, else built with `cached_benchmark` (and then written to ``cache``)."""
    fp = benchmark_fingerprint()
    if cache is not None and reuse:
        d = _read_json(Path(cache))
        if isinstance(d, dict) and d.get("seed") == seed and d.get("fingerprint") == fp and \
                isinstance(d.get("rows"), list):
            return d["rows"]
    from logicval_hf.benchmark.sampler import cached_benchmark

    bench = cached_benchmark(seed)  # memoised per process (keyed on the seed's value, so shared with callers)
    rows = [{k: r.get(k) for k in _ROW_FIELDS} for r in bench.all_rows()]
    if cache is not None:
        atomic_write_json(cache, {"seed": seed, "fingerprint": fp, "logicval_version": __version__, "rows": rows})
    return rows


def backend_fingerprint(backend: str) -> str:
    """A short hash of a perception backend's code and model: cached verdicts are reused only when it matches.

    Hashes the source files of the backend's functions and the model files it declares
    (`PerceptionBackend.model_files`: the clevr backend's trained weights), so a retrained or edited backend
    re-scores every image.

    Raises:
        UnknownNameError: no backend of that name (a `ValueError`).
    """
    from logicval_hf.perception import get_backend

    b = get_backend(backend)
    return files_hash([*b.source_files(), *b.model_files], f"{__version__}/{backend}")


def _limit_rows(rows: Sequence[dict], limit: int | None) -> list[dict]:
    """At most ``limit`` rows per package, evenly spaced through the package (so a small limit still reaches
    several classes of 1SAT), in benchmark order."""
    if limit is None:
        return list(rows)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number of specs per package, got {limit!r}")
    by_pkg: dict[str, list[dict]] = {}
    for r in rows:
        by_pkg.setdefault(r["package"], []).append(r)
    keep: set[str] = set()
    for members in by_pkg.values():
        k = len(members)
        picks = range(k) if k <= limit else sorted({(i * k) // limit for i in range(limit)})
        keep.update(members[i]["id"] for i in picks)
    return [r for r in rows if r["id"] in keep]


# ---------------------------------------------------------------------------------------------
# Generators to run: built-in names or folders of images
# ---------------------------------------------------------------------------------------------
def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "custom"


def resolve_generators(generators: Iterable[str] | str | None, image_folder: str | Path | None = None
                       ) -> list[tuple[str, Path | None]]:
    """``[(name, folder or None)]``: built-in names stay; anything else must be a folder of images and is named
    after the folder (``custom`` when that name is empty or taken)."""
    if isinstance(generators, (str, os.PathLike)):
        generators = [generators]
    items = list(generators or [])
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
            raise ValueError(f"generator {g_str!r} is neither one of {list(BUILTIN_GENERATORS)} nor a folder of images")
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


# ---------------------------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _worker_init() -> None:
    _WORKER.clear()
    _WORKER["solver"] = Solver()


class _Workers:
    """A pool of ``jobs`` processes for generation and perception tasks, started on first use.

    Workers come from a fresh interpreter (``forkserver``, else ``spawn``), never from a fork of this process:
    a forked child inherits locks of threads it does not have (OpenCV's thread pool once perception has run
    here, tqdm's monitor, clingo), which can deadlock it. With ``jobs == 1`` (or few tasks) tasks run here.
    Every task returns ``(result, CPU seconds it used)``.
    """

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._pool: Any = None

    def imap(self, fn: Any, tasks: Sequence[Any], chunksize: int = 2) -> Iterator[Any]:
        if self.jobs <= 1 or len(tasks) < 4:
            return map(fn, tasks)
        if self._pool is None:
            methods = mp.get_all_start_methods()
            ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
            self._pool = ctx.Pool(self.jobs, initializer=_worker_init)
        return self._pool.imap(fn, tasks, chunksize=chunksize)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


# ---------------------------------------------------------------------------------------------
# Stage 1: generation
# ---------------------------------------------------------------------------------------------
def _gen_task(task: tuple[str, int, tuple[int, int], dict, str, str, dict]) -> tuple[tuple[str, dict], float]:
    from logicval_hf.generation.builtin import make_generator

    c0 = time.process_time()
    name, seed, size, row, img_path, meta_path, render = task
    key = (name, seed, size, json.dumps(render, sort_keys=True))
    gen = _WORKER.get(key)
    if gen is None:
        solver = _WORKER.get("solver") or default_solver()
        gen = _WORKER[key] = make_generator(name, seed=seed, image_size=size, solver=solver, **render)
    image, scene, meta = gen.generate(row)
    data = _png_bytes(image)
    atomic_write_bytes(img_path, data)
    record = {
        "generator": name,
        "id": row["id"],
        "seed": seed,
        "image_size": list(size),
        "renderer": render.get("renderer", "numpy"),
        "spec_json": row["spec_json"],
        "image_sha1": _sha1(data),
        "generator_fingerprint": generator_fingerprint(),
        "metadata": meta,
        "intended": scene.to_dict(),
    }
    atomic_write_json(meta_path, record)
    return (row["id"], record), time.process_time() - c0


def _intended_ok(rec: Any, name: str, seed: int, size: tuple[int, int], row: Mapping[str, Any],
                 renderer: str = "numpy") -> bool:
    return (isinstance(rec, dict) and rec.get("generator") == name and rec.get("seed") == seed
            and rec.get("renderer", "numpy") == renderer
            and rec.get("image_size") == list(size) and rec.get("spec_json") == row["spec_json"]
            and rec.get("generator_fingerprint") == generator_fingerprint()
            and isinstance(rec.get("metadata"), dict) and isinstance(rec.get("intended"), dict))


def _generate(name: str, seed: int, size: tuple[int, int], rows: Sequence[dict], out: Path, resume: bool,
              workers: _Workers, progress: bool, render: Mapping[str, Any] | None = None
              ) -> tuple[dict[str, dict], dict[str, int], float]:
    """Images and intended scenes of one built-in generator: ``({id: record}, work counters, worker CPU s)``."""
    from tqdm.auto import tqdm

    img_dir, meta_dir = out / "images" / name, out / "intended" / name
    records: dict[str, dict] = {}
    tasks = []
    for row in rows:
        img, meta = img_dir / f"{row['id']}.png", meta_dir / f"{row['id']}.json"
        if resume and img.is_file():
            rec = _read_json(meta)
            if _intended_ok(rec, name, seed, size, row, (render or {}).get("renderer", "numpy")):
                records[row["id"]] = rec
                continue
        tasks.append((name, seed, tuple(size), row, str(img), str(meta), dict(render or {})))
    work = {"generated": len(tasks), "reused": len(records)}
    cpu = 0.0
    with tqdm(total=len(rows), initial=len(records), desc=f"generate {name}", unit="img", disable=not progress,
              leave=False, file=sys.stderr) as bar:
        for (rid, rec), c in workers.imap(_gen_task, tasks):
            records[rid] = rec
            cpu += c
            bar.update(1)
    return records, work, cpu


# ---------------------------------------------------------------------------------------------
# Stage 2: perception (workers) + verification through `evaluation.compute`
# ---------------------------------------------------------------------------------------------
def _worker_backend(name: str, backend: Any) -> None:
    """Make ``backend`` the one registered as ``name`` here: a worker process knows only the built-in backends,
    so one registered at run time travels with each task. Its ``init_worker`` runs once per worker process
    (only worker processes have a solver: `_worker_init`)."""
    from logicval_hf import perception

    if name not in perception.BACKENDS or perception.get_backend(name) != backend:
        perception.register_backend(name, backend, replace=True)
    started = _WORKER.setdefault("backends", set())
    if "solver" in _WORKER and name not in started:
        started.add(name)
        if backend.init_worker is not None:
            backend.init_worker()


def _perceive_task(task: tuple[str, str, Any]) -> tuple[tuple[dict | None, str | None], float]:
    """Scene graph of one image file: ``((scene dict, None) or (None, error), CPU seconds)``."""
    from logicval_hf.scoring.evaluation import to_scenes

    c0 = time.process_time()
    path, backend, definition = task
    _worker_backend(backend, definition)
    try:
        out: tuple[dict | None, str | None] = (to_scenes([Path(path)], backend=backend)[0].to_dict(), None)
    except ValueError as e:  # PerceptionError: unreadable / unusable image
        out = (None, str(e))
    return out, time.process_time() - c0


def _failed_verdict(row: Mapping[str, Any], why: str, detail: str | None = None) -> dict[str, Any]:
    """A failed generation (no image / unreadable image): false under both count modes, nothing satisfied."""
    return {
        "id": row["id"], "package": row["package"], "label": row["label"], "ok": False, "relaxed_ok": False,
        "count_ok": False, "violated": list(range(row["m"])), "n_objects": None, "scene": None,
        "failed": why, **({"error": detail} if detail else {}),
    }


def _score(name: str, items: Sequence[tuple[dict, Path | None]], out: Path, backend: str, resume: bool,
           workers: _Workers, progress: bool, solver: Solver, timings: dict[str, float], cpu: dict[str, float]
           ) -> tuple[dict[str, dict], dict]:
    """Verdicts ``{id: per-sample verdict}`` of one generator's images (cached per image).

    Workers perceive the images (and run ahead) while this process verifies them chunk by chunk with
    `evaluation.compute` on the perceived scene graphs; verdict files are written after every chunk.
    """
    from tqdm.auto import tqdm

    from logicval_hf.perception import get_backend
    from logicval_hf.scoring.evaluation import compute

    vdir = out / "verdicts" / name
    fingerprint = backend_fingerprint(backend)
    definition = get_backend(backend)
    verdicts: dict[str, dict] = {}
    pending: list[tuple[dict, Path, str]] = []
    reused = 0
    for row, path in items:
        if path is None:
            verdicts[row["id"]] = _failed_verdict(row, "missing")
            continue
        try:
            digest = _sha1(path.read_bytes())
        except OSError as e:
            verdicts[row["id"]] = _failed_verdict(row, "unreadable", str(e))
            continue
        if resume:
            rec = _read_json(vdir / f"{row['id']}.json")
            if (isinstance(rec, dict) and rec.get("backend") == backend and rec.get("image_sha1") == digest
                    and rec.get("backend_fingerprint") == fingerprint and rec.get("spec_json") == row["spec_json"]
                    and isinstance(rec.get("verdict"), dict)):
                verdicts[row["id"]] = rec["verdict"]
                reused += 1
                continue
        pending.append((row, path, digest))
    t_perceive = t_verify = c_perceive = c_verify = 0.0
    tasks = [(str(p), backend, definition) for _, p, _ in pending]
    try:
        pickle.dumps(definition)
        results = workers.imap(_perceive_task, tasks)
    except (pickle.PicklingError, AttributeError, TypeError):  # functions defined inside a function: stay here
        results = map(_perceive_task, tasks)
    with tqdm(total=len(items), initial=len(items) - len(pending), desc=f"score {name}", unit="img",
              disable=not progress, leave=False, file=sys.stderr) as bar:
        for start in range(0, len(pending), SCORE_CHUNK):
            chunk = pending[start:start + SCORE_CHUNK]
            t0, c0 = time.perf_counter(), cpu_seconds()
            scenes = []
            for _ in chunk:
                res, c = next(results)
                scenes.append(res)
                c_perceive += c
            t1, c1 = time.perf_counter(), cpu_seconds()
            good = []
            for (row, _, digest), (scene, error) in zip(chunk, scenes):
                if scene is None:
                    verdicts[row["id"]] = _failed_verdict(row, "unreadable", error)
                else:
                    good.append((row, digest, scene))
            if good:
                res = compute([g[2] for g in good], [g[0] for g in good], backend=backend, per_sample=True,
                              solver=solver)
                for (row, digest, _), sample in zip(good, res["per_sample"]):
                    verdicts[row["id"]] = sample
                    atomic_write_json(vdir / f"{row['id']}.json", {
                        "id": row["id"], "generator": name, "backend": backend, "backend_fingerprint": fingerprint,
                        "image_sha1": digest, "spec_json": row["spec_json"], "verdict": sample})
            t2, c2 = time.perf_counter(), cpu_seconds()
            t_perceive += t1 - t0
            t_verify += t2 - t1
            c_perceive += c1 - c0
            c_verify += c2 - c1
            bar.update(len(chunk))
    timings[f"perceive/{name}"] = t_perceive
    timings[f"verify/{name}"] = t_verify
    cpu[f"perceive/{name}"] = c_perceive
    cpu[f"verify/{name}"] = c_verify
    return verdicts, {"scored": len(pending), "reused_verdicts": reused}


# ---------------------------------------------------------------------------------------------
# Stage 3: analysis
# ---------------------------------------------------------------------------------------------
def _verdicts_of(v: Mapping[str, Any]) -> tuple[Verdict, Verdict]:
    n_obj = v.get("n_objects")
    n_obj = -1 if n_obj is None else int(n_obj)  # a failed generation is never an abstention
    violated = tuple(v.get("violated") or ())
    strict = Verdict(bool(v["ok"]), bool(v["count_ok"]), violated, v["label"], "strict", n_obj)
    relaxed = Verdict(bool(v["relaxed_ok"]), bool(v["count_ok"]), violated, v["label"], "relaxed", n_obj)
    return strict, relaxed


def _truth_verdicts(meta: Mapping[str, Any], n_objects: int) -> tuple[Verdict, Verdict]:
    violated = tuple(meta.get("truth_violated") or ())
    label = meta["label"]
    return (Verdict(bool(meta["truth_ok"]), bool(meta["truth_count_ok"]), violated, label, "strict", n_objects),
            Verdict(bool(meta["truth_relaxed_ok"]), bool(meta["truth_count_ok"]), violated, label, "relaxed",
                    n_objects))


def _scores(records: Sequence[Any]) -> dict[str, Any]:
    """`scoring.aggregate` plus the abstention rate per UNSAT package."""
    from logicval_hf.scoring.scores import aggregate

    agg = aggregate(records)
    abst: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.label == "UNSAT" and r.package:
            a = abst.setdefault(r.package, {"n": 0, "abstained": 0})
            a["n"] += 1
            a["abstained"] += int(r.abstained)
    agg["abstention_by_package"] = {k: {"n": v["n"], "rate": v["abstained"] / v["n"]} for k, v in sorted(abst.items())}
    return agg


def scene_diff(intended: Mapping[str, Any], perceived: Mapping[str, Any] | None) -> dict[str, Any]:
    """How a perceived scene differs from the intended one: objects matched greedily by nearest box centre
    (within a quarter of the image diagonal), then attribute and region mismatches counted.

    Returns ``{"missed", "extra", "attribute_errors", "region_errors", "errors" (the sum), "exact", "text"}``.
    """
    from logicval_hf.contract.scene import Scene

    a = Scene.from_dict(intended)
    if perceived is None:
        return {"missed": len(a), "extra": 0, "attribute_errors": 0, "region_errors": 0, "errors": len(a),
                "exact": False, "text": "no scene (failed generation)"}
    b = Scene.from_dict(perceived)
    w, h = a.image_size
    sx = b.image_size[0] / w if b.image_size[0] else 1.0
    sy = b.image_size[1] / h if b.image_size[1] else 1.0
    reach = 0.25 * (w * w + h * h) ** 0.5
    pairs = []
    for i, oa in enumerate(a.objects):
        for j, ob in enumerate(b.objects):
            dx = oa.center[0] - ob.center[0] / sx
            dy = oa.center[1] - ob.center[1] / sy
            d = (dx * dx + dy * dy) ** 0.5
            if d <= reach:
                pairs.append((d, i, j))
    pairs.sort()
    used_a: set[int] = set()
    used_b: set[int] = set()
    matches = []
    for _, i, j in pairs:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            matches.append((i, j))
    attr_err, reg_err, notes = 0, 0, []
    for i, j in sorted(matches):
        oa, ob = a.objects[i], b.objects[j]
        for k in a.domain.perceived_attributes:
            if oa.attributes[k] != ob.attributes[k]:
                attr_err += 1
                notes.append(f"obj {i} {k} {oa.attributes[k]}->{ob.attributes[k]}")
        if a.region(i) != b.region(j):
            reg_err += 1
            notes.append(f"obj {i} region {a.region(i)}->{b.region(j)}")
    missed = len(a) - len(matches)
    extra = len(b) - len(matches)
    head = []
    if missed:
        head.append(f"missed {missed}")
    if extra:
        head.append(f"{extra} extra")
    text = "; ".join(head + notes[:6] + (["..."] if len(notes) > 6 else [])) or "scene recovered exactly"
    errors = missed + extra + attr_err + reg_err
    return {"missed": missed, "extra": extra, "attribute_errors": attr_err, "region_errors": reg_err,
            "errors": errors, "exact": errors == 0, "text": text}


def _confusion(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    """Accuracy and confusion counts of (truth, metric) pairs; positive = satisfied."""
    tp = sum(1 for t, m in pairs if t and m)
    tn = sum(1 for t, m in pairs if not t and not m)
    fp = sum(1 for t, m in pairs if not t and m)
    fn = sum(1 for t, m in pairs if t and not m)
    n = len(pairs)
    return {"n": n, "accuracy": (tp + tn) / n if n else None, "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def _agreement(rows: Sequence[dict], intended: Mapping[str, dict], verdicts: Mapping[str, dict]
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    strict_pairs, relaxed_pairs, by_pkg = [], [], {}
    disagreements, exact = [], []
    for row in rows:
        rec, v = intended[row["id"]], verdicts[row["id"]]
        meta = rec["metadata"]
        t, m = bool(meta["truth_ok"]), bool(v["ok"])
        strict_pairs.append((t, m))
        relaxed_pairs.append((bool(meta["truth_relaxed_ok"]), bool(v["relaxed_ok"])))
        by_pkg.setdefault(row["package"], []).append((t, m))
        diff = scene_diff(rec["intended"], v.get("scene"))
        exact.append(diff["exact"])
        if t != m:
            disagreements.append({
                "id": row["id"], "package": row["package"], "label": row["label"],
                "truth": t, "metric": m, "kind": "false positive" if m else "false negative",
                "intended_objects": len(rec["intended"]["objects"]),
                "perceived_objects": v.get("n_objects"),
                "scene_errors": diff["errors"], "diff": diff["text"],
                "truth_violated": meta.get("truth_violated"), "metric_violated": v.get("violated"),
                "generation": meta.get("description"),
            })
    disagreements.sort(key=lambda d: (-d["scene_errors"], d["id"]))
    out = _confusion(strict_pairs)
    out["relaxed_accuracy"] = _confusion(relaxed_pairs)["accuracy"]
    out["by_package"] = {p: _confusion(by_pkg[p]) for p in PACKAGE_NAMES if p in by_pkg}
    out["scene_exact_rate"] = sum(exact) / len(exact) if exact else None
    out["disagreements"] = len(disagreements)
    out["worst"] = [d["id"] for d in disagreements[:WORST_SHOWN]]
    return out, disagreements


# ---------------------------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------------------------
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
) -> dict[str, Any]:
    """Generate, perceive, verify and report; returns the summary (also written to ``summary.json``).

    Args:
        out_dir: the report folder (created; see the module docstring for its layout).
        generators: built-in generator names (``oracle``, ``naive``, ``perturbed``) and/or folders of images
            named by benchmark id (scored as a model's outputs; named after the folder).
        seed: benchmark seed (`cached_benchmark`); also seeds the generators.
        backend: perception backend for `evaluation.compute` (default ``"clevr"``, the shipped CLEVR scene parser).
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
    Raises:
        ValueError: an unknown generator / missing folder, a bad ``limit``.
    """
    from logicval_hf.job.report import write_report

    t_start = time.perf_counter()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    plan = resolve_generators(generators, image_folder)
    backend_fingerprint(backend)  # an unknown or broken backend is reported before any work
    jobs = max(1, int(jobs if jobs is not None else min(2, os.cpu_count() or 1)))
    size = (int(image_size[0]), int(image_size[1]))
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    c_start = cpu_seconds()

    t0, c0 = time.perf_counter(), cpu_seconds()
    log.info("benchmark: reading or building the prompts (seed %s; a first run builds them in ~15 s)", seed)
    # the rows cache is checked against the seed and the code, so it is reused even without `resume`
    rows = _limit_rows(load_rows(seed, out / "benchmark.json", reuse=True), limit)
    timings["benchmark"] = time.perf_counter() - t0
    cpu["benchmark"] = cpu_seconds() - c0
    solver = default_solver()
    specs: dict[str, Spec] = {r["id"]: as_spec(r["spec_json"], solver.catalog) for r in rows}

    gens: dict[str, dict[str, Any]] = {}
    work: dict[str, dict[str, int]] = {}
    all_disagreements: dict[str, list[dict[str, Any]]] = {}
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
    workers = _Workers(jobs)
    try:
        for name, folder in plan:
            entry: dict[str, Any] = {"kind": "builtin" if folder is None else "folder",
                                     "folder": str(folder) if folder is not None else None}
            intended: dict[str, dict] | None = None
            t0, c0 = time.perf_counter(), cpu_seconds()
            if folder is None:
                intended, work[name], worker_cpu = _generate(name, seed, size, rows, out, resume, workers,
                                                             progress, render)
                items = [(r, out / "images" / name / f"{r['id']}.png") for r in rows]
            else:
                from logicval_hf.scoring.evaluation import images_in_folder

                found = images_in_folder(folder, [r["id"] for r in rows])
                items = [(r, found.get(r["id"])) for r in rows]
                work[name] = {"found": len(found)}
                worker_cpu = 0.0
            timings[f"generate/{name}"] = time.perf_counter() - t0
            cpu[f"generate/{name}"] = cpu_seconds() - c0 + worker_cpu
            verdicts, w = _score(name, items, out, backend, resume, workers, progress, solver, timings,
                                 cpu)
            work[name].update(w)

            from logicval_hf.scoring.scores import Record

            records = []
            for r in rows:
                strict, relaxed = _verdicts_of(verdicts[r["id"]])
                records.append(Record(specs[r["id"]], r["label"], strict, relaxed, r["package"], r["id"]))
            entry["n_images"] = sum(1 for _, p in items if p is not None)
            entry["missing"] = [r["id"] for r, _ in items if verdicts[r["id"]].get("failed") == "missing"]
            entry["unreadable"] = [r["id"] for r, _ in items if verdicts[r["id"]].get("failed") == "unreadable"]
            entry["metric"] = _scores(records)
            if intended is not None:
                truth_records = []
                for r in rows:
                    rec = intended[r["id"]]
                    strict, relaxed = _truth_verdicts(rec["metadata"], len(rec["intended"]["objects"]))
                    truth_records.append(Record(specs[r["id"]], r["label"], strict, relaxed, r["package"], r["id"]))
                entry["truth"] = _scores(truth_records)
                agreement, disagreements = _agreement(rows, intended, verdicts)
                entry["agreement"] = agreement
                all_disagreements[name] = disagreements
                if name == "perturbed":
                    kinds: dict[str, int] = {}
                    for r in rows:
                        m = intended[r["id"]]["metadata"]
                        k = f"{m['perturbation']['kind']}/{m['broken']['what']}"
                        kinds[k] = kinds.get(k, 0) + 1
                    entry["perturbations"] = dict(sorted(kinds.items()))
                    entry["inexact_perturbations"] = [r["id"] for r in rows
                                                      if not intended[r["id"]]["metadata"].get("exact", True)]
            else:
                entry["truth"] = None
                entry["agreement"] = None
            gens[name] = entry
    finally:
        workers.close()
        remove_stale_temps(out)

    t0, c0 = time.perf_counter(), cpu_seconds()
    summary = {
        "logicval_version": __version__,
        "seed": seed,
        "backend": backend,
        "backend_fingerprint": backend_fingerprint(backend),
        "image_size": list(size),
        "limit": limit,
        "n_specs": len(rows),
        "packages": {p: sum(1 for r in rows if r["package"] == p) for p in PACKAGE_NAMES},
        "generators": gens,
        "jobs": jobs,
        "timings": timings,
        "cpu_seconds": cpu,
        "work": work,
    }
    log.info("report: writing %s", out)
    worst = {name: d[:WORST_SHOWN] for name, d in all_disagreements.items()}
    atomic_write_json(out / "disagreements.json", all_disagreements, indent=1)
    write_report(out, summary, worst, timings_start=t0, total_start=t_start, cpu_start=(c0, c_start))
    return summary
