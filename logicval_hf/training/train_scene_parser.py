"""Train the learned CLEVR scene parser (``logicval_hf/perception/scene_parser.py``) on renders, on the CPU.

    python -m logicval_hf.training.train_scene_parser --data ../shared/data/clevr_blender \\
        --out ~/.cache/logicval/scene_parser --steps 6000 --export logicval_hf/perception/scene_parser.onnx

Training data are Blender renders of the official CLEVR assets (folders in the CLEVR layout: ``images/``,
``scenes/*.json`` or ``scenes.json`` with ``pixel_coords`` and ``bbox_xyxy`` or a ``masks/`` instance mask)
plus images of the project's numpy renderer drawn on the fly (``--numpy-fraction``), because the main job
scores those images with the same model. Real CLEVR images are never read here: they are the evaluation set.

Why these choices:

* **Centres, not boxes.** The project derives regions and relations from box centres and CLEVR's truth from
  the projected 3D centre (``pixel_coords``); the heat map is centred there (numpy renders: the drawn box
  centre, which is their truth), and the box size is regressed only to emit a plausible box.
* **Augmentation** closes the gap to real images: denoised renders are cleaner than CLEVR (sensor noise),
  real images are PNG or JPEG (re-encode), 320x240 CLEVR images are enlarged to the working scale (resolution
  loss), plus small colour jitter (colours must stay identifiable), scale jitter, crops and horizontal flips.
* **Deterministic and resumable.** Every step draws its batch and augmentation from ``seed`` and the step
  number alone, so a run resumed from a checkpoint continues exactly as an uninterrupted run would.
* **Held out.** The last ``--val-fraction`` of every folder (by file name) is never trained on; it fits the
  softmax temperatures and the detection threshold at export and gives the validation figures.

Bad input (unreadable or inconsistent image / scene files) is reported by name and skipped, never used.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from logicval_hf.training import loop

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "clevr_blender"
DEFAULT_OUT = Path("~/.cache/logicval/scene_parser").expanduser()
DEFAULT_EXPORT = REPO / "logicval_hf" / "perception" / "scene_parser.onnx"

ATTRIBUTES = ("color", "shape", "material", "size")
SIZES = ("large", "small")
CANVAS = (480, 320)  # training canvas (W, H), CLEVR's image size


def classes() -> dict[str, tuple[str, ...]]:
    from logicval_hf import load_catalog

    dom = load_catalog().domain
    out = {a: tuple(dom.attributes[a]) for a in ("color", "shape", "material")}
    out["size"] = SIZES
    return out


# ---- data -----------------------------------------------------------------------------------------------
@dataclass
class Record:
    """One training image with its objects: centres and box sizes in the image's pixels, class indices per
    attribute (-1: unknown, e.g. size for numpy renders)."""

    name: str
    rgb: np.ndarray
    centres: np.ndarray  # (K, 2) float
    sizes: np.ndarray  # (K, 2) float: box width, height
    labels: np.ndarray  # (K, 4) int
    #: (H, W) int16 object index per pixel (-1: floor), from the instance mask; None when the folder has none
    #: (numpy renders). With it, attributes are supervised on the pixels each object really shows.
    mask: np.ndarray | None = None


def _bbox_from_mask(mask: np.ndarray, index: int) -> list[int] | None:
    ys, xs = np.nonzero(mask == index)
    if len(xs) == 0:
        return None
    return [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())]


def _scene_entries(folder: Path, report: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(source name, scene dict) of a folder: ``scenes/*.json`` one scene each, else ``scenes.json``."""
    entries = []
    per_file = sorted((folder / "scenes").glob("*.json")) if (folder / "scenes").is_dir() else []
    if per_file:
        for p in per_file:
            try:
                d = json.loads(p.read_text())
                if not isinstance(d, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError, UnicodeDecodeError) as e:
                report.append(f"{p}: unreadable scene file ({e}); skipped")
                continue
            entries.append((str(p), d))
        return entries
    p = folder / "scenes.json"
    if not p.is_file():
        report.append(f"{folder}: no scenes/*.json and no scenes.json; folder skipped")
        return []
    try:
        d = json.loads(p.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as e:
        report.append(f"{p}: unreadable scene file ({e}); folder skipped")
        return []
    scenes = d.get("scenes", d) if isinstance(d, dict) else d
    if not isinstance(scenes, list):
        report.append(f"{p}: expected a list of scenes; folder skipped")
        return []
    for i, s in enumerate(scenes):
        if isinstance(s, dict):
            entries.append((f"{p}[{i}]", s))
        else:
            report.append(f"{p}[{i}]: not a JSON object; skipped")
    return entries


def _record(folder: Path, source: str, s: dict[str, Any], cls: dict[str, tuple[str, ...]]) -> Record:
    """A `Record` from one scene dict, or ValueError naming what is wrong."""
    from logicval_hf.perception import load_image

    name = s.get("image_filename")
    if not isinstance(name, str) or not name:
        raise ValueError("no image_filename")
    objs = s.get("objects")
    if not isinstance(objs, list):
        raise ValueError("no objects list")
    path = folder / "images" / name
    rgb = load_image(path)  # PerceptionError (a ValueError) names the file
    H, W = rgb.shape[:2]
    mask = None
    mpath = folder / (s.get("mask_filename") or f"masks/{name}")
    if mpath.is_file():
        from PIL import Image

        try:
            with Image.open(mpath) as m:
                mask = np.asarray(m)
        except (OSError, ValueError) as e:
            raise ValueError(f"unreadable mask {mpath} ({e})") from None
        if mask.ndim != 2 or mask.shape != (H, W):
            raise ValueError(f"mask {mpath} is {mask.shape[1::-1]}, image {W}x{H} (expected one 8-bit channel)")
    centres, sizes, labels = [], [], []
    for i, o in enumerate(objs):
        lab = []
        for a in ATTRIBUTES:
            v = o.get(a)
            if a == "size" and v is None:
                lab.append(-1)
                continue
            if v not in cls[a]:
                raise ValueError(f"object {i}: {a} {v!r} is not one of {list(cls[a])}")
            lab.append(cls[a].index(v))
        pc = o.get("pixel_coords")
        if not (isinstance(pc, list) and len(pc) >= 2 and all(isinstance(x, (int, float)) for x in pc[:2])):
            raise ValueError(f"object {i}: no pixel_coords")
        cx, cy = float(pc[0]), float(pc[1])
        if not (0 <= cx < W and 0 <= cy < H):
            raise ValueError(f"object {i}: pixel_coords {pc[:2]} outside the {W}x{H} image")
        box = o.get("bbox_xyxy")
        if box is None:
            if mask is None:
                raise ValueError(f"object {i}: no bbox_xyxy and no mask {mpath}")
            box = _bbox_from_mask(mask, int(o.get("mask_index", i + 1)))
            if box is None:
                raise ValueError(f"object {i}: empty in the mask")
        if not (isinstance(box, list) and len(box) == 4 and box[2] >= box[0] and box[3] >= box[1]):
            raise ValueError(f"object {i}: bad bbox_xyxy {box!r}")
        centres.append((cx, cy))
        sizes.append((box[2] - box[0] + 1.0, box[3] - box[1] + 1.0))  # inclusive pixel bounds
        labels.append(lab)
    objmap = None
    if mask is not None:
        objmap = np.full(mask.shape, -1, np.int16)
        for i, o in enumerate(objs):
            objmap[mask == int(o.get("mask_index", i + 1))] = i
    return Record(name, rgb, np.array(centres, float).reshape(-1, 2), np.array(sizes, float).reshape(-1, 2),
                  np.array(labels, int).reshape(-1, 4), objmap)


def load_folder(folder: Path, report: list[str] | None = None) -> list[Record]:
    """Every usable scene of a CLEVR-layout folder, sorted by image name. Problems go to ``report`` (one line
    naming the file) and to stderr; the scene is skipped."""
    folder = Path(folder)
    report = [] if report is None else report
    cls = classes()
    out = []
    for source, s in _scene_entries(folder, report):
        try:
            out.append(_record(folder, source, s, cls))
        except ValueError as e:
            report.append(f"{source} ({s.get('image_filename', '?')}): {e}; skipped")
    for line in report:
        print(f"train_scene_parser: {line}", file=sys.stderr)
    return sorted(out, key=lambda r: r.name)


def split_holdout(records: list[Record], fraction: float) -> tuple[list[Record], list[Record]]:
    """The last ``fraction`` of a folder's records (by name) are held out; at least one when there are two."""
    k = int(round(len(records) * fraction))
    if fraction > 0 and k == 0 and len(records) >= 2:
        k = 1
    return (records[:len(records) - k], records[len(records) - k:]) if k else (records, [])


def random_layout(rng: np.random.Generator, k: int, size: tuple[int, int], cls: dict[str, tuple[str, ...]]):
    """A layout request for the numpy renderer: ``k`` objects, random attributes, centres anywhere (the
    renderer spaces them and returns the boxes it drew)."""
    from logicval_hf import Scene, SceneObject

    W, H = size
    objs = []
    for _ in range(k):
        cx, cy = rng.uniform(0.04 * W, 0.96 * W), rng.uniform(0.06 * H, 0.94 * H)
        attrs = {a: cls[a][rng.integers(len(cls[a]))] for a in ("color", "shape", "material")}
        objs.append(SceneObject(attrs, (cx - 10, cy - 10, cx + 10, cy + 10)))
    return Scene((W, H), tuple(objs))


def numpy_render(seed: Sequence[int], min_objects: int = 1, max_objects: int = 9) -> Record:
    """One scene of the project's numpy renderer; truth = the drawn scene (box centres, as the main job scores
    them). Every fourth is 320x240, as in ``train_clevr.rendered_scenes``."""
    from logicval_hf.generation.render import render_scene

    cls = classes()
    rng = np.random.default_rng(list(seed))
    size = (320, 240) if rng.random() < 0.25 else (480, 320)
    spec = random_layout(rng, int(rng.integers(min_objects, max_objects + 1)), size, cls)
    img, drawn = render_scene(spec, size, seed=int(rng.integers(2**31)))
    centres, sizes, labels = [], [], []
    for o in drawn.objects:
        x0, y0, x1, y1 = o.bbox
        centres.append(((x0 + x1) / 2, (y0 + y1) / 2))
        sizes.append((x1 - x0, y1 - y0))
        labels.append([cls[a].index(o.attributes[a]) for a in ("color", "shape", "material")] + [-1])
    return Record(f"numpy-{'-'.join(map(str, seed))}", np.asarray(img.convert("RGB")),
                  np.array(centres, float).reshape(-1, 2), np.array(sizes, float).reshape(-1, 2),
                  np.array(labels, int).reshape(-1, 4))


# ---- augmentation ---------------------------------------------------------------------------------------
def augment(rec: Record, rng: np.random.Generator, canvas: tuple[int, int] = CANVAS, strong: bool = True
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """A training view of ``rec`` on a ``canvas``-sized image: (rgb uint8, centres, sizes, labels, object map,
    kept) with only the objects whose centre lies on the canvas (``kept``: their indices in ``rec``); the
    object map (or None) follows the same geometry and still names every object of ``rec``.
    ``strong=False``: the inference geometry only (validation)."""
    import cv2

    from logicval_hf.perception.scene_parser import pad_to_multiple, resize, target_scale

    img = rec.rgb
    H0, W0 = img.shape[:2]
    s = target_scale(W0, H0)
    if strong and rng.random() < 0.5:
        s *= math.exp(rng.uniform(math.log(0.8), math.log(1.2)))
    if strong and rng.random() < 0.2:  # resolution loss, e.g. a 320x240 CLEVR image enlarged 1.5x
        f = rng.uniform(0.55, 0.85)
        small = resize(img, s * f)
        img = cv2.resize(small, (max(1, round(W0 * s)), max(1, round(H0 * s))), interpolation=cv2.INTER_LINEAR)
    else:
        img = resize(img, s)
    h, w = img.shape[:2]
    objmap = None
    if rec.mask is not None:
        objmap = cv2.resize(rec.mask, (w, h), interpolation=cv2.INTER_NEAREST) if (w, h) != (W0, H0) else rec.mask
    sx, sy = w / W0, h / H0
    centres = rec.centres * [sx, sy]
    sizes = rec.sizes * [sx, sy]
    labels = rec.labels
    Wc, Hc = canvas
    if strong:
        ox = int(rng.integers(min(Wc - w, 0), max(Wc - w, 0) + 1))
        oy = int(rng.integers(min(Hc - h, 0), max(Hc - h, 0) + 1))
    else:
        ox = oy = 0
    if (ox, oy) != (0, 0) or (w, h) != (Wc, Hc):
        left, top = max(ox, 0), max(oy, 0)
        right, bottom = max(Wc - w - ox, 0), max(Hc - h - oy, 0)
        img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_REPLICATE)
        x0, y0 = max(-ox, 0), max(-oy, 0)
        img = img[y0:y0 + Hc, x0:x0 + Wc]
        if objmap is not None:
            objmap = cv2.copyMakeBorder(objmap, top, bottom, left, right, cv2.BORDER_CONSTANT, value=-1)
            objmap = objmap[y0:y0 + Hc, x0:x0 + Wc]
        centres = centres + [ox, oy]
    keep = (centres[:, 0] >= 0) & (centres[:, 0] < Wc) & (centres[:, 1] >= 0) & (centres[:, 1] < Hc)
    kept = np.nonzero(keep)[0]
    centres, sizes, labels = centres[keep], sizes[keep], labels[keep]
    if not strong:
        if objmap is not None:
            objmap = pad_to_multiple(objmap, fill=-1)
        return pad_to_multiple(np.ascontiguousarray(img)), centres, sizes, labels, objmap, kept
    if rng.random() < 0.5:
        img = img[:, ::-1]
        objmap = None if objmap is None else np.ascontiguousarray(objmap[:, ::-1])
        centres = np.stack([Wc - centres[:, 0], centres[:, 1]], 1) if len(centres) else centres
    x = img.astype(np.float32)
    if rng.random() < 0.8:  # small photometric jitter: colours stay identifiable
        gain = rng.uniform(0.9, 1.1) * rng.uniform(0.965, 1.035, size=3)
        mean = x.mean()
        contrast = rng.uniform(0.9, 1.1)
        x = (x - mean) * contrast + mean
        x = x * gain + rng.uniform(-6, 6)
    if rng.random() < 0.3:
        x = cv2.GaussianBlur(x, (0, 0), rng.uniform(0.3, 1.0))
    if rng.random() < 0.7:
        x = x + rng.normal(0, rng.uniform(0.3, 3.0), size=x.shape).astype(np.float32)
    img = np.clip(x + 0.5, 0, 255).astype(np.uint8)
    if rng.random() < 0.5:
        ok, buf = cv2.imencode(".jpg", img[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(60, 96))])
        img = cv2.imdecode(buf, cv2.IMREAD_COLOR)[:, :, ::-1]
    return np.ascontiguousarray(img), centres, sizes, labels, objmap, kept


def visible_points(objmap: np.ndarray, n: int) -> np.ndarray:
    """(n, 2) pixel (x, y) per object: its most interior visible pixel (farthest from any other object's or
    the floor's pixels), NaN where the object shows no pixel. Why: an occluded object's projected centre may
    lie on its occluder; its attributes are read where it can be seen."""
    import cv2

    out = np.full((n, 2), np.nan)
    if n == 0:
        return out
    m = objmap.astype(np.int32)
    edge = np.zeros(m.shape, bool)
    edge[:, 1:] |= m[:, 1:] != m[:, :-1]
    edge[:, :-1] |= m[:, 1:] != m[:, :-1]
    edge[1:] |= m[1:] != m[:-1]
    edge[:-1] |= m[1:] != m[:-1]
    edge[[0, -1]] = True
    edge[:, [0, -1]] = True
    dist = cv2.distanceTransform((~edge).astype(np.uint8), cv2.DIST_L2, 3)
    flat, dflat = m.ravel(), dist.ravel()
    order = np.lexsort((-dflat, flat))  # by object, deepest first
    objs, first = np.unique(flat[order], return_index=True)
    for k, i0 in zip(objs, first):
        if 0 <= k < n:
            y, x = divmod(int(order[i0]), m.shape[1])
            out[k] = (x + 0.5, y + 0.5)
    return out


#: total attribute-loss weight of one object labelled from its mask
OBJECT_WEIGHT = 4.0


def mask_cells(objmap: np.ndarray, grid: tuple[int, int], stride: int, n: int, min_cover: float = 0.4
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per cell the object covering most of it (-1: none) and that share as the weight (0 below
    ``min_cover``): attribute supervision on the pixels each object shows, never on its occluder's."""
    gh, gw = grid
    m = objmap[:gh * stride, :gw * stride].astype(np.int64)
    if m.shape != (gh * stride, gw * stride):
        m = np.pad(m, ((0, gh * stride - m.shape[0]), (0, gw * stride - m.shape[1])), constant_values=-1)
    if n == 0:
        return np.full((gh, gw), -1, np.int64), np.zeros((gh, gw), np.float32)
    onehot = (m[None] == np.arange(n)[:, None, None]).reshape(n, gh, stride, gw, stride).mean((2, 4))
    owner = onehot.argmax(0)
    cover = onehot.max(0).astype(np.float32)
    owner[cover < min_cover] = -1
    cover[cover < min_cover] = 0
    return owner, cover


def targets(centres: np.ndarray, sizes: np.ndarray, labels: np.ndarray, grid: tuple[int, int], stride: int,
            objmap: np.ndarray | None = None, kept: np.ndarray | None = None, all_labels: np.ndarray | None = None):
    """CenterNet targets on a ``grid = (h, w)`` of cells: heat (Gaussian per object, 1 at its centre cell),
    per-object rows (cell index, offset, log size, weight, visible-point offset) at its centre cell and the 8
    around it, and per-cell attribute labels (-1 = none) with weights.

    Attribute cells: with an object map (``objmap``, indices into ``all_labels``; ``kept`` maps the centred
    objects into it) each cell is labelled by the object covering most of it; without one, around each centre
    (the cell's nearest object by a size-scaled distance owns it). The visible-point offset points from the
    cell to the object's most interior visible pixel (its centre without a map)."""
    gh, gw = grid
    vis = None
    if objmap is not None:
        vis = visible_points(objmap, len(all_labels))[kept]
    heat = np.zeros((gh, gw), np.float32)
    attr = np.full((len(ATTRIBUTES), gh, gw), -1, np.int64)
    aw = np.zeros((gh, gw), np.float32)
    idx, reg, peaks = [], [], []
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32)
    for k, ((cx, cy), (bw, bh), lab) in enumerate(zip(centres, sizes, labels)):
        c = np.array([cx, cy]) / stride
        ix, iy = min(int(c[0]), gw - 1), min(int(c[1]), gh - 1)
        sig = max(0.5, 0.12 * math.sqrt(max(bw * bh, 1.0)) / stride)
        d2 = (xx - ix) ** 2 + (yy - iy) ** 2
        heat = np.maximum(heat, np.exp(-d2 / (2 * sig * sig)))
        v = c if vis is None or np.isnan(vis[k, 0]) else vis[k] / stride
        if objmap is None:
            sa = max(0.8, 0.2 * min(bw, bh) / stride)
            wa = np.exp(-d2 / (2 * sa * sa))
            wa[wa < 0.2] = 0
            wa[iy, ix] = 1.0
            own = wa > aw
            aw[own] = wa[own]
            attr[:, own] = lab[:, None]
        peaks.append(iy * gw + ix)
        lw, lh = math.log(max(bw, 1.0) / stride), math.log(max(bh, 1.0) / stride)
        # offsets relative to the centre cell and to its 8 neighbours (half weight): wherever the peak
        # lands, the offset read there points at the true centre
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                jx, jy = ix + dx, iy + dy
                if 0 <= jx < gw and 0 <= jy < gh:
                    idx.append(jy * gw + jx)
                    reg.append([c[0] - jx, c[1] - jy, lw, lh, 1.0 if dx == dy == 0 else 0.5, v[0] - jx, v[1] - jy])
    for i in peaks:  # overlapping Gaussians: keep the exact peaks at 1
        heat.flat[i] = 1.0
    if objmap is not None:
        owner, cover = mask_cells(objmap, grid, stride, len(all_labels))
        on = owner >= 0
        attr[:, on] = all_labels[owner[on]].T
        # every object weighs the same in total (OBJECT_WEIGHT, about what the Gaussian labels give a small
        # object), however many cells it covers: else near, large objects drown the small ones at the back
        totals = np.bincount(owner[on], weights=cover[on], minlength=len(all_labels))
        aw = np.zeros_like(cover)
        aw[on] = cover[on] * OBJECT_WEIGHT / totals[owner[on]]
    return heat, np.array(idx, np.int64), np.array(reg, np.float32).reshape(-1, 7), attr, aw


# ---- model ----------------------------------------------------------------------------------------------
def build_model(width: int = 1):
    """A small FPN-like fully convolutional network, stride 8 output (about 0.8 GMAC at 480x320)."""
    import torch
    from torch import nn

    def cbr(i, o, s=1):
        return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    n_out = 1 + 4 + sum(len(v) for v in classes().values()) + 2  # heat, reg, logits, visible-point offset
    c1, c2, c3, c4, c5 = (16 * width, 32 * width, 64 * width, 96 * width, 128 * width)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.s4 = nn.Sequential(cbr(3, c1, 2), cbr(c1, c2, 2), cbr(c2, c2))
            self.s8 = nn.Sequential(cbr(c2, c3, 2), cbr(c3, c3), cbr(c3, c3))
            self.s16 = nn.Sequential(cbr(c3, c4, 2), cbr(c4, c4), cbr(c4, c4))
            self.s32 = nn.Sequential(cbr(c4, c5, 2), cbr(c5, c5), cbr(c5, c5))
            self.lat16 = nn.Conv2d(c5, c4, 1)
            self.fuse16 = cbr(c4, c4)
            self.lat8 = nn.Conv2d(c4, c3, 1)
            self.fuse8 = cbr(c3, c3)
            self.head = nn.Sequential(cbr(c3, 96), nn.Conv2d(96, n_out, 1))
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            with torch.no_grad():
                self.head[-1].bias.zero_()
                self.head[-1].bias[0] = -2.19  # heat prior 0.1 (CenterNet)

        def forward(self, x):
            x = (x - 0.5) / 0.25
            f8 = self.s8(self.s4(x))
            f16 = self.s16(f8)
            f32 = self.s32(f16)
            f16 = self.fuse16(f16 + self.up(self.lat16(f32)))
            f8 = self.fuse8(f8 + self.up(self.lat8(f16)))
            return self.head(f8)

    return Net()


class Export:
    """The inference graph: heat sigmoid with 3x3 max-pool peak picking, regression, attribute logits."""

    @staticmethod
    def wrap(net):
        import torch
        from torch import nn

        class Wrapped(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net

            def forward(self, image):
                out = self.net(image)
                heat = torch.sigmoid(out[:, :1])
                peak = heat * (nn.functional.max_pool2d(heat, 3, 1, 1) == heat).to(heat.dtype)
                return peak, out[:, 1:5], out[:, 5:-2], heat, out[:, -2:]

        return Wrapped().eval()


def load_init(net, state: dict[str, Any]) -> None:
    """Load ``state`` into ``net``; a checkpoint from before the visible-point head (two output channels
    fewer) keeps its channels and the new ones start at zero (= read attributes at the centre, as before)."""
    import torch

    own = net.state_dict()
    for k in ("head.1.weight", "head.1.bias"):
        if k in state and state[k].shape[0] + 2 == own[k].shape[0]:
            w = torch.zeros_like(own[k])
            w[:state[k].shape[0]] = state[k]
            state = {**state, k: w}
    net.load_state_dict(state)


def loss_fn(out, heat, idx, reg, attr, aw, cls):
    """Focal loss on the heat map, L1 on offset and log size at centre cells, weighted cross-entropy per
    attribute around each centre."""
    import torch
    import torch.nn.functional as F

    n = out.shape[0]
    p = torch.sigmoid(out[:, 0]).clamp(1e-4, 1 - 1e-4)
    pos = heat == 1
    n_pos = max(int(pos.sum()), 1)
    l_heat = -(((1 - p) ** 2 * torch.log(p))[pos].sum()
               + (((1 - heat) ** 4) * p ** 2 * torch.log(1 - p))[~pos].sum()) / n_pos
    flat = out.flatten(2)  # n, C, h*w
    l_reg = out.new_zeros(())
    rows = [(b, i) for b in range(n) for i in range(len(idx[b]))]
    if rows:
        bsel = torch.tensor([b for b, _ in rows])
        csel = torch.cat([idx[b] for b in range(n)])
        pr = torch.cat([flat[bsel, 1:5, csel], flat[bsel, -2:, csel]], 1)
        gt = torch.cat([reg[b] for b in range(n)])
        w = gt[:, 4:5]
        l_reg = ((pr - torch.cat([gt[:, :4], gt[:, 5:7]], 1)).abs() * w).sum() / w.sum()
    l_attr = out.new_zeros(())
    start = 5
    parts = {}
    for k, a in enumerate(ATTRIBUTES):
        m = len(cls[a])
        logits = out[:, start:start + m]
        start += m
        lab = attr[:, k]
        ce = F.cross_entropy(logits, lab.clamp(min=0), reduction="none")
        w = aw * (lab >= 0)
        la = (ce * w).sum() / w.sum().clamp(min=1.0)
        parts[a] = float(la.detach())
        l_attr = l_attr + la
    total = l_heat + l_reg + l_attr
    return total, {"heat": float(l_heat.detach()), "reg": float(l_reg.detach()), **parts}


# ---- batches --------------------------------------------------------------------------------------------
def make_batch(train: list[Record], step: int, seed: int, batch_size: int, numpy_fraction: float,
               canvas: tuple[int, int] = CANVAS, stride: int = 8):
    """The batch of ``step``: depends on (seed, step) only, so resuming reproduces an uninterrupted run."""
    import torch

    rng = np.random.default_rng([seed, step])
    imgs, heats, idxs, regs, attrs, aws = [], [], [], [], [], []
    for j in range(batch_size):
        if not train or rng.random() < numpy_fraction:
            rec = numpy_render((seed, step, j))
        else:
            rec = train[int(rng.integers(len(train)))]
        img, c, s, lab, objmap, kept = augment(rec, rng, canvas)
        h, w = img.shape[0] // stride, img.shape[1] // stride
        heat, idx, reg, attr, aw = targets(c, s, lab, (h, w), stride, objmap, kept, rec.labels)
        imgs.append(img.transpose(2, 0, 1))
        heats.append(heat)
        idxs.append(torch.from_numpy(idx))
        regs.append(torch.from_numpy(reg))
        attrs.append(attr)
        aws.append(aw)
    x = torch.from_numpy(np.stack(imgs)).float().div_(255)
    return (x, torch.from_numpy(np.stack(heats)), idxs, regs, torch.from_numpy(np.stack(attrs)),
            torch.from_numpy(np.stack(aws)))


# ---- validation, calibration, export --------------------------------------------------------------------
def meta_for(cls, temperatures: dict[str, float], threshold: float, provenance: dict[str, Any],
             flip: bool = False, offset_bias: Sequence[float] = (0.0, 0.0)) -> dict[str, Any]:
    from logicval_hf.perception.scene_parser import LONG_SIDE, MULTIPLE, STRIDE

    return {"version": 2, "visible_point": True, "flip": flip, "offset_bias": [round(float(b), 4) for b in offset_bias], "attributes": list(ATTRIBUTES), "classes": {a: list(v) for a, v in cls.items()},
            "stride": STRIDE, "long_side": LONG_SIDE, "multiple": MULTIPLE, "input": "float32 NCHW RGB in [0, 1]",
            "temperatures": temperatures, "threshold": threshold, "provenance": provenance}


def _match(pc: np.ndarray, tc: np.ndarray, radius: float) -> list[tuple[int, int]]:
    from scipy.optimize import linear_sum_assignment

    if len(pc) == 0 or len(tc) == 0:
        return []
    d = np.linalg.norm(pc[:, None] - tc[None], axis=2)
    r, c = linear_sum_assignment(d)
    return [(i, j) for i, j in zip(r, c) if d[i, j] <= radius]


def validate(net, records: list[Record], cls, thresholds=(0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6)
             ) -> dict[str, Any]:
    """Figures on held-out records at every candidate threshold, and the matched objects' logits (for the
    temperatures). Geometry = inference geometry (the same `prepare` as the shipped parser)."""
    import torch

    from logicval_hf.contract.spatial import region_of
    from logicval_hf.perception.scene_parser import decode, prepare

    raw_meta = meta_for(cls, {}, 0.0, {})
    net.eval()
    wrapped = Export.wrap(net)
    per_thr = {t: {"count": 0, "exact": 0} for t in thresholds}
    logit_rows: dict[str, list] = {a: [] for a in ATTRIBUTES}
    label_rows: dict[str, list] = {a: [] for a in ATTRIBUTES}
    offset_err: list[list[float]] = []
    with torch.no_grad():
        for rec in records:
            x, scale = prepare(rec.rgb)
            peak, reg, logits, _, vis = (t.numpy()[0] for t in wrapped(torch.from_numpy(x)[None]))
            H, W = rec.rgb.shape[:2]
            for c in rec.centres * scale / 8:
                ix, iy = min(int(c[0]), reg.shape[2] - 1), min(int(c[1]), reg.shape[1] - 1)
                offset_err.append([reg[0, iy, ix] - (c[0] - ix), reg[1, iy, ix] - (c[1] - iy)])
            for t in thresholds:
                dets = decode(peak, reg, logits, raw_meta, scale, W, H, t, 64, vis)
                pc = np.array([[d.cx, d.cy] for d in dets]).reshape(-1, 2)
                pairs = _match(pc, rec.centres, 0.08 * W)
                ok_count = len(dets) == len(rec.centres)
                exact = ok_count and len(pairs) == len(dets)
                for i, j in pairs:
                    d = dets[i]
                    for k, a in enumerate(("color", "shape", "material")):
                        if int(np.argmax(d.probs[a])) != rec.labels[j, k]:
                            exact = False
                    if region_of(d.cx, d.cy, W, H) != region_of(*rec.centres[j], W, H):
                        exact = False
                    if t == 0.3:
                        start = 0
                        for k, a in enumerate(ATTRIBUTES):
                            m = len(cls[a])
                            if rec.labels[j, k] >= 0:
                                xs, ys = d.cell
                                logit_rows[a].append(logits[start:start + m, ys, xs])
                                label_rows[a].append(rec.labels[j, k])
                            start += m
                per_thr[t]["count"] += ok_count
                per_thr[t]["exact"] += exact
    net.train()
    n = max(len(records), 1)
    return {"images": len(records),
            "by_threshold": {str(t): {"count_accuracy": v["count"] / n, "exact_rate": v["exact"] / n}
                             for t, v in per_thr.items()},
            "_logits": {a: (np.array(logit_rows[a]), np.array(label_rows[a])) for a in ATTRIBUTES},
            "offset_bias": (np.median(offset_err, axis=0).tolist() if offset_err else [0.0, 0.0])}


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The softmax temperature minimising the held-out negative log-likelihood (grid search; bounded so a
    held-out set without errors cannot make the model arbitrarily sure)."""
    if len(labels) == 0:
        return 1.0
    best, best_t = None, 1.0
    for t in np.exp(np.linspace(math.log(0.5), math.log(5.0), 61)):
        z = logits / t
        z = z - z.max(1, keepdims=True)
        nll = -(z[np.arange(len(labels)), labels] - np.log(np.exp(z).sum(1))).mean()
        if best is None or nll < best - 1e-9:
            best, best_t = nll, float(t)
    return best_t


def export_onnx(net, path: Path, meta: dict[str, Any]) -> None:
    """ONNX with dynamic batch and image size, metadata embedded; written atomically."""
    import torch

    outputs = ["peak", "reg", "logits", "heat", "vis"]
    axes = {"image": {0: "n", 2: "h", 3: "w"}, **{o: {0: "n", 2: "gh", 3: "gw"} for o in outputs}}
    loop.export_onnx(Export.wrap(net), net, path, torch.zeros(1, 3, CANVAS[1], CANVAS[0]), ["image"], outputs,
                     axes, meta, "LogicVal-HF CLEVR scene parser (see logicval_hf/perception/scene_parser.md)")


# ---- main -----------------------------------------------------------------------------------------------
def numpy_val(n: int, seed: int) -> list[Record]:
    return [numpy_render((seed, 10**6, i)) for i in range(n)]


def do_export(net, args, cls, val: list[Record], step: int, elapsed: float, data_info, history) -> dict[str, Any]:
    v = validate(net, val, cls)
    temps = {a: fit_temperature(*v["_logits"][a]) for a in ATTRIBUTES}
    by = v["by_threshold"]  # most exact scenes, then best count, then closest to 0.35
    best_t = float(max(by, key=lambda t: (by[t]["exact_rate"], by[t]["count_accuracy"], -abs(float(t) - 0.35))))
    figures = {"step": step, "val_images": v["images"], "threshold": best_t, "temperatures": temps,
               "offset_bias_cells": v["offset_bias"],
               "val_at_threshold": v["by_threshold"][str(best_t)], "by_threshold": v["by_threshold"]}
    init = next((h for h in history if "init" in h), None)
    provenance = {"trained_steps": step, "initialised_from": init, "canvas": list(args.canvas), "train_seconds": round(elapsed), "seed": args.seed,
                  "batch_size": args.batch_size, "lr": args.lr, "numpy_fraction": args.numpy_fraction,
                  "data": data_info, "val": figures, "torch": __import__("torch").__version__}
    if args.export:
        export_onnx(net, args.export, meta_for(cls, temps, best_t, provenance, args.flip_default,
                                              v["offset_bias"]))
    history.append(figures)
    (args.out / "history.json").write_text(json.dumps(history, indent=1))
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logicval_hf.training.train_scene_parser",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, action="append",
                    help=f"a folder of renders in the CLEVR layout (repeatable; default {DEFAULT_DATA})")
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
                         "e.g. an earlier run's last.pt; ignored when --out holds a checkpoint to resume")
    ap.add_argument("--flip-default", action="store_true",
                    help="exported model parses each image and its mirror by default (setting flip=True)")
    ap.add_argument("--export-only", action="store_true",
                    help="no training: validate, calibrate and export the checkpoint in --out")
    args = ap.parse_args(argv)

    import torch

    loop.start(args)
    cls = classes()

    folders = args.data or [DEFAULT_DATA]
    train, val, data_info, problems = [], [], [], []
    for f in folders:
        recs = load_folder(f, problems)
        tr, va = split_holdout(recs, args.val_fraction)
        train += tr
        val += va
        data_info.append({"folder": str(f), "scenes": len(recs), "train": len(tr), "held_out": len(va),
                          "held_out_first": va[0].name if va else None})
    if not train and args.numpy_fraction <= 0:
        ap.error("no usable training scenes and --numpy-fraction 0")
    if args.numpy_val:
        val += numpy_val(args.numpy_val, args.seed)
    print(f"train_scene_parser: {len(train)} training scenes, {len(val)} held out "
          f"({args.numpy_val} numpy renders), {len(problems)} problems", flush=True)

    net = build_model()
    ck, resumed = loop.open_checkpoint(args, net, "train_scene_parser")
    if not resumed and args.init:
        init = torch.load(args.init, map_location="cpu", weights_only=False)
        load_init(net, init["model"])
        ck.history.append({"init": str(args.init), "init_steps": init["step"], "init_args": init.get("args")})
        print(f"train_scene_parser: initialised from {args.init} (step {init['step']} of that run)", flush=True)

    def export() -> str:
        fig = do_export(net, args, cls, val, ck.step, ck.elapsed, data_info, ck.history)
        return f"held-out {fig['val_at_threshold']} at threshold {fig['threshold']}, T={fig['temperatures']}"

    if args.export_only:
        if not ck.path.is_file():
            ap.error(f"--export-only: no checkpoint {ck.path}")
        print(f"train_scene_parser: exported step {ck.step}: {export()}", flush=True)
        return 0

    def batch_loss(step: int):
        x, heat, idx, reg, attr, aw = make_batch(train, step, args.seed, args.batch_size, args.numpy_fraction,
                                                tuple(args.canvas))
        return loss_fn(net(x), heat, idx, reg, attr, aw, cls)

    loop.train(ck, batch_loss, export, "train_scene_parser")
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
