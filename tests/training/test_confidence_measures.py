"""How the scene confidence is measured (``parser_fit.expected_calibration_error``; its ranking by
``scoring.meta.statistics.roc_auc``, which ``benchmarks/clevr_perception.py`` reports as AUROC)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.scoring.meta.statistics import roc_auc
from logicval_hf.training.parser_fit import expected_calibration_error

scored = st.lists(st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 0.9, 1.0]), st.booleans()), min_size=1,
                  max_size=40)


@given(scored)
@settings(max_examples=150, deadline=None)
def test_auroc_equals_counting_every_pair(rows):
    p = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], float)
    pos, neg = p[y > 0], p[y == 0]
    got = roc_auc(p, y)
    if len(pos) == 0 or len(neg) == 0:
        assert got is None
        return
    pairs = [(1.0 if a > b else 0.5 if a == b else 0.0) for a in pos for b in neg]
    assert got == pytest.approx(np.mean(pairs))


def test_auroc_of_a_perfect_a_reversed_and_a_constant_ranking():
    y = np.array([0, 0, 1, 1], float)
    assert roc_auc(np.array([0.1, 0.2, 0.8, 0.9]), y) == 1.0
    assert roc_auc(np.array([0.9, 0.8, 0.2, 0.1]), y) == 0.0
    assert roc_auc(np.full(4, 0.5), y) == 0.5


def test_ece_is_zero_when_confidence_matches_the_rate_in_every_bin_and_large_when_it_does_not():
    p = np.array([0.25] * 4 + [0.75] * 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0], float)
    assert expected_calibration_error(p, y) == pytest.approx(0.0)
    assert expected_calibration_error(np.full(4, 0.95), np.zeros(4)) == pytest.approx(0.95)
    assert expected_calibration_error(np.array([]), np.array([])) == 0.0
