"""Renders of each variation and of the world kind ``room`` (``logicval render-clevr --variations``, profile
``t2i_real``): one tiny image each (80-96 px, 2 samples, no denoiser), through the command so that they run
wherever bpy lives. In every one the mask, the boxes and the scene JSON agree; where a variation changes only
how things look (a mirror floor, coloured light, glass, a room with windows and a light shaft, a soft image),
the mask is the plain image's to the pixel: reflections, shafts and light are never objects of the truth.
Skip without bpy and the CLEVR assets."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_blender_render import ASSETS, HAVE_ASSETS, HAVE_BPY

from logicval_hf.generation.clevr_truth import compute_relationships

pytestmark = pytest.mark.skipif(not (HAVE_ASSETS and HAVE_BPY), reason="needs bpy and the CLEVR assets")

COMMON = ["--num-images", "1", "--long-side", "80:96", "--samples", "2", "--no-denoise", "--min-objects", "2",
          "--max-objects", "3", "--threads", "2", "--no-progress"]


def _render(out: Path, *extra: str, seed: int = 4) -> dict:
    from logicval_hf.cli.render_clevr import main

    assert main(["render-clevr", "--out", str(out), "--assets", str(ASSETS), "--seed", str(seed), *COMMON,
                 *extra]) == 0
    scene = json.loads((out / "scenes" / "CLEVRX_000000.json").read_text())
    scene["_mask"] = np.array(Image.open(out / "masks" / "CLEVRX_000000.png"))
    scene["_image"] = np.array(Image.open(out / "images" / "CLEVRX_000000.png"))
    return scene


def _agree(scene: dict) -> None:
    """Mask, boxes and JSON agree: value k is object k-1 then the uncounted things, nothing else shows."""
    mask, image = scene["_mask"], scene["_image"]
    H, W = mask.shape
    assert image.shape == (H, W, 3)
    objects, uncounted = scene["objects"], scene.get("uncounted", [])
    values = [*objects, *uncounted]
    assert set(np.unique(mask)) <= {0, *range(1, len(values) + 1)}
    for k, o in enumerate(values, start=1):
        ys, xs = np.nonzero(mask == k)
        assert o["mask_index"] == k and o["mask_pixels"] == len(xs) > 0
        assert o["bbox_xyxy"] == [xs.min(), ys.min(), xs.max(), ys.max()]
    for o in objects:
        px, py, depth = o["pixel_coords"]
        assert 0 <= px < W and 0 <= py < H and depth > 0
        assert o["mask_at_pixel_coords"] == int(mask[py, px])
    assert scene["relationships"] == compute_relationships(objects, scene["directions"])


def _geometry(scene: dict) -> list:
    return [{k: o[k] for k in ("shape", "color", "material", "size", "3d_coords", "bbox_xyxy", "mask_pixels")}
            for o in scene["objects"]]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The scene without variations (profile t2i_world), which the look-only variations must keep."""
    return _render(tmp_path_factory.mktemp("plain") / "o", "--profile", "t2i_world")


@pytest.mark.parametrize("name", ["glossy_floor", *(pytest.param(n, marks=pytest.mark.slow)
                                                   for n in ("tinted_light", "surfaces", "small_soft"))])
def test_a_variation_of_the_look_keeps_the_mask_and_the_objects(tmp_path, plain, name):
    scene = _render(tmp_path / name, "--profile", "t2i_world", "--variations", f"{name}=1")
    _agree(scene)
    rs = scene["render_settings"]
    assert rs["variations"][name] is not None and scene["split"] == "blender-t2i_world"
    assert np.array_equal(scene["_mask"], plain["_mask"]) and _geometry(scene) == _geometry(plain)
    assert np.abs(scene["_image"].astype(int) - plain["_image"]).mean() > 0.5
    assert "uncounted" not in scene
    if name == "surfaces":  # another surface, the same material label
        assert any(o["surface"] is not None for o in scene["objects"])
        assert all(o["surface"] is None or o["surface"]["kind"] in
                   {"metal": ("glass", "plastic"), "rubber": ("frosted", "wax")}[o["material"]]
                   for o in scene["objects"])
    if name == "tinted_light":
        assert rs["lights"]["key_rgb"] == rs["variations"]["tinted_light"]["key_rgb"]


def test_a_room_with_windows_and_a_light_shaft_keeps_the_mask(tmp_path, plain):
    """Profile t2i_real's room (walls, windows, the beam and its scattering shaft) against the same scene in its
    plain world: the shaft's volume would write the index pass (at seed 10 its haze lies over 102 pixels of the
    objects), so the truth comes from a render without it."""
    args = ["--profile", "t2i_real", "--variations", "none"]
    room = _render(tmp_path / "room", *args, "--worlds", "room", seed=10)
    flat = _render(tmp_path / "flat", *args, "--worlds", "plain", seed=10)
    _agree(room)
    world, placed = room["render_settings"]["world"], room["render_settings"]["room_placed"]
    assert world["kind"] == "room" and world["style"] in ("wall", "corner") and world["shaft"] is not None
    assert any(w["windows"] for w in placed["walls"])
    assert np.array_equal(room["_mask"], flat["_mask"]) and _geometry(room) == _geometry(flat)
    assert np.abs(room["_image"].astype(int) - flat["_image"]).mean() > 1.0


@pytest.mark.slow
def test_a_small_object_rests_on_a_cube(tmp_path):
    scene = _render(tmp_path / "stacked", "--profile", "t2i_world", "--variations", "stacked=1")
    _agree(scene)
    objs = scene["objects"]
    tops = [o for o in objs if o["resting_on"] is not None]
    assert tops
    for top in tops:
        base = objs[top["resting_on"]]
        assert base["shape"] == "cube" and top["size"] == "small"
        # its centre above the cube's top (the cube's centre is half its height up), over the cube's top face
        assert top["3d_coords"][2] > 2 * base["3d_coords"][2]
        assert math.dist(top["3d_coords"][:2], base["3d_coords"][:2]) < base["3d_coords"][2]


def test_objects_cut_by_the_frame_count_by_their_visible_share(tmp_path):
    scene = _render(tmp_path / "cut", "--profile", "t2i_world", "--variations", "cut_by_frame=1")
    _agree(scene)
    mask, rs = scene["_mask"], scene["render_settings"]
    cut = rs["variations"]["cut_by_frame"]
    assert rs["camera_shift"] != [0.0, 0.0]
    border = {"left": mask[:, 0], "right": mask[:, -1], "top": mask[0], "bottom": mask[-1]}
    assert any(border[e].any() for e in cut["edges"])  # something crosses a drawn edge
    for o in scene["objects"]:
        assert o["visible_fraction"] >= cut["min_visible"]
    for u in scene["uncounted"]:
        assert u["reason"] == "cut_by_frame"
        assert u["visible_fraction"] < cut["min_visible"] or u["mask_pixels"] < rs["min_pixels_per_object"]


@pytest.mark.slow
def test_bevelled_and_marked_cubes_stay_cubes_of_their_colour(tmp_path):
    scene = _render(tmp_path / "cubes", "--profile", "t2i_world", "--variations", "bevelled_cubes=1,pips_decals=1")
    _agree(scene)
    cubes = [o for o in scene["objects"] if o["shape"] == "cube"]
    assert cubes and "uncounted" not in scene  # the marks are part of their cube's mask
    for o in cubes:
        assert o["mesh_variant"]["shape"] == "cube" and 0.25 <= o["mesh_variant"]["bevel"] <= 0.6
        assert o["marks"] is None or o["marks"]["flat"] == pytest.approx(1 - o["mesh_variant"]["bevel"], abs=1e-4)
    assert any(o["marks"] is not None for o in cubes)
    assert all(o["marks"] is None for o in scene["objects"] if o["shape"] != "cube")


@pytest.mark.slow
def test_distractors_are_listed_apart_from_the_objects(tmp_path):
    scene = _render(tmp_path / "oov", "--profile", "t2i_world", "--variations", "distractors=1")
    _agree(scene)
    drawn = scene["render_settings"]["variations"]["distractors"]["items"]
    shown = [u for u in scene["uncounted"] if u["reason"] == "out_of_vocabulary"]
    assert 1 <= len(shown) <= len(drawn)
    for u in shown:
        assert u["shape"] not in ("cube", "sphere", "cylinder") or u["color"] in ("black", "white")
    assert all(o["color"] not in ("black", "white", "other") for o in scene["objects"])
