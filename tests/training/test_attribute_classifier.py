"""The scene parser's second stage: object crops, the attribute classifier's training script, and how the
parser picks the classifier up."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import render_folder

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser
from logicval_hf.perception.parser_decoding import CROP, MIN_SIDE, crop_square, object_crops


def test_crops_centre_the_object_and_mark_its_visible_point():
    rgb = np.full((100, 200, 3), 128, np.uint8)
    rgb[40:60, 90:110] = (200, 20, 20)  # a red square centred at (100, 50)
    (crop,) = object_crops(rgb, [(100.0, 50.0, 40.0)], [(105.0, 45.0)])
    size = CROP
    assert crop.shape == (4, size, size) and crop.dtype == np.float32
    mid = size // 2
    assert crop[0, mid, mid] > 0.7 and crop[1, mid, mid] < 0.2  # red in the middle
    assert crop[0, 2, 2] == pytest.approx(128 / 255, abs=0.01)  # floor around it
    y, x = np.unravel_index(np.argmax(crop[3]), crop[3].shape)
    assert abs(x - (mid + 5 * size / 40)) <= 1.5 and abs(y - (mid - 5 * size / 40)) <= 1.5


def test_crops_past_the_border_replicate_the_edge():
    rgb = np.zeros((50, 50, 3), np.uint8)
    rgb[:, :5] = 255  # a white left edge
    (crop,) = object_crops(rgb, [(2.0, 25.0, 30.0)], [(2.0, 25.0)])
    assert crop[:3, :, 0].min() > 0.9  # the part left of the image repeats its edge, not black


def test_crop_square_keeps_a_far_visible_point_inside():
    cx, _, side = crop_square(100, 100, 20, 20, 140, 100, 480)
    assert abs(140 - cx) < side / 2 * 0.85
    small = crop_square(100, 100, 2, 2, 100, 100, 480)[2]
    assert small == pytest.approx(MIN_SIDE * 480)  # tiny boxes still get some context


def test_batches_depend_on_seed_and_step_only():
    pytest.importorskip("torch")
    from logicval_hf.training import train_attribute_classifier as A

    a = A.make_batch([], [], 3, 1, 6, 1.0)
    b = A.make_batch([], [], 3, 1, 6, 1.0)
    c = A.make_batch([], [], 4, 1, 6, 1.0)
    assert a[0].shape == (6, 4, CROP, CROP) and a[1].shape == (6, 4)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert not (a[0] == c[0]).all()


def test_object_samples_skip_objects_that_show_no_pixel(tmp_path):
    from logicval_hf.training.parser_data import load_folder
    from logicval_hf.training.train_attribute_classifier import object_samples

    rec = load_folder(render_folder(tmp_path / "r", 1, masks=True))[0]
    n = len(rec.labels)
    rec.mask[rec.mask == n - 1] = n - 2  # the last object hidden entirely behind the one before it
    samples = object_samples([rec])
    showing = [k for k in range(n) if (rec.mask == k).any()]
    assert n - 1 not in showing and len(samples) == len(showing)
    for k, s in zip(showing, samples, strict=True):  # the visible point lies on the object's own pixels
        assert rec.mask[int(s.visible[1]), int(s.visible[0])] == k


def test_the_parser_finds_its_classifier_beside_the_detector_or_where_it_is_told(tmp_path):
    detector = tmp_path / "det.onnx"
    shutil.copy(scene_parser.DEFAULT_MODEL, detector)
    assert scene_parser.SceneParser(detector).attributes is None  # nothing beside it: the detector's own heads
    shipped = scene_parser.attribute_model_beside(scene_parser.DEFAULT_MODEL)
    shutil.copy(shipped, scene_parser.attribute_model_beside(detector))
    assert scene_parser.SceneParser(detector).attributes is not None  # found beside the detector
    assert scene_parser.SceneParser(detector, attribute_model=False).attributes is None
    with pytest.raises(FileNotFoundError, match=r"nowhere\.onnx"):
        scene_parser.SceneParser(detector, attribute_model=tmp_path / "nowhere.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=r"junk\.onnx: not a readable ONNX attribute-classifier model"):
        scene_parser.SceneParser(detector, attribute_model=tmp_path / "junk.onnx")


def test_white_balance_out_of_range_is_one_clear_error(tmp_path, capsys):
    from logicval_hf.training import train_attribute_classifier as A

    with pytest.raises(SystemExit) as e:
        A.main(["--out", str(tmp_path / "ack"), "--white-balance", "-0.2"])
    assert e.value.code == 2
    assert "--white-balance must lie in [0, 1], got -0.2" in capsys.readouterr().err
