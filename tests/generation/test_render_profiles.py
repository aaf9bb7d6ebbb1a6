"""Render profiles of ``logicval render-clevr`` (logicval_hf/generation/clevr_sampling.py): what each draws, and
where the t2i look puts its camera. Pure Python: no Blender needed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import examples

from logicval_hf.common.registry import UnknownNameError
from logicval_hf.generation import clevr_sampling as S

T2I = S.RenderConfig(seed=5, profile="t2i", min_objects=1, max_objects=10)


def test_profiles_are_declared_and_unknown_ones_are_named():
    assert {"clevr", "randomise", "t2i"} <= set(S.RENDER_PROFILES.names())
    with pytest.raises(UnknownNameError) as e:
        S.RenderConfig(profile="t2l").validate()
    msg = str(e.value)
    assert "\n" not in msg and "t2i" in msg and "clevr" in msg and "randomise" in msg
    with pytest.raises(ValueError, match="--randomise"):
        S.RenderConfig(profile="t2i", randomise=True).validate()
    with pytest.raises(ValueError, match="--long-side"):
        S.RenderConfig(profile="t2i", long_side=(512, 256)).validate()


def test_old_manifests_stay_valid_and_t2i_folders_say_their_profile():
    assert "profile" not in S.RenderConfig().fingerprint()
    assert S.RenderConfig(randomise=True).fingerprint() == S.RenderConfig(profile="randomise").fingerprint()
    fp = S.RenderConfig(profile="t2i", long_side=(256, 448)).fingerprint()
    assert fp["profile"] == "t2i" and fp["long_side"] == [256, 448]
    # folders of empty frames say so; every other folder's manifest is as before the option
    assert "empty" not in fp
    assert S.RenderConfig(profile="t2i", long_side=(256, 448), empty=True).fingerprint() == {**fp, "empty": 1}
    assert S.RenderConfig(empty=True).fingerprint() == {**S.RenderConfig().fingerprint(), "empty": 1}


def test_t2i_draws_are_a_function_of_seed_and_index_and_cover_the_look():
    plans = [S.plan_image(T2I, i) for i in range(examples(300))]
    assert S.plan_image(T2I, 7) == S.plan_image(T2I, 7) and S.plan_image(T2I, 7) != S.plan_image(T2I, 8)
    look = T2I.look.t2i
    aspects = {round(p.width / p.height, 1) for p in plans}
    assert 1.0 in aspects and any(a > 1.5 for a in aspects) and any(a < 1 for a in aspects)
    for p in plans:
        x = p.randomised
        assert 1 <= p.n_objects <= 10 and len(x["objects"]) == p.n_objects
        assert look.long_side[0] - 1 <= max(p.width, p.height) <= look.long_side[1]
        assert look.elevation_deg[0] <= x["camera"]["elevation_deg"] <= look.elevation_deg[1]
        assert 0 <= x["camera"]["azimuth_deg"] < 360 and look.lens_mm[0] <= x["camera"]["lens_mm"] <= look.lens_mm[1]
        assert x["lights"]["shadows"] in ("hard", "soft")
        for o in x["objects"]:
            assert look.object_scale[0] <= o["scale"] <= look.object_scale[1]
            assert all(look.stretch[0] <= v <= look.stretch[1] for v in o["stretch"]) or o["stretch"] == [1.0] * 3
    kinds = {p.randomised["floor"]["kind"] for p in plans}
    assert kinds == {"clevr", "white", "plain", "texture"}
    assert any(p.randomised["horizon"] for p in plans) and not all(p.randomised["horizon"] for p in plans)
    assert {p.randomised["lights"]["shadows"] for p in plans} == {"hard", "soft"}


def test_t2i_wide_is_the_t2i_look_plus_environments_and_finishes():
    """Profile t2i_wide draws every t2i draw first, from the same stream, then a sky and the objects' finishes:
    t2i's own plans (and so its folders' images) carry neither."""
    wide = S.RenderConfig(seed=5, profile="t2i_wide", min_objects=1, max_objects=10)
    look = wide.look.t2i
    skies, finishes = [], []
    for i in range(examples(200)):
        a, b = S.plan_image(T2I, i), S.plan_image(wide, i)
        x, y = a.randomised, b.randomised
        assert "sky" not in x and not any("finish" in o for o in x["objects"])
        assert (a.n_objects, a.width, a.height, a.cycles_seed) == (b.n_objects, b.width, b.height, b.cycles_seed)
        for key in ("camera", "floor", "horizon", "lights", "spread"):
            assert x[key] == y[key], key
        assert [{k: v for k, v in o.items() if k != "finish"} for o in y["objects"]] == x["objects"]
        assert y["profile"] == "t2i_wide" and x["profile"] == "t2i"
        skies.append(y["sky"])
        finishes += [o["finish"] for o in y["objects"]]
    drawn = [s for s in skies if s is not None]
    assert 0.4 < len(drawn) / len(skies) < 0.8  # sky_p 0.6
    for s in drawn:
        assert all(0 <= c <= 1 for c in s["zenith_rgb"] + s["horizon_rgb"])
        assert look.sky_softness[0] <= s["softness"] <= look.sky_softness[1]
        assert look.sky_strength[0] <= s["strength"] <= look.sky_strength[1]
    made = [f for f in finishes if f is not None]
    assert 0.4 < len(made) / len(finishes) < 0.8  # finish_p 0.6
    for f in made:
        assert look.rubber_roughness[0] <= f["rubber"]["roughness"] <= look.rubber_roughness[1]
        assert look.rubber_ior[0] <= f["rubber"]["ior"] <= look.rubber_ior[1]
        assert look.metal_roughness[0] <= f["metal"]["roughness_scale"] <= look.metal_roughness[1]
    assert any(f["metal"]["roughness_scale"] < 1 for f in made) and any(f["metal"]["roughness_scale"] > 1 for f in made)
    fp = S.RenderConfig(profile="t2i_wide").fingerprint()
    assert fp["profile"] == "t2i_wide" and fp["profile_version"] == 1
    assert S.RenderConfig(profile="t2i").fingerprint()["profile_version"] == 2


def test_long_side_bounds_training_renders():
    cfg = S.RenderConfig(seed=2, profile="t2i", long_side=(256, 320))
    assert all(256 - 1 <= max(p.width, p.height) <= 320 for p in (S.plan_image(cfg, i) for i in range(40)))


def test_elevation_narrows_the_cameras_and_clips_the_horizons_range():
    low = S.RenderConfig(seed=4, profile="t2i", elevation=(15.0, 25.0))
    plans = [S.plan_image(low, i).randomised for i in range(examples(120))]
    assert all(15.0 <= p["camera"]["elevation_deg"] <= 25.0 for p in plans)
    assert any(p["horizon"] for p in plans)  # the horizon's own 15-32 degrees, clipped to 15-25
    high = S.RenderConfig(seed=4, profile="t2i", elevation=(50.0, 75.0))
    plans = [S.plan_image(high, i).randomised for i in range(examples(120))]
    assert all(50.0 <= p["camera"]["elevation_deg"] <= 75.0 for p in plans)
    assert not any(p["horizon"] for p in plans)  # no overlap with 15-32: no horizon
    # everything but the camera's elevation and the horizon is drawn as without the option
    base = S.RenderConfig(seed=4, profile="t2i")
    a, b = S.plan_image(base, 3).randomised, S.plan_image(high, 3).randomised
    assert a["lights"] == b["lights"] and a["objects"] == b["objects"] and a["image_size"] == b["image_size"]


def test_elevation_is_in_the_fingerprint_and_validated():
    assert "elevation" not in S.RenderConfig(profile="t2i").fingerprint()
    assert S.RenderConfig(profile="t2i", elevation=(15, 35)).fingerprint()["elevation"] == [15.0, 35.0]
    with pytest.raises(ValueError, match="--elevation applies to profiles that draw the camera"):
        S.RenderConfig(profile="randomise", elevation=(15, 35)).validate()
    with pytest.raises(ValueError, match="5 <= MIN <= MAX <= 89"):
        S.RenderConfig(profile="t2i", elevation=(2, 35)).validate()


def test_kelvin_colours_are_warm_and_cool():
    warm, cool = S.kelvin_to_rgb(2800), S.kelvin_to_rgb(9000)
    assert warm[0] > warm[2] and cool[2] > cool[0] and max(warm) == max(cool) == 1.0


def _project(frame: dict, point: np.ndarray, width: int, height: int) -> tuple[float, float]:
    """Pinhole projection (Blender: 32 mm sensor fitted to the longer side) of a world point."""
    cam, target = np.array(frame["location"]), np.array(frame["target"])
    fwd = (target - cam) / np.linalg.norm(target - cam)
    right = np.cross(fwd, [0, 0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    v = point - cam
    z = v @ fwd
    f = frame["lens_mm"] / 32.0 * max(width, height)
    return width / 2 + f * (v @ right) / z, height / 2 - f * (v @ up) / z


def test_frame_camera_keeps_the_objects_in_view_and_retries_move_it():
    rng = np.random.default_rng(0)
    for _ in range(examples(60)):
        plan = S.plan_image(T2I, int(rng.integers(10**6)))
        n = plan.n_objects
        objs = [{"x": float(x), "y": float(y), "r": 0.5, "shape": "cube", "stretch": (1.0, 1.0, 1.0)}
                for x, y in rng.uniform(-2, 2, (n, 2))]
        frame = S.frame_camera(plan.randomised["camera"], objs, plan.width, plan.height)
        for o in objs:
            px, py = _project(frame, np.array([o["x"], o["y"], 0.5]), plan.width, plan.height)
            assert 0 <= px <= plan.width and 0 <= py <= plan.height
        wider = S.frame_camera(plan.randomised["camera"], objs, plan.width, plan.height, wider=3)
        closer = S.frame_camera(plan.randomised["camera"], objs, plan.width, plan.height, closer=3)
        assert wider["distance"] >= frame["distance"] >= closer["distance"] - 1e-9
        el = math.degrees(math.asin((frame["location"][2] - frame["target"][2]) / frame["distance"]))
        assert el == pytest.approx(plan.randomised["camera"]["elevation_deg"], abs=0.01)


def test_spread_and_radius_scale_shape_the_placement():
    props = {"shapes": {"cube": "SmoothCube_v2"}, "colors": {"red": [1, 2, 3]}, "materials": {"rubber": "Rubber"},
             "sizes": {"large": 0.7}}
    rng = np.random.default_rng(3)
    objs, _ = S.sample_objects(rng, 4, props, {}, spread=1.5, min_dist=0.05, margin=0.0, radius_scale=[1.1] * 4)
    assert all(abs(o["x"]) <= 1.5 and abs(o["y"]) <= 1.5 and o["r"] == pytest.approx(0.77) for o in objs)
    for i, a in enumerate(objs):
        for b in objs[:i]:
            assert math.hypot(a["x"] - b["x"], a["y"] - b["y"]) - a["r"] - b["r"] >= 0.05
