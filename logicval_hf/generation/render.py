"""A small numpy/PIL renderer of CLEVR-style scenes (no Blender, no torch).

``render_scene(scene, size, seed)`` draws the objects of ``scene`` (spheres, cubes and cylinders in the eight
CLEVR colours, matte rubber or shiny metal) on a grey CLEVR-like ground and returns the image together with a
new :class:`Scene` whose boxes are the boxes actually drawn. Where each object goes (the layout contract: regions and
strict orders kept) is `render_layout`'s job.

Drawing model: each object is ray-cast with an orthographic camera looking down at CLEVR's elevation
(about 28 degrees), scaled with its depth (objects farther back are higher in the image and smaller; a 2.5D
proxy, not a true perspective camera), shaded with lights in linear RGB (rubber: diffuse; metal: environment
reflection with a horizon band and streaks, Fresnel rim, sharp specular highlights and glints on the bevels),
with bevelled cube edges and rounded cylinder rims, 2x2 supersampled, and with soft capsule shadows on the
ground. Objects do not reflect each other and shadows ignore other objects. Rendering is deterministic given
``(scene, size, seed)``; the seed picks object sizes (CLEVR's large/small plus a small jitter), cube
rotations and small position jitter; the ground (including its faint noise) depends only on the size.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
from PIL import Image

from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.generation.render_layout import COS_E as _CE
from logicval_hf.generation.render_layout import MAX_BOX_OVERLAP
from logicval_hf.generation.render_layout import SIN_E as _SE
from logicval_hf.generation.render_layout import VIEW as _V
from logicval_hf.generation.render_layout import Layout as _Layout
from logicval_hf.generation.render_layout import silhouette_extent as _extent

__all__ = ["CLEVR_COLORS", "MAX_BOX_OVERLAP", "render_scene", "layout_boxes"]

# CLEVR's colour table (properties.json of the CLEVR generator), sRGB 0..255, keyed by colour name.
CLEVR_COLORS: Mapping[str, tuple[int, int, int]] = {
    "gray": (87, 87, 87),
    "red": (173, 35, 35),
    "blue": (42, 75, 215),
    "green": (29, 105, 20),
    "brown": (129, 74, 25),
    "purple": (129, 38, 192),
    "cyan": (41, 208, 208),
    "yellow": (255, 238, 51),
}
_SHAPES = ("sphere", "cube", "cylinder")
_METALS = ("metal",)  # every other material value is drawn as matte rubber

def _unit(*v: float) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


_L_KEY = _unit(-0.55, -0.35, 0.80)  # towards the key light: upper left, slightly in front
_L_FILL = _unit(0.75, -0.45, 0.45)  # fill from the right
_L_BACK = _unit(0.15, 0.85, 0.55)  # rim light from behind
_GAMMA = 2.2

# ---- vocabulary checks -------------------------------------------------------------------------------------
def _check_vocabulary(scene: Scene) -> None:
    dom = scene.domain.attributes
    missing = [c for c in dom.get("color", ()) if c not in CLEVR_COLORS]
    if missing:
        raise ValueError(f"render: no palette entry for colour(s) {missing}")
    bad = [s for s in dom.get("shape", ()) if s not in _SHAPES]
    if bad:
        raise ValueError(f"render: cannot draw shape(s) {bad}; known shapes {list(_SHAPES)}")
    for i, o in enumerate(scene.objects):
        if o.attributes.get("color") not in CLEVR_COLORS:
            raise ValueError(f"render: object {i} has colour {o.attributes.get('color')!r}; known {list(CLEVR_COLORS)}")
        if o.attributes.get("shape") not in _SHAPES:
            raise ValueError(f"render: object {i} has shape {o.attributes.get('shape')!r}; known {list(_SHAPES)}")


def layout_boxes(scene: Scene, size: tuple[int, int] = (480, 320), seed: int = 0) -> list[list[float]]:
    """The planned boxes (analytic silhouettes) of ``render_scene``; the drawn boxes differ by about 1 px."""
    _check_vocabulary(scene)
    lay = _Layout(scene, size, seed)
    w, h = lay.boxsize()
    return [[float(lay.X[i] - w[i] / 2), float(lay.Y[i] - h[i] / 2), float(lay.X[i] + w[i] / 2),
             float(lay.Y[i] + h[i] / 2)] for i in range(lay.n)]


# ---- background -------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _background(W: int, H: int) -> np.ndarray:
    """CLEVR-like ground: grey, darker at the back, a warm brighter pool near the front, faint render noise."""
    y = (np.arange(H, dtype=np.float32)[:, None] + 0.5) / H
    x = (np.arange(W, dtype=np.float32)[None, :] + 0.5) / W
    aspect = W / H
    base = 0.405 + 0.02 * np.exp(-(((x - 0.45) * aspect / 0.5) ** 2)) * (1 - y)
    pool = np.exp(-((((x - 0.62) * aspect) / 0.85) ** 2 + ((y - 1.05) / 0.62) ** 2))
    side = np.exp(-(((x + 0.02) * aspect / 0.18) ** 2 + ((y - 0.52) / 0.13) ** 2))
    g = base + 0.165 * pool - 0.035 * (1 - y) * x + 0.06 * side
    img = np.repeat(g[:, :, None], 3, axis=2)
    img[:, :, 0] += 0.012 * pool
    img[:, :, 2] -= 0.018 * pool
    img[:, :, 2] += 0.02 * side
    noise = np.random.default_rng(12345).normal(0.0, 0.0045, (H, W, 1)).astype(np.float32)
    img += noise
    img.setflags(write=False)
    return img.astype(np.float32)


# ---- shading ----------------------------------------------------------------------------------------------
def _smoothstep(e0: float, e1: float, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3 - 2 * t)


def _shade(n: np.ndarray, hz: np.ndarray, rgb: np.ndarray, metal: bool) -> np.ndarray:
    """Colour of surface points with unit world normals ``n`` (k, 3) at relative heights ``hz`` (k,) in [0, 1].

    Shading is done in linear light and returned as display RGB in [0, 1], shape (k, 3).
    """
    c = (rgb / 255.0) ** _GAMMA
    k1 = np.clip(n @ _L_KEY, 0, None)
    k2 = np.clip(n @ _L_FILL, 0, None)
    k3 = np.clip(n @ _L_BACK, 0, None)
    nv = n @ _V
    kc = np.clip(-nv, 0, None)  # soft light from the camera side (CLEVR's faces differ only mildly)
    r = _V[None, :] - 2 * nv[:, None] * n  # reflected viewing direction
    if not metal:
        diff = 0.28 + 0.58 * k1 + 0.20 * k2 + 0.12 * k3 + 0.22 * kc
        spec = 0.035 * np.clip(r @ _L_KEY, 0, None) ** 12
        lin = c[None, :] * diff[:, None] + spec[:, None]
    else:
        rz = r[:, 2]
        ground = _smoothstep(0.03, -0.05, rz)
        # the ground is reflected brighter near the object's foot (it is closer there)
        env = (0.26 + 0.30 * (1 - hz) ** 2) * ground + (1 - ground) * (0.15 + 0.15 * (1 - np.clip(rz, 0, 1)) ** 2)
        env = env - 0.12 * np.exp(-((rz + 0.01) / 0.07) ** 2)  # dark band at the reflected horizon
        env = env * (0.85 + 0.3 * np.cos(3.0 * r[:, 0] + 0.6) ** 2)  # soft streaks from the surroundings' azimuth
        fres = 0.75 + 0.6 * (1 + nv) ** 3  # brighter towards the silhouette (grazing reflection)
        diff = 0.14 + 0.34 * k1 + 0.10 * k2 + 0.06 * kc
        s1 = np.clip(r @ _L_KEY, 0, None)
        s2 = np.clip(r @ _L_FILL, 0, None)
        spec = 2.2 * s1 ** 90 + 0.45 * s1 ** 20 + 0.5 * s2 ** 50  # sharp highlight + glints on the bevels
        tint = 0.55 + 0.45 * c
        lin = c[None, :] * (diff + 1.6 * env * fres)[:, None] + spec[:, None] * tint[None, :]
    return _TO_DISPLAY[(np.clip(lin, 0, 1) * (_LUT - 1) + 0.5).astype(np.intp)]


# linear -> display lookup table (faster than a power per pixel)
_LUT = 4096
_TO_DISPLAY = (np.linspace(0.0, 1.0, _LUT) ** (1 / _GAMMA)).astype(np.float32)

# ---- sprites ----------------------------------------------------------------------------------------------
_SS = 2  # supersampling per axis


def _sprite(shape: str, r: float, phi: float, rgb: np.ndarray, metal: bool):
    """Ray-cast one object. Returns premultiplied RGB (h, w, 3), coverage (h, w), footprint centre (ax, ay)."""
    xmin, xmax, ymin, ymax = _extent(shape, r, phi)
    x0, x1 = math.floor(xmin) - 1, math.ceil(xmax) + 1
    y0, y1 = math.floor(ymin) - 1, math.ceil(ymax) + 1
    nx_, ny_ = (x1 - x0) * _SS, (y1 - y0) * _SS
    px = (x0 + (np.arange(nx_) + 0.5) / _SS)[None, :].repeat(ny_, axis=0)
    py = (y0 + (np.arange(ny_) + 0.5) / _SS)[:, None].repeat(nx_, axis=1)
    T = 20.0 * r + 10.0
    # ray origins on a plane in front of the object; direction _V
    ox = px
    oy = -py * _SE - T * _CE
    oz = -py * _CE + T * _SE
    if shape == "sphere":
        du = px
        dw = -py - r * _CE
        q = 1 - (du * du + dw * dw) / (r * r)
        hit = q > 0
        a, b = du[hit] / r, dw[hit] / r
        c = np.sqrt(q[hit])
        n = np.stack([a, b * _SE - c * _V[1], b * _CE - c * _V[2]], axis=1)
        hz = (1 + n[:, 2]) / 2
    elif shape == "cylinder":
        hc = 2 * r
        bev = max((0.10 if metal else 0.08) * r, 0.6)
        # top cap
        t_top = (oz - hc) / _SE
        yt = oy + t_top * _CE
        top = ox * ox + yt * yt <= r * r
        # front side
        inside = np.abs(ox) <= r
        ys = -np.sqrt(np.clip(r * r - ox * ox, 0, None))
        ts = (ys - oy) / _CE
        zs = oz - ts * _SE
        side = inside & (zs >= 0) & (zs <= hc) & ~top
        hit = top | side
        X = ox[hit]
        Yh = np.where(top, yt, ys)[hit]
        Z = np.where(top, hc, zs)[hit]
        rho = np.sqrt(X * X + Yh * Yh) + 1e-9
        qr = np.clip(rho - (r - bev), 0, None)
        qz = np.clip(Z - (hc - bev), 0, None)
        qr = np.where(side[hit], np.maximum(qr, bev * 0.999), qr)
        qz = np.where(top[hit], np.maximum(qz, 1e-6), qz)
        nn = np.stack([qr * X / rho, qr * Yh / rho, qz], axis=1)
        n = nn / np.linalg.norm(nn, axis=1, keepdims=True)
        hz = Z / hc
    else:  # cube
        edge = math.sqrt(2.0) * r
        bev = max((0.10 if metal else 0.07) * edge, 0.6)
        cphi, sphi = math.cos(phi), math.sin(phi)
        lo = np.array([-edge / 2, -edge / 2, 0.0])
        hi = np.array([edge / 2, edge / 2, edge])
        o = np.stack([cphi * ox + sphi * oy, -sphi * ox + cphi * oy, oz], axis=-1)
        d = np.array([sphi * _V[1], cphi * _V[1], _V[2]])
        d = np.where(np.abs(d) < 1e-9, 1e-9, d)
        t1 = (lo - o) / d
        t2 = (hi - o) / d
        tn = np.minimum(t1, t2).max(axis=-1)
        tf = np.maximum(t1, t2).min(axis=-1)
        hit = tn <= tf
        p = o[hit] + tn[hit][:, None] * d[None, :]
        hz = p[:, 2] / edge
        ql = p - np.clip(p, lo + bev, hi - bev)
        ql = ql / (np.linalg.norm(ql, axis=1, keepdims=True) + 1e-12)
        n = np.stack([cphi * ql[:, 0] - sphi * ql[:, 1], sphi * ql[:, 0] + cphi * ql[:, 1], ql[:, 2]], axis=1)
    col = np.zeros((ny_, nx_, 3), dtype=np.float32)
    col[hit] = _shade(n, np.clip(hz, 0, 1), rgb, metal)
    cov = hit.astype(np.float32)
    # downsample
    cov = cov.reshape(ny_ // _SS, _SS, nx_ // _SS, _SS).mean(axis=(1, 3))
    col = col.reshape(ny_ // _SS, _SS, nx_ // _SS, _SS, 3).mean(axis=(1, 3))
    rows = np.nonzero(cov.any(axis=1))[0]
    cols = np.nonzero(cov.any(axis=0))[0]
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    return col[r0:r1, c0:c1], cov[r0:r1, c0:c1], (-x0 - c0, -y0 - r0)


# ---- shadows ----------------------------------------------------------------------------------------------
_SH_DIR = -_L_KEY[:2] / _L_KEY[2]  # ground offset per unit of height


def _shadow(img: np.ndarray, ax: float, ay: float, foot: float, height: float, strength: float) -> None:
    """Darken the ground with a soft capsule: the footprint swept along the key light's shadow direction."""
    H, W = img.shape[:2]
    sx, sy = _SH_DIR * height  # ground offset of the top (world X right, Y back)
    soft = 0.7 * foot + 1.0
    reach = foot + soft
    gx0, gx1 = min(0.0, sx) - reach, max(0.0, sx) + reach
    gy0, gy1 = min(0.0, sy) - reach, max(0.0, sy) + reach
    # image rows: img_y = ay - Y * sin(e)
    xa, xb = max(math.floor(ax + gx0), 0), min(math.ceil(ax + gx1) + 1, W)
    ya, yb = max(math.floor(ay - gy1 * _SE), 0), min(math.ceil(ay - gy0 * _SE) + 1, H)
    if xa >= xb or ya >= yb:
        return
    X = (np.arange(xa, xb, dtype=np.float32) + 0.5 - ax)[None, :]
    Y = ((ay - (np.arange(ya, yb, dtype=np.float32) + 0.5)) / _SE)[:, None]
    ll = sx * sx + sy * sy
    t = np.clip((X * sx + Y * sy) / ll, 0.0, 1.0)
    dist = np.sqrt((X - t * sx) ** 2 + (Y - t * sy) ** 2)
    rad = foot * (1.0 - 0.25 * t)
    s = _smoothstep(rad + soft, rad - 0.6 * soft, dist) * (1.0 - 0.35 * t)
    contact = _smoothstep(foot * 1.15, foot * 0.6, np.sqrt(X * X + Y * Y))
    dark = 1.0 - strength * s - 0.12 * contact
    img[ya:yb, xa:xb, :] *= np.clip(dark, 0.3, 1.0)[:, :, None]


# ---- public API -------------------------------------------------------------------------------------------
def render_scene(scene: Scene, size: Sequence[int] = (480, 320), seed: int = 0) -> tuple[Image.Image, Scene]:
    """Draw ``scene`` CLEVR-style at ``size = (W, H)``; return the RGB image and the scene of the drawn boxes.

    Objects keep their order and attributes (``score``/``probs`` are dropped); the returned boxes are the tight
    boxes of the drawn silhouettes and realise the input's regions and (tie-broken) left/right/front/behind
    orders strictly. See the module docstring for the layout contract.
    """
    W, H = int(size[0]), int(size[1])
    if W < 1 or H < 1:
        raise ValueError(f"render: bad image size {size}")
    img = _background(W, H).copy()
    if not scene.objects:
        return _to_image(img), Scene((W, H), (), scene.domain)
    _check_vocabulary(scene)
    lay = _Layout(scene, (W, H), seed)
    for attempt in range(6):
        result = _draw(scene, lay, img if attempt == 0 else _background(W, H).copy())
        if result is not None:
            return result
        lay.shrink *= 0.85  # pragma: no cover - defensive: re-solve with smaller objects
        lay._solve()  # pragma: no cover
    raise RuntimeError("render: drawn boxes do not realise the layout")  # pragma: no cover


def _draw(scene: Scene, lay: _Layout, img: np.ndarray):
    W, H, n = lay.W, lay.H, lay.n
    radius = lay.radius()
    sprites = []
    for i, o in enumerate(scene.objects):
        shape = o.attributes["shape"]
        rgb = np.array(CLEVR_COLORS[o.attributes["color"]], dtype=np.float64)
        metal = o.attributes.get("material") in _METALS
        col, cov, (ax, ay) = _sprite(shape, float(radius[i]), float(lay.phi[i]), rgb, metal)
        h, w = cov.shape
        bx0 = int(min(max(round(lay.X[i] - w / 2), 0), W - w))
        by0 = int(min(max(round(lay.Y[i] - h / 2), 0), H - h))
        sprites.append((col, cov, bx0, by0, bx0 + ax, by0 + ay))
    boxes = [(float(s[2]), float(s[3]), float(s[2] + s[1].shape[1]), float(s[3] + s[1].shape[0])) for s in sprites]
    out = Scene((W, H), tuple(SceneObject(dict(o.attributes), b) for o, b in zip(scene.objects, boxes, strict=True)),
                scene.domain)
    if not _realises(out, lay):
        return None
    # shadows first (all on the ground), then objects from back to front
    for i, (*_, ax, ay) in enumerate(sprites):
        r = float(radius[i])
        shape = scene.objects[i].attributes["shape"]
        foot = r * (0.95 if shape != "cube" else 0.9)
        height = 2 * r if shape != "sphere" else 1.6 * r
        _shadow(img, ax, ay, foot, height, 0.26)
    for i in sorted(range(n), key=lambda i: (sprites[i][5], i)):
        col, cov, bx0, by0, _, _ = sprites[i]
        h, w = cov.shape
        win = img[by0:by0 + h, bx0:bx0 + w]
        win *= 1.0 - cov[:, :, None]
        win += col
    return _to_image(img), out


def _to_image(img: np.ndarray) -> Image.Image:
    return Image.fromarray((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8))


def _realises(out: Scene, lay: _Layout) -> bool:
    """The drawn boxes give every object its region and both orders strictly, and overlap within the bound."""
    b = np.array([o.bbox for o in out.objects], dtype=np.float64)
    iw = np.clip(np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1]), 0, None)
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    ratio = iw * ih / np.minimum(area[:, None], area[None, :])
    np.fill_diagonal(ratio, 0.0)
    if ratio.max() > MAX_BOX_OVERLAP:
        return False
    cent = [o.center for o in out.objects]
    for i in range(lay.n):
        k = int(out.region(i)[1:])
        if (k % 2, k // 2) != (lay.cols[i], lay.rows[i]):
            return False
    for order, k in ((lay.x_order, 0), (lay.y_order, 1)):
        for u, v in itertools.pairwise(order):
            if not cent[u][k] < cent[v][k]:
                return False
    return True
