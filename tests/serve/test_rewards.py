"""An image's rewards (`logicval_hf.serve.rewards`, `logicval_hf.serve.items`): GenEval's partial and strict
rules against an independent re-implementation of the reference server's, GenEval's verdict against GenEval's
rule, and LogicVal's verdicts, fractions and probabilities on scenes whose truth is known."""

from __future__ import annotations

import json
import pickle
import random
from dataclasses import replace
from pathlib import Path

import pytest
from geneval_reward_rule import reward_server_score
from geneval_rule import geneval_correct, random_detections
from helpers import examples
from shared_data import shared_path

from logicval_hf.asp.solver import Solver
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene
from logicval_hf.serve.items import ItemError, read_item, resolve_ids
from logicval_hf.serve.protocol import Limits, parse_pickle_request
from logicval_hf.serve.reward_modes import REWARD_MODES, RewardMode
from logicval_hf.serve.rewards import score_task

DATA = Path(__file__).resolve().parents[1] / "data" / "geneval" / "metadata_sample.jsonl"
REAL = shared_path("peers", "geneval", "evaluation_metadata.jsonl")
COCO = load_domain("coco")
RED_CUBES = {"n": 4, "constraints": [{"template": "C3/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False},
    "C1": {"prop": "shape", "value": "cube", "negated": False}}}]}


@pytest.fixture(scope="module")
def solver():
    return Solver()


def _lines() -> list[dict]:
    path = REAL if REAL.is_file() else DATA  # GenEval's own file only where the test data root has it
    return [json.loads(s) for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]


def test_geneval_rewards_equal_the_reference_servers_on_random_detections(solver):
    lines, rng = _lines(), random.Random(7)
    seen = {"strict": 0, "verdict": 0, "partial": set()}
    for _ in range(examples(1200)):
        meta = rng.choice(lines)
        detections = random_detections(meta, rng)
        scene = Scene.from_dict({"image_size": [512, 512], "domain": "coco", "objects": detections}, COCO)
        got = score_task(read_item(meta), scene, solver=solver)
        partial, strict = reward_server_score(meta, detections)
        assert got.score == pytest.approx(partial, abs=1e-12), (meta, detections)
        assert got.strict == float(strict), (meta, detections)
        assert got.reward == float(geneval_correct(meta, detections)), (meta, detections)
        assert got.groups == {meta["tag"]: (got.reward, got.strict)}
        seen["strict"] += strict
        seen["verdict"] += got.reward
        seen["partial"].add(round(partial, 3))
    n = examples(1200)
    assert 0.1 * n < seen["strict"] < 0.9 * n and 0.1 * n < seen["verdict"] < 0.9 * n, seen
    assert len(seen["partial"]) > 5  # the partial score takes many values, negative ones included


def test_only_strict_zeroes_the_lenient_verdict_as_the_reference_server(solver):
    meta = {"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"}
    scene = Scene.from_dict({"image_size": [512, 512], "domain": "coco", "objects": [
        {"class": "dog", "color": "brown", "bbox": [10, 10, 100, 100], "score": 0.9}]}, COCO)
    full = score_task(read_item(meta), scene, solver=solver)
    strict_only = score_task(read_item(meta), scene, only_strict=True, solver=solver)
    assert (full.score, full.reward, full.strict) == (1.0, 1.0, 1.0)
    assert (strict_only.score, strict_only.reward, strict_only.strict) == (1.0, 0.0, 1.0)


def test_a_geneval_item_without_a_score_threshold_counts_every_detection(solver):
    """GenEval's items carry its 0.3 threshold; a spec without one counts every object, as specs do elsewhere."""
    meta = {"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a photo of a dog"}
    scene = Scene.from_dict({"image_size": [512, 512], "domain": "coco", "objects": [
        {"class": "dog", "color": "brown", "bbox": [10, 10, 100, 100], "score": 0.2}]}, COCO)
    task = read_item(meta)
    assert score_task(task, scene, solver=solver).strict == 0.0  # below GenEval's 0.3
    open_task = replace(task, spec=replace(task.spec, score_threshold=None))
    assert score_task(open_task, scene, solver=solver).strict == 1.0


def _scene(objects, size=(480, 320)):
    return Scene.from_dict({"image_size": list(size), "objects": objects})


def _obj(color, shape, x, y, material="rubber"):
    return {"color": color, "shape": shape, "material": material, "bbox": [x - 10, y - 10, x + 10, y + 10]}


def test_logicval_item_forms_read_the_same_spec():
    from logicval_hf.contract.spec import Spec

    spec = Spec.from_dict(RED_CUBES)
    forms = [{"spec_json": spec.to_json()}, {"spec": RED_CUBES}, RED_CUBES, spec.to_json(),
             {"spec_json": spec.to_json(), "prompt": "four objects...", "tag": "1SAT"}]
    tasks = [read_item(f) for f in forms]
    assert {t.spec.key() for t in tasks} == {spec.key()}
    assert tasks[0].groups == ("C3",) and tasks[-1].groups == ("1SAT",)


@pytest.mark.parametrize("item, match", [
    ({"spec_json": "{not json"}, "spec"), ({"what": 1}, "unknown keys"), (["a"], "must be a dict"),
    ({"spec": RED_CUBES, "reward": "dense"}, "reward must be"), ({"id": "9SAT-0001"}, "not a benchmark prompt"),
    ({"tag": "counting", "include": [{"class": "unicorn", "count": 1}], "prompt": "x"}, "GenEval metadata"),
])
def test_bad_items_are_named(item, match):
    with pytest.raises(ItemError, match=match):
        read_item(item)


def test_logicval_rewards_strict_relaxed_and_fraction(solver):
    task = read_item({"spec": RED_CUBES})  # every red object is a cube, exactly 4 objects
    good = _scene([_obj("red", "cube", 50, 50), _obj("blue", "sphere", 150, 50), _obj("red", "cube", 250, 50),
                   _obj("green", "cylinder", 350, 50)])
    r = score_task(task, good, solver=solver)
    assert (r.score, r.reward, r.strict) == (1.0, 1.0, 1.0)
    five = _scene([*good.to_dict()["objects"], _obj("gray", "sphere", 400, 200)])
    r = score_task(task, five, solver=solver)
    assert (r.score, r.reward, r.strict) == (1.0, 1.0, 0.0)  # right constraints, wrong count
    bad = _scene([_obj("red", "sphere", 50, 50), _obj("blue", "sphere", 150, 50), _obj("red", "cube", 250, 50),
                  _obj("green", "cylinder", 350, 50)])
    r = score_task(task, bad, solver=solver)
    assert (r.score, r.reward, r.strict) == (0.0, 0.0, 0.0)
    assert r.groups == {"C3": (0.0, 0.0)}


def test_the_fraction_counts_satisfied_constraints(solver):
    spec = {"n": 3, "constraints": [
        {"template": "C1/1prop", "params": {"A1": {"prop": "color", "value": "red", "negated": False}}},
        {"template": "C3/1prop", "params": {"A1": {"prop": "color", "value": "red", "negated": False},
                                            "C1": {"prop": "shape", "value": "cube", "negated": False}}},
        {"template": "C8/1prop_atleast", "params": {"A1": {"prop": "material", "value": "metal", "negated": False},
                                                    "K": 2}}]}
    scene = _scene([_obj("red", "sphere", 50, 50), _obj("blue", "sphere", 150, 50), _obj("red", "cylinder", 250, 50)])
    r = score_task(read_item({"spec": spec}), scene, solver=solver)
    assert r.score == pytest.approx(1 / 3) and r.strict == 0.0  # only "there is a red object" holds
    assert r.groups == {"C1": (0.0, 0.0), "C3": (0.0, 0.0), "C8": (0.0, 0.0)}


def test_an_unsat_spec_rewards_only_the_empty_scene(solver):
    unsat = {"n": 3, "constraints": [{"template": "C8/1prop_atleast", "params": {
        "A1": {"prop": "color", "value": "red", "negated": False}, "K": 5}}]}
    task = read_item({"spec": unsat})
    assert solver.solve(task.spec).label == "UNSAT"
    full = _scene([_obj("red", "cube", 50, 50), _obj("red", "cube", 150, 50), _obj("red", "cube", 250, 50)])
    assert score_task(task, full, solver=solver).score == 0.0
    empty = score_task(task, _scene([]), solver=solver)
    assert (empty.score, empty.strict) == (1.0, 1.0)


def test_the_probability_reward_is_dense_and_agrees_at_certainty(solver):
    probs = {"color": {"red": 0.7, "blue": 0.3}, "shape": {"cube": 1.0}, "material": {"rubber": 1.0}}
    objs = [dict(_obj("red", "cube", 50 + 100 * i, 50), probs=probs) for i in range(4)]
    uncertain = _scene(objs)
    task = read_item({"spec": RED_CUBES, "reward": "probability"})
    r = score_task(task, uncertain, solver=solver)
    assert 0.0 < r.score < 1.0 and r.strict == 1.0  # the verdict reads the argmax; the probability does not
    certain = _scene([{k: v for k, v in o.items() if k != "probs"} for o in objs])
    assert score_task(task, certain, solver=solver).score == 1.0


def test_benchmark_ids_resolve_to_their_specs(monkeypatch):
    from logicval_hf.serve import items as items_module

    monkeypatch.setattr(items_module, "benchmark_index", lambda seed=509: {
        "1SAT-0001": {"spec_json": json.dumps(RED_CUBES), "label": "SAT"}})
    resolved = resolve_ids([{"id": "1SAT-0001"}, {"id": "nope"}, {"spec": RED_CUBES}])
    assert read_item(resolved[0]).label == "SAT" and read_item(resolved[0]).spec.n == 4
    with pytest.raises(ItemError, match="'nope' is not a benchmark prompt"):
        read_item(resolved[1])
    assert resolved[2] == {"spec": RED_CUBES}


def test_a_new_reward_mode_is_one_registry_entry(solver):
    def violations(x):  # 1 / (1 + violated constraints): another dense reward, made up for this test
        return 1.0 / (1 + len(x.verdict.violated))

    REWARD_MODES.register("test-violations", RewardMode(violations, "1 / (1 + violated constraints)"))
    try:
        bad = _scene([_obj("red", "sphere", 50, 50), _obj("blue", "sphere", 150, 50), _obj("red", "cube", 250, 50),
                      _obj("green", "cylinder", 350, 50)])
        task = read_item({"spec": RED_CUBES, "reward": "test-violations"})
        assert score_task(task, bad, solver=solver).score == 0.5
        # a request may choose it as well as an item
        req = parse_pickle_request(pickle.dumps({"images": [], "meta_datas": [], "reward": "test-violations"}),
                                   Limits())
        assert req.reward == "test-violations"
    finally:
        REWARD_MODES.pop("test-violations")
    with pytest.raises(ItemError, match="reward must be one of"):
        read_item({"spec": RED_CUBES, "reward": "test-violations"})
