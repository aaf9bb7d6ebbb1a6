"""The scene parser's detector: targets from a training view, the network, its loss, and training batches.

A small fully convolutional CenterNet-style network at stride 8: a centre heat map, sub-cell offset, log box
size, attribute logits and the offset to each object's most visible point (where an occluded object's own
attributes are read). Training runs on the CPU with torch; inference runs the exported ONNX graph
(`logicval_hf.perception.scene_parser`) without torch.
"""

from __future__ import annotations

import math

import numpy as np

from logicval_hf.training.parser_augment import CANVAS, DEFAULT, Augmentation, augment, probe_canvas
from logicval_hf.training.parser_data import ATTRIBUTES, Record, classes, numpy_render

__all__ = ["BACKBONES", "OBJECT_WEIGHT", "Export", "build_model", "loss_fn", "make_batch", "mask_cells", "targets",
           "visible_points"]


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
            ignore: np.ndarray | None = None):
    """CenterNet targets on a ``grid = (h, w)`` of cells: heat (Gaussian per object, 1 at its centre cell),
    per-object rows (cell index, offset, log size, weight, visible-point offset) at its centre cell and the 8
    around it, and per-cell attribute labels (-1 = none) with weights.

    Attribute cells: with an object map (``objmap``, indices into ``all_labels``; ``kept`` maps the centred
    objects into it) each cell is labelled by the object covering most of it; without one, around each centre
    (the cell's nearest object by a size-scaled distance owns it). The visible-point offset points from the
    cell to the object's most interior visible pixel (its centre without a map). ``ignore`` (pixels of objects
    whose centre lies off the canvas) marks cells whose heat-map negatives do not count: the object shows there
    but is not labelled. Returns heat, rows' cells, rows, attribute labels, attribute weights and the heat
    weights (0 on ignored cells, else 1)."""
    gh, gw = grid
    if objmap is not None and (kept is None or all_labels is None):
        raise ValueError("targets: an object map needs kept and all_labels")
    vis = None
    if objmap is not None and all_labels is not None:
        vis = visible_points(objmap, len(all_labels))[kept]
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
    return heat, np.array(idx, np.int64), np.array(reg, np.float32).reshape(-1, 7), attr, aw, hw


#: the backbone's channels at strides 2, 4, 8, 16 and 32
BASE_CHANNELS = (16, 32, 64, 96, 128)
#: the head's hidden channels (its cost is about a sixth of the network's)
HEAD_CHANNELS = 96
#: the pretrained backbone's feature pyramid: channels at strides 32 and 16, and at stride 8 (the head's input)
PYRAMID_CHANNELS = (96, 96, 64)
#: the detector's backbones (``--backbone``): ``small`` trains from scratch (or from a shipped file),
#: ``efficientnet_lite0`` starts from ImageNet features (`logicval_hf.training.efficientnet_lite`)
BACKBONES = ("small", "efficientnet_lite0")


def _n_out() -> int:
    return 1 + 4 + sum(len(v) for v in classes().values()) + 2  # heat, reg, logits, visible-point offset


def _head(cin: int, cbr):
    """The shared output head (its convolutions named ``head.``: `quantize_parser` keeps them in floating
    point): a 3x3 convolution to `HEAD_CHANNELS`, then one 1x1 convolution to every output channel."""
    import torch
    from torch import nn

    head_in = cbr(cin, HEAD_CHANNELS)  # built before the output layer: a seed gives the weights it always gave
    out_conv = nn.Conv2d(HEAD_CHANNELS, _n_out(), 1)
    prior = torch.zeros(_n_out())
    prior[0] = -2.19  # heat prior 0.1 (CenterNet)
    out_conv.bias = nn.Parameter(prior)
    return nn.Sequential(head_in, out_conv)


def build_model(backbone: str = "small", pretrained: bool = True):
    """The detector: a small FPN-like fully convolutional network with a stride-8 output. ``backbone``
    (`BACKBONES`): ``small``, its own five stages (about 0.8 GMAC at 480x320), or ``efficientnet_lite0``,
    EfficientNet-Lite0's stages to stride 32 (about 1.1 GMAC at 480x320), with its ImageNet weights unless
    ``pretrained`` is False (tests). The pretrained network's parameters carry ``lr_scale`` groups
    (`param_groups`): the backbone learns at a fraction of the head's rate.

    Raises:
        ValueError: an unknown ``backbone``.
    """
    from torch import nn

    def cbr(i, o, s=1):
        return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    if backbone == "efficientnet_lite0":
        return _lite_detector(cbr, pretrained)
    if backbone != "small":
        raise ValueError(f"unknown detector backbone {backbone!r} (known: {', '.join(BACKBONES)})")
    c1, c2, c3, c4, c5 = BASE_CHANNELS

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
            self.head = _head(c3, cbr)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")

        def forward(self, x):
            x = (x - 0.5) / 0.25
            f8 = self.s8(self.s4(x))
            f16 = self.s16(f8)
            f32 = self.s32(f16)
            f16 = self.fuse16(f16 + self.up(self.lat16(f32)))
            f8 = self.fuse8(f8 + self.up(self.lat8(f16)))
            return self.head(f8)

    return Net()


#: the pretrained backbone's share of the head's learning rate: its ImageNet features are kept close while the
#: pyramid and head, which start from random weights, learn at the full rate
BACKBONE_LR_SCALE = 0.3


def _lite_detector(cbr, pretrained: bool):
    import torch
    from torch import nn

    from logicval_hf.training.efficientnet_lite import IMAGENET_MEAN, IMAGENET_STD, build_backbone, load_imagenet

    p32, p16, p8 = PYRAMID_CHANNELS

    class LiteNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = build_backbone()
            self.init_record = load_imagenet(self.backbone) if pretrained else {"init": "random"}
            c8, c16, c32 = self.backbone.channels
            self.lat32 = nn.Conv2d(c32, p32, 1)
            self.proj16 = nn.Conv2d(c16, p16, 1)
            self.fuse16 = cbr(p16, p16)
            self.lat8 = nn.Conv2d(p16, p8, 1)
            self.proj8 = nn.Conv2d(c8, p8, 1)
            self.fuse8 = cbr(p8, p8)
            self.head = _head(p8, cbr)
            self.up = nn.Upsample(scale_factor=2, mode="nearest")
            self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1))

        def forward(self, x):
            f8, f16, f32 = self.backbone((x - self.mean) / self.std)
            f16 = self.fuse16(self.proj16(f16) + self.up(self.lat32(f32)))
            f8 = self.fuse8(self.proj8(f8) + self.up(self.lat8(f16)))
            return self.head(f8)

        def param_groups(self) -> list[dict]:
            own = [p for n, p in self.named_parameters() if not n.startswith("backbone.")]
            return [{"params": list(self.backbone.parameters()), "lr_scale": BACKBONE_LR_SCALE},
                    {"params": own, "lr_scale": 1.0}]

    return LiteNet()


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
                n_logits = out.shape[1] - 7
                heat = torch.sigmoid(out[:, :1])
                peak = heat * (nn.functional.max_pool2d(heat, 3, 1, 1) == heat).to(heat.dtype)
                return peak, out[:, 1:5], out[:, 5:5 + n_logits], heat, out[:, 5 + n_logits:7 + n_logits]

        return Wrapped().eval()


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


def loss_fn(out, heat, idx, reg, attr, aw, cls, hw=None):
    """Focal loss on the heat map (each cell weighted by ``hw``: 0 where an unlabelled object shows), L1 on
    offset, log size and visible-point offset at centre cells, weighted cross-entropy per attribute."""
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
    return l_heat + l_reg + l_attr, {"heat": float(l_heat.detach()), "reg": float(l_reg.detach()), **parts}


# ---- batches --------------------------------------------------------------------------------------------
def make_batch(train: list[Record], step: int, seed: int, batch_size: int, numpy_fraction: float,
               canvas: tuple[int, int] = CANVAS, stride: int = 8, aug: Augmentation = DEFAULT,
               weights: np.ndarray | None = None):
    """The batch of ``step``: depends on (seed, step) only, so resuming reproduces an uninterrupted run.
    ``weights``: each training record's probability of being drawn (default: uniform)."""
    import torch

    rng = np.random.default_rng([seed, step])
    probe = bool(rng.random() < aug.probe_p)  # a batch of first looks: whole images at the probe side
    if probe:
        canvas = probe_canvas(aug)
    imgs, heats, idxs, regs, attrs, aws, hws = [], [], [], [], [], [], []
    for j in range(batch_size):
        if not train or rng.random() < numpy_fraction:
            rec = numpy_render((seed, step, j))
        else:
            k = int(rng.choice(len(train), p=weights)) if weights is not None else int(rng.integers(len(train)))
            rec = train[k]
        v = augment(rec, rng, canvas, aug, probe)
        h, w = v.rgb.shape[0] // stride, v.rgb.shape[1] // stride
        heat, idx, reg, attr, aw, hw = targets(v.centres, v.sizes, v.labels, (h, w), stride, v.objmap, v.kept,
                                               rec.labels, v.ignore)
        imgs.append(v.rgb.transpose(2, 0, 1))
        heats.append(heat)
        idxs.append(torch.from_numpy(idx))
        regs.append(torch.from_numpy(reg))
        attrs.append(attr)
        aws.append(aw)
        hws.append(hw)
    x = torch.from_numpy(np.stack(imgs)).float().div_(255)
    return (x, torch.from_numpy(np.stack(heats)), idxs, regs, torch.from_numpy(np.stack(attrs)),
            torch.from_numpy(np.stack(aws)), torch.from_numpy(np.stack(hws)))
