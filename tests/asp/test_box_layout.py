"""Boxes for given relations (`logicval_hf.asp.box_layout.place_boxes`): exactly the relations asked of the families
read, None for relations no boxes have, the named limit past what the placement draws."""

from __future__ import annotations

import itertools

import pytest

from logicval_hf.asp.box_layout import place_boxes
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.errors import SolverLimit

COCO = load_domain("coco")


def relations(boxes, families=COCO.relations):
    scene = Scene((512, 512), tuple(SceneObject({"class": "dog", "color": "red"}, b) for b in boxes), COCO)
    return {(i, r, j) for r in families for i, j in itertools.permutations(range(len(boxes)), 2)
            if scene.holds(r, i, j)}


def test_the_relations_asked_hold_and_no_others_of_the_families_read():
    asked = {(0, "left", 1), (1, "left", 2), (0, "left", 2), (2, "inside", 1)}
    boxes = place_boxes(COCO, 3, asked, families_read=["above"])
    assert len(boxes) == 3 and all(0 <= (b[0] + b[2]) / 2 <= 512 and 0 <= (b[1] + b[3]) / 2 <= 512 for b in boxes)
    read = ("left", "right", "above", "below", "inside", "contains")
    inverse = {(j, COCO.rules[r].inverse, i) for i, r, j in asked}
    assert relations(boxes, read) == asked | inverse


def test_a_box_inside_another_and_above_it():
    boxes = place_boxes(COCO, 2, [(0, "inside", 1), (0, "above", 1)], families_read=["left"])
    assert relations(boxes, ("inside", "above", "left", "right")) == {(0, "inside", 1), (0, "above", 1)}


def test_relations_no_boxes_have_give_none():
    assert place_boxes(COCO, 2, [(0, "left", 1), (1, "left", 0)]) is None
    assert place_boxes(COCO, 3, [(0, "larger", 1), (1, "larger", 2), (2, "larger", 0)]) is None
    assert place_boxes(COCO, 2, [(0, "inside", 1), (0, "larger", 1)]) is None


def test_one_box_twice():
    boxes = place_boxes(COCO, 2, [(0, "inside", 1), (1, "inside", 0)], families_read=["left", "larger"])
    assert boxes[0] == boxes[1]


def test_containment_that_is_not_a_forest_is_the_named_limit():
    """A box inside two boxes neither of which lies inside the other (they overlap): real boxes do this, the
    placement's containment is a forest."""
    with pytest.raises(SolverLimit, match="containment as a forest"):
        place_boxes(COCO, 3, [(0, "inside", 1), (0, "inside", 2)])
