"""The Check tab's verdict and its list of failing constraints tell one story, and region
codes are named wherever the Space shows them (tables, menus, a legend for the JSON and ASP texts)."""

from __future__ import annotations

import pytest
from helpers import attr

from logicval_hf import load_catalog
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.space import check as chk
from logicval_hf.space import common
from logicval_hf.space import compose as cmp

CUBES = {"n": 3, "constraints": [{"template": "C2/1prop", "params": {"A1": attr("shape", "cube")}}]}
UNSAT = {"n": 3, "constraints": [  # every object a cube, yet one of them a sphere
    {"template": "C2/1prop", "params": {"A1": attr("shape", "cube")}},
    {"template": "C1/1prop", "params": {"A1": attr("shape", "sphere")}}]}


def _scene(*shapes: str) -> Scene:
    return Scene((480, 320), tuple(SceneObject({"color": "red", "material": "metal", "shape": s},
                                               (20 + 100 * i, 40 + 60 * (i % 2), 80 + 100 * i, 100 + 60 * (i % 2)))
                                   for i, s in enumerate(shapes)))


def _texts(spec: dict, scene: Scene) -> tuple[str, str, str]:
    res = chk.evaluate_scene(common.parse_spec_input(spec)[0], scene)
    return chk.verdict_story(res), chk.verdict_markdown(res), chk.violations_markdown(res)


@pytest.mark.parametrize("shapes,story,below", [
    (("cube", "cube", "cube"), "✓ Satisfied: 3 object(s) detected", "**No constraint fails on the detected objects.**"),
    (("cube", "cube"), "✗ Not satisfied, because of the count only: 2 object(s) detected where the spec asks "
                       "for exactly 3", "The strict verdict fails on the count alone: 2 object(s) detected, 3"),
    (("cube", "sphere", "cube"), "✗ Not satisfied: the count matches (n = 3), but Constraint 1 fails.",
     "### Failing constraints"),
    (("cube", "sphere"), "✗ Not satisfied: 2 object(s) detected where the spec asks for exactly 3, and "
                         "Constraint 1 fails.", "### Failing constraints"),
], ids=["ok", "count-only", "constraint-only", "both"])
def test_the_verdict_and_the_failing_constraints_tell_one_story(shapes, story, below):
    said, verdict, why = _texts(CUBES, _scene(*shapes))
    assert said.startswith(story) and f"**{said}**" in verdict
    assert below in why
    assert "Every constraint holds" not in why  # the old line under a ✗ verdict that the count had failed


def test_an_unsat_spec_says_why_an_image_with_objects_fails():
    said, _, _why = _texts(UNSAT, _scene("cube", "cube", "cube"))
    assert said.startswith("✗ Not satisfied: the spec is UNSAT") and "shows 3 object(s)" in said
    said, _, _ = _texts(UNSAT, Scene((480, 320), ()))
    assert said.startswith("✓ Satisfied: the spec is UNSAT")


def test_regions_are_named_where_the_space_shows_them():
    scene = Scene((480, 320), (SceneObject({"color": "red", "material": "metal", "shape": "cube"}, (20, 20, 80, 80)),
                               SceneObject({"color": "blue", "material": "rubber", "shape": "sphere"},
                                           (380, 240, 440, 300))))
    rows = common.scene_rows(scene)
    region_column = common.scene_headers(scene).index("region")
    assert [r[region_column] for r in rows] == ["back left (r0)", "front right (r3)"]
    assert [o["region_name"] for o in common.boxes_json(scene)] == ["back left", "front right"]
    assert common.boxes_json(scene)[0]["region"] == "r0"  # the JSON keeps the code
    catalog = load_catalog()
    legend = common.region_legend(catalog.domain)
    assert all(f"`r{k}` {w}" in legend for k, w in enumerate(("back left", "back right", "front left",
                                                               "front right")))
    menus = [label for t in catalog.templates.values() for s in t.slots if s.type == "attr"
             for label, value in cmp.slot_options(s, 4, catalog) if value.startswith("region")]
    assert menus and all(" region (r" in label and ("back-" in label or "front-" in label) for label in menus)
