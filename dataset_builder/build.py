"""Build the Hub-ready LogicVal dataset folder: ``data/<config>.parquet`` for the six packages + ``README.md``.

    python dataset_builder/build.py --out logicval [--seed 509]      # same as `logicval build-dataset`

A thin shell: the sampler is `logicval_hf.benchmark.sampler`, the folder and card writer `logicval_hf.benchmark.dataset`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from logicval_hf.benchmark.sampler import DEFAULT_SEED
from logicval_hf.benchmark.dataset import write_dataset


def build(out: str | Path = "logicval", seed: int = DEFAULT_SEED, progress: bool = True) -> dict[str, Any]:
    """Write the folder ``out`` (parquet files written atomically) and return a summary dict."""
    return write_dataset(out, seed=seed, progress=progress)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="logicval", help="output folder (default ./logicval)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"sampling seed (default {DEFAULT_SEED})")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    info = build(args.out, args.seed, progress=not args.no_progress)
    print(f"wrote {info['folder']}: " + ", ".join(f"{k} {v}" for k, v in info["rows"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
