import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# The tests' models are tiny: intra-op threads only add hand-off cost, and on a shared 2-core machine (or two xdist
# workers) OpenMP's spinning threads burn several times the CPU they save. One thread each, unless set already;
# read by torch (and numpy's BLAS) when first imported, and inherited by the subprocesses the tests start.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The user-level cache (built benchmark rows; logicval_hf.common.paths) stays untouched by tests: off unless set.
# The tests of the cache itself point it at a temporary folder.
os.environ.setdefault("LOGICVAL_CACHE", "off")

# ---------------------------------------------------------------------------------------------------------------
# Running in parallel: `pytest` uses every core (`-n auto` in pyproject.toml's addopts; pytest-xdist, in the `test`
# extra; `-n 0`: one process, `-n 2`: two workers; see the README's Tests).
#
# * Whole files go to one worker (unless another --dist is given), so a module-scoped fixture (the Space's server,
#   the job's first run, the grounded CLEVR dev scenes, the tiny models) is built once; the files of a group in
#   _TOGETHER share a worker too (what they import costs seconds per process).
# * The longest work goes out first (_ORDER), so the workers finish together.
# * The 509-prompt benchmark (`cached_benchmark`, ~15 s) is built once per run: the first worker that needs it
#   builds it and leaves a pickle in the run's shared temp folder, the others read it.
# And with -m "not slow" (with or without -n) the built benchmark is kept for the next such run while the code that
# builds it is unchanged (`_benchmark_built_once`). The whole suite in one process (`pytest -n 0`): only the thread
# setting above applies.
# ---------------------------------------------------------------------------------------------------------------
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")

# Handed out in this order, then the other files, most tests first (a file missing here only costs balance): the
# ML-stack group first (below), then the Space, whose worker builds the benchmark at once; then work that does not
# need the benchmark, longest first; last the job and the dataset, which by then read that build instead of waiting.
# Single-process seconds of the inner loop's part of each (measured on a quiet 2-core machine).
_ML_STACK = "tests/scoring/test_metric_module.py"
_ORDER = [
    # the whole suite's longest files first (seconds of their slow tests; a few in the inner loop), so that neither
    # worker is left with one of them at the end
    "tests/repair/test_differential.py",  # ~160
    "tests/repair/test_box_relations.py",  # ~80
    _ML_STACK,  # ~33 s with the files grouped with it
    "tests/space/test_space.py",  # ~10 s, 3.5 of them importing gradio
    "tests/asp/test_solver.py",  # ~6
    "tests/generation/test_render.py",  # ~6
    "tests/benchmark/test_import_imag_eval.py",  # ~6
    "tests/contract/test_reference.py",  # ~4
    "tests/asp/test_clevr_differential.py",  # ~4
    "tests/job/test_run.py",  # ~8
    "tests/benchmark/test_benchmark.py",  # ~6
]
# file -> the file whose worker it runs on. Whatever imports torch, transformers, diffusers or evaluate runs on one
# worker: `import evaluate` alone imports transformers' pipelines and torch (~8 s), and each worker would pay that.
_TOGETHER = {f"tests/{name}.py": _ML_STACK for name in (
    "cli/test_neural_offline", "generation/test_families", "generation/test_generate",
    "perception/test_coco_perception", "perception/test_perception_neural", "perception/test_scene_parser",
    "scoring/test_baselines", "scoring/test_coco_metric", "training/test_attribute_classifier",
    "training/test_lora_training")}


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _unit(nodeid: str) -> str:
    path = _file(nodeid)
    return _TOGETHER.get(path, path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N` alone: whole files (and _TOGETHER groups) per worker, in the order of `pytest_collection_modifyitems`."""
    if config.getoption("dist") != "load":
        return None  # an explicit --dist other than load: xdist's own scheduler
    from xdist.scheduler import LoadScopeScheduling

    class FileGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False  # keep our longest-first order (not xdist's most-tests-first)
    return FileGroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    if XDIST_WORKER is None:
        return
    rank = {path: i for i, path in enumerate(_ORDER)}
    count: dict[str, int] = {}
    for item in items:
        count[_unit(item.nodeid)] = count.get(_unit(item.nodeid), 0) + 1
    # a stable sort (every worker sorts alike): each file's tests keep their order
    items.sort(key=lambda item: (rank.get(_unit(item.nodeid), len(rank)), -count[_unit(item.nodeid)],
                                 _unit(item.nodeid), _file(item.nodeid)))


def pytest_configure(config):
    import helpers

    helpers.INNER_LOOP = "not slow" in (config.getoption("markexpr") or "")


def _reuse_folder(config) -> Path | None:
    """Where a run that leaves out the slow tests keeps the built benchmark for the next such run (None: it does
    not). The whole suite always builds it afresh."""
    if "not slow" not in (config.getoption("markexpr") or ""):
        return None
    where = os.environ.get("LOGICVAL_TEST_CACHE", "").strip()
    if where.lower() in ("off", "0", "no", "false"):
        return None
    if where:
        return Path(where).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or Path.home() / ".cache") / "logicval-tests"


def _benchmark_code_key(seed: int) -> str:
    """A hash of everything the benchmark build runs: the package's top level and its benchmark, contract, asp and
    common rooms (every file: code, catalog, domains, ASP programs; the build imports nothing else), clingo's and
    Python's versions and the seed. Broader than the package's own `benchmark_fingerprint`, on purpose."""
    import hashlib

    import clingo

    import logicval_hf

    root = Path(logicval_hf.__file__).resolve().parent
    h = hashlib.sha256(f"seed {seed}; clingo {clingo.__version__}; python {sys.version}".encode())
    files = [root / "__init__.py", root / "errors.py"]
    for room in ("benchmark", "contract", "asp", "common"):
        files += sorted(p for p in (root / room).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for f in files:
        if f.is_file():
            h.update(f"{f.relative_to(root).as_posix()}\0{f.stat().st_size}\0".encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:20]


@pytest.fixture(scope="session", autouse=True)
def _benchmark_built_once(request, tmp_path_factory):
    """`cached_benchmark()` (the package's in-process cache of the 509-prompt benchmark, ~15 s to build) built once:
    under xdist by the first worker that needs it, which leaves a pickle for the other (in the run's temp folder,
    under a file lock); and in a run that leaves out the slow tests, kept for the next such run as long as the code
    it runs is unchanged (`_reuse_folder`, `_benchmark_code_key`; LOGICVAL_TEST_CACHE=off: never). Otherwise
    (`pytest -n 0`, the whole suite in one process) the package's own cache as it is."""
    reuse = _reuse_folder(request.config)
    if XDIST_WORKER is None and reuse is None:
        yield
        return
    try:
        import contextlib
        import functools
        import pickle
        import threading

        from filelock import FileLock

        from logicval_hf.benchmark import sampler
    except ImportError:
        yield
        return
    original = getattr(sampler, "_cached_benchmark", None)
    if original is None or not callable(getattr(sampler, "build_benchmark", None)):
        yield
        return
    run_folder = tmp_path_factory.getbasetemp()
    if XDIST_WORKER is not None:
        run_folder = run_folder.parent  # the run's folder: the workers' basetemps are gw0, gw1, ... inside it
    lock = threading.Lock()

    def build_and_keep(seed: int):
        path = run_folder / f"benchmark-{seed}.pickle"
        if reuse is not None:
            with contextlib.suppress(OSError):
                reuse.mkdir(parents=True, exist_ok=True)
            if os.access(reuse, os.W_OK):
                path = reuse / f"benchmark-{seed}-{_benchmark_code_key(seed)}.pickle"
        with lock, FileLock(str(path) + ".lock"):
            with contextlib.suppress(Exception):  # none yet, or a torn or foreign file: build it (again)
                with open(path, "rb") as fh:
                    bench = pickle.load(fh)
                if isinstance(bench, sampler.Benchmark) and bench.seed == seed:
                    return bench
            bench = sampler.build_benchmark(seed)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                pickle.dump(bench, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        if reuse is not None and path.parent == reuse:  # keep the newest few builds
            kept = sorted(reuse.glob(f"benchmark-{seed}-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[4:]:
                for f in (old, old.with_name(old.name + ".lock")):
                    with contextlib.suppress(OSError):
                        f.unlink()
        return bench

    sampler._cached_benchmark = functools.lru_cache(maxsize=1)(build_and_keep)
    try:
        yield
    finally:
        sampler._cached_benchmark = original
