"""Classical perception for CLEVR-style renders (the ``"clevr"`` backend): no pretrained weights, no torch.

Pipeline (numpy, scipy, OpenCV; images of 480x320 are processed at half resolution, 320x240 at full):

1. **Background.** The CLEVR floor is smooth and nearly neutral. A 2D polynomial (degree 5) is fitted per
   channel to a downsampled image with robust re-weighting (object pixels and strong edges left out); a masked
   normalised convolution then corrects what the polynomial misses (the bright arc, the vignette at the edges).
2. **Pixel classes.** Every pixel is divided by the background; a 16-unit MLP on per-pixel features (ratio to
   the background, colour, chroma, local contrast) labels it floor/shadow or one of the 8 CLEVR colours.
   Shadows are a mild neutral darkening and are taught as floor. (Without a model, fixed chroma/darkness
   thresholds give a foreground mask instead.)
3. **Objects.** The foreground is cleaned (opening, closing, hole filling) and split: by colour class (minor
   classes, e.g. reflections on metal, join the nearest major class; pieces enclosed by another piece's outline
   are absorbed), at deep concavity pairs (touching/occluding objects of one colour), and at necks of the
   distance transform (marker watershed). Each object is re-segmented at full resolution inside its box.
4. **Classification.** Hand-crafted features per object (robust colour; highlight/reflection statistics;
   silhouette profiles, outline curvature, ellipse fit, top-edge line-vs-arc fit, shading profiles, a small
   HOG) feed softmax-regression heads for colour, shape, material and "is an object" (rejects shadows, floor
   patches). Probabilities are softmax outputs and sum to 1. Weights: ``clevr_model.npz`` next to this file,
   trained by ``python -m logicval_hf.training.train_clevr`` (data, split, seed: ``clevr_model.md``).

**The project's own renders** (`is_own_render`: the renderer's ground, with its fixed noise pattern, shows
exactly on enough pixels) are read with that exact ground as the background and an exact object mask
(`render_foreground`: fine detail correlated with the ground's noise is ground, in or out of shadow; the rest is
object), split at full resolution into connected pieces; convex pieces are not cut further (every CLEVR
silhouette is convex and the renderer keeps objects apart); a pixel classifier and heads trained on renders.

Entry point: `extract(rgb_uint8, **settings) -> Scene`; normally called through
``logicval_hf.perception.extract_scene(image, backend="clevr")``. Settings: the keys of `DEFAULTS` and
``model_path``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from scipy import ndimage as ndi

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.scene import Scene, SceneObject

MODEL_PATH = Path(__file__).with_name("clevr_model.npz")

# CLEVR palette (properties.json), used by the fallback colour rule when no model is available.
PALETTE = {
    "gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215), "green": (29, 105, 20),
    "brown": (129, 74, 25), "purple": (129, 38, 192), "cyan": (41, 208, 208), "yellow": (255, 238, 51),
}

DEFAULTS: dict[str, Any] = {
    # fixed-threshold foreground (used without a model, and to bootstrap the pixel classifier in training)
    "chroma_threshold": 0.12,  # |ratio_c - mean ratio| above which a pixel is coloured foreground
    "dark_threshold": 0.75,  # luminance ratio below which a pixel is (grey/dark) foreground, not shadow
    "bright_threshold": 1.18,  # luminance ratio above which a pixel is foreground (highlights)
    "min_area_frac": 0.0005,  # blobs smaller than this fraction of the image are dropped
    "neck_ratio": 0.72,  # two distance maxima are one object unless the ridge between them dips below this
    "object_threshold": 0.5,  # minimum "is an object" probability to keep a detection
    "max_objects": 12,
    "minor_frac": 0.08,  # colour classes below this share of a blob are not split off (reflections)
    "defect_depth": 0.06,  # a concavity must be this deep (x sqrt(blob area)) to start a cut
    "defect_cut_ratio": 3.0,  # cut length / (sum of the two depths) must stay under this
}


# ---------------------------------------------------------------------------------------------------
# background
# ---------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _design(h: int, w: int, deg: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    x = x / max(w - 1, 1) * 2 - 1
    y = y / max(h - 1, 1) * 2 - 1
    cols = [x**i * y**j for i in range(deg + 1) for j in range(deg + 1 - i)]
    return np.stack(cols, -1).reshape(-1, len(cols))


def _downsample(img: np.ndarray, f: int) -> np.ndarray:
    h, w = img.shape[0] // f, img.shape[1] // f
    return img[: h * f, : w * f].reshape(h, f, w, f, -1).mean((1, 3))


def estimate_background(img: np.ndarray, deg: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Smooth background estimate of a float RGB image (same shape) and the low-res "floor" mask."""
    H, W, _ = img.shape
    f = max(1, int(round(min(H, W) / 50)))
    small = _downsample(img, f)
    h, w = small.shape[:2]
    A = _design(h, w, deg)
    Y = small.reshape(-1, 3)
    lum = small.mean(-1)
    g = np.hypot(ndi.sobel(lum, 0), ndi.sobel(lum, 1))
    m = (g < np.percentile(g, 60)).reshape(-1)
    mk = m.reshape(h, w)
    for _ in range(4):
        Am = A[m]
        coef = np.linalg.solve(Am.T @ Am + 1e-6 * np.eye(A.shape[1]), Am.T @ Y[m])
        bg = A @ coef
        r = Y / np.maximum(bg, 1e-3)
        L = r.mean(-1)
        dev = np.maximum(np.abs(r - L[:, None]).max(-1) * 2, np.abs(L - 1))
        mk = ndi.binary_erosion((dev < 0.05).reshape(h, w), iterations=2, border_value=1)
        if mk.sum() < A.shape[1] * 4:  # almost everything is "object": keep the previous fit
            mk = m.reshape(h, w)
            break
        m = mk.reshape(-1)
    bgp = (A @ coef).reshape(h, w, 3)
    mf = mk.astype(np.float32)
    ratio = small / np.maximum(bgp, 1e-3) - 1
    sig = w / 30
    den = ndi.gaussian_filter(mf, sig, mode="nearest")
    corr = np.stack([ndi.gaussian_filter(ratio[..., c] * mf, sig, mode="nearest") for c in range(3)], -1)
    bgs = bgp * (1 + corr / np.maximum(den, 0.2)[..., None])
    bgf = cv2.resize(bgs.astype(np.float32), (W, H), interpolation=cv2.INTER_LINEAR)
    return np.maximum(bgf, 1e-3).astype(np.float32), mk


# ---------------------------------------------------------------------------------------------------
# segmentation
# ---------------------------------------------------------------------------------------------------
@dataclass
class _Maps:
    img: np.ndarray  # float RGB in [0, 1] at working resolution, lightly smoothed
    bg: np.ndarray
    ratio: np.ndarray  # img / bg
    L: np.ndarray  # mean ratio
    chroma: np.ndarray  # max |ratio_c - L|
    grad: np.ndarray  # gradient magnitude of L
    scale: int  # original pixels per working pixel
    full: np.ndarray  # float RGB in [0, 1] at full resolution
    boxes: list | None = None  # full-resolution boxes (x0, y0, x1, y1) of the objects, set by `analyse`
    # exact object mask at full resolution, known for the project's own renders only (see `render_foreground`)
    exact_fg: np.ndarray | None = None


def working_scale(h: int, w: int) -> int:
    return max(1, int(round(min(h, w) / 200)))


def _maps(rgb: np.ndarray, ground: np.ndarray | None = None) -> _Maps:
    """Working maps of an RGB uint8 image. ``ground``: the exact empty ground (uint8, same size) when it is
    known (the project's own renders); it then replaces the estimated background, processed exactly like the
    image, so that floor pixels have a ratio of 1 and shadows a neutral darkening."""
    H, W = rgb.shape[:2]
    f = working_scale(H, W)
    full = img = rgb.astype(np.float32) / 255.0
    if f > 1:
        img = cv2.resize(full, (W // f, H // f), interpolation=cv2.INTER_AREA)
    sm = cv2.GaussianBlur(img, (0, 0), 0.8)
    exact = None
    if ground is None:
        bg, _ = estimate_background(img)
    else:
        g = ground.astype(np.float32) / 255.0
        if f > 1:
            g = cv2.resize(g, (W // f, H // f), interpolation=cv2.INTER_AREA)
        bg = np.maximum(cv2.GaussianBlur(g, (0, 0), 0.8), 1e-3)
        exact = render_foreground(rgb, ground)
    ratio = sm / bg
    L = ratio.mean(-1)
    chroma = np.abs(ratio - L[..., None]).max(-1)
    gx = cv2.Sobel(L, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(L, cv2.CV_32F, 0, 1, ksize=3)
    grad = np.hypot(gx, gy) / 8
    return _Maps(sm, bg, ratio, L, chroma, grad, f, full, exact_fg=exact)


def _highpass(x: np.ndarray) -> np.ndarray:
    return x - cv2.GaussianBlur(x, (0, 0), 1.0)


def render_foreground(rgb: np.ndarray, ground: np.ndarray) -> np.ndarray:
    """Object pixels (full resolution, bool) of an image drawn by ``logicval_hf.generation.render`` on its known ground.

    The renderer's ground carries a fixed faint noise pattern; shadows scale it by a smoothly varying factor
    and objects replace it with smooth shading. So the image's fine detail is strongly correlated with the
    ground's on (shadowed) ground and uncorrelated on objects, whatever their colour: a pixel is an object
    pixel where that local correlation is low (the window straddling an outline puts the outline half-way),
    or where its colour is not a neutral scaling of the ground.
    """
    rgbf, groundf = rgb.astype(np.float32), ground.astype(np.float32)
    a, g = rgbf.mean(-1), groundf.mean(-1)
    ratio = rgbf / np.maximum(groundf, 1.0)
    chroma = np.abs(ratio - ratio.mean(-1, keepdims=True)).max(-1)
    exact = (rgb != ground).any(-1)
    # object pixels may equal the ground by chance: "changed" only has to hold somewhere near
    changed = cv2.dilate(exact.astype(np.uint8), _K3, iterations=2).astype(bool)
    # Outlines: the image divided by the ground is rough on objects (the ground's noise is missing there) and
    # smooth on (shadowed) ground; divided by a blurred ground it is the other way round. That test is exact
    # at outlines but fails on shading edges inside grey objects, where both are rough.
    la, lg = a / np.maximum(g, 1.0), a / np.maximum(cv2.GaussianBlur(g, (0, 0), 3.0), 1.0)
    outline = exact & ((_local_power(_highpass(la)) > 1.3 * _local_power(_highpass(lg))) | (chroma > 0.04))
    # Interiors: the correlation of the image's fine detail with the ground's, in windows that leave out the
    # pixels already known to be objects (their edges would swamp a narrow strip of ground between objects)
    w = (~cv2.dilate(outline.astype(np.uint8), _K3, iterations=1).astype(bool)).astype(np.float32)
    ha, hg = _highpass(a), _highpass(g)
    sig = 1.5
    num = cv2.GaussianBlur(w * ha * hg, (0, 0), sig)
    den = np.sqrt(cv2.GaussianBlur(w * ha * ha, (0, 0), sig) * cv2.GaussianBlur(w * hg * hg, (0, 0), sig)) + 1e-6
    corr = num / den
    low = cv2.morphologyEx((changed & (corr < RENDER_GROUND_CORR)).astype(np.uint8), cv2.MORPH_OPEN, _K3)
    fg = cv2.erode(low, _K3, iterations=2).astype(bool) | outline
    return _fill_holes(cv2.morphologyEx(fg.astype(np.uint8), cv2.MORPH_OPEN, _K3).astype(bool))


def _local_power(x: np.ndarray) -> np.ndarray:
    return cv2.GaussianBlur(x * x, (0, 0), 2.0)


# `render_foreground`: below this local correlation with the ground's noise a pixel is not ground
RENDER_GROUND_CORR = 0.45


def pixel_features(maps: _Maps) -> np.ndarray:
    """Per-pixel features for the pixel classifier: ratio to background, raw colour, chroma, luminance."""
    r = maps.ratio
    L = maps.L[..., None]
    raw = maps.img
    lraw = raw.mean(-1, keepdims=True)
    Lb = cv2.GaussianBlur(maps.L, (0, 0), 2.0)
    Lsd = np.sqrt(np.maximum(cv2.GaussianBlur(maps.L * maps.L, (0, 0), 2.0) - Lb * Lb, 0))
    chb = cv2.GaussianBlur(maps.chroma, (0, 0), 2.0)
    X = np.concatenate([r, raw, r - L, L, raw - lraw, maps.grad[..., None] / (L + 0.05),
                        np.log(np.maximum(L, 0.05)), Lb[..., None], Lsd[..., None] / (Lb[..., None] + 0.05),
                        chb[..., None]], -1)
    return X.reshape(-1, X.shape[-1]).astype(np.float32)


# feature blocks of `features` (column ranges); each head reads the blocks in HEAD_BLOCKS
N_COLOUR, N_MATERIAL = 17, 14
HEAD_BLOCKS = {"color": ("colour",), "material": ("colour", "material", "shape"), "shape": ("shape", "hog"),
               "object": ("colour", "material", "shape")}
N_HOG = 4 * 4 * 8 + 64


def head_columns(head: str, n_features: int) -> np.ndarray:
    blocks = {"colour": (0, N_COLOUR), "material": (N_COLOUR, N_COLOUR + N_MATERIAL),
              "shape": (N_COLOUR + N_MATERIAL, n_features - N_HOG), "hog": (n_features - N_HOG, n_features)}
    return np.concatenate([np.arange(*blocks[b]) for b in HEAD_BLOCKS[head]])


def _mlp_probs(model: dict[str, Any], X: np.ndarray, head: str) -> np.ndarray:
    if f"{head}_cols" in model:
        X = X[:, model[f"{head}_cols"]]
    Xs = (X - model[f"{head}_mu"]) / model[f"{head}_sd"]
    Z = Xs
    if f"{head}_W1" in model:
        Z = np.tanh(Xs @ model[f"{head}_W1"] + model[f"{head}_b1"])
    return _softmax(Z @ model[f"{head}_W"] + model[f"{head}_b"])


def _downscale_mask(mask: np.ndarray, f: int, shape: tuple[int, int]) -> np.ndarray:
    """A full-resolution bool mask at working resolution (majority of each f x f cell)."""
    if f == 1:
        return mask[: shape[0], : shape[1]]
    h, w = shape
    m = mask[: h * f, : w * f].reshape(h, f, w, f).mean((1, 3))
    return m >= 0.5


def pixel_classes(maps: _Maps, model: dict[str, Any], colour_only: bool = False) -> np.ndarray:
    """Label map: 0 = floor/shadow, k >= 1 = palette colour k-1 of ``model['pixel_classes']``.

    ``colour_only``: never 0 (the best colour class everywhere; for images whose object mask is known)."""
    h, w = maps.L.shape
    F = pixel_features(maps)
    if F.shape[1] != model["pixel_mu"].shape[0]:
        raise ValueError(f"clevr model: pixel classifier expects {model['pixel_mu'].shape[0]} features, the code "
                         f"computes {F.shape[1]}; retrain with python -m logicval_hf.training.train_clevr")
    X = (F - model["pixel_mu"]) / model["pixel_sd"]
    Z = np.tanh(X @ model["pixel_W1"] + model["pixel_b1"]) @ model["pixel_W"] + model["pixel_b"]
    Z = Z.reshape(h, w, -1)
    # light smoothing of the logits before the decision (render noise)
    Z = np.stack([cv2.GaussianBlur(np.ascontiguousarray(Z[..., k]), (0, 0), 0.7) for k in range(Z.shape[2])], -1)
    if colour_only:
        return (1 + Z[..., 1:].argmax(-1)).astype(np.int32)
    return Z.argmax(-1).astype(np.int32)


def _threshold_fg(maps: _Maps, settings: dict[str, Any]) -> np.ndarray:
    return (
        (maps.chroma > settings["chroma_threshold"])
        | (maps.L < settings["dark_threshold"])
        | (maps.L > settings["bright_threshold"])
    )


_K3 = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
# on own renders (exact object mask) a blob at least this convex (area / convex hull area) is never split
RENDER_SOLIDITY = 0.95


def _fill_holes(m: np.ndarray) -> np.ndarray:
    """Fill holes of a bool mask (outer contours drawn filled)."""
    u8 = np.ascontiguousarray(m, dtype=np.uint8)
    cs, _ = cv2.findContours(u8, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    out = np.zeros_like(u8)
    cv2.drawContours(out, cs, -1, 1, thickness=cv2.FILLED)
    return out.astype(bool) | m


def _split(comp: np.ndarray, neck_ratio: float) -> list[np.ndarray]:
    """Split one blob (bool mask of a crop) at necks: marker watershed on the distance transform."""
    pad = np.pad(comp, 2).astype(np.uint8)
    dist = cv2.distanceTransform(pad, cv2.DIST_L2, 5)
    dmax = float(dist.max())
    if dmax < 4:
        return [comp]
    size = max(3, int(dmax * 0.5) | 1)
    peaks = (dist == ndi.maximum_filter(dist, size=size)) & (dist >= max(3.0, 0.3 * dmax))
    ys, xs = np.nonzero(peaks)
    order = np.argsort(-dist[ys, xs])
    keep: list[tuple[int, int]] = []
    for k in order:
        p = (ys[k], xs[k])
        dp = dist[p]
        same = False
        for q in keep:
            dq = dist[q]
            n = int(max(abs(p[0] - q[0]), abs(p[1] - q[1]))) + 1
            ly = np.linspace(p[0], q[0], n).round().astype(int)
            lx = np.linspace(p[1], q[1], n).round().astype(int)
            if dist[ly, lx].min() >= neck_ratio * min(dp, dq):
                same = True
                break
        if not same:
            keep.append(p)
    if len(keep) < 2:
        return [comp]
    markers = np.zeros(pad.shape, np.int32)
    for i, (y, x) in enumerate(keep, 1):
        markers[y, x] = i
    markers[pad == 0] = len(keep) + 1
    elev = np.clip(255 * (1 - dist / dmax), 0, 255).astype(np.uint8)
    lab = cv2.watershed(cv2.cvtColor(elev, cv2.COLOR_GRAY2BGR), markers)
    lab = lab[2:-2, 2:-2]
    parts = []
    for i in range(1, len(keep) + 1):
        part = lab == i
        # watershed lines (-1) go to the neighbouring part with the larger share
        part = part | (cv2.dilate(part.astype(np.uint8), _K3).astype(bool) & (lab == -1) & comp)
        part &= comp
        if part.any():
            parts.append(part)
    return parts or [comp]


def _defect_split(comp: np.ndarray, min_area: float, settings: dict[str, Any], depth: int = 0) -> list[np.ndarray]:
    """Split a blob along the line joining its two deepest concavities (convexity defects) when both are deep
    and the cut leaves two pieces that are each more convex; recurse on the pieces."""
    if depth > 3 or comp.sum() < 2 * min_area:
        return [comp]
    pad = np.pad(comp, 1).astype(np.uint8)
    cs, _ = cv2.findContours(pad, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not cs:
        return [comp]
    c = max(cs, key=cv2.contourArea)
    if len(c) < 8:
        return [comp]
    hull = cv2.convexHull(c, returnPoints=False)
    try:
        defects = cv2.convexityDefects(c, np.sort(hull, axis=0))
    except cv2.error:
        return [comp]
    if defects is None:
        return [comp]
    area = float(comp.sum())
    dmin = max(2.0, settings["defect_depth"] * np.sqrt(area))
    defects = np.asarray(defects).reshape(-1, 4)
    deep = [(d[3] / 256.0, int(d[2])) for d in defects if d[3] / 256.0 >= dmin]
    if len(deep) < 2:
        return [comp]
    deep.sort(reverse=True)
    deep = deep[:4]
    best = None
    for a in range(len(deep)):
        for b in range(a + 1, len(deep)):
            pa = c.reshape(-1, 2)[deep[a][1]]
            pb = c.reshape(-1, 2)[deep[b][1]]
            length = float(np.hypot(*(pa - pb)))
            score = length / (deep[a][0] + deep[b][0])
            if best is None or score < best[0]:
                best = (score, pa, pb)
    if best is None or best[0] > settings["defect_cut_ratio"]:
        return [comp]
    cut = pad.copy()
    cv2.line(cut, tuple(int(v) for v in best[1]), tuple(int(v) for v in best[2]), 0, 1)
    n, lab = cv2.connectedComponents(cut, connectivity=4)
    parts = [(lab == i)[1:-1, 1:-1] for i in range(1, n)]
    parts = [p for p in parts if p.sum() >= min_area]
    if len(parts) < 2:
        return [comp]
    # the cut line itself goes back to the nearest part
    rest = comp & ~np.any(parts, axis=0)
    if rest.any():
        _, (iy, ix) = ndi.distance_transform_edt(~np.any(parts, axis=0), return_indices=True)
        owner = np.zeros(comp.shape, np.int32)
        for i, p in enumerate(parts, 1):
            owner[p] = i
        o = owner[iy, ix]
        parts = [p | (rest & (o == i)) for i, p in enumerate(parts, 1)]
    sol = area / max(_hull_area(comp), 1.0)
    if min(p.sum() / max(_hull_area(p), 1.0) for p in parts) < sol:
        return [comp]
    out = []
    for p in parts:
        out.extend(_defect_split(p, min_area, settings, depth + 1))
    return out


def _components(mask: np.ndarray) -> list[tuple[tuple[slice, slice], np.ndarray]]:
    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    out = []
    for i in range(1, n):
        x, y, w, h, _a = stats[i]
        sl = (slice(y, y + h), slice(x, x + w))
        out.append((sl, lab[sl] == i))
    return out


def _components_downscaled(mask: np.ndarray, f: int, shape: tuple[int, int]
                           ) -> list[tuple[tuple[slice, slice], np.ndarray]]:
    """Connected components of a full-resolution mask, each downscaled to working resolution on its own."""
    n, lab, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    out = []
    for i in range(1, n):
        x, y, w, h, _a = stats[i]
        y0, x0 = y // f, x // f
        y1, x1 = min(-(-(y + h) // f), shape[0]), min(-(-(x + w) // f), shape[1])
        small = _downscale_mask(lab[y0 * f: y1 * f, x0 * f: x1 * f] == i, f, (y1 - y0, x1 - x0))
        if small.any():
            out.append(((slice(y0, y1), slice(x0, x1)), small))
    return out


def segment(maps: _Maps, settings: dict[str, Any], model: dict[str, Any] | None = None
            ) -> list[tuple[tuple[slice, slice], np.ndarray]]:
    """Object masks as ``(crop slices, bool mask in the crop)`` at working resolution."""
    H, W = maps.L.shape
    min_area = settings["min_area_frac"] * H * W
    use_pix = model is not None and "pixel_W" in model
    cls = pixel_classes(maps, model, colour_only=maps.exact_fg is not None) if use_pix else None
    if maps.exact_fg is not None:
        # components of the exact mask at full resolution (downscaling first would join near neighbours)
        blobs = _components_downscaled(maps.exact_fg, maps.scale, (H, W))
    else:
        fg = (cls > 0) if use_pix else _threshold_fg(maps, settings)
        fg = cv2.morphologyEx(fg.astype(np.uint8), cv2.MORPH_OPEN, _K3)
        fg = cv2.morphologyEx(fg, cv2.MORPH_CLOSE, _K3, iterations=2).astype(bool)
        blobs = _components(_fill_holes(fg))
    out = []
    for sl, comp in blobs:
        if comp.sum() < min_area:
            continue
        pieces = [comp]
        if use_pix:
            pieces = _colour_pieces(comp, cls[sl], min_area, settings)
        # every CLEVR silhouette is convex and the renderer keeps objects apart: with an exact mask, a convex
        # single-colour blob is one object (not cut at the concavities of its shading or highlights)
        whole = maps.exact_fg is not None and len(pieces) == 1 and comp.sum() >= RENDER_SOLIDITY * _hull_area(comp)
        parts = [comp] if whole else [q for piece in pieces for p in _defect_split(piece, min_area, settings)
                                      for q in _split(p, settings["neck_ratio"])]
        for part in parts:
            if part.sum() < min_area:
                continue
            ys, xs = np.nonzero(part)
            s2 = (slice(sl[0].start + ys.min(), sl[0].start + ys.max() + 1),
                  slice(sl[1].start + xs.min(), sl[1].start + xs.max() + 1))
            out.append((s2, part[ys.min(): ys.max() + 1, xs.min(): xs.max() + 1]))
    return out


def _colour_pieces(comp: np.ndarray, cls: np.ndarray, min_area: float, settings: dict[str, Any]) -> list[np.ndarray]:
    """Split a blob by pixel colour class: major classes keep their pixels, minor ones go to the nearest major
    class; pieces that lie inside another piece's filled outline (reflections on metal) are absorbed."""
    area = comp.sum()
    c = np.where(comp, cls, 0)
    counts = np.bincount(c[comp], minlength=1)
    counts[0] = 0
    major = [k for k in np.nonzero(counts)[0] if counts[k] >= max(min_area, settings["minor_frac"] * area)]
    if len(major) <= 1:
        return [comp]
    is_major = np.isin(c, major) & comp
    # nearest major pixel for every other pixel of the blob
    _, (iy, ix) = ndi.distance_transform_edt(~is_major, return_indices=True)
    lab = np.where(comp, c[iy, ix], 0)
    pieces = []
    for k in major:
        for _, m in _components_full(lab == k):
            pieces.append(m)
    # absorb small pieces and pieces enclosed by another piece's filled outline
    pieces.sort(key=lambda m: -m.sum())
    filled = [_fill_holes(m) for m in pieces]
    keep: list[np.ndarray] = []
    keep_filled: list[np.ndarray] = []
    for m, fm in zip(pieces, filled):
        host = None
        for j, kf in enumerate(keep_filled):
            if (m & kf).sum() >= 0.6 * m.sum():
                host = j
                break
        if host is None and m.sum() < min_area and keep:
            grown = cv2.dilate(m.astype(np.uint8), _K3, iterations=2).astype(bool)
            shares = [(grown & k).sum() for k in keep]
            host = int(np.argmax(shares)) if max(shares) > 0 else None
        if host is None:
            keep.append(m.copy())
            keep_filled.append(fm)
        else:
            keep[host] |= m
            keep_filled[host] = _fill_holes(keep[host])
    return [_fill_holes(k) & comp for k in keep]


def _components_full(mask: np.ndarray) -> list[tuple[None, np.ndarray]]:
    """Connected components as full-size masks (the slice slot is unused)."""
    n, lab = cv2.connectedComponents(mask.astype(np.uint8), connectivity=8)
    return [(None, lab == i) for i in range(1, n)]


# ---------------------------------------------------------------------------------------------------
# features
# ---------------------------------------------------------------------------------------------------
def _profile(v: np.ndarray, k: int = 8) -> np.ndarray:
    if len(v) == 0:
        return np.zeros(k)
    idx = (np.arange(k) + 0.5) / k * len(v)
    return np.interp(idx, np.arange(len(v)) + 0.5, v)


def _largest_piece(mask: np.ndarray) -> np.ndarray:
    """The largest 8-connected piece of a non-empty bool mask (the mask itself when it has one piece)."""
    n, lab, st, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    return lab == (1 + int(np.argmax(st[1:, cv2.CC_STAT_AREA]))) if n > 2 else mask


def _full_crop(maps: _Maps, sl: tuple[slice, slice], mask: np.ndarray, model: dict[str, Any] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Full-resolution crop of one object: (float RGB, ratio to background, bool mask). With a pixel model
    the mask is re-classified at full resolution inside the slightly dilated working-resolution mask."""
    f = maps.scale
    H, W = maps.full.shape[:2]
    y0, y1 = sl[0].start * f, min(sl[0].stop * f, H)
    x0, x1 = sl[1].start * f, min(sl[1].stop * f, W)
    img = maps.full[y0:y1, x0:x1]
    if f == 1:
        return img, maps.ratio[sl], mask
    bgF = cv2.resize(maps.bg[sl], (x1 - x0, y1 - y0), interpolation=cv2.INTER_LINEAR)
    sm = cv2.GaussianBlur(img, (0, 0), 0.8)
    ratio = sm / np.maximum(bgF, 1e-3)
    up = cv2.resize(mask.astype(np.float32), (x1 - x0, y1 - y0), interpolation=cv2.INTER_LINEAR)
    mF = up > 0.5
    if maps.exact_fg is not None:
        ref = maps.exact_fg[y0:y1, x0:x1] & (up > 0.05)
        if ref.any():
            mF = _largest_piece(ref)
    elif model is not None and "pixel_W" in model and mF.sum() > 16:
        L = ratio.mean(-1)
        gx = cv2.Sobel(L, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(L, cv2.CV_32F, 0, 1, ksize=3)
        sub = _Maps(sm, bgF, ratio, L, np.abs(ratio - L[..., None]).max(-1), np.hypot(gx, gy) / 8, 1, img)
        X = (pixel_features(sub) - model["pixel_mu"]) / model["pixel_sd"]
        Z = np.tanh(X @ model["pixel_W1"] + model["pixel_b1"]) @ model["pixel_W"] + model["pixel_b"]
        fg = (Z.argmax(-1) > 0).reshape(L.shape)
        fg = cv2.morphologyEx(fg.astype(np.uint8), cv2.MORPH_OPEN, _K3).astype(bool)
        ref = _fill_holes(fg & (up > 0.05))
        # keep the largest piece; fall back to the upsampled mask when refinement loses too much
        if ref.sum() > 0.6 * mF.sum():
            mF = _largest_piece(ref)
    if not mF.any():
        mF = np.ones(mF.shape, bool)
    return sm, ratio, mF


def _turning_hist(c: np.ndarray, per: float, ys: np.ndarray | None = None) -> np.ndarray:
    """Histogram of the contour's turning angle (at a scale of 1/24 of the perimeter): straight edges and
    sharp corners (cubes) vs steady curvature (spheres, cylinder ends)."""
    pts = c.reshape(-1, 2).astype(np.float32)
    n = len(pts)
    k = max(2, int(n / 24))
    if n < 3 * k:
        return np.zeros(5)
    a = pts - np.roll(pts, k, 0)
    b = np.roll(pts, -k, 0) - pts
    ang = np.abs(np.arctan2(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0], (a * b).sum(1)))
    if ys is not None:
        ang = ang[ys]
    if len(ang) == 0:
        return np.zeros(5)
    bins = np.array([0.0, 0.08, 0.25, 0.5, 0.9, 10])
    hist = np.histogram(ang, bins)[0].astype(float)
    return hist / max(hist.sum(), 1)


def _hog(Lmap: np.ndarray, mask: np.ndarray, size: int = 32, cells: int = 4, bins: int = 8) -> np.ndarray:
    """Small HOG of the object's luminance (normalised by its median, floor set to that median) on a
    size x size resample: straight face edges (cubes) vs curved ones (cylinders, spheres)."""
    med = float(np.median(Lmap[mask])) if mask.any() else 1.0
    im = np.where(mask, Lmap / max(med, 1e-3), 0.0).astype(np.float32)
    im = cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA)
    gx = cv2.Sobel(im, cv2.CV_32F, 1, 0, ksize=1)
    gy = cv2.Sobel(im, cv2.CV_32F, 0, 1, ksize=1)
    mag = np.hypot(gx, gy)
    ang = np.mod(np.arctan2(gy, gx), np.pi)
    b = np.minimum((ang / np.pi * bins).astype(int), bins - 1)
    c = size // cells
    out = np.zeros((cells, cells, bins))
    for i in range(cells):
        for j in range(cells):
            out[i, j] = np.bincount(b[i * c:(i + 1) * c, j * c:(j + 1) * c].ravel(),
                                    weights=mag[i * c:(i + 1) * c, j * c:(j + 1) * c].ravel(), minlength=bins)
    out = out / (np.linalg.norm(out, axis=2, keepdims=True) + 0.2)
    m8 = cv2.resize(mask.astype(np.float32), (8, 8), interpolation=cv2.INTER_AREA)
    return np.concatenate([out.ravel(), m8.ravel()])


def _fit_err(x: np.ndarray, y: np.ndarray, deg: int) -> float:
    if len(x) <= deg + 1:
        return 0.0
    A = np.vander(x, deg + 1)
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    return float(np.sqrt(np.mean((A @ coef - y) ** 2)))


def _line_sse(S: np.ndarray) -> np.ndarray:
    """Residual sum of squares of least-squares lines from running sums S = (n, sx, sy, sxx, sxy, syy)."""
    n, sx, sy, sxx, sxy, syy = S
    vx = sxx - sx * sx / n
    cxy = sxy - sx * sy / n
    vy = syy - sy * sy / n
    return np.maximum(vy - np.where(vx > 1e-12, cxy * cxy / np.maximum(vx, 1e-12), 0.0), 0.0)


def _two_line_err(x: np.ndarray, y: np.ndarray) -> float:
    """RMS error of the best two-segment linear fit (cube tops are two straight edges), over all split points."""
    n = len(x)
    if n < 6:
        return 0.0
    terms = np.stack([np.ones(n), x, y, x * x, x * y, y * y])
    pre = np.cumsum(terms, 1)
    tot = pre[:, -1:]
    k = np.arange(2, n - 2)  # left segment = points 0..k, right = k..n-1 (the split point is shared)
    left = pre[:, k]
    right = tot - pre[:, k - 1]
    e = (_line_sse(left) + _line_sse(right)) / (n + 1)
    return float(np.sqrt(e.min()))


def features(maps: _Maps, sl: tuple[slice, slice], mask: np.ndarray, model: dict[str, Any] | None = None,
             boxes: list | None = None) -> np.ndarray:
    """Hand-crafted feature vector of one object (colour, material, shape blocks), from a full-res crop.
    The object's full-resolution box is appended to ``boxes`` when given."""
    H, W = maps.L.shape
    area_frac = float(mask.sum()) / (H * W)
    raw_c, ratio_c, mask = _full_crop(maps, sl, mask, model)
    if boxes is not None:
        f = maps.scale
        ys, xs = np.nonzero(mask)
        boxes.append((float(sl[1].start * f + xs.min()), float(sl[0].start * f + ys.min()),
                      float(sl[1].start * f + xs.max() + 1), float(sl[0].start * f + ys.max() + 1)))
    Lmap = ratio_c.mean(-1)
    h, w = mask.shape
    area = float(mask.sum())
    er = cv2.erode(mask.astype(np.uint8), _K3, iterations=max(1, int(min(h, w) / 12))).astype(bool)
    if er.sum() < 10:
        er = mask
    L = Lmap[er]
    rat = ratio_c[er]
    raw = raw_c[er]
    chv = rat - L[:, None]
    medL = float(np.median(L))
    # ---- colour: mid-luminance pixels
    lo, hi = np.percentile(L, [25, 75])
    mid = (L >= lo) & (L <= hi)
    if mid.sum() < 3:
        mid = np.ones_like(L, bool)
    raw_mid = raw[mid].mean(0)
    chrom = raw_mid / max(raw_mid.sum(), 1e-3)
    ch_mid = chv[mid].mean(0)
    rat_mid = rat[mid].mean(0)
    chn = np.abs(chv).max(1)
    chroma_med = float(np.median(chn))
    o1 = ch_mid[0] - ch_mid[1]
    o2 = (ch_mid[0] + ch_mid[1]) / 2 - ch_mid[2]
    hue = np.arctan2(o2, o1)
    colour = [*chrom, *ch_mid, *rat_mid, *raw_mid, medL, chroma_med, np.cos(hue), np.sin(hue), np.hypot(o1, o2)]
    # ---- material: highlights, contrast, reflections
    Ln = L / max(medL, 1e-3)
    p = np.percentile(Ln, [2, 10, 90, 98, 100])
    gy = cv2.Sobel(Lmap, cv2.CV_32F, 0, 1, ksize=3)
    gx = cv2.Sobel(Lmap, cv2.CV_32F, 1, 0, ksize=3)
    gmag = np.hypot(gx, gy) / 8
    gin = gmag[er] / max(medL, 1e-3)
    chroma_cv = float(np.std(chn) / (np.mean(chn) + 0.02))
    unit = ch_mid / (np.linalg.norm(ch_mid) + 1e-6)
    dir_cons = float(np.mean(chv @ unit) / (np.mean(np.linalg.norm(chv, axis=1)) + 1e-6))
    material = [*p, float(np.std(Ln)), float((Ln > 1.5).mean()), float((Ln > 2.0).mean()),
                float((L > 1.3).mean()), float(np.mean(gin)), float(np.percentile(gin, 90)), chroma_cv, dir_cons,
                float((Ln < 0.6).mean())]
    # ---- shape: silhouette
    rows = mask.sum(1).astype(float)
    cols = mask.sum(0).astype(float)
    rowp = _profile(rows / max(rows.max(), 1))
    colp = _profile(cols / max(cols.max(), 1))
    anyc = mask.any(0)
    xs_valid = np.nonzero(anyc)[0]
    top_y = mask.argmax(0)[anyc].astype(float)
    bot_y = (h - 1 - mask[::-1].argmax(0))[anyc].astype(float)
    top = np.where(anyc, mask.argmax(0), h) / h
    bot = np.where(anyc, h - 1 - mask[::-1].argmax(0), 0) / h
    topp = _profile(top)
    botp = _profile(bot)
    solidity = area / max(_hull_area(mask), 1.0)
    # top / bottom outline: parabola vs two straight segments (ellipse arc vs cube corner)
    xn = (xs_valid - xs_valid.mean()) / max(w, 1)
    t2 = _fit_err(xn, top_y / h, 2)
    t1 = _two_line_err(xn, top_y / h)
    b2 = _fit_err(xn, bot_y / h, 2)
    b1 = _two_line_err(xn, bot_y / h)
    cs, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    c = max(cs, key=cv2.contourArea) if cs else None
    if c is not None and len(c) >= 5:
        per = cv2.arcLength(c, True)
        circ = 4 * np.pi * area / max(per * per, 1e-6)
        nv1 = len(cv2.approxPolyDP(c, 0.02 * per, True))
        nv2 = len(cv2.approxPolyDP(c, 0.04 * per, True))
        (ex, ey), (ea, eb), ang = cv2.fitEllipse(c)
        ell = np.zeros_like(mask, np.uint8)
        cv2.ellipse(ell, ((ex, ey), (ea, eb), ang), 1, -1)
        ell = ell.astype(bool)
        ell_iou = float((ell & mask).sum() / max((ell | mask).sum(), 1))
        pts = c.reshape(-1, 2)
        cy = pts[:, 1].mean()
        turn_all = _turning_hist(c, per)
        turn_top = _turning_hist(c, per, np.nonzero(pts[:, 1] < cy)[0])
    else:
        circ, nv1, nv2, ell_iou = 0.0, 0, 0, 0.0
        turn_all = turn_top = np.zeros(5)
    # shading: rows (top face / ellipse) and columns of the lower half (cube faces are flat, cylinders smooth)
    rs = mask.sum(1)
    rowL = np.where(rs > 0, (Lmap * mask).sum(1) / np.maximum(rs, 1), medL) / max(medL, 1e-3)
    rowLp = _profile(rowL)
    low = mask.copy()
    low[: h // 2] = False
    colsum = low.sum(0)
    colL = np.where(colsum > 0, (Lmap * low).sum(0) / np.maximum(colsum, 1), np.nan)
    colL = colL[~np.isnan(colL)] / max(medL, 1e-3) if np.any(colsum > 0) else np.ones(2)
    colLp = _profile(colL)
    dc = np.abs(np.diff(colL)) if len(colL) > 1 else np.zeros(1)
    step = float(dc.max() / (dc.sum() + 1e-6))
    tv = float(dc.sum())
    # gradient orientation histogram inside the mask (edges of faces)
    mag = gmag[er]
    ang_ = np.mod(np.arctan2(gy[er], gx[er]), np.pi)
    hist = np.bincount(np.minimum((ang_ / np.pi * 8).astype(int), 7), weights=mag, minlength=8)
    hist = hist / max(hist.sum(), 1e-6)
    ghist = np.histogram(gin, [0, 0.01, 0.025, 0.05, 0.1, 0.2, 1e9])[0] / max(len(gin), 1)
    shape = [*turn_all, *turn_top, *ghist, h / w, area / (h * w), solidity, np.log(area_frac), *rowp, *colp, *topp, *botp, *rowLp, *hist,
             t2, t1, t1 / (t2 + 1e-3), b2, b1, b1 / (b2 + 1e-3), circ, nv1, nv2, ell_iou, *colLp, step, tv,
             *_hog(Lmap, mask)]
    return np.array(colour + material + shape, dtype=np.float64)


def _hull_area(mask: np.ndarray) -> float:
    cs, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not cs:
        return float(mask.sum())
    hull = cv2.convexHull(np.concatenate(cs))
    return max(float(cv2.contourArea(hull)), float(mask.sum()))


# ---------------------------------------------------------------------------------------------------
# classification
# ---------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def load_model(path: str | None = None) -> dict[str, Any] | None:
    p = Path(path) if path else MODEL_PATH
    if not p.is_file():
        return None
    with np.load(p, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def predict_heads(model: dict[str, Any], X: np.ndarray) -> dict[str, np.ndarray]:
    """Class probabilities per head (``colour``, ``shape``, ``material``, ``object``) for feature rows X."""
    out = {}
    for head in ("color", "shape", "material", "object"):
        if f"{head}_W" not in model:
            continue
        out[head] = _mlp_probs(model, X, head)
    return out


def render_view(model: dict[str, Any]) -> dict[str, Any]:
    """The model as used on the project's own renders: its ``render_*`` entries (pixel classifier and heads
    trained on renders) replace the default ones (trained on real CLEVR)."""
    return {**model, **{k[len("render_"):]: v for k, v in model.items() if k.startswith("render_")}}


@functools.lru_cache(maxsize=8)
def _render_ground(W: int, H: int) -> np.ndarray:
    from logicval_hf.generation.render import _background, _to_image

    return np.asarray(_to_image(_background(W, H)))


RENDER_GROUND_FRACTION = 0.2


def is_own_render(rgb: np.ndarray) -> bool:
    """True when ``rgb`` was drawn by ``logicval_hf.generation.render`` (lossless): at least `RENDER_GROUND_FRACTION` of
    its pixels equal, exactly, that renderer's ground at this size (which carries a fixed faint noise pattern,
    a fingerprint no photograph or Blender render matches). Such images are read with `render_view` of the
    model (pixel classifier and heads trained on renders); every other image with the parts trained on real
    CLEVR."""
    H, W = rgb.shape[:2]
    if H < 16 or W < 16 or H * W > 4_000_000:
        return False
    g = _render_ground(W, H)
    # a cheap check on a sparse grid first, then the full count
    if float((rgb[::7, ::7] == g[::7, ::7]).all(-1).mean()) < RENDER_GROUND_FRACTION / 2:
        return False
    return float((rgb == g).all(-1).mean()) >= RENDER_GROUND_FRACTION


def _fallback_color(f: np.ndarray) -> np.ndarray:
    raw = f[9:12]
    names = list(PALETTE)
    pal = np.array([PALETTE[n] for n in names], float) / 255
    pal = pal / pal.sum(1, keepdims=True)
    chrom = raw / max(raw.sum(), 1e-6)
    d = ((pal - chrom) ** 2).sum(1)
    return _softmax(-d * 400)


def analyse(rgb: np.ndarray, model: dict[str, Any] | None = None, with_features: bool = True,
            own_render: bool | None = None, **settings: Any) -> tuple[_Maps, list, np.ndarray]:
    """Maps, object masks (working resolution) and feature matrix of an RGB uint8 image.

    ``model=None`` segments with fixed thresholds (no pixel classifier); training uses that to bootstrap.
    ``own_render`` (detected with `is_own_render` when None): use the renderer's exact ground as background.
    """
    cfg = {**DEFAULTS, **{k: v for k, v in settings.items() if k in DEFAULTS}}
    if own_render is None:
        own_render = is_own_render(rgb)
    maps = _maps(rgb, _render_ground(rgb.shape[1], rgb.shape[0]) if own_render else None)
    objs = segment(maps, cfg, model)
    if not with_features:
        return maps, objs, np.zeros((0, 0))
    maps.boxes = []
    X = np.array([features(maps, sl, m, model, maps.boxes) for sl, m in objs]) if objs else np.zeros((0, 0))
    return maps, objs, X


_BLAS_CTL: Any = None


def _blas_single_thread() -> Any:
    """Context manager limiting BLAS to one thread: the matrices here are small, and OpenBLAS worker threads
    spinning between calls cost more than they give (3x slower on 2 cores). No-op without threadpoolctl."""
    global _BLAS_CTL
    try:
        if _BLAS_CTL is None:
            from threadpoolctl import ThreadpoolController

            _BLAS_CTL = ThreadpoolController()
        return _BLAS_CTL.limit(limits=1, user_api="blas")
    except Exception:  # threadpoolctl missing or unable to inspect the process
        import contextlib

        return contextlib.nullcontext()


def extract(rgb: np.ndarray, **settings: Any) -> Scene:
    """The ``clevr`` backend: RGB ``uint8`` array (H x W x 3) -> `Scene` with boxes, labels and ``probs``.

    Settings: any key of `DEFAULTS`, and ``model_path`` (an alternative ``.npz``).
    """
    with _blas_single_thread():
        return _extract(rgb, **settings)


def _extract(rgb: np.ndarray, **settings: Any) -> Scene:
    """The ``clevr`` backend: RGB ``uint8`` array (H x W x 3) -> `Scene` with boxes, labels and ``probs``.

    Settings: any key of `DEFAULTS`, and ``model_path`` (an alternative ``.npz``).
    """
    unknown = [k for k in settings if k not in DEFAULTS and k != "model_path"]
    if unknown:
        raise ValueError(f"clevr backend: unknown settings {unknown}; known: {sorted(DEFAULTS) + ['model_path']}")
    cfg = {**DEFAULTS, **settings}
    domain = load_catalog().domain
    H, W = rgb.shape[:2]
    model = load_model(cfg.get("model_path"))
    own = is_own_render(rgb)
    if model is not None and any(k.startswith("render_") for k in model) and own:
        model = render_view(model)
    maps, objs, X = analyse(rgb, model, own_render=own, **cfg)
    if not objs:
        return Scene((W, H), (), domain)
    if model is not None and "meta_n_features" in model and X.shape[1] != int(model["meta_n_features"]):
        raise ValueError(f"clevr model: heads expect {int(model['meta_n_features'])} object features, the code "
                         f"computes {X.shape[1]}; retrain with python -m logicval_hf.training.train_clevr")
    heads = predict_heads(model, X) if model is not None else {}
    names = {a: [str(v) for v in model[f"{a}_classes"]] for a in ("color", "shape", "material")
             if model is not None and f"{a}_classes" in model}
    keep = []
    for i, (sl, m) in enumerate(objs):
        score = float(heads["object"][i, 1]) if "object" in heads else 1.0
        if score < cfg["object_threshold"]:
            continue
        keep.append((score, i))
    keep.sort(reverse=True)
    keep = keep[: cfg["max_objects"]]
    keep.sort(key=lambda t: t[1])
    objects = []
    for score, i in keep:
        sl, m = objs[i]
        probs: dict[str, dict[str, float]] = {}
        for a in domain.perceived_attributes:
            values = domain.attributes[a]
            if a in heads and a in names:
                p = dict(zip(names[a], heads[a][i].tolist()))
            elif a == "color":
                p = dict(zip(PALETTE, _fallback_color(X[i]).tolist()))
            else:
                p = {v: 1.0 / len(values) for v in values}
            vec = np.array([p.get(v, 0.0) for v in values])
            vec = vec / vec.sum() if vec.sum() > 0 else np.full(len(values), 1.0 / len(values))
            probs[a] = {v: float(q) for v, q in zip(values, vec)}
        attrs = {a: max(probs[a], key=probs[a].get) for a in probs}
        box = maps.boxes[i]
        objects.append(SceneObject(attrs, box, round(score, 4), probs))
    return Scene((W, H), tuple(objects), domain)


def _init_worker() -> None:
    """Per-process set-up for `extract_scenes(..., n_jobs>1)`: one OpenCV thread per worker process (the
    workers already use every core) and the model loaded once."""
    cv2.setNumThreads(1)
    load_model()


extract.init_worker = _init_worker  # type: ignore[attr-defined]
