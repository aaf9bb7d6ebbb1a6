"""The learned CLEVR scene parser (logicval_hf/perception/scene_parser.py and its parser_* modules) and the
detector's training script."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import load_script, occluded_map, render_folder
from PIL import Image

from logicval_hf import Scene, load_catalog
from logicval_hf.contract.spatial import region_of
from logicval_hf.perception import load_image

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser
from logicval_hf.perception.parser_decoding import Detection, adaptive_scale, decode, scene_confidence
from logicval_hf.perception.parser_settings import (
    SUPPORTED_SETTINGS,
    ConfidenceSettings,
    DetectorSettings,
    ScaleSettings,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"
SCENES = {s["image_filename"]: s for s in json.loads((DATA / "scenes.json").read_text())}
ATTRS = ("color", "shape", "material")


def _jpeg(rgb: np.ndarray, quality: int = 90) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG", quality=quality)
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB"))


def _graph(scene: Scene) -> list[tuple]:
    """The scene graph as the metric reads it: attributes and region per object, order-free."""
    W, H = scene.image_size
    return sorted((*(o.attributes[a] for a in ATTRS), region_of(*o.center, W, H)) for o in scene.objects)


def _truth_graph(s: dict) -> list[tuple]:
    W, H = s["image_width"], s["image_height"]
    return sorted((*(o[a] for a in ATTRS), region_of(*o["pixel_coords"][:2], W, H)) for o in s["objects"])


@pytest.fixture(scope="module")
def parsed() -> dict[str, Scene]:
    names = sorted(SCENES)
    scenes = scene_parser.extract_batch([load_image(DATA / n) for n in names])
    return dict(zip(names, scenes, strict=True))


# ---- the shipped model ----------------------------------------------------------------------------
def test_shipped_model_carries_its_metadata():
    model = scene_parser.load_model()
    dom = load_catalog().domain
    for a in dom.perceived_attributes:
        assert sorted(model.settings.classes[a]) == sorted(dom.attributes[a])
        assert 0.3 <= model.settings.temperatures[a] <= 5.0
    assert 0 < model.settings.threshold < 1
    # the second stage ships beside the detector and is used by default; both files fit the 20 MB budget
    assert model.attributes is not None and not model.attributes.meta["refine_centre"]
    for a in dom.perceived_attributes:
        assert sorted(model.attributes.settings.classes[a]) == sorted(dom.attributes[a])
    assert sum(p.stat().st_size for p in scene_parser.MODEL_PATHS) <= 20 * 2**20


@pytest.mark.parametrize("name", sorted(SCENES))
def test_clevr_images_parse_to_their_ground_truth(parsed, name):
    truth = SCENES[name]
    scene = parsed[name]
    assert scene.image_size == (truth["image_width"], truth["image_height"])
    assert _graph(scene) == _truth_graph(truth)


def test_output_is_a_valid_scene_with_calibrated_probs(parsed):
    dom = load_catalog().domain
    for scene in parsed.values():
        again = Scene.from_dict(scene.to_dict())  # validates boxes, attributes, probabilities
        assert len(again.objects) == len(scene.objects)
        W, H = scene.image_size
        for o in scene.objects:
            x0, y0, x1, y1 = o.bbox
            assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
            assert 0 < o.score <= 1
            for a in dom.perceived_attributes:
                p = o.probs[a]
                assert set(p) == set(dom.attributes[a])
                assert abs(sum(p.values()) - 1) < 1e-4
                assert max(p, key=p.get) == o.attributes[a]


def test_batched_equals_one_by_one_with_mixed_sizes(parsed):
    names = sorted(SCENES)[:4]
    for n in names:
        single = scene_parser.extract(load_image(DATA / n))
        assert single.to_dict() == parsed[n].to_dict()


def test_sessions_do_not_spin_between_runs():
    """A parse alternates between the detector's and the classifier's sessions; a pool thread spinning after
    its run would compete with the next inference session for the cores (half the speed one image at a time on 2
    cores)."""
    key = "session.intra_op.allow_spinning"
    shipped = scene_parser.SceneParser()
    assert shipped.session.get_session_options().get_session_config_entry(key) == "0"
    assert shipped.attributes.session.get_session_options().get_session_config_entry(key) == "0"


def test_jpeg_reencode_of_a_clevr_image_gives_the_same_graph():
    name = "clevr_v1_train__CLEVR_train_000514.png"
    rgb = load_image(DATA / name)
    assert _graph(scene_parser.extract(_jpeg(rgb))) == _truth_graph(SCENES[name])


def test_jpeg_reencode_of_a_numpy_render_gives_the_same_graph():
    from logicval_hf.training.parser_data import numpy_render

    checked = 0
    for i in range(3):
        rec = numpy_render((4242, 0, i), min_objects=3, max_objects=7)
        W, H = rec.rgb.shape[1], rec.rgb.shape[0]
        cls = scene_parser.load_model().settings.classes
        truth = sorted((*(cls[a][int(lab[k])] for k, a in enumerate(ATTRS)), region_of(*c, W, H))
                       for c, lab in zip(rec.centres, rec.labels, strict=True))
        png = scene_parser.extract(rec.rgb)
        jpg = scene_parser.extract(_jpeg(rec.rgb))
        assert _graph(png) == truth
        assert _graph(jpg) == _graph(png)
        checked += 1
    assert checked == 3


def test_the_shipped_detector_reads_once_then_looks_again_by_default():
    settings = scene_parser.load_model().settings
    assert settings.second_look is not None
    assert settings.decision_threshold() == settings.second_look.threshold
    assert settings.decision_threshold(False) == settings.threshold


def test_settings_are_read_once_into_a_frozen_object():
    import dataclasses

    model = scene_parser.load_model()
    assert model.settings == DetectorSettings.from_metadata(model.meta, model.path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.settings.threshold = 0.1  # type: ignore[misc]


def test_metadata_without_what_the_read_needs_is_named_in_one_line(tmp_path):
    with pytest.raises(ValueError, match=r"x\.onnx: the detector's 'logicval_scene_parser' metadata is incomplete"):
        DetectorSettings.from_metadata({"stride": 8}, tmp_path / "x.onnx")


def test_the_first_looks_threshold_decides_which_objects_set_the_scale():
    """`SceneParser.scales` measures the objects its first look finds above the threshold it is given: at the
    model's own it reads a CLEVR image at its objects' scale; above every peak it finds none and falls back
    to the scale for an image without objects."""
    parser = scene_parser.load_model()
    image = load_image(DATA / sorted(SCENES)[0])
    h, w = image.shape[:2]
    own, none = parser.scales([image]), parser.scales([image], threshold=1.0)
    assert own == parser.scales([image], threshold=parser.settings.threshold)
    assert none == [adaptive_scale([], w, h, parser.settings.scale)] != own


@pytest.mark.parametrize("name", ["visible_peaks", "flip", "classifier_flip", "thresh"])
def test_a_setting_the_shipped_model_does_not_take_is_one_line_listing_the_supported(name):
    with pytest.raises(ValueError) as e:
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), **{name: True})
    message = str(e.value)
    assert "\n" not in message and repr(name) in message
    assert all(s in message for s in SUPPORTED_SETTINGS)


def test_a_near_miss_setting_gets_a_suggestion():
    with pytest.raises(ValueError, match="did you mean 'threshold'"):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), treshold=0.5)


@pytest.mark.parametrize("setting,says", [
    ({"second_look": "false"}, "second_look must be true or false, not 'false'"),
    ({"white_balance": 1}, "white_balance must be true or false"),
    ({"threshold": 2}, r"threshold must be a number in \(0, 1\], not 2"),
    ({"threshold": "0.5"}, "threshold must be a number"),
    ({"max_objects": 0}, "max_objects must be a whole number >= 1, not 0"),
    ({"batch_size": 2.5}, "batch_size must be a whole number"),
    ({"precision": "int4"}, "precision must be one of int8, fp32"),
])
def test_bad_setting_values_are_refused_by_name(setting, says):
    with pytest.raises(ValueError, match=says):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), **setting)


def test_good_setting_values_are_taken():
    rgb = np.zeros((32, 32, 3), np.uint8)
    assert scene_parser.extract(rgb, second_look=False, threshold=0.5, max_objects=3, batch_size=1,
                                white_balance=False, precision="fp32").objects == ()


def test_missing_model_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.onnx"):
        scene_parser.load_model(tmp_path / "nope.onnx")


def test_backend_entry_point_through_extract_scenes():
    from logicval_hf.perception import extract_scenes, register_backend

    register_backend("scene_parser_test", "logicval_hf.perception.scene_parser:extract", replace=True)
    name = sorted(SCENES)[0]
    (scene,) = extract_scenes([DATA / name], backend="scene_parser_test")
    assert _graph(scene) == _truth_graph(SCENES[name])


# ---- training -------------------------------------------------------------------------------------
def test_corrupt_training_files_are_reported_by_name_and_skipped(tmp_path, capsys):
    from logicval_hf.training.parser_data import load_folder

    folder = render_folder(tmp_path / "renders", 3, masks=True)
    (folder / "masks" / "R_002.png").write_bytes(b"\x89PNG\r\n\x1a\n broken mask")
    report: list[str] = []
    recs = load_folder(folder, report)
    assert [r.name for r in recs] == ["R_000.png", "R_001.png"]
    assert any("R_bad.png" in line for line in report)
    assert any("R_broken.json" in line for line in report)
    assert any("R_002.png" in line and "unreadable mask" in line for line in report)
    err = capsys.readouterr().err
    assert "R_bad.png" in err and "R_broken.json" in err


def test_batches_depend_on_seed_and_step_only():
    pytest.importorskip("torch")
    from logicval_hf.training.parser_model import make_batch

    a = make_batch([], 5, 1, 2, 1.0, (160, 128))
    b = make_batch([], 5, 1, 2, 1.0, (160, 128))
    c = make_batch([], 6, 1, 2, 1.0, (160, 128))
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert a[0].shape != c[0].shape or not (a[0] == c[0]).all()  # another step: another batch (or canvas)


# ---- occlusion: attributes are read where an object shows ------------------------------------------------


def test_visible_point_lies_inside_the_visible_part():
    from logicval_hf.training.parser_model import visible_points

    m = occluded_map()
    pts = visible_points(m, 3)
    x, y = pts[0]
    assert m[int(y), int(x)] == 0 and 30 <= x < 40  # on the strip, not on the occluder at its centre
    assert m[int(pts[1][1]), int(pts[1][0])] == 1
    assert np.isnan(pts[2]).all()  # an object without pixels has no visible point


def test_mask_cells_label_each_cell_by_the_object_covering_it():
    from logicval_hf.training.parser_model import mask_cells

    owner, cover = mask_cells(occluded_map(), (6, 8), 8, 2)
    assert owner[1, 1] == 1 and cover[1, 1] == 1.0  # the occluded object's centre cell belongs to the occluder
    assert owner[1, 4] == 0  # the visible strip belongs to the object behind
    assert owner[5, 7] == -1 and cover[5, 7] == 0  # floor


def test_targets_point_the_visible_offset_at_the_visible_part():
    from logicval_hf.training.parser_model import targets

    m = occluded_map()
    centres = np.array([[20.0, 20.0], [15.0, 20.0]])
    sizes = np.array([[40.0, 40.0], [30.0, 40.0]])
    labels = np.array([[1, 0, 0, 0], [2, 1, 1, 1]])
    _, idx, reg, attr, aw, hw = targets(centres, sizes, labels, (6, 8), 8, m, np.arange(2), labels)
    assert (hw == 1).all()  # nothing to ignore: every object is labelled
    row = reg[(idx == 2 * 8 + 2).nonzero()[0][0]]  # object 0's centre cell (2, 2) comes first
    assert 30 / 8 <= 2 + row[5] < 40 / 8  # the visible-point offset lands on the strip
    assert attr[0, 2, 2] == 2 and attr[0, 1, 4] == 1  # colours: the occluder's at the centre, 0's on the strip
    # each object weighs the same in the attribute loss, however much of the image it covers
    assert aw[attr[0] == 1].sum() == pytest.approx(aw[attr[0] == 2].sum())


def test_decode_reads_attributes_at_the_visible_point():
    settings = DetectorSettings.from_metadata({"stride": 8, "attributes": ["color"], "classes": {"color": ["a", "b"]}},
                                              Path("x.onnx"))
    peak = np.zeros((1, 4, 4), np.float32)
    peak[0, 1, 1] = 0.9
    reg = np.zeros((4, 4, 4), np.float32)
    logits = np.zeros((2, 4, 4), np.float32)
    logits[0, 1, 1] = 5.0  # "a" at the peak
    logits[1, 1, 3] = 5.0  # "b" two cells to the right
    vis = np.zeros((2, 4, 4), np.float32)
    (d0,) = decode(peak, reg, logits, vis, settings, 1.0, 32, 32, 0.5, 8)  # the object shows at its centre
    assert d0.cell == (1, 1) and int(np.argmax(d0.probs["color"])) == 0
    vis[0, 1, 1] = 2.5
    (d,) = decode(peak, reg, logits, vis, settings, 1.0, 32, 32, 0.5, 8)
    assert d.cell == (3, 1) and int(np.argmax(d.probs["color"])) == 1
    assert (d.vx, d.vy) == (3.5 * 8, 8.0) and (d.cx, d.cy) == (8.0, 8.0)  # the centre stays the peak's


# ---- images as T2I models frame and light them ------------------------------------------------------------
SHIFT_IMAGE = "clevr_v1_train__CLEVR_train_000514.png"
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py"


@pytest.mark.parametrize("shift", ["square", "exposure_0.7", "saturation_0.6", "jpeg_50"])
def test_a_shifted_copy_of_a_clevr_image_still_parses_to_its_truth(shift):
    apply_shift = load_script(BENCH, "clevr_perception_shifts_parser").apply_shift
    s = SCENES[SHIFT_IMAGE]
    radii = [0.35 if o["size"] == "small" else 0.7 for o in s["objects"]]
    rgb, centres = apply_shift(shift, load_image(DATA / SHIFT_IMAGE), [o["pixel_coords"] for o in s["objects"]], radii)
    truth = dict(s, image_width=rgb.shape[1], image_height=rgb.shape[0],
                 objects=[dict(o, pixel_coords=c) for o, c in zip(s["objects"], centres, strict=True)])
    assert _graph(scene_parser.extract(rgb)) == _truth_graph(truth)


def test_scene_confidence_is_a_probability_and_drops_on_a_corrupted_image(parsed):
    for scene in parsed.values():
        assert scene.confidence is not None and 0 <= scene.confidence <= 1
        assert Scene.from_dict(scene.to_dict()).confidence == scene.confidence
    rgb = load_image(DATA / SHIFT_IMAGE)
    clean = scene_parser.extract(rgb).confidence
    bad = rgb.copy()
    rng = np.random.default_rng(0)
    bad[40:200, 120:330] = rng.integers(0, 256, (160, 210, 3), dtype=np.uint8)  # a burst of noise over objects
    assert scene_parser.extract(bad).confidence < clean


def test_adaptive_scale_reads_the_median_object_at_the_model_size():
    sm = ScaleSettings(object_size=58.0, long_side=480, long_side_range=(192, 960))
    assert adaptive_scale([116.0, 116.0], 1024, 1024, sm) == pytest.approx(0.5)
    assert adaptive_scale([], 1024, 768, sm) == pytest.approx(480 / 1024)  # nothing seen: fixed side
    assert adaptive_scale([2000.0], 1024, 1024, sm) == pytest.approx(192 / 1024)  # clamped
    assert adaptive_scale([4.0], 512, 512, sm) == pytest.approx(960 / 512)


def test_scene_confidence_parts():
    det = Detection(100.0, 80.0, 30, 30, 0.9, {"color": np.array([0.9, 0.1])}, scale=1.0)
    conf = ConfidenceSettings(centre_sigma=1.0)
    sure = scene_confidence([det], [], 400, 300, conf, ["color"])
    assert sure == pytest.approx(0.9 * 0.9, rel=1e-3)
    # a candidate peak below the threshold may be a missed object; a centre on a midline may be on either side
    assert scene_confidence([det], [0.3], 400, 300, conf, ["color"]) == pytest.approx(sure * 0.7, rel=1e-3)
    mid = Detection(200.0, 80.0, 30, 30, 0.9, {"color": np.array([0.9, 0.1])}, scale=1.0)
    assert scene_confidence([mid], [], 400, 300, conf, ["color"]) == pytest.approx(sure * 0.5, rel=1e-3)
    assert scene_confidence([], [], 400, 300, ConfidenceSettings(power=2.0), ["color"]) == 1.0


def test_data_folders_take_their_first_scenes_and_a_weight(tmp_path):
    from logicval_hf.training.parser_data import DataFolder, load_folder, parse_data_folder, record_weights

    assert parse_data_folder("/a/b") == DataFolder(Path("/a/b"))
    assert parse_data_folder("/a/b#first=40,weight=2.5") == DataFolder(Path("/a/b"), 40, 2.5)
    for bad in ("/a#first=0", "/a#weight=-1", "/a#frist=3", "/a#first=x"):
        with pytest.raises(ValueError, match="--data"):
            parse_data_folder(bad)
    folder = render_folder(tmp_path / "r", 4, masks=True)
    assert [r.name for r in load_folder(folder, first=2)] == [r.name for r in load_folder(folder)][:2]
    p = record_weights([(DataFolder(Path("a"), weight=3.0), 3), (DataFolder(Path("b")), 1)])
    assert p.tolist() == pytest.approx([0.25, 0.25, 0.25, 0.25])  # folder a weighs 3, folder b 1
    assert record_weights([(DataFolder(Path("a")), 3)]) is None
