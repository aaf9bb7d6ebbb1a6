"""The one object matcher (`logicval_hf.common.matching.match_centres`) against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.common.matching import match_centres

centres = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), max_size=4)


def _assignments(n: int, m: int):
    """Every one-to-one assignment of min(n, m) pairs."""
    if n <= m:
        for cols in itertools.permutations(range(m), n):
            yield list(zip(range(n), cols, strict=True))
    else:
        for rows in itertools.permutations(range(n), m):
            yield list(zip(rows, range(m), strict=True))


def _dist(a, b, i, j):
    return math.dist(a[i], b[j])


@settings(max_examples=examples(200), deadline=None)
@given(centres, centres, st.integers(1, 12))
def test_hungarian_matches_the_most_pairs_within_reach_at_the_least_total_distance(a, b, reach):
    got = match_centres(a, b, reach)
    assert all(_dist(a, b, i, j) <= reach for i, j in got)
    best = max(((sum(_dist(a, b, i, j) <= reach for i, j in asg),
                 -sum(_dist(a, b, i, j) for i, j in asg if _dist(a, b, i, j) <= reach)) for asg in
                _assignments(len(a), len(b))), default=(0, 0))
    assert len(got) == best[0]
    assert -sum(_dist(a, b, i, j) for i, j in got) == pytest.approx(best[1])


@settings(max_examples=examples(200), deadline=None)
@given(centres, centres, st.integers(1, 12))
def test_assign_far_drops_far_pairs_after_the_assignment(a, b, reach):
    got = match_centres(a, b, reach, assign_far=True)
    if not a or not b:
        assert got == []
        return
    totals = [sum(_dist(a, b, i, j) for i, j in asg) for asg in _assignments(len(a), len(b))]
    best = min(totals)
    # the kept pairs are the near ones of some assignment of least total distance
    assert any(math.isclose(t, best) and sorted((i, j) for i, j in asg if _dist(a, b, i, j) <= reach) == got
               for t, asg in zip(totals, _assignments(len(a), len(b)), strict=True))


def test_the_two_hungarian_readings_differ_where_a_far_pair_is_cheaper():
    pred, true = [(0, 0), (1, 0)], [(1, 0), (1.5, 0.8)]
    assert match_centres(pred, true, 1.0) == [(0, 0), (1, 1)]  # both pairs within reach
    assert match_centres(pred, true, 1.0, assign_far=True) == [(1, 0)]  # (0,0)-(1.5,0.8) was cheaper, then dropped


def test_greedy_takes_the_closest_pair_first():
    pred, true = [(0, 0), (3, 0)], [(-2, 0), (1, 0)]
    assert match_centres(pred, true, method="greedy") == [(0, 1), (1, 0)]
    assert match_centres(pred, true) == [(0, 0), (1, 1)]  # total 2 + 2 beats 1 + 5
    assert match_centres(pred, true, 1.5, method="greedy") == [(0, 1)]


def test_empty_sides_and_bad_input():
    assert match_centres([], [(1, 1)], 5) == [] == match_centres(np.zeros((0, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="'hungarian' or 'greedy'"):
        match_centres([(0, 0)], [(0, 0)], method="nearest")
    with pytest.raises(ValueError, match=r"predicted centres must be a \[K, 2\] array, got shape \(2, 3\)"):
        match_centres([(0, 0, 0), (1, 1, 1)], [(0, 0)])
