"""The scene confidence's terms: features of a reading and its image (`parser_decoding.reading_features`), the
logistic correction a file may carry (`ConfidenceSettings` ``terms``, ``scale``, ``bias``), its fit on held-out
readings (`parser_fit.fit_logistic_terms`), and a parse through a file that carries terms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.perception.parser_decoding import (
    Detection,
    corrected_confidence,
    reading_features,
    scene_confidence,
)
from logicval_hf.perception.parser_settings import CONFIDENCE_FEATURES, ConfidenceSettings, DetectorSettings


def _det(cx, cy, w, h, score=0.9):
    return Detection(cx, cy, w, h, score, {"color": np.array([0.9, 0.1])}, scale=1.0)


def test_features_of_a_grey_image_and_of_a_tinted_one():
    grey = np.full((100, 200, 3), 128, np.uint8)
    dets = [_det(50, 50, 20, 20), _det(55, 50, 20, 20), _det(190, 50, 30, 20)]
    f = reading_features(grey, dets, [0.1, 0.2, 0.3])
    assert set(f) == set(CONFIDENCE_FEATURES)
    assert f["border_cast"] == 0 and f["saturation"] == 0
    assert f["candidates"] == 2 and f["max_candidate"] == 0.3  # 0.1 is below the counted heat
    assert f["touching_frame"] == 1 and f["objects"] == 3
    assert f["overlap"] == pytest.approx(15 * 20 / (2 * 400 - 15 * 20))
    red = grey.copy()
    red[..., 0] = 230
    g = reading_features(red, [], [])
    assert g["border_cast"] == pytest.approx((230 - (230 + 256) / 3) / 255, abs=1e-3)
    assert g["saturation"] > 0.3 and g["objects"] == 0 and g["overlap"] == 0 and g["max_candidate"] == 0


def test_without_terms_the_confidence_is_the_product_at_its_power():
    dets = [_det(100, 80, 30, 30)]
    conf = ConfidenceSettings(power=0.8)
    plain = scene_confidence(dets, [], 400, 300, conf, ["color"])
    assert plain == pytest.approx((0.9 * 0.9) ** 0.8, rel=1e-3)
    assert scene_confidence(dets, [], 400, 300, conf, ["color"], {"objects": 5.0}) == plain


@given(st.floats(-8, 0), st.floats(0, 1))
@settings(max_examples=60, deadline=None)
def test_a_negative_term_only_lowers_the_confidence(log_product, value):
    with_term = ConfidenceSettings(terms=(("saturation", -2.0),))
    none = ConfidenceSettings()
    low = corrected_confidence(log_product, with_term, {"saturation": value})
    plain = corrected_confidence(log_product, none, None)
    assert 0 <= low <= 1 and low <= plain + 1e-6
    assert corrected_confidence(log_product, with_term, {"saturation": 0.0}) == pytest.approx(plain, abs=1e-5)


def test_scale_and_bias_act_on_the_logit_and_a_missing_feature_is_named():
    conf = ConfidenceSettings(scale=2.0, bias=-1.0)
    p = corrected_confidence(math.log(0.5), conf, {})
    assert p == pytest.approx(1 / (1 + math.e))
    with pytest.raises(ValueError, match="'overlap' was not computed"):
        corrected_confidence(0.0, ConfidenceSettings(terms=(("overlap", -1.0),)), {"objects": 1.0})


def test_a_file_names_its_terms_and_an_unknown_one_is_refused(tmp_path):
    meta = {"attributes": ["color"], "classes": {"color": ["red", "blue"]}, "stride": 8,
            "confidence": {"power": 0.9, "terms": {"overlap": -1.5}, "scale": 1.2, "bias": 0.3}}
    st_ = DetectorSettings.from_metadata(meta, tmp_path / "m.onnx").confidence
    assert st_.terms == (("overlap", -1.5),) and st_.scale == 1.2 and st_.bias == 0.3
    meta["confidence"]["terms"] = {"glare": -1.0}
    with pytest.raises(ValueError, match="unknown confidence term 'glare'"):
        DetectorSettings.from_metadata(meta, tmp_path / "m.onnx")


def test_the_fit_finds_a_feature_that_marks_errors_and_never_rewards_one():
    from logicval_hf.training.parser_fit import fit_logistic_terms

    rng = np.random.default_rng(0)
    n = 400
    base = rng.normal(2.0, 1.0, n)  # a product that is sure on every image
    trouble = rng.random(n) < 0.3  # ... but wrong on most images showing a sign of trouble
    good = rng.random(n)  # a feature that goes with right readings
    exact = np.where(trouble, rng.random(n) < 0.2, rng.random(n) < 0.95).astype(float)
    exact[good > 0.9] = 1.0
    feats = np.column_stack([trouble.astype(float), good])
    scale, bias, w = fit_logistic_terms(base, feats, exact)
    assert w[0] < -1.0 and w[1] == 0.0  # the sign of trouble lowers; nothing may raise
    z = scale * base + bias + feats @ w
    p = 1 / (1 + np.exp(-z))
    assert p[trouble].mean() < 0.5 < p[~trouble].mean()


def test_a_parse_through_a_file_with_terms(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import json

    from logicval_hf.perception.scene_parser import DEFAULT_MODEL, SceneParser
    from logicval_hf.training.parser_data import numpy_render
    from logicval_hf.training.refit_parser import write_metadata

    rgb = numpy_render((5, 0, 1), min_objects=3, max_objects=3).rgb
    shipped = SceneParser(DEFAULT_MODEL, attribute_model=False)
    meta = json.loads(json.dumps(shipped.meta))
    meta["confidence"] = {**meta["confidence"], "terms": {"objects": -0.5}, "scale": 1.0, "bias": 0.0}
    write_metadata(DEFAULT_MODEL, meta, tmp_path / "terms.onnx")
    plain = shipped.parse_batch([rgb])[0]
    lowered = SceneParser(tmp_path / "terms.onnx", attribute_model=False).parse_batch([rgb])[0]
    assert len(plain.objects) == len(lowered.objects) == 3
    p = min(max(plain.confidence, 1e-6), 1 - 1e-6)
    expected = 1 / (1 + math.exp(-(math.log(p / (1 - p)) - 1.5)))
    assert lowered.confidence == pytest.approx(expected, abs=2e-3)
