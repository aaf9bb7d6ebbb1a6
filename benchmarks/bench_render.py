"""Renderer speed: images/s at 480x320 for random CLEVR-style scenes of 3-9 objects (goal: >= 10 on 2 cores).

    python benchmarks/bench_render.py [--images 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time

from logicval_hf import Scene, SceneObject, load_catalog
from logicval_hf.generation.render import render_scene


def random_scene(rng: random.Random, k: int) -> Scene:
    dom = load_catalog().domain
    objs = []
    for _ in range(k):
        cx, cy = rng.uniform(20, 460), rng.uniform(20, 300)
        objs.append(SceneObject({a: rng.choice(dom.attributes[a]) for a in dom.perceived_attributes},
                                (cx - 10, cy - 10, cx + 10, cy + 10)))
    return Scene((480, 320), tuple(objs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=100, help="number of scenes to render (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    scenes = [random_scene(rng, rng.randint(3, 9)) for _ in range(args.images)]
    render_scene(scenes[0])
    t = time.perf_counter()
    for i, s in enumerate(scenes):
        render_scene(s, (480, 320), seed=i)
    dt = time.perf_counter() - t
    print(f"rendered {len(scenes)} scenes at 480x320 in {dt:.2f} s: {len(scenes) / dt:.1f} images/s")


if __name__ == "__main__":
    main()
