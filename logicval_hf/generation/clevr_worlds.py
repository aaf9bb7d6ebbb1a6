"""World kinds: what the camera and glossy rays see around a CLEVR render's objects (pure draws, no ``bpy``).

A T2I model draws metal shiny because something is there to reflect: a sky, a studio, the room around the
objects. A render profile that names world kinds (``T2ILook.worlds``, profile ``t2i_world``) draws one kind per
image and that kind's parameters; `logicval_hf.generation.blender_world` builds it in Blender. The kinds, declared
as data in `WORLD_KINDS`:

- ``sky_gradient``: a sky of several tones (a day blue, an overcast grey, a sunset, or any tint) blending from a
  pale horizon through a middle tone to the zenith, over a ground tone below the horizon.
- ``procedural_sky``: Blender's physical sky texture (bpy 5: single or multiple scattering, the successors of
  the Nishita model) for a drawn sun elevation and direction, altitude and air, aerosol and ozone densities;
  the sun's disc is off (the lamp rig is the key light), its glow stays.
- ``studio``: a soft studio backdrop: a cyclorama (a sweep rising from the floor into a wall behind the objects,
  seen from the camera) of one colour graded towards a second tone at its top, in a dim world of that colour
  with one to three bright softboxes that metals reflect. The floor keeps its drawn kind and reaches past the
  frame (no horizon edge).
- ``distant_shapes``: a sky gradient with a band of distant land of a second tone at the horizon and walls or
  blocks rising from it at drawn azimuths (simple shapes at infinity, seen by the camera and in reflections).
- ``plain``: the t2i look's own world, with nothing to reflect (the horizon's flat colour, or a dim white
  ambient): metal reflects one flat tone there and may honestly look like rubber; it stays in the data.
- ``room``: the inside of a room behind the objects: one painted wall, two walls meeting in a corner, or a
  cyclorama sweep, beyond the objects' reach from the camera. Walls may hold one or two windows (open, with
  frames and glazing bars) that show a sky outside and let a beam of light in at a drawn angle: a bright patch
  on the floor and, in most rooms with a window, a light shaft (a thin scattering haze in the beam's path). The
  world is the sky for camera and glossy rays (the windows, reflections in metal) and a dim ambient light for
  the rest. Drawn only by profile ``t2i_real``.

Draws are a pure function of ``(seed, image index, kinds allowed)``: the kind is chosen from the allowed kinds'
weights on a stream of its own, and each kind's parameters come from that kind's own stream, so narrowing the
kinds (``--worlds``) changes which kind an image gets and nothing else: an image that gets the same kind gets the
same world, and every other draw of the profile stays as it was.

`sky_in_frame` (``logicval render-clevr --sky-in-frame``, any profile that draws the camera) redraws an image's
camera elevation and focal length, on a stream of their own, so that the horizon, and the world above it, is in
the frame: the camera sees what the metals reflect in every image, as in a T2I model's picture of objects outdoors.
"""

from __future__ import annotations

import colorsys
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from logicval_hf.common.registry import Registry

__all__ = ["ROOM_STYLES", "WORLD_KINDS", "WorldKind", "draw_world", "hsv_rgb", "parse_worlds", "sky_in_frame"]

# the world's stream sits beside the plan's three (CLEVR's two, the t2i look's): spawn key 3 picks the kind,
# (3, crc32 of a kind's name) holds its parameters (a kind added later moves no other kind's draws)
_WORLD_STREAM = 3
_SKY_IN_FRAME_STREAM = zlib.crc32(b"sky_in_frame")
SKY_PALETTES = ("day", "overcast", "sunset", "tinted")
SKY_MODELS = ("MULTIPLE_SCATTERING", "SINGLE_SCATTERING")
#: with `sky_in_frame`, the horizon lies at most this share of the way from the frame's centre up to its top edge
SKY_HORIZON_MAX = 0.75


def _r(v: float, nd: int = 4) -> float:
    return round(float(v), nd)


def hsv_rgb(h: float, s: float, v: float) -> list[float]:
    """HSV (hue wrapped, saturation and value clipped to [0, 1]) as RGB rounded to 4 decimals."""
    return [_r(c) for c in colorsys.hsv_to_rgb(float(h) % 1.0, min(1.0, max(0.0, float(s))),
                                               min(1.0, max(0.0, float(v))))]


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return math.exp(float(rng.uniform(math.log(lo), math.log(hi))))


def _sky_gradient(rng: np.random.Generator) -> dict[str, Any]:
    """Three tones above the horizon (horizon, middle, zenith at drawn heights of the view direction's z) and a
    ground tone below it, at a strength; the palette says which family the tones come from."""
    palette = SKY_PALETTES[int(rng.integers(len(SKY_PALETTES)))]
    u = rng.uniform(0.0, 1.0, 9)  # every palette reads the same nine numbers: the stream stays aligned
    if palette == "day":
        hue = 0.55 + 0.11 * u[0]
        zenith = hsv_rgb(hue, 0.35 + 0.45 * u[1], 0.5 + 0.45 * u[2])
        middle = hsv_rgb(hue + 0.02 * (u[3] - 0.5), 0.2 + 0.3 * u[4], 0.7 + 0.3 * u[5])
        horizon = hsv_rgb(hue, 0.15 * u[6], 0.8 + 0.2 * u[7])
    elif palette == "overcast":
        hue = u[0]
        zenith = hsv_rgb(hue, 0.06 * u[1], 0.5 + 0.35 * u[2])
        middle = hsv_rgb(hue, 0.06 * u[4], 0.6 + 0.35 * u[5])
        horizon = hsv_rgb(hue, 0.06 * u[6], 0.75 + 0.25 * u[7])
    elif palette == "sunset":
        zenith = hsv_rgb(0.6 + 0.15 * u[0], 0.3 + 0.5 * u[1], 0.25 + 0.4 * u[2])
        middle = hsv_rgb(0.88 + 0.17 * u[3], 0.3 + 0.4 * u[4], 0.55 + 0.4 * u[5])
        horizon = hsv_rgb(0.12 * u[6], 0.4 + 0.5 * u[7], 0.8 + 0.2 * u[8])
    else:  # any tint, as the t2i_wide profile's graded environment
        zenith = hsv_rgb(u[0], 0.65 * u[1], 0.45 + 0.55 * u[2])
        middle = hsv_rgb(u[3], 0.4 * u[4], 0.55 + 0.45 * u[5])
        horizon = hsv_rgb(u[6], 0.2 * u[7], 0.6 + 0.4 * u[8])
    middle_z = float(rng.uniform(0.06, 0.35))
    zenith_z = float(rng.uniform(middle_z + 0.15, 0.95))
    return {"palette": palette,
            "stops": [[0.0, horizon], [_r(middle_z), middle], [_r(zenith_z), zenith]],
            "ground_rgb": hsv_rgb(float(rng.random()), float(rng.uniform(0.0, 0.4)), float(rng.uniform(0.15, 0.6))),
            "strength": _r(_log_uniform(rng, 0.3, 1.2))}


def _procedural_sky(rng: np.random.Generator) -> dict[str, Any]:
    """Blender's physical sky; ``strength`` scales it (its mean sky radiance is about 1-4 at strength 1)."""
    return {"model": SKY_MODELS[int(rng.integers(len(SKY_MODELS)))],
            "sun_elevation_deg": _r(rng.uniform(2.0, 65.0), 3), "sun_rotation_deg": _r(rng.uniform(0.0, 360.0), 3),
            "altitude_m": _r(rng.uniform(0.0, 2500.0), 1), "air_density": _r(rng.uniform(0.5, 2.5)),
            "aerosol_density": _r(rng.uniform(0.2, 4.0)), "ozone_density": _r(rng.uniform(0.5, 3.0)),
            "strength": _r(_log_uniform(rng, 0.04, 0.2))}


def _patch(rng: np.random.Generator, width_deg: tuple[float, float], low_deg: tuple[float, float],
           height_deg: tuple[float, float]) -> dict[str, Any]:
    """A patch of the world at infinity: an azimuth (degrees, any), a width in azimuth and an elevation range."""
    low = float(rng.uniform(*low_deg))
    return {"azimuth_deg": _r(rng.uniform(0.0, 360.0), 3), "width_deg": _r(rng.uniform(*width_deg), 3),
            "low_deg": _r(low, 3), "high_deg": _r(low + float(rng.uniform(*height_deg)), 3)}


def _studio(rng: np.random.Generator) -> dict[str, Any]:
    """A cyclorama behind the objects (its gap past the objects, the sweep's radius) of one colour graded to a
    second tone at its top, a dim world of that colour and softboxes (patches far brighter than the world)."""
    neutral = bool(rng.random() < 0.5)
    hue = float(rng.random())
    sat = float(rng.uniform(0.0, 0.08)) if neutral else float(rng.uniform(0.15, 0.7))
    value = float(rng.uniform(0.35, 1.0))
    backdrop = hsv_rgb(hue, sat, value)
    top = hsv_rgb(hue + float(rng.uniform(-0.05, 0.05)), sat * float(rng.uniform(0.6, 1.3)),
               value * float(rng.uniform(0.35, 1.1)))
    boxes = []
    for _ in range(int(rng.integers(1, 4))):
        box = _patch(rng, (12.0, 45.0), (15.0, 55.0), (10.0, 30.0))
        box["strength"] = _r(_log_uniform(rng, 1.5, 8.0))
        boxes.append(box)
    return {"backdrop_rgb": backdrop, "top_rgb": top, "gap": _r(rng.uniform(0.3, 6.0), 3),
            "sweep_radius": _r(rng.uniform(1.0, 4.0), 3), "world_strength": _r(rng.uniform(0.05, 0.35)),
            "softboxes": boxes}


def _distant_shapes(rng: np.random.Generator) -> dict[str, Any]:
    """A sky gradient, a band of land of a second tone at the horizon, and two to seven walls or blocks."""
    sky = _sky_gradient(rng)
    land = {"rgb": hsv_rgb(float(rng.random()), float(rng.uniform(0.05, 0.6)), float(rng.uniform(0.15, 0.7))),
            "high_deg": _r(rng.uniform(1.0, 8.0), 3)}
    shapes = []
    for _ in range(int(rng.integers(2, 8))):
        shape = _patch(rng, (8.0, 70.0), (0.0, 0.0), (3.0, 30.0))
        shape["rgb"] = hsv_rgb(float(rng.random()), float(rng.uniform(0.0, 0.5)), float(rng.uniform(0.1, 0.8)))
        shapes.append(shape)
    return {"sky": sky, "land": land, "shapes": shapes}


def _plain(rng: np.random.Generator) -> dict[str, Any]:
    """Nothing drawn: the t2i look's own flat world (its horizon colour, or a dim white ambient)."""
    return {}


ROOM_STYLES = ("wall", "corner", "cyclorama")


def _paint(rng: np.random.Generator) -> list[float]:
    """A wall's paint: a neutral white, grey or cream, or a muted to moderately saturated colour."""
    neutral = bool(rng.random() < 0.55)
    hue = float(rng.random())
    sat = float(rng.uniform(0.0, 0.08)) if neutral else float(rng.uniform(0.15, 0.55))
    return hsv_rgb(hue, sat, float(rng.uniform(0.55, 0.95)) if neutral else float(rng.uniform(0.4, 0.9)))


def _room(rng: np.random.Generator) -> dict[str, Any]:
    """A room behind the objects (its style, paint, gap past the objects, turn off the camera's axis), windows
    placed in shares of the wall's visible width and height, the light through them, a shaft, the sky outside
    and the dim ambient light inside."""
    style = ROOM_STYLES[min(int(np.searchsorted(np.cumsum([0.35, 0.4, 0.25]), rng.random(), side="right")), 2)]
    wall = _paint(rng)
    shade = float(rng.uniform(0.7, 1.0))
    room: dict[str, Any] = {
        "style": style, "wall_rgb": wall, "second_rgb": [_r(c * shade) for c in wall],
        "top_rgb": [_r(c * float(rng.uniform(0.5, 1.05))) for c in wall], "gap": _r(rng.uniform(0.3, 3.0), 3),
        "turn_deg": _r(rng.uniform(-35.0, 35.0), 3), "sweep_radius": _r(rng.uniform(1.0, 4.0), 3)}
    count = int(np.searchsorted([0.2, 0.7], rng.random(), side="right"))
    frame = [_r(rng.uniform(0.8, 0.95))] * 3 if rng.random() < 0.6 else [_r(rng.uniform(0.03, 0.25))] * 3
    windows = []
    for _ in range(2):
        u = rng.random(7)
        windows.append({"wall": int(u[0] < 0.5), "along": _r(-0.7 + 1.4 * u[1]), "sill": _r(0.06 + 0.3 * u[2]),
                        "height": _r(0.4 + 0.45 * u[3]), "aspect": _r(0.5 + 1.0 * u[4]), "cols": int(u[5] * 3),
                        "rows": int(u[6] * 3), "frame_rgb": frame})
    room["windows"] = windows[:count] if style != "cyclorama" else []
    room["light"] = {"rgb": hsv_rgb(float(rng.uniform(0.07, 0.15)), float(rng.uniform(0.05, 0.45)), 1.0),
                     "strength": _r(_log_uniform(rng, 4.0, 20.0)), "elevation_deg": _r(rng.uniform(20.0, 55.0), 3),
                     "azimuth_deg": _r(rng.uniform(-30.0, 30.0), 3), "spread_deg": _r(rng.uniform(2.0, 8.0), 3)}
    shaft = {"density": _r(_log_uniform(rng, 0.15, 0.6)), "anisotropy": _r(rng.uniform(0.2, 0.6))}
    room["shaft"] = shaft if room["windows"] and rng.random() < 0.65 else None
    room["outside"] = _sky_gradient(rng)
    room["ambient"] = {"rgb": wall, "strength": _r(rng.uniform(0.05, 0.3))}
    return room


@dataclass(frozen=True)
class WorldKind:
    """One kind of world: its name, what it shows and its parameters' draw (a profile's ``T2ILook.worlds``
    weighs the kinds it draws)."""

    name: str
    description: str
    draw: Callable[[np.random.Generator], dict[str, Any]]


WORLD_KINDS: Registry[WorldKind] = Registry("world kind", {
    "sky_gradient": WorldKind("sky_gradient", "a sky of several tones (day, overcast, sunset or any tint) over a "
                                              "ground tone", _sky_gradient),
    "procedural_sky": WorldKind("procedural_sky", "Blender's physical sky for a drawn sun, altitude and air",
                                _procedural_sky),
    "studio": WorldKind("studio", "a cyclorama of one colour with a gradient, in a dim world with softboxes",
                        _studio),
    "distant_shapes": WorldKind("distant_shapes", "a sky gradient with distant land of a second tone and walls",
                                _distant_shapes),
    "plain": WorldKind("plain", "the flat world of the t2i look: nothing to reflect", _plain),
    "room": WorldKind("room", "a room behind the objects: a wall, a corner or a cyclorama, windows with a beam of "
                              "light and a light shaft (profile t2i_real)", _room),
})


def parse_worlds(text: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--worlds a,b`` (or a sequence of names) as the named kinds in `WORLD_KINDS`'s (sorted) order, each once.

    Raises:
        ValueError: an empty list, or a name that is not a world kind (one line naming the known ones).
    """
    if text is None:
        return None
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if not names:
        raise ValueError(f"--worlds names no world kind (known: {', '.join(WORLD_KINDS.names())})")
    for n in names:
        if n not in WORLD_KINDS:
            raise ValueError(f"--worlds: {WORLD_KINDS.unknown(n)}")
    return tuple(k for k in WORLD_KINDS.names() if k in names)


def _stream(seed: int, index: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(index)], spawn_key=(_WORLD_STREAM, *key)))


def draw_world(seed: int, index: int, weights: Sequence[tuple[str, float]],
               allowed: Sequence[str] | None = None) -> dict[str, Any]:
    """Image ``index``'s world: ``{"kind": name, **parameters}``, the kind drawn from ``weights`` (a profile's
    ``(kind, weight)`` pairs) narrowed to ``allowed``.

    Raises:
        ValueError: ``allowed`` leaves none of the profile's kinds.
    """
    pairs = [(k, float(w)) for k, w in weights if allowed is None or k in allowed]
    if not pairs:
        raise ValueError(f"--worlds {','.join(allowed or ())} leaves none of the profile's world kinds "
                         f"({', '.join(k for k, _ in weights)})")
    p = np.array([w for _, w in pairs])
    u = float(_stream(seed, index).random())
    pick = min(int(np.searchsorted(np.cumsum(p / p.sum()), u, side="right")), len(pairs) - 1)
    kind = WORLD_KINDS.get(pairs[pick][0])
    return {"kind": kind.name, **kind.draw(_stream(seed, index, zlib.crc32(kind.name.encode())))}


def sky_in_frame(seed: int, index: int, camera: Mapping[str, Any], width: int, height: int,
                 elevation_deg: tuple[float, float], lens_mm: tuple[float, float]) -> dict[str, Any]:
    """Image ``index``'s ``camera`` (a t2i plan's) with its elevation and focal length redrawn so that the horizon
    shows in a ``width`` x ``height`` frame, at ``horizon_height`` (recorded) of the way from the centre up to the
    top edge, at most `SKY_HORIZON_MAX`.

    The camera looks down at its target at the elevation, so the horizon stands that angle above the frame's
    centre; the sensor (32 mm) spans the frame's longer side. The elevation is uniform in ``elevation_deg``
    capped where the widest lens still shows the horizon, then the focal length log-uniform in ``lens_mm`` up to
    the longest that shows it. Every other draw stays.
    """
    rng = _stream(seed, index, _SKY_IN_FRAME_STREAM)
    half = 16.0 * height / max(width, height)  # the vertical half field's tangent times the focal length
    highest = math.degrees(math.atan(SKY_HORIZON_MAX * half / float(lens_mm[0])))
    top = min(float(elevation_deg[1]), highest)
    elevation = float(rng.uniform(min(float(elevation_deg[0]), top), top))
    longest = min(float(lens_mm[1]), SKY_HORIZON_MAX * half / math.tan(math.radians(elevation)))
    lens = _log_uniform(rng, float(lens_mm[0]), max(float(lens_mm[0]), longest))
    return {**camera, "elevation_deg": _r(elevation, 3), "lens_mm": _r(lens, 3),
            "horizon_height": _r(math.tan(math.radians(elevation)) * lens / half)}
