"""Repairs in a box-geometry domain (COCO): specs of counts, values and confidence ranks, against a clingo-free
brute force over every set of at most two edits (values the spec names and one other, removals, additions), the
repaired scene checked by the reference interpreter (specs that read relations: test_box_relations.py)."""

from __future__ import annotations

import itertools
import random

from coco_specs import CATALOG, COCO, TEMPLATES, random_scene, random_spec

from logicval_hf.contract.reference import spec_holds
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import AttrLit, Spec
from logicval_hf.repairs import repair

#: how the interpreter checks an open-size spec (any number of objects)
OPEN = "relaxed"
#: the templates without a relation slot (nothing moves: an added object goes to the first free place)
PLAIN = [t for t in TEMPLATES if all(s.type != "rel" for s in CATALOG.template(t).slots)]


def _values(spec: Spec, attribute: str) -> list[str]:
    named = {v.value for c in spec.constraints for v in c.params.values()
             if isinstance(v, AttrLit) and v.prop == attribute}
    domain = COCO.attributes[attribute]
    others = [v for v in domain if v not in named]
    return [v for v in domain if v in named] + others[:1]


def brute_force(spec: Spec, scene: Scene, max_cost: int = 2) -> int | None:
    """The least number of edits (at most ``max_cost``) after which the counted objects satisfy the spec."""
    counted = scene.above(spec.score_threshold)
    objs = list(counted.objects)
    attrs = COCO.perceived_attributes
    singles: list[tuple] = [("remove", i) for i in range(len(objs))]
    singles += [("set", i, a, v) for i, o in enumerate(objs) for a in attrs for v in _values(spec, a)
                if v != o.attributes[a]]
    combos = itertools.product(*(_values(spec, a) for a in attrs))
    singles += [("add", dict(zip(attrs, c, strict=True))) for c in combos]

    def holds(edits: tuple) -> bool:
        out: list[SceneObject | None] = list(objs)
        added = []
        for e in edits:
            if e[0] == "remove":
                out[e[1]] = None
            elif e[0] == "set":
                o = out[e[1]]
                if o is None:
                    return False
                out[e[1]] = SceneObject({**o.attributes, e[2]: e[3]}, o.bbox, o.score)
            else:
                added.append(SceneObject(e[1], (0, 0, 10, 10)))
        final = Scene(scene.image_size, tuple(o for o in out if o is not None) + tuple(added), COCO)
        return spec_holds(spec, final, OPEN)

    for k in range(max_cost + 1):  # the same addition may be made twice, any other edit once
        for edits in itertools.combinations_with_replacement(singles, k):
            if all(e[0] == "add" or edits.count(e) == 1 for e in edits) and holds(edits):
                return k
    return None


def test_box_domain_repairs_agree_with_brute_force():
    rng = random.Random(5)
    seen = {"compared": 0, "zero": 0}
    for _ in range(30):
        spec = random_spec(rng, PLAIN, rng.choice((1, 2)))
        if rng.random() < 0.3:
            spec = Spec(None, spec.constraints, COCO, 0.5)
        scene = random_scene(rng, rng.randint(0, 4))
        r = repair(spec, scene)
        assert r.optimal
        counted = len(scene.above(spec.score_threshold))
        if not r.satisfiable:  # the right scene is empty: every object that counts goes
            assert len(r.scene.above(spec.score_threshold)) == 0 and r.cost == counted
            continue
        assert spec_holds(spec, r.scene.above(spec.score_threshold), OPEN), (spec.to_json(), scene.to_json())
        ref = brute_force(spec, scene)
        if ref is not None:
            assert r.cost == ref, (spec.to_json(), scene.to_json(), r.to_dict()["edits"])
            seen["compared"] += 1
            seen["zero"] += ref == 0
        else:
            assert r.cost > 2
    assert seen["compared"] >= 15 and seen["compared"] > seen["zero"]


def test_confidence_ranks_follow_the_scores_and_added_objects_come_last():
    def lit(p: str, v: str) -> dict:
        return {"prop": p, "value": v, "negated": False}

    spec = {"domain": "coco", "constraints": [
        {"template": "X2/ranked_prop", "params": {"A1": lit("class", "dog"), "K": 2, "B1": lit("color", "white")}},
        {"template": "X1/count_cmp", "params": {"A1": lit("class", "dog"), "T": ">=", "K": 3}}]}
    scene = {"image_size": [512, 512], "domain": "coco", "objects": [
        {"class": "dog", "color": "brown", "bbox": [10, 10, 110, 110], "score": 0.9},
        {"class": "dog", "color": "white", "bbox": [300, 300, 400, 400], "score": 0.8},
        {"class": "cat", "color": "white", "bbox": [200, 50, 260, 120], "score": 0.95}]}
    r = repair(spec, scene)
    # the brown dog is among the two most confident dogs: recolour it; a third dog: the white cat becomes one (its
    # score 0.95 makes it the most confident dog, and it is white)
    assert r.cost == 2 and r.instructions == ("Make the brown dog white.", "Make the cat a dog.")
