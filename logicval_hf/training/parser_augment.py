"""Scene-parser training views: geometry (scale, framing, mirror) and appearance (floor, light, camera, codec).

Why these: the parser reads images that text-to-image models draw, not only CLEVR v1.0. Objects come at any
size in square and other frames (the parser reads a scale-adaptive model at the scale where the median object
is `Augmentation.object_size` pixels, estimated by a first look at `Augmentation.probe_side`: training views
cover both looks, with the estimate's error); floors are grey, white, coloured (recoloured on the instance mask,
keeping the rendered shading); exposure, white balance, contrast, saturation, gamma, a little hue, blur, sensor
noise and JPEG vary as cameras and image pipelines do. Colour names must survive every change: the ranges
keep each CLEVR colour distinguishable from its neighbours. Every draw comes from the caller's generator,
so a step's batch is a function of (seed, step).
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from logicval_hf.training.parser_data import Record

__all__ = ["Augmentation", "CANVAS", "View", "augment", "photometric", "probe_canvas", "recolour_floor"]

#: Training canvas (W, H): square, as most T2I frames are; the network is fully convolutional.
CANVAS = (320, 320)


@dataclass(frozen=True)
class Augmentation:
    """The ranges of a training view. Log-uniform where a factor is drawn (``*_log``)."""

    object_size: float = 58.0              # the reading size of a scale-adaptive model (scene_parser)
    size_jitter_log: tuple[float, float] = (0.6, 1.65)   # the first look's size estimate errs
    probe_p: float = 0.2                   # batches at the first look's geometry (canvas: its whole image)
    probe_side: int = 224
    probe_jitter_log: tuple[float, float] = (0.85, 1.2)
    fixed_p: float = 0.1                   # views at the fixed longer side (no object in the first look)
    fixed_side: int = 480
    aniso_p: float = 0.3                   # T2I shapes are imperfect: mildly non-uniform scale
    aniso: tuple[float, float] = (0.92, 1.08)
    flip_p: float = 0.5
    anchor_p: float = 0.9                  # frame the canvas on a random object's centre
    floor_p: float = 0.2                   # recolour the floor (renders with an instance mask only)
    exposure_p: float = 0.8
    exposure_log: tuple[float, float] = (0.55, 1.6)      # in linear light
    brightness_p: float = 0.3
    brightness_log: tuple[float, float] = (0.75, 1.35)   # on the encoded values
    white_balance_p: float = 0.5
    white_balance_log: float = 0.15        # per-channel gain within exp(+-0.15)
    contrast_p: float = 0.5
    contrast: tuple[float, float] = (0.7, 1.3)
    saturation_p: float = 0.5
    saturation: tuple[float, float] = (0.45, 1.5)
    gamma_p: float = 0.3
    gamma_log: tuple[float, float] = (0.7, 1.45)
    hue_p: float = 0.25
    hue_deg: float = 8.0
    blur_p: float = 0.3
    blur_sigma: tuple[float, float] = (0.3, 2.0)
    noise_p: float = 0.6
    noise_sigma: tuple[float, float] = (0.5, 7.0)
    jpeg_p: float = 0.5
    jpeg_quality: tuple[int, int] = (30, 95)


DEFAULT = Augmentation()


@dataclass
class View:
    """A training view: the canvas image, the objects whose centre lies on it (``kept``: their indices in the
    record), the object map in the view's geometry (or None) and the cells to leave out of the heat-map loss
    (``ignore``: pixels of objects that show on the canvas while their centre lies outside it)."""

    rgb: np.ndarray
    centres: np.ndarray
    sizes: np.ndarray
    labels: np.ndarray
    objmap: np.ndarray | None
    kept: np.ndarray
    ignore: np.ndarray | None


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def view_scale(rec: Record, rng: np.random.Generator, aug: Augmentation = DEFAULT, probe: bool = False) -> float:
    """The scale of a view: the first look's geometry (``probe``), else the median object at the reading size
    (with the first look's error) or the fixed longer side."""
    H0, W0 = rec.rgb.shape[:2]
    if probe:
        return aug.probe_side * _log_uniform(rng, *aug.probe_jitter_log) / max(W0, H0)
    if rng.random() < aug.fixed_p or len(rec.sizes) == 0:
        return aug.fixed_side * _log_uniform(rng, 0.8, 1.2) / max(W0, H0)
    median = float(np.median(rec.sizes.max(axis=1)))
    return aug.object_size * _log_uniform(rng, *aug.size_jitter_log) / max(median, 1.0)


def probe_canvas(aug: Augmentation = DEFAULT) -> tuple[int, int]:
    """The canvas of first-look batches: the first look's whole image."""
    side = int(math.ceil(aug.probe_side / 32) * 32)
    return side, side


def augment(rec: Record, rng: np.random.Generator, canvas: tuple[int, int] = CANVAS,
            aug: Augmentation = DEFAULT, probe: bool = False) -> View:
    """A training view of ``rec`` on a ``canvas``-sized image (see the module docstring); ``probe``: at the
    first look's geometry. Where the image does not cover the canvas, the rest is filled with the colour of
    the image's border (replicating the border would smear an object that touches it into a streak)."""
    import cv2

    H0, W0 = rec.rgb.shape[:2]
    s = view_scale(rec, rng, aug, probe)
    sx = sy = s
    if rng.random() < aug.aniso_p:
        a = rng.uniform(*aug.aniso)
        sx, sy = s * a, s / a
    img, objmap = rec.rgb, rec.mask
    if max(sx, sy) < 0.7:  # shrink with an area filter first (warpAffine would alias thin highlights)
        size = (max(1, round(W0 * sx)), max(1, round(H0 * sy)))
        img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
        if objmap is not None:
            objmap = cv2.resize(objmap, size, interpolation=cv2.INTER_NEAREST)
        fx, fy = size[0] / W0, size[1] / H0
        rest = (sx / fx, sy / fy)
    else:
        fx, fy, rest = 1.0, 1.0, (sx, sy)
    Wc, Hc = canvas
    w, h = W0 * sx, H0 * sy
    # where the scaled image's origin lands on the canvas: anywhere that keeps image on most of it, mostly
    # with some object's centre on the canvas (a view of bare floor teaches little)
    xr, yr = [min(Wc - w, 0.0), max(Wc - w, 0.0)], [min(Hc - h, 0.0), max(Hc - h, 0.0)]
    if len(rec.centres) and rng.random() < aug.anchor_p:
        ax, ay = rec.centres[int(rng.integers(len(rec.centres)))] * [sx, sy]
        xr = [max(xr[0], 4 - ax), min(xr[1], Wc - 4 - ax)] if 4 - ax <= Wc - 4 - ax else xr
        yr = [max(yr[0], 4 - ay), min(yr[1], Hc - 4 - ay)] if 4 - ay <= Hc - 4 - ay else yr
        xr, yr = (xr if xr[0] <= xr[1] else [xr[1]] * 2), (yr if yr[0] <= yr[1] else [yr[1]] * 2)
    ox, oy = rng.uniform(*xr), rng.uniform(*yr)
    m = np.array([[rest[0], 0.0, ox], [0.0, rest[1], oy]], np.float32)
    frame = np.concatenate([img[:2].reshape(-1, 3), img[-2:].reshape(-1, 3), img[:, :2].reshape(-1, 3),
                            img[:, -2:].reshape(-1, 3)])
    fill = tuple(float(v) for v in np.median(frame, axis=0))
    img = cv2.warpAffine(img, m, (Wc, Hc), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=fill)
    if objmap is not None:
        objmap = cv2.warpAffine(objmap.astype(np.float32), m, (Wc, Hc), flags=cv2.INTER_NEAREST,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=-1).astype(np.int16)
    centres = rec.centres * [sx, sy] + [ox, oy]
    sizes = rec.sizes * [sx, sy]
    keep = (centres[:, 0] >= 0) & (centres[:, 0] < Wc) & (centres[:, 1] >= 0) & (centres[:, 1] < Hc)
    kept = np.nonzero(keep)[0]
    ignore = None
    if objmap is not None and len(kept) < len(rec.labels):
        gone = np.setdiff1d(np.arange(len(rec.labels)), kept)
        ignore = np.isin(objmap, gone)
    centres, sizes, labels = centres[keep], sizes[keep], rec.labels[keep]
    if rng.random() < aug.flip_p:
        img = img[:, ::-1]
        objmap = None if objmap is None else np.ascontiguousarray(objmap[:, ::-1])
        ignore = None if ignore is None else np.ascontiguousarray(ignore[:, ::-1])
        centres = np.stack([Wc - centres[:, 0], centres[:, 1]], 1) if len(centres) else centres
    if objmap is not None and rng.random() < aug.floor_p:
        img = recolour_floor(img, objmap, rng)
    img = photometric(np.ascontiguousarray(img), rng, aug)
    return View(img, centres, sizes, labels, objmap, kept, ignore)


def recolour_floor(img: np.ndarray, objmap: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The floor (object map -1) repainted white or a plain colour, its rendered shading (shadows, light
    fall-off) kept as relative luminance; uncounted things (-2) keep their look."""
    floor = objmap == -1
    if not floor.any():
        return img
    x = img.astype(np.float32)
    lum = x @ np.array([0.299, 0.587, 0.114], np.float32)
    ref = float(np.median(lum[floor])) + 1e-3
    if rng.random() < 0.4:  # white and near-white
        target = rng.uniform(0.82, 1.0) * 255 * (1 + rng.uniform(-0.03, 0.03, 3))
    else:
        target = np.array(colorsys.hsv_to_rgb(rng.random(), rng.uniform(0.08, 0.7), rng.uniform(0.3, 0.95))) * 255
    new = (lum[..., None] / ref) * target.astype(np.float32)
    x[floor] = new[floor]
    return np.clip(x + 0.5, 0, 255).astype(np.uint8)


def photometric(img: np.ndarray, rng: np.random.Generator, aug: Augmentation = DEFAULT) -> np.ndarray:
    """Appearance changes on an RGB uint8 image (H x W x 3), in the order a camera pipeline applies them."""
    import cv2

    x = img.astype(np.float32) / 255.0
    exposure, balance = rng.random() < aug.exposure_p, rng.random() < aug.white_balance_p
    if exposure or balance:  # light and white balance act on linear light
        lin = np.power(x, 2.2)
        if exposure:
            lin = lin * _log_uniform(rng, *aug.exposure_log)
        if balance:
            lin = lin * np.exp(rng.uniform(-aug.white_balance_log, aug.white_balance_log, 3)).astype(np.float32)
        x = np.power(np.clip(lin, 0.0, 1.0), 1 / 2.2)
    if rng.random() < aug.brightness_p:
        x = x * _log_uniform(rng, *aug.brightness_log)
    if rng.random() < aug.contrast_p:
        mean = float(x.mean())
        x = (x - mean) * rng.uniform(*aug.contrast) + mean
    if rng.random() < aug.saturation_p:
        grey = x @ np.array([0.299, 0.587, 0.114], np.float32)
        x = grey[..., None] + rng.uniform(*aug.saturation) * (x - grey[..., None])
    if rng.random() < aug.hue_p:
        x = _rotate_hue(x, math.radians(rng.uniform(-aug.hue_deg, aug.hue_deg)))
    x = np.clip(x, 0.0, 1.0)
    if rng.random() < aug.gamma_p:
        x = np.power(x, _log_uniform(rng, *aug.gamma_log))
    x = x * 255.0
    if rng.random() < aug.blur_p:
        x = cv2.GaussianBlur(x, (0, 0), rng.uniform(*aug.blur_sigma))
    if rng.random() < aug.noise_p:
        x = x + rng.normal(0, rng.uniform(*aug.noise_sigma), size=x.shape).astype(np.float32)
    out = np.clip(x + 0.5, 0, 255).astype(np.uint8)
    if rng.random() < aug.jpeg_p:
        quality = int(rng.integers(*aug.jpeg_quality))
        ok, buf = cv2.imencode(".jpg", out[:, :, ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR) if ok else None
        if decoded is None:
            raise RuntimeError(f"OpenCV could not round-trip a {out.shape} image through JPEG (quality {quality})")
        out = decoded[:, :, ::-1]
    return np.ascontiguousarray(out)


_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], np.float32)
_RGB = np.linalg.inv(_YIQ).astype(np.float32)


def _rotate_hue(x: np.ndarray, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    rot = np.array([[1, 0, 0], [0, c, -s], [0, s, c]], np.float32)
    return x @ (_RGB @ rot @ _YIQ).T


def describe(aug: Augmentation = DEFAULT) -> dict[str, Any]:
    """The ranges as recorded in a model's provenance."""
    from dataclasses import asdict

    return asdict(aug)
