"""The `evaluate` metric module in metric/logicval, the `given` backend, and publishing the metric Space."""

import doctest
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import ClassVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_MODULES_CACHE", os.path.join(tempfile.gettempdir(), "logicval-tests-hf-modules"))

import numpy as np
import pytest
from helpers import attr, lazy, load_script, obj
from PIL import Image

from logicval_hf import Scene
from logicval_hf.benchmark.sampler import cached_benchmark
from logicval_hf.generation.render import render_scene
from logicval_hf.scoring.evaluation import compute as direct_compute

evaluate = lazy("evaluate")  # imported by the first test that loads the metric (it pulls in torch and scipy)

ROOT = Path(__file__).resolve().parents[2]
METRIC = ROOT / "metric" / "logicval"
SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
GOOD = {"image_size": [480, 320], "objects": [
    obj("red", "cube", "metal", 100, 80), obj("blue", "sphere", "rubber", 300, 80),
    obj("gray", "cylinder", "rubber", 200, 250)]}
EMPTY = {"image_size": [480, 320], "objects": []}


def load(tmp_path, config_name=None, **kwargs):
    return evaluate.load(str(METRIC), config_name, cache_dir=str(tmp_path / "cache"),
                         experiment_id=kwargs.pop("experiment_id", uuid.uuid4().hex), **kwargs)


@pytest.fixture(scope="module")
def rows():
    """A few benchmark rows (SAT with witnesses, and UNSAT) as plain dicts."""
    bm = cached_benchmark()
    picked = [bm.rows["1SAT"][0], bm.rows["1SAT"][7], bm.rows["3SAT"][0], bm.rows["1UNSAT"][0]]
    return [dict(r) for r in picked]


@pytest.fixture(scope="module")
def witnesses(rows):
    return [Scene.from_dict(r["witness"]) if r["witness"] else Scene.empty() for r in rows]


@pytest.fixture(scope="module")
def images(witnesses):
    return [render_scene(w)[0] for w in witnesses]


def strip(result):
    return json.loads(json.dumps(result))


# ---- the module --------------------------------------------------------------------------------
def test_docstring_and_card_examples(monkeypatch):
    monkeypatch.chdir(ROOT)  # the examples load "metric/logicval"
    module = evaluate.load("metric/logicval")
    source = sys.modules[type(module).__module__]
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for name, text in (("_KWARGS_DESCRIPTION", source._KWARGS_DESCRIPTION),
                       ("README.md", (METRIC / "README.md").read_text(encoding="utf-8"))):
        test = parser.get_doctest(text, {}, name, None, 0)
        assert len(test.examples) >= 8
        result = runner.run(test, out=lambda s: None)
        assert result.failed == 0, name
    info = module.info
    assert "LogicVal" in info.citation and "2026" in info.citation
    assert set(module.features) == {"predictions", "references"}  # one input format: images or scene graphs


def test_the_metric_loads_from_any_folder(tmp_path, monkeypatch):
    """``evaluate.load("metric/logicval")`` is relative to the repository's root (elsewhere evaluate asks the Hub);
    the installed path, `logicval_hf.metric_path()` or ``logicval metric-path``, loads it from any folder."""
    import logicval_hf
    from logicval_hf.cli.main import main as logicval

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = logicval_hf.metric_path()
    assert path.is_absolute() and (path / "logicval.py").is_file()
    assert path.resolve() == METRIC.resolve()  # one module: the package links to the repository's folder
    module = evaluate.load(str(path), cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
    result = module.compute(predictions=[json.dumps(GOOD), json.dumps(EMPTY)], references=[json.dumps(SPEC)] * 2)
    assert result["logicval_score"] == 0.5
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert logicval(["metric-path"]) == 0
    assert out.getvalue().strip() == str(path)


def test_hub_details(tmp_path):
    """The module is named after its folder (the widget reads "Metric: logicval"), has a
    licence in its info and its card, and names the configured Hub namespace, never a placeholder."""
    from logicval_hf.common.hub import default_repo_id

    module = load(tmp_path)
    assert module.name == "logicval"
    assert module.info.license == "MIT"
    assert module.info.homepage == f"https://huggingface.co/datasets/{default_repo_id()}"
    card = (METRIC / "README.md").read_text(encoding="utf-8")
    head = card.split("\n---\n", 1)[0]
    assert "\nlicense: mit\n" in head + "\n"
    for text in (card, (METRIC / "logicval.py").read_text(encoding="utf-8"),
                 (METRIC / "app.py").read_text(encoding="utf-8")):
        assert "owner/" not in text


def test_images_pil_arrays_and_paths(tmp_path, rows, images):
    module = load(tmp_path)
    expected = strip(direct_compute(images, rows))
    assert expected["per_sample"][-1]["label"] == "UNSAT"
    paths = []
    for i, im in enumerate(images):
        paths.append(tmp_path / f"{i}.png")
        im.save(paths[-1])
    encoded = [p.read_bytes() for p in paths]
    for preds in (images, [np.asarray(im) for im in images], [str(p) for p in paths], paths, encoded,
                  [{"bytes": b, "path": None} for b in encoded]):
        out = strip(module.compute(predictions=preds, references=rows))
        assert out == expected
    assert [s["id"] for s in expected["per_sample"]] == [r["id"] for r in rows]
    assert set(expected["by_package"]) == {"1SAT", "3SAT", "1UNSAT"}
    assert expected["abstention_rate"] == 1.0  # the rendered empty scene is seen as empty


def test_scene_graph_predictions_and_reference_forms(tmp_path, rows, witnesses):
    module = load(tmp_path)
    as_json = [w.to_json() for w in witnesses]
    refs_json = [json.dumps(r, default=str) for r in rows]
    out = module.compute(predictions=as_json, references=refs_json)
    assert out["logicval_score"] == 1.0 and out["relaxed_score"] == 1.0 and out["abstention_rate"] == 1.0
    assert out["n_samples"] == 4 and out["by_package"]["3SAT"]["n"] == 1
    again = module.compute(predictions=witnesses, references=[r["spec_json"] for r in rows], per_sample=False)
    assert "per_sample" not in again and again["logicval_score"] == 1.0 and again["by_package"] == {}
    dicts = module.compute(predictions=[w.to_dict() for w in witnesses],
                           references=[json.loads(r["spec_json"]) for r in rows])
    assert dicts["logicval_score"] == 1.0
    # a wrong scene graph fails, and names the violated constraint
    out = module.compute(predictions=[json.dumps(EMPTY), json.dumps(GOOD)], references=[SPEC, json.dumps(SPEC)])
    assert [s["ok"] for s in out["per_sample"]] == [False, True] and out["false_abstention_rate"] == 0.5


def test_add_batch_and_add(tmp_path, rows, witnesses, images):
    module = load(tmp_path)
    module.add_batch(predictions=witnesses[:2], references=rows[:2])
    module.add_batch(predictions=[w.to_json() for w in witnesses[2:3]], references=rows[2:3])
    module.add(prediction=witnesses[3].to_dict(), reference=rows[3])
    out = strip(module.compute())
    assert out == strip(module.compute(predictions=witnesses, references=rows))
    # images through add_batch; later batches may be paths
    path = tmp_path / "last.png"
    images[3].save(path)
    module.add_batch(predictions=images[:3], references=rows[:3])
    module.add_batch(predictions=[str(path)], references=rows[3:])
    assert strip(module.compute()) == strip(direct_compute(images, rows))
    # scene graphs and images added to one module are refused at compute(), naming the first odd item
    module.add_batch(predictions=witnesses[:1], references=rows[:1])
    module.add_batch(predictions=[str(path)], references=rows[:1])
    with pytest.raises(ValueError, match=r"predictions mix images and scene graphs: predictions\[0\] is the "
                                         r"scene-graph JSON .* but predictions\[1\] is the image path '.*last\.png'"):
        module.compute()
    assert module.compute(predictions=witnesses[:1], references=rows[:1])["logicval_score"] == 1.0


def test_distributed_mode(tmp_path, rows, witnesses):
    exp = uuid.uuid4().hex
    ranks = [load(tmp_path, num_process=2, process_id=k, experiment_id=exp, timeout=60) for k in range(2)]
    results, errors = {}, []

    def run(k, preds, refs):
        try:
            results[k] = ranks[k].compute(predictions=preds, references=refs)
        except Exception as e:  # noqa: BLE001  any failure of a rank is collected and reported below
            errors.append(e)

    t = threading.Thread(target=run, args=(1, witnesses[2:], rows[2:]))
    t.start()
    run(0, witnesses[:2], rows[:2])
    t.join(90)
    assert not errors and not t.is_alive()
    assert results[1] is None
    single = load(tmp_path).compute(predictions=witnesses, references=rows)
    assert strip(results[0]) == strip(single) and results[0]["n_samples"] == 4


def test_probabilistic_scores(tmp_path):
    module = load(tmp_path)
    uncertain = json.loads(json.dumps(GOOD))
    uncertain["objects"][0]["probs"] = {"color": {"red": 0.6, "blue": 0.4}}
    uncertain["objects"][1]["probs"] = {"color": {"red": 0.5, "blue": 0.5}}
    out = module.compute(predictions=[json.dumps(uncertain), json.dumps(GOOD)], references=[SPEC, SPEC],
                         probabilistic=True)
    assert [s["probability"] for s in out["per_sample"]] == [pytest.approx(0.8), 1.0]
    assert out["probabilistic_score"] == pytest.approx(0.9)
    assert all(s["probability_exact"] and s["probability_stderr"] == 0 for s in out["per_sample"])
    mc = module.compute(predictions=[json.dumps(uncertain)], references=[SPEC], count="relaxed",
                        probabilistic={"max_exact": 0, "samples": 400, "seed": 1})
    s = mc["per_sample"][0]
    assert not s["probability_exact"] and abs(s["probability"] - 0.8) <= 3 * s["probability_stderr"] + 1e-9
    with pytest.raises(ValueError, match="count"):
        module.compute(predictions=[json.dumps(GOOD)], references=[SPEC], count="approximately")


@pytest.mark.slow
def test_bad_inputs_raise_before_scoring(tmp_path, images, monkeypatch):
    module = load(tmp_path)
    # evaluate compares the two lengths first
    with pytest.raises(ValueError, match=r"predictions \(2\) and references \(1\)|got 2 predictions for 1"):
        module.compute(predictions=[json.dumps(GOOD)] * 2, references=[SPEC])
    with pytest.raises(ValueError, match=r"references\[1\]: .*spec\.n"):
        module.compute(predictions=[json.dumps(GOOD)] * 2, references=[SPEC, {"n": 99, "constraints": []}])
    with pytest.raises(ValueError, match=r"references\[0\]: reference is not valid spec JSON"):
        module.compute(predictions=[json.dumps(GOOD)], references=["{not json"])
    with pytest.raises(ValueError, match=r"predictions\[0\]: scene\.objects\[0\]\.color"):
        module.compute(predictions=[json.dumps({**GOOD, "objects": [obj("pink", "cube", "metal", 5, 5)]})],
                       references=[SPEC])
    text = tmp_path / "notes.png"
    text.write_text("this is not an image")
    with pytest.raises(ValueError, match=r"predictions\[0\] .*not an image file"):
        module.compute(predictions=[str(text)], references=[SPEC])
    with pytest.raises(ValueError, match=r"predictions\[0\] \(image bytes\): not an image file"):
        module.compute(predictions=[b"GIF? no"], references=[SPEC])
    with pytest.raises(ValueError, match="neither scene-graph JSON nor an existing image file"):
        module.compute(predictions=[str(tmp_path / "missing.png")], references=[SPEC])
    huge = Image.new("1", (8000, 6000))  # 48 megapixels, refused before PNG encoding
    with pytest.raises(ValueError, match="megapixels exceeds the limit"):
        module.compute(predictions=[huge], references=[SPEC])
    huge.save(tmp_path / "huge.png")
    with pytest.raises(ValueError, match="megapixels exceeds the limit"):
        module.compute(predictions=[str(tmp_path / "huge.png")], references=[SPEC])
    with pytest.raises(ValueError, match="uint8"):
        module.compute(predictions=[np.zeros((32, 32, 3), dtype=np.float32)], references=[SPEC])
    with pytest.raises(ValueError, match="mix images and scene graphs"):
        module.compute(predictions=[images[0], json.dumps(GOOD)], references=[SPEC, SPEC])
    with pytest.raises(ValueError, match="expected an image"):
        module.compute(predictions=[42], references=[SPEC])
    with pytest.raises(ValueError, match="predictions"):
        module.compute(predictions=json.dumps(GOOD), references=[SPEC])
    # the module is still usable afterwards
    assert module.compute(predictions=[json.dumps(GOOD)], references=[SPEC])["logicval_score"] == 1.0


def test_empty_call_is_a_clear_error(tmp_path):
    module = load(tmp_path)
    with pytest.raises(ValueError, match="no predictions to score"):
        module.compute(predictions=[], references=[])
    assert module.compute(predictions=[json.dumps(GOOD)], references=[SPEC])["logicval_score"] == 1.0


@pytest.mark.slow  # perceives a batch of images (~1 s)
def test_paths_and_scene_json_do_not_mix(tmp_path, images):
    """The card says images and scene graphs are not mixed in one call: paths among JSON strings are refused."""
    module = load(tmp_path)
    path = tmp_path / "img.png"
    images[0].save(path)
    with pytest.raises(ValueError, match=r"predictions\[0\] is the scene-graph JSON .* but predictions\[2\] is "
                                         r"the image path '.*img\.png'; score scene graphs and images in separate"):
        module.compute(predictions=[json.dumps(GOOD), json.dumps(EMPTY), str(path)], references=[SPEC] * 3)
    with pytest.raises(ValueError, match=r"predictions\[0\] is the image path .* but predictions\[1\] is the "
                                         r"scene-graph JSON"):
        module.compute(predictions=[str(path), json.dumps(GOOD)], references=[SPEC] * 2)
    card = " ".join((METRIC / "README.md").read_text(encoding="utf-8").split())
    assert "Images and scene graphs cannot be mixed in one `compute()` call" in card


def test_per_sample_is_short_unless_probs(tmp_path):
    module = load(tmp_path)
    uncertain = json.loads(json.dumps(GOOD))
    uncertain["objects"][0]["probs"] = {"color": {"red": 0.6, "blue": 0.4}}
    out = module.compute(predictions=[json.dumps(uncertain)], references=[SPEC])
    sample = out["per_sample"][0]
    assert {"ok", "violated", "scene"} <= set(sample)
    assert all("probs" not in o for o in sample["scene"]["objects"])
    full = module.compute(predictions=[json.dumps(uncertain)], references=[SPEC], probs=True)
    assert full["per_sample"][0]["scene"]["objects"][0]["probs"] == {"color": {"red": 0.6, "blue": 0.4}}


def test_by_load(tmp_path, rows, witnesses):
    module = load(tmp_path)
    out = module.compute(predictions=witnesses, references=rows)
    loads = [json.loads(r["spec_json"]) for r in rows if r["label"] == "SAT"]
    expected = sorted({str(s["n"] + len(s["constraints"])) for s in loads}, key=int)
    assert list(out["by_load"]) == expected
    assert all(v["score"] == 1.0 for v in out["by_load"].values())
    assert sum(v["n"] for v in out["by_load"].values()) == len(loads)
    assert [s["load"] for s in out["per_sample"]] == [json.loads(r["spec_json"])["n"]
                                                      + len(json.loads(r["spec_json"])["constraints"]) for r in rows]


def test_config_name_selects_the_backend(tmp_path, images):
    given = load(tmp_path, "given")
    assert given.backend == "given"
    assert given.compute(predictions=[json.dumps(GOOD)], references=[SPEC])["logicval_score"] == 1.0
    with pytest.raises(ValueError, match=r"predictions\[0\]: scene: must be a JSON object"):
        given.compute(predictions=images[:1], references=[SPEC])
    with pytest.raises(ValueError, match="unknown perception backend 'nope'"):
        load(tmp_path, "nope")


def test_per_sample_carries_the_scene_confidence(tmp_path, images):
    metric = load(tmp_path)
    out = metric.compute(predictions=[json.dumps({**GOOD, "confidence": 0.42}), json.dumps(GOOD)],
                         references=[SPEC, SPEC])
    assert [s["confidence"] for s in out["per_sample"]] == [0.42, None]
    parsed = metric.compute(predictions=images[:1], references=[SPEC])["per_sample"][0]  # the clevr parser's
    assert 0 <= parsed["confidence"] <= 1 and parsed["confidence"] == parsed["scene"]["confidence"]


def test_min_confidence_through_the_metric_module(tmp_path, images):
    """``min_confidence``: samples read below it are unread, never passes or failures; the scores are the others'."""
    metric = load(tmp_path)
    preds = [json.dumps({**GOOD, "confidence": 0.9}), json.dumps({**GOOD, "confidence": 0.2})]
    out = metric.compute(predictions=preds, references=[SPEC, SPEC], min_confidence=0.5)
    assert (out["n_samples"], out["n_read"], out["n_unread"], out["logicval_score"]) == (2, 1, 1, 1.0)
    assert out["per_sample"][0]["unread"] is None
    assert out["per_sample"][1]["unread"] == "scene confidence 0.200 is below the minimum 0.5"
    assert out["per_sample"][1]["ok"] is None
    # the clevr parser's readings of images: at 0 every one is read, at 1 none is (no reading is certain)
    assert metric.compute(predictions=images[:1], references=[SPEC], min_confidence=0.0)["n_read"] == 1
    none = metric.compute(predictions=images[:1], references=[SPEC], min_confidence=1.0)
    assert none["n_read"] == 0 and none["logicval_score"] is None
    with pytest.raises(ValueError, match=r"min_confidence must be a number in \[0, 1\]"):
        metric.compute(predictions=preds, references=[SPEC, SPEC], min_confidence=1.5)


def _named_objects(text, **settings):
    """A raw-input backend for the test below: "red cube metal; blue sphere rubber" -> objects in a row."""
    items = [t.split() for t in text.split(";") if t.strip()]
    return Scene.from_dict({"image_size": [480, 320],
                            "objects": [obj(c, s, m, 40 + 60 * k, 160) for k, (c, s, m) in enumerate(items)]})


def test_a_third_party_raw_input_backend_gets_the_metric_s_predictions_as_they_are(tmp_path):
    from logicval_hf.perception import BACKENDS, PerceptionBackend, register_backend

    register_backend("named-objects-test", PerceptionBackend("named-objects-test", _named_objects, raw_input=True))
    try:
        metric = load(tmp_path, "named-objects-test")
        out = metric.compute(predictions=["red cube metal; blue cube metal; red sphere rubber", "blue cube metal"],
                             references=[SPEC, SPEC])
        assert [(s["ok"], s["n_objects"]) for s in out["per_sample"]] == [(True, 3), (False, 1)]
    finally:
        BACKENDS.pop("named-objects-test")


# ---- the `given` backend -----------------------------------------------------------------------
def test_given_backend(tmp_path, images):
    from logicval_hf.perception import BACKENDS, extract_scene, extract_scenes
    from logicval_hf.perception.given import BACKEND, extract, to_scene

    assert BACKENDS["given"] is BACKEND and BACKEND.raw_input and BACKEND.extract is extract
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(GOOD))
    forms = (GOOD, json.dumps(GOOD), json.dumps(GOOD).encode(), bytearray(json.dumps(GOOD).encode()),
             Scene.from_dict(GOOD), str(path), path)
    for x in forms:  # the backend itself, and through the perception entry points (raw input: nothing decoded)
        assert extract(x) == extract_scene(x, backend="given") == Scene.from_dict(GOOD)
    assert extract_scenes(forms, backend="given") == [Scene.from_dict(GOOD)] * len(forms)
    assert extract_scene(GOOD, backend="given", domain="clevr") == Scene.from_dict(GOOD)
    with pytest.raises(ValueError, match="got an image"):
        extract(images[0])
    with pytest.raises(ValueError, match="got an image"):
        extract_scene(images[0], backend="given")
    with pytest.raises(ValueError, match=r"neither scene-graph JSON nor an existing \.json file"):
        to_scene("nope.json")
    with pytest.raises(ValueError, match=r"^scene: must be a JSON object"):  # said once, not "scene: scene:"
        extract_scene(b"[1, 2]", backend="given")
    with pytest.raises(ValueError, match="takes no settings"):
        extract(GOOD, threshold=0.5)
    with pytest.raises(ValueError, match=r"scene\.domain: the scene is in domain 'clevr', but domain 'coco'"):
        extract_scene({**GOOD, "domain": "clevr"}, backend="given", domain="coco")


# ---- publishing --------------------------------------------------------------------------------
class FakeApi:
    calls: ClassVar[list] = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))

    def upload_folder(self, **kw):
        self.calls.append(("upload_folder", sorted(os.listdir(kw["folder_path"])), kw))


def test_push_metric(tmp_path, monkeypatch):
    import huggingface_hub

    from logicval_hf.cli.meta import main as cli
    from logicval_hf.scoring.metric_push import push_metric

    out = io.StringIO()
    files = push_metric(METRIC, repo_id="me/logicval", dry_run=True, out=out)
    assert files == ["logicval.py", "README.md", "app.py", "requirements.txt"]
    assert "dry run: would upload 4 files" in out.getvalue() and "spaces/me/logicval" in out.getvalue()
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(ValueError, match="HF_TOKEN"):
        push_metric(METRIC, repo_id="me/logicval")
    with pytest.raises(ValueError, match="owner/name"):
        push_metric(METRIC, repo_id="logicval", dry_run=True)
    broken = tmp_path / "logicval"
    shutil.copytree(METRIC, broken, ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "app.py").unlink()
    with pytest.raises(ValueError, match=r"missing \['app.py'\]"):
        push_metric(broken, dry_run=True)
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    FakeApi.calls.clear()
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    assert push_metric(METRIC, repo_id="me/lv_metric", out=out) == ["lv_metric.py", "README.md", "app.py",
                                                                      "requirements.txt"]
    (_, repo, kw), (_, staged, up) = FakeApi.calls
    assert repo == "me/lv_metric" and kw["repo_type"] == "space" and kw["space_sdk"] == "gradio"
    assert staged == ["README.md", "app.py", "lv_metric.py", "requirements.txt"] and up["repo_type"] == "space"
    assert cli(["push-metric", str(METRIC), "--repo-id", "me/logicval", "--dry-run"]) == 0
    assert cli(["push-metric", str(tmp_path / "nowhere"), "--repo-id", "me/logicval", "--dry-run"]) == 2


def test_push_metric_follows_the_hub_namespace(monkeypatch, capsys):
    """One setting (LOGICVAL_HUB_NAMESPACE, default logicval) names the Space and what its card points to."""
    import huggingface_hub

    from logicval_hf.cli.meta import main as cli
    from logicval_hf.scoring.metric_push import push_metric

    monkeypatch.delenv("LOGICVAL_HUB_NAMESPACE", raising=False)
    assert cli(["push-metric", str(METRIC), "--dry-run"]) == 0
    assert "huggingface.co/spaces/logicval/logicval" in capsys.readouterr().out
    monkeypatch.setenv("LOGICVAL_HUB_NAMESPACE", "me")
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    staged_card = {}

    def upload_folder(self, **kw):
        staged_card["text"] = (Path(kw["folder_path"]) / "README.md").read_text(encoding="utf-8")

    monkeypatch.setattr(FakeApi, "upload_folder", upload_folder)
    FakeApi.calls.clear()
    push_metric(METRIC, out=io.StringIO())
    assert FakeApi.calls[0][1] == "me/logicval"
    assert 'evaluate.load("me/logicval")' in staged_card["text"]
    assert "datasets/me/logicval" in staged_card["text"] and "logicval/logicval" not in staged_card["text"]
    monkeypatch.setenv("LOGICVAL_HUB_NAMESPACE", "not a name")
    assert cli(["push-metric", str(METRIC), "--dry-run"]) == 2
    assert "LOGICVAL_HUB_NAMESPACE='not a name'" in capsys.readouterr().err


# ---- the Space app -----------------------------------------------------------------------------
def _import_app():
    return load_script(METRIC / "app.py", "logicval_metric_app")


def test_app_without_gradio_fails_clearly():
    # in a fresh interpreter: hiding gradio in this one would break later imports of it
    code = "import runpy, sys; sys.modules['gradio'] = None; runpy.run_path(sys.argv[1], run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code, str(METRIC / "app.py")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == ('logicval: error: the LogicVal metric app needs the "space" extra (gradio is not '
                           'installed): pip install "logicval-hf[space]"\n')


@pytest.mark.slow  # imports gradio and builds the widget (~5 s)
def test_app_builds_the_widget(tmp_path):
    pytest.importorskip("gradio")
    import pandas as pd

    app = _import_app()  # importing does not launch
    assert app.module_script() == METRIC / "logicval.py"
    module = app.load_module(cache_dir=str(tmp_path / "cache"))
    demo = app.build_widget(module)
    data = pd.DataFrame({"predictions": [json.dumps(GOOD)], "references": [json.dumps(SPEC)]})
    assert demo.fns[0].fn(data)["logicval_score"] == 1.0
    assert demo.title == "Metric: logicval"  # named after the folder, not the class
