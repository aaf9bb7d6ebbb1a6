"""Fitting the second look's decision threshold on held-out band peaks (`logicval_hf.training.parser_fit`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.perception.parser_settings import SecondLookSettings
from logicval_hf.training.parser_fit import FIT_WINDOW, MIN_FIT_ERRORS, fit_threshold

DEFAULT = SecondLookSettings().threshold


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
    assert not fig["threshold_moved"] and t == DEFAULT


def test_too_few_first_read_errors_keep_the_default_threshold():
    first, second = [0.3, 0.6], [0.9, 0.1]
    t, fig = fit_threshold(first, second, [True, False], 0.5, 0.4)
    assert fig["errors_first_read"] == 2 < MIN_FIT_ERRORS and not fig["fitted"]
    assert t == DEFAULT
    assert fit_threshold([], [], [], 0.5, 0.4)[1]["band_peaks"] == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.25, 0.649), st.floats(0, 1), st.booleans()), min_size=1, max_size=60))
def test_the_fitted_threshold_never_errs_more_than_the_default(peaks):
    first, second, is_object = map(list, zip(*peaks, strict=True))
    t, fig = fit_threshold(first, second, is_object, 0.5, 0.4)
    avg = 0.5 * np.array(first) + 0.5 * np.array(second)
    default_errors = int(((avg >= DEFAULT) != np.array(is_object)).sum())
    assert 0.3 <= t <= 0.65
    assert fig["errors_second_look"] == int(((avg >= t) != np.array(is_object)).sum())
    if fig["fitted"]:
        assert fig["errors_second_look"] <= default_errors
    if not fig["threshold_moved"]:
        assert t == DEFAULT
