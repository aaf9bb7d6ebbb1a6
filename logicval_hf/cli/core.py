"""The commands ``logicval_hf.cli.core`` used to hold, one module each now: ``solve`` (`logicval_hf.cli.solve`),
``verify`` (`logicval_hf.cli.verify`), ``check`` (`logicval_hf.cli.check`), ``asp`` and ``run-asp``
(`logicval_hf.cli.asp_programs`) and ``demo`` (`logicval_hf.cli.demo`). Kept so that its names and
``python -m logicval_hf.cli.core ...`` keep working; nothing in the package imports it."""

from __future__ import annotations

import sys
from typing import Any

from logicval_hf.cli import asp_programs, check, demo, solve, verify
from logicval_hf.cli.asp_programs import cmd_asp, cmd_run_asp
from logicval_hf.cli.check import cmd_check
from logicval_hf.cli.demo import cmd_demo
from logicval_hf.cli.dispatch import standalone
from logicval_hf.cli.solve import EXIT_NO_WITNESS, cmd_solve
from logicval_hf.cli.verify import cmd_verify, scene_of

__all__ = ["EXIT_NO_WITNESS", "GROUPS", "add_subcommands", "cmd_asp", "cmd_check", "cmd_demo", "cmd_run_asp",
           "cmd_solve", "cmd_verify", "main", "scene_of"]

#: the command modules, in the order ``logicval --help`` lists their commands
GROUPS = (solve, verify, check, asp_programs, demo)


def add_subcommands(sub: Any) -> None:
    """Register ``solve``, ``verify``, ``check``, ``asp``, ``run-asp`` and ``demo`` on the ``logicval`` subparsers."""
    for group in GROUPS:
        group.add_subcommands(sub)


#: ``python -m logicval_hf.cli.core``: these commands alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "LogicVal core commands: solve, verify, check, asp, run-asp, demo.")


if __name__ == "__main__":
    sys.exit(main())
