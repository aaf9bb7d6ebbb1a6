"""Measure a perception backend on real text-to-image outputs: the development set of ``benchmarks/real_t2i``.

    python benchmarks/real_t2i_perception.py --images DIR                      # the table, dev and held out
    python benchmarks/real_t2i_perception.py --images DIR --min-confidence 0.5 # what is read at >= 0.5
    python benchmarks/real_t2i_perception.py --images DIR --separation         # dev only: what tells right from wrong
    python benchmarks/real_t2i_perception.py --images DIR --backend neural --set detector=DIR ...

``DIR`` (default ``$LOGICVAL_REAL_T2I``) holds the images ``benchmarks/real_t2i/rebuild.py`` wrote; each is
checked against the manifest's digests first (``--no-verify`` skips that). The truth is the manifest's labels,
made by eye (``benchmarks/real_t2i/README.md``): every object the image shows, reflections never, objects outside
the domain's vocabulary included in the count.

Per part (``dev``: the part choices may look at; ``heldout``: only ever measured; a part is whole source
repositories), printed and written with ``--json``:

* **count**: the number of objects read equals the number labelled (every image); **count (vocab.)**: equals the
  number of objects inside the vocabulary (objects outside it, a cone or a black ball, treated as distractors the
  reading should skip; differs from count only on images that show such objects);
* **colour+shape**: the multiset of (colour, shape) read equals the labelled one, over the images whose objects
  are all in the vocabulary with colour and shape decided (``n`` in brackets);
* **material**: the multiset of (colour, shape, material) read equals the labelled one, over the images whose
  every object also has its material labelled;
* **right**: count right and, where colour+shape is judged, colour+shape right (materials not judged);
* **conf>=0.5**: how many readings have scene confidence >= 0.5 and how many of those are right; ECE of the
  confidence against ``right`` (10 bins) and its AUROC (the chance that a right reading is more confident than a
  wrong one);
* by kind (the manifest's ``kinds``: glossy floors, coloured light, glass, stacking...): the same figures, and
  the count errors split into too many and too few;
* ``--min-confidence T``: the images read with confidence >= T (the rest are what a user would set apart as
  unread), their share, and count, colour+shape and right on those; without it a sweep over a few thresholds.

``--separation`` (the dev part only; the held-out part is never looked at for choices): for each feature of the
reading (the scene confidence, detection scores, attribute probabilities, boxes touching the frame or each other,
candidate peaks below the threshold, the image's size, sharpness and colour cast), its AUROC for right against
wrong and its mean on each side, to inform a better confidence. A report, not a fitted rule.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SET_DIR = REPO / "benchmarks" / "real_t2i"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(SET_DIR))
sys.path.insert(0, str(REPO / "benchmarks"))

from clevr_perception import backend_settings  # noqa: E402
from manifest import KINDS, MANIFEST, SPLITS, file_name, in_vocabulary, load_valid  # noqa: E402
from rebuild import OUT_ENV, verify_file  # noqa: E402

from logicval_hf import Scene  # noqa: E402
from logicval_hf.perception import extract_scenes, load_image  # noqa: E402

#: thresholds of the confidence sweep printed without ``--min-confidence``
SWEEP = (0.1, 0.25, 0.5, 0.75, 0.9)


# ---- truth and reading ---------------------------------------------------------------------------------------
def judged(entry: dict[str, Any], attrs: Sequence[str]) -> bool:
    """Whether ``attrs`` of every object of ``entry`` can be judged: all in the vocabulary, all decided."""
    return all(in_vocabulary(o) and all(o.get(a) is not None for a in attrs) for o in entry["objects"])


def multiset(objects: Sequence[Any], attrs: Sequence[str]) -> Counter:
    return Counter(tuple(o[a] for a in attrs) for o in objects)


def grade(entry: dict[str, Any], scene: Scene) -> dict[str, Any]:
    """One image's figures: its truth and reading side by side (None where a figure is not judged)."""
    read = [dict(o.attributes) for o in scene.objects]
    n_true, n_read = len(entry["objects"]), len(read)
    cs = multiset(read, ("color", "shape")) == multiset(entry["objects"], ("color", "shape")) \
        if judged(entry, ("color", "shape")) else None
    mat = multiset(read, ("color", "shape", "material")) == multiset(entry["objects"], ("color", "shape", "material")) \
        if judged(entry, ("color", "shape", "material")) else None
    count = n_read == n_true
    n_vocab = sum(in_vocabulary(o) for o in entry["objects"])
    return {"id": entry["id"], "split": entry["split"], "source_group": entry["source_group"], "model": entry["model"],
            "kinds": entry["kinds"], "count_true": n_true, "count_read": n_read, "count": count,
            "count_vocabulary": n_read == n_vocab,
            "colour_shape": cs, "material": mat, "right": count and cs is not False,
            "confidence": scene.confidence,
            "read": [{k: v for k, v in o.items() if k in ("color", "shape", "material")} for o in read]}


# ---- figures -------------------------------------------------------------------------------------------------
def share(rows: Sequence[dict[str, Any]], key: str) -> tuple[float | None, int]:
    """(share of ``True`` among the rows where ``key`` is judged, how many are judged)."""
    vals = [r[key] for r in rows if r[key] is not None]
    return (sum(vals) / len(vals) if vals else None), len(vals)


def confidence_figures(rows: Sequence[dict[str, Any]], threshold: float = 0.5) -> dict[str, Any]:
    conf = [r["confidence"] for r in rows]
    if not rows or any(c is None for c in conf):
        return {"confident": None, "confident_right": None, "ece": None, "auroc": None}
    from logicval_hf.scoring.meta.statistics import roc_auc
    from logicval_hf.training.parser_fit import expected_calibration_error

    c = np.array(conf, float)
    right = np.array([r["right"] for r in rows], float)
    sure = c >= threshold
    return {"confident": int(sure.sum()), "confident_right": int(right[sure].sum()),
            "ece": expected_calibration_error(c, right), "auroc": roc_auc(c, right.astype(int))}


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"images": len(rows)}
    for key in ("count", "count_vocabulary", "colour_shape", "material", "right"):
        out[key], out[f"{key}_n"] = share(rows, key)
    out["too_many"] = sum(r["count_read"] > r["count_true"] for r in rows)
    out["too_few"] = sum(r["count_read"] < r["count_true"] for r in rows)
    return {**out, **confidence_figures(rows)}


def at_threshold(rows: Sequence[dict[str, Any]], t: float) -> dict[str, Any]:
    """The images read with confidence >= ``t`` (the others set apart as unread) and the figures on those."""
    kept = [r for r in rows if r["confidence"] is not None and r["confidence"] >= t]
    out: dict[str, Any] = {"threshold": t, "images": len(rows), "read": len(kept),
                           "read_share": len(kept) / len(rows) if rows else None}
    for key in ("count", "colour_shape", "right"):
        out[key], out[f"{key}_n"] = share(kept, key)
    return out


def by_kind(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: summary([r for r in rows if k in r["kinds"]]) for k in KINDS if any(k in r["kinds"] for r in rows)}


def by_field(rows: Sequence[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    return {v: summary([r for r in rows if r[field] == v]) for v in sorted({r[field] for r in rows})}


# ---- what tells a right reading from a wrong one ---------------------------------------------------------------
def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def reading_features(rgb: np.ndarray, scene: Scene, candidates: Sequence[float] | None) -> dict[str, float]:
    """Features of one reading and its image (what a better confidence could use). ``candidates``: the heat of
    the peaks below the detection threshold (clevr backend), or None."""
    import cv2

    h, w = rgb.shape[:2]
    objs = scene.objects
    scores = [o.score for o in objs if o.score is not None]
    top = {a: [max(p.values()) for o in objs if o.probs and (p := o.probs.get(a))]
           for a in ("color", "shape", "material")}
    boxes = [o.bbox for o in objs]
    touching = [b for b in boxes if b[0] <= 2 or b[1] <= 2 or b[2] >= w - 2 or b[3] >= h - 2]
    ious = [_iou(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]]
    stacked = sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1:]
                  if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 * min(a[2] - a[0], b[2] - b[0])
                  and (abs(a[3] - b[1]) < 0.15 * (a[3] - a[1]) or abs(b[3] - a[1]) < 0.15 * (b[3] - b[1])))
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    k = max(1, min(h, w) // 10)
    border = np.concatenate([rgb[:k].reshape(-1, 3), rgb[-k:].reshape(-1, 3), rgb[:, :k].reshape(-1, 3),
                             rgb[:, -k:].reshape(-1, 3)]).astype(float)
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    f = {
        "confidence": float(scene.confidence) if scene.confidence is not None else float("nan"),
        "objects_read": float(len(objs)),
        "min_detection_score": min(scores) if scores else 1.0,
        "mean_detection_score": float(np.mean(scores)) if scores else 1.0,
        "min_colour_prob": min(top["color"]) if top["color"] else 1.0,
        "min_shape_prob": min(top["shape"]) if top["shape"] else 1.0,
        "min_material_prob": min(top["material"]) if top["material"] else 1.0,
        "max_box_iou": max(ious) if ious else 0.0,
        "stacked_box_pairs": float(stacked),
        "boxes_touching_frame": float(len(touching)),
        "largest_box_share": max(((b[2] - b[0]) * (b[3] - b[1]) / (w * h) for b in boxes), default=0.0),
        "image_long_side": float(max(h, w)),
        "sharpness": float(cv2.Laplacian(grey, cv2.CV_64F).var()),
        "border_colour_cast": float(np.abs(border.mean(0) - border.mean()).max()),
        "mean_saturation": float(hsv[..., 1].mean()),
        "mean_brightness": float(grey.mean()),
    }
    if candidates is not None:
        f["candidate_peaks"] = float(len(candidates))
        f["max_candidate_heat"] = max(candidates, default=0.0)
    return f


def candidate_peaks(images: Sequence[np.ndarray], settings: dict[str, Any]) -> list[list[float]] | None:
    """Per image the heat of the shipped parser's candidate peaks below its threshold (None: not the default
    files, or settings the detect call does not take)."""
    if set(settings) - {"threads"}:
        return None
    from logicval_hf.perception.scene_parser import load_model

    model = load_model(threads=settings.get("threads"))
    return [[c.score for c in cands] for _, cands in model.detect(list(images))]


def separation(rows: Sequence[dict[str, Any]], feats: Sequence[dict[str, float]]) -> list[dict[str, Any]]:
    """Per feature: AUROC for right vs wrong (0.5: no information; below 0.5: lower values go with right), the
    means on each side; sorted by how far the AUROC is from 0.5."""
    from logicval_hf.scoring.meta.statistics import roc_auc

    right = np.array([r["right"] for r in rows], int)
    out = []
    for name in feats[0]:
        v = np.array([f[name] for f in feats], float)
        ok = np.isfinite(v)
        auc = roc_auc(v[ok], right[ok]) if ok.any() else None
        out.append({"feature": name, "auroc": auc,
                    "mean_right": float(v[ok & (right == 1)].mean()) if (ok & (right == 1)).any() else None,
                    "mean_wrong": float(v[ok & (right == 0)].mean()) if (ok & (right == 0)).any() else None})
    return sorted(out, key=lambda d: -abs((d["auroc"] if d["auroc"] is not None else 0.5) - 0.5))


# ---- printing ----------------------------------------------------------------------------------------------
def _f(v: float | None, n: int | None = None) -> str:
    s = "  -  " if v is None else f"{v:.3f}"
    return s if n is None else f"{s} ({n})"


def print_table(title: str, groups: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(f"{'':28s} {'images':>6s}  {'count':>5s}  {'vocab.':>6s}  {'colour+shape':>12s}  {'material':>11s}  "
          f"{'right':>5s}  {'+/-':>5s}  {'conf>=0.5 right':>15s}  {'ECE':>5s}  {'AUROC':>5s}")
    for name, s in groups.items():
        conf = "  -" if s["confident"] is None else f"{s['confident_right']:>3d} / {s['confident']:<3d}"
        print(f"{name[:28]:28s} {s['images']:6d}  {_f(s['count'])}  {_f(s['count_vocabulary']):>6s}  "
              f"{_f(s['colour_shape'], s['colour_shape_n']):>12s}"
              f"  {_f(s['material'], s['material_n']):>11s}  {_f(s['right'])}  {s['too_many']:>2d}/{s['too_few']:<2d}"
              f"  {conf:>15s}  {_f(s['ece'])}  {_f(s['auroc'])}")


def print_thresholds(part: str, views: Sequence[dict[str, Any]]) -> None:
    print(f"\n{part}: images read with confidence >= T (the rest unread)")
    print(f"{'T':>5s}  {'read':>9s}  {'count':>5s}  {'colour+shape':>12s}  {'right':>5s}")
    for v in views:
        print(f"{v['threshold']:5.2f}  {v['read']:4d}/{v['images']:<4d}  {_f(v['count'])}  "
              f"{_f(v['colour_shape'], v['colour_shape_n']):>12s}  {_f(v['right'])}")


# ---- main ---------------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=Path, default=os.environ.get(OUT_ENV) or None,
                    help=f"the folder rebuild.py wrote the images to (default ${OUT_ENV})")
    ap.add_argument("--manifest", type=Path, default=MANIFEST, help="the manifest (default benchmarks/real_t2i's)")
    ap.add_argument("--part", choices=(*SPLITS, "all"), default="all", help="measure one part only (default both)")
    ap.add_argument("--backend", default="clevr", help="perception backend (default clevr)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a backend setting (VALUE read as JSON when it parses), e.g. --set second_look=false")
    ap.add_argument("--min-confidence", type=float, metavar="T",
                    help="report the images read with confidence >= T (default: a sweep of thresholds)")
    ap.add_argument("--separation", action="store_true",
                    help="on the dev part only: which features of the reading tell right from wrong (AUROC)")
    ap.add_argument("--no-verify", action="store_true", help="do not check the images against the manifest's digests")
    ap.add_argument("--json", type=Path, help="write the figures and every image's reading here")
    return ap


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    ap = parser()
    args = ap.parse_args(argv)
    if args.images is None:
        ap.error(f"give --images DIR (or set ${OUT_ENV}); build it with python benchmarks/real_t2i/rebuild.py")
    if not args.images.is_dir():
        ap.error(f"--images: {str(args.images)!r}: no such folder")
    if args.min_confidence is not None and not 0.0 <= args.min_confidence <= 1.0:
        ap.error(f"--min-confidence must lie in [0, 1], got {args.min_confidence:g}")
    if args.separation and args.part == "heldout":
        ap.error("--separation looks at the dev part only; the held-out part is never used for choices")
    try:
        entries = load_valid(args.manifest)
    except ValueError as e:
        ap.error(str(e))
    entries = [e for e in entries if args.part == "all" or e["split"] == args.part]
    bad = [(e["id"], why) for e in entries
           if (why := (verify_file(e, args.images / file_name(e)) if not args.no_verify
                       else (None if (args.images / file_name(e)).is_file() else "missing"))) is not None]
    if bad:
        ap.error(f"{len(bad)} of {len(entries)} images missing or not the recorded ones in {args.images} (first: "
                 f"{bad[0][0]}: {bad[0][1]}); rebuild them with python benchmarks/real_t2i/rebuild.py --out "
                 f"{args.images}")
    settings = backend_settings(ap, args.backend, args.set)

    images = [load_image(args.images / file_name(e)) for e in entries]
    scenes = extract_scenes(images, backend=args.backend, **settings)
    rows = [grade(e, s) for e, s in zip(entries, scenes, strict=True)]
    parts = [p for p in SPLITS if any(r["split"] == p for r in rows)]
    result: dict[str, Any] = {"manifest": str(args.manifest), "backend": args.backend, "settings": settings,
                              "parts": {}, "per_image": rows}
    sizes = ", ".join(f"{p} {sum(r['split'] == p for r in rows)}" for p in parts)
    shown = " " + json.dumps(settings) if settings else ""
    print(f"real text-to-image set: {len(rows)} images ({sizes}); backend {args.backend}{shown}")
    print_table("by part (count, colour+shape (judged images), material (judged images), right, too many/too few, "
                "readings with confidence >= 0.5: right / all)", {p: summary([r for r in rows if r["split"] == p])
                                                                   for p in parts})
    thresholds = (args.min_confidence,) if args.min_confidence is not None else SWEEP
    for p in parts:
        part_rows = [r for r in rows if r["split"] == p]
        result["parts"][p] = {"summary": summary(part_rows), "by_kind": by_kind(part_rows),
                              "by_model": by_field(part_rows, "model"),
                              "by_source_group": by_field(part_rows, "source_group"),
                              "min_confidence": [at_threshold(part_rows, t) for t in thresholds]}
        print_table(f"{p}: by kind", result["parts"][p]["by_kind"])
        print_table(f"{p}: by source group", result["parts"][p]["by_source_group"])
        print_thresholds(p, result["parts"][p]["min_confidence"])
    if args.separation:
        dev = [i for i, r in enumerate(rows) if r["split"] == "dev"]
        if not dev:
            ap.error("--separation needs the dev part")
        cands = candidate_peaks([images[i] for i in dev], settings) if args.backend == "clevr" else None
        feats = [reading_features(images[i], scenes[i], cands[k] if cands is not None else None)
                 for k, i in enumerate(dev)]
        result["separation"] = separation([rows[i] for i in dev], feats)
        n_right = sum(rows[i]["right"] for i in dev)
        print(f"\ndev: features of the reading, right ({n_right}) against wrong ({len(dev) - n_right}) "
              "(AUROC: 0.5 tells nothing; below 0.5 lower values go with right)")
        print(f"{'feature':24s} {'AUROC':>6s}  {'mean right':>11s}  {'mean wrong':>11s}")
        for d in result["separation"]:
            means = "  ".join(f"{v:11.3f}" if v is not None else f"{'-':>11s}"
                              for v in (d["mean_right"], d["mean_wrong"]))
            print(f"{d['feature']:24s} {_f(d['auroc']):>6s}  {means}")
    if args.json:
        from logicval_hf.common.atomic import atomic_write_json

        atomic_write_json(args.json, result, indent=1)
    return result


if __name__ == "__main__":
    main()
