"""What a CLEVR render draws before Blender runs: render profiles, settings, the per-image plan, object sampling.

Plain Python and numpy (no ``bpy``), so the draws are testable anywhere and a render is a pure function of
``(settings, image index)``.

Render profiles (``logicval render-clevr --profile NAME``), declared as data in `RENDER_PROFILES`:

- ``clevr``: CLEVR v1.0 as the official generator samples it (480x320, its camera, lamps and grey floor).
- ``randomise``: the earlier ``--randomise`` draws, kept draw for draw so folders rendered with it resume: floor
  colour (CLEVR grey, lit white, random), light energy, camera elevation 18-50 degrees and distance, image size.
- ``t2i``: the look of text-to-image output, for perception that must read what T2I models draw: square and
  other frames (1:1 most often; 4:3, 3:2, 16:9 and portrait) with a longer side of 256-1024 px; any camera
  azimuth, elevation 15-75 degrees, focal lengths 24-85 mm, framed so the median object is 7-42 % of the
  frame's shorter side wide (the objects crowd closer when they are large); floors CLEVR grey, white and
  near-white, plain colours and mildly textured, a visible horizon in some; light energy, colour temperature
  and direction varied, soft or hard shadows; per-object scale jitter, mild non-uniform stretch, and cubes /
  cylinders with other bevels; 1-10 objects packed closer than CLEVR's rules allow (occlusion), every object
  whole inside the frame.
- ``t2i_wide``: the t2i look widened where other renderers and T2I models differ from CLEVR's materials and
  world: a graded sky or studio environment (a zenith and a horizon colour) that metals reflect and that lights
  the scene, in place of a flat world, and per object another finish of its material (rubber rougher or
  glossier, with more or less sheen; metal reflections sharper or more blurred). Its own stream: profile
  ``t2i``'s draws, folders and images stay as they were.
- ``t2i_world``: the t2i look with ``t2i_wide``'s finishes, light of 3,000-9,000 K, and per image a world that
  camera and glossy rays see (`clevr_worlds`): ``sky_gradient`` 0.25, ``procedural_sky`` 0.2, ``studio`` 0.2,
  ``distant_shapes`` 0.2, ``plain`` (nothing to reflect) 0.15, on every floor kind; ``render_settings.world``
  records the kind and its draws. ``--worlds sky_gradient,studio`` narrows the kinds (a held-out set of a kind
  never trained on) and changes nothing else an image draws.
- ``t2i_real``: ``t2i_world`` plus the world kind ``room`` (0.35) and every variation of `clevr_variations` at
  its rate (glossy floors, tinted light, glass and other surfaces, stacks, cuts by the frame, bevelled and marked
  cubes, distractors, small soft images); ``--variations`` replaces them (any profile that draws the camera).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.registry import Registry
from logicval_hf.generation.clevr_assets import ClevrAssets
from logicval_hf.generation.clevr_framing import CUBE_REACH, frame_camera
from logicval_hf.generation.clevr_truth import RELATION_EPS, compute_relationships, mask_stats
from logicval_hf.generation.clevr_variations import VARIATIONS, draw_variations, parse_variations, tint_lights
from logicval_hf.generation.clevr_worlds import draw_world, hsv_rgb, parse_worlds, sky_in_frame

__all__ = [
    "RENDER_PROFILES", "RenderProfile", "RenderConfig", "ImagePlan", "plan_image", "min_pixels_for",
    "sample_objects", "compute_relationships", "mask_stats", "kelvin_to_rgb", "frame_camera", "CUBE_REACH",
    "RELATION_EPS",
]

# The generator's constants (CLEVR v1.0 settings).
MIN_DIST = 0.25
MARGIN = 0.4
MIN_PIXELS = 200          # at 480x320; scaled with the image area
MIN_PIXELS_AREA = 480 * 320
MAX_RETRIES = 50
MAX_RESTARTS = 200
CAMERA_JITTER = 0.5
LAMP_JITTER = 1.0
LAMPS = ("Lamp_Key", "Lamp_Fill", "Lamp_Back")

# "randomise" ranges (unchanged since that profile was the --randomise flag: its folders resume)
FLOOR_CHOICES = ("clevr", "white", "random")
FLOOR_P = (0.4, 0.3, 0.3)
LIGHT_SCALE = (0.5, 1.6)
WHITE_GLOW = (0.4, 0.65)   # emission of a white floor: a near-white studio backdrop with soft shadows
ELEVATION_DEG = (18.0, 50.0)
DISTANCE_SCALE = (0.8, 1.25)
SIZE_SCALE = (0.6, 1.25)
ASPECTS = (1.0, 4 / 3, 3 / 2, 16 / 9)


@dataclass(frozen=True)
class T2ILook:
    """The ranges the ``t2i`` profile draws from (see the module docstring for why each exists)."""

    # frames: (width / height, probability); T2I models mostly answer in squares
    frames: tuple[tuple[float, float], ...] = ((1.0, 0.45), (4 / 3, 0.16), (3 / 2, 0.12), (16 / 9, 0.1),
                                                (3 / 4, 0.09), (2 / 3, 0.08))
    long_side: tuple[int, int] = (256, 1024)
    elevation_deg: tuple[float, float] = (15.0, 75.0)
    lens_mm: tuple[float, float] = (24.0, 85.0)        # on Blender's 32 mm sensor (the CLEVR camera's)
    #: version of these draws: folders rendered with another version are not resumed with this one
    version: int = 2
    # T2I models draw objects large: the median object's width is this share of the frame's shorter side
    # (log-uniform); the placement square shrinks to match, so several large objects crowd and occlude
    object_size: tuple[float, float] = (0.07, 0.42)
    object_size_spread: float = 0.3                     # placement half side x object size, at radius 0.5
    spread_per_sqrt_n: float = 0.62                     # the placement square's half side grows with sqrt(n)
    spread: tuple[float, float] = (0.9, 3.0)
    fill_max: float = 0.97                              # the objects' bounding circle over half the short side
    target_jitter: float = 0.3                          # where the camera aims, off the objects' centroid
    floors: tuple[tuple[str, float], ...] = (("clevr", 0.22), ("white", 0.26), ("plain", 0.3), ("texture", 0.22))
    white_value: tuple[float, float] = (0.78, 1.0)
    white_glow: tuple[float, float] = (0.15, 0.7)
    plain_saturation: tuple[float, float] = (0.08, 0.75)
    plain_value: tuple[float, float] = (0.25, 0.95)
    texture_contrast: tuple[float, float] = (0.05, 0.25)
    texture_scale: tuple[float, float] = (0.5, 6.0)
    horizon_p: float = 0.3
    horizon_elevation_deg: tuple[float, float] = (15.0, 32.0)   # low enough to see where the floor ends
    horizon_floor: tuple[float, float] = (10.0, 25.0)           # half side of a floor whose edge shows
    open_floor: float = 200.0                                    # half side of a floor whose edge never shows
    world_strength: tuple[float, float] = (0.15, 1.0)
    light_scale: tuple[float, float] = (0.45, 2.2)     # log-uniform
    key_ratio: tuple[float, float] = (0.5, 2.0)         # log-uniform, key over fill
    temperature_k: tuple[float, float] = (2800.0, 9000.0)
    rig_height: tuple[float, float] = (0.6, 1.8)
    hard_shadow_p: float = 0.45
    soft_size: tuple[float, float] = (1.5, 5.0)         # x the base scene's lamp sizes
    hard_size: tuple[float, float] = (0.05, 0.35)
    sun_hard: tuple[float, float] = (2.0, 6.0)          # x the base scene's sun energy for hard shadows
    ambient: tuple[float, float] = (0.0, 0.35)          # world light where no horizon shows
    object_scale: tuple[float, float] = (0.85, 1.15)
    stretch_p: float = 0.5
    stretch: tuple[float, float] = (0.88, 1.14)
    mesh_variant_p: float = 0.4                          # a cube / cylinder with another bevel
    cube_bevel: tuple[float, float] = (0.03, 0.35)      # bevel width over the half side
    cylinder_bevel: tuple[float, float] = (0.02, 0.2)
    min_dist: float = 0.05
    margin: float = 0.0
    min_pixels_fraction: float = 0.0006                 # of the image area, every object (occlusion allowed)
    # drawn only where these are above 0 (profile t2i_wide), after every draw above, so t2i's draws stay
    sky_p: float = 0.0                                   # a graded environment in place of the flat world
    sky_strength: tuple[float, float] = (0.2, 1.0)
    sky_softness: tuple[float, float] = (0.05, 0.6)      # height of the zenith-to-horizon blend (direction z)
    finish_p: float = 0.0                                # per object: another finish of its material
    rubber_roughness: tuple[float, float] = (0.12, 0.75)  # the Rubber group's Roughness (CLEVR's: 0.35)
    rubber_ior: tuple[float, float] = (1.05, 1.5)       # its IOR: how strong its sheen is (CLEVR's: 1.2)
    metal_roughness: tuple[float, float] = (0.35, 2.2)  # x MyMetal's two glossy roughnesses (log-uniform)
    # (kind, weight) of the world kinds drawn per image (`clevr_worlds`; profile t2i_world), on streams of their own
    worlds: tuple[tuple[str, float], ...] = ()
    # (name, rate) of the variations drawn per image (`clevr_variations`; profile t2i_real), streams of their own
    variations: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class RenderProfile:
    """A named render distribution: what `plan_image` draws beyond CLEVR v1.0, and its object rules."""

    name: str
    description: str
    min_objects: int = 3
    max_objects: int = 10
    t2i: T2ILook | None = None


_WORLD_LOOK = T2ILook(version=1, finish_p=0.6, temperature_k=(3000.0, 9000.0),
                      worlds=(("sky_gradient", 0.25), ("procedural_sky", 0.2), ("studio", 0.2),
                              ("distant_shapes", 0.2), ("plain", 0.15)))
RENDER_PROFILES: Registry[RenderProfile] = Registry("render profile", {
    "clevr": RenderProfile("clevr", "CLEVR v1.0: the official generator's camera, lamps, floor and 480x320"),
    "randomise": RenderProfile("randomise", "CLEVR v1.0 plus floor colour, light energy, camera elevation and "
                                            "distance, and image size (the former --randomise)"),
    "t2i": RenderProfile("t2i", "the look of text-to-image output: square and other frames at 256-1024 px, any "
                                "camera azimuth, elevation 15-75 degrees, close to far framing, white / plain / "
                                "textured floors, other lights and shadows, imperfect shapes, 1-10 objects",
                         min_objects=1, max_objects=10, t2i=T2ILook()),
    "t2i_wide": RenderProfile("t2i_wide", "the t2i look widened: graded sky and studio environments that metals "
                                          "reflect, and other finishes of rubber and metal (rougher, glossier)",
                              min_objects=1, max_objects=10, t2i=T2ILook(version=1, sky_p=0.6, finish_p=0.6)),
    "t2i_world": RenderProfile("t2i_world", "the t2i look with other finishes, 3,000-9,000 K light and a world per "
                                            "image that metals reflect: sky gradients, a physical sky, a studio "
                                            "cyclorama, distant shapes, or the plain world (--worlds narrows them)",
                               min_objects=1, max_objects=10, t2i=_WORLD_LOOK),
    "t2i_real": RenderProfile("t2i_real", "the t2i_world look plus rooms (walls, corners, cycloramas, windows, "
                                          "light shafts) and every variation real T2I pictures show, each at its "
                                          "rate (--variations changes them)",
                              min_objects=1, max_objects=10,
                              t2i=replace(_WORLD_LOOK, worlds=(("sky_gradient", 0.15), ("procedural_sky", 0.1),
                                                               ("studio", 0.2), ("distant_shapes", 0.1),
                                                               ("plain", 0.1), ("room", 0.35)),
                                          variations=tuple((k, VARIATIONS.get(k).rate) for k in VARIATIONS.names()))),
})


# ---- settings and the per-image plan (pure) ----------------------------------------------------------------
@dataclass(frozen=True)
class RenderConfig:
    """What a `render_dataset` run renders; everything an image depends on besides its index.

    ``profile`` names a `RENDER_PROFILES` entry; ``randomise=True`` is the same as ``profile="randomise"``.
    ``long_side`` ``(min, max)`` bounds the longer image side of profiles that draw the frame (``t2i``):
    training renders need fewer pixels than the 256-1024 px users' images have. ``elevation`` ``(min, max)`` in
    degrees narrows the camera elevation such profiles draw (e.g. more of the low cameras a parser reads worst);
    images with a horizon keep their own, lower range, clipped to it (none where the two do not overlap).
    ``empty``: every image shows its stage without objects (the right image for an unsatisfiable prompt). The
    scene is drawn as usual and frames the camera, so the empty frames have the profile's cameras, floors and
    lights, then its objects are removed before the render. ``worlds`` narrows the world kinds a profile that
    draws them (``t2i_world``) draws per image (`clevr_worlds.parse_worlds` reads ``--worlds``). ``sky_in_frame``:
    every camera shows the horizon and the world above it (`clevr_worlds.sky_in_frame`).
    """

    seed: int = 0
    samples: int = 32
    denoise: bool = True
    width: int = 480
    height: int = 320
    min_objects: int = 3
    max_objects: int = 10
    randomise: bool = False
    threads: int = 2
    profile: str = "clevr"
    long_side: tuple[int, int] | None = None
    elevation: tuple[float, float] | None = None
    empty: bool = False
    worlds: tuple[str, ...] | None = None
    sky_in_frame: bool = False
    variations: tuple[tuple[str, float], ...] | None = None

    @property
    def profile_name(self) -> str:
        return "randomise" if self.randomise else self.profile

    @property
    def look(self) -> RenderProfile:
        return RENDER_PROFILES.get(self.profile_name)

    def validate(self) -> RenderConfig:
        if self.randomise and self.profile not in ("clevr", "randomise"):
            raise ValueError(f"--randomise is the profile 'randomise'; it cannot be combined with --profile "
                             f"{self.profile}")
        self.look  # an unknown profile: one line naming the known ones  # noqa: B018
        if self.samples < 1:
            raise ValueError(f"--samples must be >= 1, got {self.samples}")
        if self.width < 8 or self.height < 8:
            raise ValueError(f"image size must be at least 8x8, got {self.width}x{self.height}")
        if self.min_objects < 1:
            raise ValueError(f"--min-objects must be >= 1, got {self.min_objects}")
        if self.min_objects > self.max_objects:
            raise ValueError(f"--min-objects ({self.min_objects}) is larger than --max-objects ({self.max_objects})")
        if self.max_objects > 254:
            raise ValueError(f"--max-objects must be <= 254 (8-bit masks), got {self.max_objects}")
        if self.threads < 1:
            raise ValueError(f"--threads must be >= 1, got {self.threads}")
        if self.long_side is not None:
            lo, hi = self.long_side
            if not (32 <= lo <= hi <= 4096):
                raise ValueError(f"--long-side must be MIN:MAX with 32 <= MIN <= MAX <= 4096, got {lo}:{hi}")
        if (self.elevation is not None or self.sky_in_frame) and self.look.t2i is None:
            flag = "--elevation" if self.elevation is not None else "--sky-in-frame"
            raise ValueError(f"{flag} applies to profiles that draw the camera (t2i), not {self.profile_name}")
        if self.elevation is not None:
            elo, ehi = self.elevation
            if not (5 <= elo <= ehi <= 89):
                raise ValueError(f"--elevation must be MIN:MAX in degrees with 5 <= MIN <= MAX <= 89, "
                                 f"got {elo:g}:{ehi:g}")
        if self.worlds is not None:
            if self.look.t2i is None or not self.look.t2i.worlds:
                raise ValueError(f"--worlds applies to profiles that draw a world kind (t2i_world), not "
                                 f"{self.profile_name}")
            draw_world(self.seed, 0, self.look.t2i.worlds, parse_worlds(self.worlds))  # names none it draws?
        if self.variations is not None:
            if self.look.t2i is None:
                raise ValueError(f"--variations applies to profiles that draw the camera (t2i, t2i_wide, t2i_world, "
                                 f"t2i_real), not {self.profile_name}")
            parse_variations([f"{k}={p}" for k, p in self.variations] or ["none"])  # known names, rates in [0, 1]
            if self.max_objects + 3 > 254 and any(k == "distractors" for k, _ in self.variations):
                raise ValueError("--max-objects must be <= 251 with distractors (8-bit masks)")
        return self

    def variation_rates(self) -> tuple[tuple[str, float], ...]:
        """The variations drawn per image: ``variations`` where given, else the profile's."""
        look = self.look.t2i
        if self.variations is not None:
            return tuple(self.variations)
        return look.variations if look is not None else ()

    def t2i_look(self) -> T2ILook | None:
        """The profile's T2I look with ``elevation`` applied (None for profiles that draw no camera)."""
        look = self.look.t2i
        if look is None or self.elevation is None:
            return look
        lo, hi = float(self.elevation[0]), float(self.elevation[1])
        h_lo, h_hi = max(lo, look.horizon_elevation_deg[0]), min(hi, look.horizon_elevation_deg[1])
        if h_lo > h_hi:
            return replace(look, elevation_deg=(lo, hi), horizon_p=0.0)
        return replace(look, elevation_deg=(lo, hi), horizon_elevation_deg=(h_lo, h_hi))

    def fingerprint(self) -> dict[str, Any]:
        """The settings that make two runs' images the same (threads excluded)."""
        out: dict[str, Any] = {
            "seed": self.seed, "samples": self.samples, "denoise": int(self.denoise), "width": self.width,
            "height": self.height, "min_objects": self.min_objects, "max_objects": self.max_objects,
            "randomise": int(self.profile_name == "randomise")}
        if self.profile_name not in ("clevr", "randomise"):  # older folders' manifests stay valid
            out["profile"] = self.profile_name
            out["long_side"] = list(self.frame_sides())
            if self.look.t2i is not None:
                out["profile_version"] = self.look.t2i.version
            if self.elevation is not None:
                out["elevation"] = [float(v) for v in self.elevation]
            if self.worlds is not None:
                out["worlds"] = list(parse_worlds(self.worlds) or ())
            if self.sky_in_frame:
                out["sky_in_frame"] = 1
            if self.variations is not None:
                out["variations"] = [[k, float(p)] for k, p in self.variations]
        if self.empty:  # absent when off, so folders rendered before the option keep their manifests
            out["empty"] = 1
        return out

    def frame_sides(self) -> tuple[int, int]:
        """The longer side's range for profiles that draw the frame."""
        if self.long_side is not None:
            return int(self.long_side[0]), int(self.long_side[1])
        t2i = self.look.t2i
        return t2i.long_side if t2i is not None else (max(self.width, self.height),) * 2


@dataclass(frozen=True)
class ImagePlan:
    """Everything drawn for one image before objects are placed: a pure function of (config, index)."""

    index: int
    n_objects: int
    width: int
    height: int
    camera_jitter: tuple[float, float, float]
    lamp_jitter: Mapping[str, tuple[float, float, float]]
    cycles_seed: int
    object_seed: int
    randomised: Mapping[str, Any] = field(default_factory=dict)


def _rngs(seed: int, index: int) -> tuple[np.random.Generator, np.random.Generator]:
    plan_ss, obj_ss = np.random.SeedSequence([int(seed), int(index)]).spawn(2)
    return np.random.default_rng(plan_ss), np.random.default_rng(obj_ss)


def _look_rng(seed: int, index: int) -> np.random.Generator:
    """The t2i look's own stream (the first two streams keep their CLEVR meaning)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), int(index)]).spawn(3)[2])


def _xyz(values: Sequence[float] | np.ndarray) -> tuple[float, float, float]:
    x, y, z = (float(v) for v in values)
    return x, y, z


def plan_image(config: RenderConfig, index: int) -> ImagePlan:
    """The draws of image ``index`` that do not depend on Blender (object count, jitter, profile values)."""
    rng, _ = _rngs(config.seed, index)
    n = int(rng.integers(config.min_objects, config.max_objects + 1))
    cam = _xyz(rng.uniform(-CAMERA_JITTER, CAMERA_JITTER, 3))
    lamps = {name: _xyz(rng.uniform(-LAMP_JITTER, LAMP_JITTER, 3)) for name in LAMPS}
    cycles_seed = int(rng.integers(0, 2**31 - 1))
    object_seed = int(rng.integers(0, 2**63 - 1))
    width, height = config.width, config.height
    extra: dict[str, Any] = {}
    if config.profile_name == "randomise":
        kind = FLOOR_CHOICES[int(rng.choice(len(FLOOR_CHOICES), p=FLOOR_P))]
        glow = 0.0
        if kind == "clevr":
            floor = None
        elif kind == "white":
            floor = [1.0, 1.0, 1.0]
            glow = round(float(rng.uniform(*WHITE_GLOW)), 4)
        else:
            floor = [round(float(v), 4) for v in rng.uniform(0.05, 1.0, 3)]
        extra["floor"] = kind
        extra["floor_rgb"] = floor
        extra["floor_glow"] = glow
        extra["light_scale"] = round(float(rng.uniform(*LIGHT_SCALE)), 4)
        extra["camera_elevation_deg"] = round(float(rng.uniform(*ELEVATION_DEG)), 3)
        extra["camera_distance_scale"] = round(float(rng.uniform(*DISTANCE_SCALE)), 4)
        scale = float(rng.uniform(*SIZE_SCALE))
        aspect = ASPECTS[int(rng.integers(len(ASPECTS)))]
        width = max(8, round(config.width * scale))
        height = max(8, round(width / aspect))
        extra["image_size"] = [width, height]
    elif (look := config.t2i_look()) is not None:
        extra = _plan_t2i(look, _look_rng(config.seed, index), n, config.frame_sides(), config.profile_name)
        width, height = extra["image_size"]
        if look.worlds:
            extra["world"] = world = draw_world(config.seed, index, look.worlds, config.worlds)
            if world["kind"] in ("studio", "room"):  # walls stand where a horizon would show: no floor edge
                extra["floor"]["half_side"] = look.open_floor
            if world["kind"] == "room":  # an interior: a white floor keeps its albedo, not a studio's glow
                extra["floor"]["glow"] = _r(0.3 * extra["floor"]["glow"])
        if config.sky_in_frame:
            extra["camera"] = sky_in_frame(config.seed, index, extra["camera"], width, height, look.elevation_deg,
                                           look.lens_mm)
        if rates := config.variation_rates():
            extra["variations"] = drawn = draw_variations(config.seed, index, rates, n)
            extra["lights"] = tint_lights(extra["lights"], drawn.get("tinted_light"))
    return ImagePlan(index, n, width, height, cam, lamps, cycles_seed, object_seed, extra)


def _r(v: float, nd: int = 4) -> float:
    return round(float(v), nd)


def kelvin_to_rgb(kelvin: float) -> list[float]:
    """An approximate blackbody colour (linear RGB in [0, 1], green-normalised) for a colour temperature."""
    t = float(kelvin) / 100.0
    if t <= 66:
        r = 255.0
        g = 99.4708025861 * math.log(t) - 161.1195681661
        b = 0.0 if t <= 19 else 138.5177312231 * math.log(t - 10) - 305.0447927307
    else:
        r = 329.698727446 * (t - 60) ** -0.1332047592
        g = 288.1221695283 * (t - 60) ** -0.0755148492
        b = 255.0
    rgb = np.clip(np.array([r, g, b]) / 255.0, 0.0, 1.0) ** 2.2  # sRGB-ish to linear
    return [_r(c) for c in rgb / max(float(rgb.max()), 1e-6)]


def _plan_t2i(look: T2ILook, rng: np.random.Generator, n: int, sides: tuple[int, int], profile: str = "t2i"
              ) -> dict[str, Any]:
    """A t2i-style profile's draws for one image (frame, camera, floor, horizon, lights, per-object shape
    jitter; with ``look.sky_p`` / ``look.finish_p`` above 0 also the environment and the objects' finishes)."""
    aspects = [a for a, _ in look.frames]
    p = np.array([q for _, q in look.frames])
    aspect = aspects[int(rng.choice(len(aspects), p=p / p.sum()))]
    long_side = int(rng.integers(sides[0], sides[1] + 1))
    if aspect >= 1:
        width, height = long_side, max(8, round(long_side / aspect))
    else:
        width, height = max(8, round(long_side * aspect)), long_side
    spread_lo = max(look.spread[0], min(look.spread[1], look.spread_per_sqrt_n * math.sqrt(n) + 0.3))
    size = math.exp(rng.uniform(*np.log(look.object_size)))
    spread = min(look.spread[1], max(spread_lo, look.object_size_spread / size * float(rng.uniform(0.8, 1.25))))
    camera = {"azimuth_deg": _r(rng.uniform(0.0, 360.0), 3), "elevation_deg": _r(rng.uniform(*look.elevation_deg), 3),
              "lens_mm": _r(rng.uniform(*look.lens_mm), 3), "object_size": _r(size), "fill_max": look.fill_max,
              "target_jitter": [_r(v) for v in rng.uniform(-look.target_jitter, look.target_jitter, 2)]}
    kinds = [k for k, _ in look.floors]
    pf = np.array([q for _, q in look.floors])
    kind = kinds[int(rng.choice(len(kinds), p=pf / pf.sum()))]
    floor: dict[str, Any] = {"kind": kind, "rgb": None, "glow": 0.0, "texture": None}
    if kind == "white":
        v = float(rng.uniform(*look.white_value))
        tint = rng.uniform(-0.03, 0.03, 3)
        floor["rgb"] = [_r(min(1.0, max(0.0, v + t))) for t in tint]
        floor["glow"] = _r(rng.uniform(*look.white_glow))
    elif kind in ("plain", "texture"):
        base = int(rng.integers(3)) if kind == "texture" else 2  # texture over grey, white or a colour
        if base == 0:
            floor["rgb"] = [_r(rng.uniform(0.25, 0.6))] * 3
        elif base == 1:
            floor["rgb"] = [_r(rng.uniform(*look.white_value))] * 3
            floor["glow"] = _r(rng.uniform(*look.white_glow))
        else:
            floor["rgb"] = hsv_rgb(float(rng.random()), float(rng.uniform(*look.plain_saturation)),
                                       float(rng.uniform(*look.plain_value)))
        if kind == "texture":
            floor["texture"] = {"pattern": ["noise", "wave", "checker"][int(rng.integers(3))],
                                "scale": _r(rng.uniform(*look.texture_scale)),
                                "contrast": _r(rng.uniform(*look.texture_contrast))}
    # any azimuth: the base scene's curved backdrop faces one camera only, so the floor is always a flat square,
    # small enough for its far edge (a horizon against the world colour) to show in some images
    horizon = None
    floor["half_side"] = look.open_floor
    if rng.random() < look.horizon_p:
        horizon = {"world_rgb": hsv_rgb(float(rng.random()), float(rng.uniform(0.0, 0.5)),
                                            float(rng.uniform(0.4, 1.0))),
                   "strength": _r(rng.uniform(*look.world_strength))}
        floor["half_side"] = _r(rng.uniform(*look.horizon_floor), 2)
        camera["elevation_deg"] = _r(rng.uniform(*look.horizon_elevation_deg), 3)
    hard = bool(rng.random() < look.hard_shadow_p)
    lights = {"rig_azimuth_deg": _r(rng.uniform(-180.0, 180.0), 3), "rig_height": _r(rng.uniform(*look.rig_height)),
              "energy_scale": _r(math.exp(rng.uniform(*np.log(look.light_scale)))),
              "key_ratio": _r(math.exp(rng.uniform(*np.log(look.key_ratio)))),
              "key_rgb": kelvin_to_rgb(rng.uniform(*look.temperature_k)),
              "fill_rgb": kelvin_to_rgb(rng.uniform(*look.temperature_k)),
              "shadows": "hard" if hard else "soft",
              "size_scale": _r(rng.uniform(*(look.hard_size if hard else look.soft_size))),
              "sun_scale": _r(rng.uniform(*look.sun_hard)) if hard else 1.0,
              "ambient": _r(rng.uniform(*look.ambient))}
    objects = []
    for _ in range(n):
        stretch = ([_r(v) for v in rng.uniform(*look.stretch, 3)] if rng.random() < look.stretch_p
                   else [1.0, 1.0, 1.0])
        variant = bool(rng.random() < look.mesh_variant_p)
        objects.append({"scale": _r(rng.uniform(*look.object_scale)), "stretch": stretch,
                        "mesh_variant": variant,
                        "cube_bevel": _r(rng.uniform(*look.cube_bevel)),
                        "cylinder_bevel": _r(rng.uniform(*look.cylinder_bevel))})
    plan = {"profile": profile, "image_size": [width, height], "camera": camera, "floor": floor,
            "horizon": horizon, "lights": lights, "objects": objects,
            "spread": _r(spread), "version": look.version,
            "min_dist": look.min_dist, "margin": look.margin}
    if look.sky_p > 0:
        plan["sky"] = _draw_sky(look, rng)
    if look.finish_p > 0:
        for o in objects:
            o["finish"] = _draw_finish(look, rng)
    return plan


def _draw_sky(look: T2ILook, rng: np.random.Generator) -> dict[str, Any] | None:
    """A graded environment (None: the flat world): a zenith colour from pale to saturated, a pale horizon, the
    blend's height and a strength; the world lights the scene as much as it shows in metals."""
    if rng.random() >= look.sky_p:
        return None
    return {"zenith_rgb": hsv_rgb(float(rng.random()), float(rng.uniform(0.0, 0.65)),
                                      float(rng.uniform(0.45, 1.0))),
            "horizon_rgb": hsv_rgb(float(rng.random()), float(rng.uniform(0.0, 0.2)),
                                       float(rng.uniform(0.6, 1.0))),
            "softness": _r(rng.uniform(*look.sky_softness)), "strength": _r(rng.uniform(*look.sky_strength))}


def _draw_finish(look: T2ILook, rng: np.random.Generator) -> dict[str, Any] | None:
    """One object's finish (None: its material as CLEVR has it), drawn for both materials (the object's own
    is chosen later, when it is placed): rubber's roughness and sheen, metal's reflection blur."""
    if rng.random() >= look.finish_p:
        return None
    return {"rubber": {"roughness": _r(rng.uniform(*look.rubber_roughness)), "ior": _r(rng.uniform(*look.rubber_ior))},
            "metal": {"roughness_scale": _r(math.exp(rng.uniform(*np.log(look.metal_roughness))))}}


def min_pixels_for(width: int, height: int, fraction: float | None = None) -> int:
    """The generator's 200 visible pixels at 480x320, scaled with the image area (at least 1); or ``fraction``
    of the area."""
    if fraction is not None:
        return max(1, round(fraction * width * height))
    return max(1, round(MIN_PIXELS * width * height / MIN_PIXELS_AREA))


def _fits(x: float, y: float, r: float, placed: Sequence[Mapping[str, Any]], directions: Mapping[str, Sequence[float]],
          min_dist: float, margin: float) -> bool:
    for o in placed:
        dx, dy = x - o["x"], y - o["y"]
        if math.hypot(dx, dy) - r - o["r"] < min_dist:
            return False
        if margin <= 0:
            continue
        for name in ("left", "behind"):  # |projection| on each axis (left/right and front/behind are opposites)
            d = directions[name]
            if abs(dx * d[0] + dy * d[1]) < margin:
                return False
    return True


def sample_objects(rng: np.random.Generator, n: int, assets: ClevrAssets | Mapping[str, Any],
                   directions: Mapping[str, Sequence[float]], *,
                   visible: Callable[[list[dict[str, Any]]], bool] | None = None,
                   min_dist: float = MIN_DIST, margin: float = MARGIN, max_retries: int = MAX_RETRIES,
                   max_restarts: int = MAX_RESTARTS, spread: float = 3.0,
                   radius_scale: Sequence[float] | None = None) -> tuple[list[dict[str, Any]], int]:
    """The generator's object sampling (pure given ``visible``): objects and the number of scene restarts.

    Each object: size, then a position uniform in [-spread, spread]^2 (CLEVR: 3; up to ``max_retries`` tries
    to keep ``min_dist`` between edges and ``margin`` along the ground-projected camera axes from every placed
    object; else the scene restarts), then shape, colour, rotation (degrees, uniform in [0, 360)) and material.
    ``radius_scale[i]`` scales object i's radius (the t2i look's size jitter). ``visible`` (the object-index
    render check) can reject a complete scene, which restarts it too.
    """
    a = assets if isinstance(assets, ClevrAssets) else ClevrAssets(Path("."), assets)
    sizes, shapes, colors, mats = a.sizes, a.shapes, a.colors, a.materials
    for restart in range(max_restarts):
        placed: list[dict[str, Any]] = []
        for i in range(n):
            size_name, r = sizes[int(rng.integers(len(sizes)))]
            if radius_scale is not None:
                r = r * float(radius_scale[i])
            for _try in range(max_retries):
                x, y = (float(v) for v in rng.uniform(-spread, spread, 2))
                if _fits(x, y, r, placed, directions, min_dist, margin):
                    break
            else:
                break
            shape, obj_name = shapes[int(rng.integers(len(shapes)))]
            color, _rgb = colors[int(rng.integers(len(colors)))]
            rotation = 360.0 * float(rng.random())
            material, group = mats[int(rng.integers(len(mats)))]
            placed.append({"shape": shape, "object": obj_name, "size": size_name, "r": r, "color": color,
                           "material": material, "group": group, "x": x, "y": y, "rotation": rotation})
        if len(placed) == n and (visible is None or visible(placed)):
            return placed, restart
    raise RuntimeError(f"could not place {n} objects in {max_restarts} scene restarts")
