"""The probabilistic LogicVal score: exact enumeration, Monte Carlo, and agreement with the solver."""

import itertools
import math
import random

import pytest
from helpers import DOMAIN, attr, obj, random_scene, random_spec

from logicval_hf import Scene, SceneObject
from logicval_hf.asp.solver import default_solver, verify
from logicval_hf.contract.spec import as_spec
from logicval_hf.scoring.probabilistic import ProbResult, choices, probability

RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
ONE_RED = {"n": 3, "constraints": [{"template": "C8/1prop_exact", "params": {"A1": attr("color", "red"), "K": 1}}]}
UNSAT = {"n": 3, "constraints": [{"template": "C8/1prop_atleast", "params": {"A1": attr("color", "red"), "K": 8}}]}


def uncertain_scene():
    a = obj("red", "cube", "metal", 50, 50)
    a["probs"] = {"color": {"red": 0.7, "blue": 0.2, "green": 0.1}, "shape": {"cube": 0.5, "sphere": 0.5}}
    b = obj("blue", "cube", "metal", 300, 250)
    b["probs"] = {"color": {"red": 0.4, "blue": 0.6}}
    c = obj("gray", "cube", "metal", 200, 100)
    return {"image_size": [480, 320], "objects": [a, b, c]}


def test_hand_computed_two_uncertain_objects():
    # "there is a red object": 1 - P(a not red) P(b not red) = 1 - 0.3 * 0.6
    r = probability(RED, uncertain_scene())
    assert isinstance(r, ProbResult) and r.exact and r.stderr == 0.0
    assert r.p == pytest.approx(0.82)
    # blue and green are interchangeable for this spec, and shape does not matter: 2 x 2 worlds
    assert r.n_worlds == 4
    # "exactly one red object": P(a red, b not) + P(a not, b red) = 0.7 * 0.6 + 0.3 * 0.4
    assert probability(ONE_RED, uncertain_scene()).p == pytest.approx(0.54)
    # relaxed count: drop the third object, the constraint alone still decides
    two = uncertain_scene()
    two["objects"].pop()
    assert probability(RED, two, count="strict").p == 0.0  # wrong number of objects in every world
    assert probability(RED, two, count="relaxed").p == pytest.approx(0.82)


def test_certain_scenes_agree_with_verify():
    rng = random.Random(7)
    for k in range(40):
        spec = random_spec(rng, rng.choice([1, 3]))
        scene = random_scene(rng, rng.choice([spec.n, spec.n, rng.randint(0, 9)]))
        for count in ("strict", "relaxed"):
            r = probability(spec, scene, count=count)
            assert r.exact and r.n_worlds == 1 and r.stderr == 0.0
            assert r.p == float(verify(spec, scene, count=count).ok), (k, count)


def test_probs_with_all_mass_on_one_value_are_certain():
    s = uncertain_scene()
    s["objects"][0]["probs"] = {"color": {"red": 1.0, "blue": 1e-12}}
    s["objects"][1].pop("probs")
    r = probability(RED, s)
    assert r.exact and r.n_worlds == 1 and r.p == 1.0


def _brute_force(spec, scene, count):
    """Sum over the full product of every object's distributions (no pruning, no lumping)."""
    spec = as_spec(spec)
    slots = []
    for i, o in enumerate(scene.objects):
        for a, dist in (o.probs or {}).items():
            total = sum(dist.values())
            slots.append((i, a, [(v, p / total) for v, p in dist.items()]))
    worlds, weights = [], []
    for pick in itertools.product(*(s[2] for s in slots)):
        attrs = [dict(o.attributes) for o in scene.objects]
        w = 1.0
        for (i, a, _), (v, p) in zip(slots, pick, strict=True):
            attrs[i][a] = v
            w *= p
        objects = tuple(SceneObject(at, o.bbox) for at, o in zip(attrs, scene.objects, strict=True))
        worlds.append(Scene(scene.image_size, objects))
        weights.append(w)
    verdicts = default_solver().verify_many([(spec, w) for w in worlds], count=count)
    return sum(w for w, v in zip(weights, verdicts, strict=True) if v.ok)


def _with_random_probs(rng, scene, k_uncertain):
    objs = list(scene.objects)
    for i in rng.sample(range(len(objs)), min(k_uncertain, len(objs))):
        probs = {}
        for a in rng.sample(DOMAIN.perceived_attributes, 2):
            values = rng.sample(DOMAIN.attributes[a], 2)
            p = rng.uniform(0.2, 0.8)
            probs[a] = {values[0]: p, values[1]: 1 - p}
        objs[i] = SceneObject(objs[i].attributes, objs[i].bbox, None, probs)
    return Scene(scene.image_size, tuple(objs))


def test_reduction_to_relevant_values_matches_brute_force():
    """Attributes the spec never names, and values it never names, cannot change a verdict."""
    rng = random.Random(11)
    for k in range(12):
        spec = random_spec(rng, rng.choice([1, 3]))
        scene = _with_random_probs(rng, random_scene(rng, spec.n), 3)
        expected = _brute_force(spec, scene, "strict")
        r = probability(spec, scene, epsilon=0.0)
        assert r.exact
        assert r.p == pytest.approx(expected, abs=1e-12), k


def _noisy_witness(rng, spec):
    """The solver's witness with every object uncertain: most mass on the witness's value."""
    witness = default_solver().solve(spec).witness
    objs = []
    for o in witness.objects:
        probs = {}
        for a in DOMAIN.perceived_attributes:
            other = rng.choice([v for v in DOMAIN.attributes[a] if v != o.attributes[a]])
            p = rng.uniform(0.6, 0.95)
            probs[a] = {o.attributes[a]: p, other: 1 - p}
        objs.append(SceneObject(o.attributes, o.bbox, None, probs))
    return Scene(witness.image_size, tuple(objs))


@pytest.mark.slow
def test_exact_and_sampled_agree_within_three_standard_errors():
    rng = random.Random(3)
    checked = 0
    for k in range(40):
        spec = random_spec(rng, rng.choice([1, 3]))
        if not default_solver().solve(spec).satisfiable:
            continue
        scene = _noisy_witness(rng, spec)
        exact = probability(spec, scene)
        if not (exact.exact and 0.05 < exact.p < 0.95):
            continue
        mc = probability(spec, scene, max_exact=0, samples=3000, seed=k)
        assert not mc.exact and mc.n_worlds == 3000
        assert mc.stderr == pytest.approx(math.sqrt(mc.p * (1 - mc.p) / 3000))
        assert abs(mc.p - exact.p) <= 3 * mc.stderr + 1e-9, (k, exact, mc)
        assert probability(spec, scene, max_exact=0, samples=3000, seed=k) == mc  # seeded
        checked += 1
        if checked == 4:
            break
    assert checked == 4


def test_large_world_space_falls_back_to_sampling():
    rng = random.Random(5)
    spec = next(s for s in (random_spec(rng, 3, n=9) for _ in range(50)) if default_solver().solve(s).satisfiable)
    scene = _noisy_witness(rng, spec)
    n = math.prod(len(c.values) for c in choices(spec, scene)[0])
    r = probability(spec, scene, max_exact=min(n - 1, 64), samples=500)
    assert not r.exact and r.n_worlds == 500 and 0.0 <= r.p <= 1.0


def test_unsat_spec_is_probability_of_the_empty_scene():
    assert probability(UNSAT, uncertain_scene()) == ProbResult(0.0, True, 0.0, 1)
    assert probability(UNSAT, {"image_size": [480, 320], "objects": []}) == ProbResult(1.0, True, 0.0, 1)
    assert probability(UNSAT, {"image_size": [480, 320], "objects": []}, label="UNSAT").p == 1.0


def test_choices_lump_unnamed_values():
    cs, fixed = choices(as_spec(RED), Scene.from_dict(uncertain_scene()))
    assert [(c.obj, c.attribute, c.values) for c in cs] == [(0, "color", ("red", "blue")),
                                                             (1, "color", ("blue", "red"))]
    assert [sum(c.probs) for c in cs] == [pytest.approx(1.0)] * 2
    assert cs[0].probs == pytest.approx((0.7, 0.3)) and not fixed


def test_bad_inputs():
    assert probability(UNSAT, uncertain_scene(), label="UNSAT").p == 0.0
    with pytest.raises(ValueError, match="count"):
        probability(RED, uncertain_scene(), count="loose")
    with pytest.raises(ValueError, match="label"):
        probability(RED, uncertain_scene(), label="MAYBE")
    with pytest.raises(ValueError, match="samples"):
        probability(RED, uncertain_scene(), samples=0)
    zero = uncertain_scene()
    zero["objects"][0]["probs"] = {"color": {"red": 0.0, "blue": 0.0}}
    with pytest.raises(ValueError, match=r"objects\[0\]\.probs\.color: the probabilities sum to 0"):
        probability(RED, zero)
    with pytest.raises(ValueError, match="spec"):
        probability({"n": 3}, uncertain_scene())
