"""Self-correction, measured: for every naive and perturbed image of the main job, the perceived scene -> repair ->
the built-in renderer applies the edits (it draws the repaired scene: numpy, or Blender with --renderer blender)
-> perceive the edited image -> verify (`logicval_hf.repairs.loop`).

Reports per generator and label the share of images that satisfy their spec after one round, the mean number of
edits and the repair costs (for the perturbed generator, one minimal break by construction, their distribution).
The main job runs first in --job (resumed: an existing run is reused); the corrections are written to --out
(``<generator>.json``, after every chunk, atomically) and a second run picks up where the first stopped.

    python benchmarks/self_correct.py [--job DIR] [--out DIR] [--limit K] [--seed 509] [--backend clevr]
        [--renderer numpy|blender] [--assets DIR] [--generators naive perturbed]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.generation.builtin import make_generator, seed_for
from logicval_hf.job.run import run
from logicval_hf.perception import extract_scenes
from logicval_hf.repairs.loop import CHUNK, Correction, correct, summarise


def _items(job: Path, generator: str) -> list[tuple[str, Spec, Scene]]:
    """(id, spec, perceived scene) of every image the job scored for ``generator``."""
    out = []
    for path in sorted((job / "verdicts" / generator).glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        spec = as_spec(rec["spec_json"])
        out.append((rec["id"], spec, Scene.from_dict(rec["verdict"]["scene"], spec.domain)))
    return out


def _table(results: dict[str, dict]) -> str:
    lines = ["| generator | label | images | right before | fixed after one round | mean edits | median cost | "
             "repair costs (cost: images) |", "|---|---|---|---|---|---|---|---|"]
    for gen, by_label in results.items():
        for label, s in by_label.items():
            if not s["n"]:
                continue
            costs = ", ".join(f"{k}: {v}" for k, v in s["costs"].items())
            lines.append(f"| {gen} | {label} | {s['n']} | {s['right_before']} | {s['fixed']} "
                         f"({100 * s['fixed_share']:.1f} %) | {s['mean_edits']:.2f} | {s['median_cost']:g} | "
                         f"{costs} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", default="self_correct_job", help="the main job's folder (run there first, resumed)")
    ap.add_argument("--out", default="self_correct", help="folder of the corrections (resumed)")
    ap.add_argument("--generators", nargs="+", default=["naive", "perturbed"])
    ap.add_argument("--limit", type=int, default=None, help="only K specs per package (quick runs)")
    ap.add_argument("--seed", type=int, default=509, help="benchmark seed (default 509, the main job's)")
    ap.add_argument("--backend", default="clevr", help="perception backend (default clevr)")
    ap.add_argument("--renderer", choices=("numpy", "blender"), default="numpy", help="the image editor")
    ap.add_argument("--assets", default=None, help="CLEVR assets folder for --renderer blender")
    ap.add_argument("--timeout", type=float, default=None, help="budget per repair (default: repair's own)")
    args = ap.parse_args()

    job, out = Path(args.job), Path(args.out)
    run(job, generators=args.generators, seed=args.seed, backend=args.backend, limit=args.limit,
        keep_images="none", progress=True)
    results = {}
    for gen in args.generators:
        editor = make_generator("oracle", seed=args.seed, renderer=args.renderer, assets=args.assets)
        done_path = out / f"{gen}.json"
        done = json.loads(done_path.read_text(encoding="utf-8")) if done_path.is_file() else {}
        items = [it for it in _items(job, gen) if it[0] not in done]

        def edit(rid: str, r, gen: str = gen, editor=editor):
            return editor.render(r.scene, seed_for("self-correct", gen, rid))[0]

        def perceive(images: list) -> list[Scene]:
            return extract_scenes(images, backend=args.backend)

        with tqdm(total=len(items), desc=f"self-correct/{gen}", file=sys.stderr) as bar:
            for start in range(0, len(items), CHUNK):
                chunk = items[start:start + CHUNK]
                for c in correct(chunk, edit, perceive, timeout=args.timeout):
                    done[c.id] = c.to_dict()
                bar.update(len(chunk))
                atomic_write_json(done_path, done, indent=1)
        corrections = [Correction.from_dict(d) for d in done.values()]
        results[gen] = summarise(corrections)
    atomic_write_json(out / "summary.json", results, indent=1)
    print(_table(results))


if __name__ == "__main__":
    main()
