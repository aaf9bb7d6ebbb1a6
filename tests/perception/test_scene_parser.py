"""The learned CLEVR scene parser (logicval_hf/perception/scene_parser.py) and its training script."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from logicval_hf import Scene, load_catalog
from logicval_hf.contract.spatial import region_of
from logicval_hf.perception import load_image

from helpers import occluded_map, render_folder, two_step_detector

pytest.importorskip("onnxruntime")

from logicval_hf.perception import scene_parser  # noqa: E402

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
    return dict(zip(names, scenes))


# ---- the shipped model ----------------------------------------------------------------------------
def test_shipped_model_carries_its_metadata():
    model = scene_parser.load_model()
    dom = load_catalog().domain
    for a in dom.perceived_attributes:
        assert sorted(model.meta["classes"][a]) == sorted(dom.attributes[a])
        assert 0.3 <= model.meta["temperatures"][a] <= 5.0
    assert 0 < model.threshold < 1
    # the second stage ships beside the detector and is used by default; both files fit the 20 MB budget
    assert model.attributes is not None and not model.attributes.meta["refine_centre"]
    for a in dom.perceived_attributes:
        assert sorted(model.attributes.meta["classes"][a]) == sorted(dom.attributes[a])
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


def test_sessions_do_not_spin_between_runs_and_spinning_changes_no_result(monkeypatch, parsed):
    """A parse alternates between the detector's and the classifier's sessions; a pool thread spinning after
    its run would compete with the next session for the cores (half the speed one image at a time on 2
    cores, benchmarks/bench_ort_spinning.py). Spinning is a scheduling matter only: the scenes are the same."""
    key = "session.intra_op.allow_spinning"
    shipped = scene_parser.SceneParser()
    assert shipped.session.get_session_options().get_session_config_entry(key) == "0"
    assert shipped.attributes.session.get_session_options().get_session_config_entry(key) == "0"
    monkeypatch.setattr(scene_parser, "ORT_SPINNING", True)
    spinning = scene_parser.SceneParser()
    assert spinning.session.get_session_options().get_session_config_entry(key) == "1"
    rgbs = [load_image(DATA / n) for n in sorted(parsed)]
    assert [s.to_dict() for s in spinning.parse_batch(rgbs)] == [s.to_dict() for s in shipped.parse_batch(rgbs)]


def test_jpeg_reencode_of_a_clevr_image_gives_the_same_graph():
    name = "clevr_v1_train__CLEVR_train_000514.png"
    rgb = load_image(DATA / name)
    assert _graph(scene_parser.extract(_jpeg(rgb))) == _truth_graph(SCENES[name])


def test_jpeg_reencode_of_a_numpy_render_gives_the_same_graph():
    from logicval_hf.training.train_scene_parser import numpy_render

    checked = 0
    for i in range(3):
        rec = numpy_render((4242, 0, i), min_objects=3, max_objects=7)
        W, H = rec.rgb.shape[1], rec.rgb.shape[0]
        cls = scene_parser.load_model().meta["classes"]
        truth = sorted((*(cls[a][int(lab[k])] for k, a in enumerate(ATTRS)), region_of(*c, W, H))
                       for c, lab in zip(rec.centres, rec.labels))
        png = scene_parser.extract(rec.rgb)
        jpg = scene_parser.extract(_jpeg(rec.rgb))
        assert _graph(png) == truth
        assert _graph(jpg) == _graph(png)
        checked += 1
    assert checked == 3


def test_the_shipped_detector_reads_once_then_looks_again_by_default():
    model = scene_parser.load_model()
    assert model.meta["flip"] is False and model.second_look is not None
    assert model.decision_threshold() == model.second_look["threshold"]


def test_the_first_looks_threshold_decides_which_objects_set_the_scale():
    """`SceneParser.scales` measures the objects its first look finds above the threshold it is given: at the
    model's own it reads a CLEVR image at its objects' scale; above every peak it finds none and falls back
    to the scale for an image without objects."""
    parser = scene_parser.load_model()
    image = load_image(DATA / sorted(SCENES)[0])
    h, w = image.shape[:2]
    own, none = parser.scales([image]), parser.scales([image], threshold=1.0)
    assert own == parser.scales([image], threshold=parser.threshold)
    assert none == [scene_parser.adaptive_scale([], w, h, parser.scale_meta)] != own


def test_two_looks_bring_the_mirrors_offsets_back_to_the_original_cells():
    """flip=True: the mirrored image's offsets come back to the original's cells. A wrong mirror would move
    every centre; here the two-look centres stay within a pixel of the one-look ones and of the truth."""
    model = scene_parser.load_model()
    name = "clevr_v1_train__CLEVR_train_000514.png"
    rgb = load_image(DATA / name)
    both, = model.detect_batch([rgb], flip=True)
    one, = model.detect_batch([rgb], flip=False)
    truth = np.array([o["pixel_coords"][:2] for o in SCENES[name]["objects"]], float)
    assert len(both) == len(one) == len(truth)  # peaks are the original view's
    for d in both:
        nearest = min(one, key=lambda e: (e.cx - d.cx) ** 2 + (e.cy - d.cy) ** 2)
        assert abs(nearest.cx - d.cx) < 1 and abs(nearest.cy - d.cy) < 1
        assert np.abs(truth - (d.cx, d.cy)).sum(1).min() < 3  # a wrong mirror errs by tens of pixels
    # and the mirrored image parses to the mirrored scene
    W = rgb.shape[1]
    mirrored, = model.detect_batch([np.ascontiguousarray(rgb[:, ::-1])], flip=True)
    for d in mirrored:
        assert np.abs(truth - (W - d.cx, d.cy)).sum(1).min() < 3


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown settings .* for the clevr scene parser"):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), thresh=0.5)


@pytest.mark.parametrize("setting,says", [
    ({"flip": "false"}, "flip must be true or false, not 'false'"),
    ({"flip": 1}, "flip must be true or false"),
    ({"threshold": 2}, r"threshold must be a number in \(0, 1\], not 2"),
    ({"threshold": "0.5"}, "threshold must be a number"),
    ({"max_objects": 0}, "max_objects must be a whole number >= 1, not 0"),
    ({"batch_size": 2.5}, "batch_size must be a whole number"),
    ({"classifier_flip": "yes"}, "classifier_flip must be true or false, not 'yes'"),
])
def test_bad_setting_values_are_refused_by_name(setting, says):
    with pytest.raises(ValueError, match=says):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), **setting)


def test_good_setting_values_are_taken():
    rgb = np.zeros((32, 32, 3), np.uint8)
    assert scene_parser.extract(rgb, flip=False, threshold=0.5, max_objects=3, batch_size=1).objects == ()


def test_the_classifiers_mirrored_read_is_the_mean_of_a_crop_and_its_mirror():
    """``classifier_flip``: each crop's logits averaged with its mirror's, so a crop and its mirror read alike."""
    classifier = scene_parser.load_model().attributes
    rgb = load_image(DATA / sorted(SCENES)[0])
    squares = [(rgb.shape[1] * f, rgb.shape[0] / 2, 64.0) for f in (0.3, 0.5, 0.7)]
    crops = scene_parser.object_crops(rgb, squares, [(x + 9, y - 5) for x, y, _ in squares])
    mirrored = np.ascontiguousarray(crops[..., ::-1])
    both, _ = classifier.classify(crops, mirror=True)
    both_of_mirror, _ = classifier.classify(mirrored, mirror=True)
    plain, _ = classifier.classify(crops)
    plain_of_mirror, _ = classifier.classify(mirrored)
    for a, p in both.items():
        np.testing.assert_allclose(p, both_of_mirror[a], atol=1e-5)
        assert np.allclose(p.sum(1), 1.0)
        # the product of the two readings' probabilities, renormalised, up to the temperature
        temp = float(classifier.meta["temperatures"].get(a, 1.0))
        logq = (np.log(plain[a]) + np.log(plain_of_mirror[a])) / 2 * temp
        logq = (logq - logq.max(1, keepdims=True)) / temp
        np.testing.assert_allclose(p, np.exp(logq) / np.exp(logq).sum(1, keepdims=True), atol=1e-4)


def test_the_mirrored_classifier_read_keeps_the_clevr_images_truth(parsed):
    names = sorted(SCENES)
    scenes = scene_parser.extract_batch([load_image(DATA / n) for n in names], classifier_flip=True)
    for n, scene in zip(names, scenes, strict=True):
        assert _graph(scene) == _truth_graph(SCENES[n])
        assert len(scene.objects) == len(parsed[n].objects)


def test_missing_model_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.onnx"):
        scene_parser.load_model(tmp_path / "nope.onnx")


def test_backend_entry_point_through_extract_scenes():
    from logicval_hf.perception import extract_scenes, register_backend

    register_backend("scene_parser_test", "logicval_hf.perception.scene_parser:extract", replace=True)
    name = sorted(SCENES)[0]
    (scene,) = extract_scenes([DATA / name], backend="scene_parser_test")
    assert _graph(scene) == _truth_graph(SCENES[name])


# ---- training -------------------------------------------------------------------------------------
def test_corrupt_training_files_are_reported_by_name_and_skipped(tmp_path, capsys):
    from logicval_hf.training.train_scene_parser import load_folder

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


@pytest.mark.slow
def test_training_two_steps_writes_a_loadable_checkpoint_and_export(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from logicval_hf.training import train_scene_parser as T

    folder, out, export, argv = two_step_detector(tmp_path, "--export-every", "2", "--hidden-weight", "2")
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    net = T.build_model()
    net.load_state_dict(ck["model"])
    model = scene_parser.SceneParser(export)
    assert model.meta["provenance"]["trained_steps"] == 2
    assert "vis" in model.outputs and model.meta["visible_point"]
    # the export turns the second look on; four held-out images are too few to fit its threshold
    look = model.meta["provenance"]["val"]["second_look"]
    assert model.second_look is not None and not look["fitted"]
    assert model.second_look["threshold"] == look["threshold"]
    assert T.load_folder(folder)[0].mask is not None
    scene = model.parse_batch([load_image(folder / "images" / "R_000.png")])[0]
    assert isinstance(scene, Scene)
    assert scene.image_size in ((480, 320), (320, 240))
    # resuming continues from the checkpoint, it does not start over
    assert T.main([*argv[:5], "3", *argv[6:]]) == 0
    assert torch.load(out / "last.pt", map_location="cpu", weights_only=False)["step"] == 3


def test_a_hidden_weight_that_is_not_positive_is_one_line(capsys):
    from logicval_hf.training import train_scene_parser as T

    with pytest.raises(SystemExit):
        T.main(["--hidden-weight", "0", "--steps", "1"])
    assert "--hidden-weight must be positive, got 0.0" in capsys.readouterr().err


def test_batches_depend_on_seed_and_step_only():
    pytest.importorskip("torch")
    from logicval_hf.training.train_scene_parser import make_batch

    a = make_batch([], 5, 1, 2, 1.0, (160, 128))
    b = make_batch([], 5, 1, 2, 1.0, (160, 128))
    c = make_batch([], 6, 1, 2, 1.0, (160, 128))
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert a[0].shape != c[0].shape or not (a[0] == c[0]).all()  # another step: another batch (or canvas)


# ---- occlusion: attributes are read where an object shows ------------------------------------------------


def test_visible_point_lies_inside_the_visible_part():
    from logicval_hf.training.train_scene_parser import visible_points

    m = occluded_map()
    pts = visible_points(m, 3)
    x, y = pts[0]
    assert m[int(y), int(x)] == 0 and 30 <= x < 40  # on the strip, not on the occluder at its centre
    assert m[int(pts[1][1]), int(pts[1][0])] == 1
    assert np.isnan(pts[2]).all()  # an object without pixels has no visible point


def test_mask_cells_label_each_cell_by_the_object_covering_it():
    from logicval_hf.training.train_scene_parser import mask_cells

    owner, cover = mask_cells(occluded_map(), (6, 8), 8, 2)
    assert owner[1, 1] == 1 and cover[1, 1] == 1.0  # the occluded object's centre cell belongs to the occluder
    assert owner[1, 4] == 0  # the visible strip belongs to the object behind
    assert owner[5, 7] == -1 and cover[5, 7] == 0  # floor


def test_targets_point_the_visible_offset_at_the_visible_part():
    from logicval_hf.training.train_scene_parser import targets

    m = occluded_map()
    centres = np.array([[20.0, 20.0], [15.0, 20.0]])
    sizes = np.array([[40.0, 40.0], [30.0, 40.0]])
    labels = np.array([[1, 0, 0, 0], [2, 1, 1, 1]])
    heat, idx, reg, attr, aw, hw = targets(centres, sizes, labels, (6, 8), 8, m, np.arange(2), labels)
    assert (hw == 1).all()  # nothing to ignore: every object is labelled
    row = reg[(idx == 2 * 8 + 2).nonzero()[0][0]]  # object 0's centre cell (2, 2) comes first
    assert 30 / 8 <= 2 + row[5] < 40 / 8  # the visible-point offset lands on the strip
    assert attr[0, 2, 2] == 2 and attr[0, 1, 4] == 1  # colours: the occluder's at the centre, 0's on the strip
    # each object weighs the same in the attribute loss, however much of the image it covers
    assert aw[attr[0] == 1].sum() == pytest.approx(aw[attr[0] == 2].sum())


def test_hidden_weight_weighs_the_centre_of_an_object_behind_another():
    import torch

    from logicval_hf.training.parser_data import classes
    from logicval_hf.training.train_scene_parser import loss_fn, targets

    m = occluded_map()
    centres = np.array([[20.0, 20.0], [15.0, 20.0]])  # object 0's centre pixel shows object 1, its occluder
    sizes = np.array([[40.0, 40.0], [30.0, 40.0]])
    labels = np.array([[1, 0, 0, 0], [2, 1, 1, 1]])
    plain = targets(centres, sizes, labels, (6, 8), 8, m, np.arange(2), labels)
    heavy = targets(centres, sizes, labels, (6, 8), 8, m, np.arange(2), labels, hidden_weight=3.0)
    hw = heavy[5]
    assert hw[2, 2] == 3.0 and heavy[0][2, 2] == 1.0  # the hidden centre's cell, a positive
    assert hw[2, 1] == 1.0 and heavy[0][2, 1] == 1.0  # the occluder's own centre is not hidden
    assert (np.delete(hw.ravel(), 2 * 8 + 2) == 1).all()
    for a, b in zip(plain, heavy, strict=True):  # nothing else changes
        if a is not plain[5]:
            assert np.array_equal(a, b)

    cls = classes()
    out = torch.zeros(1, 1 + 4 + sum(len(v) for v in cls.values()) + 2, 6, 8)
    out[0, 0] = -3.0  # every cell unsure: p = 0.047
    def loss(t, hw):
        heat, idx, reg, attr, aw, _ = t
        return loss_fn(out, torch.from_numpy(heat)[None], [torch.from_numpy(idx)], [torch.from_numpy(reg)],
                       torch.from_numpy(attr)[None], torch.from_numpy(aw)[None], cls,
                       None if hw is None else torch.from_numpy(hw)[None])[1]["heat"]
    assert loss(plain, None) == pytest.approx(loss(plain, plain[5]))  # weight 1: the loss as before
    p = torch.sigmoid(torch.tensor(-3.0))
    one_positive = float(-((1 - p) ** 2 * torch.log(p))) / 2  # two positives
    assert loss(heavy, hw) == pytest.approx(loss(plain, plain[5]) + 2 * one_positive, rel=1e-5)


def test_decode_reads_attributes_at_the_visible_point():
    meta = {"stride": 8, "attributes": ["color"], "classes": {"color": ["a", "b"]}}
    peak = np.zeros((1, 4, 4), np.float32)
    peak[0, 1, 1] = 0.9
    reg = np.zeros((4, 4, 4), np.float32)
    logits = np.zeros((2, 4, 4), np.float32)
    logits[0, 1, 1] = 5.0  # "a" at the peak
    logits[1, 1, 3] = 5.0  # "b" two cells to the right
    vis = np.zeros((2, 4, 4), np.float32)
    vis[0, 1, 1] = 2.5
    (d,) = scene_parser.decode(peak, reg, logits, meta, 1.0, 32, 32, 0.5, 8, vis)
    assert d.cell == (3, 1) and int(np.argmax(d.probs["color"])) == 1
    (d0,) = scene_parser.decode(peak, reg, logits, meta, 1.0, 32, 32, 0.5, 8)  # a model without the head
    assert d0.cell == (1, 1) and int(np.argmax(d0.probs["color"])) == 0


def test_a_checkpoint_without_the_visible_head_initialises_the_new_model():
    torch = pytest.importorskip("torch")
    from logicval_hf.training import train_scene_parser as T

    old = T.build_model().state_dict()
    old = {k: (v[:-2] if k.startswith("head.1.") else v) for k, v in old.items()}
    net = T.build_model()
    T.load_init(net, old)
    w = net.state_dict()["head.1.weight"]
    assert torch.equal(w[:-2], old["head.1.weight"]) and not w[-2:].any()


# ---- images as T2I models frame and light them (issue 21) ------------------------------------------------
SHIFT_IMAGE = "clevr_v1_train__CLEVR_train_000514.png"


@pytest.mark.parametrize("shift", ["square", "exposure_0.7", "saturation_0.6", "jpeg_50"])
def test_a_shifted_copy_of_a_clevr_image_still_parses_to_its_truth(shift):
    from logicval_hf.perception.shifts import apply_shift

    s = SCENES[SHIFT_IMAGE]
    radii = [0.35 if o["size"] == "small" else 0.7 for o in s["objects"]]
    rgb, centres = apply_shift(shift, load_image(DATA / SHIFT_IMAGE), [o["pixel_coords"] for o in s["objects"]], radii)
    truth = dict(s, image_width=rgb.shape[1], image_height=rgb.shape[0],
                 objects=[dict(o, pixel_coords=c) for o, c in zip(s["objects"], centres)])
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
    sm = {"object_size": 58.0, "long_side": 480, "long_side_range": [192, 960]}
    assert scene_parser.adaptive_scale([116.0, 116.0], 1024, 1024, sm) == pytest.approx(0.5)
    assert scene_parser.adaptive_scale([], 1024, 768, sm) == pytest.approx(480 / 1024)  # nothing seen: fixed side
    assert scene_parser.adaptive_scale([2000.0], 1024, 1024, sm) == pytest.approx(192 / 1024)  # clamped
    assert scene_parser.adaptive_scale([4.0], 512, 512, sm) == pytest.approx(960 / 512)


def test_scene_confidence_parts():
    det = scene_parser.Detection(100.0, 80.0, 30, 30, 0.9, {"color": np.array([0.9, 0.1])}, scale=1.0)
    meta = {**scene_parser.CONFIDENCE_DEFAULTS, "centre_sigma": 1.0}
    sure = scene_parser.scene_confidence([det], [], 400, 300, meta, ["color"])
    assert sure == pytest.approx(0.9 * 0.9, rel=1e-3)
    # a candidate peak below the threshold may be a missed object; a centre on a midline may be on either side
    assert scene_parser.scene_confidence([det], [0.3], 400, 300, meta, ["color"]) == pytest.approx(sure * 0.7, rel=1e-3)
    mid = scene_parser.Detection(200.0, 80.0, 30, 30, 0.9, {"color": np.array([0.9, 0.1])}, scale=1.0)
    assert scene_parser.scene_confidence([mid], [], 400, 300, meta, ["color"]) == pytest.approx(sure * 0.5, rel=1e-3)
    assert scene_parser.scene_confidence([], [], 400, 300, {**meta, "power": 2.0}, ["color"]) == 1.0


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
