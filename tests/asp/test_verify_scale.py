"""Verification of large scenes: the fact-based encoding (`verify_batch`, which `Solver.verify` uses above
`REUSED_GROUNDING_UP_TO` objects) gives the verdicts of the reused grounding over scene externals (`SceneLayout`,
the encoding every scene went through before) and of the reference interpreter, on random scenes; a scene graph
holds at most `MAX_SCENE_OBJECTS` objects at every front door; box relations decided over the whole n x n grid at
once (`logicval_hf.asp.relations`) are `Relation.holds`, pair for pair."""

from __future__ import annotations

import json
import random

import pytest
from coco_specs import COCO
from coco_specs import TEMPLATES as COCO_TEMPLATES
from coco_specs import random_scene as random_coco_scene
from coco_specs import random_spec as random_coco_spec
from helpers import CATALOG, DOMAIN, examples, random_scene, random_spec

from logicval_hf import Scene, SceneError, SceneObject, Spec
from logicval_hf.asp.relations import true_pairs
from logicval_hf.asp.solver import REUSED_GROUNDING_UP_TO, Solver
from logicval_hf.asp.verifier import SceneLayout, ScenesVerifier, verify_batch
from logicval_hf.cli.main import main
from logicval_hf.contract import reference
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.scene import MAX_SCENE_OBJECTS

TEMPLATES = sorted(CATALOG.templates)


def reused_grounding(spec: Spec, scene: Scene) -> tuple[bool, list[int]]:
    """The verdict through the scene externals (the encoding `Solver.verify` keeps for small scenes)."""
    universe = max(spec.n or 0, len(scene), 1)
    count_ok, violated = ScenesVerifier(spec, SceneLayout(universe, spec.domain)).check(scene)
    return count_ok, sorted(violated)


@pytest.mark.parametrize("tid", TEMPLATES)
def test_every_template_gives_the_verdicts_of_the_reused_grounding_and_the_reference(tid):
    """Scenes of 0 to 14 objects, some on a coarse grid (ties: no relation either way), each template with random
    parameters: the fact-based encoding, the externals and the interpreter agree on the violated constraints."""
    rng = random.Random(f"scale-{tid}")
    for _ in range(examples(8)):
        n = rng.randint(3, 9)
        spec = Spec(n, (random_constraint(tid, n, rng),))
        scene = random_scene(rng, rng.choice([0, 1, n, rng.randint(2, 14)]), grid=rng.choice([None, 3, 5]))
        facts = verify_batch(spec, [scene])[0]
        assert facts == reused_grounding(spec, scene), (spec.to_json(), scene.to_json())
        assert facts[1] == reference.violated(spec, scene)


@pytest.mark.parametrize("size", [REUSED_GROUNDING_UP_TO + 1, 60, 120])
def test_large_scenes_against_six_constraint_specs_agree_with_the_reference(size):
    rng = random.Random(size)
    solver = Solver()
    for _ in range(examples(12)):
        spec = random_spec(rng, 6)
        scene = random_scene(rng, size, grid=rng.choice([None, 8]))
        v = solver.verify(spec, scene, label="SAT")
        assert list(v.violated) == reference.violated(spec, scene), (spec.to_json(), scene.to_json())
        assert v.count_ok is False and v.n_objects == size


def test_random_scene_counts_across_the_switch_give_one_answer():
    """The same spec and scene prefix verified on both sides of `REUSED_GROUNDING_UP_TO` by `Solver.verify`, against
    the reference: the switch between the encodings is invisible."""
    rng = random.Random(7)
    solver = Solver()
    big = random_scene(rng, REUSED_GROUNDING_UP_TO + 4, grid=6)
    for _ in range(examples(12)):
        spec = random_spec(rng, rng.choice([1, 3, 6]))
        for k in range(REUSED_GROUNDING_UP_TO - 2, REUSED_GROUNDING_UP_TO + 4, 2):
            scene = Scene(big.image_size, big.objects[:k])
            assert list(solver.verify(spec, scene, label="SAT").violated) == reference.violated(spec, scene)


def test_coco_scenes_above_the_switch_agree_with_the_reference():
    rng = random.Random(11)
    solver = Solver()
    for _ in range(examples(12)):
        spec = random_coco_spec(rng, COCO_TEMPLATES, rng.choice([1, 2, 3]))
        scene = random_coco_scene(rng, rng.randint(REUSED_GROUNDING_UP_TO + 1, 48), lattice=rng.random() < 0.5)
        v = solver.verify(spec, scene, label="SAT")
        assert list(v.violated) == reference.violated(spec, scene), (spec.to_json(), scene.to_json())


# ---- box relations over the whole grid ----------------------------------------------------------------------
def boxes_for(rng: random.Random, k: int, kind: str) -> list[tuple[float, ...]]:
    out = []
    for _ in range(k):
        if kind == "lattice":  # ties, equal sizes, nesting
            x, y, s = rng.randrange(4) * 32, rng.randrange(4) * 32, rng.choice([8, 16, 32, 48])
            out.append((x, y, x + s, y + s))
        elif kind == "integers":
            x, y = rng.randint(0, 400), rng.randint(0, 400)
            out.append((x, y, x + rng.randint(1, 120), y + rng.randint(1, 120)))
        else:
            x, y = rng.uniform(0, 400), rng.uniform(0, 400)
            out.append((x, y, x + rng.uniform(0.5, 150), y + rng.uniform(0.5, 150)))
    return out


_BOX_RELATIONS = [("coco", r) for r in sorted(COCO.rules)] + [("gir", r) for r in sorted(load_domain("gir").rules)]


@pytest.mark.parametrize("kind", ["floats", "integers", "lattice"])
@pytest.mark.parametrize(("domain", "rel"), _BOX_RELATIONS)
def test_box_relations_over_the_grid_are_the_scalar_rule(domain, rel, kind):
    """GenEval's rule (coco) and GIR-Bench's, which measures the raw centre offset (gir)."""
    rng = random.Random(f"{domain}-{rel}-{kind}")
    relation = load_domain(domain).rules[rel]
    for _ in range(examples(20)):
        boxes = boxes_for(rng, rng.randint(0, 30), kind)
        expected = [(a, b) for a in range(len(boxes)) for b in range(len(boxes))
                    if a != b and relation.holds(boxes[a], boxes[b])]
        assert true_pairs(relation, boxes) == expected


@pytest.mark.parametrize("rel", sorted(r for r, rule in COCO.rules.items() if rule.kind == "box_offset"))
def test_offsets_on_the_threshold_are_decided_by_the_scalar_rule(rel, monkeypatch):
    """Boxes placed so that the shrunk offset of a pair lies on the relation's threshold (where the square root
    decides the last bit) are decided by `Relation.holds` itself, and come out as it says."""
    relation = COCO.rules[rel]
    size, t, m = 10.0, relation.threshold, relation.margin
    boxes = [(0.0, 0.0, size, size)]
    for k in range(1, 30):
        along = 5.0 + 3.7 * k  # the offset along the relation's axis; across it, what puts the value on t
        across = ((along - 2 * m * size) ** 2 / t ** 2 - along ** 2) ** 0.5
        dx, dy = (along, across) if relation.axis == "x" else (across, along)
        for sx, sy in ((1, 1), (-1, 1), (1, -1), (-1, -1)):
            boxes.append((sx * dx, sy * dy, sx * dx + size, sy * dy + size))
    expected = [(a, b) for a in range(len(boxes)) for b in range(len(boxes))
                if a != b and relation.holds(boxes[a], boxes[b])]
    calls = []
    scalar = type(relation).holds
    monkeypatch.setattr(type(relation), "holds", lambda self, a, b: calls.append(1) or scalar(self, a, b))
    assert true_pairs(relation, boxes) == expected
    assert calls  # some pairs were near enough to the threshold to be decided by the scalar rule


def test_true_pairs_of_tiny_scenes():
    relation = DOMAIN.rules["left"]
    assert true_pairs(relation, []) == [] and true_pairs(relation, [(0, 0, 1, 1)]) == []
    assert true_pairs(relation, [(0, 0, 2, 2), (5, 0, 7, 2)]) == [(0, 1)]


# ---- the bound on objects -----------------------------------------------------------------------------------
def scene_dict(k: int) -> dict:
    rng = random.Random(k)
    return random_scene(rng, min(k, MAX_SCENE_OBJECTS)).to_dict() | {
        "objects": [random_scene(rng, 1).to_dict()["objects"][0] for _ in range(k)]}


def test_a_scene_of_the_most_objects_is_read_and_one_more_is_refused_in_one_line():
    assert len(Scene.from_dict(scene_dict(MAX_SCENE_OBJECTS))) == MAX_SCENE_OBJECTS
    with pytest.raises(SceneError, match=f"scene.objects: {MAX_SCENE_OBJECTS + 1:,} objects; a scene graph holds at "
                                         f"most {MAX_SCENE_OBJECTS:,}"):
        Scene.from_dict(scene_dict(MAX_SCENE_OBJECTS + 1))
    obj = SceneObject({"color": "red", "shape": "cube", "material": "metal"}, (0, 0, 1, 1))
    with pytest.raises(SceneError, match="at most"):
        Scene((480, 320), (obj,) * (MAX_SCENE_OBJECTS + 1))


def test_the_object_count_is_refused_before_any_object_is_read():
    with pytest.raises(SceneError, match="10,000 objects"):
        Scene.from_dict({"image_size": [480, 320], "objects": [None] * 10_000})


def test_verify_of_the_largest_scene_and_of_2000_objects(tmp_path, capsys):
    rng = random.Random(5)
    spec = random_spec(rng, 6)
    (tmp_path / "spec.json").write_text(spec.to_json())
    (tmp_path / "big.json").write_text(json.dumps(scene_dict(MAX_SCENE_OBJECTS)))
    (tmp_path / "huge.json").write_text(json.dumps(scene_dict(2000)))
    assert main(["verify", str(tmp_path / "spec.json"), str(tmp_path / "big.json")]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["n_objects"] == MAX_SCENE_OBJECTS and verdict["count_ok"] is False
    assert main(["verify", str(tmp_path / "spec.json"), str(tmp_path / "huge.json")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "2,000 objects" in err
