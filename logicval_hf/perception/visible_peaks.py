"""Objects found where they show: the scene parser's read of objects whose centre is hidden behind another.

Why: the detector's heat map peaks at each object's *projected 3D centre* (CLEVR's ``pixel_coords``, which the
project's regions come from). An object standing behind another has that centre on its occluder, beside the
occluder's own peak, and the network rarely fires twice there: such objects were the commonest miss on the
text-to-image-look renders (model card, *Where the T2I look fails*). What does show of them is their own
pixels. A detector trained with ``--visible-peaks`` (`logicval_hf.training.parser_model.visible_peak_targets`)
has a second heat map that peaks at each object's most visible point, and at that cell the offset back to the
object's centre and its box size. Every such peak above ``threshold`` that no detection already explains (no
detection's own most visible point within ``radius`` cells of it) becomes an object: its centre from the
offset, its attributes read at the cell where it shows, as every detection's are. Its score is the visible
peak's heat, which the scene confidence maps as it maps a centre peak's (with the centre map's calibration;
`refit_parser` fits the confidence's power with the read on where it turns it on).

A model file turns it on with a ``visible_peaks`` entry in its metadata (values chosen on held-out renders;
see the model card); the setting ``visible_peaks=False`` turns it off, ``True`` turns it on for a file that
has the outputs but no entry (with `VISIBLE_PEAK_DEFAULTS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from logicval_hf.perception.scene_parser import Detection

__all__ = ["VISIBLE_PEAK_DEFAULTS", "OUTPUTS", "hidden_objects"]

#: the detector outputs the read needs: the visible-peak heat at its 3x3 maxima, and per cell the offset to the
#: centre (x, y) and the log box size (w, h), in cells
OUTPUTS = ("vpeak", "vreg")
#: ``threshold``: the lowest visible-peak heat that makes an object; ``radius``: in cells of the read, how close
#: a detection's most visible point must lie to a visible peak to explain it
VISIBLE_PEAK_DEFAULTS: dict[str, Any] = {"threshold": 0.5, "radius": 2.0}


def hidden_objects(vpeak: np.ndarray, vreg: np.ndarray, logits: np.ndarray, meta: dict[str, Any], scale: float,
                   width: int, height: int, found: Sequence[Detection], cfg: dict[str, Any],
                   max_new: int = 8) -> list[Detection]:
    """The objects of one image that the visible-peak map finds and ``found`` (its detections) does not.

    Args:
        vpeak: 1 x h x w visible-peak heats at local maxima, else 0.
        vreg: 4 x h x w offset from each cell to the object's centre and log box size, in cells.
        logits: the detector's attribute logits, stacked in metadata order (read at the peak's cell).
        meta: the model's metadata (stride, classes, temperatures).
        scale: the scale the image was read at (input pixels per image pixel).
        width, height: the image's size in pixels.
        found: the image's detections; each explains the visible peak nearest its own most visible point.
        cfg: ``threshold`` and ``radius`` (`VISIBLE_PEAK_DEFAULTS`).
        max_new: at most this many objects are added, strongest first.

    Returns:
        New `Detection`\\ s, strongest first, with ``vx, vy`` at the visible peak.
    """
    from logicval_hf.perception.scene_parser import Detection, cell_probs

    stride = meta["stride"]
    thr, radius = float(cfg["threshold"]), float(cfg["radius"]) * stride / scale
    ys, xs = np.nonzero(vpeak[0] >= thr)
    if len(ys) == 0:
        return []
    order = np.argsort(-vpeak[0, ys, xs], kind="stable")
    seen = [(d.vx, d.vy) for d in found]
    out: list[Detection] = []
    for i in order:
        if len(out) >= max_new:
            break
        y, x = int(ys[i]), int(xs[i])
        px, py = (x + 0.5) * stride / scale, (y + 0.5) * stride / scale
        if any(math.hypot(px - sx, py - sy) <= radius for sx, sy in seen):
            continue
        cx = (x + float(vreg[0, y, x])) * stride / scale
        cy = (y + float(vreg[1, y, x])) * stride / scale
        if not (0 <= cx < width and 0 <= cy < height and px < width and py < height):
            continue  # a peak in the padding, or a centre off the image (not an object of this frame)
        probs = cell_probs(logits, meta, x, y)
        bw = math.exp(float(vreg[2, y, x])) * stride / scale
        bh = math.exp(float(vreg[3, y, x])) * stride / scale
        out.append(Detection(cx, cy, bw, bh, float(vpeak[0, y, x]), probs, (x, y), min(px, width - 1.0),
                             min(py, height - 1.0), float(scale), "visible"))
        seen.append((px, py))
    return out
