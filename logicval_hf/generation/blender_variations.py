"""The variations built in Blender (needs ``bpy``): glossy floors, other surfaces, marks on cubes, distractors, and
the larger frame that measures how much of a cut object the frame shows.

What each variation draws is decided in `clevr_variations` (pure); this module builds it in a `Session`'s
scene. Nothing here writes an object index other than the objects' own: a mark is part of its cube's mesh (the
cube's index), a distractor has an index after the objects', the floor keeps index 0 however much it reflects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from logicval_hf.generation.blender_session import Session
from logicval_hf.generation.clevr_framing import cut_shift, overscan
from logicval_hf.generation.clevr_truth import cut_fractions, mask_stats

__all__ = ["add_distractors", "cut_frame", "dress_built", "glossy_floor", "overscan_mask", "tint_world"]

MARK_LIFT = 0.004    # marks float this far off a face (in units of the cube's half side)
SURFACE_SCALE = 1.0  # wax's subsurface radius per unit of the object's radius
# the faces of a 2 x 2 x 2 cube: outward normal and an in-face axis (the second in-face axis is normal x first)
FACES = (((1, 0, 0), (0, 1, 0)), ((-1, 0, 0), (0, -1, 0)), ((0, 1, 0), (-1, 0, 0)), ((0, -1, 0), (1, 0, 0)),
         ((0, 0, 1), (1, 0, 0)), ((0, 0, -1), (-1, 0, 0)))
PIPS = {1: [(0, 0)], 2: [(-1, -1), (1, 1)], 3: [(-1, -1), (0, 0), (1, 1)], 4: [(-1, -1), (-1, 1), (1, -1), (1, 1)],
        5: [(-1, -1), (-1, 1), (0, 0), (1, -1), (1, 1)], 6: [(-1, -1), (-1, 0), (-1, 1), (1, -1), (1, 0), (1, 1)]}


def _clear(mat: Any) -> tuple[Any, Any, Any]:
    """A material's node tree emptied but for its output: (nodes, links, output node)."""
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
    for n in [n for n in nodes if n.name != out.name]:
        nodes.remove(n)
    return nodes, links, out


def _principled(sess: Session, name: str, rgb: Sequence[float], **inputs: Any) -> Any:
    mat = sess.bpy.data.materials.new(name)
    nodes, links, out = _clear(mat)
    p = nodes.new("ShaderNodeBsdfPrincipled")
    p.inputs["Base Color"].default_value = (*(float(v) for v in rgb[:3]), 1.0)
    for key, value in inputs.items():
        p.inputs[key].default_value = value
    links.new(p.outputs["BSDF"], out.inputs["Surface"])
    return mat


def glossy_floor(sess: Session, gloss: Mapping[str, Any]) -> None:
    """A clear reflective layer over the floor's own surface: a white glossy BSDF of ``roughness`` mixed in by
    ``weight``, rising towards grazing angles (Fresnel), on a copy of each of the floor's materials."""
    bpy = sess.bpy
    floor = getattr(sess, "floor_object", None) or bpy.data.objects["Ground"]
    for slot in floor.material_slots:
        mat = slot.material.copy()
        nodes, links = mat.node_tree.nodes, mat.node_tree.links
        out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL" and n.is_active_output)
        src = out.inputs["Surface"].links[0].from_socket
        glossy = nodes.new("ShaderNodeBsdfGlossy")
        glossy.inputs["Color"].default_value = (1.0, 1.0, 1.0, 1.0)
        glossy.inputs["Roughness"].default_value = float(gloss["roughness"])
        fresnel = nodes.new("ShaderNodeFresnel")
        fresnel.inputs["IOR"].default_value = 1.5
        w = float(gloss["weight"])
        rise = nodes.new("ShaderNodeMath")  # weight + (1 - weight) * fresnel
        rise.operation = "MULTIPLY_ADD"
        links.new(fresnel.outputs["Fac"], rise.inputs[0])
        rise.inputs[1].default_value = 1.0 - w
        rise.inputs[2].default_value = w
        mix = nodes.new("ShaderNodeMixShader")
        links.new(rise.outputs[0], mix.inputs["Fac"])
        links.new(src, mix.inputs[1])
        links.new(glossy.outputs["BSDF"], mix.inputs[2])
        links.new(mix.outputs["Shader"], out.inputs["Surface"])
        slot.material = mat


def _tint_input(tree: Any, socket: Any, gain: Sequence[float]) -> None:
    """Multiply a colour input by ``gain``: its value, or what is linked into it through a multiply node."""
    if not socket.is_linked:
        socket.default_value = (*(float(c) * g for c, g in zip(socket.default_value[:3], gain, strict=True)), 1.0)
        return
    src = socket.links[0].from_socket
    mul = tree.nodes.new("ShaderNodeMix")
    mul.data_type, mul.blend_type = "RGBA", "MULTIPLY"
    mul.inputs["Factor"].default_value = 1.0
    tree.links.new(src, mul.inputs["A"])
    mul.inputs["B"].default_value = (*(float(g) for g in gain), 1.0)
    tree.links.new(mul.outputs["Result"], socket)


def tint_world(sess: Session, tint: Mapping[str, Any]) -> None:
    """Under tinted lamps, the world's light and a glowing floor's emission dim to ``world_scale`` and take
    ``world_tint`` of the key's hue: the colour cast of a lamp-lit scene, not daylight with coloured accents."""
    scale, share = float(tint["world_scale"]), float(tint["world_tint"])
    gain = [1.0 - share + share * float(c) for c in tint["key_rgb"]]
    floor = getattr(sess, "floor_object", None) or sess.bpy.data.objects["Ground"]
    trees = [sess.scene.world.node_tree] + [s.material.node_tree for s in floor.material_slots if s.material]
    for tree in trees:
        for node in list(tree.nodes):
            if node.type in ("BACKGROUND", "EMISSION"):
                strength = node.inputs["Strength"]
                if not strength.is_linked:
                    strength.default_value = float(strength.default_value) * scale
                _tint_input(tree, node.inputs["Color"], gain)


def _surface_material(sess: Session, name: str, rgb: Sequence[float], surface: Mapping[str, Any], r: float) -> Any:
    """Another surface of an object's colour: clear or frosted glass, glossy plastic (a clear coat over a
    coloured base) or translucent wax (subsurface scattering)."""
    kind = surface["kind"]
    if kind in ("glass", "frosted"):  # light crosses two surfaces: each tints by the root, the whole by the colour
        tint = [math.sqrt(max(0.0, float(v))) for v in rgb]
        return _principled(sess, name, tint, **{"Transmission Weight": 1.0, "Roughness": float(surface["roughness"]),
                                                "IOR": float(surface["ior"])})
    if kind == "plastic":
        return _principled(sess, name, rgb, **{"Roughness": float(surface["roughness"]), "Coat Weight": 1.0,
                                               "Coat Roughness": float(surface["coat_roughness"])})
    if kind == "wax":
        return _principled(sess, name, rgb, **{"Subsurface Weight": 1.0, "Roughness": float(surface["roughness"]),
                                               "Subsurface Scale": float(surface["subsurface_scale"]) * r
                                               * SURFACE_SCALE})
    raise ValueError(f"no Blender surface {kind!r}")


def _polygon(shape: str, size: float, flat: float) -> list[list[tuple[float, float]]]:
    """A decal's faces as 2D polygons (counter-clockwise) in a face's plane, ``size`` x ``flat`` across."""
    s = float(size) * float(flat)

    def ring(k: int, radius: float, phase: float = 0.0) -> list[tuple[float, float]]:
        return [(radius * math.cos(phase + 2 * math.pi * i / k), radius * math.sin(phase + 2 * math.pi * i / k))
                for i in range(k)]

    if shape == "circle":
        return [ring(32, s)]
    if shape == "ring":
        outer, inner = ring(32, s), ring(32, 0.6 * s)
        return [[outer[i], outer[(i + 1) % 32], inner[(i + 1) % 32], inner[i]] for i in range(32)]
    if shape == "star":
        return [[p for i, p in enumerate(ring(10, 1.0, math.pi / 2))
                 for p in [(p[0] * (s if i % 2 == 0 else 0.45 * s), p[1] * (s if i % 2 == 0 else 0.45 * s))]]]
    if shape == "triangle":
        return [ring(3, s, math.pi / 2)]
    if shape == "square":
        return [ring(4, s, math.pi / 4)]
    if shape == "stripe":
        w, h = 0.97 * float(flat), 0.4 * s
        return [[(-w, -h), (w, -h), (w, h), (-w, h)]]
    if shape == "cross":
        a, b = s, 0.35 * s
        return [[(b, -b), (a, -b), (a, b), (b, b), (b, a), (-b, a), (-b, b), (-a, b), (-a, -b), (-b, -b), (-b, -a),
                 (b, -a)]]
    raise ValueError(f"no decal shape {shape!r}")


def _mark_polygons(marks: Mapping[str, Any]) -> list[tuple[int, list[tuple[float, float]]]]:
    """(face, 2D polygon) of every mark on a cube: pips by the die's face values, or the decal on its faces."""
    flat = float(marks["flat"])
    out = []
    if marks["kind"] == "pips":
        grid, radius = 0.55 * flat, float(marks["radius"]) * flat
        for face, value in enumerate(marks["faces"]):
            for gx, gy in PIPS[int(value)]:
                out.append((face, [(gx * grid + radius * math.cos(a), gy * grid + radius * math.sin(a))
                                   for a in np.linspace(0, 2 * math.pi, 20, endpoint=False)]))
        return out
    spin = math.radians(float(marks["spin_deg"]))
    c, s = math.cos(spin), math.sin(spin)
    shape = marks["shape"]
    for face, on in enumerate(marks["faces"]):
        if on:
            for poly in _polygon(shape, float(marks["size"]), flat):
                if shape == "stripe":  # a stripe runs across the face: turned by right angles only
                    out.append((face, poly if int(marks["spin_deg"]) % 180 < 90 else [(-y, x) for x, y in poly]))
                else:
                    out.append((face, [(c * x - s * y, s * x + c * y) for x, y in poly]))
    return out


def _add_marks(sess: Session, obj: Any, marks: Mapping[str, Any]) -> None:
    """The marks built into the cube's own mesh (its index, its transform) with a second material."""
    import bmesh
    from mathutils import Vector

    obj.data = obj.data.copy()
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    slot = len(obj.data.materials)
    for face, poly in _mark_polygons(marks):
        n, t = (Vector(v) for v in FACES[face])
        b = n.cross(t)
        verts = [bm.verts.new(n * (1.0 + MARK_LIFT) + t * x + b * y) for x, y in poly]
        f = bm.faces.new(verts)
        f.material_index = slot
    bm.to_mesh(obj.data)
    bm.free()
    obj.data.materials.append(_principled(sess, f"LogicValMarks_{obj.pass_index}", marks["rgb"], Roughness=0.5))


def dress_built(sess: Session, objs: Sequence[Mapping[str, Any]]) -> None:
    """Give the built objects what the variations put on them: the height they rest at (``z0``), another
    surface (``surface``), marks (``marks``)."""
    for obj, o in zip(sess.objects, objs, strict=True):
        if o.get("z0"):
            obj.location[2] += float(o["z0"])
        rgb = sess.assets.rgba(o["color"])[:3]
        if o.get("surface"):
            obj.data.materials.clear()
            obj.data.materials.append(_surface_material(sess, f"LogicValSurface_{obj.pass_index}", rgb,
                                                        o["surface"], float(o["r"])))
        if o.get("marks"):
            _add_marks(sess, obj, o["marks"])
    sess.update()


def _oov_mesh(sess: Session, shape: str, name: str) -> tuple[Any, float]:
    """A mesh outside CLEVR's shapes, about 2 units across: (object, the height of its lowest point)."""
    import bmesh

    bm = bmesh.new()
    if shape in ("cone", "pyramid"):
        bmesh.ops.create_cone(bm, cap_ends=True, cap_tris=False, segments=48 if shape == "cone" else 4,
                              radius1=1.0 if shape == "cone" else 1.2, radius2=0.0, depth=2.0)
    elif shape == "torus":
        big, small, k, m = 0.72, 0.28, 48, 16
        rings = [[bm.verts.new(((big + small * math.cos(b)) * math.cos(a), (big + small * math.cos(b)) * math.sin(a),
                                small * math.sin(b)))
                  for b in (2 * math.pi * j / m for j in range(m))] for a in (2 * math.pi * i / k for i in range(k))]
        for i in range(k):
            for j in range(m):
                bm.faces.new((rings[i][j], rings[(i + 1) % k][j], rings[(i + 1) % k][(j + 1) % m],
                              rings[i][(j + 1) % m]))
    elif shape == "monkey":
        bmesh.ops.create_monkey(bm)
    else:
        raise ValueError(f"no distractor shape {shape!r}")
    bm.normal_update()
    for f in bm.faces:
        f.smooth = shape in ("torus", "monkey") or (shape == "cone" and abs(f.normal.z) < 0.99)
    low = min(v.co.z for v in bm.verts)
    me = sess.bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    obj = sess.bpy.data.objects.new(name, me)
    sess.scene.collection.objects.link(obj)
    return obj, float(low)


def add_distractors(sess: Session, items: Sequence[Mapping[str, Any]], first_index: int) -> None:
    """Build placed distractors (`clevr_variations.place_distractors`) with object indices ``first_index``,
    ``first_index + 1``, ... in the assets' material groups; they join ``sess.extras``."""
    shapes, groups = dict(sess.assets.shapes), dict(sess.assets.materials)
    for k, d in enumerate(items):
        index, r = first_index + k, float(d["r"])
        rgba = (*(float(v) for v in d["rgb"]), 1.0)
        if d["shape"] in shapes:  # a CLEVR mesh in black or white
            obj = sess.add_object(shapes[d["shape"]], r, float(d["x"]), float(d["y"]), float(d["rotation"]),
                                  groups[d["material"]], rgba, index)
            sess.objects.remove(obj)
        else:
            obj, low = _oov_mesh(sess, d["shape"], f"LogicValDistractor_{index}")
            obj.scale = (r, r, r)
            obj.rotation_euler[2] = math.radians(float(d["rotation"]))
            obj.location = (float(d["x"]), float(d["y"]), -low * r)
            obj.pass_index = index
            obj.data.materials.append(sess.group_material(f"LogicValDistractor_{index}", groups[d["material"]], rgba))
        sess.extras.append(obj)
    sess.update()


def overscan_mask(sess: Session, pad: int, seed: int) -> np.ndarray:
    """The instance mask of a frame ``pad`` pixels larger on every side (`clevr_framing.overscan`): what the
    frame shows at ``[pad:pad + H, pad:pad + W]``, and around it what the frame cuts away."""
    r, cam = sess.scene.render, sess.camera.data
    saved = (r.resolution_x, r.resolution_y, cam.sensor_width, cam.shift_x, cam.shift_y)
    w, h, sensor, (sx, sy) = overscan(sess.width, sess.height, cam.sensor_width, (cam.shift_x, cam.shift_y), pad)
    r.resolution_x, r.resolution_y, cam.sensor_width, cam.shift_x, cam.shift_y = w, h, sensor, sx, sy
    try:
        return sess.index_mask(seed)
    finally:
        r.resolution_x, r.resolution_y, cam.sensor_width, cam.shift_x, cam.shift_y = saved


def cut_frame(sess: Session, cut: Mapping[str, Any], mask: np.ndarray, n: int, seed: int) -> dict[str, Any]:
    """Shift the framed camera's lens so that each drawn edge cuts the object reaching farthest towards it (in
    ``mask``, the frame as framed) with its drawn share kept inside; then measure every object's pixels inside
    the frame and in all on an overscan mask (``fractions``, per object). Returns what was done."""
    boxes = [st["bbox_xyxy"] for st in mask_stats(mask, n)]
    pick = {"left": lambda b: b[0], "right": lambda b: -b[2], "top": lambda b: b[1], "bottom": lambda b: -b[3]}
    shift, picked = [0.0, 0.0], []
    for edge, keep in zip(cut["edges"], cut["keep"], strict=True):
        seen = [i for i, b in enumerate(boxes) if b is not None]
        if not seen:
            break
        i = min(seen, key=lambda k: pick[edge](boxes[k]))
        dx, dy = cut_shift(boxes[i], edge, float(keep), sess.width, sess.height)
        shift = [shift[0] + dx, shift[1] + dy]
        picked.append(i)
    cam = sess.camera.data
    cam.shift_x, cam.shift_y = shift
    sess.update()
    pad = max(sess.width, sess.height) // 2
    over = overscan_mask(sess, pad, seed)
    return {"shift": [round(v, 6) for v in shift], "cut_objects": picked, "pad": pad,
            "fractions": cut_fractions(over, pad, sess.width, sess.height, n)}
