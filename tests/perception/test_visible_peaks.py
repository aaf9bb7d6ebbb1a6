"""Objects found where they show (``logicval_hf.perception.visible_peaks``): which visible peaks become objects,
where their centres and attributes come from, and how a parse turns the read on and off."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser as SP  # noqa: E402
from logicval_hf.perception.visible_peaks import VISIBLE_PEAK_DEFAULTS, hidden_objects  # noqa: E402

META = {"stride": 8, "attributes": ["color", "shape"], "classes": {"color": ["red", "blue"], "shape": ["cube", "ball"]}}
CFG = {"threshold": 0.5, "radius": 2.0}


def _maps(h: int = 8, w: int = 10):
    vpeak = np.zeros((1, h, w), np.float32)
    vreg = np.zeros((4, h, w), np.float32)
    logits = np.zeros((4, h, w), np.float32)
    return vpeak, vreg, logits


def _det(vx: float, vy: float) -> SP.Detection:
    return SP.Detection(vx, vy, 20.0, 20.0, 0.9, {}, (0, 0), vx, vy, 1.0)


def test_an_unexplained_visible_peak_becomes_an_object_with_its_centre_size_and_attributes():
    vpeak, vreg, logits = _maps()
    vpeak[0, 3, 6] = 0.8
    vreg[:, 3, 6] = (-1.5, -0.5, np.log(3.0), np.log(2.0))  # its centre 1.5 cells left, half a cell up
    logits[1, 3, 6] = 4.0  # blue where it shows
    logits[2, 3, 6] = 3.0  # a cube
    (d,) = hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [_det(12.0, 12.0)], CFG)
    assert (d.cx, d.cy) == pytest.approx(((6 - 1.5) * 8, (3 - 0.5) * 8))
    assert (d.w, d.h) == pytest.approx((24.0, 16.0))
    assert (d.vx, d.vy) == pytest.approx((6.5 * 8, 3.5 * 8))  # read where it shows, at the cell's middle
    assert d.source == "visible" and d.score == pytest.approx(0.8) and d.cell == (6, 3)
    assert int(np.argmax(d.probs["color"])) == 1 and int(np.argmax(d.probs["shape"])) == 0


def test_a_visible_peak_at_a_detections_own_visible_point_adds_nothing():
    vpeak, vreg, logits = _maps()
    vpeak[0, 3, 6] = 0.9
    near = _det(6.5 * 8 + 10, 3.5 * 8)  # 10 px away, within 2 cells
    far = _det(6.5 * 8 + 20, 3.5 * 8)  # 20 px away: beyond them
    assert hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [near], CFG) == []
    assert len(hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [far], CFG)) == 1
    # at another reading scale the radius is the same number of cells of the read
    assert len(hidden_objects(vpeak, vreg, logits, META, 0.5, 160, 128, [_det(6.5 * 16 + 20, 3.5 * 16)], CFG)) == 0


def test_weak_peaks_peaks_off_the_image_and_a_second_peak_on_the_same_object_add_nothing():
    vpeak, vreg, logits = _maps()
    vpeak[0, 1, 1] = 0.49  # below the threshold
    vpeak[0, 6, 2] = 0.7
    vreg[:2, 6, 2] = (-5.0, 0.0)  # its centre lies left of the image
    vpeak[0, 3, 6] = 0.9
    vpeak[0, 3, 7] = 0.6  # one cell from a stronger peak already taken
    out = hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [], CFG)
    assert [d.cell for d in out] == [(6, 3)]
    assert hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [], {**CFG, "threshold": 0.95}) == []


def test_at_most_max_new_objects_strongest_first():
    vpeak, vreg, logits = _maps()
    for k, x in enumerate((1, 4, 7)):
        vpeak[0, 4, x] = 0.6 + 0.1 * k
    out = hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [], CFG, max_new=2)
    assert [d.cell for d in out] == [(7, 4), (4, 4)]
    # a parse whose detections already fill max_objects leaves no room
    assert hidden_objects(vpeak, vreg, logits, META, 1.0, 80, 64, [], CFG, max_new=0) == []


def test_a_detector_without_the_outputs_refuses_the_setting_by_name():
    parser = SP.load_model()
    assert parser.visible_peaks is None and parser.peak_settings(None) is None and parser.peak_settings(False) is None
    with pytest.raises(ValueError, match="visible_peaks=True needs a detector trained with --visible-peaks"):
        parser.peak_settings(True)
    with pytest.raises(ValueError, match="visible_peaks must be true or false"):
        SP.extract(np.zeros((32, 32, 3), np.uint8), visible_peaks="yes")


def test_the_defaults_are_a_heat_and_a_radius():
    assert set(VISIBLE_PEAK_DEFAULTS) == {"threshold", "radius"}
    assert 0 < VISIBLE_PEAK_DEFAULTS["threshold"] < 1 and VISIBLE_PEAK_DEFAULTS["radius"] > 0
