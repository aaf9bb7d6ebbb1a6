"""The ``logicval`` command: one parser, one module per command group (`core`, `dataset`, `meta`, `run`,
`generate`, `render_clevr`, `imports`, `serve`, `text_score`, `sudoku`), run through `logicval_hf.cli.dispatch`
(errors, missing extras, broken pipes)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from logicval_hf.cli import (
    core,
    dataset,
    generate,
    imports,
    meta,
    render_clevr,
    repair,
    run,
    serve,
    sudoku,
    templates,
    text_score,
)
from logicval_hf.cli.dispatch import dispatch

#: the command groups, in the order ``logicval --help`` lists them
GROUPS = (core, repair, templates, dataset, meta, run, generate, render_clevr, imports, serve, text_score, sudoku)


def build_parser() -> argparse.ArgumentParser:
    from logicval_hf.common.version import __version__

    p = argparse.ArgumentParser(prog="logicval", description="LogicVal: T2I evaluation as constraint satisfaction.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_subcommands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
