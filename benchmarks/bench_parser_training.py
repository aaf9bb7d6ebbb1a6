"""Scene-parser training throughput: batches prepared in the training process vs by ``--workers`` processes.

Both training scripts build each step's batch on the CPU (crops or canvases cut, augmented, white-balanced),
which is the limit once the networks train on an accelerator (`--device cuda`). This measures, in one run and
on the same batches (each a function of ``(seed, step)`` alone):

* prepare: batches per second from `loop.batches` with ``--workers 0`` (the naive baseline: in the training
  process) and with ``--workers N``;
* train: whole optimiser steps per second (batch, forward, backward, AdamW) on ``--device`` both ways.

    python benchmarks/bench_parser_training.py [--data DIR] [--workers 2] [--steps 24] [--device cpu|cuda]

Without ``--data`` (or when the folder is missing) every batch comes from the project's numpy renderer, so it
runs on a fresh clone. On the 16-core H200 machine (2026-12-04) the classifier trained at about 23 steps of 256
crops per second with 14 workers; on 2 cores the ratio cannot pass about 2.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _stages(args):
    """(name, make(step), loss(batch), network) for the classifier and the detector."""
    from logicval_hf.training import parser_model as PM
    from logicval_hf.training import train_attribute_classifier as A
    from logicval_hf.training.parser_data import classes, load_folder

    records = load_folder(args.data, who="bench_parser_training") if args.data and args.data.is_dir() else []
    samples = A.object_samples(records)
    fraction = 0.15 if records else 1.0
    cls = classes()
    clf, det = A.build_model(1.0), PM.build_model()

    def make_clf(step):
        return A.make_batch(records, samples, step, 0, args.crops, fraction)

    def loss_clf(batch):
        x, y, t = batch
        logits, centre = clf(x)
        return A.loss_fn(logits, centre, y, t, cls)[0]

    def make_det(step):
        return PM.make_batch(records, step, 0, args.images, fraction, (256, 256))

    def loss_det(batch):
        x, heat, idx, reg, attr, aw, hw = batch
        return PM.loss_fn(det(x), heat, idx, reg, attr, aw, cls, hw)[0]

    return len(records), [("classifier", make_clf, loss_clf, clf, f"{args.crops} crops"),
                          ("detector", make_det, loss_det, det, f"{args.images} images at 256x256")]


def _prepare_rate(make, steps, workers):
    from logicval_hf.training import loop

    stream = loop.batches(make, 0, steps + 1, workers)
    next(stream)  # the workers' start is not throughput
    t = time.perf_counter()
    for _ in range(steps):
        next(stream)
    return steps / (time.perf_counter() - t)


def _train_rate(make, loss_of, net, steps, workers, device):
    import torch

    from logicval_hf.training import loop

    stream = loop.batches(make, 0, steps + 1, workers, pin=device.type == "cuda")
    net.to(device).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)

    def step():
        loss = loss_of(loop.to_device(next(stream), device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    rate = steps / (time.perf_counter() - t)
    net.cpu()
    return rate


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "clevr_blender",
                    help="a CLEVR-layout render folder with masks (default: the shared Blender renders; none or "
                         "missing: numpy renders only)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes for the prepared run")
    ap.add_argument("--steps", type=int, default=24, help="timed steps per measurement")
    ap.add_argument("--crops", type=int, default=64, help="classifier batch (crops)")
    ap.add_argument("--images", type=int, default=8, help="detector batch (images)")
    ap.add_argument("--device", default="cpu", help="torch device for the training-step measurement")
    args = ap.parse_args(argv)
    if args.workers < 1 or args.steps < 1:
        ap.error("--workers and --steps must be >= 1")

    import cv2
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    device = torch.device(args.device)
    n, stages = _stages(args)
    print(f"data: {args.data if n else 'numpy renders only'} ({n} scenes); device {device}; "
          f"{args.steps} timed steps each; workers 0 vs {args.workers}")
    print(f"| stage | batch | prepare/s, inline | prepare/s, {args.workers} workers | ratio "
          f"| train steps/s, inline | train steps/s, {args.workers} workers | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name, make, loss_of, net, what in stages:
        p0, p1 = _prepare_rate(make, args.steps, 0), _prepare_rate(make, args.steps, args.workers)
        t0 = _train_rate(make, loss_of, net, args.steps, 0, device)
        t1 = _train_rate(make, loss_of, net, args.steps, args.workers, device)
        print(f"| {name} | {what} | {p0:.2f} | {p1:.2f} | {p1 / p0:.2f}x | {t0:.2f} | {t1:.2f} | {t1 / t0:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
