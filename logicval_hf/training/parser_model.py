"""The scene parser's detector: targets from a training view, the network, its loss, and training batches.

A small fully convolutional CenterNet-style network at stride 8: a centre heat map, sub-cell offset, log box
size, attribute logits and the offset to each object's most visible point (where an occluded object's own
attributes are read). Training runs on the CPU with torch; inference runs the exported ONNX graph
(`logicval_hf.perception.scene_parser`) without torch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from logicval_hf.training.parser_augment import CANVAS, DEFAULT, Augmentation, augment, probe_canvas
from logicval_hf.training.parser_data import ATTRIBUTES, Record, classes, numpy_render

__all__ = ["OBJECT_WEIGHT", "VISIBLE_PEAK_CHANNELS", "Export", "build_model", "centre_owners", "load_init", "loss_fn",
           "make_batch", "mask_cells", "targets", "visible_peak_targets", "visible_points"]

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
    for k, i0 in zip(objs, first, strict=True):
        if 0 <= k < n:
            y, x = divmod(int(order[i0]), m.shape[1])
            out[k] = (x + 0.5, y + 0.5)
    return out


def centre_owners(objmap: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(K,) per centre (x, y in pixels, clipped into the map) the index of the object its pixel shows (-1: the
    floor). An object whose own index is not there has its projected centre on another object: it is behind it."""
    if len(centres) == 0:
        return np.zeros(0, np.int64)
    h, w = objmap.shape
    xs = np.clip(np.asarray(centres, float)[:, 0].astype(np.int64), 0, w - 1)
    ys = np.clip(np.asarray(centres, float)[:, 1].astype(np.int64), 0, h - 1)
    return objmap[ys, xs].astype(np.int64)


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


def _rows_around(ix: int, iy: int, grid: tuple[int, int], centre: np.ndarray, size: tuple[float, float],
                 stride: int) -> list[tuple[int, list[float]]]:
    """(cell index, [dx, dy, log w, log h, weight]) at cell (``ix``, ``iy``) and its 8 neighbours on the grid
    (weight 1 at the cell, 0.5 around it): the offset from each cell to ``centre`` (in cells) and the log box
    size in cells, so a peak one cell off still points at the object's centre."""
    gh, gw = grid
    lw, lh = math.log(max(size[0], 1.0) / stride), math.log(max(size[1], 1.0) / stride)
    out = []
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            jx, jy = ix + dx, iy + dy
            if 0 <= jx < gw and 0 <= jy < gh:
                out.append((jy * gw + jx, [centre[0] - jx, centre[1] - jy, lw, lh, 1.0 if dx == dy == 0 else 0.5]))
    return out


def targets(centres: np.ndarray, sizes: np.ndarray, labels: np.ndarray, grid: tuple[int, int], stride: int,
            objmap: np.ndarray | None = None, kept: np.ndarray | None = None, all_labels: np.ndarray | None = None,
            ignore: np.ndarray | None = None, hidden_weight: float = 1.0):
    """CenterNet targets on a ``grid = (h, w)`` of cells: heat (Gaussian per object, 1 at its centre cell),
    per-object rows (cell index, offset, log size, weight, visible-point offset) at its centre cell and the 8
    around it, and per-cell attribute labels (-1 = none) with weights.

    Attribute cells: with an object map (``objmap``, indices into ``all_labels``; ``kept`` maps the centred
    objects into it) each cell is labelled by the object covering most of it; without one, around each centre
    (the cell's nearest object by a size-scaled distance owns it). The visible-point offset points from the
    cell to the object's most interior visible pixel (its centre without a map). ``ignore`` (pixels of objects
    whose centre lies off the canvas) marks cells whose heat-map negatives do not count: the object shows there
    but is not labelled. ``hidden_weight`` weighs the heat map's positive at the centre cell of every object
    whose centre pixel shows another object (an object behind another, its centre on its occluder: the peaks
    the detector misses most). Returns heat, rows' cells, rows, attribute labels, attribute weights and the heat
    weights (0 on ignored cells, ``hidden_weight`` on hidden objects' centre cells, else 1)."""
    gh, gw = grid
    if objmap is not None and (kept is None or all_labels is None):
        raise ValueError("targets: an object map needs kept and all_labels")
    vis = None
    if objmap is not None and all_labels is not None:
        vis = visible_points(objmap, len(all_labels))[kept]
    hidden_at = None  # per object: its centre shows another object
    if hidden_weight != 1.0 and objmap is not None:
        owners = centre_owners(objmap, centres)
        hidden_at = (owners >= 0) & (owners != np.asarray(kept))
    heat = np.zeros((gh, gw), np.float32)
    attr = np.full((len(ATTRIBUTES), gh, gw), -1, np.int64)
    aw = np.zeros((gh, gw), np.float32)
    idx, reg, peaks = [], [], []
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32)
    for k, ((cx, cy), (bw, bh), lab) in enumerate(zip(centres, sizes, labels, strict=True)):
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
        # offsets relative to the centre cell and to its 8 neighbours (half weight): wherever the peak
        # lands, the offset read there points at the true centre
        for j, row in _rows_around(ix, iy, grid, c, (bw, bh), stride):
            idx.append(j)
            jx, jy = j % gw, j // gw
            reg.append([*row, v[0] - jx, v[1] - jy])
    for i in peaks:  # overlapping Gaussians: keep the exact peaks at 1
        heat.flat[i] = 1.0
    if objmap is not None and all_labels is not None:
        owner, cover = mask_cells(objmap, grid, stride, len(all_labels))
        on = owner >= 0
        attr[:, on] = all_labels[owner[on]].T
        # every object weighs the same in total (OBJECT_WEIGHT, about what the Gaussian labels give a small
        # object), however many cells it covers: else near, large objects drown the small ones at the back
        totals = np.bincount(owner[on], weights=cover[on], minlength=len(all_labels))
        aw = np.zeros_like(cover)
        aw[on] = cover[on] * OBJECT_WEIGHT / totals[owner[on]]
    hw = np.ones((gh, gw), np.float32)
    if ignore is not None:
        owner_cells, _ = mask_cells(ignore.astype(np.int16) - 1, grid, stride, 1, min_cover=0.05)
        hw[owner_cells == 0] = 0.0
        hw[heat > 0.5] = 1.0
    if hidden_at is not None:
        for i, hid in zip(peaks, hidden_at, strict=True):
            if hid:
                hw.flat[i] = hidden_weight
    return heat, np.array(idx, np.int64), np.array(reg, np.float32).reshape(-1, 7), attr, aw, hw


#: output channels of the visible-peak head: its heat logit, the offset from the cell to the object's projected
#: centre (x, y, in cells) and the object's log box width and height (in cells)
VISIBLE_PEAK_CHANNELS = 5


def visible_peak_targets(centres: np.ndarray, sizes: np.ndarray, grid: tuple[int, int], stride: int,
                         objmap: np.ndarray | None = None, kept: np.ndarray | None = None,
                         n_all: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Targets of the visible-peak head on a ``grid = (h, w)`` of cells: a heat map with a Gaussian at each
    object's most visible point (`visible_points`; its centre without an object map), sized by the pixels it
    shows, and per-object rows (cell index, offset to the projected centre, log size, weight) at that cell and
    the 8 around it.

    Why: an object whose projected centre lies on its occluder has no centre peak of its own (the occluder's
    is there), but the pixels it shows are its own; a peak there, with the way back to its centre, finds it.
    Objects that show no pixel get no peak. Returns heat, rows' cells and rows (dx, dy, log w, log h, weight)."""
    gh, gw = grid
    vis = np.asarray(centres, float).reshape(-1, 2).copy()
    shown = np.full(len(vis), np.nan)
    if objmap is not None and kept is not None and n_all is not None:
        allvis = visible_points(objmap, n_all)
        counts = np.bincount(objmap[objmap >= 0].astype(np.int64).ravel(), minlength=n_all)
        vis = allvis[kept]
        shown = counts[kept].astype(float)
    heat = np.zeros((gh, gw), np.float32)
    idx, reg, peaks = [], [], []
    yy, xx = np.mgrid[0:gh, 0:gw].astype(np.float32)
    for k, ((cx, cy), (bw, bh)) in enumerate(zip(centres, sizes, strict=True)):
        if np.isnan(vis[k, 0]):
            continue
        v = vis[k] / stride
        ix, iy = min(max(int(v[0]), 0), gw - 1), min(max(int(v[1]), 0), gh - 1)
        area = shown[k] if not np.isnan(shown[k]) else 0.7 * max(bw * bh, 1.0)
        sig = max(0.5, 0.12 * math.sqrt(max(area, 1.0)) / stride)
        heat = np.maximum(heat, np.exp(-((xx - ix) ** 2 + (yy - iy) ** 2) / (2 * sig * sig)))
        peaks.append(iy * gw + ix)
        for j, row in _rows_around(ix, iy, grid, np.array([cx, cy]) / stride, (bw, bh), stride):
            idx.append(j)
            reg.append(row)
    for i in peaks:
        heat.flat[i] = 1.0
    return heat, np.array(idx, np.int64), np.array(reg, np.float32).reshape(-1, 5)


#: the backbone's channels at strides 2, 4, 8, 16 and 32 at width 1 (every shipped detector so far)
BASE_CHANNELS = (16, 32, 64, 96, 128)
#: the head's hidden channels, whatever the width (its cost is already about a sixth of the network's)
HEAD_CHANNELS = 96


def build_model(width: float = 1.0, visible_peaks: bool = False):
    """A small FPN-like fully convolutional network, stride 8 output (about 0.8 GMAC at 480x320 at width 1).
    ``width`` multiplies the backbone's and the pyramid's channels (`BASE_CHANNELS`; about width**2 times the
    cost); ``visible_peaks``: `VISIBLE_PEAK_CHANNELS` more output channels after the others
    (`visible_peak_targets`)."""
    import torch
    from torch import nn

    def cbr(i, o, s=1):
        return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    n_out = 1 + 4 + sum(len(v) for v in classes().values()) + 2  # heat, reg, logits, visible-point offset
    n_out += VISIBLE_PEAK_CHANNELS if visible_peaks else 0
    c1, c2, c3, c4, c5 = (max(1, round(b * width)) for b in BASE_CHANNELS)

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
            head_in = cbr(c3, HEAD_CHANNELS)  # built before the output layer: a seed gives the weights it always gave
            out_conv = nn.Conv2d(HEAD_CHANNELS, n_out, 1)
            prior = torch.zeros(n_out)
            prior[0] = -2.19  # heat prior 0.1 (CenterNet)
            if visible_peaks:
                prior[n_out - VISIBLE_PEAK_CHANNELS] = -2.19
            out_conv.bias = nn.Parameter(prior)
            self.head = nn.Sequential(head_in, out_conv)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.visible_peaks = visible_peaks
            self.width = width

        def forward(self, x):
            x = (x - 0.5) / 0.25
            f8 = self.s8(self.s4(x))
            f16 = self.s16(f8)
            f32 = self.s32(f16)
            f16 = self.fuse16(f16 + self.up(self.lat16(f32)))
            f8 = self.fuse8(f8 + self.up(self.lat8(f16)))
            return self.head(f8)

    return Net()


def model_width(first_channels: int) -> float:
    """The width of a detector whose first convolution has ``first_channels`` outputs."""
    return first_channels / BASE_CHANNELS[0]


def _widening_plan() -> tuple[tuple[str, str | None, str | None, str], ...]:
    plan: list[tuple[str, str | None, str | None, str]] = []
    source: str | None = None
    for stage in ("s4", "s8", "s16", "s32"):
        for k in range(3):
            target = f"f{stage[1:]}" if k == 2 else f"{stage}.{k}"  # a stage's output: f4, f8, f16, f32
            plan.append((f"{stage}.{k}.0", f"{stage}.{k}.1", source, target))
            source = target
    # the pyramid adds each lateral convolution's output to the stage output below: one channel group for both
    return (*plan, ("lat16", None, "f32", "f16"), ("fuse16.0", "fuse16.1", "f16", "fused16"),
            ("lat8", None, "fused16", "f8"), ("fuse8.0", "fuse8.1", "f8", "fused8"),
            ("head.0.0", "head.0.1", "fused8", "head"), ("head.1", None, "head", "out"))


#: how `build_model`'s convolutions are widened, in forward order: (convolution, its BatchNorm or None, the
#: channel group it reads (None: the image), the group it writes); `logicval_hf.training.widen.widen_graph`
WIDENING_PLAN = _widening_plan()


def widen_model(narrow, wide, seed: int, plan=WIDENING_PLAN) -> dict[str, Any]:
    """Copy the trained ``narrow`` detector's function into the wider, freshly built ``wide`` one
    (`logicval_hf.training.widen`, following ``plan``). The pyramid sums each stage's output with the lateral
    convolution from the stage above, so the two share one channel group (``f16``, ``f8``); the head's hidden
    channels and outputs keep their sizes.

    Returns:
        {"channels": {group: [narrow, wide]}}.

    Raises:
        ValueError: the two detectors differ in more than width (the visible-peak head, say).
    """
    from logicval_hf.training.widen import Layer, widen_graph

    if narrow.visible_peaks != wide.visible_peaks:
        raise ValueError("the two detectors differ in the visible-peak head; widen first, then add the head")

    def get(net, name):
        return None if name is None else net.get_submodule(name)

    layers = [Layer(get(narrow, c), get(narrow, b), get(wide, c), get(wide, b), src, dst)
              for c, b, src, dst in plan]
    groups = widen_graph(layers, seed)
    return {"channels": {g: [int(m.max()) + 1, len(m)] for g, (m, _) in groups.items()}}


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
                n_logits = out.shape[1] - 7 - (VISIBLE_PEAK_CHANNELS if net.visible_peaks else 0)
                heat = torch.sigmoid(out[:, :1])
                peak = heat * (nn.functional.max_pool2d(heat, 3, 1, 1) == heat).to(heat.dtype)
                vis = out[:, 5 + n_logits:7 + n_logits]
                if not net.visible_peaks:
                    return peak, out[:, 1:5], out[:, 5:5 + n_logits], heat, vis
                vheat = torch.sigmoid(out[:, 7 + n_logits:8 + n_logits])
                vpeak = vheat * (nn.functional.max_pool2d(vheat, 3, 1, 1) == vheat).to(vheat.dtype)
                return peak, out[:, 1:5], out[:, 5:5 + n_logits], heat, vis, vpeak, out[:, 8 + n_logits:]

        return Wrapped().eval()


def load_init(net, state: dict[str, Any]) -> None:
    """Load ``state`` into ``net``; a checkpoint from before the visible-point head (two output channels
    fewer) or the visible-peak head (`VISIBLE_PEAK_CHANNELS` fewer) keeps its channels and the new ones start
    at zero (= read attributes at the centre, as before; the visible-peak heat at its prior)."""
    import torch

    own = net.state_dict()
    for k in ("head.1.weight", "head.1.bias"):
        if k in state and state[k].shape[0] < own[k].shape[0]:
            w = torch.zeros_like(own[k])
            w[:state[k].shape[0]] = state[k]
            if k.endswith("bias") and getattr(net, "visible_peaks", False):
                w[own[k].shape[0] - VISIBLE_PEAK_CHANNELS] = -2.19  # the visible-peak heat's prior
            state = {**state, k: w}
    net.load_state_dict(state)


def _focal(logit, heat, hw=None):
    """CenterNet's focal loss of a heat map's logits against its Gaussian targets (cells weighted by ``hw``)."""
    import torch

    p = torch.sigmoid(logit).clamp(1e-4, 1 - 1e-4)
    pos = heat == 1
    n_pos = max(int(pos.sum()), 1)
    neg = ((1 - heat) ** 4) * p ** 2 * torch.log(1 - p)
    posl = (1 - p) ** 2 * torch.log(p)
    if hw is not None:
        neg = neg * hw
        posl = posl * hw
    return -(posl[pos].sum() + neg[~pos].sum()) / n_pos


def _rows(flat, idx, channels):
    """(rows, sum of ``channels``' widths): the predictions of ``channels`` (slices of ``flat``'s channel axis)
    at every row's cell, for per-image cell lists ``idx``, rows in image order."""
    import torch

    n = flat.shape[0]
    bsel = torch.cat([torch.full((len(idx[b]),), b, dtype=torch.long) for b in range(n)]).to(flat.device)
    csel = torch.cat([idx[b] for b in range(n)])
    return torch.cat([flat[bsel, c, csel] for c in channels], 1)


def loss_fn(out, heat, idx, reg, attr, aw, cls, hw=None, vp=None):
    """Focal loss on the heat map (each cell weighted by ``hw``: negatives 0 where an unlabelled object shows,
    positives by `targets`' ``hidden_weight``), L1 on offset and log size at centre cells, weighted
    cross-entropy per attribute around each centre; with ``vp`` (the visible-peak targets of `make_batch`:
    heat, cells, rows) the same focal loss on the visible-peak heat map and L1 on its offsets and sizes."""
    import torch
    import torch.nn.functional as F

    n = out.shape[0]
    n_logits = sum(len(v) for v in cls.values())
    l_heat = _focal(out[:, 0], heat, hw)
    flat = out.flatten(2)  # n, C, h*w
    l_reg = out.new_zeros(())
    if sum(len(i) for i in idx):
        pr = _rows(flat, idx, [slice(1, 5), slice(5 + n_logits, 7 + n_logits)])  # offset, size; visible point
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
    extra = {}
    if vp is not None:
        vheat, vidx, vreg = vp
        v0 = 7 + n_logits
        l_vheat = _focal(out[:, v0], vheat)
        l_vreg = out.new_zeros(())
        if sum(len(i) for i in vidx):
            pr = _rows(flat, vidx, [slice(v0 + 1, v0 + 5)])
            gt = torch.cat(list(vreg))
            w = gt[:, 4:5]
            l_vreg = ((pr - gt[:, :4]).abs() * w).sum() / w.sum()
        total = total + l_vheat + l_vreg
        extra = {"vheat": float(l_vheat.detach()), "vreg": float(l_vreg.detach())}
    return total, {"heat": float(l_heat.detach()), "reg": float(l_reg.detach()), **parts, **extra}


# ---- batches --------------------------------------------------------------------------------------------
def make_batch(train: list[Record], step: int, seed: int, batch_size: int, numpy_fraction: float,
               canvas: tuple[int, int] = CANVAS, stride: int = 8, aug: Augmentation = DEFAULT,
               weights: np.ndarray | None = None, hidden_weight: float = 1.0, visible_peaks: bool = False):
    """The batch of ``step``: depends on (seed, step) only, so resuming reproduces an uninterrupted run.
    ``weights``: each training record's probability of being drawn (default: uniform); ``hidden_weight``:
    `targets`'. ``visible_peaks``: an eighth element, the visible-peak targets (`visible_peak_targets`:
    heat maps, cells and rows per image) for `loss_fn`'s ``vp``."""
    import torch

    rng = np.random.default_rng([seed, step])
    probe = bool(rng.random() < aug.probe_p)  # a batch of first looks: whole images at the probe side
    if probe:
        canvas = probe_canvas(aug)
    imgs, heats, idxs, regs, attrs, aws, hws = [], [], [], [], [], [], []
    vheats, vidxs, vregs = [], [], []
    for j in range(batch_size):
        if not train or rng.random() < numpy_fraction:
            rec = numpy_render((seed, step, j))
        else:
            k = int(rng.choice(len(train), p=weights)) if weights is not None else int(rng.integers(len(train)))
            rec = train[k]
        v = augment(rec, rng, canvas, aug, probe)
        h, w = v.rgb.shape[0] // stride, v.rgb.shape[1] // stride
        heat, idx, reg, attr, aw, hw = targets(v.centres, v.sizes, v.labels, (h, w), stride, v.objmap, v.kept,
                                               rec.labels, v.ignore, hidden_weight)
        imgs.append(v.rgb.transpose(2, 0, 1))
        heats.append(heat)
        idxs.append(torch.from_numpy(idx))
        regs.append(torch.from_numpy(reg))
        attrs.append(attr)
        aws.append(aw)
        hws.append(hw)
        if visible_peaks:
            vh, vi, vr = visible_peak_targets(v.centres, v.sizes, (h, w), stride, v.objmap, v.kept, len(rec.labels))
            vheats.append(vh)
            vidxs.append(torch.from_numpy(vi))
            vregs.append(torch.from_numpy(vr))
    x = torch.from_numpy(np.stack(imgs)).float().div_(255)
    batch = (x, torch.from_numpy(np.stack(heats)), idxs, regs, torch.from_numpy(np.stack(attrs)),
             torch.from_numpy(np.stack(aws)), torch.from_numpy(np.stack(hws)))
    if visible_peaks:
        return (*batch, (torch.from_numpy(np.stack(vheats)), vidxs, vregs))
    return batch
