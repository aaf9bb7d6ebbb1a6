"""Differential tests of the box domain (COCO): the solver against the independent plain-Python reference, which
shares no code with the encoding and places no box on a lattice (tests/reference_box.py for SAT/UNSAT of open-size
specs, the interpreter of `logicval_hf.contract.reference` for verdicts).

Labels. A SAT answer is checked by the interpreter on the witness (boxes that satisfy every constraint prove SAT);
an UNSAT answer by the reference's search on the minimal core (no relations that boxes can have satisfy the core
among scenes up to its own bound, and it finds no boxes for any: a reference SAT there is a disagreement), and the
core's minimality by labelling every core minus one constraint, whose witness the interpreter checks in turn. An
answer of the solver's `SolverLimit` (a placement it cannot decide) is counted, never a disagreement, and must stay
rare; cores past the reference's search limit are counted too.

Specs: counts, colours, ranks and weighted sums; random relation templates; and, over-represented, chains of 2 to
10 objects (one of each of as many classes, each in a random relation to the next), cycles of 2 to 5 (a chain
whose last object is related back to its first) and nestings (chains of inside / containing with an offset or size
relation on one pair). Whole suite: 3,500 specs; the inner loop a small sample of each family (`helpers.examples`).
"""

from __future__ import annotations

import itertools
import random

import pytest
import reference_box
from coco_specs import COCO, TEMPLATES, random_constraint, random_scene, random_spec
from helpers import examples

from logicval_hf.asp.solver import Solver
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.reference import constraint_holds, violated
from logicval_hf.contract.spec import Spec

CATALOG = load_catalog()


def _relational(template_id: str) -> bool:
    t = CATALOG.template(template_id)
    return any(s.type == "rel" for s in t.slots) or '"rel"' in str(t.formula)


COUNTING = [t for t in TEMPLATES if not _relational(t)]
RELATIONAL = [t for t in TEMPLATES if _relational(t)]


def counting_spec(rng: random.Random) -> Spec:
    """Two to four constraints over counts, colours, ranks and legs, counts up to 3."""
    return random_spec(rng, COUNTING, rng.choice([2, 3, 4]), max_count=3)


def relational_spec(rng: random.Random) -> Spec:
    """One relation template, sometimes with a counting one, counts up to 1."""
    cons = [random_constraint(rng.choice(RELATIONAL), rng, 1)]
    cons += [random_constraint(rng.choice(COUNTING), rng, 1) for _ in range(rng.choice([0, 1]))]
    return Spec(None, tuple(cons), COCO)


CLASSES = ("dog", "cat", "bird", "person", "car", "cup", "book", "chair", "bus", "horse")
OFFSETS = ("left", "right", "above", "below")
SIZES = ("larger", "smaller")
NESTS = ("inside", "contains")


def _lit(value: str) -> dict:
    return {"prop": "class", "value": value, "negated": False}


def _one(cls: str) -> dict:
    return {"template": "X1/count_cmp", "params": {"A1": _lit(cls), "T": "=", "K": 1}}


def _rel(a: str, rel: str, b: str) -> dict:
    return {"template": "X4/group_rel_all", "params": {"A1": _lit(a), "R1": {"rel": rel, "negated": False},
                                                      "B1": _lit(b)}}


def chain_spec(rng: random.Random) -> Spec:
    """One object of each of k classes (k = 2..10), each in a random relation to the next."""
    k = rng.randint(2, 10)
    names = rng.sample(CLASSES, k)
    cons = [_one(c) for c in names]
    pool = rng.choice([OFFSETS, OFFSETS + SIZES, COCO.relations, (rng.choice(COCO.relations),)])
    cons += [_rel(a, rng.choice(pool), b) for a, b in itertools.pairwise(names)]
    rng.shuffle(cons)
    return Spec.from_dict({"domain": "coco", "constraints": cons})


def cycle_spec(rng: random.Random) -> Spec:
    """A chain of 2 to 5 whose last object is related back to its first (in one family: a contradiction)."""
    k = rng.randint(2, 5)
    names = rng.sample(CLASSES, k)
    pool = rng.choice([(rng.choice(COCO.relations),), OFFSETS, COCO.relations])
    cons = [_one(c) for c in names] + [_rel(a, rng.choice(pool), b) for a, b in zip(names, names[1:] + names[:1],
                                                                                   strict=True)]
    return Spec.from_dict({"domain": "coco", "constraints": cons})


def nesting_spec(rng: random.Random) -> Spec:
    """A nesting of 2 to 5 (each inside, or containing, the next) and an offset or size relation on one pair."""
    k = rng.randint(2, 5)
    names = rng.sample(CLASSES, k)
    cons = [_one(c) for c in names] + [_rel(a, rng.choice(NESTS), b) for a, b in itertools.pairwise(names)]
    a, b = rng.sample(names, 2)
    cons.append(_rel(a, rng.choice(OFFSETS + SIZES), b))
    if rng.random() < 0.3:
        a, b = rng.sample(names, 2)
        cons.append(_rel(a, rng.choice(COCO.relations), b))
    return Spec.from_dict({"domain": "coco", "constraints": cons})


FAMILIES = {"counting": counting_spec, "relations": relational_spec, "chains": chain_spec, "cycles": cycle_spec,
            "nestings": nesting_spec}


def check_labels(specs: list[Spec], max_worlds: int) -> dict[str, int]:
    """Label every spec and check each label against the reference; the tally of outcomes."""
    from logicval_hf.errors import SolverLimit

    solver = Solver(max_specs=100_000)
    tally = dict.fromkeys(("SAT", "UNSAT", "solver limit", "too large for the reference",
                           "no boxes found by the reference"), 0)
    for spec in specs:
        try:
            r = solver.solve(spec, timeout=120)
        except SolverLimit:
            tally["solver limit"] += 1
            continue
        if r.satisfiable:
            bad = [i for i, c in enumerate(spec.constraints) if not constraint_holds(c, r.witness)]
            assert not bad, f"the witness breaks constraints {bad} of {spec.to_json()}"
            tally["SAT"] += 1
            continue
        core = Spec(None, tuple(spec.constraints[i] for i in r.core), COCO)
        try:
            sat, world = reference_box.satisfiable(core, max_worlds=max_worlds)
        except reference_box.TooLarge:
            tally["too large for the reference"] += 1
            continue
        except reference_box.Undecided:  # relations for the core, but no boxes: the solver's UNSAT says none exist
            tally["no boxes found by the reference"] += 1
            continue
        assert not sat, f"the reference finds boxes for the core {core.to_json()}: {world}"
        for k in range(len(core.constraints)):  # minimal: without any one constraint, a verified witness
            rest = Spec(None, core.constraints[:k] + core.constraints[k + 1:], COCO)
            sub = solver.solve(rest, timeout=120)
            assert sub.satisfiable and all(constraint_holds(c, sub.witness) for c in rest.constraints), \
                f"core {r.core} of {spec.to_json()} is not minimal"
        tally["UNSAT"] += 1
    return tally


@pytest.mark.parametrize("family, n", [
    ("counting", examples(400)),
    pytest.param("counting", 1_200, marks=pytest.mark.slow),
    ("relations", examples(200)),
    pytest.param("relations", 1_000, marks=pytest.mark.slow),
    ("chains", examples(60)),
    pytest.param("chains", 400, marks=pytest.mark.slow),
    ("cycles", examples(60)),
    pytest.param("cycles", 300, marks=pytest.mark.slow),
    ("nestings", examples(60)),
    pytest.param("nestings", 600, marks=pytest.mark.slow),
])
def test_labels_of_random_open_size_specs_agree_with_the_reference(family, n):
    rng = random.Random(f"{family}-{n}")
    tally = check_labels([FAMILIES[family](rng) for _ in range(n)], max_worlds=20_000)
    assert tally["SAT"] and (tally["UNSAT"] or family == "chains"), tally  # both answers occur (chains: SAT)
    # the placement decides nearly everything (a known gap: an object inside a box inside another, related to the
    # outer box otherwise than the middle one is; docs/solver.md, "Limits")
    assert tally["solver limit"] <= max(2, 0.01 * n), tally
    # the reference decides nearly every core (it leaves out searches past its limit)
    assert tally["too large for the reference"] + tally["no boxes found by the reference"] <= 0.1 * n + 3, tally


def test_the_reference_finds_models_past_a_bound_that_is_too_small():
    """The reference looks past the solver's universe: a spec whose model needs 18 objects is SAT for it."""
    spec = Spec.from_dict({"domain": "coco", "constraints": [
        {"template": "X1/count_cmp", "params": {"A1": {"prop": "class", "value": "dog", "negated": False},
                                                "T": "=", "K": 9}},
        {"template": "X1/count_cmp", "params": {"A1": {"prop": "class", "value": "cat", "negated": False},
                                                "T": "=", "K": 9}}]})
    sat, world = reference_box.satisfiable(spec)
    assert sat and len(world) == 18
    assert Solver().solve(spec).satisfiable


@pytest.mark.parametrize("n", [examples(2_000), pytest.param(10_000, marks=pytest.mark.slow)])
def test_verdicts_on_random_coco_scenes_agree_with_the_interpreter(n):
    """Random specs over every COCO template and random detections (anywhere, or on a coarse lattice so that
    ties, equal sizes and nested boxes occur), verified in batches: the violated constraints are the
    interpreter's, pair by pair."""
    rng = random.Random(n)
    pairs = []
    while len(pairs) < n:
        spec = random_spec(rng, TEMPLATES, rng.choice([1, 2, 3]))
        for _ in range(10):
            pairs.append((spec, random_scene(rng, rng.randint(0, 7), lattice=rng.random() < 0.5)))
    verdicts = Solver(max_specs=100_000).verify_many(pairs, labels=["SAT"] * len(pairs))
    mismatches = [(s.to_json(), sc.to_json(), list(v.violated), violated(s, sc))
                  for (s, sc), v in zip(pairs, verdicts, strict=False) if list(v.violated) != violated(s, sc)]
    assert not mismatches, f"{len(mismatches)} of {len(pairs)} disagree, first: {mismatches[0]}"
    assert 0.1 < sum(bool(v.violated) for v in verdicts) / len(verdicts) < 0.9  # not degenerate
