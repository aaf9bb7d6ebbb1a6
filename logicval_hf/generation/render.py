"""A small numpy/PIL renderer of CLEVR-style scenes (no Blender, no torch).

``render_scene(scene, size, seed)`` draws the objects of ``scene`` (spheres, cubes and cylinders in the eight
CLEVR colours, matte rubber or shiny metal) on a grey CLEVR-like ground and returns the image together with a
new :class:`Scene` whose boxes are the boxes actually drawn.

Layout contract (regions.md §6)
-------------------------------
The input boxes are only a layout *specification*: the renderer reads from them the left-to-right order and
the back-to-front order of the box centres and every object's region, and it places the objects so that the
returned scene has

* the same region for every object, and
* the same ``left``/``right``/``front``/``behind`` relation for every pair, strictly (no ties: consecutive
  centres differ by at least ``~1 %`` of the image side, and centres keep a margin of ``~3 %`` of the side and
  of a quarter of their box from the midlines).

Exact ties in the input (two centres with equal x, or equal y) are broken deterministically by object index:
the lower index goes left (x) / behind (y). The returned scene is then total on both axes and agrees with the
input on every relation the input states.

How: the x-order is split into one chain per column and the y-order into one chain per row. Every centre is
kept inside its half of the image (margin ``~3 %`` of the side and a quarter of the box from the midline,
so three quarters of a box lie on its own side), consecutive centres of a chain at least
``~1.2 %`` of the side apart, and every box inside the image; a projection onto exactly these constraints
(exact per chain: running max/min bounds, then isotonic regression, clipped) is applied after every relaxation step that
pushes overlapping boxes apart, so the planned layout always satisfies them. Sprites are then drawn with
their measured tight box centred on the planned centre (rounding moves a centre by <= 0.5 px, less than the
gaps and margins), and the drawn boxes are checked again (regions, strict orders, overlap bound); if that
ever failed the layout would be re-solved with smaller objects, never returned.

The returned boxes are the tight boxes of the drawn silhouettes (every pixel the object covers at all, before
nearer objects are painted over it, i.e. amodal boxes), in pixels of the output image. Boxes lie inside the
image. Objects are kept visually separable: the intersection of any two returned boxes is at most
``MAX_BOX_OVERLAP`` (10 %) of the smaller box, and in practice almost always 0 (boxes are pushed at least
~0.8 % of the width apart). Crowded regions get smaller, more uniform objects (boxes of a region cover at
most ~30 % of its quadrant to start with; persistent overlaps shrink the larger object of the pair).
At 320x240 and up with <= 10 objects objects stay >= ~10 px wide (9-10 objects in one quadrant of a
320x240 image: typically 15-20 px).

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

# A centre keeps at least this fraction of its box size from the midlines (so >= 75 % of the box's extent lies
# on its own side of each midline and the region is visible, not only computable).
_MID_FRACTION = 0.25
# Largest allowed intersection of two returned boxes, as a fraction of the smaller box's area.
MAX_BOX_OVERLAP = 0.10

# ---- camera and lights --------------------------------------------------------------------------------------
# World: X right, Y away from the camera, Z up. Orthographic per object; the camera looks down at _ELEV.
_ELEV = math.radians(28.0)
_SE, _CE = math.sin(_ELEV), math.cos(_ELEV)
_V = np.array([0.0, _CE, -_SE])  # viewing direction (into the scene)


def _unit(*v: float) -> np.ndarray:
    a = np.array(v, dtype=np.float64)
    return a / np.linalg.norm(a)


_L_KEY = _unit(-0.55, -0.35, 0.80)  # towards the key light: upper left, slightly in front
_L_FILL = _unit(0.75, -0.45, 0.45)  # fill from the right
_L_BACK = _unit(0.15, 0.85, 0.55)  # rim light from behind
_GAMMA = 2.2

# World sizes (CLEVR units): radius of large / small objects; pixels per unit at the front of the image.
_R_LARGE, _R_SMALL = 0.7, 0.35
_PX_PER_UNIT = 0.20  # times image height, at the bottom edge


def _depth_scale(cy: np.ndarray | float, height: float) -> np.ndarray | float:
    """Perspective proxy: objects at the top of the image (far) are ~0.55x the size of those at the bottom."""
    t = np.clip(np.asarray(cy, dtype=np.float64) / height, 0.0, 1.0)
    return 0.55 + 0.45 * t


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


# ---- orders and regions of the input ---------------------------------------------------------------------
def _orders(scene: Scene) -> tuple[list[int], list[int], list[int], list[int]]:
    """x-order and y-order (ties broken by index), and each object's column and row (regions.md §6)."""
    n = len(scene.objects)
    cent = [o.center for o in scene.objects]
    x_order = sorted(range(n), key=lambda i: (cent[i][0], i))
    y_order = sorted(range(n), key=lambda i: (cent[i][1], i))
    cols, rows = [], []
    for i in range(n):
        k = int(scene.region(i)[1:])
        cols.append(k % 2)
        rows.append(k // 2)
    return x_order, y_order, cols, rows


# ---- analytic silhouettes ---------------------------------------------------------------------------------
def _dims(shape: str, r_px: np.ndarray | float, phi: np.ndarray | float):
    """Silhouette width and height (px) of an object of pixel radius ``r_px``."""
    r = np.asarray(r_px, dtype=np.float64)
    if shape == "sphere":
        return 2 * r, 2 * r
    if shape == "cylinder":
        return 2 * r, 2 * r * _CE + 2 * r * _SE
    a = math.sqrt(2.0) * r  # cube side
    d = a / 2 * (np.abs(np.cos(phi)) + np.abs(np.sin(phi)))
    return 2 * d, 2 * d * _SE + a * _CE


def _extent(shape: str, r: float, phi: float) -> tuple[float, float, float, float]:
    """Silhouette extent (xmin, xmax, ymin, ymax) relative to the projected footprint centre, y down."""
    if shape == "sphere":
        return -r, r, -r * _CE - r, -r * _CE + r
    if shape == "cylinder":
        return -r, r, -2 * r * _CE - r * _SE, r * _SE
    a = math.sqrt(2.0) * r
    d = a / 2 * (abs(math.cos(phi)) + abs(math.sin(phi)))
    return -d, d, -(d * _SE + a * _CE), d * _SE


# ---- layout -----------------------------------------------------------------------------------------------
class _Layout:
    """Per-object drawing parameters plus box-centre positions that realise the required orders and regions."""

    def __init__(self, scene: Scene, size: tuple[int, int], seed: int):
        self.W, self.H = int(size[0]), int(size[1])
        if self.W < 64 or self.H < 48:
            raise ValueError(f"render: image size {size} too small (need at least 64x48)")
        self.n = n = len(scene.objects)
        self.shapes = [o.attributes["shape"] for o in scene.objects]
        self.rng = rng = np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFFFFFFFFFF, n]))
        large = rng.random(n) < 0.5
        self.r_world = np.where(large, _R_LARGE, _R_SMALL) * rng.uniform(0.92, 1.08, n)
        self.phi = rng.uniform(0.0, math.pi / 2, n)  # cube rotation about the vertical axis
        self.shrink = np.ones(n)
        # silhouette width / height per pixel of radius (all silhouette dimensions are linear in the radius)
        kk = np.array([_dims(sh, 1.0, ph) for sh, ph in zip(self.shapes, self.phi, strict=True)],
                      dtype=np.float64).reshape(n, 2)
        self.kw, self.kh = kk[:, 0], kk[:, 1]
        self.x_order, self.y_order, self.cols, self.rows = _orders(scene)
        self.gx = max(2.0, round(0.012 * self.W))  # min distance of consecutive centres
        self.gy = max(2.0, round(0.012 * self.H))
        self.mx = max(2.0, round(0.03 * self.W))  # margin of centres from the midlines
        self.my = max(2.0, round(0.03 * self.H))
        self.edge = 2.0  # margin of boxes from the image border
        self.pad = max(2.0, 0.008 * self.W)  # wanted gap between boxes
        self.chains_x = [[i for i in self.x_order if self.cols[i] == c] for c in (0, 1)]
        self.chains_y = [[i for i in self.y_order if self.rows[i] == r] for r in (0, 1)]
        self.X = np.zeros(n)
        self.Y = np.zeros(n)
        zero = np.zeros(n)
        if self._project(zero, self.chains_x, zero, self.W, self.mx, self.gx)[1] or \
                self._project(zero, self.chains_y, zero, self.H, self.my, self.gy)[1]:
            raise ValueError(f"render: a {self.W}x{self.H} image is too small to separate these {n} objects")
        if n:
            self._solve()

    # pixel radius and box size of every object at the current positions
    def radius(self, Y: np.ndarray | None = None) -> np.ndarray:
        Y = self.Y if Y is None else Y
        return self.r_world * _PX_PER_UNIT * self.H * _depth_scale(Y, self.H) * self.shrink

    def boxsize(self, Y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        r = self.radius(Y)
        return r * self.kw + 1.0, r * self.kh + 1.0  # one pixel of rasterisation slack

    def _even(self, chains, lo_mid, hi_mid, total, outer, jitter):
        """Initial positions: each chain spread evenly over its half of the image (inner part), jittered."""
        out = np.zeros(self.n)
        for c, chain in enumerate(chains):
            if not chain:
                continue
            lo, hi = (outer * total, total / 2 - lo_mid) if c == 0 else (total / 2 + hi_mid, (1 - outer) * total)
            k = len(chain)
            step = (hi - lo) / k
            for j, i in enumerate(chain):
                out[i] = lo + (j + 0.5 + jitter[i] * 0.3) * step
        return out

    def _project(self, vals, chains, sizes, total, mid_margin, gap) -> tuple[np.ndarray, list[int]]:
        """Make ``vals`` satisfy chain order (gap), side-of-midline and image bounds; report infeasible chains.

        Per chain: L (U) is the smallest (largest) feasible value of each element given the bounds of the
        elements before (after) it; the chain is feasible iff L <= U. With ``z_j = x_j - j * gap`` the
        constraints read "z non-decreasing, z_j in [L_j - j gap, U_j - j gap]" with non-decreasing bounds, so the
        Euclidean projection is the isotonic regression of z clipped to the bounds.
        """
        out = vals.copy()
        bad: list[int] = []
        half = total / 2
        for c, chain in enumerate(chains):
            k = len(chain)
            if not k:
                continue
            idx = np.asarray(chain)
            s = sizes[idx] / 2 + self.edge
            mid = np.maximum(mid_margin, _MID_FRACTION * sizes[idx])  # most of the box on its own side
            if c == 0:
                lo, hi = s, np.minimum(half - mid, total - s)
            else:
                lo, hi = np.maximum(half + mid, s), total - s
            steps = gap * np.arange(k)
            L = np.maximum.accumulate(lo - steps) + steps
            U = np.minimum.accumulate((hi - steps)[::-1])[::-1] + steps
            if np.any(L > U):
                bad.extend(chain)
                continue
            z = np.clip(_isotonic(vals[idx] - steps), L - steps, U - steps)
            out[idx] = z + steps
        return out, bad

    def _project_all(self) -> tuple[list[int], list[int]]:
        """Project Y (sizes depend on Y: iterate to a fixed point), then X; return infeasible chains."""
        for _ in range(4):
            _, hgt = self.boxsize()
            Y, bad_y = self._project(self.Y, self.chains_y, hgt, self.H, self.my, self.gy)
            done = np.allclose(Y, self.Y, atol=1e-3, rtol=0)
            self.Y = Y
            if bad_y or done:
                break
        wid, _ = self.boxsize()
        self.X, bad_x = self._project(self.X, self.chains_x, wid, self.W, self.mx, self.gx)
        return bad_x, bad_y

    def _overlaps(self, pad: float):
        w, h = self.boxsize()
        dx = self.X[None, :] - self.X[:, None]
        dy = self.Y[None, :] - self.Y[:, None]
        ox = (w[:, None] + w[None, :]) / 2 + pad - np.abs(dx)
        oy = (h[:, None] + h[None, :]) / 2 + pad - np.abs(dy)
        ov = (ox > 1e-6) & (oy > 1e-6)
        np.fill_diagonal(ov, False)
        return ov, ox, oy, dx, dy, w, h

    def overlap_ratio(self) -> np.ndarray:
        """Intersection of each pair of boxes over the smaller box's area (no padding)."""
        ov, ox, oy, _, _, w, h = self._overlaps(0.0)
        area = w * h
        inter = np.where(ov, np.clip(ox, 0, None) * np.clip(oy, 0, None), 0.0)
        return inter / np.minimum(area[:, None], area[None, :])

    def _larger(self, pairs: np.ndarray) -> np.ndarray:
        """Indices of the larger box (by area) of every pair marked in the symmetric matrix ``pairs``."""
        w, h = self.boxsize()
        area = w * h
        a, b = np.nonzero(np.triu(pairs, 1))
        return np.unique(np.where(area[a] >= area[b], a, b))

    def _solve(self) -> None:
        n, W, H = self.n, self.W, self.H
        # crowding: shrink objects of crowded regions so that their boxes cover <= ~30 % of the quadrant
        jit = self.rng.uniform(-1, 1, (2, n))
        self.Y = self._even(self.chains_y, self.my, self.my, H, 0.12, jit[1])
        self.X = self._even(self.chains_x, self.mx, self.mx, W, 0.09, jit[0])
        for reg in range(4):
            idx = [i for i in range(n) if self.cols[i] + 2 * self.rows[i] == reg]
            if not idx:
                continue
            w, h = self.boxsize()
            f = min(1.0, math.sqrt(0.30 * W * H / 4 / float(np.sum(w[idx] * h[idx]))))
            if f < 1.0:  # crowded: pull sizes towards the region's mean (no tiny leftovers), then scale down
                t = min(1.0, (1.0 - f) / 0.5)
                rw = self.r_world[idx]
                self.r_world[idx] = rw ** (1 - t) * np.exp(np.log(rw).mean()) ** t
                w, h = self.boxsize()
                f = min(1.0, math.sqrt(0.30 * W * H / 4 / float(np.sum(w[idx] * h[idx]))))
                self.shrink[idx] *= f
        # relaxation: push overlapping boxes apart (along the axis of smaller penetration, in the direction their
        # order already has), then project back onto the order/region/image constraints; shrink persistent
        # offenders now and then
        flip = np.zeros((n, n), dtype=bool)
        prev = None
        for it in range(240):
            bad_x, bad_y = self._project_all()
            if bad_x or bad_y:
                self.shrink[sorted(set(bad_x) | set(bad_y))] *= 0.85
                continue
            ov, ox, oy, dx, dy, _, _ = self._overlaps(self.pad)
            if not ov.any():
                return
            if it >= 120 and it % 10 == 0 and not (self.overlap_ratio() > 0).any():
                return  # boxes touch but do not intersect: good enough (neighbours are kept apart if possible)
            if it % 30 == 29:  # persistent overlaps: shrink the larger object of each offending pair
                ratio = self.overlap_ratio()
                pairs = ratio > 0 if (ratio > 0).any() else ov
                self.shrink[self._larger(pairs)] *= 0.92 if (ratio > 0).any() else 0.97
            if prev is not None:  # pairs whose overlap did not shrink try the other axis
                stuck = ov & prev[0] & (np.minimum(ox, oy) >= 0.95 * prev[1])
                flip ^= stuck
            prev = (ov, np.minimum(ox, oy))
            use_x = (ox <= oy) ^ flip
            px = np.where(ov & use_x, ox, 0.0) * np.sign(dx)
            py = np.where(ov & ~use_x, oy, 0.0) * np.sign(dy)
            self.X = self.X - 0.5 * px.sum(axis=1)
            self.Y = self.Y - 0.5 * py.sum(axis=1)
        # gave up on zero overlap: shrink until the bound holds (terminates: boxes shrink towards points)
        for _ in range(200):
            bad_x, bad_y = self._project_all()
            worst = self._larger(self.overlap_ratio() > 0.5 * MAX_BOX_OVERLAP)
            bad = sorted(set(bad_x) | set(bad_y) | set(worst.tolist()))
            if not bad:
                return
            self.shrink[bad] *= 0.9
        raise RuntimeError("render: could not lay out the scene")  # pragma: no cover


def _isotonic(y: np.ndarray) -> np.ndarray:
    """Least-squares non-decreasing fit of ``y`` (pool adjacent violators)."""
    vals: list[float] = []
    wts: list[int] = []
    for v in y.tolist():
        vals.append(v)
        wts.append(1)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            w = wts[-2] + wts[-1]
            vals[-2] = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / w
            wts[-2] = w
            vals.pop()
            wts.pop()
    return np.repeat(np.array(vals), wts)


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
