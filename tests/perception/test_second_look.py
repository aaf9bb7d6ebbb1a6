"""The scene parser's second, closer look at uncertain peaks (`logicval_hf.perception.second_look`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.perception import load_image
from logicval_hf.perception.second_look import (
    FIT_WINDOW,
    MIN_FIT_ERRORS,
    SECOND_LOOK_DEFAULTS,
    fit_threshold,
    second_heat,
)

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"
SCENES = {s["image_filename"]: s for s in json.loads((DATA / "scenes.json").read_text())}
NAMES = sorted(SCENES)


def _parser_with(look: dict | None) -> scene_parser.SceneParser:
    """The shipped model, its second look replaced by ``look`` (None: off) in this instance only."""
    parser = scene_parser.SceneParser()
    parser.meta = {**parser.meta, "second_look": look}
    if look is None:
        parser.meta.pop("second_look")
    return parser


# ---- fitting the decision threshold ---------------------------------------------------------------------
def test_fit_finds_the_threshold_between_objects_and_spurious_peaks():
    # first heats straddle the first read's threshold (0.4) both ways; the second read separates them
    first = [0.35] * 6 + [0.55] * 6 + [0.5] * 4
    second = [0.8] * 6 + [0.1] * 6 + [0.9] * 4
    is_object = [True] * 6 + [False] * 6 + [True] * 4
    t, fig = fit_threshold(first, second, is_object, 0.5, 0.4)
    assert fig == {"band_peaks": 16, "errors_first_read": 12, "errors_second_look": 0, "fitted": True,
                   "threshold_moved": False}
    assert 0.325 < t <= 0.575  # every threshold between the two groups' averages decides all 16 right
    assert t == pytest.approx(0.45, abs=0.011)  # the default already lies there, so it stays


def test_fit_moves_to_a_plateau_that_beats_the_default():
    # five spurious peaks average 0.5 and ten objects 0.6: every threshold in (0.5, 0.6] is right on all
    first = [0.5] * 5 + [0.35] * 5 + [0.6] * 5
    second = [0.5] * 5 + [0.85] * 5 + [0.6] * 5
    is_object = [False] * 5 + [True] * 10
    t, fig = fit_threshold(first, second, is_object, 0.5, 0.4)
    assert fig["fitted"] and fig["threshold_moved"] and fig["errors_second_look"] == 0
    # judged by its neighbourhood (+- FIT_WINDOW), the fit stays clear of both edges of the plateau
    assert 0.5 + FIT_WINDOW <= t <= 0.6 - FIT_WINDOW


def test_fit_does_not_take_a_dip_at_the_edge_of_a_cliff():
    # averages: six spurious peaks just below 0.52, seven objects at 0.525; 0.52 alone decides them all
    # right, 0.53 drops all seven objects. Four more objects the first read drops give the fit errors to learn.
    avg = [0.47] * 3 + [0.515] * 3 + [0.525] * 7
    first, second = avg + [0.3] * 4, avg + [0.9] * 4
    is_object = [False] * 6 + [True] * 11
    t, fig = fit_threshold(first, second, is_object, 0.5, 0.4)
    assert fig["errors_first_read"] >= MIN_FIT_ERRORS and fig["fitted"]
    assert not fig["threshold_moved"] and t == SECOND_LOOK_DEFAULTS["threshold"]


def test_too_few_first_read_errors_keep_the_default_threshold():
    first, second = [0.3, 0.6], [0.9, 0.1]
    t, fig = fit_threshold(first, second, [True, False], 0.5, 0.4)
    assert fig["errors_first_read"] == 2 < MIN_FIT_ERRORS and not fig["fitted"]
    assert t == SECOND_LOOK_DEFAULTS["threshold"]
    assert fit_threshold([], [], [], 0.5, 0.4)[1]["band_peaks"] == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.25, 0.649), st.floats(0, 1), st.booleans()), min_size=1, max_size=60))
def test_the_fitted_threshold_never_errs_more_than_the_default(peaks):
    first, second, is_object = map(list, zip(*peaks, strict=True))
    t, fig = fit_threshold(first, second, is_object, 0.5, 0.4)
    avg = 0.5 * np.array(first) + 0.5 * np.array(second)
    default_errors = int(((avg >= SECOND_LOOK_DEFAULTS["threshold"]) != np.array(is_object)).sum())
    assert 0.3 <= t <= 0.65
    assert fig["errors_second_look"] == int(((avg >= t) != np.array(is_object)).sum())
    if fig["fitted"]:
        assert fig["errors_second_look"] <= default_errors
    if not fig["threshold_moved"]:
        assert t == SECOND_LOOK_DEFAULTS["threshold"]


# ---- the parser with a second look ----------------------------------------------------------------------
def test_band_peaks_get_the_average_of_both_heats_and_the_rest_is_unchanged():
    rgb = load_image(DATA / NAMES[0])
    look = {**SECOND_LOOK_DEFAULTS, "band": [0.0, 0.9], "threshold": 0.5}  # nearly every peak is read again
    (first, first_cands), = _parser_with(None)._detect([rgb], 0.5, 32, 8, None)
    parser = _parser_with(look)
    (kept, cands), = parser._detect([rgb], None, 32, 8, None)
    before = {(round(d.cx, 3), round(d.cy, 3)): d.score for d in (*first, *first_cands)}
    again = [d for d in (*first, *first_cands) if d.score < 0.9]
    heats = dict(zip([(round(d.cx, 3), round(d.cy, 3)) for d in again],
                     second_heat(parser, [rgb], [(0, d) for d in again], look), strict=True))
    assert before and heats
    for d in (*kept, *cands):
        key = (round(d.cx, 3), round(d.cy, 3))
        want = before[key] if key not in heats else 0.5 * before[key] + 0.5 * heats[key]
        assert d.score == pytest.approx(want, abs=1e-9)
    assert all(d.score >= 0.5 for d in kept) and all(d.score < 0.5 for d in cands)
    assert [d.score for d in kept] == sorted((d.score for d in kept), reverse=True)


def test_a_callers_threshold_decides_the_averaged_heats_too():
    rgb = load_image(DATA / NAMES[0])
    parser = _parser_with({**SECOND_LOOK_DEFAULTS, "band": [0.0, 1.0]})
    (kept, cands), = parser._detect([rgb], 0.99, 32, 8, None)
    assert all(d.score >= 0.99 for d in kept) and all(d.score < 0.99 for d in cands)
    assert parser.decision_threshold() == SECOND_LOOK_DEFAULTS["threshold"]
    assert parser.decision_threshold(False) == parser.threshold


@pytest.mark.parametrize("second_look", [True, False])
def test_clevr_test_images_are_counted_right_with_or_without_it(second_look):
    for name in NAMES:
        scene = scene_parser.extract(load_image(DATA / name), second_look=second_look)
        assert len(scene.objects) == len(SCENES[name]["objects"])
        assert 0.0 <= scene.confidence <= 1.0


def test_second_look_setting_must_be_true_or_false():
    with pytest.raises(ValueError, match="second_look must be true or false, not 'no'"):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), second_look="no")
