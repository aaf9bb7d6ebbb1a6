"""The ``logicval`` command. Every subcommand is a thin call into the package; JSON in, JSON out.

Bad input prints ``logicval: error: <what is wrong>`` to stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from logicval_hf.errors import SceneError, SolverTimeout, SpecError, UnsafeProgramError

_USER_ERRORS = (SpecError, SceneError, UnsafeProgramError, SolverTimeout, ValueError, OSError)


def _read_json(path: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read {what} {path!r}: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {path!r} is not valid JSON: {e}") from None


def _emit(obj: Any, pretty: bool) -> None:
    print(json.dumps(obj, indent=2 if pretty else None, separators=None if pretty else (",", ":")))


def cmd_solve(args: argparse.Namespace) -> int:
    from logicval_hf.asp.solver import solve

    result = solve(_read_json(args.spec, "spec"), image_size=tuple(args.image_size))
    _emit(result.to_dict(), args.pretty)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from logicval_hf.asp.solver import verify

    count = "relaxed" if args.relaxed else "strict"
    if args.jsonl:
        return _verify_jsonl(args.jsonl, count)
    if not args.spec or not args.scene:
        raise ValueError("verify needs SPEC.json and SCENE.json, or --jsonl PAIRS.jsonl")
    verdict = verify(_read_json(args.spec, "spec"), _read_json(args.scene, "scene"), count=count)
    _emit(verdict.to_dict(), args.pretty)
    return 0


def _verify_jsonl(path: str, count: str, chunk: int = 2000) -> int:
    """One ``{"spec": ..., "scene": ...}`` per line in, one verdict per line out (errors reported per line).

    Lines are checked one by one, then verified in chunks so that scenes of one spec share a grounding.
    """
    from logicval_hf.contract.scene import Scene
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.spec import as_spec

    solver = default_solver()
    try:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read pairs file {path!r}: {e.strerror}") from None
    failures = 0
    pending: list[tuple[int, Any]] = []  # (line number, parsed item or error dict)

    def flush() -> None:
        good = [(k, item) for k, item in pending if not isinstance(item, dict)]
        by_mode: dict[str, list[tuple[int, Any]]] = {}
        for k, item in good:
            by_mode.setdefault(item[3], []).append((k, item))
        verdicts: dict[int, dict] = {}
        for mode, items in by_mode.items():
            results = solver.verify_many([(it[0], it[1]) for _, it in items], count=mode,
                                         labels=[it[2] for _, it in items])
            verdicts.update({k: v.to_dict() for (k, _), v in zip(items, results)})
        for k, item in pending:
            out = item if isinstance(item, dict) else verdicts[k]
            print(json.dumps(out, separators=(",", ":")))
        pending.clear()

    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                pair = json.loads(line)
                if not isinstance(pair, dict) or "spec" not in pair or "scene" not in pair:
                    raise ValueError('each line must be a JSON object {"spec": ..., "scene": ...}')
                mode = pair.get("count", count)
                if mode not in ("strict", "relaxed"):
                    raise ValueError(f"count must be 'strict' or 'relaxed', got {mode!r}")
                label = pair.get("label")
                if label not in (None, "SAT", "UNSAT"):
                    raise ValueError(f"label must be 'SAT' or 'UNSAT', got {label!r}")
                spec = as_spec(pair["spec"], solver.catalog)
                scene = Scene.from_dict(pair["scene"], solver.catalog.domain)
                pending.append((lineno, (spec, scene, label, mode)))
            except (json.JSONDecodeError, *_USER_ERRORS) as e:
                failures += 1
                pending.append((lineno, {"line": lineno, "error": str(e)}))
            if len(pending) >= chunk:
                flush()
    flush()
    if failures:
        print(f"logicval: error: {failures} line(s) of {path} could not be verified", file=sys.stderr)
        return 1
    return 0


def cmd_asp(args: argparse.Namespace) -> int:
    from logicval_hf.asp.programs import spec_program, write_generated

    if args.write_templates is not None:
        for p in write_generated(args.write_templates or None):
            print(p)
        return 0
    if not args.spec:
        raise ValueError("asp needs SPEC.json (or --write-templates DIR)")
    from logicval_hf.contract.spec import Spec

    print(spec_program(Spec.from_dict(_read_json(args.spec, "spec"))), end="")
    return 0


def cmd_run_asp(args: argparse.Namespace) -> int:
    from logicval_hf.asp.safety import run_program

    try:
        text = sys.stdin.read() if args.program == "-" else Path(args.program).read_text(encoding="utf-8")
    except OSError as e:
        raise ValueError(f"cannot read program {args.program!r}: {e.strerror}") from None
    _emit(run_program(text, timeout=args.timeout).to_dict(), args.pretty)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from logicval_hf.cli.demo import run_demo

    run_demo(out=sys.stdout)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="logicval", description="LogicVal: T2I evaluation as constraint satisfaction.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("solve", help="label a spec SAT/UNSAT with a witness scene or a minimal unsat core")
    s.add_argument("spec", help="spec JSON file ({'n': ..., 'constraints': [...]}), or - for stdin")
    s.add_argument("--image-size", type=int, nargs=2, default=[480, 320], metavar=("W", "H"),
                   help="image size for the witness's bounding boxes (default 480 320)")
    s.add_argument("--pretty", action="store_true", help="indent the JSON output")
    s.set_defaults(func=cmd_solve)

    v = sub.add_parser("verify", help="check scene graphs against specs")
    v.add_argument("spec", nargs="?", help="spec JSON file")
    v.add_argument("scene", nargs="?", help="scene JSON file ({'image_size': [W, H], 'objects': [...]})")
    v.add_argument("--relaxed", action="store_true", help="ignore the object count (paper §5.4)")
    v.add_argument("--jsonl", metavar="PAIRS.jsonl",
                   help="batch mode: one {'spec':…, 'scene':…} per line in, one verdict per line out")
    v.add_argument("--pretty", action="store_true", help="indent the JSON output")
    v.set_defaults(func=cmd_verify)

    a = sub.add_parser("asp", help="print the complete ASP program of a spec")
    a.add_argument("spec", nargs="?", help="spec JSON file")
    a.add_argument("--write-templates", metavar="DIR", nargs="?", const="",
                   help="regenerate the parametric template programs and vocabulary; under DIR if given, else "
                        "in the package's own logicval_hf/asp/lp/ (where the solver reads them)")
    a.set_defaults(func=cmd_asp)

    r = sub.add_parser("run-asp", help="solve an untrusted ASP program safely (no #include/#script, time-bounded)")
    r.add_argument("program", help="program file, or - for stdin")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds for grounding + solving (default 10)")
    r.add_argument("--pretty", action="store_true", help="indent the JSON output")
    r.set_defaults(func=cmd_run_asp)

    d = sub.add_parser("demo", help="solve and verify a built-in example spec (no downloads)")
    d.set_defaults(func=cmd_demo)

    from logicval_hf.cli.dataset import add_subcommands as add_dataset_subcommands

    add_dataset_subcommands(sub)
    from logicval_hf.cli.meta import add_subcommands as add_meta_subcommands

    add_meta_subcommands(sub)
    from logicval_hf.cli.run import add_subcommands as add_run_subcommands

    add_run_subcommands(sub)
    from logicval_hf.cli.generate import add_subcommands as add_generate_subcommands

    add_generate_subcommands(sub)
    return p


def _dispatch(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except _USER_ERRORS as e:
        print(f"logicval: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        return 0


def standalone_main(add_subcommands: Callable[[Any], None], argv: Sequence[str] | None, description: str) -> int:
    """Entry point of a command group run on its own (``python -m logicval_hf.<group>_cli``), with the
    same handling of bad input as ``logicval``."""
    parser = argparse.ArgumentParser(prog="logicval", description=description)
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    return _dispatch(parser, argv)


def main(argv: Sequence[str] | None = None) -> int:
    return _dispatch(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
