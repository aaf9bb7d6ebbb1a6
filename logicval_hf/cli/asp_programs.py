"""``logicval asp SPEC`` prints a spec's complete ASP program (``--write-templates``: regenerates the template
programs); ``logicval run-asp PROGRAM`` solves an untrusted ASP program safely (no #include/#script, time-bounded)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from logicval_hf.cli.dispatch import check_output_dir, emit, read_json, standalone, timeout_option
from logicval_hf.common.reading import read_text_capped

__all__ = ["add_subcommands", "cmd_asp", "cmd_run_asp", "main"]


def cmd_asp(args: argparse.Namespace) -> int:
    from logicval_hf.asp.programs import spec_program, write_generated

    if args.write_templates is not None:
        if args.write_templates:
            check_output_dir(args.write_templates, "--write-templates")
        for p in write_generated(args.write_templates or None):
            print(p)
        return 0
    if not args.spec:
        raise ValueError("asp needs SPEC.json (or --write-templates DIR)")
    from logicval_hf.contract.spec import Spec

    print(spec_program(Spec.from_dict(read_json(args.spec, "spec"))), end="")
    return 0


def cmd_run_asp(args: argparse.Namespace) -> int:
    from logicval_hf.asp.safety import run_program

    text = read_text_capped(args.program, "program")
    emit(run_program(text, timeout=args.timeout).to_dict(), args.pretty)
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``asp`` and ``run-asp`` on the ``logicval`` subparsers."""
    a = sub.add_parser("asp", help="print the complete ASP program of a spec")
    a.add_argument("spec", nargs="?", help="spec JSON file")
    a.add_argument("--write-templates", metavar="DIR", nargs="?", const="",
                   help="regenerate the parametric template programs and vocabulary; under DIR if given, else "
                        "in the repository's asp/ folder (the package's logicval_hf/asp/lp/ links to it)")
    a.set_defaults(func=cmd_asp)

    r = sub.add_parser("run-asp", help="solve an untrusted ASP program safely (no #include/#script, time-bounded)")
    r.add_argument("program", help="program file, or - for stdin")
    timeout_option(r, 10.0, "seconds for grounding + solving the untrusted program", none_ok=False)
    r.add_argument("--pretty", action="store_true", help="indent the JSON output")
    r.set_defaults(func=cmd_run_asp)


#: ``python -m logicval_hf.cli.asp_programs``: the command alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "Print a spec's ASP program; solve an untrusted one safely.")


if __name__ == "__main__":
    sys.exit(main())
