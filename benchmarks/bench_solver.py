"""Speed of the logic core against a naive baseline measured in the same run.

Labels 509 random specs (m in {1, 3, 6}, n in 3..9) with witnesses and minimal cores, and verifies 10,000
scene graphs (about 20 per spec, like scoring 20 generators on the benchmark), each next to a naive baseline
that builds a fresh `clingo.Control` for every call (and for every core-shrinking step).

    python benchmarks/bench_solver.py [--specs 509] [--scenes 10000] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time

import clingo

from logicval_hf import Scene, SceneObject, Spec, load_catalog
from logicval_hf.asp.encoding import scene_facts
from logicval_hf.contract.params import random_constraint
from logicval_hf.asp.programs import constraint_rules, solve_program, vocabulary
from logicval_hf.asp.solver import Solver


def random_specs(k: int, rng: random.Random) -> list[Spec]:
    cat = load_catalog()
    out = []
    for _ in range(k):
        n, m = rng.randint(3, 9), rng.choice([1, 3, 6])
        cons = [random_constraint(rng.choice(cat.by_class(c)), n, rng).to_dict() for c in rng.sample(cat.classes, m)]
        out.append(Spec.from_dict({"n": n, "constraints": cons}))
    return out


def random_scene(k: int, rng: random.Random) -> Scene:
    dom = load_catalog().domain
    objs = []
    for _ in range(k):
        cx, cy = rng.uniform(10, 470), rng.uniform(10, 310)
        attrs = {a: rng.choice(dom.attributes[a]) for a in dom.perceived_attributes}
        objs.append(SceneObject(attrs, (cx - 10, cy - 10, cx + 10, cy + 10)))
    return Scene((480, 320), tuple(objs))


# ---- naive baselines: a fresh Control for every question ------------------------------------------
def _naive_sat(spec: Spec, active: list[int]) -> bool:
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], solve_program(spec) + "".join(f"active({i})." for i in active))
    ctl.ground([("base", [])])
    return bool(ctl.solve().satisfiable)


def naive_label(spec: Spec) -> tuple[bool, list[int] | None]:
    everything = list(range(spec.m))
    if _naive_sat(spec, everything):
        return True, None
    core = everything
    for i in everything:
        trial = [j for j in core if j != i]
        if not _naive_sat(spec, trial):
            core = trial
    return False, core


def naive_verify(spec: Spec, scene: Scene) -> list[int]:
    ctl = clingo.Control(["--warn=none"])
    prog = vocabulary(load_catalog().domain) + scene_facts(scene) + constraint_rules(spec) + "#defined violated/1."
    ctl.add("base", [], prog)
    ctl.ground([("base", [])])
    out: list[int] = []
    ctl.solve(on_model=lambda m: out.extend(s.arguments[0].number for s in m.symbols(atoms=True) if s.name == "violated"))
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", type=int, default=509, help="number of random specs to label (default 509)")
    ap.add_argument("--scenes", type=int, default=10_000, help="number of scene graphs to verify (default 10000)")
    ap.add_argument("--naive-sample", type=int, default=1000,
                    help="verify calls timed for the naive baseline (extrapolated per call; default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    specs = random_specs(args.specs, rng)

    solver = Solver(max_specs=10_000, max_verifiers=10_000)
    t = time.perf_counter()
    results = [solver.solve(s) for s in specs]
    t_label = time.perf_counter() - t
    t = time.perf_counter()
    naive = [naive_label(s) for s in specs]
    t_label_naive = time.perf_counter() - t
    assert [r.satisfiable for r in results] == [x[0] for x in naive], "reused and naive labels disagree"
    # Cores may differ (an UNSAT spec can have several minimal cores); both are minimal by construction.
    n_sat = sum(r.satisfiable for r in results)

    # Scenes: for each spec its witness (when SAT) and random scenes of about n objects.
    pairs = []
    while len(pairs) < args.scenes:
        for s, r in zip(specs, results):
            if len(pairs) >= args.scenes:
                break
            if r.satisfiable and rng.random() < 0.3:
                pairs.append((s, r.witness))
            else:
                pairs.append((s, random_scene(max(0, s.n + rng.choice([-1, 0, 0, 0, 1])), rng)))
    labels = {s.key(): r.label for s, r in zip(specs, results)}
    t = time.perf_counter()
    verdicts = solver.verify_many(pairs, labels=[labels[s.key()] for s, _ in pairs])
    t_verify = time.perf_counter() - t
    one_by_one = Solver(max_specs=10_000, max_verifiers=10_000)
    t = time.perf_counter()
    single = [one_by_one.verify(s, sc, label=labels[s.key()]) for s, sc in pairs]
    t_single = time.perf_counter() - t
    assert single == verdicts, "batched and one-by-one verdicts disagree"
    sample = pairs[: args.naive_sample]
    t = time.perf_counter()
    naive_v = [naive_verify(s, sc) for s, sc in sample]
    t_verify_naive = (time.perf_counter() - t) / len(sample) * len(pairs)
    assert [list(v.violated) for v in verdicts[: len(sample)]] == naive_v, "reused and naive verdicts disagree"

    print(f"label {len(specs)} specs ({n_sat} SAT with witnesses, {len(specs) - n_sat} UNSAT with minimal cores)")
    print(f"  reused groundings : {t_label:7.3f} s")
    print(f"  naive (fresh Control per call): {t_label_naive:7.3f} s   ratio {t_label_naive / t_label:5.1f}x")
    print(f"verify {len(pairs)} scene graphs over {len(specs)} specs "
          f"({sum(v.ok for v in verdicts)} ok)")
    print(f"  batched (one grounding per spec and batch): {t_verify:7.3f} s")
    print(f"  one by one (cached Control per spec, scene as assumptions): {t_single:7.3f} s")
    print(f"  naive (fresh Control per call, {len(sample)} timed, extrapolated): {t_verify_naive:7.3f} s   "
          f"ratio {t_verify_naive / t_verify:5.1f}x")


if __name__ == "__main__":
    main()
