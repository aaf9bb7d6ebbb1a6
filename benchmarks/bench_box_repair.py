"""Repairs in the coco domain of specs that read relations between boxes: time per repair and how many were proven
optimal within the default budget, against a baseline measured in the same run.

Random (spec, scene) pairs: one or two constraints of the templates with a relation slot over a small vocabulary
(dogs, cats and birds, red and blue: the differential tests' generator, ``tests/coco_specs.py``), scenes of 0 to 5
detections (boxes anywhere, or on a coarse lattice with ties and nesting). Each pair is repaired end to end (label
included) with the default budget; the baseline, on every tenth pair, verifies every single edit over the same
candidate boxes one by one (each value the spec names and one other, each removal, each move and each addition to a
candidate box), which finds repairs of one edit only.

    python benchmarks/bench_box_repair.py [--pairs 300] [--seed 0] [--every 10] [--out FILE]

``--out`` (JSON, written atomically every ten pairs) keeps the repairs timed so far; a second run resumes there.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from pathlib import Path

from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from coco_specs import CATALOG, TEMPLATES, random_scene, random_spec  # noqa: E402

from logicval_hf.asp.solver import Solver  # noqa: E402
from logicval_hf.common.atomic import atomic_write_json  # noqa: E402
from logicval_hf.contract.scene import Scene, SceneObject  # noqa: E402
from logicval_hf.contract.spec import AttrLit, Spec  # noqa: E402
from logicval_hf.repairs import DEFAULT_COSTS, repair  # noqa: E402
from logicval_hf.repairs.boxes import room_for  # noqa: E402
from logicval_hf.repairs.facts import Problem  # noqa: E402

RELATIONAL = [t for t in TEMPLATES if any(s.type == "rel" for s in CATALOG.template(t).slots)]


def pairs(k: int, seed: int) -> list[tuple[Spec, Scene]]:
    rng = random.Random(seed)
    return [(random_spec(rng, RELATIONAL, rng.choice((1, 1, 2))),
             random_scene(rng, rng.randint(0, 5), lattice=rng.random() < 0.5)) for _ in range(k)]


def single_edit_repair(solver: Solver, spec: Spec, scene: Scene) -> int | None:
    """The baseline: 0 or 1 when the scene or one edit over the repair's own candidate boxes satisfies the spec
    (each verified), None otherwise."""
    if solver.verify(spec, scene, count="relaxed").ok:
        return 0
    dom, objs = scene.domain, list(scene.objects)
    room = room_for(Problem(spec, scene, "strict", DEFAULT_COSTS), [])
    named: dict[str, set[str]] = {}
    for c in spec.constraints:
        for v in c.params.values():
            if isinstance(v, AttrLit):
                named.setdefault(v.prop, set()).add(v.value)
    values = {a: [v for v in dom.attributes[a] if v in named.get(a, ())]
              + [v for v in dom.attributes[a] if v not in named.get(a, ())][:1] for a in dom.perceived_attributes}
    candidates: list[list[SceneObject]] = []
    for i, o in enumerate(objs):
        before, after = objs[:i], objs[i + 1:]
        candidates.append(before + after)
        for a in dom.perceived_attributes:
            candidates += [[*before, SceneObject({**o.attributes, a: v}, o.bbox, o.score), *after]
                           for v in values[a] if v != o.attributes[a]]
        if room is not None:
            candidates += [[*before, SceneObject(o.attributes, b, o.score), *after] for b in room.offered(i)]
    combos = [dict(zip(dom.perceived_attributes, c, strict=True)) for c in itertools.product(*values.values())]
    if room is not None:
        candidates += [[*objs, SceneObject(c, b)] for c in combos for b in room.offered("new")]
    for objects in candidates:
        if solver.verify(spec, Scene(scene.image_size, tuple(objects), dom), count="relaxed").ok:
            return 1
    return None


def stats(v: list[float]) -> str:
    v = sorted(v)
    return (f"median {1000 * v[len(v) // 2]:8.1f} ms  p99 {1000 * v[min(len(v) - 1, int(len(v) * 0.99))]:8.1f} ms"
            f"  max {1000 * v[-1]:8.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=10, help="time the baseline on every K-th pair (default 10)")
    ap.add_argument("--out", type=Path, help="JSON file of the repairs timed so far (resumed)")
    args = ap.parse_args()
    items = pairs(args.pairs, args.seed)
    done: dict[str, dict] = json.loads(args.out.read_text()) if args.out and args.out.exists() else {}
    solver = Solver(max_specs=10_000, max_verifiers=10_000)
    for k, (spec, scene) in enumerate(tqdm(items, desc="repairs")):
        if str(k) in done:
            continue
        t = time.perf_counter()
        r = repair(spec, scene, solver=solver)
        done[str(k)] = {"seconds": time.perf_counter() - t, "cost": r.cost, "optimal": r.optimal,
                        "edits": [e.kind for e in r.edits], "objects": len(scene)}
        if args.out and k % 10 == 9:
            atomic_write_json(args.out, done)
    if args.out:
        atomic_write_json(args.out, done)
    base = Solver(max_specs=10_000, max_verifiers=10_000)
    base_times = []
    for spec, scene in tqdm(items[:: args.every], desc="baseline"):
        t = time.perf_counter()
        single_edit_repair(base, spec, scene)
        base_times.append(time.perf_counter() - t)
    rows = [done[str(k)] for k in range(len(items))]
    times = [r["seconds"] for r in rows]
    sample = [r["seconds"] for r in rows[:: args.every]]
    costs = sorted({r["cost"] for r in rows})
    moved = sum(any(e in ("move", "add") for e in r["edits"]) for r in rows)
    print(f"coco repairs of {len(rows)} random relation specs against random scenes (seed {args.seed}; costs "
          f"{costs[0]}..{costs[-1]}, {moved} moving or adding objects)")
    print(f"  optimal within the default budget : {sum(r['optimal'] for r in rows)} of {len(rows)}")
    print(f"  repair (exact over the candidates): {stats(times)}")
    print(f"  every single edit verified ({len(base_times)} pairs; the same pairs' repairs {stats(sample)}):")
    print(f"                                      {stats(base_times)}   ratio of medians "
          f"{sorted(base_times)[len(base_times) // 2] / sorted(sample)[len(sample) // 2]:5.1f}x")


if __name__ == "__main__":
    main()
