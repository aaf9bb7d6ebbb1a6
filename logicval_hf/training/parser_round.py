"""One training round of the scene parser's two networks in a fixed time: the detector, then the classifier.

    python -m logicval_hf.training.parser_round --data pool/clevr_blender --data "pool/t2i_wide_train#weight=1.5" \\
        --minutes 9 --width 1.5 --device cuda --workers 14 --out $OUT --work /tmp/round

Why: an accelerator is lent for minutes at a time (a session's device time is 15 minutes, the machine's start
included), so a round there must be one prepared command that splits a clock budget between the two networks,
starts each from the shipped files (or given ones; a narrower detector is widened first, `widen`), anneals
each to its end by the clock, and leaves few, flat files to bring back: ``detector.onnx``,
``classifier.onnx``, their ``*_last.pt`` weights (``--init`` for a round on the CPU) and ``round.json`` (every
command line, the held-out figures, the minutes). The detector is exported with the classifier it starts
beside; refit the pair on renders neither trained on afterwards (`refit_parser`), then quantize
(`quantize_parser`).

A network whose file already lies in ``--out`` is not trained again, so a round cut off by a limit resumes
with the one left (the checkpoints in ``--work`` resume mid-run as every training script's do).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_path
from logicval_hf.perception.scene_parser import DEFAULT_MODEL, attribute_model_beside

#: what a round leaves in --out, by network: (exported model, last checkpoint)
PRODUCTS = {"detector": ("detector.onnx", "detector_last.pt"),
            "classifier": ("classifier.onnx", "classifier_last.pt")}


def detector_argv(args: argparse.Namespace, work: Path, minutes: float, attribute_model: Path) -> list[str]:
    """`train_scene_parser`'s command line for this round's detector (the G15 recipe's settings)."""
    flat = [x for d in args.data for x in ("--data", d)]
    return [*flat, "--out", str(work / "detector"), "--export", str(work / "detector.onnx"),
            "--init", str(args.detector_init), "--width", f"{args.width:g}", "--attribute-model", str(attribute_model),
            "--batch-size", str(args.detector_batch), "--canvas", "256", "256", "--numpy-fraction", "0.15",
            "--steps", str(args.steps), "--lr", f"{args.detector_lr:g}", "--warmup", "100",
            "--seed", str(args.seed), "--max-minutes", f"{minutes:g}", "--anneal-by-time",
            "--hidden-weight", f"{args.hidden_weight:g}", *(["--visible-peaks"] if args.visible_peaks else []),
            *_machine(args)]


def classifier_argv(args: argparse.Namespace, work: Path, minutes: float) -> list[str]:
    """`train_attribute_classifier`'s command line for this round's classifier (the a31 recipe's settings)."""
    flat = [x for d in args.data for x in ("--data", d)]
    return [*flat, "--out", str(work / "classifier"), "--export", str(work / "classifier.onnx"),
            "--init", str(args.classifier_init), "--width", f"{args.classifier_width:g}",
            "--batch-size", str(args.classifier_batch), "--numpy-fraction", "0.15", "--white-balance", "0.3",
            "--steps", str(args.steps), "--lr", f"{args.classifier_lr:g}", "--warmup", "200",
            "--seed", str(args.seed + 1), "--max-minutes", f"{minutes:g}", "--anneal-by-time", *_machine(args)]


def _machine(args: argparse.Namespace) -> list[str]:
    return ["--device", args.device, "--workers", str(args.workers), "--threads", str(args.threads),
            "--no-progress", "--export-every", "1000000", "--ckpt-every", "500"]


def _weights_only(checkpoint: Path, out: Path) -> None:
    """``checkpoint`` without its optimiser state, written atomically to ``out``: what ``--init`` reads (weights,
    step, history, arguments) at a third of the size (a width-1.5 detector's full checkpoint is about 24 MB, more
    than a device call brings back in one file)."""
    import torch

    ck = torch.load(checkpoint, map_location="cpu", weights_only=False)
    ck.pop("opt", None)
    with atomic_path(out) as tmp:
        torch.save(ck, tmp)


def _last_figures(folder: Path) -> dict[str, Any] | None:
    path = folder / "history.json"
    if not path.is_file():
        return None
    history = json.loads(path.read_text())
    return next((h for h in reversed(history) if "step" in h), None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logicval_hf.training.parser_round",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--data", action="append", required=True, metavar="DIR[#first=N,weight=W]",
                    help="a render folder in the CLEVR layout, as the training scripts take it (repeatable; a "
                         "pool packed by logicval_hf.training.pack_renders travels best)")
    ap.add_argument("--out", type=Path, required=True,
                    help="where the round's products go, flat: detector.onnx, classifier.onnx, detector_last.pt and "
                         "classifier_last.pt (weights without the optimiser state, for --init), round.json")
    ap.add_argument("--work", type=Path, default=None,
                    help="the two runs' checkpoint folders (default: --out/work); a round resumes from them")
    ap.add_argument("--minutes", type=float, required=True,
                    help="training minutes for both networks together (validation and export come on top: "
                         "about a minute each)")
    ap.add_argument("--classifier-share", type=float, default=0.3,
                    help="share of --minutes for the classifier (default 0.3; 0 trains the detector alone)")
    ap.add_argument("--detector-init", type=Path, default=DEFAULT_MODEL,
                    help="the detector to start from (.onnx or a checkpoint; default the shipped float file)")
    ap.add_argument("--classifier-init", type=Path, default=attribute_model_beside(DEFAULT_MODEL),
                    help="the classifier to start from (default the shipped one)")
    ap.add_argument("--width", type=float, default=1.0,
                    help="the detector's width; a narrower --detector-init is widened first (default 1)")
    ap.add_argument("--classifier-width", type=float, default=1.0, help="the classifier's width (default 1)")
    ap.add_argument("--detector-lr", type=float, default=2e-4, help="the detector's peak learning rate")
    ap.add_argument("--classifier-lr", type=float, default=5e-4, help="the classifier's peak learning rate")
    ap.add_argument("--detector-batch", type=int, default=16, help="images per detector step")
    ap.add_argument("--classifier-batch", type=int, default=256, help="crops per classifier step")
    ap.add_argument("--hidden-weight", type=float, default=1.0, help="train_scene_parser --hidden-weight")
    ap.add_argument("--visible-peaks", action="store_true", help="train_scene_parser --visible-peaks")
    ap.add_argument("--steps", type=int, default=10**6,
                    help="each schedule's length in steps; the clock ends the runs first unless this is small")
    ap.add_argument("--seed", type=int, default=0, help="the detector's seed (the classifier's is one more)")
    ap.add_argument("--device", default="cpu", help="torch device (cuda on an accelerator)")
    ap.add_argument("--workers", type=int, default=0, help="processes preparing batches (a GPU needs many)")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    args = ap.parse_args(argv)
    if not args.minutes > 0:
        ap.error(f"--minutes must be positive, got {args.minutes:g}")
    if not 0 <= args.classifier_share < 1:
        ap.error(f"--classifier-share must lie in [0, 1), got {args.classifier_share:g}")
    for name in ("detector_init", "classifier_init"):
        if not getattr(args, name).is_file():
            ap.error(f"--{name.replace('_', '-')}: no such file {getattr(args, name)}")

    from logicval_hf.training import train_attribute_classifier, train_scene_parser

    work = args.work or args.out / "work"
    args.out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    minutes = {"detector": args.minutes * (1 - args.classifier_share),
               "classifier": args.minutes * args.classifier_share}
    runs = {"detector": (train_scene_parser.main, detector_argv(args, work, minutes["detector"],
                                                                args.classifier_init)),
            "classifier": (train_attribute_classifier.main, classifier_argv(args, work, minutes["classifier"]))}
    report: dict[str, Any] = {"minutes": args.minutes, "networks": {}}
    for name, (run, run_argv) in runs.items():
        model, last = PRODUCTS[name]
        entry: dict[str, Any] = {"argv": run_argv, "minutes": round(minutes[name], 3)}
        if not minutes[name]:
            entry["skipped"] = "no minutes"
        elif (args.out / model).is_file():
            entry["skipped"] = f"{model} already in --out"
        else:
            start = time.monotonic()
            print(f"parser_round: {name} for {minutes[name]:.2f} minutes", flush=True)
            rc = run(run_argv)
            if rc:
                raise SystemExit(f"parser_round: the {name} run failed (exit {rc})")
            _weights_only(work / name / "last.pt", args.out / last)
            with atomic_path(args.out / model) as tmp:  # the model last: its presence marks the network done
                shutil.copyfile(work / model, tmp)
            entry["wall_minutes"] = round((time.monotonic() - start) / 60, 2)
        entry["held_out"] = _last_figures(work / name)
        report["networks"][name] = entry
    with atomic_path(args.out / "round.json") as tmp:
        tmp.write_text(json.dumps(report, indent=1, default=str))
    print(f"parser_round: products in {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
