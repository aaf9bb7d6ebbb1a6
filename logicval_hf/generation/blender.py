"""CLEVR renders with Blender as a Python module (``bpy``, extra ``blender``): the CLEVR generator's sampling
re-implemented on the official assets, and the oracle renderer that draws a scene graph in the CLEVR look.

Two entry points:

- `render_dataset` (``logicval render-clevr``): CLEVR v1.0 scenes sampled the way the official generator does
  (3-10 objects; shape, colour, material and size uniform from ``properties.json``; rotation uniform in
  [0, 360), applied as radians as the original does; positions uniform in [-3, 3]^2 with a minimum edge
  distance of 0.25 and a margin of 0.4 along the four cardinal directions; at least 200 visible pixels per
  object at 480x320 (scaled with the image area), checked on a 1-sample object-index render; 50 tries per
  object, then the scene restarts; camera jitter +-0.5 and lamp jitter +-1.0 per axis). Writes
  ``images/CLEVRX_NNNNNN.png``, ``masks/CLEVRX_NNNNNN.png`` (8-bit, value i+1 = object i, 0 = background, from
  the object-index pass through the compositor's File Output), ``scenes/CLEVRX_NNNNNN.json`` in the official
  CLEVR scene format plus per object ``mask_index``, ``mask_pixels``, ``bbox_xyxy`` (inclusive mask bounds),
  ``mask_at_pixel_coords``, and per scene ``render_settings`` and ``seed``; and ``scenes.json`` combining every
  scene in the folder. Each image is a pure function of ``(seed, image index)`` (a fresh Blender scene per
  image, fixed Cycles seed), so index ranges can be rendered in any order, by several processes, and a rerun
  skips finished images; the pixels do not depend on the thread count. ``randomise=True`` also draws the
  floor colour (CLEVR grey; white, lit to a near-white backdrop; or a random colour), the light energy, the
  camera elevation and distance and the image size, recorded in ``render_settings``.

  Two Blender 5 details the 2.78 script did not need: the material groups' ``Normal`` input is linked to the
  shading normal (left unlinked it passes a zero normal and renders black), and written PNGs are re-encoded
  without Blender's metadata (render times), so reruns give byte-identical files.
- `BlenderSceneRenderer` / `render_scene_graph`: a LogicVal `Scene` (e.g. a solver witness) rendered in 3D so
  that every object's region and the pairwise left/right/front/behind orders of box centres survive the
  projection: objects are placed on the ground by casting the camera ray of a target box centre onto the plane
  of the object's centre, checked on the rendered instance masks and corrected, retried, or refused with
  `BlenderLayoutError`.

``bpy`` is imported only when a render starts; without it, or with an incomplete assets folder, a one-line
`BlenderUnavailable` / `AssetsError` (both `ValueError`) says what to install or where to point. The assets are
the official generator's ``image_generation/data/`` folder (facebookresearch/clevr-dataset-gen; BSD + PATENTS):
``base_scene.blend``, ``shapes/*.blend``, ``materials/*.blend`` and ``properties.json``. They are not shipped.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import shutil
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from logicval_hf.common.atomic import atomic_write_bytes

__all__ = [
    "AssetsError", "BlenderUnavailable", "BlenderLayoutError", "ClevrAssets", "RenderConfig", "ImagePlan",
    "load_assets", "require_bpy", "plan_image", "sample_objects", "compute_relationships", "render_image",
    "render_dataset", "combine_scenes", "BlenderSceneRenderer", "render_scene_graph", "PREFIX",
]

PREFIX = "CLEVRX"
INSTALL_HINT = ("bpy needs numpy<2, so give it an environment of its own: python3 -m venv .venv-blender && "
                ".venv-blender/bin/pip install bpy==5.0.1 pillow tqdm, then set "
                "LOGICVAL_BLENDER_PYTHON=.venv-blender/bin/python")
ASSETS_HINT = ("point --assets at the official CLEVR generator's image_generation/data/ folder "
               "(github.com/facebookresearch/clevr-dataset-gen)")

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
RELATION_EPS = 0.2
BLUR_GLOSSY = 2.0
TRANSPARENT_BOUNCES = 8
CUBE_REACH = math.sqrt(2.0)  # a cube's corners reach r * sqrt(2) from its centre

# --randomise ranges
FLOOR_CHOICES = ("clevr", "white", "random")
FLOOR_P = (0.4, 0.3, 0.3)
LIGHT_SCALE = (0.5, 1.6)
WHITE_GLOW = (0.4, 0.65)   # emission of a white floor: a near-white studio backdrop with soft shadows
ELEVATION_DEG = (18.0, 50.0)
DISTANCE_SCALE = (0.8, 1.25)
SIZE_SCALE = (0.6, 1.25)
ASPECTS = (1.0, 4 / 3, 3 / 2, 16 / 9)


class BlenderUnavailable(ValueError):
    """``bpy`` (Blender as a Python module) is not installed."""


class AssetsError(ValueError):
    """The CLEVR assets folder is missing or incomplete."""


class BlenderLayoutError(RuntimeError):
    """The oracle renderer could not realise a scene graph's regions and orders in 3D."""


# ---- inputs ------------------------------------------------------------------------------------------------
def require_bpy():
    """Import and return ``bpy``, or raise `BlenderUnavailable` naming what to install."""
    try:
        import bpy  # noqa: PLC0415
    except ImportError:
        raise BlenderUnavailable(
            f"Blender renders need bpy (Blender 5.0.1 as a Python module, Python 3.11); {INSTALL_HINT}") from None
    return bpy


@dataclass(frozen=True)
class ClevrAssets:
    """The official generator's data folder: base scene, shape and material files, properties."""

    root: Path
    properties: Mapping[str, Any]

    @property
    def base_scene(self) -> Path:
        return self.root / "base_scene.blend"

    def shape_file(self, obj_name: str) -> Path:
        return self.root / "shapes" / f"{obj_name}.blend"

    def material_file(self, group: str) -> Path:
        return self.root / "materials" / f"{group}.blend"

    @property
    def sizes(self) -> list[tuple[str, float]]:
        return [(k, float(v)) for k, v in self.properties["sizes"].items()]

    @property
    def shapes(self) -> list[tuple[str, str]]:
        return list(self.properties["shapes"].items())

    @property
    def colors(self) -> list[tuple[str, tuple[float, float, float]]]:
        return [(k, tuple(float(c) for c in v)) for k, v in self.properties["colors"].items()]

    @property
    def materials(self) -> list[tuple[str, str]]:
        return list(self.properties["materials"].items())

    def rgba(self, color: str) -> tuple[float, float, float, float]:
        r, g, b = self.properties["colors"][color]
        return (r / 255.0, g / 255.0, b / 255.0, 1.0)


def load_assets(path: str | os.PathLike | ClevrAssets) -> ClevrAssets:
    """Check an assets folder (every file ``properties.json`` names) and load it; `AssetsError` if incomplete."""
    if isinstance(path, ClevrAssets):
        return path
    root = Path(path)
    if not root.is_dir():
        raise AssetsError(f"CLEVR assets folder {str(root)!r} does not exist: {ASSETS_HINT}")
    prop_file = root / "properties.json"
    try:
        props = json.loads(prop_file.read_text(encoding="utf-8"))
    except OSError:
        raise AssetsError(f"CLEVR assets folder {str(root)!r} has no properties.json: {ASSETS_HINT}") from None
    except json.JSONDecodeError as e:
        raise AssetsError(f"{str(prop_file)!r} is not valid JSON ({e}): {ASSETS_HINT}") from None
    keys = ("shapes", "colors", "materials", "sizes")
    if not isinstance(props, dict) or any(not isinstance(props.get(k), dict) or not props[k] for k in keys):
        raise AssetsError(f"{str(prop_file)!r} needs non-empty {list(keys)}: {ASSETS_HINT}")
    assets = ClevrAssets(root, props)
    needed = [assets.base_scene, *(assets.shape_file(v) for v in props["shapes"].values()),
              *(assets.material_file(v) for v in props["materials"].values())]
    missing = [str(p.relative_to(root)) for p in needed if not p.is_file()]
    if missing:
        raise AssetsError(f"CLEVR assets folder {str(root)!r} lacks {', '.join(missing)}: {ASSETS_HINT}")
    return assets


# ---- settings and the per-image plan (pure) ----------------------------------------------------------------
@dataclass(frozen=True)
class RenderConfig:
    """What a `render_dataset` run renders; everything an image depends on besides its index."""

    seed: int = 0
    samples: int = 32
    denoise: bool = True
    width: int = 480
    height: int = 320
    min_objects: int = 3
    max_objects: int = 10
    randomise: bool = False
    threads: int = 2

    def validate(self) -> "RenderConfig":
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
        return self

    def fingerprint(self) -> dict[str, Any]:
        """The settings that make two runs' images the same (threads excluded)."""
        return {"seed": self.seed, "samples": self.samples, "denoise": int(self.denoise), "width": self.width,
                "height": self.height, "min_objects": self.min_objects, "max_objects": self.max_objects,
                "randomise": int(self.randomise)}


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


def plan_image(config: RenderConfig, index: int) -> ImagePlan:
    """The draws of image ``index`` that do not depend on Blender (object count, jitter, --randomise values)."""
    rng, _ = _rngs(config.seed, index)
    n = int(rng.integers(config.min_objects, config.max_objects + 1))
    cam = tuple(float(v) for v in rng.uniform(-CAMERA_JITTER, CAMERA_JITTER, 3))
    lamps = {name: tuple(float(v) for v in rng.uniform(-LAMP_JITTER, LAMP_JITTER, 3)) for name in LAMPS}
    cycles_seed = int(rng.integers(0, 2**31 - 1))
    object_seed = int(rng.integers(0, 2**63 - 1))
    width, height = config.width, config.height
    extra: dict[str, Any] = {}
    if config.randomise:
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
        width = max(8, int(round(config.width * scale)))
        height = max(8, int(round(width / aspect)))
        extra["image_size"] = [width, height]
    return ImagePlan(index, n, width, height, cam, lamps, cycles_seed, object_seed, extra)


def min_pixels_for(width: int, height: int) -> int:
    """The generator's 200 visible pixels at 480x320, scaled with the image area (at least 1)."""
    return max(1, int(round(MIN_PIXELS * width * height / MIN_PIXELS_AREA)))


def _fits(x: float, y: float, r: float, placed: Sequence[Mapping[str, Any]], directions: Mapping[str, Sequence[float]],
          min_dist: float, margin: float) -> bool:
    for o in placed:
        dx, dy = x - o["x"], y - o["y"]
        if math.hypot(dx, dy) - r - o["r"] < min_dist:
            return False
        for name in ("left", "behind"):  # |projection| on each axis (left/right and front/behind are opposites)
            d = directions[name]
            if abs(dx * d[0] + dy * d[1]) < margin:
                return False
    return True


def sample_objects(rng: np.random.Generator, n: int, assets: ClevrAssets | Mapping[str, Any],
                   directions: Mapping[str, Sequence[float]], *,
                   visible: Callable[[list[dict[str, Any]]], bool] | None = None,
                   min_dist: float = MIN_DIST, margin: float = MARGIN, max_retries: int = MAX_RETRIES,
                   max_restarts: int = MAX_RESTARTS) -> tuple[list[dict[str, Any]], int]:
    """The generator's object sampling (pure given ``visible``): objects and the number of scene restarts.

    Each object: size, then a position uniform in [-3, 3]^2 (up to ``max_retries`` tries to keep ``min_dist``
    between edges and ``margin`` along the ground-projected camera axes from every placed object; else the
    scene restarts), then shape, colour, rotation (degrees, uniform in [0, 360)) and material. ``visible`` (the
    object-index render check) can reject a complete scene, which restarts it too.
    """
    a = assets if isinstance(assets, ClevrAssets) else ClevrAssets(Path("."), assets)
    sizes, shapes, colors, mats = a.sizes, a.shapes, a.colors, a.materials
    for restart in range(max_restarts):
        placed: list[dict[str, Any]] = []
        for _ in range(n):
            size_name, r = sizes[int(rng.integers(len(sizes)))]
            for _try in range(max_retries):
                x, y = (float(v) for v in rng.uniform(-3.0, 3.0, 2))
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


def compute_relationships(objects: Sequence[Mapping[str, Any]], directions: Mapping[str, Sequence[float]],
                          eps: float = RELATION_EPS) -> dict[str, list[list[int]]]:
    """CLEVR's relationships: ``out[rel][i]`` lists the objects j that are ``rel`` of object i (margin ``eps``)."""
    out: dict[str, list[list[int]]] = {}
    for name in ("behind", "front", "left", "right"):
        d = np.asarray(directions[name], dtype=np.float64)
        rows = []
        for i, a in enumerate(objects):
            ca = np.asarray(a["3d_coords"], dtype=np.float64)
            rows.append([j for j, b in enumerate(objects)
                         if j != i and float(np.dot(np.asarray(b["3d_coords"]) - ca, d)) > eps])
        out[name] = rows
    return out


def mask_stats(mask: np.ndarray, n: int) -> list[dict[str, Any]]:
    """Per object i (mask value i+1): pixel count and inclusive bounds ``[x0, y0, x1, y1]`` (None if empty)."""
    counts = np.bincount(mask.ravel(), minlength=n + 2)
    out = []
    for i in range(n):
        ys, xs = np.nonzero(mask == i + 1)
        box = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None
        out.append({"mask_index": i + 1, "mask_pixels": int(counts[i + 1]), "bbox_xyxy": box})
    return out


# ---- Blender session ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet_stdout():
    """Blender prints render progress and 'Saved:' lines on fd 1; keep them off the terminal."""
    try:
        fd = os.dup(1)
    except OSError:  # pragma: no cover
        yield
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        sys.stdout.flush()
        os.dup2(devnull, 1)
        os.close(devnull)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(fd, 1)
        os.close(fd)


class _Session:
    """One Blender scene built from the base scene: objects, index-pass masks, projection, final renders."""

    def __init__(self, assets: ClevrAssets, width: int, height: int, threads: int):
        self.bpy = require_bpy()
        self.assets = assets
        self.width, self.height, self.threads = int(width), int(height), int(threads)
        self.objects: list[Any] = []
        self.mask_dir = Path(tempfile.mkdtemp(prefix="logicval_blender_"))
        self._reset()

    def close(self) -> None:
        shutil.rmtree(self.mask_dir, ignore_errors=True)

    # scene set-up
    def _reset(self) -> None:
        bpy, a = self.bpy, self.assets
        with _quiet_stdout():
            bpy.ops.wm.open_mainfile(filepath=str(a.base_scene))
            for group in dict(a.materials).values():
                if group not in bpy.data.node_groups:
                    bpy.ops.wm.append(directory=f"{a.material_file(group)}/NodeTree/", filename=group)
        missing = [g for g in dict(a.materials).values() if g not in bpy.data.node_groups]
        if missing:
            raise AssetsError(f"material files of {a.root} hold no node group(s) {missing}: {ASSETS_HINT}")
        sc = bpy.context.scene
        self.scene = sc
        r = sc.render
        r.engine = "CYCLES"
        r.resolution_x, r.resolution_y, r.resolution_percentage = self.width, self.height, 100
        r.threads_mode = "FIXED"
        r.threads = self.threads
        r.image_settings.file_format = "PNG"
        r.image_settings.color_mode = "RGB"
        r.image_settings.color_depth = "8"
        for attr in dir(r):  # no date, render time or file path in the PNG metadata: byte-identical reruns
            if attr.startswith("use_stamp"):
                with contextlib.suppress(AttributeError, TypeError):
                    setattr(r, attr, False)
        cy = sc.cycles
        cy.device = "CPU"
        cy.blur_glossy = BLUR_GLOSSY
        cy.transparent_max_bounces = TRANSPARENT_BOUNCES
        cy.use_adaptive_sampling = False
        cy.use_animated_seed = False
        self.bounces = (cy.max_bounces, cy.diffuse_bounces, cy.glossy_bounces, cy.transmission_bounces)
        for name in ("Camera", "Ground", *LAMPS):
            if name not in bpy.data.objects:
                raise AssetsError(f"{a.base_scene} has no object {name!r}: {ASSETS_HINT}")
        self.camera = bpy.data.objects["Camera"]
        sc.view_layers[0].use_pass_object_index = True
        self._compositor()

    def _compositor(self) -> None:
        bpy, sc = self.bpy, self.scene
        tree = bpy.data.node_groups.new("LogicValMasks", "CompositorNodeTree")
        sc.compositing_node_group = tree
        layers = tree.nodes.new("CompositorNodeRLayers")
        scale = tree.nodes.new("ShaderNodeMath")
        scale.operation = "DIVIDE"
        scale.inputs[1].default_value = 255.0
        tree.links.new(layers.outputs["Object Index"], scale.inputs[0])
        out = tree.nodes.new("CompositorNodeOutputFile")
        out.format.media_type = "IMAGE"
        out.format.file_format = "PNG"
        out.format.color_mode = "BW"
        out.format.color_depth = "8"
        out.save_as_render = False
        out.directory = str(self.mask_dir)
        out.file_name = "index"
        out.file_output_items.new("FLOAT", "mask")
        tree.links.new(scale.outputs[0], out.inputs["mask"])
        self.mask_path = self.mask_dir / "indexmask.png"

    def update(self) -> None:
        self.bpy.context.view_layer.update()

    # camera, lamps, floor
    def move(self, name: str, delta: Sequence[float]) -> None:
        obj = self.bpy.data.objects[name]
        for k in range(3):
            obj.location[k] += float(delta[k])

    def place_camera(self, elevation_deg: float, distance_scale: float) -> None:
        """Keep the camera's azimuth around its target, set its elevation and scale its distance."""
        cam = self.camera
        loc = np.array(cam.location, dtype=np.float64)
        dist = float(np.linalg.norm(loc)) * distance_scale
        az = math.atan2(loc[1], loc[0])
        el = math.radians(elevation_deg)
        cam.location = (dist * math.cos(el) * math.cos(az), dist * math.cos(el) * math.sin(az), dist * math.sin(el))

    def scale_lights(self, factor: float) -> None:
        for name in LAMPS:
            self.bpy.data.objects[name].data.energy *= factor
        for obj in self.bpy.data.objects:
            if obj.type == "LIGHT" and obj.name not in LAMPS:
                obj.data.energy *= factor

    def floor_color(self, rgb: Sequence[float], glow: float = 0.0) -> None:
        """A diffuse floor of colour ``rgb``, plus an emission of strength ``glow`` (a white studio backdrop)."""
        ground = self.bpy.data.objects["Ground"]
        mat = self.bpy.data.materials.new("LogicValFloor")
        nodes, links = mat.node_tree.nodes, mat.node_tree.links
        out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
        diffuse = nodes.new("ShaderNodeBsdfDiffuse")
        diffuse.inputs["Color"].default_value = (*(float(c) for c in rgb), 1.0)
        shader = diffuse.outputs["BSDF"]
        if glow > 0:
            emit = nodes.new("ShaderNodeEmission")
            emit.inputs["Color"].default_value = (*(float(c) for c in rgb), 1.0)
            emit.inputs["Strength"].default_value = float(glow)
            add = nodes.new("ShaderNodeAddShader")
            links.new(shader, add.inputs[0])
            links.new(emit.outputs["Emission"], add.inputs[1])
            shader = add.outputs["Shader"]
        links.new(shader, out.inputs["Surface"])
        ground.data.materials.clear()
        ground.data.materials.append(mat)

    def directions(self) -> dict[str, list[float]]:
        """The ground-plane directions of the camera axes, as CLEVR records them."""
        from mathutils import Vector  # noqa: PLC0415

        self.update()
        q = self.camera.matrix_world.to_quaternion()
        normal = Vector((0.0, 0.0, 1.0))
        behind = q @ Vector((0.0, 0.0, -1.0))
        left = q @ Vector((-1.0, 0.0, 0.0))
        up = q @ Vector((0.0, 1.0, 0.0))
        pb = (behind - behind.project(normal)).normalized()
        pl = (left - left.project(normal)).normalized()
        pu = up.project(normal).normalized()
        d = {"behind": pb, "front": -pb, "left": pl, "right": -pl, "above": pu, "below": -pu}
        return {k: [float(c) for c in v] for k, v in d.items()}

    def project(self, point: Sequence[float]) -> list[float]:
        """CLEVR's pixel_coords: [round(x * W), round(H - y * H), depth] of a world point."""
        from bpy_extras.object_utils import world_to_camera_view  # noqa: PLC0415
        from mathutils import Vector  # noqa: PLC0415

        v = world_to_camera_view(self.scene, self.camera, Vector(tuple(float(c) for c in point)))
        return [int(round(v.x * self.width)), int(round(self.height - v.y * self.height)), float(v.z)]

    # objects
    def clear_objects(self) -> None:
        for obj in self.objects:
            self.bpy.data.objects.remove(obj, do_unlink=True)
        self.objects = []

    def add_object(self, obj_name: str, r: float, x: float, y: float, rotation_deg: float, group: str,
                   rgba: Sequence[float], pass_index: int) -> Any:
        bpy = self.bpy
        before = set(bpy.data.objects.keys())
        with _quiet_stdout():
            bpy.ops.wm.append(directory=f"{self.assets.shape_file(obj_name)}/Object/", filename=obj_name)
        new = [bpy.data.objects[k] for k in bpy.data.objects.keys() if k not in before]
        if not new:
            raise AssetsError(f"{self.assets.shape_file(obj_name)} holds no object {obj_name!r}: {ASSETS_HINT}")
        obj = new[0]
        obj.rotation_euler[2] = rotation_deg  # the original generator applies degrees as radians
        obj.scale = (r, r, r)
        obj.location = (x, y, r)
        obj.pass_index = pass_index
        mat = bpy.data.materials.new(f"LogicVal_{pass_index}")
        nodes = mat.node_tree.nodes
        out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
        for n in [n for n in nodes if n.name != out.name]:
            nodes.remove(n)
        g = nodes.new("ShaderNodeGroup")
        g.node_tree = bpy.data.node_groups[group]
        g.inputs["Color"].default_value = tuple(rgba)
        mat.node_tree.links.new(g.outputs["Shader"], out.inputs["Surface"])
        if "Normal" in g.inputs:  # a group's unlinked Normal input would pass a zero normal
            geo = nodes.new("ShaderNodeNewGeometry")
            mat.node_tree.links.new(geo.outputs["Normal"], g.inputs["Normal"])
        obj.data.materials.clear()
        obj.data.materials.append(mat)
        self.objects.append(obj)
        return obj

    def build(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self.clear_objects()
        for i, o in enumerate(objects):
            self.add_object(o["object"], o["r"], o["x"], o["y"], o["rotation"], o["group"],
                            self.assets.rgba(o["color"]), i + 1)
        self.update()

    # renders
    def _read_mask(self) -> np.ndarray:
        from PIL import Image  # noqa: PLC0415

        with Image.open(self.mask_path) as im:
            return np.array(im.convert("L"), dtype=np.uint8)

    def index_mask(self, seed: int = 0) -> np.ndarray:
        """A 1-sample object-index render (no denoiser, no bounces): the instance mask only."""
        cy = self.scene.cycles
        saved = (cy.samples, cy.use_denoising, cy.seed)
        cy.samples, cy.use_denoising, cy.seed = 1, False, int(seed)
        cy.max_bounces = cy.diffuse_bounces = cy.glossy_bounces = cy.transmission_bounces = 0
        try:
            with _quiet_stdout():
                self.bpy.ops.render.render(write_still=False)
        finally:
            cy.samples, cy.use_denoising, cy.seed = saved
            cy.max_bounces, cy.diffuse_bounces, cy.glossy_bounces, cy.transmission_bounces = self.bounces
        return self._read_mask()

    def render(self, image_path: str | os.PathLike, samples: int, denoise: bool, seed: int) -> np.ndarray:
        """The final render to ``image_path``; returns the instance mask of the same render."""
        cy = self.scene.cycles
        cy.samples = int(samples)
        cy.use_denoising = bool(denoise)
        if denoise:
            cy.denoiser = "OPENIMAGEDENOISE"
        cy.seed = int(seed)
        self.scene.render.filepath = str(image_path)
        with _quiet_stdout():
            self.bpy.ops.render.render(write_still=True)
        return self._read_mask()


# ---- one dataset image -------------------------------------------------------------------------------------
def _name(index: int) -> str:
    return f"{PREFIX}_{index:06d}"


def _atomic_json(path: Path, obj: Any, indent: int | None = 2) -> None:
    atomic_write_bytes(path, json.dumps(obj, indent=indent).encode("utf-8"))


def _bpy_version() -> str:
    return require_bpy().app.version_string


def render_image(config: RenderConfig, index: int, assets: ClevrAssets, out: Path) -> dict[str, Any]:
    """Render image ``index`` of ``config`` into ``out`` (images/, masks/, scenes/); return its scene dict.

    The scene JSON is written last: its presence marks the image finished.
    """
    from PIL import Image  # noqa: PLC0415

    plan = plan_image(config, index)
    _, obj_rng = _rngs(config.seed, index)
    sess = _Session(assets, plan.width, plan.height, config.threads)
    try:
        extra = plan.randomised
        if config.randomise:
            sess.place_camera(extra["camera_elevation_deg"], extra["camera_distance_scale"])
            sess.scale_lights(extra["light_scale"])
            if extra["floor_rgb"] is not None:
                sess.floor_color(extra["floor_rgb"], extra["floor_glow"])
        sess.move("Camera", plan.camera_jitter)
        for name, d in plan.lamp_jitter.items():
            sess.move(name, d)
        directions = sess.directions()
        need = min_pixels_for(plan.width, plan.height)

        def visible(objs: list[dict[str, Any]]) -> bool:
            sess.build(objs)
            mask = sess.index_mask(plan.cycles_seed)
            counts = np.bincount(mask.ravel(), minlength=len(objs) + 1)
            return bool(all(counts[i + 1] >= need for i in range(len(objs))))

        objs, restarts = sample_objects(obj_rng, plan.n_objects, assets, directions, visible=visible)
        name = _name(index)
        img_dir, mask_dir, scene_dir = out / "images", out / "masks", out / "scenes"
        tmp_img = img_dir / f".{name}.render.png"
        mask = sess.render(tmp_img, config.samples, config.denoise, plan.cycles_seed)
        objects = []
        for i, o in enumerate(objs):
            loc = [float(c) for c in sess.objects[i].location]
            objects.append({"shape": o["shape"], "size": o["size"], "material": o["material"],
                            "3d_coords": loc, "rotation": o["rotation"], "pixel_coords": sess.project(loc),
                            "color": o["color"]})
        for o, st in zip(objects, mask_stats(mask, len(objects))):
            o.update(st)
            px, py = o["pixel_coords"][0], o["pixel_coords"][1]
            inside = 0 <= px < plan.width and 0 <= py < plan.height
            o["mask_at_pixel_coords"] = int(mask[py, px]) if inside else 0
        settings = {"samples": config.samples, "denoise": int(config.denoise), "threads": config.threads,
                    "width": plan.width, "height": plan.height, "adaptive": 0.0, "bpy": _bpy_version(),
                    "seed": config.seed, "cycles_seed": plan.cycles_seed, "randomise": int(config.randomise),
                    "min_objects": config.min_objects, "max_objects": config.max_objects,
                    "min_pixels_per_object": need, "restarts": restarts,
                    "camera_jitter": list(plan.camera_jitter),
                    "lamp_jitter": {k: list(v) for k, v in plan.lamp_jitter.items()}}
        if config.randomise:
            settings.update({k: v for k, v in extra.items() if k != "image_size"})
        scene = {"split": "blender-randomise" if config.randomise else "blender", "image_index": index,
                 "image_filename": f"{name}.png", "objects": objects, "directions": directions,
                 "relationships": compute_relationships(objects, directions),
                 "mask_filename": f"masks/{name}.png", "render_settings": settings, "seed": config.seed}
        # re-encoded without Blender's metadata (render times): reruns give byte-identical files
        with Image.open(tmp_img) as im:
            rgb = im.convert("RGB")
        os.unlink(tmp_img)
        atomic_write_bytes(mask_dir / f"{name}.png", _png_bytes(Image.fromarray(mask)))
        atomic_write_bytes(img_dir / f"{name}.png", _png_bytes(rgb))
        _atomic_json(scene_dir / f"{name}.json", scene)
        return scene
    finally:
        sess.close()


def _png_bytes(im) -> bytes:
    import io  # noqa: PLC0415

    b = io.BytesIO()
    im.save(b, format="PNG")
    return b.getvalue()


def _finished(out: Path, index: int) -> bool:
    name = _name(index)
    return all((out / d / f"{name}.{ext}").is_file()
               for d, ext in (("images", "png"), ("masks", "png"), ("scenes", "json")))


def _check_same_settings(out: Path, config: RenderConfig) -> None:
    """Refuse to add images to a folder rendered with other settings (a resume must not mix two runs)."""
    manifest = out / "render_config.json"
    want = config.fingerprint()
    if manifest.is_file():
        try:
            have = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            raise ValueError(f"{manifest} is unreadable; remove it or use another --out") from None
        if have != want:
            diff = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
            raise ValueError(f"{out} holds renders made with other settings {diff} (theirs, yours); "
                             f"use another --out or the same settings")
    else:
        out.mkdir(parents=True, exist_ok=True)
        _atomic_json(manifest, want)


def combine_scenes(out: str | os.PathLike, config: RenderConfig | None = None) -> dict[str, Any]:
    """Write ``scenes.json`` with every finished scene of the folder, by image index; return it."""
    out = Path(out)
    scenes = []
    for path in sorted((out / "scenes").glob(f"{PREFIX}_*.json")):
        try:
            scenes.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"scene file {path} is unreadable ({e}); delete it and rerun to re-render") from None
    scenes.sort(key=lambda s: s["image_index"])
    split = scenes[0]["split"] if scenes else ("blender-randomise" if config and config.randomise else "blender")
    combined = {"info": {"split": split, "renderer": f"bpy {_bpy_version()} Cycles CPU", "count": len(scenes),
                         "date": _dt.date.today().isoformat(), "version": "1.0",
                         "license": "Creative Commons Attribution (CC BY 4.0)",
                         "assets": "CLEVR generator assets (BSD, Johnson et al., CVPR 2017)",
                         **({"render_config": config.fingerprint()} if config else {})},
                "scenes": scenes}
    _atomic_json(out / "scenes.json", combined, indent=None)
    return combined


def render_dataset(out: str | os.PathLike, num_images: int, config: RenderConfig, assets: str | os.PathLike |
                   ClevrAssets, start_index: int = 0, chunk: int = 20, progress: bool = True) -> dict[str, int]:
    """Render images ``start_index .. start_index + num_images - 1`` into ``out``; skip finished ones.

    Work goes in chunks of ``chunk`` images; ``scenes.json`` is rewritten (atomically) after every chunk that
    rendered something, so a long background run always leaves a usable combined file. Returns counts
    ``{"rendered": .., "skipped": ..}``.
    """
    if num_images < 1:
        raise ValueError(f"--num-images must be >= 1, got {num_images}")
    if start_index < 0:
        raise ValueError(f"--start-index must be >= 0, got {start_index}")
    if chunk < 1:
        raise ValueError(f"--chunk must be >= 1, got {chunk}")
    config.validate()
    assets = load_assets(assets)
    require_bpy()
    out = Path(out)
    _check_same_settings(out, config)
    for d in ("images", "masks", "scenes"):
        (out / d).mkdir(parents=True, exist_ok=True)
    indices = list(range(start_index, start_index + num_images))
    todo = [i for i in indices if not _finished(out, i)]
    counts = {"rendered": 0, "skipped": len(indices) - len(todo)}
    from tqdm.auto import tqdm  # noqa: PLC0415

    bar = tqdm(total=len(indices), initial=counts["skipped"], desc="render-clevr", unit="img",
               disable=not progress)
    try:
        for c0 in range(0, len(todo), chunk):
            for index in todo[c0:c0 + chunk]:
                render_image(config, index, assets, out)
                counts["rendered"] += 1
                bar.update(1)
            combine_scenes(out, config)
        if not todo and not (out / "scenes.json").is_file():
            combine_scenes(out, config)
    finally:
        bar.close()
    return counts


# ---- the oracle in the CLEVR look --------------------------------------------------------------------------
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
        self.last_info: dict[str, Any] | None = None  # layouts tried, sizes, 3D positions of the last render

    def close(self) -> None:
        """Nothing to release in-process (the out-of-process renderer has the same interface)."""

    def __enter__(self) -> "BlenderSceneRenderer":
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
        from logicval_hf import Scene, SceneObject
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
        sess = _Session(self.assets, W, H, self.threads)
        try:
            for name, d in lamp.items():
                sess.move(name, d)
            sess.update()
            if n == 0:
                rgb = self._final(sess)[0]
                self.last_info = {"layouts_tried": 0, "sizes": [], "3d_coords": [], "rotation": []}
                return rgb, Scene((W, H), (), scene.domain)
            shapes, groups = dict(self.assets.shapes), dict(self.assets.materials)

            def want(centres: Sequence[tuple[float, float]]) -> bool:
                if any(region_of(cx, cy, W, H) != regions[i] for i, (cx, cy) in enumerate(centres)):
                    return False
                for order, k in ((x_order, 0), (y_order, 1)):  # strict: a tie would drop a relation
                    if any(not centres[a][k] < centres[b][k] for a, b in zip(order, order[1:])):
                        return False
                return True

            proj = _GroundProjector(sess)
            tries = 0
            for plan in size_plans:
                size_names = [fixed[i] or plan[i] for i in range(n)]
                radii = np.array([sizes[s] for s in size_names])
                reach = np.array([r * (CUBE_REACH if o.attributes["shape"] == "cube" else 1.0)
                                  for r, o in zip(radii, scene.objects)])
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
                                for o, s in zip(scene.objects, stats))
                    self.last_info = {"layouts_tried": tries, "sizes": size_names,
                                      "3d_coords": [[float(c) for c in ob.location] for ob in sess.objects],
                                      "rotation": rotations}
                    return rgb, Scene((W, H), out, scene.domain)
        finally:
            sess.close()
        raise BlenderLayoutError(
            f"blender render: could not place {n} objects so that their regions and left/right/front/behind "
            f"orders survive the projection ({tries} layouts tried)")

    def _final(self, sess: _Session) -> tuple[np.ndarray, np.ndarray]:
        """The full render: RGB array and instance mask."""
        from PIL import Image  # noqa: PLC0415

        fd, tmp = tempfile.mkstemp(suffix=".png")
        os.close(fd)
        try:
            mask = sess.render(tmp, self.samples, self.denoise, self.seed)
            with Image.open(tmp) as im:
                return np.array(im.convert("RGB"), dtype=np.uint8), mask
        finally:
            os.unlink(tmp)

    def _layout(self, proj: "_GroundProjector", x_order, y_order, cols, rows, radii: np.ndarray,
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
        d = np.linalg.norm(pts[:, :, None, :] - pts[:, None, :, :], axis=-1) - reach[None, :, None] - reach[None, None, :]
        d[:, np.arange(n), np.arange(n)] = np.inf
        clear = d.reshape(k, -1).min(axis=1) if n > 1 else np.full(k, np.inf)
        far = np.linalg.norm(pts, axis=-1).max(axis=1) > 12.0
        clear[~ok | far | ~np.isfinite(pts).all(axis=(1, 2))] = -np.inf
        if not wide:  # the objects' estimated image extent keeps off the borders
            half = proj.apparent_radius(pts, radii[None, :], 1.6 * reach[None, :])
            margin = np.minimum.reduce([cand[..., 0] - half, W - cand[..., 0] - half,
                                        cand[..., 1] - half, H - cand[..., 1] - half])
            clear[~(np.nan_to_num(margin, nan=-1.0).min(axis=1) >= 1.0)] = -np.inf
        best = int(np.argmax(np.minimum(clear, 0.6) + 0.01 * rng.random(k)))
        if not clear[best] >= 0.05:
            return None
        return cand[best]


class _GroundProjector:
    """Camera rays through pixels and their intersection with horizontal planes (numpy, vectorised)."""

    def __init__(self, sess: _Session):
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
