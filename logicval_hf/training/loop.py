"""The training loop the scene-parser scripts share: its flags, checkpoint / resume, the schedule, the step
cadence, the device and the batch workers, and the ONNX export with metadata.

`train_scene_parser` (the detector) and `train_attribute_classifier` (the second stage) differ in data, model,
loss and what their model files say; how they step, checkpoint, resume, report progress, stop and write ONNX
is the same and lives here, so a fix to resuming or to ``--max-minutes`` reaches both.

On an accelerator (``--device cuda``) the small networks wait for their batches, which are cut and augmented
per sample on the CPU: ``--workers N`` prepares them ahead in N forked processes (each batch still a function of
``(seed, step)``, so the weights are those of a run without workers), and ``--anneal-by-time`` fits the schedule
to a lease of fixed minutes. Validation and export always run on the CPU.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_path


def add_loop_arguments(ap: argparse.ArgumentParser, *, out: Path, steps: int, warmup: int, seed: int,
                       lr: float = 2e-3, drawn: str = "images") -> None:
    """The flags both recipe scripts take: ``--data`` (each folder's share of the batches' ``drawn``) and the ones
    `train` and `open_checkpoint` read, with each script's defaults."""
    from logicval_hf.training.parser_data import parse_data_folder

    ap.add_argument("--data", type=parse_data_folder, action="append", metavar="DIR[#first=N,weight=W]",
                    help="a folder of renders in the CLEVR layout, with masks (repeatable; default "
                         "$LOGICVAL_SHARED_DATA/data/clevr_blender, docs/data.md); #first=N reads only its first N "
                         "scenes by name, #weight=W "
                         f"gives it that share of the batches' {drawn} (relative to the other folders' weights)")
    ap.add_argument("--out", type=Path, default=out,
                    help=f"checkpoint folder (resumed from its last.pt when present; default {out})")
    ap.add_argument("--steps", type=int, default=steps, help="total optimiser steps (cosine schedule over them)")
    ap.add_argument("--export-every", type=int, default=500, help="steps between exports (and validations)")
    ap.add_argument("--ckpt-every", type=int, default=100, help="steps between checkpoints")
    ap.add_argument("--lr", type=float, default=lr, help="peak AdamW learning rate")
    ap.add_argument("--warmup", type=int, default=warmup, help="linear warm-up steps")
    ap.add_argument("--weight-decay", type=float, default=1e-4, help="AdamW weight decay")
    ap.add_argument("--seed", type=int, default=seed, help="seed of initialisation, batches and augmentation")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--max-minutes", type=float, default=0,
                    help="stop (checkpoint + export) after this many minutes of this run (0 = no limit)")
    ap.add_argument("--anneal-by-time", action="store_true",
                    help="with --max-minutes: the schedule's progress is the larger of step / --steps and the "
                         "run's minutes / --max-minutes, so a run stopped by the clock ends annealed (the "
                         "learning rates then depend on the machine's speed: a resumed run is no longer the "
                         "uninterrupted one)")
    ap.add_argument("--device", default="cpu",
                    help="torch device the network trains on (cpu, cuda, cuda:1, ...); validation and export "
                         "run on the CPU")
    ap.add_argument("--workers", type=int, default=0,
                    help="processes preparing batches ahead of the training step (0: in the training process); "
                         "each batch is still a function of (seed, step) alone")
    ap.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")


def command(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The argument parser of a recipe script run as ``python -m module``, described by its docstring's first
    line; parse with `parse`."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=(doc or "").split("\n")[0])


def parse(ap: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``ap.parse_args(argv)``, except that a flag the recipe does not take (one of the experiments that did not
    ship, say) is refused in one line that names it and lists the supported flags (exit 2)."""
    args, extra = ap.parse_known_args(argv)
    if extra:
        flags = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", ap.format_usage())) - {"--help"})
        ap.error(f"unsupported argument {' '.join(extra)} (supported: {', '.join(flags)})")
    return args


def start(args: argparse.Namespace) -> None:
    """Before the model is built: torch on ``--threads`` (OpenCV on one: the augmentation runs per sample), the
    seed set, the run folder made.

    Raises:
        SystemExit: ``--device`` names no device torch has here, or ``--workers`` / ``--max-minutes`` is off.
    """
    import cv2
    import torch

    if args.workers < 0:
        raise SystemExit(f"--workers must be >= 0, got {args.workers}")
    if args.anneal_by_time and not args.max_minutes:
        raise SystemExit("--anneal-by-time needs --max-minutes (the time the schedule runs over)")
    try:
        device = torch.device(args.device)
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as e:  # an unknown name, or a device this torch build or machine lacks
        raise SystemExit(f"--device {args.device}: not usable here ({str(e).splitlines()[0]})") from None
    torch.set_num_threads(args.threads)
    cv2.setNumThreads(1)
    torch.manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 2 % of the peak."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, steps - warmup))
    return lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * t)))


def scheduled_step(step: int, steps: int, run_minutes: float, anneal_minutes: float = 0) -> int:
    """The step the schedule is at: ``step``, or with ``anneal_minutes`` (``--anneal-by-time``) the further of it
    and the same share of ``steps`` as ``run_minutes`` is of ``anneal_minutes``."""
    if anneal_minutes <= 0:
        return step
    return max(step, min(steps, int(steps * run_minutes / anneal_minutes)))


class Checkpoint:
    """``last.pt`` of a run folder: model and optimiser state, step, training seconds, history, arguments.
    ``history`` is the list the scripts append their validation figures to (saved with every checkpoint)."""

    def __init__(self, out: Path, net, opt, args):
        self.path = Path(out) / "last.pt"
        self.net, self.opt, self.args = net, opt, args
        self.step, self.elapsed = 0, 0.0
        self.history: list[dict[str, Any]] = []

    def resume(self) -> bool:
        """Load ``last.pt`` when there is one (True), so the run continues where it stopped."""
        import torch

        if not self.path.is_file():
            return False
        ck = torch.load(self.path, map_location="cpu", weights_only=False)
        try:
            self.net.load_state_dict(ck["model"])
            self.opt.load_state_dict(ck["opt"])
        except (RuntimeError, ValueError) as e:  # another architecture: shapes or parameter groups differ
            first = next((line.strip() for line in str(e).splitlines() if "mismatch" in line), str(e).splitlines()[0])
            raise SystemExit(f"{self.path} holds a checkpoint of another network ({first}): give a new --out") from None
        self.step, self.elapsed, self.history = ck["step"], ck.get("elapsed", 0.0), ck.get("history", [])
        return True

    def save(self) -> None:
        import torch

        with atomic_path(self.path) as tmp:
            torch.save({"model": self.net.state_dict(), "opt": self.opt.state_dict(), "step": self.step,
                        "elapsed": self.elapsed, "history": self.history,
                        "args": {k: str(v) for k, v in vars(self.args).items()}}, tmp)


def open_checkpoint(args: argparse.Namespace, net, name: str) -> tuple[Checkpoint, bool]:
    """An AdamW optimiser on ``net`` (on the groups of its ``param_groups()`` where it has one) and the run's
    `Checkpoint`, resumed when ``--out`` holds one (True)."""
    import torch

    # a network may split its parameters into groups learning at shares of the rate (``lr_scale``: a pretrained
    # backbone kept close to its weights while a fresh head learns at the full rate)
    groups = net.param_groups() if hasattr(net, "param_groups") else net.parameters()
    opt = torch.optim.AdamW(groups, lr=args.lr, weight_decay=args.weight_decay)
    ck = Checkpoint(args.out, net, opt, args)
    resumed = ck.resume()
    if resumed:
        print(f"{name}: resumed from {ck.path} at step {ck.step}", flush=True)
    return ck, resumed


def initialise(net, path: Path, batches: Callable[[], list[Any]], who: str, what: str) -> dict[str, Any]:
    """Load the weights of ``--init`` into ``net``: a training checkpoint's (``last.pt``), or an exported .onnx
    file's (`logicval_hf.training.onnx_init`: each BatchNorm unfolded, its statistics measured on ``batches()``,
    training batches of steps no run reaches), so training can start from the shipped files. Returns the entry
    the run's history records (an .onnx file by name, a checkpoint as ``$CHECKPOINTS/<run>/last.pt``: never an
    absolute path).

    Raises:
        SystemExit: the file holds no ``what`` (e.g. "detector") of this network that ``who`` (the script) can
            read.
    """
    try:
        if path.suffix == ".onnx":
            from logicval_hf.training.onnx_init import load_onnx_weights

            entry = {"init": path.name, "init_onnx": load_onnx_weights(net, path, batches())}
        else:
            import torch

            ck = torch.load(path, map_location="cpu", weights_only=False)
            net.load_state_dict(ck["model"])
            # a checkpoint by its run folder under a stated root, never by its absolute path
            entry = {"init": f"$CHECKPOINTS/{path.parent.name}/{path.name}", "init_steps": ck["step"]}
    except Exception as e:  # noqa: BLE001 - onnx and torch raise many kinds for a file that is not this model
        raise SystemExit(f"{who}: cannot read a {what} from --init {path}: {type(e).__name__}: {e}") from None
    print(f"{who}: initialised from {path}", flush=True)
    return entry


def export_onnx(graph, net, path: Path, example, input_names: list[str], output_names: list[str],
                dynamic_axes: dict[str, dict[int, str]], meta: dict[str, Any], doc: str) -> None:
    """``graph`` (``net`` or a module wrapping it) traced on ``example`` to ONNX, ``meta`` embedded under the
    parser's metadata key, written atomically; ``net`` is back in training mode after if it was before."""
    import warnings

    import onnx
    import torch

    from logicval_hf.perception.parser_settings import META_KEY

    with atomic_path(Path(path)) as tmp:
        was_training = net.training
        net.eval()
        with warnings.catch_warnings():  # the TorchScript exporter is deprecated, but needs no onnxscript
            warnings.simplefilter("ignore")
            torch.onnx.export(graph, (example,), str(tmp), input_names=input_names, output_names=output_names,
                              dynamic_axes=dynamic_axes, opset_version=17, dynamo=False)
        if was_training:
            net.train()
        model = onnx.load(str(tmp))
        entry = model.metadata_props.add()
        entry.key, entry.value = META_KEY, json.dumps(meta)
        model.doc_string = doc
        onnx.save(model, str(tmp))


def to_device(batch, device):
    """``batch`` (tensors, or tuples / lists of them, any depth; anything else as it is) on ``device``."""
    import torch

    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(b, device) for b in batch)
    return batch


def _worker_init(_: int) -> None:
    import cv2
    import torch

    torch.set_num_threads(1)
    cv2.setNumThreads(1)


def batches(make: Callable[[int], Any], start: int, stop: int, workers: int, pin: bool = False) -> Iterator[Any]:
    """``make(step)`` for step = ``start`` .. ``stop`` - 1, in order: in this process (``workers`` 0), or
    prepared ahead by that many forked worker processes (a torch DataLoader). Fork, because ``make`` is a closure
    over the loaded records: the workers inherit them instead of unpickling gigabytes each."""
    if workers == 0:
        return (make(step) for step in range(start, stop))
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Steps(Dataset):
        """The batches as a map-style dataset indexed by step: a worker prepares ``make(step)``."""

        def __getitem__(self, step: int):
            return make(step)

    # a generator of its own: the loader's seed draw must not move the global RNG that dropout draws from
    return iter(DataLoader(Steps(), batch_size=None, sampler=range(start, stop), num_workers=workers,
                           prefetch_factor=4, pin_memory=pin, worker_init_fn=_worker_init,
                           multiprocessing_context="fork", generator=torch.Generator()))


def _move_optimiser(opt, device) -> None:
    # a resumed optimiser's moments load onto the CPU, where the network was then
    for state in opt.state.values():
        for k, v in state.items():
            if hasattr(v, "to") and k != "step":
                state[k] = v.to(device)


def train(ck: Checkpoint, make: Callable[[int], Any], batch_loss: Callable[[Any], tuple[Any, dict[str, float]]],
          export: Callable[[], str], name: str) -> None:
    """Step from ``ck.step`` to ``args.steps``: learning rate per `lr_at`, AdamW step with gradients clipped at
    10, a tqdm bar with running loss parts, a checkpoint every ``--ckpt-every`` steps, ``export()`` (validate,
    calibrate, write; returns the line to print) and a checkpoint every ``--export-every`` steps, both at the end
    and when ``--max-minutes`` of this run have passed.

    ``make(step)`` builds a step's batch on the CPU (in ``--workers`` processes when > 0, so it must not depend on
    state the training step changes); ``batch_loss(batch)`` gets it on ``--device`` and returns (loss, parts).
    The network trains on ``--device`` and is on the CPU for ``export()`` and when this returns."""
    import torch
    from tqdm import tqdm

    args, net, opt = ck.args, ck.net, ck.opt
    device = torch.device(args.device)
    # workers fork before the network goes to an accelerator: a forked child must not inherit a CUDA context
    stream = batches(make, ck.step, args.steps, args.workers, pin=device.type == "cuda")
    net.to(device)
    _move_optimiser(opt, device)
    net.train()
    t_run = t_last = time.time()
    bar = tqdm(total=args.steps, initial=ck.step, disable=args.no_progress, mininterval=10, file=sys.stdout)
    avg = None
    anneal_minutes = args.max_minutes if args.anneal_by_time else 0
    while ck.step < args.steps:
        batch = next(stream)
        at = scheduled_step(ck.step, args.steps, (time.time() - t_run) / 60, anneal_minutes)
        for g in opt.param_groups:
            g["lr"] = lr_at(at, args.steps, args.lr, args.warmup) * g.get("lr_scale", 1.0)
        loss, parts = batch_loss(to_device(batch, device))
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
            if args.no_progress:  # a log line per checkpoint instead of the bar (background runs)
                parts_text = " ".join(f"{k} {v:.3f}" for k, v in avg.items())
                print(f"{name}: step {ck.step} ({ck.elapsed / 60:.1f} min) loss {parts_text}", flush=True)
        if ck.step % args.export_every == 0 or ck.step == args.steps or stop:
            net.cpu()
            line = export()
            net.to(device)
            ck.save()
            print(f"\n{name}: step {ck.step} ({ck.elapsed / 60:.1f} min) {line}", flush=True)
        if stop:
            break
    bar.close()
    net.cpu()
