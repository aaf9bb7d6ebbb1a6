"""Training prompts apart from the test set: ``logicval build-prompts --n 50000 --seed S --out DIR``.

A reward model trained on the test set is worthless, so RL fine-tuning against LogicVal needs its own prompts. They
are sampled exactly as the benchmark is (`logicval_hf.benchmark.sampler.sample`: the same templates, the same six
packages in the same proportions, solver labels, tautologies rejected), in shards of 509 drawn with seeds derived
from ``S``; a spec whose canonical key (`dedup_key`: n plus the sorted constraint keys) is one of the 509 benchmark
specs, or of an earlier shard, is dropped. The written folder is checked again by key before the summary reports
``overlap_with_benchmark: 0``.

The folder::

    train_metadata.jsonl   the training prompts, one LogicVal item per line: {"id", "prompt", "tag" (the package),
                           "spec_json", "label"}; Flow-GRPO's GenEval-style datasets read <split>_metadata.jsonl
                           and send each line as the image's metadata, so the reward server scores it as is
    test_metadata.jsonl    the 509 benchmark prompts in the same form (ids as in the published dataset)
    README.md              a card with `configs`, so that datasets.load_dataset(DIR) loads both splits
    shards/                the shards (the run resumes from them; each written atomically)

GenEval-style users get the same from their own metadata through ``logicval import geneval``.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES, Sampled, dedup_key, sample
from logicval_hf.common.atomic import atomic_write_jsonl, atomic_write_text
from logicval_hf.contract.spec import Spec

__all__ = ["build_prompts", "shard_seed", "item_row"]


def shard_seed(seed: int, shard: int) -> int:
    """The sampling seed of one shard: a stable 63-bit hash of the run's seed and the shard's number (never a
    small integer such as the benchmark's 509)."""
    digest = hashlib.sha256(f"logicval-train/{seed}/{shard}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def item_row(row_id: str, package: str, s: Sampled) -> dict[str, Any]:
    """One line of ``*_metadata.jsonl``: a LogicVal item the reward server reads (`logicval_hf.serve.items`)."""
    from logicval_hf.contract.verbalise import full_prompt

    return {"id": row_id, "prompt": full_prompt(s.spec, "short"), "tag": package, "spec_json": s.spec.to_json(),
            "label": s.result.label}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _key(row: Mapping[str, Any]) -> str:
    return dedup_key(Spec.from_dict(row["spec_json"]))


def _benchmark() -> tuple[list[dict[str, Any]], set[str]]:
    """The benchmark's 509 rows as items (ids as the published dataset numbers them) and their keys."""
    packages, _ = sample(DEFAULT_SEED)
    rows = [item_row(f"{name}-{i:04d}", name, s) for name in PACKAGE_NAMES for i, s in enumerate(packages[name], 1)]
    return rows, {dedup_key(s.spec) for name in PACKAGE_NAMES for s in packages[name]}


def _shard(seed: int, k: int, seen: set[str]) -> tuple[list[dict[str, Any]], int]:
    """Shard ``k``: its new rows (shuffled, so a truncated last shard keeps the packages' mix) and how many of its
    specs were dropped as already seen."""
    packages, _ = sample(shard_seed(seed, k))
    rows, dropped = [], 0
    for name in PACKAGE_NAMES:
        for i, s in enumerate(packages[name], 1):
            key = dedup_key(s.spec)
            if key in seen:
                dropped += 1
                continue
            seen.add(key)
            rows.append(item_row(f"train-{seed}-{k:05d}-{name}-{i:04d}", name, s))
    random.Random(f"logicval-train/{seed}/{k}/order").shuffle(rows)
    return rows, dropped


def _card(n: int, seed: int, counts: Mapping[str, int]) -> str:
    lines = "\n".join(f"| {p} | {counts.get(p, 0)} |" for p in PACKAGE_NAMES)
    return f"""---
configs:
- config_name: default
  data_files:
  - split: train
    path: train_metadata.jsonl
  - split: test
    path: test_metadata.jsonl
---
# LogicVal training prompts (seed {seed})

{n} specifications sampled as the LogicVal benchmark is (same templates, same six packages, solver labels), none of
them one of the benchmark's 509 specs by canonical key (n and the sorted constraints). `train` is for RL
fine-tuning against `logicval serve`; `test` is the benchmark itself. Each row is a LogicVal item (`spec_json`,
`tag` = package, `label`, `prompt`) that the reward server scores as sent.

| package | train prompts |
|---|---|
{lines}
"""


def build_prompts(out: str | Path, n: int = 50_000, seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """Sample ``n`` training prompts apart from the benchmark into ``out`` (module docstring); resumes from the
    shards already in ``out/shards``.

    Args:
        out: the folder to write.
        n: how many training prompts.
        seed: the run's seed (shard k samples with `shard_seed(seed, k)`).
        progress: show a progress bar.
    Returns:
        A summary: folder, train and test sizes, per-package counts, specs dropped as duplicates, shards (reused and
        sampled), ``overlap_with_benchmark`` (0) and seconds.
    Raises:
        ValueError: ``n`` below 1.
    """
    from tqdm.auto import tqdm

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    start = time.perf_counter()
    out = Path(out)
    shards = out / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    test_rows, bench_keys = _benchmark()
    seen = set(bench_keys)
    train: list[dict[str, Any]] = []
    dropped = reused = sampled = 0
    k = 0
    with tqdm(total=n, desc="training prompts", unit="prompt", disable=not progress) as bar:
        while len(train) < n:
            path = shards / f"shard-{k:05d}.jsonl"
            if path.is_file():  # resumed: a shard is written whole or not at all
                rows = _read_jsonl(path)
                seen.update(_key(r) for r in rows)
                reused += 1
            else:
                rows, lost = _shard(seed, k, seen)
                dropped += lost
                atomic_write_jsonl(path, rows)
                sampled += 1
            take = rows[: n - len(train)]
            train.extend(take)
            bar.update(len(take))
            k += 1
    overlap = sum(_key(r) in bench_keys for r in train)
    if overlap or len({_key(r) for r in train}) != len(train):  # the sampling excludes both; checked on the output
        raise RuntimeError(f"internal error: {overlap} training prompts are benchmark specs, or some repeat")
    counts: dict[str, int] = {}
    for r in train:
        counts[r["tag"]] = counts.get(r["tag"], 0) + 1
    atomic_write_jsonl(out / "train_metadata.jsonl", train)
    atomic_write_jsonl(out / "test_metadata.jsonl", test_rows)
    atomic_write_text(out / "README.md", _card(len(train), seed, counts))
    return {"folder": str(out), "train": len(train), "test": len(test_rows), "packages": counts,
            "dropped_duplicates": dropped, "shards_sampled": sampled, "shards_reused": reused,
            "overlap_with_benchmark": overlap, "seconds": round(time.perf_counter() - start, 1)}
