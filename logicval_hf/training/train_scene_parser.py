"""Train the learned CLEVR scene parser's detector (``logicval_hf/perception/scene_parser.py``) on renders.

    python -m logicval_hf.training.train_scene_parser --data ../shared/data/clevr_blender \\
        --data /work/cache/clevr_renders/t2i_train --out ~/.cache/logicval/scene_parser --steps 6000 \\
        --export logicval_hf/perception/scene_parser.onnx

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
* **Held out.** The last ``--val-fraction`` of every folder (by file name) is never trained on; through the
  exported parser itself it fits the threshold, temperatures, offset bias and the scene confidence's
  calibration, and gives the validation figures (`parser_export`).

The rooms: `parser_data` (records), `parser_augment` (views), `parser_model` (targets, network, loss, batches),
`parser_export` (validation, calibration, ONNX); this module is the command. Bad input (unreadable or
inconsistent image / scene / mask files) is reported by name and skipped, never used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from logicval_hf.training import loop
from logicval_hf.training.parser_augment import CANVAS, DEFAULT, augment, describe
from logicval_hf.training.parser_data import (
    ATTRIBUTES,
    SIZES,
    DataFolder,
    Record,
    classes,
    load_folder,
    numpy_render,
    parse_data_folder,
    random_layout,
    record_weights,
    split_holdout,
)
from logicval_hf.training.parser_export import calibrate, export_onnx, fit_temperature, meta_for, write_history
from logicval_hf.training.parser_model import (
    OBJECT_WEIGHT,
    Export,
    build_model,
    load_init,
    loss_fn,
    make_batch,
    mask_cells,
    model_width,
    targets,
    visible_points,
    widen_model,
)

__all__ = ["ATTRIBUTES", "CANVAS", "OBJECT_WEIGHT", "SIZES", "Export", "Record", "augment", "build_model",
           "classes", "export_onnx", "fit_temperature", "load_folder", "load_init", "loss_fn", "main", "make_batch",
           "mask_cells", "meta_for", "numpy_render", "random_layout", "split_holdout", "targets", "visible_points"]

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "clevr_blender"
DEFAULT_OUT = Path("~/.cache/logicval/scene_parser").expanduser()
DEFAULT_EXPORT = REPO / "logicval_hf" / "perception" / "scene_parser.onnx"


def numpy_val(n: int, seed: int) -> list[Record]:
    return [numpy_render((seed, 10**6, i)) for i in range(n)]


def do_export(net, args, cls, val: list[Record], step: int, elapsed: float, data_info, history) -> dict:
    init = next((h for h in history if "init" in h), None)
    provenance = {"trained_steps": step, "initialised_from": init, "width": args.width, "canvas": list(args.canvas),
                  "train_seconds": round(elapsed), "seed": args.seed, "batch_size": args.batch_size, "lr": args.lr,
                  "numpy_fraction": args.numpy_fraction, "data": data_info, "augmentation": describe(DEFAULT),
                  "torch": __import__("torch").__version__}
    meta, figures = calibrate(net, cls, val, args.flip_default, provenance,
                              attribute_model=args.attribute_model or False, second_look=not args.no_second_look)
    figures = {"step": step, **figures}
    meta["provenance"]["val"] = figures
    if args.export:
        export_onnx(net, args.export, meta, tuple(args.canvas))
    history.append(figures)
    write_history(args.out, history)
    return figures


def read_init(path: Path) -> tuple[float, dict | None]:
    """The detector in ``path``: its width and, for a training checkpoint, the checkpoint (`loop.read_init`)."""
    return loop.read_init(path, "s4.0.0.weight", model_width, "train_scene_parser", "detector")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logicval_hf.training.train_scene_parser",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=parse_data_folder, action="append", metavar="DIR[#first=N,weight=W]",
                    help="a folder of renders in the CLEVR layout (repeatable; default "
                         f"{DEFAULT_DATA}); #first=N reads only its first N scenes by name, #weight=W gives it that "
                         "share of the batches (relative to the other folders' weights)")
    loop.add_loop_arguments(ap, out=DEFAULT_OUT, steps=6000, warmup=200, seed=14)
    ap.add_argument("--export", type=Path, default=None,
                    help="write the ONNX model here at every --export-every steps and at the end")
    ap.add_argument("--batch-size", type=int, default=12, help="images per step")
    ap.add_argument("--canvas", type=int, nargs=2, default=list(CANVAS), metavar=("W", "H"),
                    help="training crop size in pixels of the working scale (multiples of 32; smaller = more "
                         "steps per hour, the network being fully convolutional)")
    ap.add_argument("--numpy-fraction", type=float, default=0.25,
                    help="share of each batch drawn fresh by the project's numpy renderer (0 = none)")
    ap.add_argument("--val-fraction", type=float, default=0.05,
                    help="last share of every --data folder (by file name) held out for validation/calibration")
    ap.add_argument("--numpy-val", type=int, default=40, help="numpy renders added to the held-out set")
    ap.add_argument("--init", type=Path,
                    help="start from the weights of this checkpoint (fresh optimiser, schedule and step count), "
                         "e.g. an earlier run's last.pt, or of an exported .onnx model (BatchNorm statistics "
                         "re-estimated on training batches); ignored when --out holds a checkpoint to resume")
    ap.add_argument("--flip-default", action="store_true",
                    help="exported model parses each image and its mirror by default (setting flip=True)")
    ap.add_argument("--attribute-model", type=Path, default=None,
                    help="the attribute classifier that will ship beside this detector: the scene confidence's "
                         "power is then fitted on the pair's output (default: on the detector's alone)")
    ap.add_argument("--no-second-look", action="store_true",
                    help="export without the second look at uncertain peaks (logicval_hf.perception.second_look; "
                         "by default its decision threshold is fitted on the held-out images and turned on)")
    ap.add_argument("--hidden-weight", type=float, default=1.0,
                    help="weight of the heat map's positive at the centre of every object whose centre pixel shows "
                         "another object (behind it; the peaks the detector misses most): 1 = as any object")
    ap.add_argument("--visible-peaks", action="store_true",
                    help="train a second heat map at each object's most visible point, with the way back to its "
                         "centre (parser_model.visible_peak_targets): it finds objects whose centre is hidden "
                         "behind another; a checkpoint or model without it starts the new channels at zero")
    ap.add_argument("--width", type=float, default=1.0,
                    help="multiplies the backbone's and the pyramid's channels (1 = every shipped detector so far, "
                         "about 0.8 GMAC at 480x320; 1.25 about 1.5 x that, 1.5 about 2 x). With a narrower --init, "
                         "the trained model is widened first without changing what it computes "
                         "(logicval_hf.training.widen), so training starts from its figures")
    ap.add_argument("--export-only", action="store_true",
                    help="no training: validate, calibrate and export the checkpoint in --out")
    args = ap.parse_args(argv)
    if not args.hidden_weight > 0:
        ap.error(f"--hidden-weight must be positive, got {args.hidden_weight}")
    if any(c % 32 for c in args.canvas):
        ap.error(f"--canvas sides must be multiples of 32, got {args.canvas}")
    if not 0.25 <= args.width <= 4:
        ap.error(f"--width must lie in [0.25, 4], got {args.width:g}")

    loop.start(args)
    cls = classes()

    folders = args.data or [DataFolder(DEFAULT_DATA)]
    train: list[Record] = []
    val: list[Record] = []
    data_info: list[dict] = []
    problems: list[str] = []
    sizes: list[tuple[DataFolder, int]] = []
    for f in folders:
        recs = load_folder(f.path, problems, f.first)
        tr, va = split_holdout(recs, args.val_fraction)
        train += tr
        val += va
        sizes.append((f, len(tr)))
        data_info.append({"folder": str(f.path), "first": f.first, "weight": f.weight, "scenes": len(recs),
                          "train": len(tr), "held_out": len(va), "held_out_first": va[0].name if va else None})
    weights = record_weights(sizes)
    if not train and args.numpy_fraction <= 0:
        ap.error("no usable training scenes and --numpy-fraction 0")
    if args.numpy_val:
        val += numpy_val(args.numpy_val, args.seed)
    print(f"train_scene_parser: {len(train)} training scenes, {len(val)} held out "
          f"({args.numpy_val} numpy renders), {len(problems)} problems", flush=True)

    net = build_model(args.width, visible_peaks=args.visible_peaks)
    ck, resumed = loop.open_checkpoint(args, net, "train_scene_parser")
    if not resumed and args.init:
        init_width, init = read_init(args.init)
        if init_width > args.width:
            raise SystemExit(f"train_scene_parser: {args.init} is a detector of width {init_width:g}; it can be "
                             f"widened, not narrowed to --width {args.width:g}")
        start = net if init_width == args.width else build_model(init_width, visible_peaks=args.visible_peaks)
        if init is None:  # a shipped model whose checkpoint is gone
            from logicval_hf.training.onnx_init import load_onnx_weights

            stats = [make_batch(train, 10**9 + k, args.seed, args.batch_size, args.numpy_fraction,
                                tuple(args.canvas), weights=weights)[0]
                     for k in range(8)]  # steps no run reaches
            info = load_onnx_weights(start, args.init, stats)
            entry = {"init": str(args.init), "init_steps": None, "init_onnx": info}
            said = f"{info['convolutions']} convolutions"
        else:
            load_init(start, init["model"])
            entry = {"init": str(args.init), "init_steps": init["step"], "init_args": init.get("args")}
            said = f"step {init['step']} of that run"
        if start is not net:
            entry["widened"] = {"from": init_width, "to": args.width, **widen_model(start, net, args.seed)}
            said += f", widened {init_width:g} -> {args.width:g}"
        ck.history.append(entry)
        print(f"train_scene_parser: initialised from {args.init} ({said})", flush=True)

    def export() -> str:
        fig = do_export(net, args, cls, val, ck.step, ck.elapsed, data_info, ck.history)
        return (f"held-out {fig['val_at_threshold']} at threshold {fig['threshold']}, T={fig['temperatures']}, "
                f"confidence ECE {fig['confidence_calibration']['ece']:.3f}")

    if args.export_only:
        if not ck.path.is_file():
            ap.error(f"--export-only: no checkpoint {ck.path}")
        print(f"train_scene_parser: exported step {ck.step}: {export()}", flush=True)
        return 0

    def make(step: int):
        return make_batch(train, step, args.seed, args.batch_size, args.numpy_fraction, tuple(args.canvas),
                          weights=weights, hidden_weight=args.hidden_weight, visible_peaks=args.visible_peaks)

    def batch_loss(batch):
        x, heat, idx, reg, attr, aw, hw = batch[:7]
        return loss_fn(net(x), heat, idx, reg, attr, aw, cls, hw, batch[7] if len(batch) > 7 else None)

    loop.train(ck, make, batch_loss, export, "train_scene_parser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
