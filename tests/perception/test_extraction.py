"""The perception entry points (`extract_scene`, `extract_scenes`, input hygiene, the backend registry) with the
default ``clevr`` backend on the shipped CLEVR images."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from helpers import png_header
from PIL import Image

from logicval_hf import Scene, load_catalog
from logicval_hf.contract.spatial import region_of
from logicval_hf.perception import (
    BACKENDS,
    MAX_PIXELS,
    PerceptionError,
    extract_scene,
    extract_scenes,
    load_image,
    register_backend,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"
SCENES = {s["image_filename"]: s for s in json.loads((DATA / "scenes.json").read_text())}
EASY = sorted(n for n in SCENES if len(SCENES[n]["objects"]) <= 2)
ALL = sorted(SCENES)


@pytest.fixture(scope="module")
def perceived() -> dict[str, Scene]:
    return {n: extract_scene(DATA / n) for n in ALL}


def _match(scene: Scene, truth: list[dict]) -> list[tuple[int, int]]:
    """Greedy nearest matching of predicted box centres to true projected centres."""
    pairs, used = [], set()
    for j, o in enumerate(truth):
        tx, ty = o["pixel_coords"][:2]
        best = min((i for i in range(len(scene.objects)) if i not in used),
                   key=lambda i: math.dist(scene.objects[i].center, (tx, ty)), default=None)
        if best is not None:
            used.add(best)
            pairs.append((best, j))
    return pairs


# ---- output contract ------------------------------------------------------------------------------
def test_scenes_are_valid_with_normalised_probs(perceived):
    domain = load_catalog().domain
    for name, scene in perceived.items():
        w, h = SCENES[name]["image_width"], SCENES[name]["image_height"]
        assert scene.image_size == (w, h)
        assert 1 <= len(scene) <= 12
        for o in scene.objects:
            assert set(o.attributes) == set(domain.perceived_attributes)
            x0, y0, x1, y1 = o.bbox
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
            assert 0 <= o.score <= 1
            for a in domain.perceived_attributes:
                assert o.attributes[a] in domain.attributes[a]
                dist = o.probs[a]
                assert set(dist) == set(domain.attributes[a])
                assert all(0 <= p <= 1 for p in dist.values())
                assert sum(dist.values()) == pytest.approx(1.0, abs=1e-6)
                assert o.attributes[a] == max(dist, key=dist.get)
        # round trip through the validated JSON form
        assert Scene.from_dict(json.loads(scene.to_json())).to_dict() == scene.to_dict()


@pytest.mark.parametrize("name", EASY)
def test_easy_images_count_attributes_and_regions(perceived, name):
    truth = SCENES[name]["objects"]
    scene = perceived[name]
    assert len(scene) == len(truth), scene.to_dict()
    for i, j in _match(scene, truth):
        o = scene.objects[i]
        x0, y0, x1, y1 = o.bbox
        assert math.dist(o.center, truth[j]["pixel_coords"][:2]) < 0.25 * max(x1 - x0, y1 - y0)
        w, h = scene.image_size
        assert scene.region(i) == region_of(*truth[j]["pixel_coords"][:2], w, h)
        for a in ("color", "shape", "material"):
            assert o.attributes[a] == truth[j][a], (name, a, o.probs[a])


def test_bigger_scene_is_found(perceived):
    name = "clevr_v1_train__CLEVR_train_000514.png"
    truth = SCENES[name]["objects"]
    scene = perceived[name]
    assert len(scene) == len(truth)
    got = sorted((scene.objects[i]["color"], scene.objects[i]["shape"]) for i, _ in _match(scene, truth))
    assert got == sorted((o["color"], o["shape"]) for o in truth)


# ---- input forms and batching -----------------------------------------------------------------------
def test_paths_pil_and_arrays_agree():
    name = EASY[0]
    path = DATA / name
    ref = extract_scene(path).to_dict()
    pil = Image.open(path)
    assert extract_scene(pil).to_dict() == ref
    assert extract_scene(str(path)).to_dict() == ref
    arr = np.asarray(pil.convert("RGB"))
    assert extract_scene(arr).to_dict() == ref
    rgba = np.concatenate([arr, np.full((*arr.shape[:2], 1), 255, np.uint8)], axis=2)
    assert extract_scene(rgba).to_dict() == ref
    assert extract_scene(pil.convert("RGBA")).to_dict() == ref


def test_batched_equals_single(perceived):
    names = ALL[:4]
    single = [perceived[n].to_dict() for n in names]
    assert [s.to_dict() for s in extract_scenes([DATA / n for n in names])] == single
    mixed = [DATA / names[0], Image.open(DATA / names[1]), np.asarray(Image.open(DATA / names[2]).convert("RGB")),
             str(DATA / names[3])]
    assert [s.to_dict() for s in extract_scenes(mixed)] == single


@pytest.mark.slow
def test_batched_with_workers_equals_single(perceived):
    names = ALL[:3]
    got = extract_scenes([DATA / n for n in names], n_jobs=2)
    assert [s.to_dict() for s in got] == [perceived[n].to_dict() for n in names]


@pytest.mark.slow
def test_workers_without_main_guard_fail_clearly(tmp_path):
    """A script that starts workers without the ``__main__`` guard gets a clear error, not a hung pool."""
    import subprocess
    import sys

    # a per-image backend (batched backends such as the default one never start workers)
    (tmp_path / "plainbackend.py").write_text(
        "from logicval_hf import Scene\n\ndef extract(rgb):\n    return Scene((rgb.shape[1], rgb.shape[0]), ())\n")
    script = tmp_path / "unguarded.py"
    script.write_text("import numpy as np\nfrom logicval_hf.perception import extract_scenes, register_backend\n"
                      "register_backend('plain', 'plainbackend:extract', replace=True)\n"
                      "extract_scenes([np.full((48, 64, 3), 120, np.uint8)] * 3, backend='plain', n_jobs=2)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode != 0
    assert "a worker process died" in proc.stderr and "__main__" in proc.stderr


def test_empty_floor_gives_no_objects():
    # a smooth grey gradient, like an empty CLEVR floor
    y = np.linspace(0.45, 0.65, 240)[:, None, None]
    img = np.broadcast_to(y * 255, (240, 320, 3)).round().astype(np.uint8)
    assert len(extract_scene(img)) == 0


# ---- bad input --------------------------------------------------------------------------------------
def test_unknown_backend_lists_known():
    with pytest.raises(ValueError, match="clevr"):
        extract_scene(DATA / EASY[0], backend="nope")
    with pytest.raises(ValueError, match="unknown perception backend"):
        extract_scenes([DATA / EASY[0]], backend="nope")


def test_unknown_setting_is_refused():
    with pytest.raises(ValueError, match="unsupported setting"):
        extract_scene(DATA / EASY[0], chroma_treshold=0.2)


def test_register_backend():
    calls = []

    def fake(rgb, **kw):
        calls.append(rgb.shape)
        return Scene((rgb.shape[1], rgb.shape[0]), ())

    register_backend("fake-test", fake)
    try:
        assert len(extract_scene(DATA / EASY[0], backend="fake-test")) == 0
        assert calls == [(240, 320, 3)]
        with pytest.raises(ValueError, match="already registered"):
            register_backend("fake-test", fake)
    finally:
        BACKENDS.pop("fake-test", None)


def test_non_image_file(tmp_path):
    p = tmp_path / "notes.png"
    p.write_text("this is not an image\n")
    with pytest.raises(PerceptionError, match="not an image"):
        extract_scene(p)


def test_missing_file(tmp_path):
    with pytest.raises(PerceptionError, match="no such file"):
        extract_scene(tmp_path / "nothing.png")


def test_truncated_png(tmp_path):
    data = (DATA / EASY[0]).read_bytes()
    p = tmp_path / "cut.png"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(PerceptionError, match=r"corrupt|truncated|decode"):
        extract_scene(p)


def test_huge_image_refused_before_decoding(tmp_path):
    p = tmp_path / "huge.png"
    p.write_bytes(png_header(20000, 20000))  # 400 megapixels
    with pytest.raises(PerceptionError, match=r"megapixels|decompression bomb"):
        extract_scene(p)


def test_huge_array_refused():
    side = math.isqrt(MAX_PIXELS) + 1
    big = np.lib.stride_tricks.as_strided(np.zeros(3, np.uint8), shape=(side, side, 3), strides=(0, 0, 1))
    with pytest.raises(PerceptionError, match="megapixels"):
        load_image(big)


@pytest.mark.parametrize(
    "bad, pattern",
    [
        (np.zeros((64, 64, 3), np.float32), "dtype must be uint8"),
        (np.zeros((64, 64, 3), np.uint16), "dtype must be uint8"),
        (np.zeros((64, 64, 2), np.uint8), "shape"),
        (np.zeros((2, 64, 64, 3), np.uint8), "shape"),
        (np.zeros((64,), np.uint8), "shape"),
        (np.zeros((4, 4, 3), np.uint8), "too small"),
        (np.zeros((0, 64, 3), np.uint8), "empty"),
        ("not a path to anything", "no such file"),
        (12345, "expected a PIL image"),
        (None, "expected a PIL image"),
    ],
)
def test_bad_inputs(bad, pattern):
    with pytest.raises(PerceptionError, match=pattern):
        extract_scene(bad)


def test_batch_errors_name_the_image():
    with pytest.raises(PerceptionError, match=r"images\[1\]"):
        extract_scenes([DATA / EASY[0], np.zeros((64, 64, 3), np.float64)])


def test_perception_error_is_value_error():
    assert issubclass(PerceptionError, ValueError)
