"""Variations: what real text-to-image pictures show beyond a render profile's look (pure draws, no ``bpy``).

A profile that draws the camera (``t2i``, ``t2i_wide``, ``t2i_world``, ``t2i_real``) takes variations by name
(``logicval render-clevr --variations glossy_floor,stacked=0.5``); ``t2i_real`` draws every one at its rate
unless told otherwise. Each is drawn per image on a stream of its own: whether the image gets it (its rate) and
its parameters (always drawn, so another rate changes only which images get it). The variations, declared as
data in `VARIATIONS`:

- ``glossy_floor``: a glossy or mirror-like floor (the floor's own colour under a clear reflective layer).
  Reflections are light, never objects: masks come from the object-index pass, which the floor writes as 0.
- ``tinted_light``: coloured lamps: one hue for the whole rig, or two hues (key and fill) mixing on the objects;
  the world and a glowing floor dim and take the key's hue, so the colour cast shows everywhere.
- ``surfaces``: per object another surface of its own material label: a metal object as clear tinted glass or
  glossy (clear-coated) plastic, a rubber object as frosted glass or translucent wax. The label follows what
  the surface shows: a sharp mirror-like reflection is CLEVR's "shiny" (metal), a soft matte one its "matte"
  (rubber).
- ``stacked``: one or two objects resting on a cube: the cube's top carries a small object (its ``3d_coords``
  stand on the cube; ``resting_on`` names the cube).
- ``cut_by_frame``: the frame moved (a lens shift) so that its edge, or two edges at a corner, cut objects. An
  object counts when at least `CUT_MIN_VISIBLE` of its silhouette lies inside the frame; its truth is the
  visible part (box and mask inside the frame, ``pixel_coords`` on it). Less is listed as ``uncounted``.
- ``bevelled_cubes``: every cube strongly rounded (bevel 0.25-0.6 of its half side).
- ``pips_decals``: cubes marked like dice (pips of 1-6 on the faces) or with a printed decal (star, circle, ring,
  stripe, triangle, cross or square) in another colour; the cube keeps its body's colour.
- ``distractors``: one to three things outside CLEVR's vocabulary beside the objects: cones, toruses, pyramids,
  monkey heads in any colour, or cubes, spheres and cylinders in black or white. They are not objects of the
  truth (no colour or shape of the domain describes them); each scene lists them as ``uncounted`` with their
  mask ids, so a parser learns to see past them.
- ``small_soft``: the image as a small model output upscaled: down to a longer side of 128-200 px, slightly
  blurred there (0.2-0.7 px), JPEG-compressed in half the images, then upscaled back to the frame; masks and
  truth stay.
"""

from __future__ import annotations

import io
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from logicval_hf.common.registry import Registry
from logicval_hf.generation.clevr_worlds import hsv_rgb

__all__ = ["CUT_MIN_VISIBLE", "DECAL_SHAPES", "OOV_SHAPES", "VARIATIONS", "Variation",
           "draw_variations", "dress_objects", "parse_variations", "place_distractors", "soften", "stack_objects",
           "tint_lights"]

#: the variations' streams sit beside the plan's and the world's: spawn key (4, crc32 of the variation's name)
_STREAM = 4
#: an object cut by the frame counts when at least this share of its silhouette (its visible pixels in a frame
#: large enough to hold it whole) lies inside the frame
CUT_MIN_VISIBLE = 0.4
OOV_SHAPES = ("cone", "torus", "pyramid", "monkey")
DECAL_SHAPES = ("star", "circle", "ring", "stripe", "triangle", "cross", "square")
#: half side of the flat part of a face of CLEVR's cube mesh (SmoothCube_v2), in units of its half side
CLEVR_CUBE_FLAT = 0.8
STACK_OFFSET = 0.3  # a resting object's centre lies within this share of the cube's half side of its top's centre


def _r(v: float, nd: int = 4) -> float:
    return round(float(v), nd)


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return math.exp(float(rng.uniform(math.log(lo), math.log(hi))))


# ---- the draws: each reads a fixed count of numbers, so its stream stays aligned ---------------------------------
def _glossy_floor(rng: np.random.Generator, n: int) -> dict[str, Any]:
    mirror = bool(rng.random() < 0.4)
    u = rng.random(2)
    return {"finish": "mirror" if mirror else "glossy",
            "roughness": _r(0.03 * u[0] if mirror else math.exp(math.log(0.04) + u[0] * math.log(0.25 / 0.04))),
            "weight": _r(0.45 + 0.4 * u[1] if mirror else 0.15 + 0.4 * u[1])}


def _tinted_light(rng: np.random.Generator, n: int) -> dict[str, Any]:
    two = bool(rng.random() < 0.5)
    hue, sat = float(rng.random()), float(rng.uniform(0.55, 0.95))
    other, other_sat = hue + float(rng.uniform(0.25, 0.75)), float(rng.uniform(0.4, 0.9))
    near = hue + float(rng.uniform(-0.04, 0.04))
    return {"mode": "two" if two else "one", "key_rgb": hsv_rgb(hue, sat, 1.0),
            "fill_rgb": hsv_rgb(other, other_sat, 1.0) if two else hsv_rgb(near, 0.8 * sat, 1.0),
            "energy_boost": _r(rng.uniform(1.2, 2.0)), "world_scale": _r(rng.uniform(0.15, 0.5)),
            "world_tint": _r(rng.uniform(0.4, 0.8))}


def _surfaces(rng: np.random.Generator, n: int) -> dict[str, Any]:
    share = float(rng.uniform(0.4, 1.0))
    slots: list[dict[str, Any] | None] = []
    for _ in range(n):
        u = rng.random(7)
        metal = ({"kind": "glass", "roughness": _r(0.06 * u[2]), "ior": _r(1.4 + 0.2 * u[3])} if u[1] < 0.5 else
                 {"kind": "plastic", "roughness": _r(0.25 + 0.25 * u[2]), "coat_roughness": _r(0.08 * u[3])})
        rubber = ({"kind": "frosted", "roughness": _r(0.3 + 0.3 * u[5]), "ior": _r(1.4 + 0.2 * u[6])} if u[4] < 0.5
                  else {"kind": "wax", "roughness": _r(0.35 + 0.35 * u[5]), "subsurface_scale": _r(0.05 + 0.25 * u[6])})
        slots.append({"metal": metal, "rubber": rubber} if u[0] < share else None)
    return {"share": _r(share), "objects": slots}


def _stacked(rng: np.random.Generator, n: int) -> dict[str, Any]:
    pairs = 2 if rng.random() < 0.3 else 1
    return {"pairs": pairs, "offsets": [[_r(a), _r(b)] for a, b in rng.uniform(-1.0, 1.0, (2, 2))]}


def _cut_by_frame(rng: np.random.Generator, n: int) -> dict[str, Any]:
    first = ("left", "right", "top", "bottom")[int(rng.integers(4))]
    corner = bool(rng.random() < 0.3)
    second = (("top", "bottom") if first in ("left", "right") else ("left", "right"))[int(rng.integers(2))]
    keep = [_r(v) for v in rng.uniform(0.1, 0.9, 2)]
    edges = [first, second] if corner else [first]
    return {"edges": edges, "keep": keep[:len(edges)], "min_visible": CUT_MIN_VISIBLE}


def _bevelled_cubes(rng: np.random.Generator, n: int) -> dict[str, Any]:
    return {"bevels": [_r(v) for v in rng.uniform(0.25, 0.6, n)]}


def _mark_colour(u: float, v: Sequence[float] | np.ndarray) -> list[float]:
    """Dark, light, or a saturated hue (a mark must stand out on most bodies)."""
    if u < 0.4:
        return [_r(0.015 + 0.02 * v[0])] * 3
    if u < 0.8:
        return [_r(0.8 + 0.15 * v[0])] * 3
    return hsv_rgb(v[1], 0.5 + 0.5 * v[2], 0.6 + 0.4 * v[0])


def _pips_decals(rng: np.random.Generator, n: int) -> dict[str, Any]:
    slots: list[dict[str, Any] | None] = []
    for _ in range(n):
        u = rng.random(8)
        # die faces in the order +x, -x, +y, -y, +z, -z: opposite faces sum to seven
        pairs = [(1, 6), (2, 5), (3, 4)]
        order = rng.permutation(3)
        flips = rng.random(3) < 0.5
        faces: list[int] = []
        for k, f in zip(order, flips, strict=True):
            a, b = pairs[int(k)]
            faces += [b, a] if f else [a, b]
        on_faces = [bool(v) for v in rng.random(6) < 0.7]
        colour = _mark_colour(u[2], u[3:6])
        if u[1] < 0.5:
            mark: dict[str, Any] = {"kind": "pips", "faces": faces, "radius": _r(0.1 + 0.06 * u[6]), "rgb": colour}
        else:
            mark = {"kind": "decal", "shape": DECAL_SHAPES[int(u[7] * len(DECAL_SHAPES))],
                    "size": _r(0.35 + 0.45 * u[6]), "spin_deg": _r(360.0 * u[5], 3), "rgb": colour,
                    "faces": on_faces if any(on_faces) else [True] * 6}
        slots.append(mark if u[0] < 0.85 else None)
    return {"objects": slots}


def _distractors(rng: np.random.Generator, n: int) -> dict[str, Any]:
    count = int(rng.integers(1, 4))
    items = []
    for _ in range(3):
        u = rng.random(8)
        if u[0] < 0.35:  # a CLEVR shape in a colour outside CLEVR's eight
            shape = ("cube", "sphere", "cylinder")[int(u[1] * 3)]
            colour = "black" if u[2] < 0.5 else "white"
            rgb = [_r(0.012 + 0.02 * u[3])] * 3 if colour == "black" else [_r(0.78 + 0.15 * u[3])] * 3
        else:
            shape = OOV_SHAPES[int(u[1] * len(OOV_SHAPES))]
            colour = "other"
            rgb = hsv_rgb(u[2], 0.25 + 0.65 * u[3], 0.3 + 0.6 * u[4])
        # a black or white metal would mirror its world like CLEVR's gray metal: only the other shapes are metal
        metal = u[5] < 0.4 and colour == "other"
        items.append({"shape": shape, "color": colour, "rgb": rgb, "material": "metal" if metal else "rubber",
                      "r": _r(0.3 + 0.45 * u[6]), "rotation": _r(360.0 * u[7], 3)})
    return {"count": count, "items": items[:count],
            "candidates": [[_r(a), _r(b)] for a, b in rng.uniform(-1.0, 1.0, (32, 2))]}


def _small_soft(rng: np.random.Generator, n: int) -> dict[str, Any]:
    u = rng.random(5)
    return {"long_side": 128 + int(u[0] * 73), "blur": _r(0.2 + 0.5 * u[1]),
            "upscale": ("bicubic", "bilinear", "lanczos")[int(u[2] * 3)],
            "jpeg": 55 + int(u[4] * 36) if u[3] < 0.5 else None}


@dataclass(frozen=True)
class Variation:
    """One variation: its name, what it adds, its rate per image (where named without one, and in profile
    ``t2i_real``) and its parameters' draw ``draw(rng, n_objects)``."""

    name: str
    description: str
    rate: float
    draw: Callable[[np.random.Generator, int], dict[str, Any]]


VARIATIONS: Registry[Variation] = Registry("variation", {v.name: v for v in (
    Variation("glossy_floor", "a glossy or mirror-like floor (reflections are never objects)", 0.3, _glossy_floor),
    Variation("tinted_light", "coloured lamps: one hue, or two hues mixing", 0.3, _tinted_light),
    Variation("surfaces", "glass or glossy plastic for metal, frosted glass or wax for rubber", 0.3, _surfaces),
    Variation("stacked", "a small object resting on a cube (one or two pairs)", 0.25, _stacked),
    Variation("cut_by_frame", f"objects cut by the frame's edge (counted when a share >= {CUT_MIN_VISIBLE:g} of "
                              "the silhouette is inside)", 0.25, _cut_by_frame),
    Variation("bevelled_cubes", "strongly rounded cubes", 0.25, _bevelled_cubes),
    Variation("pips_decals", "dice pips or a printed decal on cubes", 0.25, _pips_decals),
    Variation("distractors", "cones, toruses, pyramids, black or white objects: not objects of the truth", 0.25,
              _distractors),
    Variation("small_soft", "a small, soft image (128-200 px) upscaled to the frame", 0.2, _small_soft),
)})


def parse_variations(text: str | Sequence[str] | None) -> tuple[tuple[str, float], ...] | None:
    """``--variations a,b=0.5`` as ``((name, rate), ...)`` in `VARIATIONS`' (sorted) order: a name alone takes
    its own rate; ``all`` is every variation at its rate, ``none`` none.

    Raises:
        ValueError: an empty list, an unknown name, a rate that is not a number in [0, 1], a name given twice.
    """
    if text is None:
        return None
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text)]
    items = [t for t in items if t]
    if not items:
        raise ValueError(f"--variations names none (known: {', '.join(VARIATIONS.names())}, all, none)")
    if items in (["none"], ["all"]):
        return () if items == ["none"] else tuple((k, VARIATIONS.get(k).rate) for k in VARIATIONS.names())
    rates: dict[str, float] = {}
    for item in items:
        name, eq, value = item.partition("=")
        name = name.strip()
        if name not in VARIATIONS:
            raise ValueError(f"--variations: {VARIATIONS.unknown(name)}")
        if name in rates:
            raise ValueError(f"--variations names {name!r} twice")
        try:
            rate = float(value) if eq else VARIATIONS.get(name).rate
        except ValueError:
            raise ValueError(f"--variations {item!r}: the rate must be a number in [0, 1]") from None
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"--variations {item!r}: the rate must lie in [0, 1]")
        rates[name] = rate
    return tuple((k, rates[k]) for k in VARIATIONS.names() if k in rates)


def draw_variations(seed: int, index: int, rates: Sequence[tuple[str, float]], n: int
                    ) -> dict[str, dict[str, Any] | None]:
    """Image ``index``'s variations: per ``(name, rate)`` its parameters, or None where the image does not get
    it. ``n``: the image's object count (per-object draws)."""
    out: dict[str, dict[str, Any] | None] = {}
    for name, rate in rates:
        v = VARIATIONS.get(name)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(index)],
                                                           spawn_key=(_STREAM, zlib.crc32(name.encode()))))
        on = bool(rng.random() < float(rate))
        params = v.draw(rng, int(n))
        out[name] = params if on else None
    return out


def tint_lights(lights: Mapping[str, Any], tint: Mapping[str, Any] | None) -> dict[str, Any]:
    """A t2i plan's lights under the ``tinted_light`` variation (as they are without it)."""
    if tint is None:
        return dict(lights)
    return {**lights, "key_rgb": list(tint["key_rgb"]), "fill_rgb": list(tint["fill_rgb"]),
            "energy_scale": _r(float(lights["energy_scale"]) * float(tint["energy_boost"]))}


# ---- what the variations do to placed objects -------------------------------------------------------------------
def stack_objects(objs: list[dict[str, Any]], stacked: Mapping[str, Any] | None, cube_object: str) -> None:
    """Choose the ``stacked`` pairs among sampled objects, in place, before their sizes are set: per pair a base
    (the first large object not yet used, else the first unused) becomes a cube (asset ``cube_object``) and the
    next unused object after it becomes small and rests on it (``resting_on``: the base's index). Every object
    gets ``resting_on`` (None on the floor). Idempotent: objects already chosen stay as they are."""
    if stacked is None or any("resting_on" in o for o in objs):
        return
    for o in objs:
        o["resting_on"] = None
    used: set[int] = set()
    n = len(objs)
    for _ in range(int(stacked["pairs"])):
        free = [i for i in range(n) if i not in used]
        if len(free) < 2:
            break
        base = next((i for i in free if objs[i]["size"] == "large"), free[0])
        top = next(i for i in [*range(base + 1, n), *range(base)] if i in free and i != base)
        objs[base].update(shape="cube", object=cube_object)
        objs[top]["size"] = "small"
        objs[top]["resting_on"] = base
        used.update((base, top))


def dress_objects(objs: list[dict[str, Any]], variations: Mapping[str, Any]) -> None:
    """What the variations put on placed objects whose radius, stretch and mesh are set, in place (idempotent):
    a resting object's position on its cube (``x``, ``y``, and ``z0``, the height it stands on), the surfaces of
    their own material, strongly bevelled cubes, and the marks on cubes (``flat``: the half side of a face's flat
    part they must fit in)."""
    stacked = variations.get("stacked")
    for i, o in enumerate(objs):
        base = o.get("resting_on")
        if stacked is not None and base is not None:
            b = objs[base]
            k = sum(1 for p in objs[:i] if p.get("resting_on") is not None)
            ox, oy = stacked["offsets"][min(k, len(stacked["offsets"]) - 1)]
            reach = STACK_OFFSET * float(b["r"]) * min(float(s) for s in b.get("stretch", (1.0, 1.0, 1.0))[:2])
            o["x"], o["y"] = float(b["x"]) + reach * float(ox), float(b["y"]) + reach * float(oy)
            o["z0"] = 2.0 * float(b["r"]) * float(b.get("stretch", (1.0, 1.0, 1.0))[2])
        surfaces = variations.get("surfaces")
        if "surfaces" in variations:
            slot = surfaces["objects"][i] if surfaces is not None else None
            o["surface"] = None if slot is None else dict(slot[o["material"]])
        bevelled = variations.get("bevelled_cubes")
        if bevelled is not None and o["shape"] == "cube":
            o["variant"] = {"shape": "cube", "bevel": bevelled["bevels"][i]}
        if "pips_decals" in variations:
            marks = variations["pips_decals"]
            slot = marks["objects"][i] if marks is not None and o["shape"] == "cube" else None
            flat = 1.0 - float(o["variant"]["bevel"]) if o.get("variant") else CLEVR_CUBE_FLAT
            o["marks"] = None if slot is None else {**slot, "flat": _r(flat)}


def place_distractors(objs: Sequence[Mapping[str, Any]], distractors: Mapping[str, Any] | None, spread: float,
                      min_dist: float = 0.1) -> list[dict[str, Any]]:
    """Where the drawn distractors stand: each at the first of its candidate points (scaled to the placement
    square, ``spread`` plus a margin) that keeps ``min_dist`` between edges from every object and every earlier
    distractor; one that finds none is left out."""
    if distractors is None:
        return []
    placed: list[dict[str, Any]] = []
    half = float(spread) + 0.5
    points = iter(distractors["candidates"])
    for item in distractors["items"]:
        r = float(item["r"])
        for u, v in points:
            x, y = half * float(u), half * float(v)
            if all(math.hypot(x - float(o["x"]), y - float(o["y"])) - r - float(o["r"]) >= min_dist
                   for o in [*objs, *placed]):
                placed.append({**item, "x": _r(x), "y": _r(y), "stretch": (1.0, 1.0, 1.0)})
                break
    return placed


def soften(rgb: np.ndarray, small_soft: Mapping[str, Any] | None) -> np.ndarray:
    """The ``small_soft`` post-process of an RGB uint8 image: down to ``long_side`` (area filter), a Gaussian
    blur of ``blur`` px, optionally JPEG at quality ``jpeg``, then upscaled back to the same size. An image no
    larger than ``long_side`` is only blurred (and compressed)."""
    from PIL import Image, ImageFilter

    if small_soft is None:
        return rgb
    im = Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8))
    w, h = im.size
    scale = min(1.0, int(small_soft["long_side"]) / max(w, h))
    small = im.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.BOX) if scale < 1 else im
    small = small.filter(ImageFilter.GaussianBlur(float(small_soft["blur"])))
    if small_soft.get("jpeg"):
        buf = io.BytesIO()
        small.save(buf, format="JPEG", quality=int(small_soft["jpeg"]))
        buf.seek(0)
        with Image.open(buf) as j:
            small = j.convert("RGB")
    method = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR,
              "lanczos": Image.Resampling.LANCZOS}[small_soft["upscale"]]
    return np.asarray(small.resize((w, h), method) if small.size != (w, h) else small, dtype=np.uint8)
