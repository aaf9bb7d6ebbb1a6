"""One Blender scene for CLEVR renders (needs ``bpy``): the base scene, objects, camera, lamps, floor, renders.

Everything here runs inside Blender as a Python module (``bpy`` 5.0.1, numpy < 2; see `blender_process` for
running it from the main environment). What is drawn is decided elsewhere (`clevr_sampling`, pure); this module
only builds it.

Two Blender 5 details the 2.78 generator did not need: the material groups' ``Normal`` input is linked to the
shading normal (left unlinked it passes a zero normal and renders black), and the base scene's camera and lamps
carry track-to constraints aimed at the origin (kept for CLEVR, removed where the t2i look aims the camera itself).
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.generation.clevr_assets import ASSETS_HINT, AssetsError, ClevrAssets
from logicval_hf.generation.clevr_sampling import LAMPS

__all__ = ["BlenderUnavailable", "INSTALL_HINT", "Session", "require_bpy"]

INSTALL_HINT = ("bpy needs numpy<2, so give it an environment of its own: python3 -m venv .venv-blender && "
                ".venv-blender/bin/pip install bpy==5.0.1 pillow tqdm, then set "
                "LOGICVAL_BLENDER_PYTHON=.venv-blender/bin/python")
BLUR_GLOSSY = 2.0
TRANSPARENT_BOUNCES = 8
HORIZON_PLANE = 60.0   # half side of the flat floor that replaces the curved backdrop when a horizon shows


class BlenderUnavailable(ValueError):
    """``bpy`` (Blender as a Python module) is not installed."""


def require_bpy():
    """Import and return ``bpy``, or raise `BlenderUnavailable` naming what to install.

    The Blender environment also needs pillow and tqdm (the renders' PNG files and progress bar); a bare ``pip
    install bpy`` lacks them, so they are checked here, before the first render, not deep inside one.
    """
    try:
        import bpy
    except ImportError:
        raise BlenderUnavailable(
            f"Blender renders need bpy (Blender 5.0.1 as a Python module, Python 3.11); {INSTALL_HINT}") from None
    missing = [pip_name for module, pip_name in (("PIL", "pillow"), ("tqdm", "tqdm"))
               if importlib.util.find_spec(module) is None]
    if missing:
        raise BlenderUnavailable(
            f"the Blender environment ({sys.executable}) has bpy but not {', '.join(missing)}: "
            f"{sys.executable} -m pip install {' '.join(missing)}")
    return bpy


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


class Session:
    """One Blender scene built from the base scene: objects, index-pass masks, projection, final renders."""

    def __init__(self, assets: ClevrAssets, width: int, height: int, threads: int):
        self.bpy = require_bpy()
        self.assets = assets
        self.width, self.height, self.threads = int(width), int(height), int(threads)
        self.objects: list[Any] = []
        #: other things built with the objects (distractors): removed with them
        self.extras: list[Any] = []
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
    def move(self, name: str, delta: Sequence[float] | np.ndarray) -> None:
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
        """A diffuse floor of colour ``rgb``, plus an emission of strength ``glow`` (the randomise profile's)."""
        self.floor_material(rgb, glow)

    def directions(self) -> dict[str, list[float]]:
        """The ground-plane directions of the camera axes, as CLEVR records them."""
        from mathutils import Vector

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
        from bpy_extras.object_utils import world_to_camera_view
        from mathutils import Vector

        v = world_to_camera_view(self.scene, self.camera, Vector(tuple(float(c) for c in point)))
        return [round(float(v.x) * self.width), round(self.height - float(v.y) * self.height), float(v.z)]

    # objects
    def clear_objects(self) -> None:
        for obj in [*self.objects, *self.extras]:
            self.bpy.data.objects.remove(obj, do_unlink=True)
        self.objects, self.extras = [], []

    def add_object(self, obj_name: str, r: float, x: float, y: float, rotation_deg: float, group: str,
                   rgba: Sequence[float], pass_index: int, stretch: Sequence[float] = (1.0, 1.0, 1.0),
                   variant: Mapping[str, Any] | None = None, finish: Mapping[str, Any] | None = None) -> Any:
        """Add one object: the assets' mesh ``obj_name`` (or a ``variant`` mesh: ``{"shape": "cube" | "cylinder",
        "bevel": width}``) of radius ``r`` stretched by ``stretch`` per axis, standing on the floor at (x, y), in
        the material node group ``group`` (with ``finish``: another finish of it, `_finish_group`)."""
        bpy = self.bpy
        if variant is not None:
            obj = self._variant_mesh(variant["shape"], float(variant["bevel"]), pass_index)
        else:
            before = set(bpy.data.objects.keys())
            with _quiet_stdout():
                bpy.ops.wm.append(directory=f"{self.assets.shape_file(obj_name)}/Object/", filename=obj_name)
            new = [o for o in bpy.data.objects if o.name not in before]  # a bpy collection iterates its objects
            if not new:
                raise AssetsError(f"{self.assets.shape_file(obj_name)} holds no object {obj_name!r}: {ASSETS_HINT}")
            obj = new[0]
        sx, sy, sz = (float(v) for v in stretch)
        obj.rotation_euler[2] = rotation_deg  # the original generator applies degrees as radians
        obj.scale = (r * sx, r * sy, r * sz)
        obj.location = (x, y, r * sz)
        obj.pass_index = pass_index
        obj.data.materials.clear()
        obj.data.materials.append(self.group_material(f"LogicVal_{pass_index}", group, rgba, finish))
        self.objects.append(obj)
        return obj

    def group_material(self, name: str, group: str, rgba: Sequence[float],
                       finish: Mapping[str, Any] | None = None) -> Any:
        """A new material of the assets' node ``group`` (Rubber, MyMetal) in colour ``rgba`` (with ``finish``:
        another finish of it, `_finish_group`)."""
        mat = self.bpy.data.materials.new(name)
        nodes = mat.node_tree.nodes
        out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
        for n in [n for n in nodes if n.name != out.name]:
            nodes.remove(n)
        g = nodes.new("ShaderNodeGroup")
        g.node_tree = self.bpy.data.node_groups[group]
        g.inputs["Color"].default_value = tuple(rgba)
        if finish is not None:
            self._finish_group(g, finish)
        mat.node_tree.links.new(g.outputs["Shader"], out.inputs["Surface"])
        if "Normal" in g.inputs:  # a group's unlinked Normal input would pass a zero normal
            geo = nodes.new("ShaderNodeNewGeometry")
            mat.node_tree.links.new(geo.outputs["Normal"], g.inputs["Normal"])
        return mat

    def _finish_group(self, g: Any, finish: Mapping[str, Any]) -> None:
        """Another finish of one object's material node ``g``: the rubber group's own Roughness and IOR inputs
        (``{"roughness", "ior"}``), or, for the metal group, which has none, a copy of the group whose glossy
        layers' roughnesses are scaled (``{"roughness_scale"}``; the shared group stays as it is)."""
        if "roughness_scale" in finish:
            tree = g.node_tree.copy()
            for node in tree.nodes:
                if node.type in ("BSDF_GLOSSY", "BSDF_ANISOTROPIC") and not node.inputs["Roughness"].is_linked:
                    rough = node.inputs["Roughness"]
                    rough.default_value = min(1.0, float(rough.default_value) * float(finish["roughness_scale"]))
            g.node_tree = tree
            return
        for name, key in (("Roughness", "roughness"), ("IOR", "ior")):
            if key in finish:
                if name not in g.inputs:
                    raise AssetsError(f"material group {g.node_tree.name!r} has no {name} input for a finish: "
                                      f"{ASSETS_HINT}")
                g.inputs[name].default_value = float(finish[key])

    def _variant_mesh(self, shape: str, bevel: float, pass_index: int) -> Any:
        """A cube (2 x 2 x 2) or cylinder (radius 1, height 2) with bevel width ``bevel``, built with bmesh:
        T2I models draw cubes and cylinders rounder or sharper than CLEVR's two meshes."""
        import bmesh

        bpy = self.bpy
        bm = bmesh.new()
        if shape == "cube":
            bmesh.ops.create_cube(bm, size=2.0)
        elif shape == "cylinder":
            bmesh.ops.create_cone(bm, cap_ends=True, cap_tris=False, segments=64, radius1=1.0, radius2=1.0,
                                  depth=2.0)
        else:
            raise ValueError(f"no mesh variant for shape {shape!r}")
        bm.normal_update()
        edges = [e for e in bm.edges if e.is_manifold and e.calc_face_angle(0.0) > 0.5]
        result = bmesh.ops.bevel(bm, geom=edges, offset=bevel, offset_type="OFFSET", segments=4, profile=0.5,
                                 affect="EDGES", clamp_overlap=True)
        rounded = set(result.get("faces", []))
        for f in bm.faces:  # rounded edges and a cylinder's side smooth, flat faces flat
            f.smooth = f in rounded or (shape == "cylinder" and abs(f.normal.z) < 0.5)
        me = bpy.data.meshes.new(f"LogicValVariant_{pass_index}")
        bm.to_mesh(me)
        bm.free()
        obj = bpy.data.objects.new(f"LogicValVariant_{pass_index}", me)
        self.scene.collection.objects.link(obj)
        return obj

    # the t2i look: camera, lamps, floor and horizon drawn per image
    def aim_camera(self, location: Sequence[float], target: Sequence[float], lens_mm: float) -> None:
        """Put the camera at ``location`` looking at ``target`` (upright), with focal length ``lens_mm``."""
        from mathutils import Vector

        cam = self.camera
        cam.constraints.clear()  # the base scene's track-to constraint would keep it aimed at the origin
        cam.location = tuple(float(v) for v in location)
        direction = Vector(tuple(float(v) for v in target)) - Vector(cam.location)
        cam.rotation_mode = "QUATERNION"
        cam.rotation_quaternion = direction.to_track_quat("-Z", "Y")
        cam.data.lens = float(lens_mm)
        self.update()

    def light_rig(self, lights: Mapping[str, Any]) -> None:
        """Turn the lamp rig about the vertical axis, raise or lower it, and set energies, colours and sizes."""
        bpy = self.bpy
        phi = math.radians(float(lights["rig_azimuth_deg"]))
        c, s = math.cos(phi), math.sin(phi)
        h = float(lights["rig_height"])
        energy, ratio = float(lights["energy_scale"]), float(lights["key_ratio"])
        gain = {"Lamp_Key": energy * math.sqrt(ratio), "Lamp_Fill": energy / math.sqrt(ratio), "Lamp_Back": energy}
        colour = {"Lamp_Key": lights["key_rgb"], "Lamp_Fill": lights["fill_rgb"],
                  "Lamp_Back": [0.5 * (a + b) for a, b in zip(lights["key_rgb"], lights["fill_rgb"], strict=True)]}
        for name in LAMPS:
            lamp = bpy.data.objects[name]
            x, y, z = lamp.location
            lamp.location = (c * x - s * y, s * x + c * y, max(0.8, z * h))
            lamp.data.energy *= gain[name]
            lamp.data.color = tuple(float(v) for v in colour[name])
            if hasattr(lamp.data, "size"):
                lamp.data.size *= float(lights["size_scale"])
                if hasattr(lamp.data, "size_y"):
                    lamp.data.size_y *= float(lights["size_scale"])
        for obj in bpy.data.objects:
            if obj.type == "LIGHT" and obj.name not in LAMPS:  # the base scene's sun
                obj.rotation_euler[2] += phi
                obj.data.energy *= energy * float(lights["sun_scale"])
                if obj.data.type == "SUN":
                    obj.data.angle = 0.02 if lights["shadows"] == "hard" else 0.25
        self.update()

    def world_light(self, rgb: Sequence[float], strength: float) -> None:
        """The world's background colour and strength (the base scene's is black at strength 0)."""
        world = self.scene.world
        bg = next(n for n in world.node_tree.nodes if n.type == "BACKGROUND")
        bg.inputs["Color"].default_value = (*(float(v) for v in rgb), 1.0)
        bg.inputs["Strength"].default_value = float(strength)
        if "Weight" in bg.inputs:
            bg.inputs["Weight"].default_value = 1.0

    def world_sky(self, zenith_rgb: Sequence[float], horizon_rgb: Sequence[float], softness: float,
                  strength: float) -> None:
        """A graded world: ``horizon_rgb`` at and below the horizon blending into ``zenith_rgb`` over a height
        ``softness`` of the view direction's z, at ``strength``: the environment metals reflect and that lights
        the scene, where a flat world reflects as one colour."""
        world = self.scene.world
        nodes, links = world.node_tree.nodes, world.node_tree.links
        bg = next(n for n in nodes if n.type == "BACKGROUND")
        coords = nodes.new("ShaderNodeTexCoord")
        xyz = nodes.new("ShaderNodeSeparateXYZ")
        ramp = nodes.new("ShaderNodeMapRange")
        ramp.clamp = True
        ramp.inputs["From Min"].default_value = 0.0
        ramp.inputs["From Max"].default_value = max(1e-3, float(softness))
        mix = nodes.new("ShaderNodeMix")
        mix.data_type = "RGBA"
        mix.inputs["A"].default_value = (*(float(v) for v in horizon_rgb), 1.0)
        mix.inputs["B"].default_value = (*(float(v) for v in zenith_rgb), 1.0)
        links.new(coords.outputs["Generated"], xyz.inputs["Vector"])
        links.new(xyz.outputs["Z"], ramp.inputs["Value"])
        links.new(ramp.outputs["Result"], mix.inputs["Factor"])
        links.new(mix.outputs["Result"], bg.inputs["Color"])
        bg.inputs["Strength"].default_value = float(strength)
        if "Weight" in bg.inputs:
            bg.inputs["Weight"].default_value = 1.0

    def flat_floor(self, half_side: float = HORIZON_PLANE) -> None:
        """Replace the curved backdrop (it faces the CLEVR camera only) by a flat square floor of ``half_side``;
        a small one shows its far edge against the world colour: a horizon."""
        import bmesh

        bpy = self.bpy
        ground = bpy.data.objects["Ground"]
        bm = bmesh.new()
        bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=float(half_side))
        me = bpy.data.meshes.new("LogicValFlatFloor")
        bm.to_mesh(me)
        bm.free()
        plane = bpy.data.objects.new("LogicValFlatFloor", me)
        self.scene.collection.objects.link(plane)
        for m in ground.data.materials:
            plane.data.materials.append(m)
        ground.hide_render = True
        self.floor_object = plane

    def floor_material(self, rgb: Sequence[float], glow: float = 0.0,
                       texture: Mapping[str, Any] | None = None) -> None:
        """A diffuse floor of colour ``rgb`` (mildly ``texture``d: noise, wave or checker of contrast c, the
        albedo varying in [1 - c, 1 + c] x rgb), plus an emission of strength ``glow`` (a white studio floor)."""
        floor = getattr(self, "floor_object", None) or self.bpy.data.objects["Ground"]
        mat = self.bpy.data.materials.new("LogicValFloor")
        nodes, links = mat.node_tree.nodes, mat.node_tree.links
        out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
        for n in [n for n in nodes if n.name != out.name]:
            nodes.remove(n)
        diffuse = nodes.new("ShaderNodeBsdfDiffuse")
        base = [float(c) for c in rgb]
        diffuse.inputs["Color"].default_value = (*base, 1.0)
        if texture is not None:
            coords = nodes.new("ShaderNodeTexCoord")
            kind = {"noise": "ShaderNodeTexNoise", "wave": "ShaderNodeTexWave", "checker": "ShaderNodeTexChecker"}
            tex = nodes.new(kind[texture["pattern"]])
            tex.inputs["Scale"].default_value = float(texture["scale"])
            links.new(coords.outputs["Object"], tex.inputs["Vector"])
            mix = nodes.new("ShaderNodeMix")
            mix.data_type = "RGBA"
            c = float(texture["contrast"])
            mix.inputs["A"].default_value = (*(min(1.0, v * (1 - c)) for v in base), 1.0)
            mix.inputs["B"].default_value = (*(min(1.0, v * (1 + c)) for v in base), 1.0)
            links.new(tex.outputs["Fac"], mix.inputs["Factor"])
            links.new(mix.outputs["Result"], diffuse.inputs["Color"])
        shader = diffuse.outputs["BSDF"]
        if glow > 0:
            emit = nodes.new("ShaderNodeEmission")
            emit.inputs["Color"].default_value = (*base, 1.0)
            emit.inputs["Strength"].default_value = float(glow)
            add = nodes.new("ShaderNodeAddShader")
            links.new(shader, add.inputs[0])
            links.new(emit.outputs["Emission"], add.inputs[1])
            shader = add.outputs["Shader"]
        links.new(shader, out.inputs["Surface"])
        floor.data.materials.clear()
        floor.data.materials.append(mat)

    def build(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self.clear_objects()
        for i, o in enumerate(objects):
            self.add_object(o["object"], o["r"], o["x"], o["y"], o["rotation"], o["group"],
                            self.assets.rgba(o["color"]), i + 1, o.get("stretch", (1.0, 1.0, 1.0)),
                            o.get("variant"), o.get("finish"))
        self.update()

    # renders
    def _read_mask(self) -> np.ndarray:
        from PIL import Image

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
