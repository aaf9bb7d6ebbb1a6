"""The oracle renderer in the CLEVR look: a LogicVal `Scene` (e.g. a solver witness) rendered in 3D with Blender so
that every object's region and the pairwise left/right/front/behind orders of box centres survive the projection.

Objects are placed on the ground by casting the camera ray of a target box centre onto the plane of the object's
centre, checked on the rendered instance masks and corrected, retried, or refused with `BlenderLayoutError`.
Needs ``bpy`` (see `blender_session`).
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from logicval_hf.generation.blender_session import Session, require_bpy
from logicval_hf.generation.clevr_assets import ClevrAssets, load_assets
from logicval_hf.generation.clevr_sampling import CUBE_REACH, LAMP_JITTER, LAMPS, mask_stats

__all__ = ["BlenderLayoutError", "BlenderSceneRenderer", "render_scene_graph"]


class BlenderLayoutError(RuntimeError):
    """The oracle renderer could not realise a scene graph's regions and orders in 3D."""


def _orders(centres: Sequence[tuple[float, float]]) -> tuple[list[int], list[int]]:
    n = len(centres)
    return (sorted(range(n), key=lambda i: (centres[i][0], i)), sorted(range(n), key=lambda i: (centres[i][1], i)))


class BlenderSceneRenderer:
    """Render LogicVal scene graphs (colour/shape/material + boxes) in the CLEVR look with Blender.

    ``render(scene)`` returns ``(rgb uint8 array HxWx3, Scene)``: the returned scene has the input's objects in
    order with boxes ``[x0, y0, x1 + 1, y1 + 1]`` from their rendered instance masks, and every object's region
    and the (index tie-broken) left/right/front/behind orders of box centres equal the input's. Sizes are drawn
    per object as CLEVR does (all ``small`` for more than 6 objects, or when no layout is found), unless an
    object carries a ``size``; rotations, lamp jitter and layout candidates come from ``seed`` and the scene.

    Method: the solver's box centres fix a region and a rank on each axis per object. Candidate target centres
    that keep the ranks (random order statistics inside each half, off the midlines and borders) are cast
    onto the plane of each object's centre through the camera; the candidate whose ground positions keep the
    objects furthest apart is built, its 1-sample object-index mask rendered, and the box centres of the masks
    compared with the wanted regions and orders; a miss moves each target by its error (up to
    ``corrections`` times), then another candidate is tried (``max_layouts`` per size plan). The final render
    is checked again on its own mask. `BlenderLayoutError` when nothing fits.
    """

    def __init__(self, assets: str | os.PathLike | ClevrAssets, width: int = 480, height: int = 320,
                 samples: int = 32, denoise: bool = True, threads: int = 2, seed: int = 0,
                 max_layouts: int = 12, corrections: int = 3):
        self.assets = load_assets(assets)
        require_bpy()
        if width < 16 or height < 16:
            raise ValueError(f"image size must be at least 16x16, got {width}x{height}")
        self.width, self.height = int(width), int(height)
        self.samples, self.denoise, self.threads, self.seed = int(samples), bool(denoise), int(threads), int(seed)
        self.max_layouts, self.corrections = int(max_layouts), int(corrections)

    def close(self) -> None:
        """Nothing to release in-process (the out-of-process renderer has the same interface)."""

    def __enter__(self) -> BlenderSceneRenderer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _check_vocabulary(self, scene) -> None:
        p = self.assets.properties
        for i, o in enumerate(scene.objects):
            for attr, table in (("color", "colors"), ("shape", "shapes"), ("material", "materials")):
                v = o.attributes.get(attr)
                if v not in p[table]:
                    raise ValueError(f"blender render: object {i} has {attr} {v!r}; the assets know {list(p[table])}")
            size = o.attributes.get("size")
            if size is not None and size not in p["sizes"]:
                raise ValueError(f"blender render: object {i} has size {size!r}; the assets know {list(p['sizes'])}")

    def render(self, scene) -> tuple[np.ndarray, Any]:
        from logicval_hf.contract.scene import Scene, SceneObject
        from logicval_hf.contract.spatial import region_of

        self._check_vocabulary(scene)
        W, H = self.width, self.height
        n = len(scene.objects)
        regions = scene.regions()
        cols = {i: int(regions[i][1:]) % 2 for i in range(n)}
        rows = {i: int(regions[i][1:]) // 2 for i in range(n)}
        x_order, y_order = _orders([o.center for o in scene.objects])
        # free choices (rotations, sizes, lamp jitter, layout candidates) depend on the seed and the scene only
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, zlib.crc32(scene.to_json().encode())]))
        rotations = [360.0 * float(rng.random()) for _ in range(n)]
        lamp = {name: rng.uniform(-LAMP_JITTER, LAMP_JITTER, 3) for name in LAMPS}
        sizes = dict(self.assets.sizes)
        fixed = [o.attributes.get("size") for o in scene.objects]
        names = [k for k, _ in self.assets.sizes]
        small = min(self.assets.sizes, key=lambda kv: kv[1])[0]
        # CLEVR's sizes drawn per object (up to 6 objects), then all small
        size_plans = [[names[int(j)] for j in rng.integers(len(names), size=n)]] if n <= 6 else []
        size_plans.append([small] * n)
        sess = Session(self.assets, W, H, self.threads)
        try:
            for name, d in lamp.items():
                sess.move(name, d)
            sess.update()
            if n == 0:
                return self._final(sess)[0], Scene((W, H), (), scene.domain)
            shapes, groups = dict(self.assets.shapes), dict(self.assets.materials)

            def want(centres: Sequence[tuple[float, float]]) -> bool:
                if any(region_of(cx, cy, W, H) != regions[i] for i, (cx, cy) in enumerate(centres)):
                    return False
                for order, k in ((x_order, 0), (y_order, 1)):  # strict: a tie would drop a relation
                    if any(not centres[a][k] < centres[b][k] for a, b in itertools.pairwise(order)):
                        return False
                return True

            proj = _GroundProjector(sess)
            tries = 0
            for plan in size_plans:
                size_names = [fixed[i] or plan[i] for i in range(n)]
                radii = np.array([sizes[s] for s in size_names])
                reach = np.array([r * (CUBE_REACH if o.attributes["shape"] == "cube" else 1.0)
                                  for r, o in zip(radii, scene.objects, strict=True)])
                for layout in range(self.max_layouts):
                    tries += 1
                    # first layouts keep away from the borders; later ones use more of the image
                    wide = layout >= self.max_layouts // 2
                    targets = self._layout(proj, x_order, y_order, cols, rows, radii, reach, wide, rng)
                    if targets is None:
                        continue
                    objs = None
                    for _fix in range(self.corrections + 1):
                        pts = proj.ground(targets[:, 0], targets[:, 1], radii)
                        if pts is None or _clearance(pts, reach) < 0.0:
                            break
                        specs = [{"object": shapes[o.attributes["shape"]], "r": float(radii[i]),
                                  "x": float(pts[i, 0]), "y": float(pts[i, 1]), "rotation": rotations[i],
                                  "group": groups[o.attributes["material"]], "color": o.attributes["color"]}
                                 for i, o in enumerate(scene.objects)]
                        sess.build(specs)
                        mask = sess.index_mask(self.seed)
                        centres = _mask_centres(mask, n)
                        if centres is None:
                            break
                        if want(centres) and (wide or _inside(mask, n)):
                            objs = specs
                            break
                        # move each projected centre by the error between its box centre and its target
                        targets = targets + 0.9 * (targets - np.asarray(centres))
                    if objs is None:
                        continue
                    rgb, mask = self._final(sess)
                    centres = _mask_centres(mask, n)
                    if centres is None or not want(centres):
                        continue
                    stats = mask_stats(mask, n)
                    out = tuple(SceneObject(dict(o.attributes), (float(s["bbox_xyxy"][0]), float(s["bbox_xyxy"][1]),
                                                                 float(s["bbox_xyxy"][2] + 1),
                                                                 float(s["bbox_xyxy"][3] + 1)))
                                for o, s in zip(scene.objects, stats, strict=True))
                    return rgb, Scene((W, H), out, scene.domain)
        finally:
            sess.close()
        raise BlenderLayoutError(
            f"blender render: could not place {n} objects so that their regions and left/right/front/behind "
            f"orders survive the projection ({tries} layouts tried)")

    def _final(self, sess: Session) -> tuple[np.ndarray, np.ndarray]:
        """The full render: RGB array and instance mask."""
        from PIL import Image

        fd, tmp = tempfile.mkstemp(suffix=".png")
        os.close(fd)
        try:
            mask = sess.render(tmp, self.samples, self.denoise, self.seed)
            with Image.open(tmp) as im:
                return np.array(im.convert("RGB"), dtype=np.uint8), mask
        finally:
            os.unlink(tmp)

    def _layout(self, proj: _GroundProjector, x_order, y_order, cols, rows, radii: np.ndarray,
                reach: np.ndarray, wide: bool, rng: np.random.Generator, k: int = 2000) -> np.ndarray | None:
        """Target box centres (n, 2) realising the regions and orders whose ground positions keep the objects
        furthest apart (of ``k`` random order-preserving candidates); None if none keeps them apart."""
        W, H, n = self.width, self.height, len(radii)
        xr = ((0.04, 0.50), (0.50, 0.96)) if wide else ((0.08, 0.49), (0.51, 0.92))
        yr = ((0.24, 0.50), (0.50, 0.96)) if wide else ((0.30, 0.49), (0.51, 0.88))
        gap_x, gap_y = max(2.0, 0.012 * W), max(2.0, 0.012 * H)
        cand = np.zeros((k, n, 2))
        ok = np.ones(k, dtype=bool)
        for axis, order, half_of, ranges, extent, gap in ((0, x_order, cols, xr, W, gap_x),
                                                          (1, y_order, rows, yr, H, gap_y)):
            for half in (0, 1):
                members = [i for i in order if half_of[i] == half]
                m = len(members)
                if not m:
                    continue
                a, b = ranges[half][0] * extent + gap / 2, ranges[half][1] * extent - gap / 2
                vals = np.sort(rng.uniform(a, b, (k, m)), axis=1)
                vals[0] = a + (np.arange(m) + 0.5) * (b - a) / m  # the even spread is one candidate
                if m > 1:
                    ok &= np.all(np.diff(vals, axis=1) >= gap, axis=1)
                cand[:, members, axis] = vals
        pts = proj.ground(cand[..., 0], cand[..., 1], radii[None, :])
        if pts is None:
            return None
        d = (np.linalg.norm(pts[:, :, None, :] - pts[:, None, :, :], axis=-1)
             - reach[None, :, None] - reach[None, None, :])
        d[:, np.arange(n), np.arange(n)] = np.inf
        clear = d.reshape(k, -1).min(axis=1) if n > 1 else np.full(k, np.inf)
        far = np.linalg.norm(pts, axis=-1).max(axis=1) > 12.0
        clear[~ok | far | ~np.isfinite(pts).all(axis=(1, 2))] = -np.inf
        if not wide:  # the objects' estimated image extent keeps off the borders
            extent_px = proj.apparent_radius(pts, radii[None, :], 1.6 * reach[None, :])
            margin = np.minimum.reduce([cand[..., 0] - extent_px, W - cand[..., 0] - extent_px,
                                        cand[..., 1] - extent_px, H - cand[..., 1] - extent_px])
            clear[~(np.nan_to_num(margin, nan=-1.0).min(axis=1) >= 1.0)] = -np.inf
        best = int(np.argmax(np.minimum(clear, 0.6) + 0.01 * rng.random(k)))
        if not clear[best] >= 0.05:
            return None
        return cand[best]


class _GroundProjector:
    """Camera rays through pixels and their intersection with horizontal planes (numpy, vectorised)."""

    def __init__(self, sess: Session):
        sess.update()
        m = np.array(sess.camera.matrix_world, dtype=np.float64)
        self.rot, self.origin = m[:3, :3], m[:3, 3]
        frame = np.array([tuple(c) for c in sess.camera.data.view_frame(scene=sess.scene)], dtype=np.float64)
        self.x0, self.x1 = frame[:, 0].min(), frame[:, 0].max()
        self.y0, self.y1 = frame[:, 1].min(), frame[:, 1].max()
        self.depth = frame[0, 2]
        self.W, self.H = sess.width, sess.height

    def ground(self, px, py, z) -> np.ndarray | None:
        """Ground points (..., 2) where the rays through (px, py) meet the planes at heights z (NaN on a miss)."""
        px, py, z = np.broadcast_arrays(np.asarray(px, float), np.asarray(py, float), np.asarray(z, float))
        u, v = px / self.W, 1.0 - py / self.H
        local = np.stack([self.x0 + u * (self.x1 - self.x0), self.y0 + v * (self.y1 - self.y0),
                          np.full_like(u, self.depth)], axis=-1)
        ray = local @ self.rot.T
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (z - self.origin[2]) / ray[..., 2]
        t = np.where((ray[..., 2] < -1e-9) & (t > 0), t, np.nan)
        p = self.origin[:2] + t[..., None] * ray[..., :2]
        return p

    def apparent_radius(self, pts: np.ndarray, z, size) -> np.ndarray:
        """Approximate image radius in pixels of objects of world radius ``size`` centred at (pts, z)."""
        pts, z, size = np.broadcast_arrays(pts, np.asarray(z, float)[..., None], np.asarray(size, float)[..., None])
        world = np.concatenate([pts, z[..., :1]], axis=-1) - self.origin
        forward = -self.rot[:, 2]
        depth = world @ forward
        focal = self.W * abs(self.depth) / (self.x1 - self.x0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return focal * size[..., 0] / depth


def _clearance(pts: np.ndarray, reach: np.ndarray) -> float:
    """Smallest gap between two objects' horizontal reach (inf for one object, -inf on a missed ray)."""
    if not np.isfinite(pts).all():
        return -math.inf
    n = len(pts)
    if n < 2:
        return math.inf
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1) - reach[:, None] - reach[None]
    d[np.arange(n), np.arange(n)] = np.inf
    return float(d.min())


def _inside(mask: np.ndarray, n: int) -> bool:
    """No object's mask touches the image border."""
    border = np.concatenate([mask[0], mask[-1], mask[:, 0], mask[:, -1]])
    return not np.any((border >= 1) & (border <= n))


def _mask_centres(mask: np.ndarray, n: int) -> list[tuple[float, float]] | None:
    """Box centres (pixel-edge convention) of objects 1..n in an instance mask; None if one is missing."""
    out = []
    for st in mask_stats(mask, n):
        if st["bbox_xyxy"] is None or st["mask_pixels"] < 4:
            return None
        x0, y0, x1, y1 = st["bbox_xyxy"]
        out.append(((x0 + x1 + 1) / 2.0, (y0 + y1 + 1) / 2.0))
    return out


def render_scene_graph(scene, assets: str | os.PathLike | ClevrAssets, width: int = 480, height: int = 320,
                       samples: int = 32, seed: int = 0, denoise: bool = True, threads: int = 2
                       ) -> tuple[np.ndarray, Any]:
    """Render a LogicVal `Scene` in the CLEVR look: ``(rgb uint8 HxWx3, Scene with boxes from the masks)``.

    See `BlenderSceneRenderer`; raises `BlenderLayoutError` if regions and orders cannot be kept.
    """
    return BlenderSceneRenderer(assets, width, height, samples, denoise, threads, seed).render(scene)
