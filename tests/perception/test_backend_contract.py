"""The perception-backend contract (`PerceptionBackend`): a third-party backend, defined here and registered
from outside the package, works in `extract_scene`, `extract_scenes` (batched and per image, in workers too),
the `evaluate` metric and `logicval run`; a bad backend gets one clear error."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_MODULES_CACHE", os.path.join(tempfile.gettempdir(), "logicval-tests-hf-modules"))

import numpy as np
import pytest
from helpers import attr, lazy

from logicval_hf import Scene, SceneObject
from logicval_hf.contract.domain import load_domain
from logicval_hf.perception import (
    BACKENDS,
    PerceptionBackend,
    PerceptionError,
    extract_scene,
    extract_scenes,
    get_backend,
    register_backend,
)

evaluate = lazy("evaluate")

METRIC = Path(__file__).resolve().parents[2] / "metric" / "logicval"
#: the third-party backend's whole vocabulary: squares of these exact colours on any other background
SQUARES = {"red": (173, 35, 35), "blue": (42, 75, 215), "green": (29, 105, 20)}
SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
CALLS: list[tuple[str, int]] = []  # (entry point, images): which entry point the callers used


# ---- the third-party backend: module-level functions, so that worker processes can import them -------------
def squares_scene(rgb: np.ndarray) -> Scene:
    """One rubber cube per colour of `SQUARES` present, boxed by the pixels of exactly that colour."""
    objects = []
    for color, value in SQUARES.items():
        ys, xs = np.nonzero(np.all(rgb == np.array(value, np.uint8), axis=-1))
        if len(xs):
            objects.append(SceneObject({"color": color, "shape": "cube", "material": "rubber"},
                                       (float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1))))
    return Scene((rgb.shape[1], rgb.shape[0]), tuple(objects))


def squares_extract(rgb: np.ndarray, **settings) -> Scene:
    if settings:
        raise ValueError(f"the squares backend takes no settings, got {sorted(settings)}")
    CALLS.append(("extract", 1))
    return squares_scene(rgb)


def squares_extract_batch(images: list, **settings) -> list[Scene]:
    if settings:
        raise ValueError(f"the squares backend takes no settings, got {sorted(settings)}")
    CALLS.append(("extract_batch", len(images)))
    return [squares_scene(rgb) for rgb in images]


_STARTED = {"worker": False}


def start_worker() -> None:
    _STARTED["worker"] = True


def marked_extract(rgb: np.ndarray) -> Scene:
    """`squares_scene`, its cubes metal once `start_worker` ran in this process (rubber otherwise)."""
    scene = squares_scene(rgb)
    material = "metal" if _STARTED["worker"] else "rubber"
    return Scene(scene.image_size, tuple(SceneObject({**o.attributes, "material": material}, o.bbox)
                                         for o in scene.objects))


def picture(colors: tuple[str, ...], size: tuple[int, int] = (96, 64)) -> np.ndarray:
    """Grey canvas with a 12-pixel square of each colour, left to right."""
    w, h = size
    rgb = np.full((h, w, 3), 128, np.uint8)
    for i, c in enumerate(colors):
        rgb[20:32, 8 + 28 * i:20 + 28 * i] = SQUARES[c]
    return rgb


@pytest.fixture
def squares(tmp_path):
    """The backend registered under a fresh name (batched), and its per-image twin; both removed afterwards."""
    weights = tmp_path / "squares.bin"
    weights.write_bytes(b"squares v1")
    name = f"squares-{uuid.uuid4().hex[:8]}"
    backend = PerceptionBackend(name, squares_extract, squares_extract_batch, model_files=(weights,),
                                description="coloured squares (a test backend)")
    register_backend(name, backend)
    register_backend(f"{name}-each", dataclasses.replace(backend, extract_batch=None))
    CALLS.clear()
    yield name
    BACKENDS.pop(name)
    BACKENDS.pop(f"{name}-each")


IMAGES = [picture(("red", "blue", "green")), picture(("blue", "green")), picture(("green", "red", "blue"))]
WANT = [squares_scene(im) for im in IMAGES]


# ---- extract_scene / extract_scenes ---------------------------------------------------------------------
def test_extract_scene_uses_a_registered_backend(squares, tmp_path):
    from PIL import Image

    path = tmp_path / "im.png"
    Image.fromarray(IMAGES[0]).save(path)
    scene = extract_scene(path, backend=squares)  # a path: decoded by the package, the backend gets pixels
    assert scene == WANT[0] and [o["color"] for o in scene.objects] == ["red", "blue", "green"]
    assert CALLS == [("extract", 1)]
    assert get_backend(squares).extract is squares_extract and BACKENDS[squares].name == squares


def test_extract_scenes_batched_and_per_image(squares):
    assert extract_scenes(IMAGES, backend=squares) == WANT
    assert CALLS == [("extract_batch", 3)]  # one call for the list
    CALLS.clear()
    assert extract_scenes(IMAGES, backend=f"{squares}-each") == WANT
    assert CALLS == [("extract", 1)] * 3
    with pytest.raises(ValueError, match="takes no settings"):
        extract_scenes(IMAGES, backend=squares, threshold=0.5)


def test_errors_return_keeps_each_images_own_error_and_reads_the_others(squares, tmp_path):
    """``errors="return"``: an image that does not decode, or that a batched backend returns an error for, is its
    own `PerceptionError`; the others are read (batched, per image, in worker processes)."""
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    items = [IMAGES[0], broken, IMAGES[2]]
    for name, jobs in ((squares, 1), (f"{squares}-each", 1), (f"{squares}-each", 2)):
        out = extract_scenes(items, backend=name, n_jobs=jobs, errors="return")
        assert out[0] == WANT[0] and out[2] == WANT[2], name
        assert isinstance(out[1], PerceptionError) and str(out[1]).startswith("images[1]")
        with pytest.raises(PerceptionError, match=r"^images\[1\]"):
            extract_scenes(items, backend=name, n_jobs=jobs)
    with pytest.raises(ValueError, match="errors must be 'raise' or 'return', got 'ignore'"):
        extract_scenes(IMAGES, backend=squares, errors="ignore")

    def refusing(images, **settings):  # a batched backend that cannot read its second image
        return [PerceptionError("too dark") if i == 1 else squares_scene(im) for i, im in enumerate(images)]

    register_backend("refusing-test", PerceptionBackend("refusing-test", squares_extract, refusing))
    try:
        out = extract_scenes(IMAGES, backend="refusing-test", errors="return")
        assert out[0] == WANT[0] and out[2] == WANT[2] and str(out[1]) == "images[1]: too dark"
        with pytest.raises(PerceptionError, match=r"^images\[1\]: too dark$"):
            extract_scenes(IMAGES, backend="refusing-test")
    finally:
        BACKENDS.pop("refusing-test")


def test_extract_scenes_in_worker_processes(squares):
    """The backend object travels to workers that never registered it (its functions are module-level), and
    its init_worker runs there first."""
    assert extract_scenes(IMAGES, backend=f"{squares}-each", n_jobs=2) == WANT
    register_backend("marked-test", PerceptionBackend("marked-test", marked_extract, init_worker=start_worker))
    try:
        materials = {o["material"] for s in extract_scenes(IMAGES, backend="marked-test", n_jobs=2) for o in s.objects}
        assert materials == {"metal"}
        assert {o["material"] for o in extract_scene(IMAGES[0], backend="marked-test").objects} == {"rubber"}
    finally:
        BACKENDS.pop("marked-test")


def test_domains_the_backend_declares(squares):
    coco = load_domain("coco")
    with pytest.raises(PerceptionError, match=f"the '{squares}' perception backend perceives 'clevr' scenes only"):
        extract_scene(IMAGES[0], backend=squares, domain="coco")
    assert extract_scene(IMAGES[0], backend=squares, domain="clevr") == WANT[0]  # perceived, domain= not passed
    seen = []

    def coco_only(rgb, domain):
        seen.append(domain)
        return Scene((rgb.shape[1], rgb.shape[0]), (), domain=domain)

    register_backend("coco-only-test", PerceptionBackend("coco-only-test", coco_only, domains=("coco",),
                                                         takes_domain=True))
    try:
        assert extract_scene(IMAGES[0], backend="coco-only-test", domain="coco").domain == coco
        assert seen == [coco]
        with pytest.raises(PerceptionError, match="perceives 'coco' scenes only, not domain 'clevr'"):
            extract_scenes(IMAGES, backend="coco-only-test", domain="clevr")
    finally:
        BACKENDS.pop("coco-only-test")


# ---- the metric and the main job -------------------------------------------------------------------------
def test_the_metric_scores_images_with_a_registered_backend(squares, tmp_path):
    metric = evaluate.load(str(METRIC), squares, cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
    assert metric.backend == squares
    out = metric.compute(predictions=IMAGES, references=[SPEC] * 3)
    assert [s["ok"] for s in out["per_sample"]] == [True, False, True]  # the second has 2 objects, none red
    assert [s["scene"] for s in out["per_sample"]] == [w.to_dict() for w in WANT]
    assert CALLS == [("extract_batch", 3)]


def test_logicval_run_scores_with_a_registered_backend(squares, tmp_path, capsys):
    from logicval_hf.cli.run import main

    out = tmp_path / "report"
    args = ["run", "--out", str(out), "--generator", "oracle", "--limit", "1", "--jobs", "1", "--backend", squares,
            "--quiet"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    n = summary["n_specs"]
    assert summary["backend"] == squares and n >= 6
    assert sum(k for _, k in CALLS) == n  # every image went through it
    verdicts = [json.loads(p.read_text()) for p in sorted((out / "verdicts" / "oracle").glob("*.json"))]
    assert len(verdicts) == n and {v["backend"] for v in verdicts} == {squares}
    from PIL import Image

    for v in verdicts:  # the verdict's scene is what the backend perceives in that image
        with Image.open(out / "images" / "oracle" / f"{v['id']}.png") as im:
            assert v["verdict"]["scene"] == squares_scene(np.asarray(im.convert("RGB"))).to_dict()
    CALLS.clear()
    assert main(args) == 0 and CALLS == []  # resumed: verdicts reused while code and model files are unchanged
    get_backend(squares).model_files[0].write_bytes(b"squares v2")  # a retrained model re-scores every image
    assert main(args) == 0 and sum(k for _, k in CALLS) == n
    capsys.readouterr()


# ---- plain functions register too --------------------------------------------------------------------------
def test_a_plain_function_is_wrapped_as_a_clevr_backend():
    def plain(rgb, **settings):
        return squares_scene(rgb)

    register_backend("plain-test", plain)
    try:
        b = get_backend("plain-test")
        assert isinstance(b, PerceptionBackend) and b.extract is plain and b.domains == ("clevr",)
        assert not b.takes_domain and b.extract_batch is None
        assert extract_scene(IMAGES[0], backend="plain-test") == WANT[0]
    finally:
        BACKENDS.pop("plain-test")


def test_built_in_backends_declare_themselves():
    clevr, given, neural = get_backend("clevr"), get_backend("given"), get_backend("neural")
    assert clevr.domains == ("clevr",) and clevr.extract_batch is not None and len(clevr.model_files) == 3
    assert clevr.check() == [] and json.loads(json.dumps(clevr.info()))["ready"] is True
    assert given.raw_input and given.takes_domain and given.domains is None
    assert neural.takes_domain and neural.extra == "neural" and "torch" in neural.requires


# ---- bad backends ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fields, message", [
    ({"extract": 42}, "perception backend 'bad': extract must be a function"),
    ({"extract_batch": "batch"}, "extract_batch must be a function or None, got str"),
    ({"check_settings": {"threshold"}}, "check_settings must be a function or None, got set"),
    ({"domains": "clevr"}, "domains must be a tuple of names, got 'clevr'"),
    ({"domains": ()}, "domains must name at least one"),
    ({"domains": None}, r"must take the domain it is asked for \(takes_domain=True\)"),
    ({"raw_input": "yes"}, "raw_input must be True or False"),
    ({"model_files": "weights.onnx"}, "model_files must be a tuple of paths, got str"),
    ({"model_files": (1,)}, "model_files must hold paths, got int"),
    ({"requires": "torch"}, "requires must be a tuple of names"),
])
def test_a_malformed_backend_is_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=message):
        PerceptionBackend(**{"name": "bad", "extract": squares_extract, **fields})


def test_bad_registrations_and_bad_results_are_clear_errors():
    with pytest.raises(ValueError, match="perception backend 'x' must be a PerceptionBackend, a function"):
        register_backend("x", 42)
    register_backend("pi-test", "math:pi")
    register_backend("dict-test", lambda rgb: {"objects": []})
    register_backend("short-test", PerceptionBackend("short-test", squares_extract, lambda ims: ims[:1]))
    try:
        with pytest.raises(ValueError, match=r"perception backend 'pi-test': must be a PerceptionBackend or a "
                                             r"function .*got float"):
            extract_scene(IMAGES[0], backend="pi-test")
        with pytest.raises(PerceptionError, match="image: the 'dict-test' backend returned dict, not a Scene"):
            extract_scene(IMAGES[0], backend="dict-test")
        with pytest.raises(PerceptionError, match=r"images\[0:3\]: the 'short-test' backend's extract_batch "
                                                  r"returned 1 scenes for 3 images"):
            extract_scenes(IMAGES, backend="short-test")
    finally:
        for name in ("pi-test", "dict-test", "short-test"):
            BACKENDS.pop(name)


def test_check_reports_what_is_missing(tmp_path):
    b = PerceptionBackend("needs-things", squares_extract, model_files=(tmp_path / "gone.onnx",),
                          requires=("lv_no_such_module_xyz",), extra="neural")
    assert b.check() == [f"model file {tmp_path / 'gone.onnx'} is missing",
                         'module lv_no_such_module_xyz is not installed (pip install "logicval-hf[neural]")']
    info = b.info()
    assert info["ready"] is False and info["problems"] == b.check() and info["domains"] == ["clevr"]


def test_a_backend_defined_in_a_package_fingerprints_every_module_of_it():
    """The neural backend's entry points live in neural/__init__.py; an edit to its detector or CLIP half must
    change the job's fingerprint too (cached verdicts are keyed on these files)."""
    names = {p.name for p in get_backend("neural").source_files()}
    assert {"__init__.py", "boxes.py", "detector.py", "clip.py", "pipeline.py", "loading.py"} <= names
    assert [p.name for p in get_backend("given").source_files()] == ["given.py"]
