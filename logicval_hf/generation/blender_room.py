"""The world kind ``room`` built in Blender (needs ``bpy``): walls, a corner or a cyclorama behind the objects,
windows with frames, the beam of light through each and its shaft.

What a room draws is decided in `clevr_worlds` (pure); its world shader (the sky outside for camera and glossy
rays, a dim ambient light for the rest) in `blender_world.build_world`; this module builds its geometry once
the camera is framed, like the studio's backdrop. The walls stand past every object's reach from the camera's
target, so they hide no object; they cast no shadows (the lamp rig may stand behind them). Each window's beam is
an area light just outside it with a narrow spread, so the beam stays the window's shape; its shaft is a thin
scattering volume filling the beam's path to the floor. A volume would write the object-index pass where light
scatters in it, so `render_image` takes a shaft image's mask from an index render with the shafts hidden.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from logicval_hf.generation.blender_session import Session
from logicval_hf.generation.blender_world import reach_of, studio_backdrop

__all__ = ["build_room"]

WINDOW_BAR = 0.05      # width of a window's frame and glazing bars, as a share of the window's shorter side
BEAM_POWER = 1.0       # the beam's power per unit of drawn strength and square unit of window


def _unit(x: float, y: float) -> tuple[float, float]:
    norm = math.hypot(x, y) or 1.0
    return x / norm, y / norm


def _turn(v: tuple[float, float], deg: float) -> tuple[float, float]:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    return c * v[0] - s * v[1], s * v[0] + c * v[1]


def _walls(room: Mapping[str, Any], target: Sequence[float], u: tuple[float, float], depth: float, span: float
           ) -> list[dict[str, Any]]:
    """Each wall: its start (x, y), direction along it, length and normal towards the objects, with its paint."""
    tx, ty = float(target[0]), float(target[1])
    if room["style"] == "wall":
        along = (-u[1], u[0])
        return [{"start": (tx + depth * u[0] - span * along[0], ty + depth * u[1] - span * along[1]),
                 "along": along, "length": 2 * span, "normal": (-u[0], -u[1]), "rgb": room["wall_rgb"]}]
    corner = (tx + depth * math.sqrt(2.0) * u[0], ty + depth * math.sqrt(2.0) * u[1])
    walls = []
    for deg, rgb in ((45.0, room["wall_rgb"]), (-45.0, room["second_rgb"])):
        along = _turn((-u[0], -u[1]), deg)
        normal = (-along[1], along[0])
        if normal[0] * (tx - corner[0]) + normal[1] * (ty - corner[1]) < 0:
            normal = (-normal[0], -normal[1])
        walls.append({"start": corner, "along": along, "length": 1.5 * span, "normal": normal, "rgb": rgb})
    return walls


def _hit(cam: Sequence[float], direction: Sequence[float], wall: Mapping[str, Any]) -> tuple[float, float] | None:
    """Where a ray from the camera meets a wall's plane: (distance along the wall, height), or None."""
    nx, ny = wall["normal"]
    den = direction[0] * nx + direction[1] * ny
    if den >= -1e-9:
        return None
    t = ((wall["start"][0] - cam[0]) * nx + (wall["start"][1] - cam[1]) * ny) / den
    px, py = cam[0] + t * direction[0], cam[1] + t * direction[1]
    s = (px - wall["start"][0]) * wall["along"][0] + (py - wall["start"][1]) * wall["along"][1]
    return s, cam[2] + t * direction[2]


def _view(framing: Mapping[str, Any], width: int, height: int) -> dict[str, Any]:
    """The camera's forward, right and up vectors and the tangents of its half fields of view."""
    cam, target = [float(v) for v in framing["location"]], [float(v) for v in framing["target"]]
    f = [t - c for t, c in zip(target, cam, strict=True)]
    norm = math.sqrt(sum(v * v for v in f))
    f = [v / norm for v in f]
    rx, ry = _unit(f[1], -f[0])
    right = (rx, ry, 0.0)
    up = (right[1] * f[2] - right[2] * f[1], right[2] * f[0] - right[0] * f[2], right[0] * f[1] - right[1] * f[0])
    tan_long = 16.0 / float(framing["lens_mm"])
    side = max(width, height)
    return {"cam": cam, "forward": f, "right": right, "up": up, "tan_w": tan_long * width / side,
            "tan_h": tan_long * height / side}


def _ray(view: Mapping[str, Any], x: float, y: float) -> list[float]:
    """The direction through the frame's point (x, y) in [-1, 1] (right, up)."""
    return [fv + x * view["tan_w"] * rv + y * view["tan_h"] * uv
            for fv, rv, uv in zip(view["forward"], view["right"], view["up"], strict=True)]


def _place_windows(room: Mapping[str, Any], walls: list[dict[str, Any]], view: Mapping[str, Any], height: float
                   ) -> None:
    """Turn the windows' shares into positions on their walls: ``along`` from the point the frame's centre
    sees on the wall (or the corner) across the part the frame shows, heights as shares of the wall the frame
    shows (up to the frame's top edge)."""
    for w in walls:
        w["windows"] = []
    for win in room["windows"]:
        wall = walls[int(win["wall"]) % len(walls)]
        centre = _hit(view["cam"], view["forward"], wall)
        left, right = _hit(view["cam"], _ray(view, -1.0, 0.0), wall), _hit(view["cam"], _ray(view, 1.0, 0.0), wall)
        top = _hit(view["cam"], _ray(view, 0.0, 1.0), wall)
        seen = min(max(top[1] if top else height, 1.5), 0.9 * height)
        s_in = [p[0] for p in (left, right, centre) if p is not None and 0 <= p[0] <= wall["length"]]
        lo, hi = (min(s_in), max(s_in)) if s_in else (0.0, wall["length"])
        if len(walls) > 1:  # a corner: the share runs from the corner out
            lo = 0.0
        mid = 0.5 * (lo + hi) + 0.5 * float(win["along"]) * (hi - lo)
        z0 = float(win["sill"]) * seen
        h = min(float(win["height"]) * seen, 0.95 * seen - z0)
        half = min(0.5 * h * float(win["aspect"]), 0.4 * max(hi - lo, 1.0))
        s0, s1 = max(0.05, mid - half), min(wall["length"] - 0.05, mid + half)
        if h > 0.2 and s1 - s0 > 0.2:
            wall["windows"].append({**win, "s": [round(s0, 4), round(s1, 4)], "z": [round(z0, 4), round(z0 + h, 4)]})


def _point(wall: Mapping[str, Any], s: float, z: float, out: float = 0.0) -> tuple[float, float, float]:
    """A point of a wall: ``s`` along it, at height ``z``, ``out`` off it towards the objects."""
    (x, y), (ax, ay), (nx, ny) = wall["start"], wall["along"], wall["normal"]
    return x + s * ax + out * nx, y + s * ay + out * ny, z


def _mesh(sess: Session, name: str, verts: Sequence[Sequence[float]], faces: Sequence[Sequence[int]],
          rgb: Sequence[float], shadows: bool) -> Any:
    bpy = sess.bpy
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(v) for v in verts], [], [tuple(f) for f in faces])
    me.update()
    obj = bpy.data.objects.new(name, me)
    sess.scene.collection.objects.link(obj)
    obj.visible_shadow = shadows
    mat = bpy.data.materials.new(name)
    p = mat.node_tree.nodes.get("Principled BSDF") or mat.node_tree.nodes.new("ShaderNodeBsdfPrincipled")
    p.inputs["Base Color"].default_value = (*(float(v) for v in rgb), 1.0)
    p.inputs["Roughness"].default_value = 0.8
    out = next(n for n in mat.node_tree.nodes if n.type == "OUTPUT_MATERIAL")
    mat.node_tree.links.new(p.outputs["BSDF"], out.inputs["Surface"])
    obj.data.materials.append(mat)
    return obj


def _wall_mesh(sess: Session, wall: Mapping[str, Any], height: float, name: str) -> None:
    """A wall as a grid of quads split at its windows' edges, without the cells inside a window."""
    ss = sorted({0.0, float(wall["length"]), *(v for w in wall["windows"] for v in w["s"])})
    zs = sorted({0.0, height, *(v for w in wall["windows"] for v in w["z"])})
    index: dict[tuple[int, int], int] = {}
    verts: list[tuple[float, float, float]] = []
    faces = []

    def vid(i: int, j: int) -> int:
        if (i, j) not in index:
            index[(i, j)] = len(verts)
            verts.append(_point(wall, ss[i], zs[j]))
        return index[(i, j)]

    for i in range(len(ss) - 1):
        for j in range(len(zs) - 1):
            sm, zm = 0.5 * (ss[i] + ss[i + 1]), 0.5 * (zs[j] + zs[j + 1])
            if any(w["s"][0] < sm < w["s"][1] and w["z"][0] < zm < w["z"][1] for w in wall["windows"]):
                continue
            faces.append((vid(i, j), vid(i + 1, j), vid(i + 1, j + 1), vid(i, j + 1)))
    _mesh(sess, name, verts, faces, wall["rgb"], shadows=False)


def _bars(wall: Mapping[str, Any], win: Mapping[str, Any]) -> list[tuple[float, float, float, float]]:
    """A window's frame and glazing bars as (s0, s1, z0, z1) rectangles on the wall."""
    (s0, s1), (z0, z1) = win["s"], win["z"]
    t = WINDOW_BAR * min(s1 - s0, z1 - z0)
    bars = [(s0, s0 + t, z0, z1), (s1 - t, s1, z0, z1), (s0, s1, z0, z0 + t), (s0, s1, z1 - t, z1)]
    for k in range(1, int(win["cols"]) + 1):
        s = s0 + (s1 - s0) * k / (int(win["cols"]) + 1)
        bars.append((s - t / 2, s + t / 2, z0, z1))
    for k in range(1, int(win["rows"]) + 1):
        z = z0 + (z1 - z0) * k / (int(win["rows"]) + 1)
        bars.append((s0, s1, z - t / 2, z + t / 2))
    return bars


def _frame_mesh(sess: Session, wall: Mapping[str, Any], win: Mapping[str, Any], name: str) -> None:
    """The bars as thin boxes through the wall's plane (they cast the beam's bar shadows)."""
    verts: list[tuple[float, float, float]] = []
    faces = []
    depth = 0.5 * WINDOW_BAR * min(win["s"][1] - win["s"][0], win["z"][1] - win["z"][0])
    for s0, s1, z0, z1 in _bars(wall, win):
        k = len(verts)
        verts += [_point(wall, s, z, out) for out in (-depth, depth) for s, z in ((s0, z0), (s1, z0), (s1, z1),
                                                                                   (s0, z1))]
        faces += [(k, k + 3, k + 2, k + 1), (k + 4, k + 5, k + 6, k + 7)]
        faces += [(k + i, k + (i + 1) % 4, k + 4 + (i + 1) % 4, k + 4 + i) for i in range(4)]
    _mesh(sess, name, verts, faces, win["frame_rgb"], shadows=True)


def _beam(sess: Session, wall: Mapping[str, Any], win: Mapping[str, Any], light: Mapping[str, Any],
          shaft: Mapping[str, Any] | None, name: str) -> Any:
    """The light through a window: an area light of the window's cross-section just outside it, aimed into the
    room at the drawn elevation and turn, with a narrow spread; and its shaft, a scattering volume from the
    window to the floor along the beam (returned; None without one)."""
    import bmesh
    from mathutils import Matrix, Vector

    bpy = sess.bpy
    el = math.radians(float(light["elevation_deg"]))
    hx, hy = _turn(wall["normal"], float(light["azimuth_deg"]))
    d = Vector((hx * math.cos(el), hy * math.cos(el), -math.sin(el)))
    (s0, s1), (z0, z1) = win["s"], win["z"]
    centre = Vector(_point(wall, 0.5 * (s0 + s1), 0.5 * (z0 + z1)))
    a = Vector((*wall["along"], 0.0))
    x_axis = (a - a.dot(d) * d).normalized()
    z_axis = -d
    y_axis = z_axis.cross(x_axis)
    wx = (s1 - s0) * math.sqrt(max(0.0, 1.0 - a.dot(d) ** 2))
    wy = (z1 - z0) * math.cos(el)
    lamp = bpy.data.lights.new(name, "AREA")
    lamp.shape, lamp.size, lamp.size_y = "RECTANGLE", wx, wy
    lamp.spread = math.radians(float(light["spread_deg"]))
    lamp.energy = BEAM_POWER * float(light["strength"]) * wx * wy
    lamp.color = tuple(float(v) for v in light["rgb"])
    obj = bpy.data.objects.new(name, lamp)
    obj.matrix_world = Matrix.Translation(centre - 0.5 * d) @ Matrix((x_axis, y_axis, z_axis)).transposed().to_4x4()
    obj.visible_camera = False
    sess.scene.collection.objects.link(obj)
    if shaft is None or d.z >= -1e-6:
        return None
    corners = [Vector(_point(wall, s, z)) for s in (s0, s1) for z in (z0, z1)]
    verts = corners + [c + d * (c.z / -d.z) for c in corners]
    me = bpy.data.meshes.new(name + "Shaft")
    bm = bmesh.new()
    for v in verts:
        bm.verts.new(v)
    bmesh.ops.convex_hull(bm, input=list(bm.verts))
    bm.to_mesh(me)
    bm.free()
    vol = bpy.data.objects.new(name + "Shaft", me)
    sess.scene.collection.objects.link(vol)
    vol.visible_shadow = False
    mat = bpy.data.materials.new(name + "Shaft")
    nodes = mat.node_tree.nodes
    for n in [n for n in nodes if n.type != "OUTPUT_MATERIAL"]:
        nodes.remove(n)
    scatter = nodes.new("ShaderNodeVolumeScatter")
    scatter.inputs["Density"].default_value = float(shaft["density"])
    scatter.inputs["Anisotropy"].default_value = float(shaft["anisotropy"])
    out = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
    mat.node_tree.links.new(scatter.outputs[0], out.inputs["Volume"])
    vol.data.materials.append(mat)
    return vol


def build_room(sess: Session, room: Mapping[str, Any], framing: Mapping[str, Any],
               things: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Build the drawn ``room`` (`clevr_worlds`' draw) around placed ``things`` (objects and distractors) for a
    framed camera. Returns what was placed (walls, windows on them, the shaft volumes as ``volumes``, Blender
    objects the caller hides from the mask's render)."""
    if room["style"] == "cyclorama":
        studio_backdrop(sess, {"backdrop_rgb": room["wall_rgb"], "top_rgb": room["top_rgb"], "gap": room["gap"],
                               "sweep_radius": room["sweep_radius"]}, framing, things)
        return {"walls": [], "volumes": []}
    cam, target = [float(v) for v in framing["location"]], [float(v) for v in framing["target"]]
    u = _turn(_unit(target[0] - cam[0], target[1] - cam[1]), float(room["turn_deg"]))
    depth = reach_of(things, target) + float(room["gap"])
    span = (math.dist(cam, target) + depth) * 16.0 / float(framing["lens_mm"]) * 1.5 + 2.0
    walls = _walls(room, target, u, depth, span)
    _place_windows(room, walls, _view(framing, sess.width, sess.height), span)
    volumes = []
    for k, wall in enumerate(walls):
        _wall_mesh(sess, wall, span, f"LogicValWall_{k}")
        for j, win in enumerate(wall["windows"]):
            _frame_mesh(sess, wall, win, f"LogicValWindow_{k}_{j}")
            vol = _beam(sess, wall, win, room["light"], room["shaft"], f"LogicValBeam_{k}_{j}")
            if vol is not None:
                volumes.append(vol)
    sess.update()
    placed = [{"start": [round(v, 4) for v in w["start"]], "along": [round(v, 4) for v in w["along"]],
               "length": round(w["length"], 4), "windows": [{"s": x["s"], "z": x["z"]} for x in w["windows"]]}
              for w in walls]
    return {"walls": placed, "volumes": volumes}
