"""The geometry box placement rests on, checked against real boxes.

* Soundness of the order rules (asp/box_orders.lp): the relations of any boxes obey them, so a spec they refute is
  UNSAT for real. Random boxes (anywhere, and on a coarse grid so that ties, equal sizes, shared edges and nesting
  occur) are read by the domain's own rule and every rule is checked on them.
* The exact rule (`logicval_hf.asp.placement.exact_holds`) is the domain's rule and GenEval's published one, away
  from floating-point ties.
* The zones of box_placement.lp: the rule on zone coordinates is what boxes anywhere in their zones give.
* Realisation: any placement the placement program finds is drawn, exactly and in floating point (random specs).
"""

from __future__ import annotations

import importlib.util
import itertools
import random
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.asp.placement import ALONE, ZONES, exact_holds
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject

COCO = load_domain("coco")
_RULE = importlib.util.spec_from_file_location("geneval_rule",
                                               Path(__file__).parents[1] / "benchmark" / "geneval_rule.py")
geneval_rule = importlib.util.module_from_spec(_RULE)
_RULE.loader.exec_module(geneval_rule)  # GenEval's rule as published, re-implemented independently of the package
FAMILY = {"left": "x", "above": "y", "smaller": "area", "inside": "nest"}  # canonical relation -> family


def _box(draw_grid: bool, v: list[int]) -> tuple[float, float, float, float]:
    if draw_grid:  # a coarse grid: equal centres, sizes and edges, and nesting, occur often
        x, y, w, h = (v[0] % 4) * 32, (v[1] % 4) * 32, 16 * (1 + v[2] % 4), 16 * (1 + v[3] % 4)
    else:
        x, y, w, h = v[0] % 400, v[1] % 400, 1 + v[2] % 200, 1 + v[3] % 200
    return float(x), float(y), float(x + w), float(y + h)


boxes_strategy = st.tuples(st.booleans(), st.lists(st.lists(st.integers(0, 10_000), min_size=4, max_size=4),
                                                   min_size=2, max_size=6))


def _before(boxes: list[tuple[float, ...]]) -> set[tuple[str, int, int]]:
    """The order atoms the boxes give: before(F, a, b) for each family's canonical relation."""
    n = len(boxes)
    return {(f, a, b) for r, f in FAMILY.items() for a, b in itertools.permutations(range(n), 2)
            if exact_holds(COCO.rules[r], [Fraction(v) for v in boxes[a]], [Fraction(v) for v in boxes[b]])}


@settings(max_examples=examples(400), deadline=None, derandomize=True)
@given(boxes_strategy)
def test_the_relations_of_real_boxes_obey_every_order_rule(drawn):
    grid, values = drawn
    boxes = [_box(grid, v) for v in values]
    before = _before(boxes)
    n = len(boxes)
    objs = range(n)
    for f in FAMILY.values():
        for a, b, c in itertools.permutations(objs, 3):  # transitive
            if (f, a, b) in before and (f, b, c) in before:
                assert (f, a, c) in before, (f, a, b, c, boxes)
        for a, b in itertools.permutations(objs, 2):  # offsets and areas strict
            if f != "nest":
                assert not ((f, a, b) in before and (f, b, a) in before), (f, a, b, boxes)
    for a, c in itertools.permutations(objs, 2):  # equal areas: "neither" is transitive
        if ("area", a, c) in before:
            assert all(("area", a, b) in before or ("area", b, c) in before for b in objs if b not in (a, c))
    for a, b in itertools.permutations(objs, 2):
        if ("nest", a, b) in before and ("nest", b, a) in before:  # twins: one box twice
            assert not any((f, a, b) in before for f in ("x", "y", "area"))
            for c in objs:
                if c not in (a, b):
                    for f in FAMILY.values():
                        assert ((f, a, c) in before) == ((f, b, c) in before)
                        assert ((f, c, a) in before) == ((f, c, b) in before)
        elif ("nest", a, b) in before:  # strictly inside: smaller
            assert ("area", a, b) in before, (a, b, boxes)


@settings(max_examples=examples(400), deadline=None, derandomize=True)
@given(boxes_strategy)
def test_the_exact_rule_is_the_domains_and_genevals(drawn):
    grid, values = drawn
    boxes = [_box(grid, v) for v in values]
    scene = Scene((512, 512), tuple(SceneObject({"class": "dog", "color": "red"}, b) for b in boxes), COCO)
    words = {"left": "left of", "right": "right of", "above": "above", "below": "below"}
    for a, b in itertools.permutations(range(len(boxes)), 2):
        fa, fb = [Fraction(v) for v in boxes[a]], [Fraction(v) for v in boxes[b]]
        for r in COCO.relations:
            assert exact_holds(COCO.rules[r], fa, fb) == scene.holds(r, a, b), (r, boxes[a], boxes[b])
        for r, w in words.items():
            assert exact_holds(COCO.rules[r], fa, fb) == (w in geneval_rule.relative_position(boxes[a], boxes[b]))


def _zone(z: tuple[int, int], width: Fraction, table: dict) -> tuple[Fraction, Fraction, Fraction]:
    """(centre x, centre y, extent) of zone z of a square container of this width."""
    tau, extent = table[abs(z[0]) + abs(z[1])]
    return z[0] * tau * width, z[1] * tau * width, extent * width


def _point_rule(d: int, e: int) -> bool:
    """GenEval's rule for points, threshold 1/2: d along the axis, e across it."""
    return d > 0 and 3 * d * d > e * e


@pytest.mark.parametrize("table", ["ZONES", "ALONE"])
def test_boxes_anywhere_in_their_zones_relate_as_the_zones_do(table):
    """What box_placement.lp derives from zone coordinates holds for any boxes of a zone's contents (anywhere in the
    zone's square, of any size that fits): between a container and its content, and between the contents of two
    zones (when several zones are occupied), margins included."""
    zones_of = ZONES if table == "ZONES" else ALONE
    rng = random.Random(0)
    width = Fraction(1000)
    container = (-width / 2, -width / 2, width / 2, width / 2)
    zones = list(itertools.product((-1, 0, 1), repeat=2))

    def content(z: tuple[int, int]) -> tuple[Fraction, ...]:
        cx, cy, e = _zone(z, width, zones_of)
        w, h = Fraction(rng.random()) * e / 2, Fraction(rng.random()) * e / 2
        x = cx + (Fraction(rng.random()) - Fraction(1, 2)) * (e - w)
        y = cy + (Fraction(rng.random()) - Fraction(1, 2)) * (e - h)
        return x - w / 2, y - h / 2, x + w / 2, y + h / 2

    rules = ((COCO.rules["left"], 0), (COCO.rules["above"], 1))
    for _ in range(examples(8000)):
        z, w = rng.choice(zones), rng.choice(zones)
        a = content(z)
        assert container[0] <= a[0] and a[2] <= container[2] and container[1] <= a[1] and a[3] <= container[3]
        for rule, k in rules:
            assert exact_holds(rule, a, container) == _point_rule(-z[k], z[1 - k]), (z, rule.name)
            assert exact_holds(rule, container, a) == _point_rule(z[k], z[1 - k]), (z, rule.name)
            if z != w and table == "ZONES":
                b = content(w)
                assert exact_holds(rule, a, b) == _point_rule(w[k] - z[k], w[1 - k] - z[1 - k]), (z, w, rule.name)


@pytest.mark.parametrize("n", [examples(120), pytest.param(600, marks=pytest.mark.slow)])
def test_every_placement_found_is_drawn_exactly(n):
    """Random specs over every box relation: each SAT label comes with boxes that give back every relation of the
    placement (realise checks it exactly and in floating point; here the interpreter checks the spec on them)."""
    from coco_specs import TEMPLATES, random_spec

    from logicval_hf.asp.solver import Solver
    from logicval_hf.contract.reference import constraint_holds
    from logicval_hf.errors import SolverLimit, SolverTimeout

    rng = random.Random(n)
    solver = Solver(max_specs=10_000)
    sat = 0
    for _ in range(n):
        spec = random_spec(rng, TEMPLATES, rng.choice([1, 2, 3]), max_count=2)
        try:
            r = solver.solve(spec, timeout=20)
        except (SolverLimit, SolverTimeout):
            continue
        if r.satisfiable:
            sat += 1
            assert all(constraint_holds(c, r.witness) for c in spec.constraints), spec.to_json()
            assert solver.verify(spec, r.witness, label="SAT").ok
    assert sat > n // 3
