"""Measure the ``clevr`` perception backend on the CLEVR dev images against their official ground truth.

    python benchmarks/clevr_perception.py [DATA_DIR] [--split test|train|all] [--jobs 2] [--worst 10] [--json out.json]
    python benchmarks/clevr_perception.py --rendered 300 [--seed 2001] [--min-objects 3] [--max-objects 9]
    python benchmarks/clevr_perception.py --oracle varied|raw

``--rendered N``: instead of CLEVR, N fresh scenes drawn by the project's renderer (``logicval_hf.render``,
random layouts as in train_clevr.rendered_scenes; every 4th at 320x240); truth is the drawn scene (tight boxes,
attributes; regions from the drawn box centres). The seed must differ from the training seed (RENDER_SEED).
``--oracle varied|raw``: the main job's oracle images of the default benchmark's SAT specs (witnesses with
their free attributes varied, as ``logicval run`` draws them, or the solver's raw witnesses); truth = the drawn
scene. ``--model FILE`` measures another model file.

DATA_DIR defaults to ../shared/data/clevr_dev relative to the repository root. The split comes from
logicval_hf/perception/clevr_dev_split.json; the backend's heads were trained on "train" only, so figures on
"test" are held-out figures.

Matching: predicted box centres are matched to the true ``pixel_coords`` (projected 3D centres) by the
Hungarian method; pairs farther apart than 8 % of the image width count as unmatched.
Truth regions come from ``pixel_coords`` (regions.md §6 rule applied to the true centre); predicted regions from
the predicted box centre.

Printed: count accuracy, per-attribute accuracy on matched objects (and detection precision / recall), region
accuracy, exact scene-graph rate (right count and every object's colour, shape, material and region right),
images/s (wall clock over the whole split, image decoding included, with --jobs worker processes), and the
worst images.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from logicval_hf.perception import extract_scenes  # noqa: E402
from logicval_hf.perception.train_clevr import (  # noqa: E402
    ATTRS, RENDER_SEED, load_split, match, match_radius, rendered_scenes,
)
from logicval_hf.spatial import region_of  # noqa: E402


def evaluate(data: Path, split: str, jobs: int, **settings) -> dict:
    scenes = load_split(data, split)
    paths = [data / "images" / s["image_filename"] for s in scenes]
    t0 = time.perf_counter()
    preds = extract_scenes(paths, backend="clevr", n_jobs=jobs, **settings)
    elapsed = time.perf_counter() - t0
    return score(scenes, preds, elapsed, split, jobs)


def evaluate_rendered(n: int, seed: int, jobs: int, min_objects: int = 3, max_objects: int = 9,
                      small_every: int = 4, **settings) -> dict:
    """Fresh scenes drawn by the project's renderer (``train_clevr.rendered_scenes(n, seed, ...)``); truth =
    the drawn scene (tight boxes, attributes); truth regions from the drawn box centres. Pick a ``seed`` the
    model was not trained on (training uses seed ``RENDER_SEED`` of train_clevr.py)."""
    scenes = rendered_scenes(n, seed, min_objects, max_objects, small_every)
    t0 = time.perf_counter()
    preds = extract_scenes([s["_rgb"] for s in scenes], backend="clevr", n_jobs=jobs, **settings)
    elapsed = time.perf_counter() - t0
    return score(scenes, preds, elapsed, f"rendered(n={n}, seed={seed}, {min_objects}-{max_objects} objects)", jobs)


def evaluate_oracle(witness: str, jobs: int, **settings) -> dict:
    """The main job's oracle images of every SAT spec of the default benchmark (``witness="varied"``: the
    default oracle, free attributes re-drawn; ``"raw"``: the solver's witness as is); truth = the drawn scene."""
    from logicval_hf.benchmark import cached_benchmark
    from logicval_hf.generators import OracleGenerator

    gen = OracleGenerator(vary_witness=witness == "varied")
    scenes = []
    for row in cached_benchmark().all_rows():
        if row["label"] != "SAT":
            continue
        image, drawn, _ = gen.generate(row)
        W, H = image.size
        objs = [{"pixel_coords": [*o.center, 0.0], **{a: o.attributes[a] for a in ATTRS}} for o in drawn.objects]
        scenes.append({"image_filename": f"{row['id']}.png", "image_width": W, "image_height": H,
                       "objects": objs, "_rgb": np.asarray(image), "_scene": drawn})
    t0 = time.perf_counter()
    preds = extract_scenes([s["_rgb"] for s in scenes], backend="clevr", n_jobs=jobs, **settings)
    elapsed = time.perf_counter() - t0
    return score(scenes, preds, elapsed, f"oracle images of the {len(scenes)} SAT specs ({witness} witnesses)", jobs)


def score(scenes: list[dict], preds: list, elapsed: float, split: str, jobs: int) -> dict:
    n_img = len(scenes)
    count_ok = exact = 0
    n_true = n_pred = n_match = 0
    attr_ok = Counter()
    region_ok = 0
    confusions = {a: Counter() for a in ATTRS}
    per_image = []
    for s, p in zip(scenes, preds):
        W, H = s["image_width"], s["image_height"]
        truth = s["objects"]
        tc = np.array([o["pixel_coords"][:2] for o in truth], float)
        pc = np.array([o.center for o in p.objects], float).reshape(-1, 2)
        pairs = match(pc, tc, match_radius(W))
        n_true += len(truth)
        n_pred += len(p.objects)
        n_match += len(pairs)
        errors = []
        all_right = len(pairs) == len(truth) == len(p.objects)
        for i, j in pairs:
            for a in ATTRS:
                pv, tv = p.objects[i].attributes[a], truth[j][a]
                if pv == tv:
                    attr_ok[a] += 1
                else:
                    all_right = False
                    confusions[a][(tv, pv)] += 1
                    errors.append(f"obj@{tuple(truth[j]['pixel_coords'][:2])} {a}: {tv} -> {pv}")
            tr = region_of(*tc[j], W, H)
            pr = p.region(i)
            if tr == pr:
                region_ok += 1
            else:
                all_right = False
                errors.append(f"obj@{tuple(truth[j]['pixel_coords'][:2])} region: {tr} -> {pr}")
        if len(p.objects) == len(truth):
            count_ok += 1
        else:
            errors.insert(0, f"count: {len(truth)} true, {len(p.objects)} predicted")
        missed = [j for j in range(len(truth)) if j not in {b for _, b in pairs}]
        for j in missed:
            o = truth[j]
            errors.append(f"missed {o['color']} {o['material']} {o['shape']} ({o.get('size', '-')}) @{tuple(o['pixel_coords'][:2])}")
        extra = [i for i in range(len(p.objects)) if i not in {a for a, _ in pairs}]
        for i in extra:
            errors.append(f"spurious box {[round(v) for v in p.objects[i].bbox]} score={p.objects[i].score}")
        exact += all_right
        per_image.append({"image": s["image_filename"], "n_true": len(truth), "n_pred": len(p.objects),
                          "n_errors": len(errors), "exact": all_right, "errors": errors})
    res = {
        "split": split, "images": n_img, "objects_true": n_true, "objects_pred": n_pred,
        "count_accuracy": count_ok / n_img,
        "detection_recall": n_match / max(n_true, 1), "detection_precision": n_match / max(n_pred, 1),
        "attribute_accuracy_on_matched": {a: attr_ok[a] / max(n_match, 1) for a in ATTRS},
        "region_accuracy_on_matched": region_ok / max(n_match, 1),
        "exact_scene_graph_rate": exact / n_img,
        "images_per_second": n_img / elapsed, "jobs": jobs,
        "confusions": {a: {f"{t}->{q}": c for (t, q), c in confusions[a].most_common(8)} for a in ATTRS},
        "per_image": per_image,
    }
    # by scene size
    by_n = {}
    for r in per_image:
        b = by_n.setdefault(r["n_true"], [0, 0])
        b[0] += 1
        b[1] += r["exact"]
    res["exact_by_object_count"] = {str(k): f"{v[1]}/{v[0]}" for k, v in sorted(by_n.items())}
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=REPO.parent / "shared" / "data" / "clevr_dev")
    ap.add_argument("--split", default="test", choices=["test", "train", "all"])
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--worst", type=int, default=10)
    ap.add_argument("--json", type=Path, help="write the full result (per image) here")
    ap.add_argument("--rendered", type=int, metavar="N",
                    help="instead of CLEVR: N fresh scenes drawn by logicval_hf.render (3-9 objects)")
    ap.add_argument("--seed", type=int, default=RENDER_SEED + 1000,
                    help=f"layout/render seed of --rendered (default {RENDER_SEED + 1000}; training uses {RENDER_SEED})")
    ap.add_argument("--model", help="model file (default: the shipped clevr_model.npz)")
    ap.add_argument("--oracle", choices=["varied", "raw"],
                    help="instead of CLEVR: the main job's oracle images of the SAT specs (varied or raw witnesses)")
    ap.add_argument("--min-objects", type=int, default=3)
    ap.add_argument("--max-objects", type=int, default=9)
    args = ap.parse_args(argv)
    settings = {"model_path": args.model} if args.model else {}
    if args.oracle:
        r = evaluate_oracle(args.oracle, args.jobs, **settings)
    elif args.rendered:
        if args.seed == RENDER_SEED:
            ap.error(f"--seed {RENDER_SEED} is the training seed; pick another")
        r = evaluate_rendered(args.rendered, args.seed, args.jobs, args.min_objects, args.max_objects, **settings)
    else:
        r = evaluate(args.data, args.split, args.jobs, **settings)
    name = "renders" if args.rendered or args.oracle else args.data.name
    print(f"clevr backend on {name} split={r['split']}: {r['images']} images, "
          f"{r['objects_true']} true objects, {r['objects_pred']} predicted")
    print(f"  count accuracy            {r['count_accuracy']:.3f}")
    print(f"  detection recall/precision {r['detection_recall']:.3f} / {r['detection_precision']:.3f}")
    for a, v in r["attribute_accuracy_on_matched"].items():
        print(f"  {a:9s} acc (matched)    {v:.3f}")
    print(f"  region acc (matched)      {r['region_accuracy_on_matched']:.3f}")
    print(f"  exact scene-graph rate    {r['exact_scene_graph_rate']:.3f}   by #objects: {r['exact_by_object_count']}")
    print(f"  speed                     {r['images_per_second']:.1f} images/s with {r['jobs']} worker(s)")
    for a, c in r["confusions"].items():
        if c:
            print(f"  {a} confusions (true->pred): {c}")
    worst = sorted(r["per_image"], key=lambda x: -x["n_errors"])[: args.worst]
    print(f"worst {len(worst)} images:")
    for w in worst:
        if w["n_errors"]:
            print(f"  {w['image']} ({w['n_true']} true, {w['n_pred']} pred): " + "; ".join(w["errors"][:6]))
    if args.json:
        args.json.write_text(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
