"""``logicval import SOURCE PATH --out DIR``: another benchmark's prompts as a LogicVal dataset folder, every
prompt labelled by the solver (`logicval_hf.benchmark.importers`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.cli.dispatch import check_output_dir, emit, standalone_main

__all__ = ["add_subcommands", "main"]

_SOURCES = {
    "geneval": ("METADATA", "GenEval's evaluation_metadata.jsonl (github.com/djghosh13/geneval, prompts/)"),
    "imag-eval": ("FOLDER", "Imag-Eval's outputs/prompts folder, or one <skills>.json file of it "
                            "(github.com/Justsecret123/Imag-Eval)"),
    "gir-bench": ("FILE", "one of GIR-Bench's prompt files, NumericalReasoning.json or SpatialLayout.json (labelled "
                          "specs) or TextRendering.json (target texts for text-score) (github.com/lihxxx/GIR-Bench)"),
}


def cmd_import(args: argparse.Namespace) -> int:
    from logicval_hf.benchmark.importers import IMPORTERS

    check_output_dir(args.out, "--out")
    options = {"skip_unsupported": args.skip_unsupported} if hasattr(args, "skip_unsupported") else {}
    options["timeout"] = args.timeout
    summary = IMPORTERS.get(args.source)(args.path, args.out, progress=not args.no_progress, **options)
    emit(summary, args.pretty)
    return 0


def add_subcommands(subparsers: Any) -> None:
    """Register ``import`` (with one sub-command per source) on an argparse subparsers object."""
    p = subparsers.add_parser("import", help="import another benchmark's prompts as a LogicVal dataset folder "
                                              "(labelled SAT/UNSAT by the solver)")
    sources = p.add_subparsers(dest="source", required=True)
    for name, (metavar, what) in _SOURCES.items():
        s = sources.add_parser(name, help=f"import {what}")
        s.add_argument("path", metavar=metavar, help=what)
        s.add_argument("--out", required=True, metavar="DIR",
                       help="dataset folder to write (README.md + data/test.parquet; loads with load_dataset(DIR)); "
                            "replaced atomically when it exists")
        s.add_argument("--no-progress", action="store_true", help="no progress bar")
        s.add_argument("--pretty", action="store_true", help="indent the JSON summary")
        s.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help=f"time budget of each prompt's label (default {DEFAULT_TIMEOUT:g}); past it the import "
                            "stops with a one-line error (imag-eval --skip-unsupported: the prompt is left out)")
        if name == "imag-eval":
            s.add_argument("--skip-unsupported", action="store_true",
                           help="leave out what the coco domain cannot express (relations boxes cannot decide: in "
                                "front of, behind, next to; the colour gray; prompts that get no label within the "
                                "solver's object limit or the time budget) and record it (the row's unsupported "
                                "column, the summary), instead of stopping at the first")
        s.set_defaults(func=cmd_import)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main(add_subcommands, argv, "Import another benchmark's prompts.")


if __name__ == "__main__":
    sys.exit(main())
