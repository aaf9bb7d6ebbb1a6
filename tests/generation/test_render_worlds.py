"""World kinds of the ``t2i_world`` render profile (logicval_hf/generation/clevr_worlds.py) and the draws of the
older profiles, which must not move (their folders resume). Pure Python: no Blender needed."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter

import pytest
from helpers import examples

from logicval_hf.generation import clevr_sampling as S
from logicval_hf.generation.clevr_worlds import WORLD_KINDS, draw_world, parse_worlds

WORLD = S.RenderConfig(seed=5, profile="t2i_world", min_objects=1, max_objects=10)
KINDS = ("sky_gradient", "procedural_sky", "studio", "distant_shapes", "plain")  # t2i_world's; t2i_real adds "room"


def _digest(config: S.RenderConfig, indices) -> str:
    h = hashlib.sha256()
    for i in indices:
        h.update(json.dumps(dataclasses.asdict(S.plan_image(config, i)), sort_keys=True).encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("config, digest", [
    (S.RenderConfig(seed=7), "f62a73c6b7d9b678"),
    (S.RenderConfig(seed=7, profile="randomise"), "03d2991985db5c54"),
    (S.RenderConfig(seed=7, profile="t2i", min_objects=1, max_objects=10), "fdce5a6dd9e40641"),
    (S.RenderConfig(seed=7, profile="t2i_wide", min_objects=1, max_objects=10), "cec3784d32b3e0ec"),
])
def test_older_profiles_draw_as_before_the_world_kinds(config, digest):
    """Plans of images 0, 3, ..., 57 of each older profile, hashed before the world kinds were added."""
    assert _digest(config, range(0, 60, 3)) == digest


def test_older_profiles_with_options_draw_as_before():
    cfg = S.RenderConfig(seed=21, profile="t2i", long_side=(256, 448), elevation=(15, 35), min_objects=1,
                         max_objects=10)
    assert _digest(cfg, range(10)) == "c03a79bf504514d4"
    assert S.RenderConfig(profile="t2i_wide").fingerprint() == {
        "seed": 0, "samples": 32, "denoise": 1, "width": 480, "height": 320, "min_objects": 3, "max_objects": 10,
        "randomise": 0, "profile": "t2i_wide", "long_side": [256, 1024], "profile_version": 1}


def test_world_kinds_are_declared_and_every_one_is_drawn_near_its_weight():
    assert WORLD_KINDS.names() == sorted((*KINDS, "room"))
    n = examples(400)
    plans = [S.plan_image(WORLD, i) for i in range(n)]
    counts = Counter(p.randomised["world"]["kind"] for p in plans)
    assert set(counts) == set(KINDS)
    weights = dict(WORLD.look.t2i.worlds)
    for kind, w in weights.items():
        assert abs(counts[kind] / n - w) < 0.15, (kind, counts)
    assert S.plan_image(WORLD, 9) == S.plan_image(WORLD, 9) and S.plan_image(WORLD, 9) != S.plan_image(WORLD, 10)
    other = S.RenderConfig(seed=6, profile="t2i_world", min_objects=1, max_objects=10)
    assert [S.plan_image(other, i).randomised["world"] for i in range(20)] != \
        [p.randomised["world"] for p in plans[:20]]


def test_t2i_world_is_the_t2i_look_with_finishes_wider_light_and_a_world():
    """Camera, frame, floor kind, horizon, shapes and objects are the t2i look's draws, from the same stream; the
    light's temperatures come from 3,000-9,000 K; only a studio opens the floor."""
    t2i = S.RenderConfig(seed=5, profile="t2i", min_objects=1, max_objects=10)
    look = WORLD.look.t2i
    assert look.temperature_k == (3000.0, 9000.0) and look.sky_p == 0 and look.finish_p > 0
    for i in range(examples(120)):
        a, b = S.plan_image(t2i, i), S.plan_image(WORLD, i)
        x, y = a.randomised, b.randomised
        assert (a.n_objects, a.width, a.height, a.cycles_seed) == (b.n_objects, b.width, b.height, b.cycles_seed)
        for key in ("camera", "horizon", "spread"):
            assert x[key] == y[key], key
        assert [{k: v for k, v in o.items() if k != "finish"} for o in y["objects"]] == x["objects"]
        assert {k: v for k, v in x["lights"].items() if not k.endswith("_rgb")} == \
            {k: v for k, v in y["lights"].items() if not k.endswith("_rgb")}
        floor = dict(y["floor"])
        if y["world"]["kind"] == "studio":
            assert floor["half_side"] == look.open_floor
            floor["half_side"] = x["floor"]["half_side"]
        assert floor == x["floor"]
        assert "sky" not in y and y["profile"] == "t2i_world"
    warm, cool = S.kelvin_to_rgb(3000), S.kelvin_to_rgb(9000)
    keys = [S.plan_image(WORLD, i).randomised["lights"]["key_rgb"] for i in range(examples(120))]
    # every key colour between the two ends' blue-over-red ratio
    ratio = [k[2] / k[0] for k in keys]
    assert all(warm[2] / warm[0] - 1e-3 <= r <= cool[2] / cool[0] + 1e-3 for r in ratio)


@pytest.mark.parametrize("allowed", [("studio",), ("sky_gradient", "distant_shapes"), ("plain",)])
def test_narrowing_the_worlds_changes_the_kind_drawn_and_nothing_else(allowed):
    narrow = dataclasses.replace(WORLD, worlds=allowed)
    for i in range(examples(80)):
        full, held = S.plan_image(WORLD, i).randomised, S.plan_image(narrow, i).randomised
        assert held["world"]["kind"] in allowed
        if full["world"]["kind"] == held["world"]["kind"]:
            assert held == full
        rest = {k: v for k, v in held.items() if k not in ("world", "floor")}
        assert rest == {k: v for k, v in full.items() if k not in ("world", "floor")}
        assert {k: v for k, v in held["floor"].items() if k != "half_side"} == \
            {k: v for k, v in full["floor"].items() if k != "half_side"}


def test_each_kinds_draws_stay_in_their_ranges():
    for kind in KINDS:
        for i in range(examples(60)):
            w = draw_world(11, i, [(kind, 1.0)])
            assert w["kind"] == kind
            colours = []
            if kind in ("sky_gradient", "distant_shapes"):
                sky = w["sky"] if kind == "distant_shapes" else w
                heights = [h for h, _ in sky["stops"]]
                assert heights[0] == 0.0 and heights == sorted(heights) and heights[-1] < 1.0
                assert sky["palette"] in ("day", "overcast", "sunset", "tinted") and 0.3 <= sky["strength"] <= 1.2
                colours += [rgb for _, rgb in sky["stops"]] + [sky["ground_rgb"]]
            if kind == "distant_shapes":
                assert 2 <= len(w["shapes"]) <= 7 and 1.0 <= w["land"]["high_deg"] <= 8.0
                for s in w["shapes"]:
                    assert s["low_deg"] == 0.0 and 3.0 <= s["high_deg"] <= 30.0 and 8.0 <= s["width_deg"] <= 70.0
                colours += [s["rgb"] for s in w["shapes"]] + [w["land"]["rgb"]]
            if kind == "procedural_sky":
                assert w["model"] in ("MULTIPLE_SCATTERING", "SINGLE_SCATTERING")
                assert 2.0 <= w["sun_elevation_deg"] <= 65.0 and 0.04 <= w["strength"] <= 0.2
            if kind == "studio":
                assert 1 <= len(w["softboxes"]) <= 3 and w["gap"] > 0 and w["sweep_radius"] > 0
                for box in w["softboxes"]:
                    assert 15.0 <= box["low_deg"] < box["high_deg"] <= 85.0 and box["strength"] >= 1.5
                colours += [w["backdrop_rgb"], w["top_rgb"]]
            if kind == "plain":
                assert w == {"kind": "plain"}
            assert all(len(c) == 3 and all(0.0 <= v <= 1.0 for v in c) for c in colours)


def test_worlds_option_is_checked_fingerprinted_and_named():
    assert parse_worlds("studio, sky_gradient,studio") == ("sky_gradient", "studio")  # the registry's order
    assert parse_worlds(None) is None
    for bad, needle in (("sky_gradiant", "did you mean 'sky_gradient'"), (",", "names no world kind")):
        with pytest.raises(ValueError, match="--worlds") as e:
            parse_worlds(bad)
        assert needle in str(e.value) and "\n" not in str(e.value) and "procedural_sky" in str(e.value)
    with pytest.raises(ValueError, match="--worlds applies to profiles that draw a world kind"):
        S.RenderConfig(profile="t2i", worlds=("studio",)).validate()
    with pytest.raises(ValueError, match="--worlds"):
        S.RenderConfig(profile="t2i_world", worlds=("nowhere",)).validate()
    fp = S.RenderConfig(profile="t2i_world", worlds=("studio", "plain")).fingerprint()
    assert fp["worlds"] == ["plain", "studio"] and fp["profile"] == "t2i_world" and fp["profile_version"] == 1
    assert "worlds" not in S.RenderConfig(profile="t2i_world").fingerprint()
    with pytest.raises(ValueError, match="leaves none of the profile's world kinds"):
        draw_world(1, 0, [("plain", 1.0)], ("studio",))


def test_the_command_passes_worlds_on_and_refuses_a_bad_one(tmp_path, capsys):
    import argparse

    from logicval_hf.cli.render_clevr import _argv_of, add_subcommands, main

    p = argparse.ArgumentParser()
    add_subcommands(p.add_subparsers(dest="command"))
    a = p.parse_args(["render-clevr", "--out", "o", "--num-images", "3", "--assets", "x", "--profile", "t2i_world",
                      "--worlds", "studio,plain"])
    argv = _argv_of(a)
    assert argv[argv.index("--worlds") + 1] == "studio,plain"
    for worlds, needle in (("studo", "unknown world kind 'studo'; did you mean 'studio'?"),
                           ("studio", "--worlds applies to profiles that draw a world kind")):
        profile = "t2i_world" if worlds == "studo" else "t2i"
        rc = main(["render-clevr", "--out", str(tmp_path / "o"), "--num-images", "1", "--assets", str(tmp_path),
                   "--profile", profile, "--worlds", worlds])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and len(err.splitlines()) == 1 and needle in err, err
        assert not (tmp_path / "o").exists()


def test_sky_in_frame_redraws_only_the_cameras_elevation_and_lens_so_the_horizon_shows():
    """The horizon stands the camera's elevation above the frame's centre; the sensor spans the longer side."""
    import math

    sky = dataclasses.replace(WORLD, sky_in_frame=True, elevation=(8.0, 75.0)).validate()
    assert sky.fingerprint()["sky_in_frame"] == 1 and "sky_in_frame" not in WORLD.fingerprint()
    for i in range(examples(120)):
        a, b = S.plan_image(WORLD, i), S.plan_image(sky, i)
        x, y = a.randomised, b.randomised
        assert {k: v for k, v in x.items() if k != "camera"} == {k: v for k, v in y.items() if k != "camera"}
        cam = y["camera"]
        assert {k: v for k, v in cam.items() if k not in ("elevation_deg", "lens_mm", "horizon_height")} == \
            {k: v for k, v in x["camera"].items() if k not in ("elevation_deg", "lens_mm")}
        assert 8.0 - 1e-3 <= cam["elevation_deg"] <= 75.0 and 24.0 - 1e-3 <= cam["lens_mm"] <= 85.0 + 1e-3
        half_field = 16.0 * b.height / max(b.width, b.height) / cam["lens_mm"]
        height = math.tan(math.radians(cam["elevation_deg"])) / half_field
        assert 0.0 < height <= 0.75 + 1e-3 and height == pytest.approx(cam["horizon_height"], abs=1e-3)
    assert S.plan_image(sky, 4) == S.plan_image(sky, 4)


def test_sky_in_frame_needs_a_profile_that_draws_the_camera():
    with pytest.raises(ValueError, match="--sky-in-frame applies to profiles that draw the camera"):
        S.RenderConfig(profile="clevr", sky_in_frame=True).validate()
