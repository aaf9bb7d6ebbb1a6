"""Train the scene parser's second stage, the attribute classifier, on renders.

    python -m logicval_hf.training.train_attribute_classifier --data $SHARED/data/clevr_blender \\
        --data "$RENDERS/t2i_train#weight=1.5" --out $CHECKPOINTS/classifier --steps 3000 \\
        --export $CHECKPOINTS/classifier/scene_parser_attributes.onnx

On a GPU add ``--device cuda --workers N`` (N CPU processes prepare the batches; `loop`).

The detector (``train_scene_parser``) finds every object, its centre, box and most visible point; this
network then reads colour, shape, material and size from a crop around the object
(`logicval_hf.perception.parser_decoding.object_crops`: the object's square resampled to 64 px, plus a channel
marking the visible point). Why: the detector's stride-8 attribute features also see the neighbours, so an
occluded object is read with its occluder's colour or shape.

Training data are the detector's: Blender renders in the CLEVR layout with instance masks (the visible point
is the most interior pixel of an object's mask, as the detector is trained to predict) and numpy-renderer
scenes drawn on the fly (``--numpy-fraction``). Real CLEVR is never read here. Crops are jittered the way
the detector errs (centre, size, visible point) and photometrically as the detector's images are.

The network also regresses where the object's centre lies in its crop, an auxiliary task only: the exported
metadata says ``refine_centre: false`` and the parser keeps the detector's centres. ``validate`` reports the
refined centre error beside the jitter it corrects.

Deterministic and resumable like the detector's script: every step's crops depend on ``(seed, step)`` only; the
last 5 % of every folder (the detector's split) is held out for the temperatures and the validation figures.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.perception.parser_decoding import CONTEXT, CROP, MARK_SIGMA, MIN_SIDE, crop_square, object_crops
from logicval_hf.training import loop
from logicval_hf.training.parser_augment import DEFAULT as DEFAULT_AUGMENTATION
from logicval_hf.training.parser_augment import Augmentation, describe
from logicval_hf.training.parser_augment import photometric as augment_photometric
from logicval_hf.training.parser_data import (
    ATTRIBUTES,
    DataFolder,
    Record,
    classes,
    numpy_render,
    record_weights,
    split_folders,
)
from logicval_hf.training.parser_fit import fit_temperature
from logicval_hf.training.parser_model import visible_points

DEFAULT_OUT = Path("~/.cache/logicval/attribute_classifier").expanduser()


@dataclass
class ObjectSample:
    """One object of a record: where it is and what it is."""

    record: int
    centre: tuple[float, float]
    size: tuple[float, float]
    visible: tuple[float, float]
    labels: np.ndarray  # (4,) int, -1 unknown


def object_samples(records: Sequence[Record], first: int = 0) -> list[ObjectSample]:
    """Every object that shows at least one pixel (objects of records without a mask: all, visible point =
    centre). ``first``: index of ``records[0]`` in the list the samples refer to."""
    out = []
    for r, rec in enumerate(records):
        vis = visible_points(rec.mask, len(rec.labels)) if rec.mask is not None else rec.centres
        for k in range(len(rec.labels)):
            if np.isnan(vis[k, 0]):
                continue
            out.append(ObjectSample(first + r, tuple(rec.centres[k]), tuple(rec.sizes[k]), tuple(vis[k]),
                                    rec.labels[k]))
    return out


def jitter(s: ObjectSample, long_side: int, rng: np.random.Generator | None = None
           ) -> tuple[tuple[float, float, float], tuple[float, float]]:
    """The crop square and mark of a sample in an image whose longer side is ``long_side``, moved as the
    detector's estimates err (no ``rng``: exact)."""
    (cx, cy), (w, h), (vx, vy) = s.centre, s.size, s.visible
    if rng is not None:
        e = 0.06 * max(w, h, 8.0)
        cx, cy = cx + rng.normal(0, e), cy + rng.normal(0, e)
        f = math.exp(rng.uniform(-0.15, 0.2))
        w, h = w * f, h * f
        vx, vy = vx + rng.normal(0, 0.3 * e), vy + rng.normal(0, 0.3 * e)
    return crop_square(cx, cy, w, h, vx, vy, long_side), (vx, vy)


def photometric(crop: np.ndarray, rng: np.random.Generator, aug: Augmentation = DEFAULT_AUGMENTATION) -> np.ndarray:
    """The detector's appearance changes (`parser_augment.photometric`) on one crop's RGB (float32 3 x H x W in
    [0, 1]), after a resolution loss (p 0.3): a small object enlarged to the crop size."""
    import cv2

    x = crop.transpose(1, 2, 0) * 255
    if rng.random() < 0.3:  # resolution loss
        n = x.shape[0]
        m = max(8, round(n * rng.uniform(0.4, 0.85)))
        x = cv2.resize(cv2.resize(x, (m, m), interpolation=cv2.INTER_AREA), (n, n), interpolation=cv2.INTER_LINEAR)
    img = augment_photometric(np.clip(x + 0.5, 0, 255).astype(np.uint8), rng, aug)
    return img.transpose(2, 0, 1).astype(np.float32) / 255


def crop_of(rgb: np.ndarray, s: ObjectSample, rng: np.random.Generator | None = None
            ) -> tuple[np.ndarray, np.ndarray, float]:
    """The crop of a sample, its centre target (where the object's centre lies relative to the crop's, in
    crop pixels: the second stage refines the detector's centre, on which regions and relations hang) and
    the crop's side in image pixels."""
    sq, mark = jitter(s, max(rgb.shape[:2]), rng)
    target = (np.array(s.centre) - sq[:2]) * CROP / sq[2]
    return object_crops(rgb, [sq], [mark])[0], target.astype(np.float32), float(sq[2])


def make_batch(records: list[Record], samples: list[ObjectSample], step: int, seed: int, batch_size: int,
               numpy_fraction: float, weights: np.ndarray | None = None,
               aug: Augmentation = DEFAULT_AUGMENTATION):
    """(crops, labels, centre targets) of ``step``: depends on (seed, step) only. Numpy-renderer scenes are
    drawn fresh and all their objects used; flips mirror the crop (attributes are mirror-invariant)."""
    import torch

    rng = np.random.default_rng([seed, step])
    crops: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    centres: list[np.ndarray] = []
    n_numpy = round(batch_size * numpy_fraction) if samples else batch_size
    j = 0
    while len(crops) < n_numpy:  # whole numpy scenes, a few objects each
        rec = numpy_render((seed, step, j))
        j += 1
        for s in object_samples([rec])[:n_numpy - len(crops)]:
            c, t, _ = crop_of(rec.rgb, s, rng)
            crops.append(c)
            centres.append(t)
            labels.append(s.labels)
    while len(crops) < batch_size:
        k = int(rng.choice(len(samples), p=weights)) if weights is not None else int(rng.integers(len(samples)))
        s = samples[k]
        c, t, _ = crop_of(records[s.record].rgb, s, rng)
        crops.append(c)
        centres.append(t)
        labels.append(s.labels)
    for c, t in zip(crops, centres, strict=True):
        c[:3] = photometric(c[:3], rng, aug)
        if rng.random() < 0.5:
            c[:] = c[:, :, ::-1]
            t[0] = -t[0]
    return (torch.from_numpy(np.stack(crops)), torch.from_numpy(np.stack(labels).astype(np.int64)),
            torch.from_numpy(np.stack(centres)))


#: the stages' channels
BASE_CHANNELS = (24, 32, 48, 64, 128)


def build_model():
    """A small CNN on 4 x 64 x 64 crops (0.73 M parameters, about 25 MMAC each): four strided stages to 4 x 4,
    then a fully connected layer (it keeps where in the crop things are, so the mark channel can single out one
    object among its neighbours)."""
    import torch
    from torch import nn

    def cbr(i, o, s=1):
        return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    n_out = sum(len(v) for v in classes().values()) + 2  # attribute logits, centre offset
    c = BASE_CHANNELS

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(cbr(4, c[0], 2), cbr(c[0], c[1]), cbr(c[1], c[2], 2), cbr(c[2], c[2]),
                                          cbr(c[2], c[3], 2), cbr(c[3], c[3]), cbr(c[3], c[4], 2), cbr(c[4], c[4]))
            self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(c[4] * 16, 192),
                                      nn.ReLU(inplace=True), nn.Linear(192, n_out))

        def forward(self, crops):
            x = torch.cat([(crops[:, :3] - 0.5) / 0.25, crops[:, 3:]], 1)
            out = self.head(self.features(x))
            return out[:, :-2], out[:, -2:]

    return Net()


#: weight of the centre offset's smooth-L1 loss (crop pixels) beside the attributes' cross-entropies
CENTRE_WEIGHT = 0.2


def cross_entropies(logits, labels, cls):
    """Per attribute: (name, each crop's cross-entropy (N,), which crops have that label (N,) bool). Crops
    without a label get the loss of class 0, to be masked out by the caller."""
    import torch.nn.functional as F

    start = 0
    for k, a in enumerate(ATTRIBUTES):
        m = len(cls[a])
        lab = labels[:, k]
        yield a, F.cross_entropy(logits[:, start:start + m], lab.clamp(min=0), reduction="none"), lab >= 0
        start += m


def loss_fn(logits, centre, labels, centre_target, cls):
    import torch.nn.functional as F

    lc = F.smooth_l1_loss(centre, centre_target)
    total, parts = CENTRE_WEIGHT * lc, {"centre": float(lc.detach())}
    for a, ce, known in cross_entropies(logits, labels, cls):
        if known.any():
            la = ce[known].mean()
            total = total + la
            parts[a] = float(la.detach())
    return total, parts


def validate(net, records: list[Record], samples: list[ObjectSample], cls, seed: int = 0) -> dict[str, Any]:
    """On held-out objects, crops jittered as in training (a fixed stream, no photometric change): accuracy per
    attribute and of all perceived attributes, the logits (for the temperatures), and the centre's median error
    in image pixels before and after the refinement."""
    import torch

    rng = np.random.default_rng([seed, 10**6])
    net.eval()
    logits, before, after = [], [], []
    with torch.no_grad():
        for start in range(0, len(samples), 128):
            chunk = samples[start:start + 128]
            pairs = [crop_of(records[s.record].rgb, s, rng) for s in chunk]
            x = np.stack([p[0] for p in pairs])
            z, c = net(torch.from_numpy(x))
            logits.append(z.numpy())
            for (_, t, side), pred in zip(pairs, c.numpy(), strict=True):
                before.append(np.abs(t) * side / CROP)
                after.append(np.abs(t - pred) * side / CROP)
    net.train()
    z = np.concatenate(logits) if logits else np.zeros((0, sum(map(len, cls.values()))))
    labels = np.stack([s.labels for s in samples]) if samples else np.zeros((0, 4), int)
    acc, rows, start, all_ok = {}, {}, 0, np.ones(len(samples), bool)
    for k, a in enumerate(ATTRIBUTES):
        m = len(cls[a])
        known = labels[:, k] >= 0
        pred = z[:, start:start + m].argmax(1)
        if known.any():
            acc[a] = float((pred[known] == labels[known, k]).mean())
        if a != "size":
            all_ok &= ~known | (pred == labels[:, k])
        rows[a] = (z[known, start:start + m], labels[known, k])
        start += m
    return {"objects": len(samples), "accuracy": acc,
            "all_perceived_right": float(all_ok.mean()) if len(samples) else 0.0,
            "centre_error_px": {"jittered": float(np.median(before)) if before else 0.0,
                                "refined": float(np.median(after)) if after else 0.0},
            "_logits": rows}


def export_onnx(net, path: Path, meta: dict[str, Any]) -> None:
    """ONNX with a dynamic batch of crops, metadata embedded; written atomically."""
    import torch

    loop.export_onnx(net, net, path, torch.zeros(1, 4, CROP, CROP), ["crops"], ["logits", "centre"],
                     {"crops": {0: "n"}, "logits": {0: "n"}, "centre": {0: "n"}}, meta,
                     "LogicVal-HF CLEVR attribute classifier (see logicval_hf/perception/scene_parser.md)")


def main(argv: list[str] | None = None) -> int:
    ap = loop.command("logicval_hf.training.train_attribute_classifier", __doc__)
    loop.add_loop_arguments(ap, out=DEFAULT_OUT, steps=3000, warmup=150, seed=21, drawn="rendered objects")
    ap.add_argument("--export", type=Path, default=None,
                    help="write the ONNX model here at every --export-every steps and at the end (name it "
                         "<detector stem>_attributes.onnx beside the detector for the parser to use it)")
    ap.add_argument("--batch-size", type=int, default=64, help="object crops per step")
    ap.add_argument("--numpy-fraction", type=float, default=0.25,
                    help="share of each batch's crops from scenes drawn fresh by the numpy renderer (0 = none)")
    ap.add_argument("--init", type=Path,
                    help="start from these weights (fresh optimiser and schedule): an earlier run's last.pt or an "
                         "exported .onnx classifier such as the shipped scene_parser_attributes.onnx; ignored when "
                         "--out holds a checkpoint to resume")
    ap.add_argument("--white-balance", type=float, default=DEFAULT_AUGMENTATION.white_balance_log, metavar="LOG",
                    help="per-channel white-balance gains drawn within exp(+-LOG) in linear light (default "
                         f"{DEFAULT_AUGMENTATION.white_balance_log}; light of other colour temperatures needs more)")
    args = loop.parse(ap, argv)
    if not 0 <= args.white_balance <= 1:
        ap.error(f"--white-balance must lie in [0, 1], got {args.white_balance}")
    aug = replace(DEFAULT_AUGMENTATION, white_balance_log=args.white_balance)

    import torch

    loop.start(args)
    cls = classes()

    records: list[Record] = []
    train: list[ObjectSample] = []
    val: list[ObjectSample] = []
    data_info: list[dict] = []
    sizes: list[tuple[DataFolder, int]] = []
    for split in split_folders(args.data, "train_attribute_classifier"):
        samples = object_samples(split.train, len(records))
        train += samples
        sizes.append((split.folder, len(samples)))
        val += object_samples(split.held_out, len(records) + len(split.train))
        records += split.train + split.held_out
        data_info.append(split.provenance())
    weights = record_weights(sizes)
    if not train and args.numpy_fraction <= 0:
        ap.error("no usable training objects and --numpy-fraction 0")
    print(f"train_attribute_classifier: {len(train)} training objects, {len(val)} held out", flush=True)

    net = build_model()
    ck, resumed = loop.open_checkpoint(args, net, "train_attribute_classifier")
    if not resumed and args.init:
        def stats() -> list:
            return [make_batch(records, train, 10**9 + k, args.seed, args.batch_size, args.numpy_fraction, weights,
                               aug)[0] for k in range(4)]

        ck.history.append(loop.initialise(net, args.init, stats, "train_attribute_classifier", "classifier"))

    def export() -> str:
        step, elapsed = ck.step, ck.elapsed
        v = validate(net, records, val, cls, args.seed)
        temps = {a: fit_temperature(*v["_logits"][a]) for a in ATTRIBUTES}
        figures = {"step": step, "val_objects": v["objects"], "accuracy": v["accuracy"],
                   "all_perceived_right": v["all_perceived_right"], "centre_error_px": v["centre_error_px"],
                   "temperatures": temps}
        ck.history.append(figures)
        (args.out / "history.json").write_text(json.dumps(ck.history, indent=1))
        if args.export:
            # the centre head trains as an auxiliary task; the parser keeps the detector's centres
            meta = {"version": 1, "refine_centre": False, "attributes": list(ATTRIBUTES),
                    "classes": {a: list(c) for a, c in cls.items()},
                    "temperatures": temps, "input": "float32 N x 4 x CROP x CROP: RGB in [0, 1], mark",
                    "crop": {"size": CROP, "context": CONTEXT, "min_side": MIN_SIDE, "mark_sigma": MARK_SIGMA},
                    "provenance": {"trained_steps": step, "train_seconds": round(elapsed), "seed": args.seed,
                                   "initialised_from": next((h for h in ck.history if "init" in h), None),
                                   "batch_size": args.batch_size, "lr": args.lr,
                                   "numpy_fraction": args.numpy_fraction, "data": data_info, "val": figures,
                                   "augmentation": describe(aug), "torch": torch.__version__}}
            export_onnx(net, args.export, meta)
        return (f"held-out {figures['accuracy']}, all right {figures['all_perceived_right']:.4f}, centre error "
                f"{figures['centre_error_px']}, T={figures['temperatures']}")

    def make(step: int):
        return make_batch(records, train, step, args.seed, args.batch_size, args.numpy_fraction, weights, aug)

    def batch_loss(batch):
        x, y, t = batch
        logits, centre = net(x)
        return loss_fn(logits, centre, y, t, cls)

    loop.train(ck, make, batch_loss, export, "train_attribute_classifier")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
