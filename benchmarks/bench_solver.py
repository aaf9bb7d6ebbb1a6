"""Speed of the logic core against a naive baseline measured in the same run.

CLEVR: labels 509 random specs (m in {1, 3, 6}, n in 3..9) with witnesses and minimal cores, and verifies 10,000
scene graphs (about 20 per spec, like scoring 20 generators on the benchmark), each next to a naive baseline
that builds a fresh `clingo.Control` for every call (and for every core-shrinking step); then labels the shipped
benchmark's 509 specs (seed 0), as `logicval build-dataset` does.

Box geometry (the coco domain): chains of 2 to 8 objects each left of / right of / above / below / larger than /
smaller than / inside / containing the next (SAT, each witness checked with GenEval's position rule), "inside and
above" (SAT), contradictions (a cycle, left and right, larger and smaller, inside and larger: UNSAT with a minimal
core); the open-size count families for K = 2..10 ("at least K dogs, at least K cats, at most 2K-1 dogs or cats",
UNSAT; "exactly K dogs and exactly K cats", SAT); GenEval's 553 prompts and Imag-Eval's prompts. Imag-Eval's prompt
files are not in the repository (CC BY-NC); without ``--imag-eval FOLDER`` a seeded stand-in of the same shape is
generated (114 files of three prompts, hard ones with four classes of four or five objects).

    python benchmarks/bench_solver.py [--specs 509] [--scenes 10000] [--seed 0]
        [--geneval METADATA] [--imag-eval FOLDER] [--repair-job DIR] [--only clevr|open|repair]

Repairs: every perceived scene of the main job's naive and perturbed images (the job runs in
``--repair-job`` first, resumed) repaired end to end (label included), next to a baseline that verifies every single
edit one by one (which finds only repairs of one edit) on a sample; median, p99 and max time per repair.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import clingo

from logicval_hf.asp.encoding import scene_facts
from logicval_hf.asp.programs import constraint_rules, solve_program, vocabulary
from logicval_hf.asp.solver import Solver
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SolverLimit, SolverTimeout

ROOT = Path(__file__).resolve().parents[1]
#: the data root (docs/data.md): $LOGICVAL_SHARED_DATA, else the folder "shared" beside the checkout
SHARED = Path(os.environ.get("LOGICVAL_SHARED_DATA") or ROOT.parent / "shared")
GENEVAL = SHARED / "peers" / "geneval" / "evaluation_metadata.jsonl"


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
    ctl.solve(on_model=lambda m: out.extend(s.arguments[0].number for s in m.symbols(atoms=True)
                                            if s.name == "violated"))
    return sorted(out)


def clevr_tables(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    specs = random_specs(args.specs, rng)

    solver = Solver(max_specs=10_000, max_verifiers=10_000)
    # spec by spec, one way then the other, so that the load of a shared machine weighs on both alike
    results, naive = [], []
    t_label = t_label_naive = 0.0
    for s in specs:
        t = time.perf_counter()
        results.append(solver.solve(s))
        t_label += time.perf_counter() - t
        t = time.perf_counter()
        naive.append(naive_label(s))
        t_label_naive += time.perf_counter() - t
    assert [r.satisfiable for r in results] == [x[0] for x in naive], "reused and naive labels disagree"
    # Cores may differ (an UNSAT spec can have several minimal cores); both are minimal by construction.
    n_sat = sum(r.satisfiable for r in results)

    # Scenes: for each spec its witness (when SAT) and random scenes of about n objects.
    pairs = []
    while len(pairs) < args.scenes:
        for s, r in zip(specs, results, strict=True):
            if len(pairs) >= args.scenes:
                break
            if r.satisfiable and rng.random() < 0.3:
                pairs.append((s, r.witness))
            else:
                pairs.append((s, random_scene(max(0, s.n + rng.choice([-1, 0, 0, 0, 1])), rng)))
    labels = {s.key(): r.label for s, r in zip(specs, results, strict=True)}
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

    # the shipped benchmark's specs, labelled as building the dataset does
    from logicval_hf.benchmark.sampler import build_benchmark

    bm = build_benchmark(seed=0, chance_scenes=1)
    shipped = [Spec.from_dict(json.loads(r["spec_json"])) for r in bm.all_rows()]
    for name, budget in (("no budget", None), ("a 20 s budget each", 20.0)):
        solver = Solver(max_specs=10_000)
        t = time.perf_counter()
        labels = [solver.solve(s, timeout=budget).label for s in shipped]
        took = time.perf_counter() - t
        print(f"label the shipped benchmark's {len(shipped)} specs ({labels.count('SAT')} SAT), {name}: {took:7.3f} s")


# ---- open-size specs (coco) ------------------------------------------------------------------------
def _lit(prop: str, value: str) -> dict:
    return {"prop": prop, "value": value, "negated": False}


def count_family_unsat(k: int) -> Spec:
    """At least K dogs, at least K cats, at most 2K-1 dogs or cats: UNSAT by counting alone."""
    return Spec.from_dict({"domain": "coco", "constraints": [
        {"template": "X1/count_cmp", "params": {"A1": _lit("class", "dog"), "T": ">=", "K": k}},
        {"template": "X1/count_cmp", "params": {"A1": _lit("class", "cat"), "T": ">=", "K": k}},
        {"template": "X1/count_or_cmp", "params": {"A1": _lit("class", "dog"), "A2": _lit("class", "cat"),
                                                   "T": "<=", "K": 2 * k - 1}}]})


def count_family_sat(k: int) -> Spec:
    """Exactly K dogs and exactly K cats: SAT with 2K objects."""
    return Spec.from_dict({"domain": "coco", "constraints": [
        {"template": "X1/count_cmp", "params": {"A1": _lit("class", cls), "T": "=", "K": k}}
        for cls in ("dog", "cat")]})


def new_label(solver: Solver, spec: Spec, budget: float) -> tuple[str | None, float]:
    t = time.perf_counter()
    try:
        return solver.solve(spec, timeout=budget).label, time.perf_counter() - t
    except (SolverTimeout, SolverLimit):
        return None, time.perf_counter() - t


IMAG_OBJECTS = ["dog", "cat", "bird", "cup", "bowl", "book", "chair", "car", "bus", "apple", "banana", "vase",
                "clock", "laptop", "toilet", "sink", "bottle", "horse", "sheep", "teddy bear", "hot dog", "toothbrush"]
IMAG_COLOURS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "gray"]
IMAG_SPATIAL = ["to the left of", "to the right of", "above", "below", "on top of", "under", "inside", "in front of",
                "behind", "next to"]


def imag_eval_stand_in(folder: Path, seed: int = 0) -> Path:
    """114 prompt files in Imag-Eval's format (57 skill combinations, each also `_robust`), three prompts each
    (hard, medium, easy): hard ones four classes of four or five when counting (17-20 objects), medium three of
    two, easy two of one or two; colours, two spatial and two size relations (one for easy), all drawn at random.
    A stand-in of the same shape for timing, not Imag-Eval's prompts."""

    rng = random.Random(seed)
    skills = ["counting", "color", "spatial", "size", "emotion", "text"]
    combos = [c for r in range(2, 7) for c in itertools.combinations(skills, r)][:57]
    sizes = {"hard": (4, (4, 5), 2), "medium": (3, (2, 2), 2), "easy": (2, (1, 2), 1)}
    for combo in combos:
        for suffix in ("", "_robust"):
            prompts = []
            for level, (n_obj, (lo, hi), n_rel) in sizes.items():
                names = rng.sample(IMAG_OBJECTS, n_obj)
                objs = []
                for name in names:
                    o = {"object": name}
                    if "counting" in combo:
                        o["count"] = rng.randint(lo, hi)
                    if "color" in combo:
                        o["color"] = rng.choice(IMAG_COLOURS)
                    objs.append(o)
                scene: dict = {"objects": objs}
                if "spatial" in combo:
                    scene["spatial_relations"] = [[*rng.sample(names, 2)[:1], rng.choice(IMAG_SPATIAL),
                                                   rng.sample(names, 2)[1]] for _ in range(n_rel)]
                if "size" in combo:
                    scene["size_relations"] = [[a, rng.choice(["larger", "smaller"]), b]
                                               for a, b in (rng.sample(names, 2) for _ in range(n_rel))]
                if "emotion" in combo:
                    scene["emotion"] = ["joy"]
                if "text" in combo:
                    scene["text"] = {"word_count": 3, "objects": names[:1]}
                prompts.append({"id": f"prompt_{level}", "skills": list(combo), "level": level, "meta_prompt": "",
                                "scene": scene, "synthetic_prompts": ["(stand-in)"]})
            (folder / f"{'+'.join(combo)}{suffix}.json").write_text(json.dumps({"prompts": prompts}))
    return folder


def _chain(rel: str, k: int, extra: tuple[dict, ...] = ()) -> Spec:
    """One object of each of k classes, each ``rel`` the next (counts = 1, group relations)."""
    names = CHAIN_CLASSES[:k]
    cons = [{"template": "X1/count_cmp", "params": {"A1": _lit("class", c), "T": "=", "K": 1}} for c in names]
    cons += [_group(a, rel, b) for a, b in itertools.pairwise(names)]
    return Spec.from_dict({"domain": "coco", "constraints": [*cons, *extra]})


def _group(a: str, rel: str, b: str) -> dict:
    return {"template": "X4/group_rel_all", "params": {"A1": _lit("class", a), "R1": {"rel": rel, "negated": False},
                                                      "B1": _lit("class", b)}}


CHAIN_CLASSES = ["dog", "cat", "bird", "person", "car", "cup", "book", "chair"]
GENEVAL_WORDS = {"left": "left of", "right": "right of", "above": "above", "below": "below"}


def _geneval_position(a: tuple[float, ...], b: tuple[float, ...]) -> set[str]:
    """GenEval's published position rule (evaluation/evaluate_images.py), written out here."""
    offset = [(a[0] + a[2]) / 2 - (b[0] + b[2]) / 2, (a[1] + a[3]) / 2 - (b[1] + b[3]) / 2]
    dims = [(a[2] - a[0]) + (b[2] - b[0]), (a[3] - a[1]) + (b[3] - b[1])]
    revised = [max(abs(o) - 0.1 * d, 0.0) * (1 if o > 0 else -1 if o < 0 else 0) for o, d in zip(offset, dims,
                                                                                                strict=True)]
    if all(abs(r) < 1e-3 for r in revised):
        return set()
    norm = (offset[0] ** 2 + offset[1] ** 2) ** 0.5
    dx, dy = revised[0] / norm, revised[1] / norm
    return {w for w, ok in (("left of", dx < -0.5), ("right of", dx > 0.5), ("above", dy < -0.5),
                            ("below", dy > 0.5)) if ok}


def box_tables(args: argparse.Namespace) -> None:
    """The box-geometry goals: chains, "inside and above", contradictions, timed one label each."""
    from logicval_hf.common.markdown import md_table

    solver = Solver(max_specs=10_000)
    rows = []
    for rel in ("left", "right", "above", "below", "larger", "smaller", "inside", "contains"):
        times, ok = [], True
        for k in range(2, 9):
            spec = _chain(rel, k)
            t = time.perf_counter()
            r = solver.solve(spec, timeout=args.budget)
            times.append(time.perf_counter() - t)
            boxes = {o["class"]: o.bbox for o in r.witness} if r.witness is not None else {}
            ok &= r.satisfiable and solver.verify(spec, r.witness, label="SAT").ok
            if rel in GENEVAL_WORDS:
                ok &= all(GENEVAL_WORDS[rel] in _geneval_position(boxes[a], boxes[b])
                          for a, b in itertools.pairwise(CHAIN_CLASSES[:k]))
        phrase = load_domain("coco").rules[rel].phrase
        rows.append([f"chains of 2..8, each {phrase} the next", "SAT" if ok else "WRONG", f"{max(times):.3f} s",
                     f"{sum(times):.3f} s"])
    one = tuple({"template": "X1/count_cmp", "params": {"A1": _lit("class", c), "T": "=", "K": 1}}
                for c in ("dog", "cat"))
    cases = [("a dog inside a cat and above it", Spec.from_dict({"domain": "coco", "constraints": [
                 *one, _group("dog", "inside", "cat"), _group("dog", "above", "cat")]}), "SAT"),
             ("a cycle of three, each left of the next", _chain("left", 3, (_group("bird", "left", "dog"),)), "UNSAT"),
             ("left of and right of", Spec.from_dict({"domain": "coco", "constraints": [
                 *one, _group("dog", "left", "cat"), _group("dog", "right", "cat")]}), "UNSAT"),
             ("larger and smaller", Spec.from_dict({"domain": "coco", "constraints": [
                 *one, _group("dog", "larger", "cat"), _group("dog", "smaller", "cat")]}), "UNSAT"),
             ("inside and larger", Spec.from_dict({"domain": "coco", "constraints": [
                 *one, _group("dog", "inside", "cat"), _group("dog", "larger", "cat")]}), "UNSAT")]
    for name, spec, truth in cases:
        t = time.perf_counter()
        r = solver.solve(spec, timeout=args.budget)
        took = time.perf_counter() - t
        label = r.label if r.label == truth else f"WRONG ({r.label})"
        rows.append([name, f"{label} (core {list(r.core)})" if r.core else label, f"{took:.3f} s", ""])
    print("\nBox geometry (coco), each labelled once with its witness or minimal core:")
    print(md_table(["spec", "label", "slowest", "all"], rows))


def open_tables(args: argparse.Namespace) -> None:
    from logicval_hf.common.markdown import md_table

    budget = args.budget
    solver = Solver(max_specs=10_000)
    rows = []
    for family, make, truth in (("UNSAT", count_family_unsat, "UNSAT"), ("SAT", count_family_sat, "SAT")):
        for k in range(2, 11):
            label, took = new_label(solver, make(k), budget)
            assert label == truth, (family, k, label)
            rows.append([f"{'>=K dogs, >=K cats, <=2K-1 dogs or cats' if family == 'UNSAT' else '=K dogs, =K cats'}"
                         f" (K={k})", str(label), f"{took:.3f} s"])
    print("\nOpen-size count families (coco), each labelled once (witness or minimal core):")
    print(md_table(["spec", "label", "time"], rows))

    for name, specs in _peer_specs(args):
        labels: list[str | None] = []
        times: list[float] = []
        cpu = time.process_time()
        for spec in specs:
            label, took = new_label(solver, spec, budget)
            labels.append(label)
            times.append(took)
        done = [t for t, lab in zip(times, labels, strict=True) if lab is not None]
        print(f"\n{name}: {len(specs)} prompts, {labels.count('SAT')} SAT, {labels.count('UNSAT')} UNSAT, "
              f"{labels.count(None)} past the {budget:g} s budget or a solver limit; {sum(times):.2f} s in all "
              f"({time.process_time() - cpu:.2f} s of CPU), slowest {max(done, default=0.0):.3f} s")


def _peer_specs(args: argparse.Namespace) -> list[tuple[str, list[Spec]]]:
    from logicval_hf.benchmark.importers.geneval import read_specs
    from logicval_hf.benchmark.importers.imag_eval import read_source

    out = []
    geneval = Path(args.geneval)
    if geneval.is_file():
        out.append(("GenEval's prompts", [spec for _, _, spec in read_specs(geneval)]))
    else:
        print(f"\n(GenEval's metadata not found at {geneval}: pass --geneval METADATA)")
    if args.imag_eval:
        out.append((f"Imag-Eval's prompts ({args.imag_eval})",
                    [spec for spec, _, _ in read_source(args.imag_eval, skip_unsupported=True)]))
    else:
        tmp = Path(tempfile.mkdtemp())
        specs = [spec for spec, _, _ in read_source(imag_eval_stand_in(tmp), skip_unsupported=True)]
        out.append(("A stand-in of Imag-Eval's prompts (same shape, generated; pass --imag-eval FOLDER for theirs)",
                    specs))
    return out


# ---- repairs --------------------------------------------------------------------------------------
def job_scenes(job: Path, seed: int) -> list[tuple[str, Spec, Scene]]:
    """(generator/id, spec, perceived scene) of the main job's naive and perturbed images (the job runs first,
    resumed)."""
    from logicval_hf.job.run import run

    run(job, generators=["naive", "perturbed"], seed=seed, keep_images="none", progress=False)
    out = []
    for gen in ("naive", "perturbed"):
        for path in sorted((job / "verdicts" / gen).glob("*.json")):
            rec = json.loads(path.read_text(encoding="utf-8"))
            spec = Spec.from_dict(rec["spec_json"])
            out.append((f"{gen}/{rec['id']}", spec, Scene.from_dict(rec["verdict"]["scene"])))
    return out


def single_edit_repair(solver: Solver, spec: Spec, scene: Scene) -> int | None:
    """The baseline: every single edit (each value, each removal, moves and additions on an 8 x 6 lattice of
    centres) verified one by one; 0 or 1 when the scene or one edit satisfies the spec, None otherwise."""
    if solver.verify(spec, scene).ok:
        return 0
    dom, objs = scene.domain, list(scene.objects)
    w, h = scene.image_size
    spots = [(w * (i + 0.5) / 8, h * (j + 0.5) / 6) for i in range(8) for j in range(6)]
    combos = [dict(zip(dom.perceived_attributes, c, strict=True)) for c in itertools.product(
        *(dom.attributes[a] for a in dom.perceived_attributes))]
    candidates = []
    for i, o in enumerate(objs):
        before, after = objs[:i], objs[i + 1:]
        candidates.append(before + after)
        for a in dom.perceived_attributes:
            candidates += [[*before, SceneObject({**o.attributes, a: v}, o.bbox), *after]
                           for v in dom.attributes[a] if v != o.attributes[a]]
        bw, bh = o.bbox[2] - o.bbox[0], o.bbox[3] - o.bbox[1]
        candidates += [[*before, SceneObject(o.attributes, (x - bw / 2, y - bh / 2, x + bw / 2, y + bh / 2)), *after]
                       for x, y in spots]
    candidates += [[*objs, SceneObject(c, (x - 15, y - 15, x + 15, y + 15))] for c in combos for x, y in spots]
    for objects in candidates:
        if solver.verify(spec, Scene(scene.image_size, tuple(objects), dom)).ok:
            return 1
    return None


def repair_table(args: argparse.Namespace) -> None:
    from logicval_hf.repairs import repair

    items = job_scenes(Path(args.repair_job), args.repair_seed)
    solver = Solver(max_specs=10_000, max_verifiers=10_000)
    times, costs, unproven = [], [], 0
    for _, spec, scene in items:
        t = time.perf_counter()
        r = repair(spec, scene, solver=solver)
        times.append(time.perf_counter() - t)
        costs.append(r.cost)
        unproven += not r.optimal
    sample = items[:: args.repair_every]
    base = Solver(max_specs=10_000, max_verifiers=10_000)
    base_times = []
    for _, spec, scene in sample:
        t = time.perf_counter()
        single_edit_repair(base, spec, scene)
        base_times.append(time.perf_counter() - t)

    def stats(v: list[float]) -> str:
        v = sorted(v)
        return (f"median {1000 * v[len(v) // 2]:7.1f} ms  p99 {1000 * v[min(len(v) - 1, int(len(v) * 0.99))]:7.1f} ms"
                f"  max {1000 * v[-1]:7.1f} ms")

    print(f"repair {len(items)} perceived scenes (the main job's naive and perturbed images of its "
          f"{len(items) // 2} specs; costs 0..{max(costs)}, {unproven} past the default budget)")
    print(f"  repair (one optimisation, exact)      : {stats(times)}")
    print(f"  every single edit verified ({len(sample)} timed): {stats(base_times)}   ratio of medians "
          f"{sorted(base_times)[len(base_times) // 2] / sorted(times)[len(times) // 2]:5.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", type=int, default=509, help="number of random specs to label (default 509)")
    ap.add_argument("--scenes", type=int, default=10_000, help="number of scene graphs to verify (default 10000)")
    ap.add_argument("--naive-sample", type=int, default=1000,
                    help="verify calls timed for the naive baseline (extrapolated per call; default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--geneval", default=str(GENEVAL),
                    help="GenEval's prompts/evaluation_metadata.jsonl (default: "
                         "$LOGICVAL_SHARED_DATA/peers/geneval/evaluation_metadata.jsonl; skipped when absent)")
    ap.add_argument("--imag-eval", metavar="FOLDER", help="Imag-Eval's outputs/prompts folder (default: a stand-in)")
    ap.add_argument("--budget", type=float, default=20.0, help="the solver's budget per spec in seconds (default 20)")
    ap.add_argument("--repair-job", default="bench_solver_job", metavar="DIR",
                    help="the main job's folder for the repair table (run there first, resumed)")
    ap.add_argument("--repair-seed", type=int, default=509, help="the main job's benchmark seed (default 509)")
    ap.add_argument("--repair-every", type=int, default=10, metavar="K",
                    help="time the single-edit baseline on every K-th scene (default 10)")
    ap.add_argument("--only", choices=("clevr", "open", "repair"), help="run one part only")
    args = ap.parse_args()
    if args.only in (None, "clevr"):
        clevr_tables(args)
    if args.only in (None, "open"):
        box_tables(args)
        open_tables(args)
    if args.only in (None, "repair"):
        repair_table(args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
