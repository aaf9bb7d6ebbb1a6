"""``logicval solve SPEC``: a spec's label, SAT with a witness scene or UNSAT with a minimal unsat core, as JSON
(``--witness``: the witness scene alone, the scene graph `logicval verify` takes)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from logicval_hf.cli.dispatch import emit, label_timeout_option, read_json, standalone

__all__ = ["EXIT_NO_WITNESS", "add_subcommands", "cmd_solve", "main"]

#: exit status of ``solve --witness`` for an UNSAT spec: an answer (there is no witness), not bad input
EXIT_NO_WITNESS = 1


def cmd_solve(args: argparse.Namespace) -> int:
    from logicval_hf.asp.solver import solve
    from logicval_hf.contract.verbalise import constraint_names

    result = solve(read_json(args.spec, "spec"), image_size=tuple(args.image_size) if args.image_size else None,
                   timeout=args.timeout)
    if not args.witness:
        emit(result.to_dict(), args.pretty)
        return 0
    if result.witness is None:
        print(f"logicval: {args.spec} is UNSAT: no scene satisfies it, so there is no witness (minimal unsat core: "
              f"{constraint_names(result.core or ())}; `logicval solve {args.spec}` prints it as JSON)",
              file=sys.stderr)
        return EXIT_NO_WITNESS
    emit(result.witness.to_dict(), args.pretty)
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``solve`` on the ``logicval`` subparsers."""
    s = sub.add_parser("solve", help="label a spec SAT/UNSAT with a witness scene or a minimal unsat core")
    s.add_argument("spec", help="spec JSON file ({'n': ..., 'constraints': [...]}), or - for stdin")
    s.add_argument("--image-size", type=int, nargs=2, default=None, metavar=("W", "H"),
                   help="image size for the witness's bounding boxes (default: the spec's domain's, 480 320 for "
                        "CLEVR)")
    s.add_argument("--witness", action="store_true",
                   help="print the witness scene alone (the scene graph `logicval verify` takes); for an UNSAT spec "
                        f"print its core on stderr and exit {EXIT_NO_WITNESS}")
    s.add_argument("--pretty", action="store_true", help="indent the JSON output")
    label_timeout_option(s)
    s.set_defaults(func=cmd_solve)


#: ``python -m logicval_hf.cli.solve``: the command alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "Label a spec.")


if __name__ == "__main__":
    sys.exit(main())
