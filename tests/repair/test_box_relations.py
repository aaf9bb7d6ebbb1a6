"""Repairs in a box-geometry domain (COCO) of specs that read relations between boxes (offsets, areas, containment):
moves and additions to candidate boxes, checked against the clingo-free brute force of `reference_boxes` over the
same candidate boxes, every repaired scene checked by the clingo-free interpreter."""

from __future__ import annotations

import random

import pytest
from coco_specs import CATALOG, COCO, TEMPLATES, random_scene, random_spec
from helpers import examples
from reference_boxes import BoxReference, legal

from logicval_hf.asp.solver import verify
from logicval_hf.contract.reference import spec_holds
from logicval_hf.contract.scene import Scene
from logicval_hf.repairs import DEFAULT_COSTS, boxes, repair
from logicval_hf.repairs.facts import Problem

#: templates with a relation slot
RELATIONAL = [t for t in TEMPLATES if any(s.type == "rel" for s in CATALOG.template(t).slots)]
#: the sample of the whole suite (a quarter of it in the inner loop) and the slow test's; the candidate lattice both
#: run on (small, so that the brute force over every candidate stays quick; the repair reads the same module constant)
FAST_PAIRS = examples(60)
SLOW_PAIRS = 150
SMALL_GRID = 3
#: the budget of one repair here (a few random specs need more: they are checked, not compared)
BUDGET = 5.0


def _lit(p: str, v: str) -> dict:
    return {"prop": p, "value": v, "negated": False}


def pair_spec(a: str, rel: str, b: str) -> dict:
    return {"domain": "coco", "constraints": [{"template": "C4/pair_rel", "params": {
        "A1": _lit("class", a), "B1": _lit("class", b), "R1": {"rel": rel, "negated": False}}}]}


def scene(*objects: tuple[str, tuple[float, float, float, float]]) -> dict:
    return {"image_size": [512, 512], "domain": "coco", "objects": [
        {"class": c, "color": "brown", "bbox": list(b), "score": 0.9} for c, b in objects]}


def test_a_dog_right_of_the_cat_is_moved_once():
    spec = pair_spec("dog", "left", "cat")
    r = repair(spec, scene(("dog", (300, 200, 400, 300)), ("cat", (50, 200, 150, 300))))
    assert (r.cost, r.optimal, [e.kind for e in r.edits]) == (1, True, ["move"])
    assert verify(spec, r.scene).ok
    # the last input is edited first (docs/repair.md): the cat goes to the dog's right, and the sentence says so
    assert r.instructions == ("Move the cat to the top right, to the right of the dog.",)
    moved = r.edits[0].bbox
    assert moved is not None and (moved[2] - moved[0], moved[3] - moved[1]) == pytest.approx((100, 100))


def test_a_dog_inside_a_cat_and_a_bird_larger_than_a_dog():
    spec = pair_spec("dog", "inside", "cat")
    r = repair(spec, scene(("dog", (300, 200, 450, 350)), ("cat", (50, 100, 250, 400))))
    assert (r.cost, [e.kind for e in r.edits]) == (1, ["move"]) and verify(spec, r.scene).ok
    assert r.instructions == ("Move the cat to the top right, containing the dog.",)
    # a bird can only be larger than the dog by being added (a move keeps the size)
    spec = pair_spec("bird", "larger", "dog")
    r = repair(spec, scene(("dog", (300, 200, 450, 350)), ("bird", (50, 100, 100, 150))))
    assert (r.cost, [e.kind for e in r.edits]) == (1, ["add"]) and verify(spec, r.scene).ok
    assert "larger than the dog" in r.instructions[0]


def test_an_added_object_stands_in_its_relation():
    spec = pair_spec("cat", "left", "dog")
    r = repair(spec, scene(("dog", (300, 200, 400, 300))))
    assert (r.cost, [e.kind for e in r.edits]) == (1, ["add"]) and verify(spec, r.scene).ok
    assert r.edits[0].new == {"class": "cat", "color": "red"}
    assert r.instructions == ("Add a red cat at the top left, to the left of the dog.",)
    # nothing in the scene: a cat and a dog inside it are added (the dog's box covers the cat's centre: it contains
    # the cat, which the spec asks for)
    spec = pair_spec("cat", "inside", "dog")
    r = repair(spec, scene())
    assert (r.cost, r.optimal, [e.kind for e in r.edits]) == (2, True, ["add", "add"]) and verify(spec, r.scene).ok


def test_unsat_and_right_scenes():
    right = scene(("dog", (50, 200, 150, 300)), ("cat", (300, 200, 400, 300)))
    r = repair(pair_spec("dog", "left", "cat"), right)
    assert (r.cost, r.edits, r.optimal) == (0, (), True)
    # a dog inside a cat and larger than it: no boxes do that
    unsat = {"domain": "coco", "constraints": [{"template": "C4/pair_2rel", "params": {
        "A1": _lit("class", "dog"), "B1": _lit("class", "cat"), "R1": {"rel": "inside", "negated": False},
        "R2": {"rel": "larger", "negated": False}}}]}
    r = repair(unsat, right)
    assert not r.satisfiable and r.cost == 2 and [e.kind for e in r.edits] == ["remove", "remove"]
    assert len(r.scene) == 0


def test_a_mover_keeps_clear_of_every_other_centre():
    # two cats must be left of the dog: both move (or one is added); no placed box covers another centre
    spec = {"domain": "coco", "constraints": [{"template": "X1/count_cmp", "params": {
        "A1": _lit("class", "cat"), "T": ">=", "K": 2}}, {"template": "C4/pair_rel", "params": {
        "A1": _lit("class", "cat"), "B1": _lit("class", "dog"), "R1": {"rel": "right", "negated": False}}}]}
    r = repair(spec, scene(("dog", (200, 200, 300, 300)), ("cat", (20, 20, 120, 120))))
    assert verify(spec, r.scene).ok and r.optimal
    placed = [k for k, e in enumerate(r.edits) if e.kind in ("move", "add")]
    assert placed


def _check(spec, sc: Scene, rng: random.Random) -> tuple[int | None, int] | None:
    """Checks one pair; None when the repair was not proven optimal within `BUDGET` (then it is only checked)."""
    r = repair(spec, sc, timeout=BUDGET)
    if not r.satisfiable:
        assert len(r.scene) == 0 and r.cost == len(sc)
        return None, r.cost
    assert spec_holds(spec, r.scene, "relaxed"), (spec.to_json(), sc.to_json(), r.to_dict()["edits"])
    assert verify(spec, r.scene).ok
    assert (r.cost == 0) == spec_holds(spec, sc, "relaxed")
    if not r.optimal:  # the best repair found, or past the budget with none the solver's witness (docs/repair.md)
        return None
    problem = Problem(spec, sc, "strict", DEFAULT_COSTS)
    room = boxes.room_for(problem, [])
    assert room is not None
    ref = BoxReference(spec, sc, room.offered)
    # the repair's own edits are among the reference's: legal, and giving the repaired scene
    kinds = [e.kind for e in r.edits]
    moved = {e.object: e.bbox for e in r.edits if e.kind == "move"}
    for i, b in moved.items():
        assert b in room.offered(i)
    for e in r.edits:
        if e.kind == "add":
            assert e.bbox in room.offered("new")
    kept = [i for i in range(len(sc)) if ("remove", i) not in {(e.kind, e.object) for e in r.edits}]
    placed = [k for k, i in enumerate(kept) if i in moved] + list(range(len(kept), len(r.scene)))
    assert legal(r.scene, placed, ref.nest)
    least = ref.least(min(2, r.cost))  # past 2: that no single edit does (the pairs are the slow part)
    if least is not None:
        assert r.cost <= least, (spec.to_json(), sc.to_json(), r.to_dict()["edits"])
    geometric = sum(k in ("move", "add") for k in kinds)
    if r.cost <= 2 and geometric <= 1:  # the reference tries every such edit set: the same optimum
        assert least == r.cost, (spec.to_json(), sc.to_json(), r.to_dict()["edits"])
    return least, r.cost


def _run(k: int, seed: int, monkeypatch, objects: int) -> dict[str, int]:
    monkeypatch.setattr(boxes, "GRID", SMALL_GRID)
    rng = random.Random(seed)
    seen = {"pairs": 0, "optimal": 0, "compared": 0}
    while seen["pairs"] < k:
        spec = random_spec(rng, RELATIONAL, rng.choice((1, 1, 2)))
        sc = random_scene(rng, rng.randint(0, objects), lattice=rng.random() < 0.5)
        out = _check(spec, sc, rng)
        seen["pairs"] += 1
        seen["optimal"] += out is not None
        seen["compared"] += out is not None and out[0] is not None
    return seen


def test_box_repairs_agree_with_the_brute_force_on_a_sample(monkeypatch):
    seen = _run(FAST_PAIRS, 3, monkeypatch, objects=3)
    assert seen["optimal"] >= 0.9 * FAST_PAIRS and seen["compared"] >= FAST_PAIRS // 2


@pytest.mark.slow
def test_box_repairs_agree_with_the_brute_force_on_150_pairs(monkeypatch):
    seen = _run(SLOW_PAIRS, 4, monkeypatch, objects=3)
    assert seen["optimal"] >= 0.9 * SLOW_PAIRS and seen["compared"] >= SLOW_PAIRS // 2


def test_the_candidate_boxes_lie_in_the_image_and_keep_the_size():
    sc = Scene.from_dict(scene(("dog", (300, 200, 400, 330)), ("cat", (50, 200, 150, 300))), COCO)
    spec = pair_spec("dog", "inside", "cat")
    from logicval_hf.contract.spec import as_spec
    problem = Problem(as_spec(spec), sc, "strict", DEFAULT_COSTS)
    room = boxes.room_for(problem, [])
    assert room is not None
    for b in room.offered(0):
        assert min(b[0], b[1]) >= 0 and max(b[2], b[3]) <= 512
        assert (b[2] - b[0], b[3] - b[1]) == pytest.approx((100, 130))
    assert room.offered(0) and room.offered("new")


def test_the_cli_and_the_metric_repair_a_coco_spec(tmp_path, capsys):
    import json

    from logicval_hf.cli.main import main
    from logicval_hf.scoring.evaluation import compute

    spec = pair_spec("dog", "left", "cat")
    wrong = scene(("dog", (300, 200, 400, 300)), ("cat", (50, 200, 150, 300)))
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "scene.json").write_text(json.dumps(wrong))
    assert main(["repair", str(tmp_path / "spec.json"), str(tmp_path / "scene.json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["cost"], out["optimal"], [e["kind"] for e in out["edits"]]) == (1, True, ["move"])
    assert out["scene"]["domain"] == "coco" and len(out["edits"][0]["bbox"]) == 4
    rows = [{"id": "a", "package": "coco", "spec_json": json.dumps(spec)}] * 2
    right = scene(("dog", (50, 200, 150, 300)), ("cat", (300, 200, 400, 300)))
    got = compute([json.dumps(wrong), json.dumps(right)], rows, backend="given", repair=True)
    assert [s["repair_cost"] for s in got["per_sample"]] == [1, 0]
    assert got["per_sample"][0]["edits"][0]["kind"] == "move" and got["mean_repair_cost"] == 0.5
