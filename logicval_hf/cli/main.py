"""The ``logicval`` command: one parser, one module per command or command group (`solve`, `verify`, `check`,
`asp_programs`, `demo`, `repair`, `templates`, `dataset`, `meta`, `run`, `generate`, `render_clevr`,
`import_prompts`, `serve`, `text_score`, `sudoku`), run through `logicval_hf.cli.dispatch` (errors, missing extras,
broken pipes)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from logicval_hf.cli import (
    asp_programs,
    check,
    dataset,
    demo,
    generate,
    import_prompts,
    meta,
    render_clevr,
    repair,
    run,
    serve,
    solve,
    sudoku,
    templates,
    text_score,
    verify,
)
from logicval_hf.cli.dispatch import OneLineParser, dispatch

#: the command groups, in the order ``logicval --help`` lists them
GROUPS = (solve, verify, check, asp_programs, demo, repair, templates, dataset, meta, run, generate, render_clevr,
          import_prompts, serve, text_score, sudoku)


def build_parser() -> argparse.ArgumentParser:
    from logicval_hf.common.version import __version__

    p = OneLineParser(prog="logicval", description="LogicVal: T2I evaluation as constraint satisfaction.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.add_subcommands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
