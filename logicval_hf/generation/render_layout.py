"""Where the numpy renderer puts each object: box centres that realise the input's orders and regions.

Layout contract (docs/regions.md §6)
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
"""

from __future__ import annotations

import math

import numpy as np

from logicval_hf.contract.scene import Scene

__all__ = ["MAX_BOX_OVERLAP", "COS_E", "SIN_E", "VIEW", "Layout", "silhouette_extent"]

# A centre keeps at least this fraction of its box size from the midlines (so >= 75 % of the box's extent lies
# on its own side of each midline and the region is visible, not only computable).
_MID_FRACTION = 0.25
# Largest allowed intersection of two returned boxes, as a fraction of the smaller box's area.
MAX_BOX_OVERLAP = 0.10

# ---- camera and lights --------------------------------------------------------------------------------------
# World: X right, Y away from the camera, Z up. Orthographic per object; the camera looks down at _ELEV.
_ELEV = math.radians(28.0)
SIN_E, COS_E = math.sin(_ELEV), math.cos(_ELEV)
VIEW = np.array([0.0, COS_E, -SIN_E])  # viewing direction (into the scene)



# World sizes (CLEVR units): radius of large / small objects; pixels per unit at the front of the image.
_R_LARGE, _R_SMALL = 0.7, 0.35
_PX_PER_UNIT = 0.20  # times image height, at the bottom edge


def _depth_scale(cy: np.ndarray | float, height: float) -> np.ndarray | float:
    """Perspective proxy: objects at the top of the image (far) are ~0.55x the size of those at the bottom."""
    t = np.clip(np.asarray(cy, dtype=np.float64) / height, 0.0, 1.0)
    return 0.55 + 0.45 * t


# ---- orders and regions of the input ---------------------------------------------------------------------
def _orders(scene: Scene) -> tuple[list[int], list[int], list[int], list[int]]:
    """x-order and y-order (ties broken by index), and each object's column and row (docs/regions.md §6)."""
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
        return 2 * r, 2 * r * COS_E + 2 * r * SIN_E
    a = math.sqrt(2.0) * r  # cube side
    d = a / 2 * (np.abs(np.cos(phi)) + np.abs(np.sin(phi)))
    return 2 * d, 2 * d * SIN_E + a * COS_E


def silhouette_extent(shape: str, r: float, phi: float) -> tuple[float, float, float, float]:
    """Silhouette extent (xmin, xmax, ymin, ymax) relative to the projected footprint centre, y down."""
    if shape == "sphere":
        return -r, r, -r * COS_E - r, -r * COS_E + r
    if shape == "cylinder":
        return -r, r, -2 * r * COS_E - r * SIN_E, r * SIN_E
    a = math.sqrt(2.0) * r
    d = a / 2 * (abs(math.cos(phi)) + abs(math.sin(phi)))
    return -d, d, -(d * SIN_E + a * COS_E), d * SIN_E


# ---- layout -----------------------------------------------------------------------------------------------
class Layout:
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
