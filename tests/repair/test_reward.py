"""The reward server's dense reward from the repair cost: ``1 / (1 + cost)``, per request or with ``--reward``."""

from __future__ import annotations

import json
import pickle
import time

import pytest
from test_repair import FIVE, README_SPEC

from logicval_hf.repairs.reward import repair_reward

RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}
UNSAT = {"n": 3, "constraints": [
    {"template": "C1/1prop", "params": {"A1": {"prop": "color", "value": "red", "negated": False}}},
    {"template": "C2/1prop", "params": {"A1": {"prop": "color", "value": "blue", "negated": False}}},
    {"template": "C8/1prop_exact", "params": {"A1": {"prop": "color", "value": "red", "negated": False}, "K": 1}}]}


def _scene(*colors: str) -> dict:
    return {"image_size": [480, 320], "objects": [
        {"color": c, "shape": "cube", "material": "rubber", "bbox": [10 + 60 * i, 10, 40 + 60 * i, 40]}
        for i, c in enumerate(colors)]}


def test_the_reward_falls_with_every_edit_to_satisfaction():
    assert repair_reward(RED, _scene("red", "blue", "blue")) == 1.0
    assert repair_reward(RED, _scene("blue", "blue", "blue")) == 0.5
    assert repair_reward(RED, _scene("blue", "blue")) == 0.5  # one object short: a red one added
    assert repair_reward(RED, _scene("blue")) == 1 / 3
    assert repair_reward(README_SPEC, FIVE) == 0.5
    # an unsatisfiable spec: every object must go, so fewer objects is closer to right
    assert repair_reward(UNSAT, _scene("red", "blue")) == 1 / 3 and repair_reward(UNSAT, _scene()) == 1.0


def _answer(client, body: dict) -> dict:
    r = client.post("/", content=pickle.dumps(body))
    assert r.status_code == 200
    return pickle.loads(r.content)


def test_the_server_gives_the_repair_reward_per_request_and_by_default():
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from logicval_hf.serve import ServeConfig, create_app

    images = [json.dumps(_scene(*c)).encode() for c in (("red", "blue", "blue"), ("blue", "blue", "blue"))]
    for config, body in (({}, {"reward": "repair"}), ({"reward": "repair"}, {})):
        with TestClient(create_app(ServeConfig(backend="given", workers=0, **config))) as client:
            for _ in range(500):  # the warm-up takes milliseconds with the given backend
                if client.get("/health").json()["status"] != "starting":
                    break
                time.sleep(0.02)
            a = _answer(client, {"images": images, "meta_datas": [{"spec": RED}] * 2, **body})
            assert a["scores"] == [1.0, 0.5] and a["strict_rewards"] == [1.0, 0.0]
