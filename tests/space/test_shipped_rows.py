"""The Space ships the built benchmark rows, so a fresh Space shows Explore at once instead of building them first.
They are used only while the code that decides the rows is unchanged; `python -m logicval_hf.space.common`
rewrites them."""

from __future__ import annotations

import json
import lzma

import pytest

from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES, cached_benchmark
from logicval_hf.space import common

REFRESH = "python -m logicval_hf.space.common"


def test_the_shipped_rows_are_the_current_benchmark():
    assert common.SHIPPED_ROWS.is_file(), f"no shipped rows: run `{REFRESH}`"
    with lzma.open(common.SHIPPED_ROWS, "rt", encoding="utf-8") as fh:
        shipped = json.load(fh)
    assert shipped["fingerprint"] == common.fingerprint(), (
        f"the code that decides the benchmark rows changed since {common.SHIPPED_ROWS.name} was written: run "
        f"`{REFRESH}` and commit the file (a fresh Space would otherwise build the rows before showing Explore)")
    bench = cached_benchmark()
    assert shipped["seed"] == DEFAULT_SEED and list(shipped["rows"]) == sorted(PACKAGE_NAMES)
    for name in PACKAGE_NAMES:
        assert shipped["rows"][name] == json.loads(json.dumps(list(bench.rows[name]))), name


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A Space process that has not loaded the rows yet, with an empty disk cache."""
    monkeypatch.setattr(common, "_rows", {})
    monkeypatch.setattr(common, "load_info", {})
    monkeypatch.setattr(common, "_cache_dir", tmp_path / "cache")
    return tmp_path / "cache"


def test_a_fresh_space_reads_the_shipped_rows_without_building(fresh, monkeypatch):
    def no_build(*a, **k):
        raise AssertionError("the rows were built although shipped")

    monkeypatch.setattr(common, "cached_benchmark", no_build)
    row = common.get_row("3UNSAT-0001")
    assert common.load_info[DEFAULT_SEED]["how"] == "shipped"
    assert row["id"] == "3UNSAT-0001" and row == json.loads(json.dumps(dict(cached_benchmark().rows["3UNSAT"][0])))


def test_rows_shipped_by_other_code_are_not_used(fresh, monkeypatch, tmp_path):
    monkeypatch.setattr(common, "fingerprint", lambda: "other code")
    assert common.read_shipped() is None
    path = common.write_shipped(tmp_path / "rows.json.xz", preset=0)  # written by "this" code: used
    assert common.read_shipped(path=path) is not None
    assert common.read_shipped(DEFAULT_SEED + 1, path=path) is None  # another seed's request
    (tmp_path / "broken.json.xz").write_bytes(b"not xz")
    assert common.read_shipped(path=tmp_path / "broken.json.xz") is None
