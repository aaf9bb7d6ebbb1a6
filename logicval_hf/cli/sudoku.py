"""``logicval sudoku make`` and ``logicval sudoku check``: GIR-Bench's visual logic task, decided by the solver
(`logicval_hf.tasks.sudoku`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from logicval_hf.cli.dispatch import check_output_dir, emit, positive_int, standalone

__all__ = ["add_subcommands", "main"]


def cmd_make(args: argparse.Namespace) -> int:
    from logicval_hf.tasks.sudoku.api import make_puzzles

    out = check_output_dir(args.out, "--out")
    summary = make_puzzles(args.count, args.seed, out, progress=not args.no_progress)
    if not args.ids:
        summary.pop("ids")
    emit(summary, args.pretty)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from logicval_hf.tasks.sudoku.api import check_image, load_puzzle

    puzzle = load_puzzle(args.puzzle)
    emit(check_image(puzzle, args.image, "image"), args.pretty)
    return 0


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def add_subcommands(sub: Any) -> None:
    """Register ``sudoku make`` and ``sudoku check`` on the ``logicval`` subparsers."""
    p = sub.add_parser("sudoku", help="Sudoku puzzles made and proved unique by clingo; a filled grid's image read by "
                                      "OCR and checked by clingo's rules (GIR-Bench's visual logic)")
    s = p.add_subparsers(dest="sudoku_command", required=True)
    m = s.add_parser("make", help="make puzzles: DIR/puzzles/<id>.json, DIR/images/<id>.png, DIR/answers/<id>.png")
    m.add_argument("--count", type=positive_int, required=True, help="how many puzzles")
    m.add_argument("--seed", type=_seed, default=0, help="random seed (default 0): the same seed, the same puzzles")
    m.add_argument("--out", required=True, metavar="DIR",
                   help="folder to write (created if missing; other files in it are kept)")
    m.add_argument("--ids", action="store_true", help="list the puzzles' ids in the summary")
    m.add_argument("--no-progress", action="store_true", help="no progress bar")
    m.add_argument("--pretty", action="store_true", help="indent the JSON summary")
    m.set_defaults(func=cmd_make)
    c = s.add_parser("check", help="read the grid in IMAGE and judge it against PUZZLE: JSON {valid, givens_kept, "
                                   "filled, cells, accuracy, violations}")
    c.add_argument("puzzle", metavar="PUZZLE", help='puzzle JSON ({"grid": 9 lists of 9 digits, 0 for empty, '
                                                   '"solution"?, "id"?, "givens"?})')
    c.add_argument("image", metavar="IMAGE", help="image of the filled grid (PNG, JPEG, ...; scaled, re-saved or "
                                                  "slightly rotated is fine)")
    c.add_argument("--pretty", action="store_true", help="indent the JSON output")
    c.set_defaults(func=cmd_check)


main = standalone(add_subcommands, "Sudoku: make puzzles, check filled grids.")


if __name__ == "__main__":
    sys.exit(main())
