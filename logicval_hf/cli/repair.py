"""``logicval repair SPEC SCENE_OR_IMAGE``: the cheapest edits after which a scene (or the scene perceived in an
image) satisfies a spec, as JSON (`logicval_hf.repair`); exit 0 for any repair, 2 with one line on bad input."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.cli.dispatch import (
    backend_options,
    backend_settings,
    check_backend,
    emit,
    input_file,
    read_json,
    standalone_main,
    timeout_option,
)

__all__ = ["add_subcommands", "main"]


def _prediction(path: str, spec: Any) -> tuple[Any, bool]:
    """What ``path`` holds for the judge: a scene graph (JSON, read in the spec's domain) or an image file to
    perceive, and whether it is an image."""
    from logicval_hf.contract.scene import Scene

    if path == "-" or path.lower().endswith(".json"):
        data = read_json(path, "scene", "a scene graph is {'image_size': [W, H], 'objects': [...]}")
        return Scene.from_dict(data, spec.domain), False
    input_file(path, "scene or image")
    return path, True


def cmd_repair(args: argparse.Namespace) -> int:
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.spec import as_spec
    from logicval_hf.repairs import parse_costs
    from logicval_hf.scoring.judge import JudgeOptions, judge_one
    from logicval_hf.scoring.scores import scene_sample

    costs = parse_costs(args.costs) if args.costs is not None else None
    solver = default_solver()
    spec = as_spec(read_json(args.spec, "spec"), solver.catalog)
    prediction, perceived = _prediction(args.scene, spec)
    settings = check_backend(args.backend, backend_settings(args)) if perceived else {}  # before any image is read
    options = JudgeOptions(backend=args.backend, backend_settings=settings,
                           count="relaxed" if args.relaxed else "strict", repair=True, repair_costs=costs,
                           timeout=args.timeout, errors="raise")
    j = judge_one(spec, prediction, options, solver=solver, name="image" if perceived else "scene")
    if j.repair is None:  # a scene past the repair's limit, a budget spent before any repair: one line
        raise ValueError(j.repair_error or "no repair")
    out = j.repair.to_dict()
    if perceived:  # the edits name objects of the perceived scene: show it
        out.update(image=args.scene, backend=args.backend, perceived=scene_sample(j.scene))
    emit(out, args.pretty)
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``repair`` on the ``logicval`` subparsers."""
    p = sub.add_parser("repair", help="the cheapest edits (set, move, remove, add) after which a scene or image "
                                      "satisfies a spec, with the repaired scene and one sentence per edit (JSON)")
    p.add_argument("spec", help="spec JSON file, or - for stdin")
    p.add_argument("scene", metavar="SCENE_OR_IMAGE",
                   help="scene JSON file (read in the spec's domain), or an image (PNG, JPEG, WebP, ...) perceived "
                        "with --backend")
    backend_options(p, "an image (perceived in the spec's domain)")
    p.add_argument("--costs", metavar="set=1,move=1,add=1,remove=1",
                   help="the cost of each edit kind (positive integers; a kind left out costs 1)")
    p.add_argument("--relaxed", action="store_true", help="any number of objects (as verify --relaxed)")
    timeout_option(p, DEFAULT_TIMEOUT, "time budget; past it the best repair found, with optimal false")
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.set_defaults(func=cmd_repair)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main(add_subcommands, argv, "Repair a scene or image against a spec.")


if __name__ == "__main__":
    sys.exit(main())
