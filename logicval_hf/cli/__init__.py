"""The ``logicval`` command: `main` is the one entry point; one module per command group.

Importing this package loads no command group: a group module run on its own (``python -m
logicval_hf.cli.render_clevr`` in Blender's environment, which has no clingo) pulls in only what it needs.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    from logicval_hf.cli.main import main as _main

    return _main(argv)
