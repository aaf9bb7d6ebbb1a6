"""Neural perception speed at real model sizes: batched pipeline vs a per-image / per-crop loop.

Grounding DINO at its default (grounding-dino-tiny, 172 M parameters, 800 px shorter side) and open_clip
ViT-L-14 (the paper's CLIP size). Without a hub the weights are random (the architectures and the work per
image are the real ones; only the detections are meaningless, so ``--max-objects`` caps them at a
CLEVR-like count). Both modes run on the same models and the same images, in the same process:

* batched: one detector forward per ``--detector-batch`` images, all crops of all images through CLIP in
  chunks of ``--clip-batch``;
* loop: one detector forward per image, one CLIP forward per crop.

    python benchmarks/bench_neural.py [--images 4] [--device cpu|cuda] [--max-objects 6]
    python benchmarks/bench_neural.py --detector IDEA-Research/grounding-dino-tiny --clip-pretrained openai
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np


def random_models(args):
    import open_clip
    from transformers import (BertTokenizer, GroundingDinoConfig, GroundingDinoForObjectDetection,
                              GroundingDinoImageProcessor, GroundingDinoProcessor)

    import torch

    torch.manual_seed(0)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "an", "cube", "sphere", "cylinder", "object"]
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(words)})  # ids are a subset of BERT's 30522
    proc = GroundingDinoProcessor(image_processor=GroundingDinoImageProcessor(), tokenizer=tok)
    det = GroundingDinoForObjectDetection(GroundingDinoConfig()).eval()
    clip = open_clip.create_model(args.clip_model, pretrained=None).eval()
    return det, proc, clip, open_clip.get_tokenizer(args.clip_model)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--detector", default=None, help="hub id or local dir (default: random GroundingDinoConfig())")
    ap.add_argument("--clip-model", default="ViT-L-14")
    ap.add_argument("--clip-pretrained", default=None, help="open_clip tag or local file (default: random)")
    ap.add_argument("--detector-batch", type=int, default=4)
    ap.add_argument("--clip-batch", type=int, default=64)
    ap.add_argument("--max-objects", type=int, default=6)
    ap.add_argument("--box-threshold", type=float, default=0.15)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs per mode; the fastest counts")
    args = ap.parse_args()

    import torch

    from logicval_hf import Scene, SceneObject, load_catalog
    from logicval_hf.perception.neural import build_pipeline, load_clip, load_detector
    from logicval_hf.generation.render import render_scene

    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    if args.detector or args.clip_pretrained:
        det, proc = load_detector(args.detector or "IDEA-Research/grounding-dino-tiny", args.device)
        clip, tok = load_clip(args.clip_model, args.clip_pretrained, args.device)
    else:
        det, proc, clip, tok = random_models(args)
    pipe = build_pipeline(det, proc, clip, tok, device=args.device, box_threshold=args.box_threshold,
                          max_objects=args.max_objects)
    n_det = sum(p.numel() for p in det.parameters()) / 1e6
    n_clip = sum(p.numel() for p in clip.parameters()) / 1e6
    print(f"models: detector {type(det).__name__} {n_det:.0f} M params, CLIP {args.clip_model} {n_clip:.0f} M params, "
          f"device {args.device}, torch threads {torch.get_num_threads()}, built in {time.perf_counter() - t0:.1f} s")

    dom = load_catalog().domain
    rng = random.Random(args.seed)
    images = []
    for i in range(args.images):
        objs = [SceneObject({a: rng.choice(dom.attributes[a]) for a in dom.perceived_attributes}, (0, 0, 1, 1))
                for _ in range(rng.randint(3, 9))]
        images.append(np.asarray(render_scene(Scene((480, 320), tuple(objs)), seed=i)[0]))

    def sync():
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    def timed(fn, what=""):
        sync()
        t = time.perf_counter()
        out = fn()
        sync()
        dt = time.perf_counter() - t
        if what:
            print(f"    {what}: {dt:.2f} s", flush=True)
        return out, dt

    # warm-up: kernels, allocator and the cached text embeddings
    timed(lambda: pipe.extract_batch(images[:1]), "warm-up (1 image + text embeddings)")

    # the machine may be shared: alternate the two modes and keep each stage's fastest run
    best = {"det_b": float("inf"), "clip_b": float("inf"), "det_l": float("inf"), "clip_l": float("inf")}
    boxes = None
    for r in range(args.repeats):
        for mode in (("b", "l") if r % 2 == 0 else ("l", "b")):
            if mode == "b":
                dets_b, t = timed(lambda: pipe.detect_batch(images, detector_batch_size=args.detector_batch),
                                  "batched detector")
                best["det_b"] = min(best["det_b"], t)
                boxes = boxes or [[d.bbox for d in ds] for ds in dets_b]
                probs_b, t = timed(lambda: pipe.classify_batch(images, boxes, clip_batch_size=args.clip_batch),
                                   "batched CLIP")
                best["clip_b"] = min(best["clip_b"], t)
            else:
                dets_l, t = timed(lambda: [pipe.detect_batch([im], detector_batch_size=1)[0] for im in images],
                                  "per-image detector")
                best["det_l"] = min(best["det_l"], t)
                boxes = boxes or [[d.bbox for d in ds] for ds in dets_l]
                probs_l, t = timed(lambda: [pipe.classify_batch([im], [bx], clip_batch_size=1)[0]
                                            for im, bx in zip(images, boxes)], "per-crop CLIP")
                best["clip_l"] = min(best["clip_l"], t)
    t_det_b, t_clip_b, t_det_l, t_clip_l = best["det_b"], best["clip_b"], best["det_l"], best["clip_l"]
    n_crops = 4 * sum(len(b) for b in boxes)

    same_boxes = all(len(a) == len(b) and all(np.allclose(x.bbox, y.bbox, atol=1e-2) for x, y in zip(a, b))
                     for a, b in zip(dets_b, dets_l))
    diff = max((abs(pa[a][v] - pb[a][v]) for ia, ib in zip(probs_b, probs_l) for pa, pb in zip(ia, ib)
                for a in pa for v in pa[a]), default=0.0)
    n = len(images)
    tb, tl = t_det_b + t_clip_b, t_det_l + t_clip_l
    print(f"{n} images of 480x320, {sum(len(b) for b in boxes)} objects, {n_crops} CLIP crops (4 views per object); "
          f"best of {args.repeats} alternating runs per mode")
    print(f"  batched : detector {t_det_b:7.2f} s  CLIP {t_clip_b:7.2f} s  total {tb:7.2f} s  -> {n / tb:.3f} images/s")
    print(f"  loop    : detector {t_det_l:7.2f} s  CLIP {t_clip_l:7.2f} s  total {tl:7.2f} s  -> {n / tl:.3f} images/s")
    print(f"  speed-up batched / loop: total {tl / tb:.2f}x, detector {t_det_l / t_det_b:.2f}x, "
          f"CLIP {t_clip_l / t_clip_b:.2f}x ({n_crops / t_clip_b:.1f} vs {n_crops / t_clip_l:.1f} crops/s)")
    print(f"  same detections: {same_boxes}; max |prob difference| {diff:.2e}")


if __name__ == "__main__":
    main()
