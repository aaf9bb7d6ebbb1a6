"""Upload a built LogicVal folder to the Hugging Face Hub as a dataset repository.

    HF_TOKEN=... python dataset_builder/push.py logicval --repo-id logicval/logicval [--dry-run]

Same as `logicval push-dataset`; the work is done by `logicval_hf.benchmark.dataset.push_dataset`
(``HfApi().create_repo(..., exist_ok=True)`` then ``HfApi().upload_folder(repo_type="dataset")``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from logicval_hf.benchmark.dataset import push_dataset


def push(folder: str | Path, repo_id: str = "logicval/logicval", token: str | None = None,
         dry_run: bool = False) -> list[str]:
    """Upload ``folder`` (README.md + data/*.parquet) to ``repo_id``; the token defaults to $HF_TOKEN.

    ``dry_run`` prints and returns the file list without touching the network. Without a token (and not a
    dry run) raises `ValueError`.
    """
    return push_dataset(folder, repo_id=repo_id, token=token, dry_run=dry_run)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--repo-id", default="logicval/logicval")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    try:
        push(args.folder, args.repo_id, dry_run=args.dry_run)
    except ValueError as e:
        print(f"push: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
