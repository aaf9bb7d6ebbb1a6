"""One solver for every domain: COCO specs are labelled, explained and verified by the same code as CLEVR's."""

from __future__ import annotations

import random

import pytest
from helpers import violations

from logicval_hf.asp.solver import Solver
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SceneError, SpecError

COCO = load_domain("coco")


def lit(prop, value, negated=False):
    return {"prop": prop, "value": value, "negated": negated}


def cls(name):
    return lit("class", name)


def rel(name):
    return {"rel": name, "negated": False}


def count(c, theta, k):
    return {"template": "X1/count_cmp", "params": {"A1": cls(c), "T": theta, "K": k}}


def coco_spec(*constraints, threshold=None):
    d = {"domain": "coco", "constraints": list(constraints)}
    if threshold is not None:
        d["score_threshold"] = threshold
    return d


@pytest.fixture(scope="module")
def solver():
    return Solver()


def test_geneval_style_spec_is_sat_and_its_witness_verifies(solver):
    spec = coco_spec(
        count("potted plant", ">=", 2),
        {"template": "X2/ranked_prop", "params": {"A1": cls("potted plant"), "K": 2, "B1": lit("color", "red")}},
        count("dog", ">=", 1),
        {"template": "X3/ranked_rel", "params": {"A1": cls("dog"), "K1": 1, "R1": rel("left"),
                                                 "B1": cls("potted plant"),
                                                 "K2": 2}},
        threshold=0.3)
    r = solver.solve(spec)
    assert r.label == "SAT"
    w = r.witness
    assert w.domain is COCO and all(o.score > 0.3 for o in w)
    plants = [i for i, o in enumerate(w) if o["class"] == "potted plant"]
    dogs = [i for i, o in enumerate(w) if o["class"] == "dog"]
    assert len(plants) >= 2 and dogs
    assert all(w.holds("left", dogs[0], p) for p in plants[:2])  # re-derived from the witness's boxes
    assert solver.verify(spec, w).ok
    assert solver.verify(spec, w.to_json()).ok  # and through its JSON


def test_contradictory_counts_are_unsat_with_a_minimal_core(solver):
    spec = coco_spec(count("cat", ">=", 1), count("dog", "=", 2), count("dog", "<", 2))
    r = solver.solve(spec)
    assert r.label == "UNSAT" and r.core == (1, 2)


def test_inside_and_larger_contradict(solver):
    """Imag-Eval's 'keyboard inside truck' with 'truck smaller than keyboard': no boxes do both."""
    spec = coco_spec(count("computer keyboard", ">=", 1), count("truck", ">=", 1),
                     {"template": "X4/group_rel_all", "params": {"A1": cls("computer keyboard"), "R1": rel("inside"),
                                                                 "B1": cls("truck")}},
                     {"template": "X4/group_rel_all", "params": {"A1": cls("truck"), "R1": rel("smaller"),
                                                                 "B1": cls("computer keyboard")}})
    r = solver.solve(spec)
    assert r.label == "UNSAT" and r.core == (0, 1, 2, 3)
    # without the size rule it is fine, and the witness's boxes nest
    ok = solver.solve(coco_spec(*Spec.from_dict(spec).to_dict()["constraints"][:3]))
    assert ok.label == "SAT"
    w = ok.witness
    k = next(i for i, o in enumerate(w) if o["class"] == "computer keyboard")
    t = next(i for i, o in enumerate(w) if o["class"] == "truck")
    assert w.holds("inside", k, t)


@pytest.mark.slow  # one open-size solve over 16 object slots with a weighted sum: about 10 s
def test_gir_bench_arithmetic_has_one_solution(solver):
    """Birds and dogs with 10 legs and 4 animals in all: exactly 3 birds and 1 dog."""
    legs = {"template": "X5/weighted_sum_or", "params": {"W": "legs", "A1": cls("bird"), "A2": cls("dog"), "T": "=",
                                                         "K": 10}}
    total = {"template": "X1/count_or_cmp", "params": {"A1": cls("bird"), "A2": cls("dog"), "T": "=", "K": 4}}
    r = solver.solve(coco_spec(legs, total))
    assert r.label == "SAT"
    names = sorted(o["class"] for o in r.witness)
    assert [n for n in names if n in ("bird", "dog")] == ["bird", "bird", "bird", "dog"]
    assert solver.solve(coco_spec(legs, total, count("dog", "=", 2))).label == "UNSAT"

    def scene(birds, dogs):
        objs = [SceneObject({"class": "bird", "color": "white"}, (10 * i, 0, 10 * i + 5, 5)) for i in range(birds)]
        objs += [SceneObject({"class": "dog", "color": "brown"}, (10 * i, 100, 10 * i + 5, 105)) for i in range(dogs)]
        return Scene((512, 512), tuple(objs), COCO)

    assert solver.verify(coco_spec(legs, total), scene(3, 1)).ok
    assert not solver.verify(coco_spec(legs, total), scene(1, 2)).ok  # 10 legs but 3 animals


def test_score_threshold_decides_what_counts(solver):
    spec = coco_spec(count("dog", "=", 1), threshold=0.9)
    objs = (SceneObject({"class": "dog", "color": "brown"}, (0, 0, 10, 10), 0.95),
            SceneObject({"class": "dog", "color": "brown"}, (50, 0, 60, 10), 0.5))
    scene = Scene((512, 512), objs, COCO)
    assert solver.verify(spec, scene).ok
    assert not solver.verify(coco_spec(count("dog", "=", 1)), scene).ok


def test_names_with_spaces_travel_through_asp(solver):
    spec = coco_spec(count("hair drier", ">=", 1), count("teddy bear", ">=", 1))
    r = solver.solve(spec)
    assert r.label == "SAT" and {o["class"] for o in r.witness} >= {"hair drier", "teddy bear"}
    assert solver.verify(spec, r.witness).ok


def random_coco_scene(rng: random.Random, n: int) -> Scene:
    objs = []
    for _ in range(n):
        x, y = rng.uniform(0, 400), rng.uniform(0, 400)
        w, h = rng.uniform(5, 110), rng.uniform(5, 110)
        values = {"class": rng.choice(["dog", "cat", "potted plant"]), "color": rng.choice(["red", "blue"])}
        objs.append(SceneObject(values, (x, y, x + w, y + h), round(rng.uniform(0.2, 1.0), 3)))
    return Scene((512, 512), tuple(objs), COCO)


def test_batched_and_single_verification_agree_on_random_coco_scenes(solver):
    rng = random.Random(3)
    specs = [
        coco_spec(count("dog", ">=", 2), {"template": "X2/ranked_prop", "params": {
            "A1": cls("dog"), "K": 2, "B1": lit("color", "red")}}, threshold=0.3),
        coco_spec({"template": "X3/ranked_rel", "params": {"A1": cls("cat"), "K1": 1, "R1": rel("above"),
                                                           "B1": cls("dog"), "K2": 2}}),
        coco_spec({"template": "C4/pair_rel", "params": {"A1": cls("dog"), "R1": rel("larger"),
                                                         "B1": lit("color", "blue")}}),
        coco_spec({"template": "X4/group_rel_all", "params": {"A1": cls("potted plant"), "R1": rel("contains"),
                                                              "B1": cls("cat")}}),
    ]
    pairs = [(s, random_coco_scene(rng, rng.randint(0, 7))) for s in specs for _ in range(40)]
    batched = solver.verify_many(pairs)
    single = [solver.verify(s, sc) for s, sc in pairs]
    assert [v.to_dict() for v in batched] == [v.to_dict() for v in single]
    assert 0 < sum(v.ok for v in single) < len(single)


def test_bad_coco_specs_name_the_field():
    with pytest.raises(SpecError, match=r"constraints\[0\]\.params\.A1\.value: 'unicorn' is not a class"):
        Spec.from_dict(coco_spec(count("unicorn", ">=", 1)))
    with pytest.raises(SpecError, match=r"params\.R1\.rel: 'behind' is not a relation of domain 'coco'"):
        Spec.from_dict(coco_spec({"template": "C4/pair_rel", "params": {"A1": cls("dog"), "R1": rel("behind"),
                                                                        "B1": cls("cat")}}))
    with pytest.raises(SpecError, match=r"reads the derived attribute 'rank', which domain 'clevr' lacks"):
        Spec.from_dict({"n": 3, "constraints": [{"template": "X2/ranked_prop", "params": {
            "A1": lit("shape", "cube"), "K": 1, "B1": lit("color", "red")}}]})
    with pytest.raises(SpecError, match=r"spec\.domain: unknown domain 'kitchen'"):
        Spec.from_dict({"domain": "kitchen", "constraints": [count("dog", ">=", 1)]})
    with pytest.raises(SpecError, match="needs a scene size"):
        Spec.from_dict({"constraints": [{"template": "C1/1prop", "params": {"A1": lit("color", "red")}}]})


def test_scene_of_the_wrong_domain_is_refused(solver):
    clevr_scene = {"image_size": [480, 320], "objects": []}
    with pytest.raises(SceneError, match="domain"):
        solver.verify(coco_spec(count("dog", ">=", 1)), Scene.from_dict(clevr_scene))


def test_clevr_templates_read_coco_attributes(solver):
    """A CLEVR template whose slot takes shape takes COCO's class (the domain's slot_props)."""
    spec = coco_spec({"template": "C1/2prop", "params": {"A1": lit("color", "red"), "A2": cls("dog")}})
    r = solver.solve(spec)
    assert r.label == "SAT" and any(o["class"] == "dog" and o["color"] == "red" for o in r.witness)


def random_extension_constraint(tid: str, rng: random.Random) -> dict:
    def some_class():
        return cls(rng.choice(["dog", "cat", "potted plant", "bird"]))

    theta = rng.choice(["=", "!=", "<", "<=", ">", ">="])
    if tid == "X1/count_cmp":
        return {"template": tid, "params": {"A1": some_class(), "T": theta, "K": rng.randint(0, 4)}}
    if tid == "X1/count2_cmp":
        return {"template": tid, "params": {"A1": some_class(), "A2": lit("color", rng.choice(["red", "blue"])),
                                            "T": theta, "K": rng.randint(0, 3)}}
    if tid == "X1/count_or_cmp":
        return {"template": tid, "params": {"A1": cls("dog"), "A2": cls("cat"), "T": theta, "K": rng.randint(0, 4)}}
    if tid == "X2/ranked_prop":
        return {"template": tid, "params": {"A1": some_class(), "K": rng.randint(1, 3),
                                            "B1": lit("color", rng.choice(["red", "blue"]))}}
    if tid == "X3/ranked_rel":
        return {"template": tid, "params": {"A1": some_class(), "K1": rng.randint(1, 2),
                                            "R1": rel(rng.choice(COCO.relations)), "B1": some_class(),
                                            "K2": rng.randint(1, 2)}}
    if tid == "X4/group_rel_all":
        return {"template": tid, "params": {"A1": some_class(), "R1": rel(rng.choice(COCO.relations)),
                                            "B1": some_class()}}
    if tid == "X6/pair_2prop_1prop_rel":
        return {"template": tid, "params": {"A1": some_class(), "A2": lit("color", rng.choice(["red", "blue"])),
                                            "B1": some_class(), "R1": rel(rng.choice(COCO.relations))}}
    return {"template": tid, "params": {"W": "legs", "A1": cls("dog"), "A2": cls("bird"), "T": theta,
                                        "K": rng.randint(0, 14)}}


# counts and weighted sums compared up to here: at most 6 objects x 4 legs (or wheels) = 24, thresholds <= 14;
# the parametric program grounds its count range, so a far larger bound only costs time (300: 20x slower)
MAX_SUM = 32


# each extension template once in the inner loop; twelve times each (two minutes of CPU) in the whole suite
@pytest.mark.parametrize("rounds", [1, pytest.param(12, marks=pytest.mark.slow)])
def test_extension_templates_parametric_and_instantiated_agree(rounds):
    """The renderings of the one compiler agree on every extension template (COCO scenes): parametric, instantiated,
    and instantiated with counts compared as aggregate guards (what box domains are solved with)."""
    from logicval_hf.asp.encoding import compile_constraint, compile_template, parameter_facts, scene_facts
    from logicval_hf.asp.programs import read_program, vocabulary
    from logicval_hf.contract.catalog import load_catalog

    catalog = load_catalog()
    vocab = vocabulary(COCO)
    templates = "".join(compile_template(t) for t in catalog.extensions.values())
    params = read_program("params.lp")
    rng = random.Random(5)
    for tid in sorted(catalog.extensions):
        for _ in range(rounds):
            spec = Spec.from_dict(coco_spec(random_extension_constraint(tid, rng)))
            cons = spec.constraints[0]
            facts = scene_facts(random_coco_scene(rng, rng.randint(0, 6)))
            inst = violations(vocab + facts + compile_constraint(cons, 0) + "#defined violated/1.", max_count=MAX_SUM)
            para = violations(vocab + params + templates + facts + parameter_facts(cons, 0), max_count=MAX_SUM)
            guarded = violations(vocab + facts + compile_constraint(cons, 0, guards=True) + "#defined violated/1.")
            assert inst == para == guarded, (tid, cons.to_dict())


def test_extension_templates_read_in_english():
    from logicval_hf.contract.catalog import load_catalog
    from logicval_hf.contract.verbalise import constraint_text

    rng = random.Random(2)
    for tid in sorted(load_catalog().extensions):
        cons = Spec.from_dict(coco_spec(random_extension_constraint(tid, rng))).constraints[0]
        for register in ("short", "long"):
            text = constraint_text(cons, register=register)
            assert "{" not in text and "$" not in text and text.endswith(".")
    legs = Spec.from_dict(coco_spec(random_extension_constraint("X5/weighted_sum_or", rng))).constraints[0]
    assert "legs" in constraint_text(legs) and "dogs" not in constraint_text(legs)
    assert constraint_text(Spec.from_dict(coco_spec(count("person", ">=", 2))).constraints[0]) == \
        "The number of people is at least 2."
