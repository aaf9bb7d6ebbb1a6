"""``logicval demo``: a small built-in walk through the logic core (no downloads): solve a spec, verify its witness,
break it, find a core."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from logicval_hf.cli.dispatch import standalone

if TYPE_CHECKING:  # the solver is imported when the demo runs, not when `logicval` builds its parser
    from logicval_hf.contract.scene import Scene
    from logicval_hf.contract.spec import Spec

__all__ = ["EXAMPLE_SAT", "EXAMPLE_UNSAT", "add_subcommands", "cmd_demo", "main", "run_demo"]

EXAMPLE_SAT = {
    "n": 5,
    "constraints": [
        {"template": "C3/1prop", "params": {
            "A1": {"prop": "color", "value": "red", "negated": False},
            "C1": {"prop": "shape", "value": "cube", "negated": False}}},
        {"template": "C6/propRel", "params": {
            "A1": {"prop": "material", "value": "metal", "negated": False},
            "B1": {"prop": "shape", "value": "sphere", "negated": False},
            "R1": {"rel": "left", "negated": False}}},
        {"template": "C8/1prop_exact", "params": {
            "A1": {"prop": "color", "value": "blue", "negated": False}, "K": 2}},
    ],
}

EXAMPLE_UNSAT = {
    "n": 4,
    "constraints": [
        {"template": "C2/1prop", "params": {"A1": {"prop": "shape", "value": "cube", "negated": False}}},
        {"template": "C4/pair_rel", "params": {
            "A1": {"prop": "color", "value": "red", "negated": False},
            "B1": {"prop": "color", "value": "blue", "negated": False},
            "R1": {"rel": "behind", "negated": False}}},
        {"template": "C9/1prop", "params": {
            "A1": {"prop": "shape", "value": "sphere", "negated": False},
            "B1": {"prop": "color", "value": "red", "negated": False},
            "T": "="}},
    ],
}


def _describe(spec: Spec) -> list[str]:
    from logicval_hf.contract.verbalise import constraint_text

    return [constraint_text(c, spec.n) for c in spec.constraints]


def _table(scene: Scene) -> list[str]:
    rows = []
    for i, o in enumerate(scene.objects):
        attrs = " ".join(f"{o.attributes[a]:<8}" for a in scene.domain.perceived_attributes)
        box = ", ".join(f"{v:.0f}" for v in o.bbox)
        rows.append(f"  #{i}  {attrs} {scene.region(i)}  bbox [{box}]")
    return rows


def _legend(scene: Scene) -> str:
    """What the region codes of `_table` mean, and the frame the boxes are in."""
    from logicval_hf.contract.verbalise import region_name

    regions = ", ".join(f"{r} {region_name(r).split()[1]}" for r in ("r0", "r1", "r2", "r3"))  # "the back-left ..."
    w, h = scene.image_size
    return (f"  regions (image quadrant of the box centre, back = upper half): {regions}\n"
            f"  bbox: [x0, y0, x1, y1] in pixels of a {w}x{h} image\n")


def _write_spec(w: Callable[[str], Any], spec: Spec) -> None:
    """The spec as the prompt numbers it: "Constraint 1", "Constraint 2", ..."""
    w(f"Spec: {spec.n} objects\n")
    for i, text in enumerate(_describe(spec), 1):
        w(f"  Constraint {i}: {text}\n")


def run_demo(out: TextIO) -> None:
    from logicval_hf.asp.solver import solve, verify
    from logicval_hf.contract.scene import Scene, SceneObject
    from logicval_hf.contract.spec import Spec
    from logicval_hf.contract.verbalise import constraint_names

    w = out.write
    spec = Spec.from_dict(EXAMPLE_SAT)
    _write_spec(w, spec)
    result = solve(spec)
    w(f"Solver label: {result.label}\n")
    assert result.witness is not None
    w("Witness scene (solver model laid out as boxes):\n" + "\n".join(_table(result.witness)) + "\n")
    w(_legend(result.witness))
    v = verify(spec, result.witness)
    w(f"Verify witness: ok={v.ok} count_ok={v.count_ok} violated: {constraint_names(v.violated)}\n")

    # Break the scene: recolour every blue object red, then drop the last object.
    objs = [
        SceneObject({**o.attributes, "color": "red"} if o.attributes["color"] == "blue" else dict(o.attributes), o.bbox)
        for o in result.witness.objects
    ]
    broken = dataclasses.replace(result.witness, objects=tuple(objs[:-1]))
    v = verify(spec, broken)
    w(f"Verify an edited scene (blue->red, one object removed): ok={v.ok} count_ok={v.count_ok} "
      f"violated: {constraint_names(v.violated)}\n")
    v = v.with_count("relaxed")
    w(f"  count-relaxed: ok={v.ok} violated: {constraint_names(v.violated)}\n")

    unsat = Spec.from_dict(EXAMPLE_UNSAT)
    w("\n")
    _write_spec(w, unsat)
    r2 = solve(unsat)
    w(f"Solver label: {r2.label}; minimal unsat core: {constraint_names(r2.core or ())}\n")
    w(f"Verify the empty scene: ok={verify(unsat, Scene.empty()).ok} (an UNSAT spec is answered by an empty image)\n")


def cmd_demo(args: argparse.Namespace) -> int:
    run_demo(out=sys.stdout)
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``demo`` on the ``logicval`` subparsers."""
    d = sub.add_parser("demo", help="solve and verify a built-in example spec (no downloads)")
    d.set_defaults(func=cmd_demo)


#: ``python -m logicval_hf.cli.demo``: the command alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "Solve and verify a built-in example spec.")


if __name__ == "__main__":
    sys.exit(main())
