"""Bad input to `repair` gets one line naming the problem; a spent budget gives the best repair found."""

from __future__ import annotations

import re

import pytest
from test_repair import FIVE, README_SPEC

import logicval_hf as lv
from logicval_hf.errors import SceneError, SolverLimit, SpecError
from logicval_hf.repairs import parse_costs, repair


@pytest.mark.parametrize(("costs", "message"), [
    ({"recolour": 1}, "unknown cost key 'recolour'; the allowed keys are set, move, add, remove"),
    ({"remvoe": 1}, "unknown cost key 'remvoe'; did you mean 'remove'? the allowed keys are set, move, add, remove"),
    ({"move": 0}, "cost move=0 must be a positive integer"),
    ({"add": 1.5}, "cost add=1.5 must be a positive integer"),
    ({"set": True}, "cost set=True must be a positive integer"),
])
def test_a_bad_cost_names_the_allowed_keys(costs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        repair(README_SPEC, FIVE, costs=costs)


def test_the_command_line_form_of_the_costs():
    assert parse_costs("set=2, move=3") == {"set": 2, "move": 3, "add": 1, "remove": 1}
    for bad in ("set", "set=x", "jump=1", "add=-1"):
        with pytest.raises(ValueError, match="set, move, add, remove"):
            parse_costs(bad)


def test_unreadable_specs_and_scenes_are_named():
    with pytest.raises(SpecError, match=r"^spec"):
        repair("{not json", FIVE)
    with pytest.raises(SceneError, match=r"^scene\.objects\[0\]\.color: 'pink' is not a color"):
        repair(README_SPEC, {"image_size": [480, 320], "objects": [{**FIVE["objects"][0], "color": "pink"}]})
    with pytest.raises(ValueError, match="count must be 'strict' or 'relaxed'"):
        repair(README_SPEC, FIVE, count="loose")
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        repair(README_SPEC, FIVE, timeout=0)


def test_a_scene_larger_than_the_domain_allows_is_the_limit_error():
    many = {"image_size": [480, 320], "objects": [dict(FIVE["objects"][0], bbox=[i, 0, i + 2, 2]) for i in range(19)]}
    with pytest.raises(SolverLimit, match="19 objects; a repair in domain 'clevr' takes at most 18"):
        repair(README_SPEC, many)


def test_past_the_budget_the_best_repair_found_is_returned_unproven():
    # a budget too short for any optimisation: the repair that replaces every object by the solver's witness
    spec = {"n": 5, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "yellow", "negated": False}}}]}
    lv.solve(spec)  # labelled before the budget starts, so only the optimisation is cut short
    r = repair(spec, FIVE, timeout=1e-6)
    assert not r.optimal
    assert lv.verify(spec, r.scene).ok
    assert r.cost >= repair(spec, FIVE).cost
