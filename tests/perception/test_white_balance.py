"""The attribute classifier's crops balanced against the image's colour cast (other light)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import load_script
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.perception import load_image, scene_parser
from logicval_hf.perception.white_balance import WHITE_BALANCE_DEFAULTS, balance_crops, illuminant_gains

BENCH = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py", "clevr_perception_wb")

DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"
SCENES = {s["image_filename"]: s for s in json.loads((DATA / "scenes.json").read_text())}
LIMIT = WHITE_BALANCE_DEFAULTS["limit"]
#: a green rubber sphere and a grey rubber cube; under a warm tint the grey one was read as brown
GREY_IMAGE = "clevrparser_2obj_val__CLEVR_val_000006.png"


def _cast(rgb: np.ndarray, log_cast: np.ndarray) -> np.ndarray:
    """``rgb`` under light of another colour: each channel scaled by exp(log_cast) in linear light (the shifts'
    own exposure / gain helper)."""
    return BENCH.linear_light(rgb, np.exp(log_cast))


def test_a_neutral_image_needs_no_correction():
    rng = np.random.default_rng(0)
    grey = np.repeat(rng.integers(20, 230, (64, 96, 1), dtype=np.uint8), 3, axis=2)
    np.testing.assert_allclose(illuminant_gains(grey), 1.0, atol=1e-5)
    assert np.array_equal(illuminant_gains(np.zeros((8, 8, 3), np.uint8)), np.ones(3, np.float32))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-LIMIT * 0.9, LIMIT * 0.9), min_size=3, max_size=3), st.integers(0, 2 ** 16))
def test_a_mild_cast_on_grey_surfaces_is_undone(cast, seed):
    """Grey surfaces under a cast within the limit come out grey again (the gains invert the cast up to the
    overall brightness, which they keep)."""
    log_cast = np.array(cast) - np.mean(cast)
    # centring can push a channel past the limit (0.125, 0.125, -0.125 -> -0.167): keep the cast inside it
    log_cast *= min(1.0, LIMIT * 0.9 / max(float(np.abs(log_cast).max()), 1e-9))
    rng = np.random.default_rng(seed)
    grey = np.repeat(rng.integers(60, 200, (48, 48, 1), dtype=np.uint8), 3, axis=2)
    gains = illuminant_gains(_cast(grey, log_cast))
    np.testing.assert_allclose(np.log(gains), -log_cast, atol=0.03)
    assert abs(float(np.log(gains).sum())) < 1e-4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3), st.integers(0, 2 ** 16))
def test_no_cast_moves_the_crops_past_the_limit(cast, seed):
    """Whatever the image (a strongly coloured floor fools any grey-world estimate), no channel is corrected
    by more than the classifier's training augmentation range."""
    rng = np.random.default_rng(seed)
    img = _cast(rng.integers(0, 256, (32, 40, 3), dtype=np.uint8), np.array(cast))
    assert np.all(np.abs(np.log(illuminant_gains(img))) <= LIMIT + 1e-6)


def test_a_strong_warm_cast_is_corrected_as_far_as_the_limit():
    grey = np.full((16, 16, 3), 128, np.uint8)
    g = np.log(illuminant_gains(_cast(grey, np.array([0.5, 0.0, -0.5]))))
    np.testing.assert_allclose(g[[0, 2]], [-LIMIT, LIMIT], atol=1e-6)


def test_balance_crops_changes_colour_only_and_stays_in_range():
    rng = np.random.default_rng(1)
    crops = rng.random((3, 4, 8, 8), dtype=np.float32)
    mark = crops[:, 3].copy()
    same = balance_crops(crops.copy(), np.ones(3, np.float32))
    np.testing.assert_allclose(same, crops, atol=1e-5)
    out = balance_crops(crops.copy(), np.array([1.2, 1.0, 0.8], np.float32))
    assert np.array_equal(out[:, 3], mark) and out.min() >= 0 and out.max() <= 1
    assert (out[:, 0] >= crops[:, 0] - 1e-6).all() and (out[:, 2] <= crops[:, 2] + 1e-6).all()


@pytest.mark.parametrize("bad", [np.zeros((8, 8), np.uint8), np.zeros((8, 8, 4), np.uint8),
                                 np.zeros((0, 8, 3), np.uint8)])
def test_an_image_that_is_not_rgb_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="white balance: expected an H x W x 3 image"):
        illuminant_gains(bad)


def test_a_grey_object_under_warm_light_parses_grey():
    s = SCENES[GREY_IMAGE]
    warm, _ = BENCH.apply_shift("tint_warm", load_image(DATA / GREY_IMAGE), [o["pixel_coords"] for o in s["objects"]],
                          [0.5] * len(s["objects"]))
    on = scene_parser.extract(warm)
    off = scene_parser.extract(warm, white_balance=False)
    assert sorted((o.attributes["color"], o.attributes["shape"], o.attributes["material"]) for o in on.objects) == \
        sorted((o["color"], o["shape"], o["material"]) for o in s["objects"])
    grey = next(o for o in on.objects if o.attributes["shape"] == "cube")
    grey_off = min(off.objects, key=lambda o: abs(o.center[0] - grey.center[0]) + abs(o.center[1] - grey.center[1]))
    assert grey.probs["color"]["gray"] > grey_off.probs["color"]["gray"]


def test_the_setting_takes_a_boolean_only():
    rgb = load_image(DATA / GREY_IMAGE)
    with pytest.raises(ValueError, match="white_balance must be true or false"):
        scene_parser.extract(rgb, white_balance="false")
    assert scene_parser.extract(rgb, white_balance=False).objects


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-0.4, 0.4), min_size=3, max_size=3), st.integers(0, 2 ** 16))
def test_a_gain_moves_the_estimated_cast_by_its_centred_log(gain, seed):
    """The shades-of-grey estimate is homogeneous in linear light: a gain on the image moves the estimated cast
    by the gain's centred log, and the gains that undo it follow."""
    from logicval_hf.perception.white_balance import gains_for, illuminant_cast

    rng = np.random.default_rng(seed)
    img = rng.integers(30, 170, (40, 56, 3), dtype=np.uint8)  # dark enough that no gain clips at white
    log_gain = np.array(gain)
    moved = illuminant_cast(_cast(img, log_gain))
    np.testing.assert_allclose(moved, illuminant_cast(img) + log_gain - log_gain.mean(), atol=0.02)
    assert abs(float(moved.sum())) < 1e-9
    np.testing.assert_allclose(gains_for(moved), illuminant_gains(_cast(img, log_gain)), rtol=1e-6)
    with pytest.raises(ValueError, match="limit"):
        gains_for(moved, limit=-0.1)
