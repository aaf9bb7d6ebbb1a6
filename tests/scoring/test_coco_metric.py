"""COCO specs and scene graphs through `compute`, the `given` backend and the `evaluate` metric module: every
prediction is read in the domain of its reference's spec."""

import json
import os
import tempfile
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_MODULES_CACHE", os.path.join(tempfile.gettempdir(), "logicval-tests-hf-modules"))

import pytest
from helpers import attr, obj

from logicval_hf import Scene
from logicval_hf.contract.domain import load_domain
from logicval_hf.scoring.evaluation import compute

METRIC = Path(__file__).resolve().parents[2] / "metric" / "logicval"
COCO = load_domain("coco")


def cls(name):
    return {"prop": "class", "value": name, "negated": False}


# two dogs (counted above the score threshold), a dog left of a cat; n given (see test_open_size_spec)
SPEC = {"domain": "coco", "n": 3, "score_threshold": 0.3, "constraints": [
    {"template": "X1/count_cmp", "params": {"A1": cls("dog"), "T": ">=", "K": 2}},
    {"template": "C4/pair_rel", "params": {"A1": cls("dog"), "R1": {"rel": "left", "negated": False},
                                           "B1": cls("cat")}},
]}


def dog(x, score=0.9):
    return {"class": "dog", "color": "brown", "bbox": [x, 200, x + 60, 260], "score": score}


CAT = {"class": "cat", "color": "black", "bbox": [400, 200, 460, 260], "score": 0.8}
GOOD = {"image_size": [512, 512], "domain": "coco", "objects": [dog(20), dog(120), CAT]}
# no dog left of the cat (both right of it)
BAD = {"image_size": [512, 512], "domain": "coco", "objects": [
    dog(300), dog(420), dict(CAT, bbox=[20, 200, 80, 260])]}
CLEVR_SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
CLEVR_SCENE = {"image_size": [480, 320], "objects": [
    obj("red", "cube", "metal", 100, 80), obj("blue", "sphere", "rubber", 300, 80),
    obj("gray", "cylinder", "rubber", 200, 250)]}


def no_domain(scene):
    return {k: v for k, v in scene.items() if k != "domain"}


def test_verdicts_for_every_prediction_and_reference_form():
    good_obj = Scene.from_dict(GOOD)
    assert good_obj.domain == COCO
    preds = [GOOD, json.dumps(GOOD), no_domain(GOOD), json.dumps(no_domain(GOOD)), good_obj, BAD]
    refs = [SPEC, json.dumps(SPEC), {"spec_json": json.dumps(SPEC), "id": "c1", "package": "coco"}, SPEC, SPEC, SPEC]
    r = compute(preds, refs)
    assert [s["ok"] for s in r["per_sample"]] == [True] * 5 + [False]
    assert r["per_sample"][5]["violated"] == [1]
    assert r["per_sample"][2]["id"] == "c1" and r["by_package"] == {"coco": {"n": 1, "score": 1.0,
                                                                             "relaxed_score": 1.0}}
    assert all(s["scene"]["domain"] == "coco" for s in r["per_sample"])  # scenes come back in their domain
    assert r["logicval_score"] == pytest.approx(5 / 6)


def test_score_threshold_and_count():
    weak = json.loads(json.dumps(GOOD))
    weak["objects"][1]["score"] = 0.2  # under the threshold: one dog left, and 2 objects of the spec's 3
    r = compute([weak], [SPEC])
    s = r["per_sample"][0]
    assert s["ok"] is False and s["violated"] == [0] and s["n_objects"] == 2 and s["count_ok"] is False


def test_coco_and_clevr_references_in_one_call():
    r = compute([no_domain(GOOD), CLEVR_SCENE, json.dumps(BAD)], [SPEC, CLEVR_SPEC, SPEC])
    assert [s["ok"] for s in r["per_sample"]] == [True, True, False]
    assert [s["scene"].get("domain") for s in r["per_sample"]] == ["coco", None, "coco"]


def test_scene_in_the_wrong_domain_names_the_item():
    named_clevr = dict(CLEVR_SCENE, domain="clevr")
    with pytest.raises(ValueError, match=r"predictions\[1\]: scene.domain: .*'clevr'.*'coco'"):
        compute([GOOD, named_clevr], [SPEC, SPEC])
    with pytest.raises(ValueError, match=r"predictions\[1\]: the scene is in domain 'clevr'.*'coco'"):
        compute([GOOD, Scene.from_dict(CLEVR_SCENE)], [SPEC, SPEC])
    with pytest.raises(ValueError, match=r"predictions\[0\]: .*'coco'.*'clevr'"):
        compute([GOOD], [CLEVR_SPEC])
    with pytest.raises(ValueError, match=r"predictions\[0\]: the scene is in domain 'coco'"):
        compute([Scene.from_dict(GOOD)], [CLEVR_SPEC])
    # a CLEVR scene that names no domain is read in the COCO spec's: the message says so
    with pytest.raises(ValueError, match=r"predictions\[0\]: scene.objects\[0\].*names no domain.*'coco'"):
        compute([CLEVR_SCENE], [SPEC])
    bad_class = json.loads(json.dumps(GOOD))
    bad_class["objects"][2]["class"] = "kitty"
    with pytest.raises(ValueError, match=r"predictions\[0\]: scene.objects\[2\].class: 'kitty' is not a class"):
        compute([bad_class], [SPEC])


def test_images_of_a_coco_spec_need_a_backend_that_perceives_it():
    import numpy as np

    img = np.full((48, 64, 3), 90, np.uint8)
    with pytest.raises(ValueError, match=r"predictions\[0\]: its spec is in domain 'coco'.*'clevr'.*neural"):
        compute([img], [SPEC])


def test_given_backend_reads_the_spec_domain(tmp_path):
    from logicval_hf.perception import PerceptionError, extract_scene
    from logicval_hf.perception.given import extract, to_scene

    r = compute([json.dumps(no_domain(GOOD))], [SPEC], backend="given")
    assert r["per_sample"][0]["ok"] is True
    assert extract(no_domain(GOOD), domain="coco") == Scene.from_dict(GOOD)
    assert extract(GOOD).domain == COCO  # the scene's own domain
    assert extract_scene(no_domain(GOOD), backend="given", domain="coco") == Scene.from_dict(GOOD)
    with pytest.raises(ValueError, match=r"'clevr'.*'coco'"):
        to_scene(Scene.from_dict(CLEVR_SCENE), "coco")
    with pytest.raises(ValueError, match="domain"):
        extract(GOOD, domain="cocoa")
    with pytest.raises(PerceptionError, match="domain"):
        extract_scene(GOOD, backend="given", domain="cocoa")


def test_probabilistic_score_on_coco_colours():
    spec = {"domain": "coco", "n": 2, "constraints": [
        {"template": "C1/1prop", "params": {"A1": {"prop": "color", "value": "red", "negated": False}}}]}
    scene = {"image_size": [512, 512], "objects": [
        {"class": "dog", "color": "red", "bbox": [0, 0, 50, 50], "score": 0.9,
         "probs": {"color": {"red": 0.75, "blue": 0.25}}},
        {"class": "cat", "color": "blue", "bbox": [100, 0, 150, 50], "score": 0.9}]}
    r = compute([scene], [spec], probabilistic=True, per_sample=False)
    assert r["logicval_score"] == 1.0 and r["probabilistic_score"] == pytest.approx(0.75)


def test_open_size_spec():
    """GenEval-style specs leave n out; the verdict does not depend on the scene size."""
    open_spec = {k: v for k, v in SPEC.items() if k != "n"}
    r = compute([GOOD, BAD, dict(GOOD, objects=GOOD["objects"] + [dog(200)])], [open_spec] * 3)
    assert [s["ok"] for s in r["per_sample"]] == [True, False, True]


# ---- the evaluate metric module ------------------------------------------------------------------
def test_metric_module_scores_coco_scene_graphs(tmp_path):
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(METRIC), cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
    r = metric.compute(predictions=[json.dumps(GOOD), json.dumps(no_domain(BAD)), Scene.from_dict(GOOD)],
                       references=[json.dumps(SPEC), SPEC, {"spec_json": json.dumps(SPEC), "id": "x"}])
    assert [s["ok"] for s in r["per_sample"]] == [True, False, True]
    assert r["logicval_score"] == pytest.approx(2 / 3)
    metric = evaluate.load(str(METRIC), cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
    with pytest.raises(ValueError, match=r"predictions\[0\]"):
        metric.compute(predictions=[json.dumps(dict(CLEVR_SCENE, domain="clevr"))], references=[json.dumps(SPEC)])


def test_metric_module_labels_within_a_budget(tmp_path):
    """The metric labels a spec given without its label within `timeout` (default 20 s): past it, a
    `SolverTimeout` (a ValueError) naming the reference, never a verdict built on an unproved label."""
    evaluate = pytest.importorskip("evaluate")
    from logicval_hf import SolverTimeout

    metric = evaluate.load(str(METRIC), cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
    hard = dict(SPEC, constraints=SPEC["constraints"] + [SPEC["constraints"][0]])  # not labelled before: no cache
    with pytest.raises(SolverTimeout, match=r"references\[0\]: labelling the spec exceeded its time budget"):
        metric.compute(predictions=[json.dumps(GOOD)], references=[json.dumps(hard)], timeout=1e-9)
