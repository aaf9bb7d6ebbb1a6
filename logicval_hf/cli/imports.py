"""Former name of `logicval_hf.cli.import_prompts` (the ``logicval import`` command), kept so that old imports and
``python -m logicval_hf.cli.imports`` keep working."""

import sys

from logicval_hf.cli.import_prompts import add_subcommands, cmd_import, main

__all__ = ["add_subcommands", "cmd_import", "main"]

if __name__ == "__main__":
    sys.exit(main())
