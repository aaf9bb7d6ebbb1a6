"""The scene parser's second, closer look at uncertain peaks (`logicval_hf.perception.second_look`), a stage
that reads through the parser's public `look`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from logicval_hf.perception import load_image
from logicval_hf.perception.parser_settings import ReadSettings, SecondLookSettings
from logicval_hf.perception.second_look import second_heat

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser

DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"
SCENES = {s["image_filename"]: s for s in json.loads((DATA / "scenes.json").read_text())}
NAMES = sorted(SCENES)


def _parser_with(look: SecondLookSettings | None) -> scene_parser.SceneParser:
    """The shipped model, its second look replaced by ``look`` (None: off) in this instance only."""
    parser = scene_parser.SceneParser()
    parser.settings = dataclasses.replace(parser.settings, second_look=look)
    return parser


# ---- the parser with a second look ----------------------------------------------------------------------
def test_band_peaks_get_the_average_of_both_heats_and_the_rest_is_unchanged():
    rgb = load_image(DATA / NAMES[0])
    look = SecondLookSettings(band=(0.0, 0.9), threshold=0.5)  # nearly every peak is read again
    (first, first_cands), = _parser_with(None).detect([rgb], ReadSettings(threshold=0.5))
    parser = _parser_with(look)
    (kept, cands), = parser.detect([rgb])
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
    parser = _parser_with(SecondLookSettings(band=(0.0, 1.0)))
    (kept, cands), = parser.detect([rgb], ReadSettings(threshold=0.99))
    assert all(d.score >= 0.99 for d in kept) and all(d.score < 0.99 for d in cands)
    assert parser.settings.decision_threshold() == SecondLookSettings().threshold
    assert parser.settings.decision_threshold(False) == parser.settings.threshold


def test_second_look_true_turns_on_the_defaults_for_a_file_without_one():
    parser = _parser_with(None)
    assert parser.settings.look() is None and parser.settings.look(True) == SecondLookSettings()


@pytest.mark.parametrize("second_look", [True, False])
def test_clevr_test_images_are_counted_right_with_or_without_it(second_look):
    for name in NAMES:
        scene = scene_parser.extract(load_image(DATA / name), second_look=second_look)
        assert len(scene.objects) == len(SCENES[name]["objects"])
        assert 0.0 <= scene.confidence <= 1.0


def test_second_look_setting_must_be_true_or_false():
    with pytest.raises(ValueError, match="second_look must be true or false, not 'no'"):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), second_look="no")
