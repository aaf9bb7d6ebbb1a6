"""Blender CLEVR renders (logicval_hf.generation.blender, ``logicval render-clevr``): sampling, files, resume,
bad input, and the oracle renderer that keeps a witness's regions and orders. Renders need bpy (extra
``blender``) and the official generator's assets (``assets/clevr_blender`` under the test data root, `shared_data`;
docs/data.md); those tests skip without them."""

from __future__ import annotations

import argparse
import json
import math
import sys
import types

import numpy as np
import pytest
from PIL import Image
from shared_data import shared_path

from logicval_hf.generation import blender as B

ASSETS = shared_path("assets", "clevr_blender")
HAVE_ASSETS = (ASSETS / "base_scene.blend").is_file()

def _have_blender() -> bool:
    """bpy runs here (numpy < 2), or a Blender environment is configured ($LOGICVAL_BLENDER_PYTHON)."""
    from logicval_hf.generation.blender_process import blender_python, bpy_in_process

    if bpy_in_process():
        return True
    try:
        blender_python()
    except ValueError:
        return False
    return True


HAVE_BPY = _have_blender()

needs_assets = pytest.mark.skipif(not HAVE_ASSETS, reason=f"CLEVR assets not in {ASSETS} (docs/data.md)")
needs_blender = pytest.mark.skipif(not (HAVE_BPY and HAVE_ASSETS), reason="needs bpy and the CLEVR assets")

PROPS = {"shapes": {"cube": "SmoothCube_v2", "sphere": "Sphere", "cylinder": "SmoothCylinder"},
         "colors": {"gray": [87, 87, 87], "red": [173, 35, 35], "blue": [42, 75, 215]},
         "materials": {"rubber": "Rubber", "metal": "MyMetal"}, "sizes": {"large": 0.7, "small": 0.35}}
DIRS = {"behind": [-0.759, 0.651, 0.0], "front": [0.759, -0.651, 0.0], "left": [-0.651, -0.759, 0.0],
        "right": [0.651, 0.759, 0.0], "above": [0, 0, 1], "below": [0, 0, -1]}
TINY = B.RenderConfig(seed=3, samples=4, denoise=False, width=64, height=48, min_objects=1, max_objects=1,
                      threads=2)


# ---- sampling (pure, no Blender) ---------------------------------------------------------------------------
def test_plan_is_a_function_of_seed_and_index():
    cfg = B.RenderConfig(seed=11, randomise=True)
    assert B.plan_image(cfg, 5) == B.plan_image(cfg, 5)
    assert B.plan_image(cfg, 5) != B.plan_image(cfg, 6)
    assert B.plan_image(cfg, 5) != B.plan_image(B.RenderConfig(seed=12, randomise=True), 5)
    plans = [B.plan_image(cfg, i) for i in range(40)]
    assert all(3 <= p.n_objects <= 10 for p in plans)
    assert all(max(abs(v) for v in p.camera_jitter) <= B.CAMERA_JITTER for p in plans)
    assert all(max(abs(v) for d in p.lamp_jitter.values() for v in d) <= B.LAMP_JITTER for p in plans)
    assert {p.randomised["floor"] for p in plans} == set(B.FLOOR_CHOICES)
    assert all([p.width, p.height] == p.randomised["image_size"] for p in plans)
    plain = B.plan_image(B.RenderConfig(seed=11), 5)
    assert (plain.width, plain.height, plain.randomised) == (480, 320, {})


def _sample(seed: int, n: int, visible=None):
    _, rng = B._rngs(seed, 0)
    return B.sample_objects(rng, n, PROPS, DIRS, visible=visible)


def test_sampling_is_deterministic_and_keeps_the_generator_rules():
    objs, restarts = _sample(4, 8)
    assert (objs, restarts) == _sample(4, 8) and objs != _sample(5, 8)[0]
    assert restarts == 0 and len(objs) == 8
    for i, a in enumerate(objs):
        assert a["shape"] in PROPS["shapes"] and a["color"] in PROPS["colors"] and a["material"] in PROPS["materials"]
        assert a["r"] == PROPS["sizes"][a["size"]] and 0 <= a["rotation"] < 360
        assert -3 <= a["x"] <= 3 and -3 <= a["y"] <= 3
        for b in objs[:i]:
            dx, dy = a["x"] - b["x"], a["y"] - b["y"]
            assert math.hypot(dx, dy) - a["r"] - b["r"] >= B.MIN_DIST
            for d in ("left", "behind"):
                assert abs(dx * DIRS[d][0] + dy * DIRS[d][1]) >= B.MARGIN


def test_a_rejected_scene_restarts():
    calls = []

    def visible(objs):
        calls.append(len(objs))
        return len(calls) > 1

    objs, restarts = _sample(4, 3, visible)
    assert restarts == 1 and calls == [3, 3] and objs != _sample(4, 3)[0]


def test_relationships_follow_clevr():
    objs = [{"3d_coords": [0, 0, 0.7]}, {"3d_coords": [0.2, -2.8, 0.7]}]  # object 1 is left-front of object 0
    rel = B.compute_relationships(objs, DIRS)
    assert rel["left"] == [[1], []] and rel["right"] == [[], [0]]
    assert rel["front"] == [[1], []] and rel["behind"] == [[], [0]]


# ---- bad input ---------------------------------------------------------------------------------------------
def _cli(capsys, *argv):
    from logicval_hf.cli.render_clevr import main

    rc = main(["render-clevr", *map(str, argv)])
    return rc, capsys.readouterr().err.strip()


@pytest.mark.parametrize("extra, needle", [
    (["--num-images", "0"], "--num-images must be >= 1"),
    (["--num-images", "2", "--min-objects", "5", "--max-objects", "3"], "--min-objects (5) is larger"),
    (["--num-images", "1", "--profile", "t2i", "--elevation", "low"], "--elevation must read MIN:MAX"),
    (["--num-images", "1", "--profile", "t2i", "--elevation", "60:20"], "5 <= MIN <= MAX <= 89"),
    (["--num-images", "1", "--elevation", "20:40"], "not clevr"),
])
def test_bad_numbers_give_one_line(tmp_path, capsys, extra, needle):
    rc, err = _cli(capsys, "--out", tmp_path / "o", "--assets", ASSETS, *extra)
    assert rc == 2 and err.count("\n") == 0 and needle in err and err.startswith("logicval: error: ")
    assert not (tmp_path / "o").exists()


def test_missing_or_incomplete_assets_name_where_to_point(tmp_path, capsys):
    rc, err = _cli(capsys, "--out", tmp_path / "o", "--num-images", 1, "--assets", tmp_path / "nowhere")
    assert rc == 2 and err.count("\n") == 0 and "image_generation/data/" in err and "does not exist" in err
    (tmp_path / "part").mkdir()
    (tmp_path / "part" / "properties.json").write_text(json.dumps(PROPS))
    rc, err = _cli(capsys, "--out", tmp_path / "o", "--num-images", 1, "--assets", tmp_path / "part")
    assert rc == 2 and "lacks base_scene.blend" in err and "shapes/Sphere.blend" in err
    assert not (tmp_path / "o").exists()


@needs_assets
def test_missing_bpy_says_how_to_set_up_blender(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "bpy", None)  # import bpy -> ImportError
    monkeypatch.delenv("LOGICVAL_BLENDER_PYTHON", raising=False)
    with pytest.raises(B.BlenderUnavailable, match=r"pip install bpy==5\.0\.1"):
        B.require_bpy()
    rc, err = _cli(capsys, "--out", tmp_path / "o", "--num-images", 1, "--assets", ASSETS)
    assert rc == 2 and "LOGICVAL_BLENDER_PYTHON" in err and err.count("\n") == 0
    monkeypatch.setenv("LOGICVAL_BLENDER_PYTHON", str(tmp_path / "no-python"))
    rc, err = _cli(capsys, "--out", tmp_path / "o", "--num-images", 1, "--assets", ASSETS)
    assert rc == 2 and "not an executable Python interpreter" in err and err.count("\n") == 0
    with pytest.raises(ValueError, match="bpy"):
        B.BlenderSceneRenderer(ASSETS)


def test_bpy_without_its_companions_names_them(monkeypatch):
    # a bare `pip install bpy` environment: bpy imports, pillow and tqdm do not
    monkeypatch.setitem(sys.modules, "bpy", types.ModuleType("bpy"))
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(B.BlenderUnavailable, match=r"has bpy but not tqdm: .* -m pip install tqdm$"):
        B.require_bpy()
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(B.BlenderUnavailable, match=r"not pillow, tqdm: .*pip install pillow tqdm$"):
        B.require_bpy()


def test_subcommand_registers():
    from logicval_hf.cli.render_clevr import add_subcommands, cmd_render_clevr

    p = argparse.ArgumentParser()
    add_subcommands(p.add_subparsers(dest="command"))
    a = p.parse_args(["render-clevr", "--out", "o", "--num-images", "3", "--assets", "x", "--no-denoise"])
    assert a.func is cmd_render_clevr and a.denoise is False and (a.samples, a.width, a.height) == (32, 480, 320)
    # object counts default to the profile's (clevr: 3-10), resolved when the command runs
    assert (a.min_objects, a.max_objects, a.chunk, a.threads, a.start_index, a.randomise) == \
        (None, None, 20, 2, 0, False)
    assert a.profile is None and a.long_side is None and a.empty is False
    # the command the Blender environment runs keeps the option
    from logicval_hf.cli.render_clevr import _argv_of

    empty = p.parse_args(["render-clevr", "--out", "o", "--num-images", "3", "--assets", "x", "--empty"])
    assert empty.empty and "--empty" in _argv_of(empty) and "--empty" not in _argv_of(a)


# ---- renders (through the command, so they run wherever bpy lives: here or in its own environment) -------------
def _render(out, num=1, seed=3, start=0, chunk=20, extra=()):
    from logicval_hf.cli.render_clevr import main

    return main(["render-clevr", "--out", str(out), "--num-images", str(num), "--seed", str(seed),
                 "--assets", str(ASSETS), "--samples", "4", "--no-denoise", "--width", "64", "--height", "48",
                 "--min-objects", "1", "--max-objects", "1", "--threads", "2", "--start-index", str(start),
                 "--chunk", str(chunk), "--no-progress", *extra])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("clevrx")
    return out, _render(out)


@needs_blender
def test_tiny_render_mask_box_and_json_agree(tiny):
    out, rc = tiny
    assert rc == 0
    scene = json.loads((out / "scenes" / "CLEVRX_000000.json").read_text())
    img = np.array(Image.open(out / "images" / "CLEVRX_000000.png"))
    mask = np.array(Image.open(out / "masks" / "CLEVRX_000000.png"))
    assert img.shape == (48, 64, 3) and mask.shape == (48, 64) and mask.dtype == np.uint8
    assert set(np.unique(mask)) <= {0, 1}
    (o,) = scene["objects"]
    ys, xs = np.nonzero(mask == 1)
    assert o["mask_index"] == 1 and o["mask_pixels"] == len(xs) > 0
    assert o["bbox_xyxy"] == [xs.min(), ys.min(), xs.max(), ys.max()]
    px, py, depth = o["pixel_coords"]
    assert 0 <= px < 64 and 0 <= py < 48 and depth > 0
    # the attributes are the sampled ones: the pure sampling with the recorded directions gives them back
    rs = scene["render_settings"]
    assert rs["restarts"] == 0 and (rs["width"], rs["height"], rs["samples"], rs["seed"]) == (64, 48, 4, 3)
    _, rng = B._rngs(TINY.seed, 0)
    (s,), _ = B.sample_objects(rng, 1, B.load_assets(ASSETS), scene["directions"])
    assert {k: o[k] for k in ("shape", "size", "material", "color")} == {k: s[k] for k in ("shape", "size",
                                                                                             "material", "color")}
    assert o["rotation"] == s["rotation"]
    assert np.allclose(o["3d_coords"], [s["x"], s["y"], s["r"]], atol=1e-5)
    assert scene["seed"] == 3 and scene["image_filename"] == "CLEVRX_000000.png"
    assert set(scene["relationships"]) == {"behind", "front", "left", "right"}
    assert set(scene["directions"]) == {"behind", "front", "left", "right", "above", "below"}
    combined = json.loads((out / "scenes.json").read_text())
    assert combined["info"]["count"] == 1 and combined["scenes"] == [scene]


@needs_blender
def test_rerun_renders_nothing_new_and_other_settings_are_refused(tiny, capfd):
    out, _ = tiny
    before = (out / "images" / "CLEVRX_000000.png").stat().st_mtime_ns
    capfd.readouterr()
    assert _render(out) == 0
    assert '"rendered": 0, "skipped": 1' in capfd.readouterr().out
    assert (out / "images" / "CLEVRX_000000.png").stat().st_mtime_ns == before
    assert not list(out.rglob("*.tmp"))
    assert _render(out, seed=4) == 2
    assert "other settings" in capfd.readouterr().err


@needs_blender
@pytest.mark.slow
def test_oracle_keeps_regions_and_orders_of_a_witness():
    from logicval_hf import solve
    from logicval_hf.generation.blender_process import scene_renderer

    spec = {"n": 3, "constraints": [{"template": "C1/1prop",
                                     "params": {"A1": {"prop": "color", "value": "red", "negated": False}}}]}
    witness = solve(spec).witness
    with scene_renderer(ASSETS, width=96, height=64, samples=2, seed=1, denoise=False, threads=2) as renderer:
        rgb, out = renderer.render(witness)
    assert rgb.shape == (64, 96, 3) and rgb.dtype == np.uint8 and out.image_size == (96, 64)
    assert [o.attributes for o in out.objects] == [dict(o.attributes) for o in witness.objects]
    assert out.regions() == witness.regions()
    assert sorted(out.relations()) == sorted(witness.relations())


@needs_blender
def test_ranges_render_in_any_order_to_the_same_files(tiny, tmp_path):
    out, _ = tiny
    assert _render(tmp_path, start=1) == 0
    assert _render(tmp_path, num=2, chunk=1) == 0
    for sub in ("images/CLEVRX_000000.png", "masks/CLEVRX_000000.png", "scenes/CLEVRX_000000.json"):
        assert (tmp_path / sub).read_bytes() == (out / sub).read_bytes(), sub
    combined = json.loads((tmp_path / "scenes.json").read_text())
    assert [s["image_index"] for s in combined["scenes"]] == [0, 1]


# ---- the built-in generators in the CLEVR look (logicval run --renderer blender) ----------------------------------
def test_renderer_choice_is_checked_before_any_work(tmp_path):
    from logicval_hf.generation.builtin import make_generator
    from logicval_hf.job.run import run

    with pytest.raises(ValueError, match="unknown renderer 'povray'"):
        make_generator("oracle", renderer="povray")
    with pytest.raises(ValueError, match="needs the CLEVR assets"):
        make_generator("oracle", renderer="blender")
    with pytest.raises(ValueError, match="needs --assets"):
        run(tmp_path / "r", generators=["oracle"], limit=1, renderer="blender", progress=False)
    with pytest.raises(ValueError, match="does not exist"):
        run(tmp_path / "r", generators=["oracle"], limit=1, renderer="blender", assets=tmp_path / "nowhere",
            progress=False)


@needs_blender
@pytest.mark.slow
def test_oracle_and_perturbed_images_in_the_clevr_look_keep_their_known_truth():
    from logicval_hf.benchmark.sampler import cached_benchmark
    from logicval_hf.generation.builtin import make_generator

    rows = [next(r for r in cached_benchmark().all_rows() if r["package"] == p) for p in ("1SAT", "1UNSAT")]
    settings = {"image_size": (96, 64), "renderer": "blender", "assets": str(ASSETS),
                "blender": {"samples": 1, "denoise": False, "threads": 2}}
    oracle, perturbed = make_generator("oracle", **settings), make_generator("perturbed", **settings)
    for row in rows:
        image, _drawn, meta = oracle.generate(row)
        assert image.size == (96, 64) and meta["renderer"] == "blender" and meta["truth_ok"], meta
    _image, _drawn, meta = perturbed.generate(rows[0])
    assert meta["renderer"] == "blender" and not meta["truth_ok"], meta


@needs_blender
def test_t2i_profile_renders_a_tiny_image_whose_mask_box_and_json_agree(tmp_path):
    from logicval_hf.cli.render_clevr import main

    out = tmp_path / "t2i"
    rc = main(["render-clevr", "--out", str(out), "--num-images", "2", "--seed", "11", "--assets", str(ASSETS),
               "--profile", "t2i", "--long-side", "72:96", "--samples", "2", "--no-denoise", "--max-objects", "3",
               "--threads", "2", "--no-progress"])
    assert rc == 0
    for i in range(2):
        scene = json.loads((out / "scenes" / f"CLEVRX_{i:06d}.json").read_text())
        img = np.array(Image.open(out / "images" / f"CLEVRX_{i:06d}.png"))
        mask = np.array(Image.open(out / "masks" / f"CLEVRX_{i:06d}.png"))
        H, W = mask.shape
        rs = scene["render_settings"]
        assert img.shape == (H, W, 3) and 72 <= max(W, H) <= 96 and [rs["width"], rs["height"]] == [W, H]
        assert scene["split"] == "blender-t2i" and rs["profile"] == "t2i" and rs["long_side"] == [72, 96]
        assert {"camera", "floor", "lights", "camera_placed"} <= set(rs)
        assert 1 <= len(scene["objects"]) <= 3
        border = np.concatenate([mask[0], mask[-1], mask[:, 0], mask[:, -1]])
        assert not border.any()  # every object whole inside the frame
        for k, o in enumerate(scene["objects"], start=1):
            ys, xs = np.nonzero(mask == k)
            assert o["mask_pixels"] == len(xs) > 0 and o["bbox_xyxy"] == [xs.min(), ys.min(), xs.max(), ys.max()]
            px, py, depth = o["pixel_coords"]
            assert 0 <= px < W and 0 <= py < H and depth > 0
            assert {"scale", "stretch", "mesh_variant"} <= set(o)
    assert json.loads((out / "render_config.json").read_text())["profile"] == "t2i"


@needs_blender
def test_t2i_wide_profile_renders_its_sky_and_finishes(tmp_path):
    """Profile t2i_wide: the sky and every object's finish of its own material reach the scene files, and the
    mask, boxes and JSON agree as in the t2i look (seed 2: both images draw a sky and a finish)."""
    from logicval_hf.cli.render_clevr import main

    out = tmp_path / "wide"
    rc = main(["render-clevr", "--out", str(out), "--num-images", "2", "--seed", "2", "--assets", str(ASSETS),
               "--profile", "t2i_wide", "--long-side", "72:96", "--samples", "2", "--no-denoise",
               "--max-objects", "3", "--threads", "2", "--no-progress"])
    assert rc == 0
    for i in range(2):
        scene = json.loads((out / "scenes" / f"CLEVRX_{i:06d}.json").read_text())
        mask = np.array(Image.open(out / "masks" / f"CLEVRX_{i:06d}.png"))
        rs = scene["render_settings"]
        assert scene["split"] == "blender-t2i_wide" and rs["profile"] == "t2i_wide"
        assert set(rs["sky"]) == {"zenith_rgb", "horizon_rgb", "softness", "strength"}
        assert any(o["finish"] is not None for o in scene["objects"])
        for k, o in enumerate(scene["objects"], start=1):
            assert o["finish"] is None or set(o["finish"]) == (
                {"roughness", "ior"} if o["material"] == "rubber" else {"roughness_scale"})
            ys, xs = np.nonzero(mask == k)
            assert o["mask_pixels"] == len(xs) > 0 and o["bbox_xyxy"] == [xs.min(), ys.min(), xs.max(), ys.max()]
    assert json.loads((out / "render_config.json").read_text())["profile"] == "t2i_wide"


@needs_blender
def test_empty_frames_show_the_stage_the_scene_framed_without_its_objects(tmp_path):
    """``--empty``: the right image for an UNSAT prompt, in the profile's look. The same seed and index without
    the option draws the same camera, floor and lights, and the objects that framed it."""
    from logicval_hf.cli.render_clevr import main

    common = ["--num-images", "1", "--seed", "11", "--assets", str(ASSETS), "--profile", "t2i", "--long-side",
              "72:96", "--samples", "2", "--no-denoise", "--max-objects", "3", "--threads", "2", "--no-progress"]
    assert main(["render-clevr", "--out", str(tmp_path / "full"), *common]) == 0
    assert main(["render-clevr", "--out", str(tmp_path / "empty"), *common, "--empty"]) == 0
    full, empty = (json.loads((tmp_path / d / "scenes" / "CLEVRX_000000.json").read_text()) for d in ("full", "empty"))
    mask = np.array(Image.open(tmp_path / "empty" / "masks" / "CLEVRX_000000.png"))
    img = np.array(Image.open(tmp_path / "empty" / "images" / "CLEVRX_000000.png"))
    assert empty["objects"] == [] and not mask.any() and img.shape[:2] == mask.shape
    assert all(v == [] for v in empty["relationships"].values())
    rs, rf = empty["render_settings"], full["render_settings"]
    assert rs["empty"] == 1 and rs["framed_on_objects"] == len(full["objects"]) >= 1 and "empty" not in rf
    assert {k: rs[k] for k in ("camera_placed", "floor", "lights", "width", "height")} == \
        {k: rf[k] for k in ("camera_placed", "floor", "lights", "width", "height")}
    full_img = np.array(Image.open(tmp_path / "full" / "images" / "CLEVRX_000000.png"))
    assert (full_img != img).any()
    assert json.loads((tmp_path / "empty" / "render_config.json").read_text())["empty"] == 1


@needs_blender
def test_elevation_option_reaches_the_render_and_its_settings(tmp_path):
    from logicval_hf.cli.render_clevr import main

    out = tmp_path / "low"
    rc = main(["render-clevr", "--out", str(out), "--num-images", "1", "--seed", "12", "--assets", str(ASSETS),
               "--profile", "t2i", "--long-side", "64:72", "--elevation", "18:24", "--samples", "1", "--no-denoise",
               "--max-objects", "2", "--threads", "2", "--no-progress"])
    assert rc == 0
    rs = json.loads((out / "scenes" / "CLEVRX_000000.json").read_text())["render_settings"]
    assert rs["elevation_range"] == [18.0, 24.0] and 18.0 <= rs["camera"]["elevation_deg"] <= 24.0
    assert json.loads((out / "render_config.json").read_text())["elevation"] == [18.0, 24.0]


def test_an_unknown_render_profile_is_one_line_naming_the_known_ones(tmp_path, capfd):
    from logicval_hf.cli.render_clevr import main

    rc = main(["render-clevr", "--out", str(tmp_path / "x"), "--num-images", "1", "--assets", str(tmp_path),
               "--profile", "t2l"])
    err = capfd.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "t2i" in err and "clevr" in err and "randomise" in err


@needs_blender
@pytest.mark.slow
def test_each_world_kind_renders_with_mask_box_and_json_agreeing(tmp_path):
    """Profile t2i_world, one tiny image per world kind it draws (``--worlds KIND``) at the same seed and index:
    the scene records its kind, mask, boxes and JSON agree, and the world changes the pixels but never the objects
    or their masks (the studio's backdrop stands behind every object). Rooms (profile t2i_real):
    test_blender_variations.py."""
    from logicval_hf.cli.render_clevr import main
    from logicval_hf.generation.clevr_sampling import RENDER_PROFILES

    kinds = sorted(k for k, _ in RENDER_PROFILES.get("t2i_world").t2i.worlds)
    masks, images, objects = {}, {}, {}
    for kind in kinds:
        out = tmp_path / kind
        rc = main(["render-clevr", "--out", str(out), "--num-images", "1", "--seed", "2", "--assets", str(ASSETS),
                   "--profile", "t2i_world", "--worlds", kind, "--long-side", "64:80", "--samples", "2",
                   "--no-denoise", "--max-objects", "2", "--threads", "2", "--no-progress"])
        assert rc == 0
        scene = json.loads((out / "scenes" / "CLEVRX_000000.json").read_text())
        mask = np.array(Image.open(out / "masks" / "CLEVRX_000000.png"))
        images[kind] = np.array(Image.open(out / "images" / "CLEVRX_000000.png"))
        rs = scene["render_settings"]
        assert scene["split"] == "blender-t2i_world" and rs["profile"] == "t2i_world" and rs["world"]["kind"] == kind
        assert json.loads((out / "render_config.json").read_text())["worlds"] == [kind]
        border = np.concatenate([mask[0], mask[-1], mask[:, 0], mask[:, -1]])
        assert not border.any() and images[kind].shape[:2] == mask.shape
        for k, o in enumerate(scene["objects"], start=1):
            ys, xs = np.nonzero(mask == k)
            assert o["mask_pixels"] == len(xs) > 0 and o["bbox_xyxy"] == [xs.min(), ys.min(), xs.max(), ys.max()]
            assert o["mask_at_pixel_coords"] in (0, k)
        masks[kind] = mask
        objects[kind] = [{k: o[k] for k in ("shape", "color", "material", "3d_coords", "bbox_xyxy")}
                         for o in scene["objects"]]
    for kind in kinds:
        assert np.array_equal(masks[kind], masks["plain"]) and objects[kind] == objects["plain"], kind
        if kind != "plain":
            assert np.abs(images[kind].astype(int) - images["plain"]).mean() > 1.0, kind
