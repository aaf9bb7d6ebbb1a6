"""Verification of large scene graphs: time and peak memory of ``Solver.verify`` against the encoding every scene
went through before (measured in the same run).

For each size (default 100, 500 and 2,000 objects) a random CLEVR scene of that many objects is verified against
``--specs`` random 6-constraint specs (one constraint of six distinct classes, n in 3..9, as the benchmark's 6SAT
rows), each verification in a fresh process so that its peak resident memory is its own:

* **now**: ``Solver().verify(spec, scene)``: above ``REUSED_GROUNDING_UP_TO`` objects, facts in a grounding of their
  own whose time grows with the tuples of objects the spec's literals admit; a scene over ``MAX_SCENE_OBJECTS`` is
  refused at `Scene` (the time to refuse it is what is shown);
* **before**: the reused grounding over scene externals at any size (`SceneLayout` and `ScenesVerifier`: a table of
  n x n atoms per relation, constraint rules grounded over every tuple of objects), with the object bound lifted in
  its process; stopped after ``--old-timeout`` seconds or at ``--old-memory-gb`` of address space.

    python benchmarks/bench_verify_scale.py [--sizes 100 500 2000] [--specs 3] [--old-timeout 300]
        [--old-memory-gb 8] [--seed 0]

Prints one row per size: the median and largest time and peak memory of both, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import resource
import statistics
import sys
import time
from typing import Any

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.scene import MAX_SCENE_OBJECTS
from logicval_hf.contract.spec import Spec


def six_constraint_spec(rng: random.Random) -> dict[str, Any]:
    cat = load_catalog()
    n = rng.randint(3, 9)
    cons = [random_constraint(rng.choice(cat.by_class(c)), n, rng).to_dict() for c in rng.sample(cat.classes, 6)]
    return Spec.from_dict({"n": n, "constraints": cons}).to_dict()


def scene_dict(size: int, rng: random.Random) -> dict[str, Any]:
    dom = load_catalog().domain
    objs = []
    for _ in range(size):
        cx, cy = rng.uniform(10, 470), rng.uniform(10, 310)
        objs.append({**{a: rng.choice(dom.attributes[a]) for a in dom.perceived_attributes},
                     "bbox": [cx - 10, cy - 10, cx + 10, cy + 10]})
    return {"image_size": [480, 320], "objects": objs}


def _now(spec: dict[str, Any], scene: dict[str, Any]) -> tuple[float, str]:
    from logicval_hf.asp.solver import Solver
    from logicval_hf.contract.scene import Scene
    from logicval_hf.errors import SceneError

    solver = Solver()
    solver.catalog.template("C1/1prop")  # the catalog loaded before the clock starts, as in a running process
    start = time.perf_counter()
    try:
        verdict = solver.verify(spec, Scene.from_dict(scene), label="SAT")
    except SceneError as e:
        return time.perf_counter() - start, f"refused: {e}"
    return time.perf_counter() - start, f"violated {list(verdict.violated)}"


def _before(spec: dict[str, Any], scene: dict[str, Any]) -> tuple[float, str]:
    import logicval_hf.contract.scene as scene_module
    from logicval_hf.asp.verifier import SceneLayout, ScenesVerifier
    from logicval_hf.contract.spec import as_spec

    scene_module.MAX_SCENE_OBJECTS = 10**9  # the encoding before had no bound
    start = time.perf_counter()
    s, sc = as_spec(spec), scene_module.Scene.from_dict(scene)
    universe = max(s.n or 0, len(sc), 1)
    _, violated = ScenesVerifier(s, SceneLayout(universe, s.domain)).check(sc)
    return time.perf_counter() - start, f"violated {sorted(violated)}"


def _measure(which: str, spec: dict[str, Any], scene: dict[str, Any], out: Any, memory_gb: float | None) -> None:
    if memory_gb is not None:  # the encoding before grows past any machine's memory (18 GB at 300 objects)
        cap = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    try:
        seconds, answer = (_now if which == "now" else _before)(spec, scene)
    except (MemoryError, RuntimeError) as e:  # clingo reports std::bad_alloc as a RuntimeError
        out.send((None, None, f"stopped: {type(e).__name__} under the {memory_gb:g} GB cap"))
        return
    out.send((seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, answer))


def measure(which: str, spec: dict[str, Any], scene: dict[str, Any], timeout: float | None,
            memory_gb: float | None = None) -> tuple[Any, ...]:
    """(seconds, peak MB, answer) of one verification in a fresh process (its address space capped at
    ``memory_gb``); (None, None, why) when it was stopped by ``timeout`` or the cap."""
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_measure, args=(which, spec, scene, send, memory_gb))
    proc.start()
    send.close()
    try:
        if receive.poll(timeout):
            return receive.recv()
        return None, None, f"stopped after {timeout:g} s"
    except EOFError:  # the process ended without an answer (killed for memory)
        return None, None, f"stopped: ended under the {memory_gb:g} GB cap"
    finally:
        proc.kill()
        proc.join()


def _cell(results: list[tuple[Any, ...]], timeout: float) -> str:
    done = [r for r in results if r[0] is not None]
    if not done:
        return results[0][2] if results else "-"
    times = [r[0] for r in done]
    text = (f"{statistics.median(times):.3f} s (max {max(times):.3f}), "
            f"{max(r[1] for r in done):.0f} MB")
    if len(done) < len(results):
        text += f"; {len(results) - len(done)} stopped at {timeout:g} s"
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 2000], help="objects per scene")
    p.add_argument("--specs", type=int, default=3, help="random 6-constraint specs per size (now)")
    p.add_argument("--old-specs", type=int, default=1, help="of those, how many the encoding before verifies")
    p.add_argument("--old-timeout", type=float, default=300.0, help="seconds before a verification before is stopped")
    p.add_argument("--old-memory-gb", type=float, default=8.0,
                   help="address-space cap of a verification before (it took 18 GB at 300 objects)")
    p.add_argument("--seed", type=int, default=0, help="seed of the specs and scenes")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    print(f"objects per scene at most: {MAX_SCENE_OBJECTS}; {args.specs} random 6-constraint specs per size, "
          f"{args.old_specs} of them also through the encoding before")
    print(f"{'objects':>8} | {'now: median time (max), peak memory':<42} | {'before':<42} | ratio | answers agree")
    for size in args.sizes:
        scene = scene_dict(size, rng)
        specs = [six_constraint_spec(rng) for _ in range(args.specs)]
        now = [measure("now", s, scene, None) for s in specs]
        before = [measure("before", s, scene, args.old_timeout, args.old_memory_gb) for s in specs[:args.old_specs]]
        agree = all(b[2] == n[2] for n, b in zip(now, before, strict=False) if b[0] is not None)
        ratio = "-"
        done = [b[0] for b in before if b[0] is not None]
        if done and not now[0][2].startswith("refused"):
            ratio = f"x{statistics.median(done) / statistics.median(r[0] for r in now[:len(done)]):.0f}"
        compared = any(b[0] is not None for b in before) and not now[0][2].startswith("refused")
        verdicts = ("yes" if agree else "NO") if compared else "-"
        refused = f"  [{now[0][2]}]" if now[0][2].startswith("refused") else ""
        print(f"{size:>8} | {_cell(now, 0):<42} | {_cell(before, args.old_timeout):<42} | {ratio:>5} | "
              f"{verdicts}{refused}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
