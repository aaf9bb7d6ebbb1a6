"""Differential tests: the clingo encoding against the independent plain-Python evaluator
(logicval_hf.contract.reference), and labels against the exhaustive search (tests/clevr_brute_force.py).

Fixed seeds, so CI runs the same cases every time; hypothesis runs derandomised.
"""

import random
import zlib

import pytest
from clevr_brute_force import BruteForceLimit, brute_force_satisfiable, is_tautology
from helpers import CATALOG, examples, random_scene, random_spec
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf import Spec
from logicval_hf.asp.solver import Solver
from logicval_hf.contract import reference
from logicval_hf.contract.params import random_constraint

TEMPLATES = sorted(CATALOG.templates)


@pytest.mark.slow
def test_ten_thousand_random_pairs_over_all_templates():
    rng = random.Random(20261130)
    pairs = []
    for tid in TEMPLATES:
        for _ in range(24):
            n = rng.randint(3, 9)
            spec = Spec(n, (random_constraint(tid, n, rng),))
            for _ in range(6):
                k = rng.choice([0, 1, 2, n, n, n, rng.randint(0, 10)])
                pairs.append((spec, random_scene(rng, k, grid=rng.choice([None, None, 3, 5]))))
    assert len(pairs) >= 10_000
    verdicts = Solver().verify_many(pairs, labels=["SAT"] * len(pairs))
    mismatches = []
    for (spec, scene), v in zip(pairs, verdicts, strict=False):
        expected = reference.violated(spec, scene)
        if list(v.violated) != expected:
            mismatches.append((spec.to_dict(), scene.to_dict(), v.violated, expected))
    assert not mismatches, f"{len(mismatches)} disagreements, first: {mismatches[0]}"
    # the cases are not degenerate: both outcomes occur for every class
    by_class = {}
    for (spec, _), v in zip(pairs, verdicts, strict=False):
        by_class.setdefault(spec.constraints[0].cls, set()).add(bool(v.violated))
    assert all(outcomes == {True, False} for outcomes in by_class.values()), by_class


@pytest.mark.slow
@given(st.sampled_from(TEMPLATES), st.integers(3, 9), st.integers(0, 10), st.integers(0, 2**31),
       st.sampled_from([None, 2, 4]))
@settings(max_examples=examples(400), derandomize=True, deadline=None)
def test_single_verify_agrees_with_reference(tid, n, k, seed, grid):
    rng = random.Random(seed)
    spec = Spec(n, (random_constraint(tid, n, rng),))
    scene = random_scene(rng, k, grid=grid)
    v = Solver().verify(spec, scene, label="SAT")
    assert list(v.violated) == reference.violated(spec, scene)
    assert v.count_ok == (k == n)
    assert v.ok == reference.spec_holds(spec, scene, count="strict")
    relaxed = Solver().verify(spec, scene, label="SAT", count="relaxed").ok
    assert relaxed == reference.spec_holds(spec, scene, count="relaxed")


def test_every_witness_satisfies_its_spec_under_the_reference():
    rng = random.Random(99)
    solver = Solver()
    checked, tries = 0, examples(150)
    for _ in range(tries):
        spec = random_spec(rng, rng.choice([1, 3, 6]))
        r = solver.solve(spec)
        if r.satisfiable:
            assert reference.spec_holds(spec, r.witness, count="strict"), spec.to_dict()
            checked += 1
    assert checked > tries // 3


@pytest.mark.parametrize("tid", TEMPLATES)
def test_labels_match_brute_force_at_n3(tid):
    rng = random.Random(zlib.crc32(tid.encode()))
    solver = Solver()
    for _ in range(4):
        spec = Spec(3, (random_constraint(tid, 3, rng),))
        sat, _ = brute_force_satisfiable(spec)
        assert solver.solve(spec).satisfiable == sat, spec.to_dict()
        assert solver.is_tautology(spec.constraints[0], 3) == is_tautology(spec.constraints[0], 3)


def test_composed_labels_match_brute_force_at_n3():
    rng = random.Random(7)
    solver = Solver()
    seen = set()
    for _ in range(examples(40)):
        spec = random_spec(rng, 3, n=3)
        try:
            sat, _ = brute_force_satisfiable(spec, max_worlds=300_000)
        except BruteForceLimit:
            continue
        assert solver.solve(spec).satisfiable == sat, spec.to_dict()
        seen.add(sat)
    assert seen == {True, False}
