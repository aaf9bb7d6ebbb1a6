"""The scene parser's second stage: object crops, the attribute classifier's training script, and how the
parser picks the classifier up."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import render_folder

from logicval_hf import Scene
from logicval_hf.perception import load_image

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser
from logicval_hf.perception.parser_decoding import CROP, MIN_SIDE, crop_square, object_crops
from logicval_hf.perception.parser_models import AttributeClassifier


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


@pytest.mark.slow
def test_training_two_steps_exports_a_classifier_the_parser_uses(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    import shutil

    from logicval_hf.training import train_attribute_classifier as A
    from logicval_hf.training import train_scene_parser as T

    folder = render_folder(tmp_path / "renders", 4, masks=True)
    detector = tmp_path / "det" / "model.onnx"
    assert T.main(["--data", str(folder), "--out", str(tmp_path / "dck"), "--steps", "1", "--batch-size", "1",
                   "--canvas", "160", "128", "--numpy-val", "1", "--export",
                   str(detector), "--no-progress", "--threads", "1"]) == 0
    out, export = tmp_path / "ack", tmp_path / "attrs.onnx"
    argv = ["--data", str(folder), "--out", str(out), "--steps", "2", "--batch-size", "8",
            "--export", str(export), "--export-every", "2", "--no-progress", "--threads", "1",
            "--white-balance", "0.3"]
    assert A.main(argv) == 0
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    clf = AttributeClassifier(export)
    assert clf.meta["provenance"]["trained_steps"] == 2
    assert clf.meta["provenance"]["augmentation"]["white_balance_log"] == 0.3  # the run's ranges are recorded
    assert [d["folder"] for d in clf.meta["provenance"]["data"]] == ["$RENDERS/renders"]
    probs = clf.classify(np.zeros((3, 4, CROP, CROP), np.float32))
    assert set(probs) >= {"color", "shape", "material"}
    assert np.allclose(probs["color"].sum(1), 1)

    image = load_image(folder / "images" / "R_000.png")
    own = scene_parser.SceneParser(detector).parse_batch([image])[0]  # nothing beside it: the detector's heads
    shutil.copy(export, scene_parser.attribute_model_beside(detector))
    two = scene_parser.SceneParser(detector)
    assert two.attributes is not None  # found beside the detector
    assert scene_parser.SceneParser(detector, attribute_model=False).attributes is None
    scene = two.parse_batch([image])[0]
    assert isinstance(scene, Scene) and len(scene.objects) == len(own.objects)  # it finds no objects of its own
    with pytest.raises(FileNotFoundError, match=r"nowhere\.onnx"):
        scene_parser.SceneParser(detector, attribute_model=tmp_path / "nowhere.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ValueError, match=r"junk\.onnx: not a readable ONNX attribute-classifier model"):
        scene_parser.SceneParser(detector, attribute_model=tmp_path / "junk.onnx")
    # resuming continues from the checkpoint
    assert A.main([*argv[:5], "3", *argv[6:]]) == 0
    assert torch.load(out / "last.pt", map_location="cpu", weights_only=False)["step"] == 3


def test_white_balance_out_of_range_is_one_clear_error(tmp_path, capsys):
    from logicval_hf.training import train_attribute_classifier as A

    with pytest.raises(SystemExit) as e:
        A.main(["--out", str(tmp_path / "ack"), "--white-balance", "-0.2"])
    assert e.value.code == 2
    assert "--white-balance must lie in [0, 1], got -0.2" in capsys.readouterr().err
