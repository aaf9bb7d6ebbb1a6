"""Tests of the plain-Python reference semantics (logicval_hf.contract.reference).

Hand-built scenes are checked against the meaning of templates of every class (docs/spec_language.md §4-5, ties
as docs/regions.md §6 reads them), brute-force labels against SAT/UNSAT facts argued by hand, and the search's
reductions against a naive enumeration.
"""

from __future__ import annotations

import copy
import random

import pytest
from clevr_brute_force import BruteForceLimit, _naive_search, _search, brute_force_satisfiable, is_tautology
from clevr_compiled import _compile_constraint, _Grid
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logicval_hf import Constraint, Scene, Spec, load_catalog
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.reference import (
    AbstractWorld,
    FormulaError,
    constraint_holds,
    formula_holds,
    spec_holds,
    violated,
)
from logicval_hf.contract.scene import SceneObject

CAT = load_catalog()
DOM = CAT.domain
ALL_ATTRS = tuple(DOM.attributes)  # color, shape, material, region
_PROP_OF = {v: p for p, vals in DOM.attributes.items() for v in vals}  # attribute values are unique names


# ---- helpers ----------------------------------------------------------------------------------------------------

def lit(s: str) -> dict:
    """'red' / 'not cube' / 'r2' -> attribute literal JSON."""
    neg = s.startswith("not ")
    v = s[4:] if neg else s
    return {"prop": _PROP_OF[v], "value": v, "negated": neg}


def rel(s: str) -> dict:
    neg = s.startswith("not ")
    return {"rel": s[4:] if neg else s, "negated": neg}


def con(template: str, **params) -> Constraint:
    """A validated constraint; attr slots given as 'red' / 'not red', rel slots as 'left' / 'not left'."""
    t = CAT.template(template)
    raw = {}
    for slot in t.slots:
        v = params[slot.name]
        raw[slot.name] = lit(v) if slot.type == "attr" else rel(v) if slot.type == "rel" else v
    return Constraint.from_dict({"template": template, "params": raw})


def scene(*objs: tuple) -> Scene:
    """Objects (color, shape, material, cx, cy) in a 100 x 100 image; boxes 2 px around the centre.
    Regions: r0 back-left (cx < 50, cy < 50), r1 back-right, r2 front-left, r3 front-right."""
    return Scene((100, 100), tuple(
        SceneObject({"color": c, "shape": s, "material": m}, (x - 1, y - 1, x + 1, y + 1)) for c, s, m, x, y in objs
    ))


def holds(template: str, world, **params) -> bool:
    return constraint_holds(con(template, **params), world)


def formula_only(template: str, world, **params) -> bool:
    c = con(template, **params)
    return formula_holds(c.template.formula, c.params, world)


def bf(n: int, *constraints: Constraint, negate=()) -> tuple:
    """Brute force on a spec built directly (allows two constraints of one class)."""
    return brute_force_satisfiable(Spec(n, tuple(constraints)), negate=negate)


EMPTY = Scene.empty((100, 100))


# ---- C1 existential ---------------------------------------------------------------------------------------------

def test_c1_exists_and_negated_literal():
    s = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "rubber", 80, 80))
    assert holds("C1/1prop", s, A1="red")
    assert not holds("C1/1prop", s, A1="blue")
    assert not holds("C1/1prop_neg", s, A1="not red")  # every object is red
    assert holds("C1/1prop_neg", s, A1="not cube")
    assert holds("C1/2prop_neg", s, A1="red", A2="not metal")
    assert not holds("C1/2prop", s, A1="cube", A2="rubber")  # the two properties must be on one object
    assert not holds("C1/1prop", EMPTY, A1="red")  # exists over an empty range is false


def test_c1_4prop_region_and_midline_rule():
    def one(x, y):
        return scene(("red", "cube", "metal", x, y), ("blue", "sphere", "rubber", 90, 10))
    args = {"A1": "red", "A2": "cube", "A3": "metal"}
    assert holds("C1/4prop", one(10, 80), **args, A4="r2")  # front-left
    assert not holds("C1/4prop", one(10, 20), **args, A4="r2")  # back-left is r0
    assert holds("C1/4prop", one(10, 20), **args, A4="r0")
    # a centre exactly on a midline belongs to the right column / front row (docs/regions.md §6)
    assert holds("C1/4prop", one(50, 50), **args, A4="r3")
    assert not holds("C1/4prop", one(50, 50), **args, A4="r0")


# ---- C2 universal -----------------------------------------------------------------------------------------------

def test_c2_universal_and_anti_vacuity_on_empty_scene():
    reds = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "rubber", 80, 80))
    assert holds("C2/1prop", reds, A1="red")
    assert not holds("C2/1prop", scene(("red", "cube", "metal", 10, 10), ("blue", "cube", "metal", 80, 80)), A1="red")
    # on the empty scene the universal itself is vacuously true; the anti-vacuity clause makes it false
    assert formula_only("C2/1prop", EMPTY, A1="red")
    assert not holds("C2/1prop", EMPTY, A1="red")
    assert holds("C2/1prop_neg", reds, A1="not blue")  # "No object is blue"
    assert not holds("C2/1prop_neg", reds, A1="not metal")


def test_c2_or_and_none():
    s = scene(("red", "sphere", "metal", 10, 10), ("blue", "cube", "metal", 80, 80))
    assert holds("C2/2prop_or", s, A1="red", A2="cube")
    s3 = scene(("red", "sphere", "metal", 10, 10), ("blue", "cube", "metal", 80, 80),
               ("blue", "sphere", "metal", 40, 40))
    assert not holds("C2/2prop_or", s3, A1="red", A2="cube")
    assert holds("C2/2prop_none", s3, A1="red", A2="cube")  # there is no red cube
    assert not holds("C2/2prop_none", s3, A1="blue", A2="cube")


# ---- C3 conditional ---------------------------------------------------------------------------------------------

def test_c3_conditional_with_anti_vacuity():
    ok = scene(("red", "cube", "metal", 10, 10), ("blue", "sphere", "rubber", 80, 80))
    bad = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "rubber", 80, 80))
    assert holds("C3/1prop", ok, A1="red", C1="cube")
    assert not holds("C3/1prop", bad, A1="red", C1="cube")
    # no green object: the implication holds vacuously, the anti-vacuity clause fails
    assert formula_only("C3/1prop", ok, A1="green", C1="cube")
    assert not holds("C3/1prop", ok, A1="green", C1="cube")
    assert holds("C3/1prop_neg", ok, A1="red", C1="not sphere")  # "No red object is a sphere"
    assert not holds("C3/1prop_neg", bad, A1="red", C1="not sphere")


def test_c3_region_consequent():
    s = scene(("red", "sphere", "metal", 70, 20), ("blue", "sphere", "rubber", 90, 40),
              ("red", "cube", "metal", 10, 90))
    assert holds("C3/1prop_region", s, A1="sphere", C1="r1")  # both spheres are back-right
    assert not holds("C3/1prop_region", s, A1="red", C1="r1")  # the red cube is in r2
    assert not holds("C3/1prop_region", s, A1="cylinder", C1="r1")  # no cylinder: anti-vacuity fails


# ---- C4 existential subgraph ------------------------------------------------------------------------------------

def test_c4_pair_and_distinctness():
    s = scene(("red", "cube", "metal", 10, 10), ("blue", "sphere", "rubber", 80, 80))
    assert holds("C4/pair_rel", s, A1="red", B1="blue", R1="left")
    assert holds("C4/pair_rel", s, A1="red", B1="blue", R1="behind")
    assert not holds("C4/pair_rel", s, A1="red", B1="blue", R1="right")
    assert holds("C4/pair_rel", s, A1="blue", B1="red", R1="front")
    # a single object that is both A1 and B1 cannot be paired with itself
    one = scene(("red", "cube", "metal", 10, 10))
    assert not holds("C4/pair_rel", one, A1="red", B1="metal", R1="left")
    assert not holds("C4/pair_rel_neg", one, A1="red", B1="metal", R1="not left")


def test_c4_ties_give_no_relation_and_negated_literals_are_closed_world():
    # same centre x: neither is left of the other (docs/regions.md §6)
    s = scene(("red", "cube", "metal", 30, 10), ("blue", "sphere", "rubber", 30, 80))
    assert not holds("C4/pair_rel", s, A1="red", B1="blue", R1="left")
    assert not holds("C4/pair_rel", s, A1="red", B1="blue", R1="right")
    assert holds("C4/pair_rel_neg", s, A1="red", B1="blue", R1="not left")
    assert holds("C4/pair_rel_neg", s, A1="red", B1="blue", R1="not right")
    # the y axis is still ordered
    assert holds("C4/pair_rel", s, A1="red", B1="blue", R1="behind")
    assert not holds("C4/pair_rel_neg", s, A1="red", B1="blue", R1="not behind")


def test_c4_triples():
    s = scene(("red", "cube", "metal", 10, 50), ("blue", "cube", "metal", 40, 50), ("green", "cube", "metal", 70, 50))
    assert holds("C4/triple_between", s, A1="red", B1="blue", D1="green", R1="left")
    assert not holds("C4/triple_between", s, A1="blue", B1="red", D1="green", R1="left")
    # three distinct objects are required: with only a red and a blue object there is no third one
    two = scene(("red", "cube", "metal", 10, 50), ("blue", "cube", "metal", 40, 50))
    assert not holds("C4/triple_star", two, A1="red", B1="blue", D1="cube", R1="left", R2="left")
    assert holds("C4/triple_star", s, A1="red", B1="blue", D1="cube", R1="left", R2="left")


# ---- C5 conditional subgraph ------------------------------------------------------------------------------------

def test_c5_conditional_pair_and_anti_vacuity():
    s = scene(("red", "cube", "metal", 10, 10), ("blue", "sphere", "rubber", 50, 10),
              ("blue", "cube", "rubber", 90, 10))
    assert holds("C5/pair_propA_relC", s, A1="red", B1="blue", R1="left")
    assert not holds("C5/pair_propA_relC", s, A1="red", B1="sphere", R1="right")
    # no green object: every pair satisfies the implication, but the anti-vacuity clause fails
    assert formula_only("C5/pair_propA_relC", s, A1="green", B1="blue", R1="left")
    assert not holds("C5/pair_propA_relC", s, A1="green", B1="blue", R1="left")
    # "every object that is left of another object is metal": the middle blue sphere is rubber
    assert not holds("C5/pair_relA_propC", s, R1="left", C1="metal")
    assert holds("C5/pair_relA_propC", s, R1="right", C1="rubber")  # the two objects right of another


def test_c5_rel_implies_rel_is_a_diagonal():
    diagonal = scene(("red", "cube", "metal", 10, 10), ("red", "cube", "metal", 50, 50),
                     ("red", "cube", "metal", 90, 90))
    assert holds("C5/pair_relA_relC", diagonal, R1="left", R2="behind")
    assert not holds("C5/pair_relA_relC", diagonal, R1="left", R2="front")
    kink = scene(("red", "cube", "metal", 10, 10), ("red", "cube", "metal", 50, 90), ("red", "cube", "metal", 90, 50))
    assert not holds("C5/pair_relA_relC", kink, R1="left", R2="behind")
    # a one-object scene has no pair: vacuous formula, failed anti-vacuity
    one = scene(("red", "cube", "metal", 10, 10))
    assert formula_only("C5/pair_relA_relC", one, R1="left", R2="behind")
    assert not holds("C5/pair_relA_relC", one, R1="left", R2="behind")


# ---- C6 exists-forall -------------------------------------------------------------------------------------------

def test_c6_scoped_clause():
    # Object 0 (red cube) is the only cube, so for x = 0 "every other cube is right of x" holds vacuously;
    # x = 1 (red sphere) is not left of the cube. The scoped clause (x needs another cube) makes it false.
    s = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "metal", 50, 10), ("blue", "sphere", "metal", 90, 10))
    c = con("C6/propRel", A1="red", B1="cube", R1="left")
    assert not constraint_holds(c, s)
    assert formula_holds(c.template.anti_vacuity, c.params, s)  # the weak closed clause alone would pass
    without_scope = copy.deepcopy(dict(c.template.formula))
    conj = without_scope["body"]["args"]
    assert conj[1]["op"] == "exists"  # the scoped clause
    del conj[1]
    assert formula_holds(without_scope, c.params, s)  # ... and dropping it flips the verdict
    # with a second cube to its right, the red cube is a witness
    s2 = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "metal", 50, 10), ("blue", "cube", "metal", 90, 10))
    assert constraint_holds(c, s2)


def test_c6_extreme_object():
    s = scene(("red", "cube", "metal", 10, 10), ("blue", "sphere", "metal", 50, 60),
              ("blue", "sphere", "metal", 90, 30))
    assert holds("C6/1prop", s, A1="red", R1="left")
    assert holds("C6/1prop", s, A1="red", R1="behind")
    assert holds("C6/1prop", s, A1="blue", R1="right")
    assert holds("C6/1prop", s, A1="blue", R1="front")
    assert not holds("C6/1prop", s, A1="red", R1="front")
    # a lone object is not "left of all other objects": the scoped clause wants another object
    one = scene(("red", "cube", "metal", 10, 10))
    assert not holds("C6/1prop", one, A1="red", R1="left")
    # "every object left of it is C1": red sphere at the right, with a blue and a green object to its left
    s3 = scene(("blue", "cube", "metal", 10, 10), ("blue", "cube", "metal", 50, 10), ("red", "sphere", "metal", 90, 10))
    assert holds("C6/relA_propC", s3, A1="red", R1="left", C1="blue")
    assert not holds("C6/relA_propC", s3, A1="red", R1="left", C1="rubber")


# ---- C7 forall-exists -------------------------------------------------------------------------------------------

def test_c7_forall_exists():
    s = scene(("blue", "cube", "metal", 10, 10), ("red", "cube", "metal", 50, 10), ("red", "sphere", "metal", 90, 10))
    assert holds("C7/propRel", s, A1="red", B1="blue", R1="left")  # every red object has a blue one to its left
    assert not holds("C7/propRel", s, A1="red", B1="blue", R1="right")
    assert not holds("C7/propRel", s, A1="green", B1="blue", R1="left")  # anti-vacuity: no green object
    assert formula_only("C7/propRel", s, A1="green", B1="blue", R1="left")


def test_c7_exact_count_and_ties():
    s = scene(("blue", "cube", "metal", 10, 10), ("red", "cube", "metal", 50, 10), ("blue", "sphere", "metal", 90, 10))
    assert holds("C7/1prop_exact", s, A1="red", R1="left", K=1)  # exactly one object left of the red cube
    assert not holds("C7/1prop_exact", s, A1="red", R1="left", K=2)
    assert holds("C7/1prop_exact", s, A1="red", R1="right", K=1)
    assert not holds("C7/1prop_exact", s, A1="green", R1="left", K=1)  # no green object: anti-vacuity
    two_red = scene(("blue", "cube", "metal", 10, 10), ("red", "cube", "metal", 50, 10),
                    ("red", "sphere", "metal", 90, 10))
    assert not holds("C7/1prop_exact", two_red, A1="red", R1="left", K=1)  # the second red has two to its left
    # The catalog note (only one A1 object possible) relies on total orders; with a tie in x two red objects
    # can both have exactly one object to their left.
    tied = scene(("blue", "cube", "metal", 10, 10), ("red", "cube", "metal", 50, 10),
                 ("red", "sphere", "metal", 50, 90))
    assert holds("C7/1prop_exact", tied, A1="red", R1="left", K=1)


# ---- C8 count vs constant ---------------------------------------------------------------------------------------

def test_c8_counts():
    s = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "rubber", 50, 10), ("blue", "cube", "metal", 90, 10))
    assert holds("C8/1prop_exact", s, A1="red", K=2)
    assert not holds("C8/1prop_exact", s, A1="red", K=1)
    assert holds("C8/1prop_atleast", s, A1="cube", K=2)
    assert not holds("C8/1prop_atleast", s, A1="cube", K=3)
    assert holds("C8/1prop_atmost_neg", s, A1="not metal", K=1)
    assert holds("C8/2prop_exact", s, A1="red", A2="cube", K=1)
    # red objects left of at least one blue object: both reds
    assert holds("C8/rel_exact", s, A1="red", B1="blue", R1="left", K=2)
    assert holds("C8/rel_atmost", s, A1="red", B1="blue", R1="right", K=1)  # none is right of a blue


def test_c8_negated_existential():
    # reds: x=10 and x=90; blue at x=50. "red objects that are not left of any blue object": only the one at 90
    s = scene(("red", "cube", "metal", 10, 10), ("blue", "sphere", "rubber", 50, 10), ("red", "cube", "metal", 90, 10))
    assert holds("C8/rel_exact_neg", s, A1="red", B1="blue", R1="left", K=1)
    assert not holds("C8/rel_exact_neg", s, A1="red", B1="blue", R1="left", K=2)
    # with no blue object at all, no red object is left of one: both count
    s2 = scene(("red", "cube", "metal", 10, 10), ("green", "sphere", "rubber", 50, 10),
               ("red", "cube", "metal", 90, 10))
    assert holds("C8/rel_exact_neg", s2, A1="red", B1="blue", R1="left", K=2)
    assert holds("C8/rel_atleast_neg", s2, A1="red", B1="blue", R1="left", K=2)
    # a tie: the red object at the blue one's x is not left of it, so it counts as well
    s3 = scene(("red", "cube", "metal", 50, 10), ("blue", "sphere", "rubber", 50, 80), ("red", "cube", "metal", 10, 10))
    assert holds("C8/rel_exact_neg", s3, A1="red", B1="blue", R1="left", K=1)


# ---- C9 count vs count ------------------------------------------------------------------------------------------

def test_c9_empty_sets_are_equal():
    s = scene(("green", "cube", "metal", 10, 10), ("gray", "sphere", "rubber", 50, 10))
    assert holds("C9/1prop", s, A1="red", B1="blue", T="=")  # 0 = 0 (docs/spec_language.md §5)
    s2 = scene(("red", "cube", "metal", 10, 10), ("red", "sphere", "rubber", 50, 10), ("blue", "cube", "metal", 90, 10))
    assert not holds("C9/1prop", s2, A1="red", B1="blue", T="=")
    assert holds("C9/1prop", s2, A1="red", B1="cube", T="=")


@pytest.mark.parametrize("theta,red_vs_cube,cube_vs_red", [
    ("!=", True, True), ("<", True, False), ("<=", True, False), (">", False, True), (">=", False, True)])
def test_c9_comparators(theta, red_vs_cube, cube_vs_red):
    # 1 red object, 2 cubes
    s = scene(("red", "sphere", "metal", 10, 10), ("blue", "cube", "rubber", 50, 10),
              ("green", "cube", "metal", 90, 10))
    assert holds("C9/1prop_cmp", s, A1="red", B1="cube", T=theta) is red_vs_cube
    assert holds("C9/1prop_cmp", s, A1="cube", B1="red", T=theta) is cube_vs_red


def test_c9_relational_counts():
    # red at x 10, 50; blue at 90. left-of-some-blue: 2 reds; right-of-some-blue: 0
    s = scene(("red", "sphere", "metal", 10, 10), ("red", "cube", "rubber", 50, 10), ("blue", "cube", "metal", 90, 10))
    assert holds("C9/rel_rel", s, A1="red", D1="blue", R1="left", R2="right", T=">")
    assert not holds("C9/rel_rel", s, A1="red", D1="blue", R1="left", R2="right", T="<=")
    assert holds("C9/rel", s, A1="red", D1="blue", R1="left", B1="cube", T="=")  # 2 = 2 cubes
    assert holds("C9/1prop_neg", s, A1="red", B1="not red", T=">")  # 2 > 1


# ---- the evaluator itself ---------------------------------------------------------------------------------------

W3 = AbstractWorld.from_orders([{"color": c, "shape": "cube", "material": "metal", "region": "r0"}
                                for c in ("red", "blue", "red")])


def _count(vars_, distinct, dfrom=(), where=None):
    return {"op": "count", "vars": list(vars_), "distinct": distinct, "distinct_from": list(dfrom),
            "where": where or {"op": "true"}}


def _cmp_eq(term, k):
    return {"op": "cmp", "theta": "=", "lhs": term, "rhs": {"op": "const", "value": k}}


def test_counts_count_tuples_and_distinctness():
    assert formula_holds(_cmp_eq(_count("xy", True), 6), {}, W3)  # ordered pairs of different objects
    assert formula_holds(_cmp_eq(_count("xy", False), 9), {}, W3)  # all pairs
    red = {"op": "attr", "var": "x", "lit": {"prop": "color", "value": "red", "negated": False}}
    # free variable z bound by env: objects other than z that are red
    assert formula_holds(_cmp_eq(_count("x", True, ["z"], red), 1), {}, W3, env={"z": 0})
    assert formula_holds(_cmp_eq(_count("x", True, ["z"], red), 2), {}, W3, env={"z": 1})
    # without distinct_from, an inner block may re-use the outer object
    some_red_pair = {"op": "exists", "vars": ["x"], "distinct": True, "distinct_from": [], "body": {
        "op": "exists", "vars": ["y"], "distinct": True, "distinct_from": [], "body": {
            "op": "and", "args": [red, {"op": "eq", "args": ["x", "y"]}]}}}
    assert formula_holds(some_red_pair, {}, W3)
    some_red_pair["body"]["distinct_from"] = ["x"]
    assert not formula_holds(some_red_pair, {}, W3)


def test_connectives_constants_and_slot_references():
    t, f = {"op": "true"}, {"op": "false"}
    assert formula_holds({"op": "and", "args": []}, {}, W3)
    assert not formula_holds({"op": "or", "args": []}, {}, W3)
    assert formula_holds({"op": "implies", "if": f, "then": f}, {}, W3)
    assert not formula_holds({"op": "implies", "if": t, "then": f}, {}, W3)
    assert not formula_holds({"op": "not", "arg": t}, {}, W3)
    ex_empty = {"op": "exists", "vars": ["x"], "distinct": True, "distinct_from": [], "body": t}
    fa_empty = {"op": "forall", "vars": ["x"], "distinct": True, "distinct_from": [], "body": f}
    assert not formula_holds(ex_empty, {}, EMPTY) and formula_holds(fa_empty, {}, EMPTY)
    # "$T" and "$K" resolve to slot values
    f_tk = {"op": "cmp", "theta": "$T", "lhs": _count("x", True), "rhs": {"op": "const", "value": "$K"}}
    assert formula_holds(f_tk, {"T": ">=", "K": 3}, W3)
    assert not formula_holds(f_tk, {"T": ">", "K": 3}, W3)
    with pytest.raises(FormulaError):
        formula_holds(f_tk, {"T": ">="}, W3)  # no value for K
    with pytest.raises(FormulaError):
        formula_holds({"op": "attr", "var": "x", "lit": "$A1"}, {"A1": {"rel": "left", "negated": False}}, W3,
                      env={"x": 0})  # a relation literal where an attribute literal belongs
    with pytest.raises(FormulaError):
        formula_holds({"op": "rel", "args": ["x", "y"], "lit": {"rel": "left", "negated": False}}, {}, W3, {"x": 0})
    with pytest.raises(FormulaError):
        formula_holds({"op": "xor", "args": []}, {}, W3)


def test_relations_are_irreflexive_and_closed_world():
    lit_left = {"rel": "left", "negated": False}
    odd = AbstractWorld(({"color": "red"},), frozenset({("left", 0, 0)}))  # even if a world claims rel(a, a)
    assert not formula_holds({"op": "rel", "args": ["x", "x"], "lit": lit_left}, {}, odd, {"x": 0})
    assert formula_holds({"op": "rel", "args": ["x", "x"], "lit": {"rel": "left", "negated": True}}, {}, odd, {"x": 0})
    no_facts = AbstractWorld(({"color": "red"}, {"color": "blue"}))
    assert formula_holds({"op": "rel", "args": ["x", "y"], "lit": "$R"}, {"R": {"rel": "left", "negated": True}},
                         no_facts, {"x": 0, "y": 1})


def test_violated_and_spec_holds():
    s = scene(("red", "cube", "metal", 10, 10), ("blue", "sphere", "rubber", 80, 80), ("blue", "cube", "metal", 30, 70))
    spec = Spec.from_dict({"n": 3, "constraints": [
        {"template": "C1/1prop", "params": {"A1": lit("red")}},
        {"template": "C2/1prop", "params": {"A1": lit("blue")}},
        {"template": "C8/1prop_exact", "params": {"A1": lit("cube"), "K": 2}},
    ]})
    assert violated(spec, s) == [1]
    assert not spec_holds(spec, s)
    spec_ok = Spec.from_dict({"n": 4, "constraints": [spec.to_dict()["constraints"][0]]})
    assert violated(spec_ok, s) == []
    assert not spec_holds(spec_ok, s)  # three objects, n = 4
    assert spec_holds(spec_ok, s, count="relaxed")
    assert spec_holds(Spec(3, spec_ok.constraints), s)
    with pytest.raises(ValueError):
        spec_holds(spec_ok, s, count="loose")


# ---- abstract worlds --------------------------------------------------------------------------------------------

def _objects(draw, n):
    return [{p: draw(st.sampled_from(DOM.attributes[p])) for p in DOM.perceived_attributes} for _ in range(n)]


@st.composite
def admissible_worlds(draw, min_n=1, max_n=4):
    """Any admissible world (docs/regions.md §5), drawn from two orders and a column/row split."""
    n = draw(st.integers(min_n, max_n))
    objs = _objects(draw, n)
    xo = draw(st.permutations(range(n)))
    yo = draw(st.permutations(range(n)))
    c, r = draw(st.integers(0, n)), draw(st.integers(0, n))
    xr = {o: i for i, o in enumerate(xo)}
    yr = {o: i for i, o in enumerate(yo)}
    for i, o in enumerate(objs):
        o["region"] = f"r{2 * int(yr[i] >= r) + int(xr[i] >= c)}"
    return AbstractWorld.from_orders(objs, xo, yo)


@st.composite
def arbitrary_worlds(draw, max_n=4):
    """Worlds with any relation facts at all (ties, cycles, missing inverses)."""
    n = draw(st.integers(0, max_n))
    objs = _objects(draw, n)
    for o in objs:
        o["region"] = draw(st.sampled_from(DOM.attributes["region"]))
    facts = [(r, a, b) for r in ("left", "right", "front", "behind") for a in range(n) for b in range(n) if a != b]
    chosen = draw(st.lists(st.sampled_from(facts), unique=True)) if facts else []
    return AbstractWorld(tuple(objs), frozenset(chosen))


def test_from_orders_and_admissibility():
    objs = [{"color": "red", "shape": "cube", "material": "metal", "region": "r0"},
            {"color": "blue", "shape": "cube", "material": "metal", "region": "r3"}]
    w = AbstractWorld.from_orders(objs)
    assert w.holds("left", 0, 1) and w.holds("right", 1, 0) and w.holds("behind", 0, 1) and w.holds("front", 1, 0)
    assert not w.holds("left", 1, 0)
    assert w.is_admissible(DOM)
    # object 1 in the right column but left of object 0 (left column): region-inconsistent
    assert not AbstractWorld.from_orders(objs, x_order=[1, 0]).is_admissible(DOM)
    # a tie is not a total order
    assert not AbstractWorld(w.objects, w.relations - {("left", 0, 1), ("right", 1, 0)}).is_admissible(DOM)


@settings(max_examples=examples(150), deadline=None)
@given(admissible_worlds())
def test_to_scene_realises_the_world(w):
    s = w.to_scene()
    assert AbstractWorld.from_world(s, ALL_ATTRS) == w


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(CAT.templates)), st.integers(0, 10**6),
       st.one_of(arbitrary_worlds(), admissible_worlds()))
def test_compiled_evaluator_agrees_with_interpreter(tid, seed, w):
    c = random_constraint(tid, 4, random.Random(seed))
    g = _Grid.from_world(w, ALL_ATTRS)
    expected = constraint_holds(c, w)
    assert _compile_constraint(c)(g) is expected
    assert _compile_constraint(c, negate=True)(g) is (not expected)
    # three-valued mode (geometry unknown) is sound on admissible worlds
    if w.is_admissible(DOM):
        v = _compile_constraint(c, partial=True)(g)
        assert v is None or v is expected


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(sorted(t for t in CAT.templates if t.startswith("C6/"))), st.integers(0, 10**6),
       st.one_of(arbitrary_worlds(), admissible_worlds()))
def test_c6_formula_implies_its_anti_vacuity(tid, seed, w):
    c = random_constraint(tid, 4, random.Random(seed))
    if formula_holds(c.template.formula, c.params, w):
        assert formula_holds(c.template.anti_vacuity, c.params, w)


# ---- brute force: labels argued by hand -------------------------------------------------------------------------

def test_bf_count_above_n_is_unsat():
    assert bf(3, con("C8/1prop_atleast", A1="red", K=4)) == (False, None)
    sat, w = bf(3, con("C8/1prop_atleast", A1="red", K=3))
    assert sat and [w.attribute(i, "color") for i in range(3)] == ["red"] * 3
    assert bf(3, con("C8/1prop_exact", A1="cube", K=4))[0] is False
    # rel_exact: the last object along R1 has nothing beyond it, so at most n-1 objects can count
    assert bf(3, con("C8/rel_exact", A1="red", B1="blue", R1="left", K=3))[0] is False
    assert bf(3, con("C8/rel_exact", A1="red", B1="blue", R1="left", K=2))[0] is True
    assert bf(3, con("C8/rel_exact", A1="red", B1="red", R1="left", K=2))[0] is True


def test_bf_pair_propA_relC_allows_one_object_with_both_properties():
    c5 = con("C5/pair_propA_relC", A1="red", B1="metal", R1="left")
    assert bf(3, c5)[0]
    assert bf(3, c5, con("C8/2prop_exact", A1="red", A2="metal", K=1))[0]
    # two red metal objects would each have to be left of the other
    assert bf(3, c5, con("C8/2prop_exact", A1="red", A2="metal", K=2)) == (False, None)


def test_bf_c7_exact_forces_one_object_at_rank_k():
    for k in (1, 2):
        sat, w = bf(3, con("C7/1prop_exact", A1="red", R1="left", K=k))
        assert sat
        reds = [i for i in range(3) if w.attribute(i, "color") == "red"]
        assert len(reds) == 1 and sum(w.holds("left", j, reds[0]) for j in range(3)) == k
    assert not bf(3, con("C7/1prop_exact", A1="red", R1="left", K=3))[0]  # only two other objects
    assert not bf(3, con("C7/1prop_exact", A1="red", R1="left", K=1), con("C8/1prop_atleast", A1="red", K=2))[0]
    assert not bf(4, con("C7/1prop_exact", A1="red", R1="front", K=2), con("C8/1prop_atleast", A1="red", K=2))[0]


def test_bf_parity():
    c = con("C9/1prop_neg", A1="red", B1="not red", T="=")  # #red = n - #red
    assert not bf(3, c)[0]
    sat, w = bf(4, c)
    assert sat and sum(w.attribute(i, "color") == "red" for i in range(4)) == 2
    neq = con("C9/1prop_neg", A1="red", B1="not red", T="!=")
    assert is_tautology(neq, 3) and not is_tautology(neq, 4)
    assert not is_tautology(con("C1/1prop", A1="red"), 3)


def test_bf_orders_and_regions():
    # left implies behind everywhere, yet some red is left of and in front of a blue: impossible
    diag = con("C5/pair_relA_relC", R1="left", R2="behind")
    assert not bf(3, diag, con("C4/pair_2rel", A1="red", B1="blue", R1="left", R2="front"))[0]
    assert bf(3, diag, con("C4/pair_2rel", A1="red", B1="blue", R1="left", R2="behind"))[0]
    # on total orders "not left" is "right": every red left of every other blue contradicts a red not left of a blue
    assert not bf(3, con("C5/pair_propA_relC", A1="red", B1="blue", R1="left"),
                  con("C4/pair_rel_neg", A1="red", B1="blue", R1="not left"))[0]
    # region consistency: red objects in the front row, blue ones in the back row, so no red is behind a blue
    red_r2, blue_r0 = con("C3/1prop_region", A1="red", C1="r2"), con("C3/1prop_region", A1="blue", C1="r0")
    assert not bf(3, red_r2, blue_r0, con("C4/pair_rel", A1="red", B1="blue", R1="behind"))[0]
    sat, w = bf(3, red_r2, blue_r0, con("C4/pair_rel", A1="red", B1="blue", R1="front"))
    assert sat and w.is_admissible(DOM)
    # a back-right object left of a front-left object: columns forbid it
    assert not bf(3, con("C4/pair_rel_region", A1="red", G1="r1", B1="blue", R1="left"),
                  con("C3/1prop_region", A1="blue", C1="r2"))[0]


def test_bf_region_layouts_are_all_reached():
    # front-left and back-right objects together: the y-order must run against the x-order
    sat, w = bf(3, con("C1/4prop", A1="red", A2="cube", A3="metal", A4="r2"),
                con("C1/4prop", A1="blue", A2="sphere", A3="rubber", A4="r1"))
    assert sat and w.is_admissible(DOM)
    assert w.holds("left", 0, 1) if w.attribute(0, "color") == "red" else w.holds("right", 0, 1)
    # every object in one region (all cubes, all cubes in r3): the extreme column/row split
    sat, w = bf(3, con("C2/1prop", A1="cube"), con("C3/1prop_region", A1="cube", C1="r3"))
    assert sat and {w.attribute(i, "region") for i in range(3)} == {"r3"}
    sat, w = bf(4, con("C2/1prop", A1="cube"), con("C3/1prop_region", A1="cube", C1="r0"))
    assert sat and {w.attribute(i, "region") for i in range(4)} == {"r0"}
    # all four regions occupied at n = 4 (each region literal on its own colour)
    regions = {"red": "r0", "blue": "r1", "green": "r2", "gray": "r3"}
    cons = [con("C1/4prop", A1=c, A2="cube", A3="metal", A4=r) for c, r in regions.items()]
    sat, w = bf(4, *cons)
    assert sat and sorted(w.attribute(i, "region") for i in range(4)) == ["r0", "r1", "r2", "r3"]
    assert spec_holds(Spec(4, tuple(cons)), w.to_scene())


def test_bf_witnesses_satisfy_the_spec():
    spec = Spec.from_dict({"n": 4, "constraints": [
        {"template": "C6/propRel", "params": {"A1": lit("red"), "B1": lit("cube"), "R1": rel("left")}},
        {"template": "C7/propRel_2rel", "params": {"A1": lit("cube"), "B1": lit("metal"), "R1": rel("behind"),
                                                     "R2": rel("right")}},
        {"template": "C1/4prop", "params": {"A1": lit("green"), "A2": lit("sphere"), "A3": lit("rubber"),
                                             "A4": lit("r3")}},
    ]})
    sat, w = brute_force_satisfiable(spec)
    assert sat and len(w) == 4 and w.is_admissible(DOM)
    assert spec_holds(spec, w) and spec_holds(spec, w.to_scene())


def test_bf_limit_and_bad_negate():
    # each constraint alone is SAT within a few worlds; together they are UNSAT, which needs many more
    hard = Spec(5, (con("C5/pair_relA_relC", R1="left", R2="behind"),
                    con("C4/pair_2rel", A1="red", B1="blue", R1="left", R2="front")))
    with pytest.raises(BruteForceLimit):
        brute_force_satisfiable(hard, max_worlds=50)
    with pytest.raises(IndexError):
        brute_force_satisfiable(Spec(3, hard.constraints[:1]), negate=[1])


# ---- brute force: the reductions are exact ----------------------------------------------------------------------

NAIVE_CASES = [
    [con("C8/rel_exact", A1="red", B1="blue", R1="left", K=2)],
    [con("C7/1prop_exact", A1="red", R1="front", K=1), con("C8/1prop_atleast", A1="red", K=2)],
    [con("C4/pair_rel_region", A1="red", G1="r1", B1="blue", R1="left"), con("C3/1prop_region", A1="blue", C1="r2")],
    [con("C6/propRel_2rel", A1="red", B1="cube", R1="left", R2="front"), con("C2/1prop_neg", A1="not metal")],
    [con("C5/pair_relA_relC", R1="right", R2="front"), con("C9/rel_rel", A1="red", D1="blue", R1="left",
                                                           R2="behind", T=">")],
    [con("C1/4prop", A1="red", A2="cube", A3="metal", A4="r2"), con("C3/1prop_region", A1="blue", C1="r1"),
     con("C6/1prop", A1="blue", R1="right")],
]


# the last case (three constraints) takes the naive search about a second: the whole suite only
@pytest.mark.parametrize("case", [*range(len(NAIVE_CASES) - 1),
                                  pytest.param(len(NAIVE_CASES) - 1, marks=pytest.mark.slow)])
@pytest.mark.parametrize("negate_first", [False, True])
def test_search_matches_naive_enumeration(case, negate_first):
    items = [(c, negate_first and i == 0) for i, c in enumerate(NAIVE_CASES[case])]
    fast, w = _search(3, items, DOM, 10**7)
    slow, _ = _naive_search(3, items, DOM, spare=1)
    assert fast == slow
    if fast:
        assert all(constraint_holds(c, w) != neg for c, neg in items)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(CAT.templates)), st.integers(0, 10**6)), min_size=1, max_size=2),
       st.booleans())
@pytest.mark.slow
def test_search_matches_naive_enumeration_on_random_constraints(drawn, negate_first):
    items = [(random_constraint(tid, 3, random.Random(seed)), negate_first and i == 0)
             for i, (tid, seed) in enumerate(drawn)]
    assert _search(3, items, DOM, 10**7)[0] == _naive_search(3, items, DOM, spare=1)[0]


@settings(max_examples=examples(150), deadline=None)
@given(st.sampled_from(sorted(CAT.templates)), st.integers(0, 10**6), admissible_worlds(min_n=3, max_n=4))
def test_a_model_means_sat(tid, seed, w):
    n = len(w)
    c = random_constraint(tid, n, random.Random(seed))
    sat, witness = brute_force_satisfiable(Spec(n, (c,)))
    if constraint_holds(c, w):
        assert sat
    if sat:
        assert constraint_holds(c, witness) and len(witness) == n and witness.is_admissible(DOM)


def test_the_interpreter_reads_any_domain_ranks_and_weighted_sums():
    """A COCO scene: relations from box geometry, the confidence rank within a class, legs summed per class."""
    from logicval_hf.contract.domain import load_domain

    coco = load_domain("coco")

    def c(cls, colour, x, score):
        return SceneObject({"class": cls, "color": colour}, (x, 10, x + 20, 30), score)

    world = Scene((512, 512), (c("dog", "red", 10, 0.9), c("dog", "blue", 300, 0.95), c("bird", "red", 150, 0.5)),
                  coco)

    def x(template, **params):
        return Constraint.from_dict({"template": template, "params": params}, domain=coco)

    red = {"prop": "color", "value": "red", "negated": False}
    dog = {"prop": "class", "value": "dog", "negated": False}
    bird = {"prop": "class", "value": "bird", "negated": False}
    assert not constraint_holds(x("X2/ranked_prop", A1=dog, K=1, B1=red), world)  # the most confident dog is blue
    assert constraint_holds(x("X2/ranked_prop", A1=dog, K=1, B1={**red, "value": "blue"}), world)
    left = {"rel": "left", "negated": False}
    assert constraint_holds(x("X3/ranked_rel", A1=bird, K1=1, R1=left, B1=dog, K2=1), world)  # bird left of blue dog
    assert not constraint_holds(x("X4/group_rel_all", A1=bird, R1=left, B1=dog), world)  # not of the red one
    legs = x("X5/weighted_sum_or", W="legs", A1=red, A2=dog, T="=", K=10)  # red dog 4 + blue dog 4 + red bird 2
    assert constraint_holds(legs, world)
    with pytest.raises(FormulaError, match="needs a world whose domain has it"):
        constraint_holds(legs, AbstractWorld(({"class": "dog", "color": "red"},)))
