"""The metric with ``repair=True``: per-sample repair costs and edits, the mean repair cost overall and per package."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from helpers import requires
from test_repair import FIVE, README_SPEC

from logicval_hf.scoring.evaluation import compute

ROOT = Path(__file__).resolve().parents[2]
RIGHT = {**FIVE, "objects": [*FIVE["objects"][:2], {**FIVE["objects"][2], "shape": "cube"}, *FIVE["objects"][3:]]}


def _rows() -> list[dict]:
    return [{"id": "a", "package": "1SAT", "spec_json": json.dumps(README_SPEC)},
            {"id": "b", "package": "1SAT", "spec_json": json.dumps(README_SPEC)},
            {"id": "c", "package": "3SAT", "spec_json": json.dumps({**README_SPEC, "n": 4})}]


def test_compute_with_repair_adds_costs_edits_and_means_per_package():
    out = compute([json.dumps(FIVE), json.dumps(RIGHT), json.dumps(FIVE)], _rows(), backend="given", repair=True)
    costs = [s["repair_cost"] for s in out["per_sample"]]
    assert costs == [1, 0, 1]  # one attribute; already right; one object too many (the red sphere goes)
    assert out["per_sample"][0]["edits"] == [{"kind": "set", "object": 2, "attribute": "color", "old": "red",
                                              "new": "gray", "bbox": None}]
    assert out["per_sample"][0]["instructions"] == ["Make the red sphere gray."]
    assert all(s["repair_optimal"] for s in out["per_sample"])
    assert out["per_sample"][2]["instructions"] == ["Remove the red sphere."]
    assert out["mean_repair_cost"] == 2 / 3
    assert out["by_package"]["1SAT"]["mean_repair_cost"] == 0.5 and out["by_package"]["3SAT"]["mean_repair_cost"] == 1
    plain = compute([json.dumps(FIVE)], _rows()[:1], backend="given")
    assert "mean_repair_cost" not in plain and "repair_cost" not in plain["per_sample"][0]


@requires("evaluate")
def test_the_evaluate_module_passes_repair_through(tmp_path, monkeypatch):
    import evaluate

    monkeypatch.chdir(ROOT)
    module = evaluate.load("metric/logicval", cache_dir=str(tmp_path), experiment_id=uuid.uuid4().hex)
    out = module.compute(predictions=[json.dumps(FIVE)], references=[json.dumps(README_SPEC)], backend="given",
                         repair=True)
    assert out["mean_repair_cost"] == 1 and out["per_sample"][0]["repair_cost"] == 1


def test_a_sample_without_a_repair_says_why_and_the_others_are_scored():
    crowd = {**FIVE, "objects": [dict(FIVE["objects"][0], bbox=[20 * i, 0, 20 * i + 10, 10]) for i in range(19)]}
    out = compute([json.dumps(crowd), json.dumps(FIVE)], _rows()[:2], backend="given", repair=True)
    first, second = out["per_sample"]
    assert first["repair_cost"] is None and "takes at most 18" in first["repair_error"]
    assert second["repair_cost"] == 1 and "repair_error" not in second
    assert out["mean_repair_cost"] == 1
