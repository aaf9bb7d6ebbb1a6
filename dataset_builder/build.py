"""Build the Hub-ready LogicVal dataset folder: ``data/<config>.parquet`` for the six packages + ``README.md``.

    python dataset_builder/build.py --out logicval [--seed 509] [--no-progress]

Runs ``logicval build-dataset`` itself (`logicval_hf.cli.dataset`): the same flags, help, checks and messages.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from logicval_hf.cli.dataset import main as dataset_main


def main(argv: Sequence[str] | None = None) -> int:
    return dataset_main(["build-dataset", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
