"""One client's bad item never fails another client's request: the real server process (``--backend given``, two
worker processes, 127.0.0.1) under eight good clients and one hostile client in the same seconds. Items from
several requests are scored together in micro-batches; whatever a hostile item raises (a TypeError from ``"reward":
[]``, a RecursionError from JSON nested hundreds deep, a scene over the object bound, ...) is that item's error
entry or its own request's 400, never a 500, and the good requests' rewards are exact. The server's log gets one
line per failed item, no traceback and no path."""

from __future__ import annotations

import base64
import json
import pickle
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import requests
from server_helpers import REPO, ServerProcess, wait_healthy

RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}


def scene(color: str, k: int = 3) -> bytes:
    objs = [{"color": color, "shape": "cube", "material": "rubber", "bbox": [10 + 40 * (i % 10), 10 + 20 * (i // 10),
                                                                            30 + 40 * (i % 10), 30 + 20 * (i // 10)]}
            for i in range(k)]
    return json.dumps({"image_size": [480, 320], "objects": objs}).encode()


def nested(levels: int) -> dict:
    """A spec-shaped JSON value ``levels`` deep (a dict in a list in a dict ...)."""
    value: dict = {"n": 3}
    for _ in range(levels // 2):
        value = {"n": 3, "constraints": [value]}
    return value


def hostile_items() -> list[tuple[bytes, object]]:
    """(image, item) pairs a hostile client sends beside a good one, each bad in its own way."""
    return [
        (scene("red"), {"spec": RED, "reward": []}),  # TypeError in the reward lookup (unhashable)
        (scene("red"), {"spec": RED, "reward": {}}),
        (scene("red"), {"spec_json": "[" * 900 + "]" * 900}),  # RecursionError parsing the spec
        (scene("red"), {"spec_json": 5}),
        (scene("red"), {"spec": {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
            "A1": {"prop": [], "value": {}, "negated": False}}}]}}),  # unhashable where a name belongs
        (scene("red"), {"spec": {"n": [], "constraints": {}}}),
        (scene("red"), {"tag": ["x"], "spec": RED}),
        (scene("red", 10_000), {"spec": RED}),  # over the object bound
        (b"\x00" * 64, {"spec": RED}),
        (12345, {"spec": RED}),
        (scene("red"), ["not", "a", "dict"]),
        (scene("red"), None),
    ]


def hostile_json_bodies() -> list[dict]:
    good = base64.b64encode(scene("red")).decode()
    return [
        {"image": [good], "meta_datas": [{"spec": nested(600)}]},  # deep: pickled for a worker, it would recurse
        {"image": [good, good], "meta_datas": [{"spec": RED, "reward": []}, {"spec": nested(40)}]},
        {"image": [good], "specs": [nested(300)]},
        {"image": [good], "specs": [RED], "reward": []},  # a request-level reward that is not a name: 400
    ]


def good_request(rng: random.Random, url: str, session: requests.Session) -> tuple[list[float], object]:
    colours = [rng.choice(["red", "blue"]) for _ in range(4)]
    expected = [1.0 if c == "red" else 0.0 for c in colours]
    if rng.random() < 0.5:
        body = {"images": [scene(c) for c in colours], "meta_datas": [{"spec": RED}] * 4, "only_strict": False}
        r = session.post(url, data=pickle.dumps(body), timeout=60)
        got = pickle.loads(r.content)["strict_rewards"] if r.status_code == 200 else r.status_code
    else:
        body = {"image": [base64.b64encode(scene(c)).decode() for c in colours], "specs": [RED] * 4}
        r = session.post(f"{url}/compute", json=body, timeout=60)
        got = r.json()["strict_rewards"] if r.status_code == 200 else r.status_code
    return expected, got


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("isolation") / "server.log"
    s = ServerProcess("--backend", "given", "--workers", "2", "--log-level", "info", log=log)
    s.log = log
    try:
        assert wait_healthy(s.url)["status"] == "ok"
        yield s
    finally:
        s.stop()


def test_each_hostile_item_is_its_own_error_entry_beside_a_good_item(server):
    for image, item in hostile_items():
        body = {"images": [scene("red"), image], "meta_datas": [{"spec": RED}, item], "only_strict": False}
        r = requests.post(server.url, data=pickle.dumps(body), timeout=60)
        assert r.status_code == 200, (item if not isinstance(item, dict) else list(item), r.text[:300])
        a = pickle.loads(r.content)
        assert a["strict_rewards"] == [1.0, 0.0] and [e["index"] for e in a["errors"]] == [1]
        assert "\n" not in a["errors"][0]["error"] and "Traceback" not in a["errors"][0]["error"]


def test_hostile_json_requests_get_error_entries_or_400_never_500(server):
    codes = []
    for body in hostile_json_bodies():
        r = requests.post(f"{server.url}/compute", json=body, timeout=60)
        codes.append(r.status_code)
        if r.status_code == 200:
            assert r.json()["errors"] and all(e["error"] for e in r.json()["errors"])
    assert codes == [200, 200, 200, 400]
    r = requests.post(f"{server.url}/compute", data=b"[" * 100_000 + b"]" * 100_000, timeout=60,
                      headers={"content-type": "application/json"})
    assert r.status_code == 400 and "nests deeper" in r.json()["detail"]


def test_eight_good_clients_and_one_hostile_in_the_same_seconds(server):
    stop = threading.Event()
    hostile_codes: list = []

    def hostile() -> None:
        try:
            attack()
        except Exception as e:  # noqa: BLE001 - reported by the assertions below
            hostile_codes.append(repr(e))

    def attack() -> None:
        session = requests.Session()
        items, bodies = hostile_items(), hostile_json_bodies()
        for k in range(400):  # bounded; ends when the good clients are done
            if stop.is_set():
                break
            if k % 2:
                image, item = items[k // 2 % len(items)]
                body = {"images": [image] * 3, "meta_datas": [item] * 3, "only_strict": False}
                hostile_codes.append(session.post(server.url, data=pickle.dumps(body), timeout=60).status_code)
            else:
                r = session.post(f"{server.url}/compute", json=bodies[k // 2 % len(bodies)], timeout=60)
                hostile_codes.append(r.status_code)

    def good(seed: int) -> list[tuple[list[float], object]]:
        rng, session = random.Random(seed), requests.Session()
        return [good_request(rng, server.url, session) for _ in range(12)]

    attacker = threading.Thread(target=hostile, daemon=True)
    attacker.start()
    time.sleep(0.2)
    try:
        with ThreadPoolExecutor(8) as pool:
            results = [r for rs in pool.map(good, range(8)) for r in rs]
    finally:
        stop.set()
        attacker.join(60)
    wrong = [(expected, got) for expected, got in results if expected != got]
    assert len(results) == 96 and wrong == [], wrong[:3]
    assert len(hostile_codes) >= 20 and 500 not in hostile_codes, sorted(set(hostile_codes))
    assert set(hostile_codes) <= {200, 400}


def test_the_log_has_one_line_per_failure_and_no_traceback_or_path(server):
    requests.post(server.url, data=pickle.dumps({"images": [scene("red")], "meta_datas": [{"spec": RED,
                                                                                          "reward": []}]}), timeout=60)
    time.sleep(0.5)
    text = server.log.read_text(errors="replace")
    assert "Traceback" not in text and str(REPO) not in text and "site-packages" not in text


# ---- in-process: the worker and the admission check ---------------------------------------------------------
def test_the_worker_keeps_every_failure_to_its_sample_and_names_its_index_in_its_request():
    from logicval_hf.serve.worker import Sample, ScoringSettings, score_batch

    batch = [Sample(scene("red"), {"spec": RED}, index=0),
             Sample(scene("red"), {"spec": RED, "reward": []}, index=5),
             Sample(scene("red"), {"spec": {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
                 "A1": {"prop": [], "value": {}, "negated": False}}}]}}, index=2),
             Sample(12345, {"spec": RED}, index=7),
             Sample(scene("blue"), {"spec": RED}, index=1)]
    out = score_batch(batch, ScoringSettings(backend="given"))
    assert [r.strict for r in out] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [r.error is None for r in out] == [True, False, False, False, True]
    assert out[1].error.startswith("meta_datas[5]: reward must be one of")
    assert out[2].error.startswith("meta_datas[2]: ") and out[3].error.startswith("images[7]: ")


def test_admission_refuses_what_no_worker_should_receive():
    from logicval_hf.serve.admission import MAX_ITEM_DEPTH, admit

    images = [scene("red")] * 5 + [12345, {"image_size": [1, 1], "objects": [nested(100)]}]
    items = [{"spec": RED}, {"spec": RED, "reward": []}, {"spec": nested(MAX_ITEM_DEPTH + 2)}, {"spec_json": 5},
             "not json", {"spec": RED}, {"spec": RED}]
    refused = admit(images, items, raw_input=True, reward="fraction")
    assert sorted(refused) == [1, 2, 3, 4, 5, 6]
    assert f"nests deeper than {MAX_ITEM_DEPTH} levels" in refused[2].error
    assert refused[5].error.startswith("images[5]: expected a scene graph")
    assert refused[6].error.startswith("images[6]: the scene graph nests deeper")
    assert 0 not in admit(images[:1], items[:1], raw_input=False, reward="fraction")
    assert admit([12345], [{"spec": RED}], raw_input=False, reward="fraction")[0].error.startswith(
        "images[0]: expected encoded image bytes")


def test_a_reward_mode_that_is_not_a_name_is_a_value_error():
    from logicval_hf.serve.reward_modes import check_reward_mode

    for bad in ([], {}, ["fraction"], None, 3):
        with pytest.raises(ValueError, match="reward must be one of"):
            check_reward_mode(bad)


def test_an_unforeseen_failure_keeps_its_traceback_for_the_debug_log_without_paths():
    from logicval_hf.serve.worker import failure

    try:
        {}[[]]  # a TypeError, as a value of the wrong type raises deep inside
    except TypeError as e:
        r = failure("images[3]", e)
    assert r.error == "images[3]: could not be scored (TypeError)"
    assert "Traceback" in r.detail and "test_isolation.py" in r.detail and str(REPO) not in r.detail
