"""`logicval_hf.repair`: the cheapest edits after which a scene satisfies its spec, on hand-made cases."""

from __future__ import annotations

import json

import pytest

import logicval_hf as lv
from logicval_hf.repairs import Edit, Repair, apply_edits, repair

RED = {"prop": "color", "value": "red", "negated": False}
CUBE = {"prop": "shape", "value": "cube", "negated": False}
#: the README's logic-core spec: five objects, every red object is a cube
README_SPEC = {"n": 5, "constraints": [{"template": "C3/1prop", "params": {"A1": RED, "C1": CUBE}}]}


def _obj(color: str, shape: str, material: str, cx: float, cy: float, size: float = 40) -> dict:
    return {"color": color, "shape": shape, "material": material,
            "bbox": [cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2]}


def _scene(*objs: dict) -> dict:
    return {"image_size": [480, 320], "objects": list(objs)}


FIVE = _scene(_obj("red", "cube", "metal", 60, 60), _obj("blue", "sphere", "rubber", 200, 250),
              _obj("red", "sphere", "metal", 400, 80), _obj("green", "cylinder", "rubber", 300, 200),
              _obj("gray", "cube", "rubber", 120, 180))


def test_the_readme_spec_one_attribute_away_costs_one_edit_with_its_sentence():
    r = repair(README_SPEC, FIVE)
    assert (r.satisfiable, r.cost, r.optimal) == (True, 1, True)
    assert len(r.edits) == 1 and r.edits[0].kind == "set" and r.edits[0].object == 2
    e = r.edits[0]
    assert (e.attribute, e.old) in (("color", "red"), ("shape", "sphere"))
    # the domain's order breaks the tie between recolouring and reshaping: colour comes first
    assert (e.attribute, e.new) == ("color", "gray")
    assert r.instructions == ("Make the red sphere gray.",)
    assert lv.verify(README_SPEC, r.scene).ok


def test_a_scene_already_right_costs_nothing():
    right = _scene(*FIVE["objects"][:2], _obj("red", "cube", "rubber", 400, 80),
                   *FIVE["objects"][3:])
    r = repair(README_SPEC, right)
    assert (r.cost, r.edits, r.instructions, r.optimal) == (0, (), (), True)
    assert r.scene.to_dict() == lv.Scene.from_dict(right).to_dict()


def test_an_unsat_spec_removes_every_object_and_gives_its_core():
    blue = {"prop": "color", "value": "blue", "negated": False}
    spec = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": RED}},
                                    {"template": "C8/1prop_exact", "params": {"A1": RED, "K": 3}},
                                    {"template": "C2/1prop", "params": {"A1": blue}}]}
    label = lv.solve(spec)
    assert not label.satisfiable
    r = repair(spec, FIVE)
    assert not r.satisfiable and r.core == label.core
    assert [e.kind for e in r.edits] == ["remove"] * 5 and [e.object for e in r.edits] == list(range(5))
    assert r.cost == 5 and r.optimal and len(r.scene) == 0
    assert r.instructions[:3] == ("Remove the red cube.", "Remove the blue sphere.", "Remove the red sphere.")


def test_a_missing_object_is_added_where_the_spec_wants_it():
    left_of_red = {"n": 3, "constraints": [{"template": "C4/pair_rel", "params": {
        "A1": {"prop": "shape", "value": "cylinder", "negated": False}, "B1": RED,
        "R1": {"rel": "front", "negated": False}}}]}
    two = _scene(_obj("red", "cube", "metal", 300, 100), _obj("blue", "sphere", "rubber", 100, 250))
    r = repair(left_of_red, two)
    assert (r.cost, [e.kind for e in r.edits]) == (1, ["add"])
    add = r.edits[0]
    assert add.object is None and isinstance(add.new, dict) and add.new["shape"] == "cylinder"
    cy = (add.bbox[1] + add.bbox[3]) / 2
    assert cy > 100  # in front of the red cube
    # placed against the nearest objects on each axis: in front of the sphere is in front of the cube too
    assert r.instructions == ("Add a gray rubber cylinder at the front right, to the right of the cube, in front of "
                              "the sphere.",)
    assert lv.verify(left_of_red, r.scene).ok


def test_a_move_keeps_the_size_and_names_where_to():
    spec = {"n": 3, "constraints": [{"template": "C4/pair_rel", "params": {
        "A1": {"prop": "shape", "value": "sphere", "negated": False}, "B1": CUBE,
        "R1": {"rel": "left", "negated": False}}}]}
    scene = _scene(_obj("red", "cube", "metal", 100, 100), _obj("blue", "sphere", "rubber", 380, 250, size=50),
                   _obj("green", "cylinder", "rubber", 240, 60))
    r = repair(spec, scene)
    assert r.cost == 1 and r.edits[0].kind == "move"
    moved = r.edits[0]
    x0, y0, x1, y1 = moved.bbox
    assert (x1 - x0, y1 - y0) == pytest.approx((50, 50))
    assert (x0 + x1) / 2 < 100  # left of the cube now
    assert r.instructions[0].startswith("Move the sphere ")
    assert "to the left of the cube" in r.instructions[0]


def test_costs_reweight_the_edit_kinds():
    spec = {"n": 5, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "yellow", "negated": False}}}]}
    assert [e.kind for e in repair(spec, FIVE).edits] == ["set"]
    r = repair(spec, FIVE, costs={"set": 5})
    assert r.cost == 2 and sorted(e.kind for e in r.edits) == ["add", "remove"]
    assert r.costs == {"set": 5, "move": 1, "add": 1, "remove": 1}


def test_relaxed_count_leaves_the_number_of_objects_alone():
    spec = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": RED}}]}
    assert repair(spec, FIVE).cost == 2  # two objects too many
    r = repair(spec, FIVE, count="relaxed")
    assert (r.cost, r.count) == (0, "relaxed")


def test_the_edits_applied_to_the_input_give_the_repaired_scene_and_the_json_round_trips():
    spec = {"n": 4, "constraints": [{"template": "C8/1prop_exact", "params": {"A1": RED, "K": 3}}]}
    r = repair(spec, FIVE)
    assert isinstance(r, Repair) and all(isinstance(e, Edit) for e in r.edits)
    assert apply_edits(lv.Scene.from_dict(FIVE), r.edits).to_dict() == r.scene.to_dict()
    d = json.loads(json.dumps(r.to_dict()))
    assert set(d) >= {"satisfiable", "core", "cost", "optimal", "edits", "scene", "instructions"}
    assert d["cost"] == r.cost and len(d["edits"]) == len(d["instructions"]) == len(r.edits)
    assert lv.verify(spec, d["scene"]).ok


def test_the_same_input_gives_the_same_repair():
    spec = {"n": 5, "constraints": [{"template": "C7/1prop", "params": {
        "A1": {"prop": "material", "value": "metal", "negated": False}, "R1": {"rel": "left", "negated": False}}}]}
    first = repair(spec, FIVE).to_dict()
    assert all(repair(spec, FIVE).to_dict() == first for _ in range(3))


def test_the_package_root_exports_the_repair_api_whatever_was_imported_first():
    # the room is `repairs`, so importing it leaves the root's `repair` the function
    import logicval_hf.repairs.model  # noqa: F401

    assert callable(lv.repair) and lv.repair.__name__ == "repair"

    assert lv.Repair is Repair and lv.Edit is Edit
    assert lv.repair(README_SPEC, FIVE).to_dict() == repair(README_SPEC, FIVE).to_dict()
