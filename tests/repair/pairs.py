"""Random (spec, scene) pairs for the differential tests: small CLEVR specs (n 3..5, one or three constraints) and
scenes with centres on the lattice of `reference` (ties and midlines included): half of them the solver's witness
laid on the lattice and changed at random in up to two ways (so that many are a few edits from right), half drawn
at random with values mostly from the spec's own literals."""

from __future__ import annotations

import random
from typing import Any

from reference import ATTRIBUTES, LATTICE_X, LATTICE_Y

from logicval_hf import Spec, load_catalog
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.spec import AttrLit

SIZES = (30, 40, 50)


def random_spec(rng: random.Random) -> Spec:
    cat = load_catalog()
    n = rng.randint(3, 5)
    m = rng.choice((1, 1, 3))
    while True:
        try:
            cons = [random_constraint(rng.choice(cat.by_class(c)), n, rng).to_dict()
                    for c in rng.sample(cat.classes, m)]
            return Spec.from_dict({"n": n, "constraints": cons})
        except (RuntimeError, ValueError):
            continue


def _obj(values: dict[str, str], cx: float, cy: float, rng: random.Random) -> dict[str, Any]:
    w, h = rng.choice(SIZES), rng.choice(SIZES)
    return {**values, "bbox": [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]}


def _on_lattice(order: list[int], halves: list[int], points: tuple[int, ...], extent: int) -> dict[int, int]:
    """Lattice coordinates keeping an order and each object's half (points reused when a half runs out)."""
    out = {}
    for half in (0, 1):
        spots = [p for p in points if (p >= extent / 2) == bool(half)]
        members = [i for i in order if halves[i] == half]
        for k, i in enumerate(members):
            out[i] = spots[min(len(spots) - 1, k * len(spots) // max(1, len(members)))]
    return out


def witness_scene(spec: Spec, rng: random.Random) -> dict[str, Any]:
    """The solver's witness on the lattice, changed in up to two random ways."""
    from logicval_hf import solve

    w = solve(spec).witness
    assert w is not None
    cent = [o.center for o in w.objects]
    n = len(cent)
    xs = _on_lattice(sorted(range(n), key=lambda i: cent[i][0]), [int(c[0] >= 240) for c in cent], LATTICE_X, 480)
    ys = _on_lattice(sorted(range(n), key=lambda i: cent[i][1]), [int(c[1] >= 160) for c in cent], LATTICE_Y, 320)
    objects = [_obj(dict(o.attributes), xs[i], ys[i], rng) for i, o in enumerate(w.objects)]
    for _ in range(rng.choice((0, 1, 1, 2, 2))):
        kind = rng.choice(("set", "set", "move", "remove", "add"))
        if kind == "add" or not objects:
            objects.append(_obj({a: rng.choice(v) for a, v in ATTRIBUTES.items()}, rng.choice(LATTICE_X),
                                rng.choice(LATTICE_Y), rng))
        elif kind == "set":
            a = rng.choice(list(ATTRIBUTES))
            rng.choice(objects)[a] = rng.choice(ATTRIBUTES[a])
        elif kind == "remove":
            objects.pop(rng.randrange(len(objects)))
        else:
            o = rng.choice(objects)
            bw, bh = o["bbox"][2] - o["bbox"][0], o["bbox"][3] - o["bbox"][1]
            cx, cy = rng.choice(LATTICE_X), rng.choice(LATTICE_Y)
            o["bbox"] = [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2]
    return {"image_size": [480, 320], "objects": objects[:5]}


def random_scene(spec: Spec, rng: random.Random) -> dict[str, Any]:
    named: dict[str, list[str]] = {}
    for c in spec.constraints:
        for v in c.params.values():
            if isinstance(v, AttrLit) and v.prop in ATTRIBUTES:
                named.setdefault(v.prop, []).append(v.value)
    assert spec.n is not None
    k = max(0, min(5, spec.n + rng.choice((-2, -1, 0, 0, 0, 0, 1, 1, 2))))
    spots = [(x, y) for x in LATTICE_X[1::2] for y in LATTICE_Y[1::2]]
    objects = []
    for cx, cy in rng.sample(spots, k):
        values = {a: rng.choice(named[a]) if a in named and rng.random() < 0.6 else rng.choice(vals)
                  for a, vals in ATTRIBUTES.items()}
        objects.append(_obj(values, cx, cy, rng))
    return {"image_size": [480, 320], "objects": objects}


def random_pair(rng: random.Random) -> tuple[Spec, dict[str, Any], str]:
    """A spec, a scene and the spec's label (by the clingo-free exhaustive search)."""
    from clevr_brute_force import BruteForceLimit, brute_force_satisfiable

    while True:  # a spec whose exhaustive search stays small
        spec = random_spec(rng)
        try:
            label = "SAT" if brute_force_satisfiable(spec, max_worlds=200_000)[0] else "UNSAT"
            break
        except BruteForceLimit:
            continue
    scene = witness_scene(spec, rng) if label == "SAT" and rng.random() < 0.5 else random_scene(spec, rng)
    return spec, scene, label
