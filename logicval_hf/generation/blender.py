"""CLEVR datasets rendered with Blender as a Python module (``bpy``): ``logicval render-clevr``.

`render_dataset` renders scenes sampled the way the official CLEVR generator does (3-10 objects; shape, colour,
material and size uniform from ``properties.json``; rotation uniform in [0, 360), applied as radians as the original
does; positions uniform in [-3, 3]^2 with a minimum edge distance of 0.25 and a margin of 0.4 along the four
cardinal directions; at least 200 visible pixels per object at 480x320 (scaled with the image area), checked on a
1-sample object-index render; 50 tries per object, then the scene restarts; camera jitter +-0.5 and lamp jitter
+-1.0 per axis), under a render profile (`RENDER_PROFILES`: ``clevr``, ``randomise``, ``t2i``, ``t2i_wide``,
``t2i_world``, ``t2i_real``; see `clevr_sampling`) and its variations (`clevr_variations`). Writes
``images/CLEVRX_NNNNNN.png``, ``masks/CLEVRX_NNNNNN.png`` (8-bit, value i+1 = object i, 0 = background, from the
object-index pass through the compositor's File Output), ``scenes/CLEVRX_NNNNNN.json`` in the official CLEVR scene
format plus per object ``mask_index``, ``mask_pixels``, ``bbox_xyxy`` (inclusive mask bounds),
``mask_at_pixel_coords``, and per scene ``render_settings`` (every draw of the profile) and ``seed``; under the
variations that draw things which are not objects (``distractors``, ``cut_by_frame``) also ``uncounted``, whose mask
values follow the objects'; and ``scenes.json`` combining every scene in the folder. Each image is a pure function
of ``(settings, image index)`` (a fresh Blender scene per image, fixed Cycles seed), so index ranges can be rendered
in any order, by several processes, and a rerun skips finished images; the pixels do not depend on the thread count.
Written PNGs are re-encoded without Blender's metadata (render times), so reruns give byte-identical files.

The rooms: `clevr_sampling` (what is drawn; plain Python), `clevr_worlds` (the world kinds profiles
``t2i_world`` and ``t2i_real`` draw; plain Python), `clevr_variations` (the variations; plain Python),
`clevr_framing` (where the camera stands, how a frame cuts; plain Python), `clevr_truth` (relations, mask
statistics, what counts; plain Python), `clevr_assets` (the assets folder), `blender_session` (the Blender
scene; bpy), `blender_world` and `blender_room` (the world kinds built in that scene; bpy), `blender_variations`
(the variations built there; bpy), this module (files and resume), `blender_oracle` (a LogicVal scene graph
rendered in the CLEVR look). The names they export are re-exported here.

``bpy`` is imported only when a render starts; without it, or with an incomplete assets folder, a one-line
`BlenderUnavailable` / `AssetsError` (both `ValueError`) says what to install or where to point.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.common.atomic import atomic_write_bytes
from logicval_hf.generation.blender_oracle import BlenderLayoutError, BlenderSceneRenderer, render_scene_graph
from logicval_hf.generation.blender_room import build_room
from logicval_hf.generation.blender_session import INSTALL_HINT, BlenderUnavailable, Session, require_bpy
from logicval_hf.generation.blender_variations import (
    add_distractors,
    cut_frame,
    dress_built,
    glossy_floor,
    tint_world,
)
from logicval_hf.generation.blender_world import build_world, studio_backdrop
from logicval_hf.generation.clevr_assets import ASSETS_HINT, AssetsError, ClevrAssets, load_assets
from logicval_hf.generation.clevr_sampling import (
    ASPECTS,
    CAMERA_JITTER,
    CUBE_REACH,
    DISTANCE_SCALE,
    ELEVATION_DEG,
    FLOOR_CHOICES,
    FLOOR_P,
    LAMP_JITTER,
    LAMPS,
    LIGHT_SCALE,
    MARGIN,
    MAX_RESTARTS,
    MAX_RETRIES,
    MIN_DIST,
    MIN_PIXELS,
    MIN_PIXELS_AREA,
    RELATION_EPS,
    RENDER_PROFILES,
    SIZE_SCALE,
    WHITE_GLOW,
    ImagePlan,
    RenderConfig,
    RenderProfile,
    _rngs,
    compute_relationships,
    frame_camera,
    mask_stats,
    min_pixels_for,
    plan_image,
    sample_objects,
)
from logicval_hf.generation.clevr_truth import count_objects, relabel, visible_point
from logicval_hf.generation.clevr_variations import dress_objects, place_distractors, soften, stack_objects

__all__ = [
    "AssetsError", "BlenderUnavailable", "BlenderLayoutError", "ClevrAssets", "RenderConfig", "ImagePlan",
    "RenderProfile", "RENDER_PROFILES", "load_assets", "require_bpy", "plan_image", "sample_objects",
    "compute_relationships", "render_image", "render_dataset", "combine_scenes", "BlenderSceneRenderer",
    "render_scene_graph", "PREFIX",
    # re-exported from the rooms (callers and tests read the sampling constants and hints here)
    "INSTALL_HINT", "ASSETS_HINT", "ASPECTS", "CAMERA_JITTER", "CUBE_REACH", "DISTANCE_SCALE", "ELEVATION_DEG",
    "FLOOR_CHOICES", "FLOOR_P", "LAMP_JITTER", "LAMPS", "LIGHT_SCALE", "MARGIN", "MAX_RESTARTS", "MAX_RETRIES",
    "MIN_DIST", "MIN_PIXELS", "MIN_PIXELS_AREA", "RELATION_EPS", "SIZE_SCALE", "WHITE_GLOW",
]

PREFIX = "CLEVRX"


def _split_of(config: RenderConfig | None) -> str:
    name = config.profile_name if config is not None else "clevr"
    return {"clevr": "blender", "randomise": "blender-randomise"}.get(name, f"blender-{name}")


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
    from PIL import Image

    plan = plan_image(config, index)
    _, obj_rng = _rngs(config.seed, index)
    sess = Session(assets, plan.width, plan.height, config.threads)
    try:
        extra = plan.randomised
        # the t2i look's plan (the planner draws a t2i-style profile from it, so it is set exactly then)
        t2i_look = config.look.t2i if extra.get("profile") == config.profile_name else None
        t2i = t2i_look is not None
        if config.profile_name == "randomise":
            sess.place_camera(extra["camera_elevation_deg"], extra["camera_distance_scale"])
            sess.scale_lights(extra["light_scale"])
            if extra["floor_rgb"] is not None:
                sess.floor_color(extra["floor_rgb"], extra["floor_glow"])
        variations: dict[str, Any] = extra.get("variations", {}) if t2i else {}
        if t2i:
            _set_t2i_stage(sess, extra)
            if variations.get("glossy_floor") is not None:
                glossy_floor(sess, variations["glossy_floor"])
            if variations.get("tinted_light") is not None:
                tint_world(sess, variations["tinted_light"])
        sess.move("Camera", plan.camera_jitter)
        for name, d in plan.lamp_jitter.items():
            sess.move(name, d)
        directions = sess.directions()
        if t2i_look is not None:
            need = min_pixels_for(plan.width, plan.height, t2i_look.min_pixels_fraction)
        else:
            need = min_pixels_for(plan.width, plan.height)
        framing: dict[str, Any] = {}
        retries = {"wider": 0, "closer": 0}
        distractors: list[dict[str, Any]] = []  # placed with the objects (variation distractors)
        framed_mask: list[np.ndarray] = []      # the last visibility check's mask

        def dress(objs: list[dict[str, Any]]) -> None:  # the t2i look's per-slot draws, then the variations'
            if "stacked" in variations:
                stack_objects(objs, variations["stacked"], dict(assets.shapes)["cube"])
            _t2i_objects(objs, extra["objects"], assets)
            if variations:
                dress_objects(objs, variations)
                distractors[:] = place_distractors(objs, variations.get("distractors"), extra["spread"])

        def build(objs: list[dict[str, Any]]) -> None:
            sess.build(objs)
            if variations:
                dress_built(sess, objs)
                add_distractors(sess, distractors, len(objs) + 1)

        def visible(objs: list[dict[str, Any]]) -> bool:
            if t2i:  # frame the camera on these objects, then check them whole inside the frame
                dress(objs)
                framing.update(frame_camera(extra["camera"], [*objs, *distractors], plan.width, plan.height,
                                            **retries))
                sess.aim_camera(framing["location"], framing["target"], framing["lens_mm"])
            build(objs)
            mask = sess.index_mask(plan.cycles_seed)
            framed_mask[:] = [mask]
            counts = np.bincount(mask.ravel(), minlength=len(objs) + 1)
            if t2i and not _inside(mask, len(objs) + len(distractors)):
                retries["wider"] += 1
                return False
            seen = bool(all(counts[i + 1] >= need for i in range(len(objs))))
            if t2i and not seen:
                retries["closer"] += 1
            return seen

        if t2i:
            # spacing radii: size jitter, stretch, and room for a variant mesh's sharper corners
            spacing = [o["scale"] * max(o["stretch"][:2]) * (1.0 + 0.25 * o["mesh_variant"]) for o in extra["objects"]]
            objs, restarts = sample_objects(obj_rng, plan.n_objects, assets, directions, visible=visible,
                                            min_dist=extra["min_dist"], margin=extra["margin"],
                                            spread=extra["spread"], radius_scale=spacing)
            dress(objs)
            directions = sess.directions()  # of the camera framed on these objects
        else:
            objs, restarts = sample_objects(obj_rng, plan.n_objects, assets, directions, visible=visible)
        framed_on = len(objs)
        cut = None
        if variations.get("cut_by_frame") is not None and objs:  # the frame moved to cut objects
            cut = cut_frame(sess, variations["cut_by_frame"], framed_mask[0], len(objs), plan.cycles_seed)
        things = [*objs, *distractors]
        world_kind = extra.get("world", {}).get("kind") if t2i else None
        if world_kind == "studio":  # behind the objects, once the camera is set
            studio_backdrop(sess, extra["world"], framing, things)
        room = build_room(sess, extra["world"], framing, things) if world_kind == "room" else None
        if config.empty:  # the stage as the scene framed it (distractors included), without the scene
            objs = []
            build(objs)
        name = _name(index)
        img_dir, mask_dir, scene_dir = out / "images", out / "masks", out / "scenes"
        tmp_img = img_dir / f".{name}.render.png"
        mask = sess.render(tmp_img, config.samples, config.denoise, plan.cycles_seed)
        if room is not None and room["volumes"]:  # light scattering in a shaft writes the index pass: mask without
            for vol in room.pop("volumes"):
                vol.hide_render = True
            mask = sess.index_mask(plan.cycles_seed)
        objects, uncounted, mask = _truth(sess, objs, distractors if variations else [], mask, extra, t2i, need,
                                          cut, variations)
        settings = {"samples": config.samples, "denoise": int(config.denoise), "threads": config.threads,
                    "width": plan.width, "height": plan.height, "adaptive": 0.0, "bpy": _bpy_version(),
                    "seed": config.seed, "cycles_seed": plan.cycles_seed,
                    "randomise": int(config.profile_name == "randomise"),
                    "min_objects": config.min_objects, "max_objects": config.max_objects,
                    "min_pixels_per_object": need, "restarts": restarts,
                    **({"empty": 1, "framed_on_objects": framed_on} if config.empty else {}),
                    "camera_jitter": list(plan.camera_jitter),
                    "lamp_jitter": {k: list(v) for k, v in plan.lamp_jitter.items()}}
        if config.profile_name == "randomise":
            settings.update({k: v for k, v in extra.items() if k != "image_size"})
        elif t2i:
            if config.elevation is not None:
                settings["elevation_range"] = [float(v) for v in config.elevation]
            settings.update({"profile": config.profile_name, "long_side": list(config.frame_sides()),
                             **{k: v for k, v in extra.items() if k not in ("image_size", "objects", "profile")},
                             "camera_placed": framing})
            if cut is not None:
                settings["camera_shift"] = cut["shift"]
            if room is not None:
                settings["room_placed"] = {k: v for k, v in room.items() if k != "volumes"}
        split = {"clevr": "blender", "randomise": "blender-randomise"}.get(config.profile_name,
                                                                          f"blender-{config.profile_name}")
        scene = {"split": split, "image_index": index,
                 "image_filename": f"{name}.png", "objects": objects, "directions": directions,
                 "relationships": compute_relationships(objects, directions),
                 "mask_filename": f"masks/{name}.png", "render_settings": settings, "seed": config.seed}
        if uncounted is not None:
            scene["uncounted"] = uncounted
        # re-encoded without Blender's metadata (render times): reruns give byte-identical files
        with Image.open(tmp_img) as im:
            rgb = im.convert("RGB")
        os.unlink(tmp_img)
        if variations.get("small_soft") is not None:
            rgb = Image.fromarray(soften(np.asarray(rgb), variations["small_soft"]))
        atomic_write_bytes(mask_dir / f"{name}.png", _png_bytes(Image.fromarray(mask)))
        atomic_write_bytes(img_dir / f"{name}.png", _png_bytes(rgb))
        _atomic_json(scene_dir / f"{name}.json", scene)
        return scene
    finally:
        sess.close()


def _truth(sess: Session, objs: Sequence[Mapping[str, Any]], distractors: Sequence[Mapping[str, Any]],
           mask: np.ndarray, extra: Mapping[str, Any], t2i: bool, need: int, cut: Mapping[str, Any] | None,
           variations: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, np.ndarray]:
    """The scene's objects, its uncounted things (None where no variation draws any) and the mask relabelled to
    match. Without variations: every object, the mask as rendered."""
    width, height = sess.width, sess.height
    min_visible = (variations.get("cut_by_frame") or {}).get("min_visible", 1.0)
    counted, left = count_objects(mask, len(objs), len(distractors), cut["fractions"] if cut else None, need,
                                  min_visible)
    if variations:
        mask = relabel(mask, [i + 1 for i in counted], [v for v, _ in left])
    new_index = {old: new for new, old in enumerate(counted)}
    objects = []
    for i in counted:
        o = objs[i]
        loc = [float(c) for c in sess.objects[i].location]
        obj = {"shape": o["shape"], "size": o["size"], "material": o["material"], "3d_coords": loc,
               "rotation": o["rotation"], "pixel_coords": sess.project(loc), "color": o["color"]}
        if t2i:
            obj.update({"scale": extra["objects"][i]["scale"], "stretch": list(o["stretch"]),
                        "mesh_variant": o["variant"]})
            if "finish" in extra["objects"][i]:  # the finish of its own material, or None (CLEVR's)
                obj["finish"] = o["finish"]
        for key in ("surface", "marks"):
            if key in o:
                obj[key] = o[key]
        if "resting_on" in o:  # on the cube it rests on (None where that cube is not counted)
            obj["resting_on"] = new_index.get(o["resting_on"]) if o["resting_on"] is not None else None
        if cut is not None:
            inside, total = cut["fractions"][i]
            obj["visible_fraction"] = round(inside / total, 4) if total else 0.0
        objects.append(obj)
    for k, (o, st) in enumerate(zip(objects, mask_stats(mask, len(objects)), strict=True), start=1):
        o.update(st)
        px, py = o["pixel_coords"][0], o["pixel_coords"][1]
        inside = 0 <= px < width and 0 <= py < height
        if cut is not None and not inside:  # a cut object's centre left the frame: the visible part stands for it
            o["projected_coords"] = o["pixel_coords"]
            o["pixel_coords"] = [*(visible_point(mask, k) or [px, py]), o["pixel_coords"][2]]
            px, py = o["pixel_coords"][0], o["pixel_coords"][1]
            inside = True
        o["mask_at_pixel_coords"] = int(mask[py, px]) if inside else 0
    if not ("cut_by_frame" in variations or "distractors" in variations):
        return objects, None, mask
    uncounted = []
    for k, (value, reason) in enumerate(left, start=len(objects) + 1):
        i = value - 1
        thing = objs[i] if reason == "cut_by_frame" else distractors[i - len(objs)]
        entry = {"reason": reason, **{key: thing[key] for key in ("shape", "color", "material")},
                 **mask_stats(mask, 1, first=k)[0]}
        if reason == "cut_by_frame" and cut is not None:
            inside, total = cut["fractions"][i]
            entry["visible_fraction"] = round(inside / total, 4) if total else 0.0
        uncounted.append(entry)
    return objects, uncounted, mask


def _set_t2i_stage(sess: Session, extra: Mapping[str, Any]) -> None:
    """The t2i look's floor, horizon and lights (the camera is framed once the objects are placed)."""
    floor, horizon, lights = extra["floor"], extra["horizon"], extra["lights"]
    sess.flat_floor(floor["half_side"])
    if "world" in extra:
        build_world(sess, extra["world"], horizon, lights["ambient"])
    elif extra.get("sky") is not None:
        sky = extra["sky"]
        sess.world_sky(sky["zenith_rgb"], sky["horizon_rgb"], sky["softness"], sky["strength"])
    elif horizon is not None:
        sess.world_light(horizon["world_rgb"], horizon["strength"])
    else:
        sess.world_light([1.0, 1.0, 1.0], lights["ambient"])
    if floor["rgb"] is not None:
        sess.floor_material(floor["rgb"], floor["glow"], floor["texture"])
    sess.light_rig(lights)


def _t2i_objects(objs: list[dict[str, Any]], draws: Sequence[Mapping[str, Any]], assets: ClevrAssets) -> None:
    """Give placed objects the t2i look's per-slot draws: radius (size x jitter), stretch, mesh variant."""
    sizes = dict(assets.sizes)
    for o, d in zip(objs, draws, strict=True):
        o["r"] = sizes[o["size"]] * float(d["scale"])
        o["stretch"] = tuple(float(v) for v in d["stretch"])
        variant = None
        if d["mesh_variant"] and o["shape"] in ("cube", "cylinder"):
            variant = {"shape": o["shape"], "bevel": d[f"{o['shape']}_bevel"]}
        o["variant"] = variant
        if "finish" in d:
            o["finish"] = None if d["finish"] is None else d["finish"][o["material"]]


def _inside(mask: np.ndarray, n: int) -> bool:
    """No object's mask touches the image border."""
    border = np.concatenate([mask[0], mask[-1], mask[:, 0], mask[:, -1]])
    return not np.any((border >= 1) & (border <= n))


def _png_bytes(im) -> bytes:
    import io

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
    split = scenes[0]["split"] if scenes else _split_of(config)
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
    from tqdm.auto import tqdm

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
