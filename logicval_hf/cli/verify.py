"""``logicval verify SPEC SCENE``: a scene graph checked against a spec, one verdict as JSON; ``--jsonl PAIRS``: one
``{"spec": ..., "scene": ...}`` per line in, one verdict per line out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, BinaryIO

from logicval_hf.cli.dispatch import (
    RELAXED_HELP,
    USER_ERRORS,
    emit,
    input_file,
    label_timeout_option,
    read_json,
    standalone,
)
from logicval_hf.common.reading import capped_lines

__all__ = ["add_subcommands", "cmd_verify", "main", "scene_of"]

_SCENE_FORMAT = ('{"image_size": [W, H], "objects": [{"color", "shape", "material", "bbox"}]} '
                 '(another domain: its attributes and "domain", e.g. "coco": {"class", "color", "bbox", "score"})')


def scene_of(data: Any, what: str) -> Any:
    """The scene graph in ``data``: the data itself, or the witness of `logicval solve`'s answer (so that
    ``logicval solve SPEC > scene.json; logicval verify SPEC scene.json`` works)."""
    if isinstance(data, dict) and "witness" in data and "satisfiable" in data:
        if data["witness"] is None:
            raise ValueError(f"{what} is `logicval solve`'s answer for an UNSAT spec: it has no witness scene to "
                             "verify (an UNSAT spec is met only by drawing no scene at all)")
        return data["witness"]
    return data


def cmd_verify(args: argparse.Namespace) -> int:
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.scene import Scene
    from logicval_hf.contract.spec import as_spec
    from logicval_hf.errors import SceneError
    from logicval_hf.scoring.judge import JudgeOptions, judge_one

    count = "relaxed" if args.relaxed else "strict"
    if args.jsonl:
        return _verify_jsonl(args.jsonl, count, timeout=args.timeout)
    if not args.spec or not args.scene:
        raise ValueError("verify needs SPEC.json and SCENE.json, or --jsonl PAIRS.jsonl")
    hint = (f"a scene graph is {_SCENE_FORMAT}; `logicval solve {args.spec} --witness > SCENE.json` writes one "
            "that satisfies the spec")
    solver = default_solver()
    spec = as_spec(read_json(args.spec, "spec"), solver.catalog)
    data = read_json(args.scene, "scene", hint, binary_hint=f"to check an image, run "
                                                            f"`logicval check {args.spec} {args.scene}`")
    try:  # read in the spec's domain (a scene without "domain" is taken to be in it)
        scene = Scene.from_dict(scene_of(data, f"scene {args.scene!r}"), spec.domain)
    except SceneError as e:
        raise SceneError(f"{e}; {hint}") from None
    j = judge_one(spec, scene, JudgeOptions(backend="given", timeout=args.timeout, errors="raise"), solver=solver,
                  name=f"scene {args.scene!r}")
    emit((j.relaxed if count == "relaxed" else j.strict).to_dict(), args.pretty)  # type: ignore[union-attr]
    return 0


def _open_pairs(path: str) -> BinaryIO:
    """The pairs file (``-``: standard input) as bytes, each line decoded on its own (a line that is not UTF-8
    is that line's error); a one-line error when it cannot be opened."""
    if path == "-":
        return sys.stdin.buffer
    input_file(path, "pairs file")
    try:
        return open(path, "rb")
    except OSError as e:
        raise ValueError(f"cannot read pairs file {path!r}: {e.strerror}") from None


def _verify_jsonl(path: str, count: str, chunk: int = 2000, timeout: float | None = None) -> int:
    """One ``{"spec": ..., "scene": ...}`` per line in, one verdict per line out (errors reported per line).

    Lines are checked one by one, then judged in chunks (`logicval_hf.scoring.judge.judge`) so that scenes of one
    spec share a grounding; a pair the judge cannot verify (a spec not labelled within the budget) gets its error
    line, the others their verdicts.
    """
    from logicval_hf.asp.solver import check_mode, default_solver
    from logicval_hf.contract.scene import Scene
    from logicval_hf.contract.spec import as_spec
    from logicval_hf.scoring.judge import JudgeOptions, judge

    solver = default_solver()
    options = JudgeOptions(backend="given", timeout=timeout)
    fh = _open_pairs(path)
    failures = 0
    pending: list[tuple[int, Any]] = []  # (line number, parsed item or error dict)

    def flush() -> None:
        nonlocal failures
        good = [(k, item) for k, item in pending if not isinstance(item, dict)]
        results = judge([it[0] for _, it in good], [it[1] for _, it in good], options, solver=solver,
                        labels=[it[2] for _, it in good], names=[f"line {k}" for k, _ in good])
        verdicts: dict[int, dict] = {}
        for (k, item), j in zip(good, results, strict=True):
            verdict = j.relaxed if item[3] == "relaxed" else j.strict
            verdicts[k] = verdict.to_dict() if verdict is not None else {"line": k, "error": j.error}
            failures += verdict is None
        for k, item in pending:
            out = item if isinstance(item, dict) else verdicts[k]
            print(json.dumps(out, separators=(",", ":")))
        pending.clear()

    with fh:
        for lineno, raw in enumerate(capped_lines(fh, f"pairs file {path!r}"), 1):
            if not raw.strip():
                continue
            try:
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise ValueError(f"line {lineno} of {path} is not UTF-8 text (byte "
                                     f"{raw[e.start:e.start + 1]!r} at column {e.start + 1})") from None
                pair = json.loads(line)
                if not isinstance(pair, dict) or "spec" not in pair or "scene" not in pair:
                    raise ValueError('each line must be a JSON object {"spec": ..., "scene": ...}')
                mode, label = pair.get("count", count), pair.get("label")
                check_mode(mode, label)
                spec = as_spec(pair["spec"], solver.catalog)
                # the spec's domain (a scene may omit it); `logicval solve`'s answer stands for its witness
                scene = Scene.from_dict(scene_of(pair["scene"], "scene"), spec.domain)
                pending.append((lineno, (spec, scene, label, mode)))
            except (json.JSONDecodeError, RecursionError, *USER_ERRORS) as e:
                failures += 1
                pending.append((lineno, {"line": lineno, "error": str(e)}))
            if len(pending) >= chunk:
                flush()
    flush()
    if failures:  # bad input, as everywhere: status 2 (the good lines' verdicts are printed all the same)
        print(f"logicval: error: {failures} line(s) of {path} could not be verified (their output lines say why)",
              file=sys.stderr)
        return 2
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``verify`` on the ``logicval`` subparsers."""
    v = sub.add_parser("verify", help="check scene graphs against specs")
    v.add_argument("spec", nargs="?", help="spec JSON file")
    v.add_argument("scene", nargs="?", help="scene JSON file ({'image_size': [W, H], 'objects': [...]}), read in "
                                            "the spec's domain; `logicval solve`'s output stands for its witness")
    v.add_argument("--relaxed", action="store_true", help=RELAXED_HELP)
    v.add_argument("--jsonl", metavar="PAIRS.jsonl",
                   help="batch mode: one {'spec':…, 'scene':…} per line in, one verdict per line out (a bad line "
                        "gets an error line; exit 2 if any)")
    v.add_argument("--pretty", action="store_true", help="indent the JSON output")
    label_timeout_option(v)
    v.set_defaults(func=cmd_verify)


#: ``python -m logicval_hf.cli.verify``: the command alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "Check scene graphs against specs.")


if __name__ == "__main__":
    sys.exit(main())
