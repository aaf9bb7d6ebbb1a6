"""``logicval check SPEC IMAGE``: image -> scene graph (a perception backend, in the spec's domain) -> verdict JSON,
through the judge; exit 0 whatever the verdict, 2 with one line on bad input."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from logicval_hf.cli.dispatch import (
    RELAXED_HELP,
    backend_options,
    backend_settings,
    check_backend,
    emit,
    input_file,
    label_timeout_option,
    min_confidence,
    min_confidence_option,
    read_json,
    standalone,
)

__all__ = ["add_subcommands", "cmd_check", "main"]


def cmd_check(args: argparse.Namespace) -> int:
    """Image -> scene graph (perception backend) -> verdict, through the judge; exit 0 whatever the verdict."""
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.spec import as_spec
    from logicval_hf.scoring.judge import JudgeOptions, judge_one
    from logicval_hf.scoring.scores import scene_sample

    floor = min_confidence(args)
    solver = default_solver()
    spec = as_spec(read_json(args.spec, "spec"), solver.catalog)
    if args.image.lower().endswith(".json"):
        raise ValueError(f"image {args.image!r} is a JSON file: scene graphs are checked with "
                         f"`logicval verify {args.spec} {args.image}`; `logicval check` takes an image")
    input_file(args.image, "image", "`logicval check` takes one image file (a folder of images: `logicval run "
                                    "--generator DIR`)")
    settings = check_backend(args.backend, backend_settings(args))  # before any image is read: one line
    # perceived in the spec's domain (the clevr backend perceives CLEVR only: another domain is a one-line error)
    options = JudgeOptions(backend=args.backend, backend_settings=settings, min_confidence=floor,
                           timeout=args.timeout, errors="raise")
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
    emit(out, args.pretty)
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``check`` on the ``logicval`` subparsers."""
    c = sub.add_parser("check", help="check an image against a spec: image -> scene graph -> verdict JSON "
                                     "(exit 0 whatever the verdict, 2 on bad input)")
    c.add_argument("spec", help="spec JSON file, or - for stdin")
    c.add_argument("image", help="image file (PNG, JPEG, WebP, ...)")
    backend_options(c, "the image (perceived in the spec's domain)")
    c.add_argument("--relaxed", action="store_true", help=RELAXED_HELP)
    c.add_argument("--probs", action="store_true", help="keep the objects' attribute probabilities in the scene")
    c.add_argument("--pretty", action="store_true", help="indent the JSON output")
    min_confidence_option(c)
    label_timeout_option(c)
    c.set_defaults(func=cmd_check)


#: ``python -m logicval_hf.cli.check``: the command alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "Check an image against a spec.")


if __name__ == "__main__":
    sys.exit(main())
