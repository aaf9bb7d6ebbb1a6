"""Upload a built LogicVal folder to the Hugging Face Hub as a dataset repository.

    HF_TOKEN=... python dataset_builder/push.py logicval [--repo-id OWNER/NAME] [--dry-run] [--private]

Runs ``logicval push-dataset`` itself (`logicval_hf.cli.dataset`): the same flags, help, checks and messages;
the repository defaults to ``<LOGICVAL_HUB_NAMESPACE>/logicval`` (`logicval_hf.common.hub`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from logicval_hf.cli.dataset import main as dataset_main


def main(argv: Sequence[str] | None = None) -> int:
    return dataset_main(["push-dataset", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
