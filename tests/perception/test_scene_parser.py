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
    assert scene_parser.DEFAULT_MODEL.stat().st_size <= 20 * 2**20


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


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unknown settings .* for the clevr scene parser"):
        scene_parser.extract(np.zeros((32, 32, 3), np.uint8), thresh=0.5)


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
def _render_folder(root: Path, n: int) -> Path:
    """A tiny render folder in the CLEVR layout, drawn by the numpy renderer, plus one corrupt image and one
    corrupt scene file."""
    from logicval_hf.training.train_scene_parser import classes, numpy_render

    cls = classes()
    (root / "images").mkdir(parents=True)
    (root / "scenes").mkdir()
    for i in range(n):
        rec = numpy_render((77, 0, i), min_objects=2, max_objects=4)
        name = f"R_{i:03d}.png"
        Image.fromarray(rec.rgb).save(root / "images" / name)
        objs = []
        for (cx, cy), (w, h), lab in zip(rec.centres, rec.sizes, rec.labels):
            objs.append({**{a: cls[a][int(lab[k])] for k, a in enumerate(ATTRS)}, "size": "large",
                         "pixel_coords": [float(cx), float(cy), 10.0],
                         "bbox_xyxy": [int(cx - w / 2), int(cy - h / 2), int(cx + w / 2), int(cy + h / 2)]})
        (root / "scenes" / f"R_{i:03d}.json").write_text(json.dumps({"image_filename": name, "objects": objs}))
    (root / "images" / "R_bad.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    (root / "scenes" / "R_bad.json").write_text(json.dumps({"image_filename": "R_bad.png", "objects": []}))
    (root / "scenes" / "R_broken.json").write_text("{ this is not json")
    return root


def test_corrupt_training_files_are_reported_by_name_and_skipped(tmp_path, capsys):
    from logicval_hf.training.train_scene_parser import load_folder

    folder = _render_folder(tmp_path / "renders", 2)
    report: list[str] = []
    recs = load_folder(folder, report)
    assert [r.name for r in recs] == ["R_000.png", "R_001.png"]
    assert any("R_bad.png" in line for line in report)
    assert any("R_broken.json" in line for line in report)
    err = capsys.readouterr().err
    assert "R_bad.png" in err and "R_broken.json" in err


@pytest.mark.slow
def test_training_two_steps_writes_a_loadable_checkpoint_and_export(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from logicval_hf.training import train_scene_parser as T

    folder = _render_folder(tmp_path / "renders", 4)
    out, export = tmp_path / "ckpt", tmp_path / "model.onnx"
    argv = ["--data", str(folder), "--out", str(out), "--steps", "2", "--batch-size", "2", "--canvas", "160", "128",
            "--numpy-fraction", "0.5", "--numpy-val", "1", "--val-fraction", "0.25", "--export", str(export),
            "--export-every", "2", "--no-progress", "--threads", "1"]
    assert T.main(argv) == 0
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    net = T.build_model()
    net.load_state_dict(ck["model"])
    model = scene_parser.SceneParser(export)
    assert model.meta["provenance"]["trained_steps"] == 2
    scene = model.parse_batch([load_image(folder / "images" / "R_000.png")])[0]
    assert isinstance(scene, Scene)
    assert scene.image_size in ((480, 320), (320, 240))
    # resuming continues from the checkpoint, it does not start over
    assert T.main([*argv[:5], "3", *argv[6:]]) == 0
    assert torch.load(out / "last.pt", map_location="cpu", weights_only=False)["step"] == 3


def test_batches_depend_on_seed_and_step_only():
    pytest.importorskip("torch")
    from logicval_hf.training.train_scene_parser import make_batch

    a = make_batch([], 5, 1, 2, 1.0, (160, 128))
    b = make_batch([], 5, 1, 2, 1.0, (160, 128))
    c = make_batch([], 6, 1, 2, 1.0, (160, 128))
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert not (a[0] == c[0]).all()
