"""Open-size specs in a box domain (COCO): counting answered by arithmetic-sized searches, the universe as large as
the counts require (never a false UNSAT from a cap), a named error past the domain's limit."""

from __future__ import annotations

import pytest

from logicval_hf.asp.programs import solve_program
from logicval_hf.asp.solver import Solver
from logicval_hf.asp.universe import objects_needed, solving_values, universe_bound
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SolverLimit, SpecError

COCO = load_domain("coco")


def lit(prop, value):
    return {"prop": prop, "value": value, "negated": False}


def count(cls, theta, k):
    return {"template": "X1/count_cmp", "params": {"A1": lit("class", cls), "T": theta, "K": k}}


def coloured(cls, colour, theta, k):
    return {"template": "X1/count2_cmp", "params": {"A1": lit("class", cls), "A2": lit("color", colour), "T": theta,
                                                    "K": k}}


def either(a, b, theta, k):
    return {"template": "X1/count_or_cmp", "params": {"A1": lit("class", a), "A2": lit("class", b), "T": theta, "K": k}}


def group(a, rel, b):
    return {"template": "X4/group_rel_all", "params": {"A1": lit("class", a), "R1": {"rel": rel, "negated": False},
                                                      "B1": lit("class", b)}}


def coco(*constraints):
    return Spec.from_dict({"domain": "coco", "constraints": list(constraints)})


def at_least_k_each_at_most_2k_minus_1(k):
    """UNSAT by counting alone: K dogs and K cats are 2K dogs-or-cats."""
    return coco(count("dog", ">=", k), count("cat", ">=", k), either("dog", "cat", "<=", 2 * k - 1))


def exactly_k_each(k):
    return coco(count("dog", "=", k), count("cat", "=", k))


@pytest.fixture(scope="module")
def solver():
    return Solver()


@pytest.mark.parametrize("k", range(2, 11))
def test_the_counting_contradiction_is_unsat_with_its_whole_core(solver, k):
    r = solver.solve(at_least_k_each_at_most_2k_minus_1(k), timeout=10)
    assert r.label == "UNSAT" and r.core == (0, 1, 2)


@pytest.mark.parametrize("k", range(2, 11))
def test_k_dogs_and_k_cats_is_sat_with_a_scene_of_2k_objects(solver, k):
    spec = exactly_k_each(k)
    r = solver.solve(spec, timeout=10)
    assert r.label == "SAT"
    classes = [o["class"] for o in r.witness]
    assert classes.count("dog") == k and classes.count("cat") == k
    assert solver.verify(spec, r.witness, label="SAT").ok


def test_nine_dogs_and_nine_cats_is_not_a_false_unsat(solver):
    """18 objects: the 16-object cap made this UNSAT with a core."""
    assert universe_bound(exactly_k_each(9)) == 18
    assert solver.solve(exactly_k_each(9)).label == "SAT"


def test_a_hard_imag_eval_shape_is_admitted_and_its_witness_verifies(solver):
    """Imag-Eval's hard prompts: four classes of four or five, coloured, with relations between the groups."""
    spec = coco(count("bowl", "=", 5), coloured("bowl", "white", "=", 5), count("toilet", "=", 5),
                coloured("toilet", "black", "=", 5), count("hot dog", "=", 4), coloured("hot dog", "blue", "=", 4),
                count("toothbrush", "=", 5), coloured("toothbrush", "purple", "=", 5), group("bowl", "right", "toilet"),
                group("toothbrush", "larger", "bowl"), group("hot dog", "smaller", "toilet"))
    assert objects_needed(spec) == 19  # each colour count is among its class's exact count
    r = solver.solve(spec, timeout=10)
    assert r.label == "SAT" and len(r.witness) == 19
    assert solver.verify(spec, r.witness, label="SAT").ok


def test_past_the_domains_limit_is_an_error_naming_it_never_a_label(solver):
    spec = coco(count("dog", "=", 30), count("cat", "=", 30))
    with pytest.raises(SolverLimit, match=r"may need up to 60 objects \(constraints\[0\] \(X1/count_cmp: 30\), "
                                          r"constraints\[1\] \(X1/count_cmp: 30\)\), more than domain 'coco' allows a "
                                          r"scene \(max_objects = 48\); no label is given"):
        solver.solve(spec)
    assert issubclass(SolverLimit, SpecError)  # bad input: exit 2 on the CLI, an error entry in a server


def test_a_count_past_the_limit_is_refused_by_the_contract():
    with pytest.raises(SpecError, match=r"params\.K: count 49 is out of range 0\.\.48"):
        coco(count("dog", ">=", 49))


@pytest.mark.parametrize("constraints, need", [
    ([count("dog", ">=", 3)], 3),
    ([count("dog", ">", 3)], 4),
    ([count("dog", "<", 3)], 1),  # nothing is needed; a universe has at least one slot
    ([count("dog", "!=", 0)], 1),
    ([count("dog", "=", 4), coloured("dog", "red", ">=", 2)], 4),  # the red dogs are among the four dogs
    ([count("dog", ">=", 4), coloured("dog", "red", ">=", 2)], 6),  # not under an at-least: they may be extra
    ([{"template": "C4/pair_rel", "params": {"A1": lit("class", "dog"), "B1": lit("class", "cat"),
                                             "R1": {"rel": "left", "negated": False}}}], 2),
    ([group("dog", "left", "cat")], 1),  # a universal needs nothing
    ([count("dog", ">=", 2), {"template": "X2/ranked_prop", "params": {"A1": lit("class", "dog"), "K": 2,
                                                                       "B1": lit("color", "red")}}], 4),
])
def test_objects_needed(constraints, need):
    assert objects_needed(coco(*constraints)) == need


def test_solving_values_keep_the_tested_ones_and_one_spare_per_weight():
    spec = coco(count("dog", ">=", 1), coloured("cat", "red", "=", 1))
    values = solving_values(spec)
    assert values["class"] == ("cat", "dog", "person") and values["color"] == ("red", "orange")
    legs = coco({"template": "X5/weighted_sum_or", "params": {"W": "legs", "A1": lit("color", "red"),
                                                              "A2": lit("class", "dog"), "T": "=", "K": 10}})
    # dogs, and one untested class per number of legs: 2 (person), none (bicycle), 4 (cat)
    assert solving_values(legs)["class"] == ("dog", "person", "bicycle", "cat")
    program = solve_program(spec)
    assert "solving_value(class,dog,1)." in program and "giraffe" not in program.split("% values a solve")[1]


def test_weighted_sums_over_a_colour_use_each_weight(solver):
    """Red things with 10 legs in all: needs a 4-legged and a 2-legged animal, neither named by the spec."""
    spec = coco({"template": "X5/weighted_sum_or", "params": {"W": "legs", "A1": lit("color", "red"),
                                                              "A2": lit("class", "dog"), "T": "=", "K": 10}},
                count("dog", "=", 0), either("person", "bird", "=", 1))
    r = solver.solve(spec)
    assert r.label == "SAT" and solver.verify(spec, r.witness, label="SAT").ok


def test_ranked_specs_keep_the_confidence_order_within_a_class(solver):
    """The two most confident dogs are red and the least confident one is not: the canonical order of objects
    may sort classes but never reorder a class, whose order is its ranks."""
    spec = coco(count("dog", "=", 3), {"template": "X2/ranked_prop", "params": {"A1": lit("class", "dog"), "K": 2,
                                                                               "B1": lit("color", "red")}},
                coloured("dog", "red", "=", 2), group("dog", "left", "cat"), count("cat", ">=", 1))
    r = solver.solve(spec)
    assert r.label == "SAT" and solver.verify(spec, r.witness, label="SAT").ok
    dogs = sorted((o for o in r.witness if o["class"] == "dog"), key=lambda o: -o.score)
    assert [o["color"] for o in dogs][:2] == ["red", "red"] and dogs[2]["color"] != "red"
