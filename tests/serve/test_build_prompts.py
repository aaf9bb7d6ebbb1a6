"""``logicval build-prompts``: training prompts sampled as the benchmark is, none of them a benchmark spec, resumable,
loadable with load_dataset, and every line an item the reward server reads."""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

from logicval_hf.benchmark.sampler import PACKAGE_NAMES, cached_benchmark, dedup_key
from logicval_hf.benchmark.training_prompts import shard_seed
from logicval_hf.cli.main import main
from logicval_hf.contract.spec import Spec
from logicval_hf.serve.items import read_item

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _run(*args: str) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["build-prompts", "--no-progress", *args]) == 0
    return json.loads(buf.getvalue())


def _lines(path) -> list[dict]:
    return [json.loads(s) for s in path.read_text().splitlines()]


def test_shard_seeds_are_stable_and_never_the_benchmarks():
    assert shard_seed(0, 0) == shard_seed(0, 0) != shard_seed(0, 1) != shard_seed(1, 0)
    assert all(shard_seed(s, k) > 2**32 for s in range(3) for k in range(3))


@pytest.mark.slow  # each shard samples 509 specs with the solver (~5 s)
def test_training_prompts_avoid_the_benchmark_resume_and_load(tmp_path):
    out = tmp_path / "prompts"
    first = _run("--n", "40", "--seed", "5", "--out", str(out))
    assert first["train"] == 40 and first["test"] == 509 and first["overlap_with_benchmark"] == 0
    head = _lines(out / "train_metadata.jsonl")
    second = _run("--n", "600", "--seed", "5", "--out", str(out))
    assert second["shards_reused"] == 1 and second["shards_sampled"] == 1 and second["train"] == 600
    train = _lines(out / "train_metadata.jsonl")
    assert train[:40] == head  # resumed from the first shard, same rows in the same order
    bench = {dedup_key(Spec.from_dict(r["spec_json"])) for r in cached_benchmark().all_rows()}
    keys = [dedup_key(Spec.from_dict(r["spec_json"])) for r in train]
    assert not bench & set(keys) and len(set(keys)) == len(keys)
    assert set(second["packages"]) == set(PACKAGE_NAMES) and second["packages"]["1SAT"] > second["packages"]["6SAT"]
    test = _lines(out / "test_metadata.jsonl")
    by_id = {r["id"]: r for r in cached_benchmark().all_rows()}
    assert all(by_id[r["id"]]["spec_json"] == r["spec_json"] and by_id[r["id"]]["label"] == r["label"] for r in test)
    tasks = [read_item(r) for r in train[:50]]
    assert all(t.kind == "logicval" and t.groups == (r["tag"],) for t, r in zip(tasks, train[:50], strict=True))

    import datasets

    ds = datasets.load_dataset(str(out))
    assert ds["train"].num_rows == 600 and ds["test"].num_rows == 509
