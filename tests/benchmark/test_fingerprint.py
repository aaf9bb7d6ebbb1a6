"""The benchmark's code fingerprint is computed from what the build imports, so a new module cannot leave it
stale; the user-level cache keyed by it (`logicval_hf.benchmark.store`) spares a second process the build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import write_tree

from logicval_hf.benchmark import sampler, store
from logicval_hf.benchmark.fingerprint import benchmark_fingerprint, benchmark_sources
from logicval_hf.common.fingerprint import PACKAGE_ROOT
from logicval_hf.common.paths import user_cache_dir, user_data_dir

REPO = PACKAGE_ROOT.parent


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "logicval_hf", {  # named like ours, the builder at the builder's place
        "__init__.py": "",
        "benchmark/__init__.py": "",
        "benchmark/sampler.py": "from logicval_hf.rules import RULE\n\ndef build():\n"
                                "    from logicval_hf.late import LATE\n    return RULE + LATE\n",
        "rules/__init__.py": "RULE = 1\n",
        "rules/table.json": "{}\n",
        "rules/tables/more.lp": "a.\n",
        "late.py": "LATE = 2\n",
        "unrelated.py": "X = 3\n",
    })


def _names(files: list[Path], package: Path) -> set[str]:
    return {f.relative_to(package).as_posix() for f in files}


def test_the_sources_are_what_the_builder_reaches(small):
    assert _names(benchmark_sources(small), small) == {
        "__init__.py", "benchmark/__init__.py", "benchmark/sampler.py", "rules/__init__.py", "late.py",
        "rules/table.json", "rules/tables/more.lp"}


def test_a_module_the_build_starts_to_import_is_in_the_fingerprint(small):
    before = benchmark_fingerprint(small)
    (small / "unrelated.py").write_text("X = 4\n")
    assert benchmark_fingerprint(small) == before  # not imported by the build: no reason to rebuild
    (small / "late.py").write_text("LATE = 5\n")  # reached through a function-level import
    changed = benchmark_fingerprint(small)
    assert changed != before
    (small / "newer.py").write_text("NEW = 1\n")
    (small / "late.py").write_text("from logicval_hf.newer import NEW\nLATE = NEW\n")
    with_new = benchmark_fingerprint(small)
    assert "newer.py" in _names(benchmark_sources(small), small)
    (small / "newer.py").write_text("NEW = 2\n")
    assert benchmark_fingerprint(small) != with_new
    (small / "rules" / "table.json").write_text('{"x": 1}\n')  # a data file beside a reached module
    assert benchmark_fingerprint(small) != with_new


def test_every_module_a_real_build_loads_is_in_the_fingerprint():
    """Differential against Python: label, render and rate one spec as the build does, in a fresh process, and
    compare the package modules it loaded with the fingerprint's sources."""
    code = textwrap.dedent("""
        import sys
        from logicval_hf.asp.solver import Solver
        from logicval_hf.benchmark import sampler
        from logicval_hf.contract.catalog import load_catalog
        from logicval_hf.contract.spec import Spec
        catalog = load_catalog()
        solver = Solver(catalog, max_specs=8)
        spec = Spec.from_dict({"n": 4, "constraints": [{"template": "C8/1prop_exact", "params": {
            "A1": {"prop": "color", "value": "red", "negated": False}, "K": 9}}]})
        result = solver.solve(spec)
        chance = sampler.chance_rates([spec], scenes=4, solver=solver)
        sampler.make_row("1UNSAT-0001", "1UNSAT", spec, result, chance[spec.key()], catalog)
        sampler.unsat_causes(spec)
        print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] == "logicval_hf")))
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "LOGICVAL_CACHE": "off"})
    assert out.returncode == 0, out.stderr[-2000:]
    sources = {".".join(("logicval_hf", *p.relative_to(PACKAGE_ROOT).with_suffix("").parts)).removesuffix(".__init__")
               for p in benchmark_sources() if p.suffix == ".py"}
    loaded = set(out.stdout.split()) - {"logicval_hf.common.version"}  # the version salts the hash already
    assert loaded <= sources, sorted(loaded - sources)


def test_the_user_cache_folder_follows_the_environment(tmp_path):
    assert user_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "logicval"
    assert user_cache_dir({"LOGICVAL_CACHE": str(tmp_path / "c"), "XDG_CACHE_HOME": "/x"}) == tmp_path / "c"
    assert user_cache_dir({"LOGICVAL_CACHE": "off"}) is None
    assert user_cache_dir({}) == Path.home() / ".cache" / "logicval"
    assert user_data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "logicval"


def test_a_stored_benchmark_is_read_back_instead_of_built(tmp_path, monkeypatch):
    built = sampler.cached_benchmark()  # this test run's build (tests/conftest.py builds it once)
    calls = []

    def counting_build(seed, progress=False):
        calls.append(seed)
        return built

    monkeypatch.setattr(sampler, "build_benchmark", counting_build)
    first = sampler.stored_benchmark(sampler.DEFAULT_SEED, tmp_path)
    again = sampler.stored_benchmark(sampler.DEFAULT_SEED, tmp_path)
    assert calls == [sampler.DEFAULT_SEED]
    assert again.rows == first.rows == built.rows and again.streams == built.streams
    path = store.stored_file(sampler.DEFAULT_SEED, tmp_path)
    assert path is not None and path.is_file() and benchmark_fingerprint() in path.name
    path.write_bytes(b"torn")  # an unreadable file is built again, with a warning
    assert sampler.stored_benchmark(sampler.DEFAULT_SEED, tmp_path).rows == built.rows
    assert calls == [sampler.DEFAULT_SEED] * 2
    assert sampler.stored_benchmark(sampler.DEFAULT_SEED, None).rows == built.rows  # None: nothing kept
    assert calls == [sampler.DEFAULT_SEED] * 3 and sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_second_process_reads_the_user_cache(tmp_path):
    """`cached_benchmark` in a fresh process (a new --out folder, a new build-dataset) reads what another wrote."""
    bench = sampler.cached_benchmark()
    assert sampler.keep_benchmark(bench, tmp_path) == store.stored_file(bench.seed, tmp_path)
    code = ("from logicval_hf.benchmark import sampler\n"
            "def refuse(*a, **k):\n    raise SystemExit('built again')\n"
            "sampler.build_benchmark = refuse\n"
            "import json; b = sampler.cached_benchmark()\n"
            "print(json.dumps({k: [r['id'] for r in v] for k, v in b.rows.items()}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "LOGICVAL_CACHE": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == {k: [r["id"] for r in v] for k, v in bench.rows.items()}
