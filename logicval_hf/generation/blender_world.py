"""World kinds built in Blender (needs ``bpy``): the world shaders and the studio's cyclorama.

What each kind draws is decided in `clevr_worlds` (pure); this module builds one drawn world in a `Session`'s
scene. Every world is a shader of the view direction at infinity (seen by camera and glossy rays alike, and
lighting the scene), except the studio's backdrop, a mesh behind the objects placed once the camera is framed.
The backdrop never blocks a shadow ray (lamps the rig turned behind it still light the scene) and stands past
every object, so it hides no object from the camera and the instance masks stay the objects' own.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from logicval_hf.generation.blender_session import Session
from logicval_hf.generation.clevr_sampling import CUBE_REACH

__all__ = ["build_world", "reach_of", "studio_backdrop"]

SWEEP_SEGMENTS = 16


class _Nodes:
    """A node tree's nodes and links with one-line helpers for the math the worlds need."""

    def __init__(self, tree: Any):
        self.nodes, self.links = tree.nodes, tree.links

    def new(self, kind: str, **inputs: Any) -> Any:
        node = self.nodes.new(kind)
        for name, value in inputs.items():
            node.inputs[name].default_value = value
        return node

    def math(self, op: str, a: Any, b: float | Any = 0.0) -> Any:
        """``op(a, b)`` of two sockets or numbers; returns the output socket."""
        node = self.nodes.new("ShaderNodeMath")
        node.operation = op
        for k, v in enumerate((a, b)):
            if isinstance(v, (int, float)):
                node.inputs[k].default_value = float(v)
            else:
                self.links.new(v, node.inputs[k])
        return node.outputs[0]

    def mix(self, factor: Any, a: Any, b: Sequence[float]) -> Any:
        """``a`` (a colour socket) where ``factor`` is 0, the colour ``b`` where it is 1."""
        node = self.nodes.new("ShaderNodeMix")
        node.data_type = "RGBA"
        self.links.new(factor, node.inputs["Factor"])
        self.links.new(a, node.inputs["A"])
        node.inputs["B"].default_value = (*(float(v) for v in b), 1.0)
        return node.outputs["Result"]


def _rgba(rgb: Sequence[float]) -> tuple[float, float, float, float]:
    r, g, b = (float(v) for v in rgb)
    return r, g, b, 1.0


def _world(sess: Session) -> tuple[_Nodes, Any]:
    """The scene world's node tree and its Background node (weight 1: Blender 5's Background has one)."""
    tree = sess.scene.world.node_tree
    bg = next(n for n in tree.nodes if n.type == "BACKGROUND")
    if "Weight" in bg.inputs:
        bg.inputs["Weight"].default_value = 1.0
    return _Nodes(tree), bg


def _direction(n: _Nodes) -> tuple[Any, Any, Any]:
    """The view direction's z, azimuth and elevation (degrees) as sockets."""
    coords = n.new("ShaderNodeTexCoord")
    unit = n.nodes.new("ShaderNodeVectorMath")
    unit.operation = "NORMALIZE"
    n.links.new(coords.outputs["Generated"], unit.inputs[0])
    xyz = n.nodes.new("ShaderNodeSeparateXYZ")
    n.links.new(unit.outputs["Vector"], xyz.inputs["Vector"])
    z = xyz.outputs["Z"]
    azimuth = n.math("DEGREES", n.math("ARCTAN2", xyz.outputs["Y"], xyz.outputs["X"]))
    elevation = n.math("DEGREES", n.math("ARCSINE", z))
    return z, azimuth, elevation


def _patch_mask(n: _Nodes, azimuth: Any, elevation: Any, patch: Mapping[str, Any]) -> Any:
    """1 inside a patch of the world (azimuth within half its width of its centre, wrapped; elevation between
    its low and high), else 0."""
    inside = n.math("MULTIPLY", n.math("GREATER_THAN", elevation, float(patch["low_deg"])),
                    n.math("LESS_THAN", elevation, float(patch["high_deg"])))
    if float(patch.get("width_deg", 360.0)) >= 360.0:
        return inside
    off = n.math("SUBTRACT", n.math("FLOORED_MODULO", n.math("ADD", n.math("SUBTRACT", azimuth,
                                                                          float(patch["azimuth_deg"])), 180.0),
                                    360.0), 180.0)
    return n.math("MULTIPLY", inside, n.math("LESS_THAN", n.math("ABSOLUTE", off), 0.5 * float(patch["width_deg"])))


def _gradient(n: _Nodes, z: Any, sky: Mapping[str, Any]) -> Any:
    """The sky gradient's colour socket: the ground tone below the horizon, then the stops over the view
    direction's z (a colour ramp over z mapped from [-1, 1] to [0, 1])."""
    to_unit = n.new("ShaderNodeMapRange", **{"From Min": -1.0, "From Max": 1.0, "To Min": 0.0, "To Max": 1.0})
    n.links.new(z, to_unit.inputs["Value"])
    ramp = n.nodes.new("ShaderNodeValToRGB")
    ramp.color_ramp.interpolation = "LINEAR"
    elements = ramp.color_ramp.elements
    stops = [(0.0, sky["ground_rgb"]), (0.4995, sky["ground_rgb"])]
    stops += [(0.5 + 0.5 * float(height), rgb) for height, rgb in sky["stops"]]
    while len(elements) < len(stops):
        elements.new(0.0)
    for element, (position, rgb) in zip(elements, stops, strict=True):
        element.position = position
        element.color = _rgba(rgb)
    n.links.new(to_unit.outputs["Result"], ramp.inputs["Fac"])
    return ramp.outputs["Color"]


def _sky_texture(n: _Nodes, world: Mapping[str, Any]) -> Any:
    sky = n.nodes.new("ShaderNodeTexSky")
    sky.sky_type = world["model"]
    sky.sun_disc = False
    sky.sun_elevation = math.radians(float(world["sun_elevation_deg"]))
    sky.sun_rotation = math.radians(float(world["sun_rotation_deg"]))
    sky.altitude = float(world["altitude_m"])
    sky.air_density = float(world["air_density"])
    sky.aerosol_density = float(world["aerosol_density"])
    sky.ozone_density = float(world["ozone_density"])
    return sky.outputs["Color"]


def build_world(sess: Session, world: Mapping[str, Any], horizon: Mapping[str, Any] | None,
                ambient: float) -> None:
    """Build the drawn ``world`` (`clevr_worlds.draw_world`'s dict) as the scene's world shader. ``plain``:
    the t2i look's flat world (the ``horizon``'s colour where one was drawn, else white at ``ambient``)."""
    kind = world["kind"]
    if kind == "plain":
        if horizon is not None:
            sess.world_light(horizon["world_rgb"], horizon["strength"])
        else:
            sess.world_light([1.0, 1.0, 1.0], ambient)
        return
    n, bg = _world(sess)
    if kind == "procedural_sky":
        n.links.new(_sky_texture(n, world), bg.inputs["Color"])
        bg.inputs["Strength"].default_value = float(world["strength"])
        return
    z, azimuth, elevation = _direction(n)
    if kind in ("sky_gradient", "distant_shapes"):
        sky = world["sky"] if kind == "distant_shapes" else world
        colour = _gradient(n, z, sky)
        if kind == "distant_shapes":  # the land a hair below the horizon up, then the shapes in front of it
            land = {"low_deg": -1.0, "high_deg": world["land"]["high_deg"]}
            colour = n.mix(_patch_mask(n, azimuth, elevation, land), colour, world["land"]["rgb"])
            for shape in world["shapes"]:
                colour = n.mix(_patch_mask(n, azimuth, elevation, shape), colour, shape["rgb"])
        n.links.new(colour, bg.inputs["Color"])
        bg.inputs["Strength"].default_value = float(sky["strength"])
        return
    if kind == "room":  # the sky outside for camera and glossy rays (windows, reflections), else a dim ambient
        sky = n.new("ShaderNodeBackground", Strength=float(world["outside"]["strength"]))
        n.links.new(_gradient(n, z, world["outside"]), sky.inputs["Color"])
        bg.inputs["Color"].default_value = _rgba(world["ambient"]["rgb"])
        bg.inputs["Strength"].default_value = float(world["ambient"]["strength"])
        path = n.nodes.new("ShaderNodeLightPath")
        mix = n.nodes.new("ShaderNodeMixShader")
        n.links.new(n.math("MAXIMUM", path.outputs["Is Camera Ray"], path.outputs["Is Glossy Ray"]), mix.inputs["Fac"])
        n.links.new(bg.outputs["Background"], mix.inputs[1])
        n.links.new(sky.outputs["Background"], mix.inputs[2])
        out = next(node for node in n.nodes if node.type == "OUTPUT_WORLD")
        n.links.new(mix.outputs["Shader"], out.inputs["Surface"])
        return
    if kind != "studio":
        raise ValueError(f"no Blender world for world kind {kind!r}")
    bg.inputs["Color"].default_value = _rgba(world["backdrop_rgb"])
    bg.inputs["Strength"].default_value = float(world["world_strength"])
    out = next(node for node in n.nodes if node.type == "OUTPUT_WORLD")
    shader = bg.outputs["Background"]
    for box in world["softboxes"]:  # white light where a softbox is, added to the dim world
        light = n.new("ShaderNodeBackground", Color=(1.0, 1.0, 1.0, 1.0))
        n.links.new(n.math("MULTIPLY", _patch_mask(n, azimuth, elevation, box), float(box["strength"])),
                    light.inputs["Strength"])
        add = n.nodes.new("ShaderNodeAddShader")
        n.links.new(shader, add.inputs[0])
        n.links.new(light.outputs["Background"], add.inputs[1])
        shader = add.outputs["Shader"]
    n.links.new(shader, out.inputs["Surface"])


def reach_of(objects: Sequence[Mapping[str, Any]], target: Sequence[float]) -> float:
    """How far the placed objects reach on the ground from the camera's target (a cube by its corners)."""
    return max([0.0] + [math.hypot(float(o["x"]) - float(target[0]), float(o["y"]) - float(target[1]))
                        + float(o["r"]) * max(float(s) for s in o.get("stretch", (1.0, 1.0))[:2])
                        * (CUBE_REACH if o.get("shape") == "cube" else 1.0) for o in objects])


def studio_backdrop(sess: Session, world: Mapping[str, Any], framing: Mapping[str, Any],
                    objects: Sequence[Mapping[str, Any]]) -> None:
    """The studio's cyclorama: a sweep of radius ``sweep_radius`` rising from the floor into a wall, ``gap``
    past the objects' reach from the camera's target on the far side from the camera, wide and tall enough to
    fill the frame behind them; diffuse, ``backdrop_rgb`` at the floor graded to ``top_rgb`` at the frame's
    height there."""
    import bmesh

    bpy = sess.bpy
    cam, target = [float(v) for v in framing["location"]], [float(v) for v in framing["target"]]
    ux, uy = target[0] - cam[0], target[1] - cam[1]
    norm = math.hypot(ux, uy) or 1.0
    ux, uy = ux / norm, uy / norm
    reach = reach_of(objects, target)
    radius = float(world["sweep_radius"])
    wall = reach + radius + float(world["gap"])
    span = (math.dist(cam, target) + wall) * 16.0 / float(framing["lens_mm"]) * 1.5 + 2.0
    profile = [(wall - radius + radius * math.sin(a), radius - radius * math.cos(a))
               for a in (0.5 * math.pi * k / SWEEP_SEGMENTS for k in range(SWEEP_SEGMENTS + 1))]
    profile.append((wall, radius + span))
    bm = bmesh.new()
    rows = []
    for u, z in profile:
        rows.append([bm.verts.new((target[0] + u * ux - v * uy, target[1] + u * uy + v * ux, z + 1e-3))
                     for v in (-span, span)])
    for (a0, a1), (b0, b1) in itertools.pairwise(rows):
        face = bm.faces.new((a0, a1, b1, b0))
        face.smooth = True
    me = bpy.data.meshes.new("LogicValBackdrop")
    bm.to_mesh(me)
    bm.free()
    obj = bpy.data.objects.new("LogicValBackdrop", me)
    sess.scene.collection.objects.link(obj)
    obj.visible_shadow = False
    mat = bpy.data.materials.new("LogicValBackdrop")
    n = _Nodes(mat.node_tree)
    out = next(node for node in n.nodes if node.type == "OUTPUT_MATERIAL")
    for node in [node for node in n.nodes if node.name != out.name]:
        n.nodes.remove(node)
    coords = n.new("ShaderNodeTexCoord")
    xyz = n.nodes.new("ShaderNodeSeparateXYZ")
    n.links.new(coords.outputs["Object"], xyz.inputs["Vector"])
    height = (math.dist(cam, target) + wall) * 16.0 / float(framing["lens_mm"])
    grade = n.new("ShaderNodeMapRange", **{"From Min": 0.0, "From Max": max(1.0, height)})
    n.links.new(xyz.outputs["Z"], grade.inputs["Value"])
    base = n.new("ShaderNodeRGB")
    base.outputs["Color"].default_value = _rgba(world["backdrop_rgb"])
    colour = n.mix(grade.outputs["Result"], base.outputs["Color"], world["top_rgb"])
    diffuse = n.nodes.new("ShaderNodeBsdfDiffuse")
    n.links.new(colour, diffuse.inputs["Color"])
    n.links.new(diffuse.outputs["BSDF"], out.inputs["Surface"])
    obj.data.materials.append(mat)
