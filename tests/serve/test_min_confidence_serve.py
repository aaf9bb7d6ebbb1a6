"""``logicval serve --min-confidence T``: an image read with a scene confidence below T (or none) is unread. Its
answer says why (``unread``: ``{"index", "reason"}``), it belongs to no group (-10.0 in every ``group_*`` list),
it is not an error, and its numbers are the floor; the other images of the request are scored as without the flag.
Scenes are exact here (the ``given`` backend reads scene-graph JSON with its ``confidence``), in-process and through
the real server process started by the command line."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from logicval_hf.serve import ServeConfig, create_app
from logicval_hf.serve.protocol import ABSENT

RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}
DOGS = {"tag": "counting", "include": [{"class": "dog", "count": 2}], "prompt": "a photo of two dogs"}


def scene(color: str, confidence: float | None) -> bytes:
    objs = [{"color": color, "shape": "cube", "material": "rubber", "bbox": [10 + 40 * i, 10, 30 + 40 * i, 30]}
            for i in range(3)]
    graph = {"image_size": [480, 320], "objects": objs}
    if confidence is not None:
        graph["confidence"] = confidence
    return json.dumps(graph).encode()


def dogs(confidence: float) -> bytes:
    objs = [{"class": "dog", "color": "brown", "bbox": [10 + 60 * i, 10, 50 + 60 * i, 50], "score": 0.95}
            for i in range(2)]
    return json.dumps({"image_size": [512, 512], "domain": "coco", "objects": objs,
                       "confidence": confidence}).encode()


#: a right image read confidently, a right one and a wrong one read below 0.5, one with no confidence, a wrong one
#: read confidently, and GenEval metadata read below 0.5
IMAGES = [scene("red", 0.9), scene("red", 0.3), scene("blue", 0.2), scene("red", None), scene("blue", 0.8),
          dogs(0.1)]
ITEMS = [{"spec": RED, "tag": "mine"}] * 5 + [DOGS]
UNREAD = {1: "scene confidence 0.300 is below the minimum 0.5", 2: "scene confidence 0.200 is below the minimum 0.5",
          3: "no scene confidence (the 'given' backend or the scene graph gives none)",
          5: "scene confidence 0.100 is below the minimum 0.5"}


def _settled(c: TestClient) -> dict:
    for _ in range(500):  # bounded: the given backend starts in milliseconds
        body = c.get("/health").json()
        if body["status"] != "starting":
            return body
        time.sleep(0.02)
    raise AssertionError("the server did not finish starting")


def _check_pickle_answer(a: dict) -> None:
    assert [(u["index"], u["reason"]) for u in a["unread"]] == sorted(UNREAD.items())
    assert a["errors"] == []  # unread is not an error
    for i in UNREAD:  # neither a pass nor a failure: the floor, and in no group
        assert (a["scores"][i], a["rewards"][i], a["strict_rewards"][i]) == (0.0, 0.0, 0.0)
        assert all(a[key][g][i] == ABSENT for key in ("group_rewards", "group_strict_rewards") for g in a[key])
    # the images read above the minimum are scored exactly as without it
    assert (a["strict_rewards"][0], a["rewards"][0], a["scores"][0]) == (1.0, 1.0, 1.0)
    assert (a["strict_rewards"][4], a["rewards"][4], a["scores"][4]) == (0.0, 0.0, 0.0)
    assert a["group_strict_rewards"]["mine"] == [1.0, ABSENT, ABSENT, ABSENT, 0.0, ABSENT]
    assert a["group_rewards"]["counting"] == [ABSENT] * 6  # the GenEval image, unread, counts in no tag


def test_unread_images_through_both_protocols_in_process():
    with TestClient(create_app(ServeConfig(backend="given", workers=0, min_confidence=0.5))) as c:
        health = _settled(c)
        assert health["status"] == "ok" and health["min_confidence"] == 0.5
        r = c.post("/", content=pickle.dumps({"images": IMAGES, "meta_datas": ITEMS, "only_strict": False}))
        assert r.status_code == 200
        _check_pickle_answer(pickle.loads(r.content))
        j = c.post("/compute", json={"image": [x.decode() for x in IMAGES[:5]], "specs": [RED] * 5}).json()
        assert "error" not in j and len(j["rewards"]) == 5 and all(isinstance(x, float) for x in j["rewards"])
        assert [(u["index"], u["reason"]) for u in j["unread"]] == [(i, UNREAD[i]) for i in (1, 2, 3)]
        assert j["verdicts"] == [1.0, 0.0, 0.0, 0.0, 0.0] and j["strict_rewards"] == j["verdicts"]
        assert j["errors"] == []
        read = pickle.loads(c.post("/", content=pickle.dumps({"images": IMAGES[:1], "meta_datas": ITEMS[:1]})).content)
        assert read["unread"] == [] and read["strict_rewards"] == [1.0]  # the key is there whenever T is set


def test_without_a_minimum_every_image_is_scored():
    with TestClient(create_app(ServeConfig(backend="given", workers=0))) as c:
        assert _settled(c)["min_confidence"] is None
        a = pickle.loads(c.post("/", content=pickle.dumps({"images": IMAGES, "meta_datas": ITEMS})).content)
    assert "unread" not in a and a["errors"] == []  # the answer without a minimum: exactly the protocol's keys
    assert a["strict_rewards"] == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]  # the low-confidence readings, taken as read


def test_min_confidence_through_the_command_line_and_a_worker_process(tmp_path):
    from server_helpers import ServerProcess, wait_healthy

    pytest.importorskip("uvicorn")
    server = ServerProcess("--backend", "given", "--workers", "1", "--min-confidence", "0.5",
                           log=tmp_path / "server.log")
    try:
        health = wait_healthy(server.url)
        assert health["status"] == "ok" and health["min_confidence"] == 0.5
        import requests

        r = requests.post(server.url, data=pickle.dumps({"images": IMAGES, "meta_datas": ITEMS}), timeout=60)
        assert r.status_code == 200
        _check_pickle_answer(pickle.loads(r.content))
    finally:
        server.stop()


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan", "high"])
def test_a_minimum_outside_the_unit_interval_is_one_line_exit_2(value):
    code = "import sys; from logicval_hf.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "serve", "--port", "1", "--min-confidence", value],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert f"--min-confidence must be a number in [0, 1], got {value!r}" in proc.stderr


def test_the_minimum_travels_in_the_configuration_the_cli_and_ray_build():
    from logicval_hf.cli.main import build_parser
    from logicval_hf.cli.serve import _config
    from logicval_hf.serve.worker import ScoringSettings

    config = _config(build_parser().parse_args(["serve", "--min-confidence", "0.25", "--ray"]))
    assert config.min_confidence == 0.25 and config.scoring.min_confidence == 0.25
    # a Ray replica is built from the configuration's plain values
    assert ServeConfig.from_dict(config.to_dict()).scoring.min_confidence == 0.25
    assert _config(build_parser().parse_args(["serve"])).min_confidence is None
    for bad in (1.5, -1, True, "0.5"):
        with pytest.raises(ValueError, match=r"min_confidence must be a number in \[0, 1\]"):
            ServeConfig(min_confidence=bad)
        with pytest.raises(ValueError, match=r"min_confidence must be a number in \[0, 1\]"):
            ScoringSettings(min_confidence=bad)
