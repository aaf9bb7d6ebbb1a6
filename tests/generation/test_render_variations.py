"""Variations of ``logicval render-clevr`` (logicval_hf/generation/clevr_variations.py), the world kind ``room``
and profile ``t2i_real``, the cut frame's geometry and how the truth counts: everything that runs without
Blender. The renders themselves are tested in test_blender_variations.py."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections import Counter

import numpy as np
import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.generation import clevr_sampling as S
from logicval_hf.generation.clevr_framing import EDGES, cut_shift, overscan
from logicval_hf.generation.clevr_truth import count_objects, counted_cut, cut_fractions, relabel, visible_point
from logicval_hf.generation.clevr_variations import (
    CUT_MIN_VISIBLE,
    DECAL_SHAPES,
    OOV_SHAPES,
    VARIATIONS,
    dress_objects,
    parse_variations,
    place_distractors,
    soften,
    stack_objects,
    tint_lights,
)
from logicval_hf.generation.clevr_worlds import ROOM_STYLES, draw_world

NAMES = ("bevelled_cubes", "cut_by_frame", "distractors", "glossy_floor", "pips_decals", "small_soft", "stacked",
         "surfaces", "tinted_light")
WORLD = S.RenderConfig(seed=7, profile="t2i_world", min_objects=1, max_objects=10)
REAL = S.RenderConfig(seed=7, profile="t2i_real", min_objects=1, max_objects=10)


def _digest(config: S.RenderConfig, indices) -> str:
    h = hashlib.sha256()
    for i in indices:
        h.update(json.dumps(dataclasses.asdict(S.plan_image(config, i)), sort_keys=True).encode())
    return h.hexdigest()[:16]


def _forced(*names: str, seed: int = 7, profile: str = "t2i_world") -> S.RenderConfig:
    return S.RenderConfig(seed=seed, profile=profile, min_objects=1, max_objects=10,
                          variations=parse_variations([f"{n}=1" for n in names]))


# ---- names, parsing, settings -------------------------------------------------------------------------------------
def test_variations_are_declared_with_rates_and_descriptions():
    assert VARIATIONS.names() == sorted(NAMES)
    for name in NAMES:
        v = VARIATIONS.get(name)
        assert v.name == name and 0 < v.rate < 1 and v.description


@pytest.mark.parametrize("text, expected", [
    ("stacked", (("stacked", 0.25),)),
    ("tinted_light=0.5, glossy_floor", (("glossy_floor", 0.3), ("tinted_light", 0.5))),
    (["surfaces=1", "cut_by_frame=0"], (("cut_by_frame", 0.0), ("surfaces", 1.0))),
    ("none", ()),
    (None, None),
])
def test_variations_parse_in_registry_order_with_their_rates(text, expected):
    assert parse_variations(text) == expected


def test_all_names_every_variation_at_its_rate():
    assert parse_variations("all") == tuple((n, VARIATIONS.get(n).rate) for n in sorted(NAMES))


@pytest.mark.parametrize("text, needle", [
    ("", "names none"),
    ("stackd", "did you mean 'stacked'"),
    ("stacked=high", "must be a number"),
    ("stacked=1.5", "must lie in [0, 1]"),
    ("stacked,stacked=0.5", "twice"),
])
def test_bad_variations_are_one_line(text, needle):
    with pytest.raises(ValueError) as e:
        parse_variations(text)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_variations_need_a_profile_that_draws_the_camera():
    with pytest.raises(ValueError, match="--variations applies to profiles that draw the camera"):
        S.RenderConfig(variations=(("stacked", 1.0),)).validate()
    with pytest.raises(ValueError, match="<= 251 with distractors"):
        S.RenderConfig(profile="t2i", max_objects=253, variations=(("distractors", 1.0),)).validate()
    assert _forced("stacked").validate().variation_rates() == (("stacked", 1.0),)
    assert REAL.validate().variation_rates() == parse_variations("all")
    assert WORLD.variation_rates() == () and S.RenderConfig().variation_rates() == ()


def test_manifests_say_the_variations_and_older_ones_stay_as_they_were():
    assert "variations" not in WORLD.fingerprint() and "variations" not in REAL.fingerprint()
    fp = _forced("stacked", "small_soft").fingerprint()
    assert fp["variations"] == [["small_soft", 1.0], ["stacked", 1.0]] and fp["profile"] == "t2i_world"
    assert REAL.fingerprint()["profile"] == "t2i_real"


# ---- the draws ----------------------------------------------------------------------------------------------------
def test_existing_profiles_draw_as_before_the_variations():
    """Plans hashed with the code before the variations existed: no profile's draws move without the option."""
    assert _digest(WORLD, range(0, 60, 3)) == "1ee20233683bfb6d"
    narrow = S.RenderConfig(seed=7, profile="t2i_world", min_objects=1, max_objects=10, worlds=("studio", "plain"),
                            sky_in_frame=True, long_side=(256, 448))
    assert _digest(narrow, range(30)) == "e6208f399656b174"
    assert _digest(S.RenderConfig(seed=7, profile="t2i", min_objects=1, max_objects=10, empty=True), range(30)) == \
        "acdbccb84f155bee"


@pytest.mark.parametrize("names", [("stacked",), ("glossy_floor", "surfaces"), ("cut_by_frame", "small_soft",
                                                                                 "distractors", "pips_decals")])
def test_a_variation_changes_nothing_else_an_image_draws(names):
    """Every draw of the profile stays; only ``variations`` appears (and the lamps' colours under tinted_light)."""
    config = _forced(*names)
    for i in range(examples(40)):
        base, varied = S.plan_image(WORLD, i), S.plan_image(config, i)
        x = dict(varied.randomised)
        drawn = x.pop("variations")
        assert set(drawn) == set(names) and all(drawn[n] is not None for n in names)
        assert x == base.randomised and dataclasses.replace(varied, randomised={}) == \
            dataclasses.replace(base, randomised={})


def test_each_variation_keeps_its_draws_whatever_else_is_drawn_and_at_any_rate():
    for i in range(examples(30)):
        alone = S.plan_image(_forced("stacked"), i).randomised["variations"]["stacked"]
        together = S.plan_image(_forced(*NAMES), i).randomised["variations"]["stacked"]
        assert alone == together
        rated = dataclasses.replace(WORLD, variations=(("stacked", 0.4),))
        drawn = S.plan_image(rated, i).randomised["variations"]["stacked"]
        assert drawn is None or drawn == alone


def test_rates_are_the_share_of_images_that_get_a_variation():
    n = examples(400)
    rates = dict(REAL.variation_rates())
    got = Counter(k for i in range(n) for k, v in S.plan_image(REAL, i).randomised["variations"].items()
                  if v is not None)
    for name, rate in rates.items():  # within four standard errors
        assert abs(got[name] / n - rate) < 4 * math.sqrt(rate * (1 - rate) / n), (name, got[name])
    worlds = Counter(S.plan_image(REAL, i).randomised["world"]["kind"] for i in range(n))
    assert abs(worlds["room"] / n - 0.35) < 4 * math.sqrt(0.35 * 0.65 / n)
    assert set(worlds) == {"room", "sky_gradient", "procedural_sky", "studio", "distant_shapes", "plain"}


def test_tinted_light_colours_the_lamps():
    config = _forced("tinted_light")
    for i in range(examples(40)):
        base, varied = S.plan_image(WORLD, i).randomised["lights"], S.plan_image(config, i).randomised
        tint = varied["variations"]["tinted_light"]
        assert varied["lights"] == tint_lights(base, tint)
        assert varied["lights"]["key_rgb"] == tint["key_rgb"] and max(tint["key_rgb"]) == 1.0
        assert min(tint["key_rgb"]) <= 0.45  # saturated: a colour cast, not a colour temperature
        assert varied["lights"]["energy_scale"] > base["energy_scale"]
        assert 0.15 <= tint["world_scale"] <= 0.5 and tint["mode"] in ("one", "two")
    assert tint_lights(base, None) == base


def test_each_variations_draws_stay_in_their_ranges():
    for i in range(examples(60)):
        p = S.plan_image(_forced(*NAMES), i)
        v, n = p.randomised["variations"], p.n_objects
        g = v["glossy_floor"]
        assert g["finish"] in ("mirror", "glossy") and 0 <= g["roughness"] <= 0.25 and 0.15 <= g["weight"] <= 0.85
        assert len(v["surfaces"]["objects"]) == n
        for slot in v["surfaces"]["objects"]:
            if slot is not None:
                assert slot["metal"]["kind"] in ("glass", "plastic") and slot["rubber"]["kind"] in ("frosted", "wax")
        assert v["stacked"]["pairs"] in (1, 2) and all(abs(c) <= 1 for o in v["stacked"]["offsets"] for c in o)
        cut = v["cut_by_frame"]
        assert 1 <= len(cut["edges"]) <= 2 and len(cut["keep"]) == len(cut["edges"])
        assert all(e in EDGES for e in cut["edges"]) and all(0.1 <= k <= 0.9 for k in cut["keep"])
        assert cut["min_visible"] == CUT_MIN_VISIBLE
        if len(cut["edges"]) == 2:  # a corner: one side edge and one top or bottom edge
            assert {e in ("left", "right") for e in cut["edges"]} == {True, False}
        assert len(v["bevelled_cubes"]["bevels"]) == n and all(0.25 <= b <= 0.6 for b in v["bevelled_cubes"]["bevels"])
        for mark in v["pips_decals"]["objects"]:
            if mark is not None and mark["kind"] == "pips":
                faces = mark["faces"]
                assert sorted(faces) == [1, 2, 3, 4, 5, 6] and all(faces[k] + faces[k + 1] == 7 for k in (0, 2, 4))
            elif mark is not None:
                assert mark["shape"] in DECAL_SHAPES and any(mark["faces"]) and 0.35 <= mark["size"] <= 0.8
        d = v["distractors"]
        assert 1 <= d["count"] == len(d["items"]) <= 3
        for item in d["items"]:
            if item["shape"] in OOV_SHAPES:
                assert item["color"] == "other"
            else:  # a CLEVR shape outside CLEVR's colours, matte (a white metal would mirror like gray metal)
                assert item["color"] in ("black", "white") and item["material"] == "rubber"
        s = v["small_soft"]
        assert 128 <= s["long_side"] <= 200 and 0.2 <= s["blur"] <= 0.7 and s["jpeg"] in (None, *range(55, 91))


def test_rooms_draw_their_styles_windows_and_light():
    seen = Counter()
    for i in range(examples(120)):
        room = draw_world(13, i, [("room", 1.0)])
        seen[room["style"]] += 1
        assert room["kind"] == "room" and room["style"] in ROOM_STYLES and -35 <= room["turn_deg"] <= 35
        assert len(room["windows"]) <= 2 and (room["style"] != "cyclorama" or not room["windows"])
        assert room["shaft"] is None or (room["windows"] and 0.15 <= room["shaft"]["density"] <= 0.6)
        for w in room["windows"]:
            assert 0.06 <= w["sill"] <= 0.36 and 0.4 <= w["height"] <= 0.85 and 0 <= w["cols"] <= 2
        light = room["light"]
        assert 20 <= light["elevation_deg"] <= 55 and 2 <= light["spread_deg"] <= 8
        assert room["outside"]["palette"] in ("day", "overcast", "sunset", "tinted")
    assert set(seen) == set(ROOM_STYLES)


def test_rooms_are_drawn_by_t2i_real_only_and_open_the_floor():
    with pytest.raises(ValueError, match="leaves none"):
        dataclasses.replace(WORLD, worlds=("room",)).validate()
    rooms = dataclasses.replace(REAL, worlds=("room",))
    for i in range(examples(30)):
        x = S.plan_image(rooms, i).randomised
        assert x["world"]["kind"] == "room" and x["floor"]["half_side"] == REAL.look.t2i.open_floor
        base = S.plan_image(WORLD, i).randomised
        assert x["floor"]["glow"] == pytest.approx(0.3 * base["floor"]["glow"], abs=1e-4)


# ---- what the variations do to objects ----------------------------------------------------------------------------
def _objs(specs):
    return [{"shape": s, "object": {"cube": "SmoothCube_v2", "sphere": "Sphere", "cylinder": "SmoothCylinder"}[s],
             "size": z, "r": 0.7 if z == "large" else 0.35, "x": float(k), "y": 0.0, "material": m, "color": "red",
             "stretch": (1.0, 1.0, 1.0), "variant": None}
            for k, (s, z, m) in enumerate(specs)]


def test_a_small_object_rests_on_a_cube_and_its_3d_position_follows():
    objs = _objs([("sphere", "small", "rubber"), ("cylinder", "large", "metal"), ("sphere", "large", "rubber")])
    stacked = {"pairs": 1, "offsets": [[1.0, -1.0], [0.0, 0.0]]}
    stack_objects(objs, stacked, "SmoothCube_v2")
    # the first large object becomes the cube, the next object after it the small one on top
    assert [o["resting_on"] for o in objs] == [None, None, 1]
    assert objs[1]["shape"] == "cube" and objs[1]["object"] == "SmoothCube_v2" and objs[2]["size"] == "small"
    objs[2]["r"] = 0.35  # the size the t2i look's draws give a small object
    variations = {"stacked": stacked}
    dress_objects(objs, variations)
    again = [dict(o) for o in objs]
    stack_objects(objs, stacked, "SmoothCube_v2")
    dress_objects(objs, variations)
    assert objs == again  # idempotent: the visibility check dresses every candidate scene
    top, base = objs[2], objs[1]
    assert top["z0"] == pytest.approx(2 * base["r"])  # on the cube's top face
    assert math.hypot(top["x"] - base["x"], top["y"] - base["y"]) <= 0.3 * base["r"] * math.sqrt(2) + 1e-9
    assert "z0" not in base
    # two pairs need four objects: with three, one pair
    objs = _objs([("sphere", "small", "rubber")] * 3)
    stack_objects(objs, {"pairs": 2, "offsets": [[0, 0], [0, 0]]}, "SmoothCube_v2")
    assert sum(o["resting_on"] is not None for o in objs) == 1 and objs[0]["shape"] == "cube"


def test_surfaces_keep_the_material_label_and_marks_go_on_cubes_only():
    objs = _objs([("cube", "large", "metal"), ("sphere", "small", "rubber"), ("cube", "small", "rubber")])
    surfaces = {"objects": [{"metal": {"kind": "glass"}, "rubber": {"kind": "wax"}}, None,
                            {"metal": {"kind": "plastic"}, "rubber": {"kind": "frosted"}}]}
    pips = {"kind": "pips", "faces": [1, 6, 2, 5, 3, 4], "radius": 0.12, "rgb": [0.02] * 3}
    dress_objects(objs, {"surfaces": surfaces, "pips_decals": {"objects": [pips, pips, None]},
                         "bevelled_cubes": {"bevels": [0.5, 0.5, 0.3]}})
    assert [o["surface"] for o in objs] == [{"kind": "glass"}, None, {"kind": "frosted"}]
    assert [o["material"] for o in objs] == ["metal", "rubber", "rubber"]
    assert objs[0]["marks"] == {**pips, "flat": 0.5} and objs[1]["marks"] is None and objs[2]["marks"] is None
    assert objs[0]["variant"] == {"shape": "cube", "bevel": 0.5} and objs[1]["variant"] is None
    plain = _objs([("cube", "large", "metal")])
    dress_objects(plain, {"pips_decals": {"objects": [pips]}})
    assert plain[0]["marks"]["flat"] == 0.8  # CLEVR's cube mesh: flat faces out to 0.8 of its half side
    untouched = _objs([("cube", "large", "metal")])
    dress_objects(untouched, {})
    assert untouched == _objs([("cube", "large", "metal")])


def test_distractors_stand_apart_from_objects_and_each_other():
    for i in range(examples(40)):
        p = S.plan_image(_forced("distractors"), i)
        objs = [{"x": x, "y": y, "r": 0.5} for x, y in np.random.default_rng(i).uniform(-2, 2, (p.n_objects, 2))]
        placed = place_distractors(objs, p.randomised["variations"]["distractors"], 2.0)
        assert placed == place_distractors(objs, p.randomised["variations"]["distractors"], 2.0)
        assert len(placed) <= p.randomised["variations"]["distractors"]["count"]
        for k, d in enumerate(placed):
            assert abs(d["x"]) <= 2.5 and abs(d["y"]) <= 2.5
            for o in [*objs, *placed[:k]]:
                assert math.hypot(d["x"] - o["x"], d["y"] - o["y"]) - d["r"] - o["r"] >= 0.1 - 1e-3
    assert place_distractors([], None, 2.0) == []


# ---- the cut frame and the truth ------------------------------------------------------------------------------------
@given(st.integers(0, 200), st.integers(0, 200), st.integers(1, 80), st.integers(1, 80),
       st.sampled_from(EDGES), st.floats(0.1, 0.9), st.sampled_from([(240, 160), (160, 240), (200, 200)]))
@settings(max_examples=60, deadline=None)
def test_the_shift_leaves_the_drawn_share_of_the_box_inside_the_frame(x0, y0, w, h, edge, keep, size):
    width, height = size
    box = [x0, y0, x0 + w - 1, y0 + h - 1]
    sx, sy = cut_shift(box, edge, keep, width, height)
    side = max(width, height)
    dx, dy = -sx * side, sy * side  # the content moves opposite to the view; rows grow downwards
    x0n, x1n, y0n, y1n = box[0] + dx, box[2] + 1 + dx, box[1] + dy, box[3] + 1 + dy
    inside = {"left": (x1n - 0) / w, "right": (width - x0n) / w, "top": (y1n - 0) / h, "bottom": (height - y0n) / h}
    assert inside[edge] == pytest.approx(keep, abs=1e-9)
    assert (sx == 0) == (edge in ("top", "bottom")) and (sy == 0) == (edge in ("left", "right"))


def test_the_overscan_keeps_the_pixel_grid():
    w, h, sensor, (sx, sy) = overscan(240, 160, 32.0, (0.1, -0.05), 120)
    assert (w, h) == (480, 400) and sensor / w == pytest.approx(32.0 / 240) and sx * w == pytest.approx(0.1 * 240)
    assert sy * w == pytest.approx(-0.05 * 240)
    w, h, sensor, _ = overscan(160, 240, 32.0, (0.0, 0.0), 80)
    assert (w, h) == (320, 400) and sensor / h == pytest.approx(32.0 / 240)


def test_cut_objects_count_when_enough_of_them_is_inside():
    assert counted_cut(40, 100, 10, 0.4) and not counted_cut(39, 100, 10, 0.4)
    assert not counted_cut(40, 100, 41, 0.4) and not counted_cut(0, 0, 1, 0.4)
    over = np.zeros((20, 30), np.uint8)
    over[5:15, 8:14] = 1        # object 1: 60 pixels, 30 inside the window [5:15, 5:15]... below
    over[0:4, 0:4] = 2          # object 2: outside the window entirely
    inside_window = (slice(5, 15), slice(5, 20))
    frac = cut_fractions(over, 5, 15, 10, 2)
    assert frac == [(int((over[inside_window] == 1).sum()), 60), (0, 16)]


def test_the_truth_counts_objects_and_relabels_the_mask():
    mask = np.zeros((10, 10), np.uint8)
    mask[0, :5] = 1     # object 0: cut to a sliver
    mask[2, :6] = 2     # object 1: counted
    mask[4, :3] = 3     # object 2: counted
    mask[6, :4] = 4     # distractor 0 shows
    counted, left = count_objects(mask, 3, 2, [(5, 50), (6, 6), (3, 3)], need=2, min_visible=0.4)
    assert counted == [1, 2] and left == [(1, "cut_by_frame"), (4, "out_of_vocabulary")]
    new = relabel(mask, [2, 3], [1, 4])
    assert set(np.unique(new)) == {0, 1, 2, 3, 4}
    assert (new[2, :6] == 1).all() and (new[4, :3] == 2).all() and (new[0, :5] == 3).all() and (new[6, :4] == 4).all()
    assert count_objects(mask, 3, 2, None, 2, 0.4) == ([0, 1, 2], [(4, "out_of_vocabulary")])
    assert visible_point(new, 1) == [2, 2] and visible_point(new, 9) is None


# ---- small, soft images ---------------------------------------------------------------------------------------
def _sharp(h=240, w=320):
    """Fine detail: 2-pixel squares of random grey levels."""
    cells = np.random.default_rng(0).integers(0, 256, (h // 2 + 1, w // 2 + 1), dtype=np.uint8)
    return np.repeat(np.repeat(cells, 2, 0), 2, 1)[:h, :w, None].repeat(3, axis=2)


@pytest.mark.parametrize("params", [
    {"long_side": 160, "blur": 0.6, "upscale": "bicubic", "jpeg": None},
    {"long_side": 128, "blur": 0.7, "upscale": "lanczos", "jpeg": 60},
    {"long_side": 200, "blur": 0.2, "upscale": "bilinear", "jpeg": 90},
])
def test_small_soft_images_keep_the_frame_and_lose_the_detail(params):
    img = _sharp()
    out = soften(img, params)
    assert out.shape == img.shape and out.dtype == np.uint8 and np.array_equal(out, soften(img, params))

    def detail(a):
        g = a.astype(float).mean(axis=2)
        return np.abs(np.diff(g, axis=1)).mean() + np.abs(np.diff(g, axis=0)).mean()

    assert detail(out) < 0.75 * detail(img)
    assert abs(out.astype(float).mean() - img.astype(float).mean()) < 12  # the same picture, softer
    assert soften(img, None) is img
    small = _sharp(100, 120)  # already small: blurred only, same size
    assert soften(small, params).shape == small.shape


# ---- the command ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, needle", [
    (["--profile", "t2i", "--variations", "glosy_floor"], "did you mean 'glossy_floor'"),
    (["--profile", "t2i", "--variations", "stacked=2"], "must lie in [0, 1]"),
    (["--variations", "stacked"], "profiles that draw the camera"),
    (["--profile", "t2i_world", "--worlds", "room"], "leaves none of the profile's world kinds"),
])
def test_bad_variations_on_the_command_line_are_one_line(tmp_path, capsys, extra, needle):
    from logicval_hf.cli.render_clevr import main

    rc = main(["render-clevr", "--out", str(tmp_path / "o"), "--num-images", "1", "--assets", str(tmp_path),
               *extra])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and needle in err and err.startswith("logicval: error: ")
    assert not (tmp_path / "o").exists()


def test_the_command_passes_the_variations_on_and_its_help_names_them(capsys):
    import argparse

    from logicval_hf.cli.render_clevr import _argv_of, add_subcommands, main

    parser = argparse.ArgumentParser()
    add_subcommands(parser.add_subparsers(dest="command"))
    base = ["render-clevr", "--out", "o", "--num-images", "3", "--assets", "x"]
    argv = _argv_of(parser.parse_args([*base, "--profile", "t2i_real", "--variations", "stacked=0.5,small_soft"]))
    assert argv[argv.index("--variations") + 1] == "stacked=0.5,small_soft"
    assert "--variations" not in _argv_of(parser.parse_args(base))
    with pytest.raises(SystemExit) as done:  # the help renders (argparse formats it with %)
        main(["render-clevr", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert all(f"{name}:" in text for name in NAMES) and "t2i_real" in text
