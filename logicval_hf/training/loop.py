"""The CPU training loop the scene-parser scripts share: checkpoint / resume, the schedule, the step cadence.

`train_scene_parser` (the detector) and `train_attribute_classifier` (the second stage) differ in data, model,
loss and export; how they step, checkpoint, resume, report progress and stop is the same and lives here, so
a fix to resuming or to ``--max-minutes`` reaches both.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

from logicval_hf.common.atomic import atomic_path


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 2 % of the peak."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, steps - warmup))
    return lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))


class Checkpoint:
    """``last.pt`` of a run folder: model and optimiser state, step, training seconds, history, arguments.
    ``history`` is the list the scripts append their validation figures to (saved with every checkpoint)."""

    def __init__(self, out: Path, net, opt, args):
        self.path = Path(out) / "last.pt"
        self.net, self.opt, self.args = net, opt, args
        self.step, self.elapsed, self.history = 0, 0.0, []

    def resume(self) -> bool:
        """Load ``last.pt`` when there is one (True), so the run continues where it stopped."""
        import torch

        if not self.path.is_file():
            return False
        ck = torch.load(self.path, map_location="cpu", weights_only=False)
        self.net.load_state_dict(ck["model"])
        self.opt.load_state_dict(ck["opt"])
        self.step, self.elapsed, self.history = ck["step"], ck.get("elapsed", 0.0), ck.get("history", [])
        return True

    def save(self) -> None:
        import torch

        with atomic_path(self.path) as tmp:
            torch.save({"model": self.net.state_dict(), "opt": self.opt.state_dict(), "step": self.step,
                        "elapsed": self.elapsed, "history": self.history,
                        "args": {k: str(v) for k, v in vars(self.args).items()}}, tmp)


def train(ck: Checkpoint, batch_loss: Callable[[int], tuple[Any, dict[str, float]]], export: Callable[[], str],
          name: str) -> None:
    """Step from ``ck.step`` to ``args.steps``: learning rate per `lr_at`, AdamW step with gradients clipped at
    10, a tqdm bar with running loss parts, a checkpoint every ``--ckpt-every`` steps, ``export()`` (validate,
    calibrate, write; returns the line to print) and a checkpoint every ``--export-every`` steps, both at the end
    and when ``--max-minutes`` of this run have passed. ``batch_loss(step)`` returns (loss, parts)."""
    import torch
    from tqdm import tqdm

    args, net, opt = ck.args, ck.net, ck.opt
    net.train()
    t_run = t_last = time.time()
    bar = tqdm(total=args.steps, initial=ck.step, disable=args.no_progress, mininterval=10, file=sys.stdout)
    avg = None
    while ck.step < args.steps:
        for g in opt.param_groups:
            g["lr"] = lr_at(ck.step, args.steps, args.lr, args.warmup)
        loss, parts = batch_loss(ck.step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        opt.step()
        ck.step += 1
        now = time.time()
        ck.elapsed += now - t_last
        t_last = now
        # a part may be missing from a batch (no labelled object for it): keep its running value
        avg = parts if avg is None else {k: 0.95 * avg.get(k, v) + 0.05 * v for k, v in parts.items()}
        bar.update(1)
        bar.set_postfix({k: f"{v:.3f}" for k, v in avg.items()}, refresh=False)
        stop = args.max_minutes and (now - t_run) / 60 >= args.max_minutes
        if ck.step % args.ckpt_every == 0 or ck.step == args.steps or stop:
            ck.save()
        if ck.step % args.export_every == 0 or ck.step == args.steps or stop:
            line = export()
            ck.save()
            print(f"\n{name}: step {ck.step} ({ck.elapsed / 60:.1f} min) {line}", flush=True)
        if stop:
            break
    bar.close()
