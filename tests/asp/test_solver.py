import random
from typing import ClassVar

import pytest
from helpers import attr, examples, obj, random_spec, rel

from logicval_hf import Scene, Spec
from logicval_hf.asp.solver import Solver, solve, verify


def c(template, **params):
    return {"template": template, "params": params}


RED_CUBES = c("C3/1prop", A1=attr("color", "red"), C1=attr("shape", "cube"))
BLUE_BEHIND = c("C4/pair_rel", A1=attr("color", "blue"), B1=attr("shape", "sphere"), R1=rel("behind"))
ALL_METAL = c("C2/1prop", A1=attr("material", "metal"))
SOME_RUBBER = c("C1/1prop", A1=attr("material", "rubber"))
SEVEN_RED = c("C8/1prop_atleast", A1=attr("color", "red"), K=7)


class TestLabel:
    def test_sat_with_witness(self):
        spec = Spec.from_dict({"n": 4, "constraints": [RED_CUBES]})
        r = solve(spec)
        assert r.satisfiable and r.label == "SAT" and r.core is None
        assert len(r.witness) == 4
        assert verify(spec, r.witness).ok

    def test_count_overflow_is_unsat_with_core(self):
        r = solve({"n": 5, "constraints": [SEVEN_RED]})
        assert not r.satisfiable and r.witness is None and r.core == (0,)

    def test_core_is_minimal_and_drops_bystanders(self):
        spec = Spec.from_dict({"n": 5, "constraints": [RED_CUBES, ALL_METAL, SOME_RUBBER]})
        r = solve(spec)
        assert r.label == "UNSAT"
        assert r.core == (1, 2)

    def test_core_needs_all_three(self):
        spec = Spec.from_dict({"n": 4, "constraints": [
            c("C2/1prop", A1=attr("shape", "cube")),
            c("C4/pair_rel", A1=attr("color", "red"), B1=attr("color", "blue"), R1=rel("behind")),
            c("C9/1prop", A1=attr("shape", "sphere"), B1=attr("color", "red"), T="="),
        ]})
        assert solve(spec).core == (0, 1, 2)

    def test_region_ordering_is_enforced(self):
        # A green object behind every other object, all green objects in the front-right region, and a red
        # object in the back-right region: the back row must come before the front row, so this is UNSAT.
        spec = {"n": 3, "constraints": [
            c("C1/4prop", A1=attr("color", "red"), A2=attr("shape", "cube"), A3=attr("material", "metal"),
              A4=attr("region", "r1")),
            c("C6/1prop", A1=attr("color", "green"), R1=rel("behind")),
            c("C3/1prop_region", A1=attr("color", "green"), C1=attr("region", "r3")),
        ]}
        r = solve(spec)
        assert r.label == "UNSAT" and r.core == (0, 1, 2)
        spec["constraints"][2] = c("C3/1prop_region", A1=attr("color", "green"), C1=attr("region", "r0"))
        r = solve(spec)
        assert r.satisfiable and verify(spec, r.witness).ok
        assert Scene.from_dict(r.witness.to_dict()).regions().count("r0") >= 1

    def test_deterministic_across_solvers(self):
        rng = random.Random(5)
        for _ in range(10):
            spec = random_spec(rng, 3)
            a, b = Solver().solve(spec), Solver().solve(spec)
            assert a == b

    def test_random_specs_witnesses_verify_and_cores_are_minimal(self):
        rng = random.Random(11)
        solver = Solver()
        seen = {"SAT": 0, "UNSAT": 0}
        for _ in range(60):
            spec = random_spec(rng, rng.choice([3, 6]))
            r = solver.solve(spec)
            seen[r.label] += 1
            if r.satisfiable:
                w = r.witness
                assert len(w) == spec.n
                assert solver.verify(spec, w).ok
                assert len({o.center[0] for o in w}) == spec.n and len({o.center[1] for o in w}) == spec.n
            else:
                core = list(r.core)
                assert not solver.is_satisfiable(spec, core)
                for i in core:
                    assert solver.is_satisfiable(spec, [j for j in core if j != i])
        assert seen["SAT"] and seen["UNSAT"]

    def test_image_size_scales_witness(self):
        r = solve({"n": 3, "constraints": [RED_CUBES]}, image_size=(1024, 688))
        assert r.witness.image_size == (1024, 688)
        assert all(o.bbox[2] <= 1024 and o.bbox[3] <= 688 for o in r.witness)


class TestVerify:
    SPEC: ClassVar[dict] = {"n": 3, "constraints": [c("C1/1prop", A1=attr("color", "red"))]}

    def scene(self, *objs):
        return {"image_size": [480, 320], "objects": list(objs)}

    def test_strict_and_relaxed_counts(self):
        two = self.scene(obj("red", "cube", "metal", 100, 100), obj("blue", "cube", "metal", 300, 100))
        v = verify(self.SPEC, two)
        assert not v.ok and not v.count_ok and v.violated == ()
        v = verify(self.SPEC, two, count="relaxed")
        assert v.ok and not v.count_ok

    def test_violated_indices(self):
        spec = {"n": 3, "constraints": [RED_CUBES, ALL_METAL, c("C8/1prop_exact", A1=attr("shape", "cube"), K=2)]}
        s = self.scene(obj("red", "cube", "metal", 100, 100), obj("red", "sphere", "metal", 300, 100),
                       obj("blue", "cube", "rubber", 200, 250))
        v = verify(spec, s)
        assert v.violated == (0, 1) and v.count_ok and not v.ok

    def test_unsat_spec_wants_the_empty_scene(self):
        spec = {"n": 5, "constraints": [SEVEN_RED]}
        assert verify(spec, Scene.empty()).ok
        five_red = self.scene(*[obj("red", "cube", "metal", 50 + 80 * i, 100) for i in range(5)])
        v = verify(spec, five_red)
        assert not v.ok and v.label == "UNSAT" and v.violated == (0,)
        assert verify(spec, five_red, label="UNSAT").ok is False

    def test_empty_scene_on_sat_spec(self):
        v = verify(self.SPEC, Scene.empty())
        assert not v.ok and not v.count_ok and v.violated == (0,)

    def test_more_objects_than_nine(self):
        objs = [obj("blue", "cube", "metal", 20 + 40 * i, 30 + 20 * i) for i in range(12)]
        objs[7]["color"] = "red"
        v = verify(self.SPEC, self.scene(*objs), count="relaxed")
        assert v.ok and v.n_objects == 12 and not v.count_ok

    def test_ties_give_no_relation(self):
        spec = {"n": 3, "constraints": [c("C4/pair_rel", A1=attr("color", "red"), B1=attr("color", "blue"),
                                          R1=rel("left"))]}
        tied = self.scene(obj("red", "cube", "metal", 100, 50), obj("blue", "cube", "metal", 100, 150),
                          obj("green", "cube", "metal", 300, 150))
        assert verify(spec, tied).violated == (0,)
        neg = {"n": 3, "constraints": [c("C4/pair_rel_neg", A1=attr("color", "red"), B1=attr("color", "blue"),
                                         R1=rel("left", True))]}
        assert verify(neg, tied).ok  # closed world: "not left" holds on a tie

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="count must be"):
            verify(self.SPEC, Scene.empty(), count="loose")
        with pytest.raises(ValueError, match="label must be"):
            verify(self.SPEC, Scene.empty(), label="maybe")

    def test_reuse_gives_same_answers_as_fresh_solvers(self):
        rng = random.Random(3)
        from helpers import random_scene
        shared = Solver()
        for _ in range(examples(40)):
            spec = random_spec(rng, 1)
            scenes = [random_scene(rng, rng.randint(0, 9), grid=rng.choice([None, 4])) for _ in range(3)]
            for s in scenes:
                assert shared.verify(spec, s, label="SAT") == Solver().verify(spec, s, label="SAT")


class TestVerifyMany:
    @pytest.mark.parametrize("n_specs", [8, pytest.param(25, marks=pytest.mark.slow)])
    def test_batched_equals_one_by_one(self, n_specs):
        from helpers import random_scene
        rng = random.Random(21)
        specs = [random_spec(rng, rng.choice([1, 3, 6])) for _ in range(n_specs)]
        pairs = [(s, random_scene(rng, max(0, s.n + rng.choice([-1, 0, 1])), grid=rng.choice([None, 3])))
                 for s in specs for _ in range(4)]
        pairs += [(specs[0], Scene.empty())]
        solver = Solver()
        batched = solver.verify_many(pairs, batch_size=3)
        single = [Solver().verify(s, sc) for s, sc in pairs]
        assert batched == single
        relaxed = solver.verify_many(pairs, count="relaxed")
        assert relaxed == [solver.verify(s, sc, count="relaxed") for s, sc in pairs]

    def test_bad_items_are_named(self):
        good = ({"n": 3, "constraints": [RED_CUBES]}, Scene.empty())
        with pytest.raises(ValueError, match=r"item 1: scene\.objects\[0\]\.color"):
            Solver().verify_many([good, (good[0], {"image_size": [10, 10], "objects": [
                {"color": "pink", "shape": "cube", "material": "metal", "bbox": [1, 1, 2, 2]}]})])
        with pytest.raises(ValueError, match="labels has 1 entries for 2 pairs"):
            Solver().verify_many([good, good], labels=["SAT"])


def test_tautology_at_n():
    solver = Solver()
    parity = {"template": "C9/1prop_cmp", "params": {"A1": attr("material", "metal"),
                                                      "B1": attr("material", "rubber"), "T": "!="}}
    assert solver.is_tautology(parity, 5)          # odd n: the two counts can never be equal
    assert not solver.is_tautology(parity, 4)
    assert not solver.is_tautology({"template": "C1/1prop", "params": {"A1": attr("color", "red")}}, 4)


def test_relaxed_verdict_derived_from_the_strict_one_equals_a_relaxed_verification():
    rng = random.Random(12)
    solver = Solver()
    from helpers import random_scene

    for _ in range(60):
        spec = random_spec(rng, rng.choice([1, 3]))
        label = solver.solve(spec).label
        sc = random_scene(rng, rng.randint(0, 9), grid=4)
        strict = solver.verify(spec, sc, count="strict", label=label)
        assert strict.with_count("relaxed") == solver.verify(spec, sc, count="relaxed", label=label)
        assert strict.with_count("strict") == strict
