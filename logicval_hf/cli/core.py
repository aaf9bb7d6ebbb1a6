"""The core subcommands of ``logicval``: ``solve``, ``verify``, ``check``, ``asp``, ``run-asp`` and ``demo``.
Every one is a thin call into the package; JSON in, JSON out."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, TextIO

from logicval_hf.cli.dispatch import NO_BUDGET, check_output_dir, min_confidence, min_confidence_option, timeout_seconds
from logicval_hf.cli.dispatch import USER_ERRORS as _USER_ERRORS
from logicval_hf.cli.dispatch import emit as _emit
from logicval_hf.cli.dispatch import read_json as _read_json
from logicval_hf.common.reading import capped_lines, read_text_capped

_SCENE_FORMAT = ('{"image_size": [W, H], "objects": [{"color", "shape", "material", "bbox"}]} '
                 '(another domain: its attributes and "domain", e.g. "coco": {"class", "color", "bbox", "score"})')

__all__ = ["add_subcommands"]


_RELAXED_HELP = "count-relaxed verdict: every constraint must hold, the number of objects may differ from n"

#: exit status of ``solve --witness`` for an UNSAT spec: an answer (there is no witness), not bad input
EXIT_NO_WITNESS = 1


def cmd_solve(args: argparse.Namespace) -> int:
    from logicval_hf.asp.solver import solve
    from logicval_hf.contract.verbalise import constraint_names

    result = solve(_read_json(args.spec, "spec"), image_size=tuple(args.image_size) if args.image_size else None,
                   timeout=args.timeout)
    if not args.witness:
        _emit(result.to_dict(), args.pretty)
        return 0
    if result.witness is None:
        print(f"logicval: {args.spec} is UNSAT: no scene satisfies it, so there is no witness (minimal unsat core: "
              f"{constraint_names(result.core or ())}; `logicval solve {args.spec}` prints it as JSON)",
              file=sys.stderr)
        return EXIT_NO_WITNESS
    _emit(result.witness.to_dict(), args.pretty)
    return 0


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
    spec = as_spec(_read_json(args.spec, "spec"), solver.catalog)
    data = _read_json(args.scene, "scene", hint, binary_hint=f"to check an image, run "
                                                            f"`logicval check {args.spec} {args.scene}`")
    try:  # read in the spec's domain (a scene without "domain" is taken to be in it)
        scene = Scene.from_dict(scene_of(data, f"scene {args.scene!r}"), spec.domain)
    except SceneError as e:
        raise SceneError(f"{e}; {hint}") from None
    j = judge_one(spec, scene, JudgeOptions(backend="given", timeout=args.timeout, errors="raise"), solver=solver,
                  name=f"scene {args.scene!r}")
    _emit((j.relaxed if count == "relaxed" else j.strict).to_dict(), args.pretty)  # type: ignore[union-attr]
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Image -> scene graph (perception backend) -> verdict, through the judge; exit 0 whatever the verdict."""
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.spec import as_spec
    from logicval_hf.scoring.judge import JudgeOptions, judge_one
    from logicval_hf.scoring.scores import scene_sample

    floor = min_confidence(args)
    solver = default_solver()
    spec = as_spec(_read_json(args.spec, "spec"), solver.catalog)
    if args.image.lower().endswith(".json"):
        raise ValueError(f"image {args.image!r} is a JSON file: scene graphs are checked with "
                         f"`logicval verify {args.spec} {args.image}`; `logicval check` takes an image")
    if not os.path.isfile(args.image):
        raise ValueError(f"cannot read image {args.image!r}: no such file")
    # perceived in the spec's domain (the clevr backend perceives CLEVR only: another domain is a one-line error)
    options = JudgeOptions(backend=args.backend, min_confidence=floor, timeout=args.timeout, errors="raise")
    j = judge_one(spec, args.image, options, solver=solver, name="image")
    assert j.scene is not None
    mode = "relaxed" if args.relaxed else "strict"
    if j.unread is not None:  # set apart: no verdict either way
        out: dict[str, Any] = {"ok": None, "count_ok": None, "violated": [], "label": j.label, "count": mode,
                               "n_objects": len(j.scene), "unread": j.unread}
    else:
        out = (j.relaxed if args.relaxed else j.strict).to_dict()  # type: ignore[union-attr]
        if floor is not None:
            out["unread"] = None
    # how sure the backend is that the scene graph is right (None: it does not say): a low one is worth a look
    out.update(image=args.image, backend=args.backend, confidence=j.confidence, scene=scene_sample(j.scene, args.probs))
    _emit(out, args.pretty)
    return 0


def _open_pairs(path: str) -> TextIO:
    """The pairs file (``-``: standard input), a one-line error when it cannot be opened."""
    if path == "-":
        return sys.stdin
    try:
        return open(path, encoding="utf-8")
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
        for lineno, line in enumerate(capped_lines(fh, f"pairs file {path!r}"), 1):
            if not line.strip():
                continue
            try:
                pair = json.loads(line)
                if not isinstance(pair, dict) or "spec" not in pair or "scene" not in pair:
                    raise ValueError('each line must be a JSON object {"spec": ..., "scene": ...}')
                mode, label = pair.get("count", count), pair.get("label")
                check_mode(mode, label)
                spec = as_spec(pair["spec"], solver.catalog)
                # the spec's domain (a scene may omit it); `logicval solve`'s answer stands for its witness
                scene = Scene.from_dict(scene_of(pair["scene"], "scene"), spec.domain)
                pending.append((lineno, (spec, scene, label, mode)))
            except (json.JSONDecodeError, *_USER_ERRORS) as e:
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

    print(spec_program(Spec.from_dict(_read_json(args.spec, "spec"))), end="")
    return 0


def cmd_run_asp(args: argparse.Namespace) -> int:
    from logicval_hf.asp.safety import run_program

    text = read_text_capped(args.program, "program")
    _emit(run_program(text, timeout=args.timeout).to_dict(), args.pretty)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from logicval_hf.cli.demo import run_demo

    run_demo(out=sys.stdout)
    return 0


def _timeout_option(p: argparse.ArgumentParser) -> None:
    from logicval_hf.asp.budget import DEFAULT_TIMEOUT

    p.add_argument("--timeout", type=timeout_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time budget for labelling a spec (default {DEFAULT_TIMEOUT:g}; {NO_BUDGET!r}: none); past "
                        "it: exit 2 with a one-line error, never a label")


def add_subcommands(sub: Any) -> None:
    """Register the core subcommands on the ``logicval`` subparsers."""
    s = sub.add_parser("solve", help="label a spec SAT/UNSAT with a witness scene or a minimal unsat core")
    s.add_argument("spec", help="spec JSON file ({'n': ..., 'constraints': [...]}), or - for stdin")
    s.add_argument("--image-size", type=int, nargs=2, default=None, metavar=("W", "H"),
                   help="image size for the witness's bounding boxes (default: the spec's domain's, 480 320 for "
                        "CLEVR)")
    s.add_argument("--witness", action="store_true",
                   help="print the witness scene alone (the scene graph `logicval verify` takes); for an UNSAT spec "
                        f"print its core on stderr and exit {EXIT_NO_WITNESS}")
    s.add_argument("--pretty", action="store_true", help="indent the JSON output")
    _timeout_option(s)
    s.set_defaults(func=cmd_solve)

    v = sub.add_parser("verify", help="check scene graphs against specs")
    v.add_argument("spec", nargs="?", help="spec JSON file")
    v.add_argument("scene", nargs="?", help="scene JSON file ({'image_size': [W, H], 'objects': [...]}), read in "
                                            "the spec's domain; `logicval solve`'s output stands for its witness")
    v.add_argument("--relaxed", action="store_true", help=_RELAXED_HELP)
    v.add_argument("--jsonl", metavar="PAIRS.jsonl",
                   help="batch mode: one {'spec':…, 'scene':…} per line in, one verdict per line out (a bad line "
                        "gets an error line; exit 2 if any)")
    v.add_argument("--pretty", action="store_true", help="indent the JSON output")
    _timeout_option(v)
    v.set_defaults(func=cmd_verify)

    c = sub.add_parser("check", help="check an image against a spec: image -> scene graph -> verdict JSON "
                                     "(exit 0 whatever the verdict, 2 on bad input)")
    c.add_argument("spec", help="spec JSON file, or - for stdin")
    c.add_argument("image", help="image file (PNG, JPEG, WebP, ...)")
    c.add_argument("--backend", choices=("clevr", "neural"), default="clevr",
                   help='perception backend (default clevr: the shipped CLEVR scene parser; neural needs '
                        '"logicval-hf[neural]" and perceives the spec\'s domain, e.g. COCO)')
    c.add_argument("--relaxed", action="store_true", help=_RELAXED_HELP)
    c.add_argument("--probs", action="store_true", help="keep the objects' attribute probabilities in the scene")
    c.add_argument("--pretty", action="store_true", help="indent the JSON output")
    min_confidence_option(c)
    _timeout_option(c)
    c.set_defaults(func=cmd_check)

    a = sub.add_parser("asp", help="print the complete ASP program of a spec")
    a.add_argument("spec", nargs="?", help="spec JSON file")
    a.add_argument("--write-templates", metavar="DIR", nargs="?", const="",
                   help="regenerate the parametric template programs and vocabulary; under DIR if given, else "
                        "in the repository's asp/ folder (the package's logicval_hf/asp/lp/ links to it)")
    a.set_defaults(func=cmd_asp)

    r = sub.add_parser("run-asp", help="solve an untrusted ASP program safely (no #include/#script, time-bounded)")
    r.add_argument("program", help="program file, or - for stdin")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds for grounding + solving (default 10)")
    r.add_argument("--pretty", action="store_true", help="indent the JSON output")
    r.set_defaults(func=cmd_run_asp)

    d = sub.add_parser("demo", help="solve and verify a built-in example spec (no downloads)")
    d.set_defaults(func=cmd_demo)
