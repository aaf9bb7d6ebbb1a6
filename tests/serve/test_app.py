"""The reward server's routes in-process (FastAPI's TestClient, scoring in a thread): the protocols' shapes, bad
samples as error entries in a 200, and the 400 / 401 / 413 / 503 answers. Scenes are exact here (the ``given``
backend reads scene-graph JSON in place of images), so every reward is known; tests/serve/test_server.py runs the
real server process on real images."""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import re
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient
from PIL import Image

from logicval_hf.serve import ServeConfig, create_app
from logicval_hf.serve.protocol import ABSENT, GENEVAL_TAGS, Limits

RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}


def _scene(color: str, k: int = 3) -> bytes:
    objs = [{"color": color, "shape": "cube", "material": "rubber", "bbox": [10 + 40 * i, 10, 30 + 40 * i, 30]}
            for i in range(k)]
    return json.dumps({"image_size": [480, 320], "objects": objs}).encode()


def _dog(n: int) -> bytes:
    objs = [{"class": "dog", "color": "brown", "bbox": [10 + 60 * i, 10, 50 + 60 * i, 50], "score": 0.95}
            for i in range(n)]
    return json.dumps({"image_size": [512, 512], "domain": "coco", "objects": objs}).encode()


def _client(**config) -> TestClient:
    return TestClient(create_app(ServeConfig(backend="given", workers=0, **config)))


def _settled(c: TestClient) -> dict:
    """/health once the warm-up has finished (bounded: it takes milliseconds with these backends)."""
    for _ in range(500):
        body = c.get("/health").json()
        if body["status"] != "starting":
            return body
        time.sleep(0.02)
    raise AssertionError("the server did not finish starting")


def _post(client, body: dict, **kw):
    return client.post("/", content=pickle.dumps(body), **kw)


@pytest.fixture(scope="module")
def client():
    with _client() as c:
        _settled(c)
        yield c


def test_health_reports_the_backend_and_version(client):
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["model_loaded"] is True
    assert r.json()["backend"] == "given" and r.json()["version"]


def test_flow_grpo_answer_has_the_reference_shape(client):
    geneval = {"tag": "counting", "include": [{"class": "dog", "count": 2}], "exclude": [{"class": "dog", "count": 3}],
               "prompt": "a photo of two dogs"}
    body = {"images": [_scene("red"), _scene("blue"), _dog(2), _dog(3)],
            "meta_datas": [{"spec": RED}, {"spec": RED, "tag": "mine"}, geneval, geneval], "only_strict": False}
    r = _post(client, body)
    assert r.status_code == 200
    a = pickle.loads(r.content)
    assert set(a) == {"scores", "rewards", "strict_rewards", "group_rewards", "group_strict_rewards", "errors"}
    assert a["strict_rewards"] == [1.0, 0.0, 1.0, 0.0] and a["rewards"] == [1.0, 0.0, 1.0, 0.0]
    assert a["scores"] == [1.0, 0.0, 1.0, 0.5] and a["errors"] == []
    assert list(a["group_rewards"])[:6] == list(GENEVAL_TAGS)  # always there, as the reference server's
    assert a["group_rewards"]["counting"] == [ABSENT, ABSENT, 1.0, 0.0]
    assert a["group_strict_rewards"]["C1"] == [1.0, ABSENT, ABSENT, ABSENT]
    assert a["group_rewards"]["mine"] == [ABSENT, 0.0, ABSENT, ABSENT]
    assert all(len(v) == 4 for v in a["group_rewards"].values())


def test_bad_samples_get_error_entries_in_a_200(client):
    body = {"images": [_scene("red"), b"\xff\xd8 not json", _scene("red"), _scene("pink"), _scene("red")],
            "meta_datas": [{"spec": RED}, {"spec": RED}, {"spec_json": "{broken"}, {"spec": RED}, ["not", "a", "dict"]],
            "only_strict": True}
    r = _post(client, body)
    assert r.status_code == 200
    a = pickle.loads(r.content)
    assert a["strict_rewards"] == [1.0, 0.0, 0.0, 0.0, 0.0] and a["rewards"] == [0.0] * 5  # only_strict
    errors = {e["index"]: e["error"] for e in a["errors"]}
    assert sorted(errors) == [1, 2, 3, 4]
    assert "images[1]" in errors[1] and "meta_datas[2]" in errors[2] and "pink" in errors[3]
    assert "must be a dict" in errors[4]


def test_a_path_sent_as_a_scene_graph_is_never_read(client, tmp_path):
    secret = tmp_path / "scene.json"  # a scene graph on the server's disk, named by a client
    secret.write_text(_scene("red").decode())
    a = pickle.loads(_post(client, {"images": [str(secret).encode()], "meta_datas": [{"spec": RED}]}).content)
    assert a["strict_rewards"] == [0.0] and "JSON object" in a["errors"][0]["error"]
    assert str(tmp_path) not in a["errors"][0]["error"]


def test_a_malicious_pickle_is_refused_with_400_and_never_runs(client, tmp_path):
    marker = tmp_path / "pwned"

    class Shell:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    r = client.post("/", content=pickle.dumps({"images": [b"x"], "meta_datas": [Shell()], "only_strict": False}))
    assert r.status_code == 400 and "STACK_GLOBAL" in r.text
    assert not marker.exists()


@pytest.mark.parametrize("body, match", [
    (b"not a pickle", "not a valid pickle"),
    (pickle.dumps(["images"]), "must hold a dict"),
    (pickle.dumps({"images": [], "prompts": []}), "missing \\['meta_datas'\\], unknown \\['prompts'\\]"),
    (pickle.dumps({"images": [b"a", b"b"], "meta_datas": [{}]}), "2 images but 1 meta_datas"),
    (pickle.dumps({"images": [b"a"], "meta_datas": [{}], "only_strict": "yes"}), "only_strict"),
    (pickle.dumps({"images": [b"a"], "meta_datas": [{}], "reward": "dense"}), "reward must be"),
])
def test_malformed_requests_get_400_naming_the_problem(client, body, match):
    r = client.post("/", content=body)
    assert r.status_code == 400
    assert re.search(match, r.text), r.text


def _jpeg(w: int, h: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (90, 90, 90)).save(buf, format="JPEG")
    return buf.getvalue()


def test_requests_over_the_caps_get_413():
    with _client(limits=Limits(max_images=3, max_pixels=64 * 64, max_bytes=20_000)) as c:
        r = _post(c, {"images": [_scene("red")] * 4, "meta_datas": [{"spec": RED}] * 4})
        assert r.status_code == 413 and "cap is 3" in r.text
        r = _post(c, {"images": [_jpeg(32, 32), _jpeg(65, 64)], "meta_datas": [{"spec": RED}] * 2})
        assert r.status_code == 413 and "images[1] is 65x64" in r.text
        r = _post(c, {"images": [os.urandom(25_000)], "meta_datas": [{"spec": RED}]})
        assert r.status_code == 413 and "20,000" in r.text
        r = c.post("/compute", json={"image": ["x"] * 4, "specs": [RED] * 4})
        assert r.status_code == 413


def test_flow_factory_json_protocol(client):
    png = base64.b64encode(_scene("red")).decode()  # base64 of scene JSON: the given backend reads it as is
    r = client.post("/compute", json={"prompt": ["a red object", "a red object"],
                                      "image": [png, _scene("blue").decode()],
                                      "specs": [RED, RED], "video": None, "condition_images": None})
    assert r.status_code == 200
    a = r.json()
    assert a["rewards"] == [1.0, 0.0] and a["strict_rewards"] == [1.0, 0.0] and "error" not in a
    r = client.post("/compute", json={"prompt": ["a red object"], "image": [png], "meta_datas": [{"spec": RED}]})
    assert r.status_code == 200 and r.json()["rewards"] == [1.0]


@pytest.mark.parametrize("body, match", [
    ({"prompt": ["a red object"], "image": ["x"]}, "one of 'specs' or 'meta_datas'"),
    ({"image": ["x"], "specs": [RED], "video": [["y"]]}, "'video' is not scored"),
    ({"image": "x", "specs": [RED]}, "list of base64"),
    ({"image": ["x"], "specs": [RED], "prompt": ["a", "b"]}, "one prompt per image"),
])
def test_flow_factory_malformed_requests_get_400(client, body, match):
    r = client.post("/compute", json=body)
    assert r.status_code == 400 and match in r.json()["detail"]


def test_a_body_that_is_not_json_gets_400(client):
    r = client.post("/compute", content=b"\x80\x04garbage")
    assert r.status_code == 400 and "not JSON" in r.json()["detail"]


def test_a_token_protects_the_scoring_routes():
    with _client(token="s3cret") as c:
        body = {"images": [_scene("red")], "meta_datas": [{"spec": RED}]}
        assert _post(c, body).status_code == 401
        assert _post(c, body, headers={"Authorization": "Bearer wrong"}).status_code == 401
        r = _post(c, body, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200 and pickle.loads(r.content)["strict_rewards"] == [1.0]
        assert c.get("/health").status_code == 200  # health stays open for load balancers


def test_health_reports_a_missing_model_file_and_scoring_refuses_instead_of_answering_zeros(tmp_path):
    missing = tmp_path / "scene_parser.onnx"
    app = create_app(ServeConfig(backend="clevr", workers=0, backend_settings={"model_path": str(missing)}))
    with TestClient(app) as c:
        _settled(c)
        r = c.get("/health")
        assert r.status_code == 503 and r.json()["model_loaded"] is False
        assert any(f"model file {missing.name} is missing" in p for p in r.json()["problems"])
        scored = _post(c, {"images": [_jpeg(64, 64)], "meta_datas": [{"spec": RED}]})
        assert scored.status_code == 503 and missing.name in scored.text and str(tmp_path) not in scored.text
        assert "Retry-After" not in scored.headers  # not retryable: a broken install must stop the run


def test_health_names_model_files_relative_to_the_package_and_no_path_of_the_machine(tmp_path):
    from logicval_hf.common.fingerprint import PACKAGE_ROOT
    from logicval_hf.perception import get_backend
    from logicval_hf.serve.health import Health

    report = Health("clevr", {}).report()
    shipped = [p.resolve().relative_to(PACKAGE_ROOT).as_posix() for p in get_backend("clevr").model_files]
    assert [f["path"] for f in report["model_files"]] == shipped and shipped
    assert all(not f["path"].startswith("/") and (PACKAGE_ROOT / f["path"]).is_file() for f in report["model_files"])
    broken = tmp_path / "broken.onnx"  # a file that is there but is no model: the load fails, naming it
    broken.write_bytes(b"not an onnx graph")
    with TestClient(create_app(ServeConfig(backend="clevr", workers=0,
                                           backend_settings={"model_path": str(broken)}))) as c:
        body = _settled(c)
        assert body["status"] == "unavailable" and body["model_files"] == [{"path": "broken.onnx", "present": True}]
        assert any("broken.onnx" in p for p in body["problems"]), body["problems"]
        assert str(tmp_path) not in json.dumps(body) and str(PACKAGE_ROOT) not in json.dumps(body)


@given(st.lists(st.text("abcXYZ09_.-", min_size=1, max_size=8), min_size=1, max_size=5),
       st.text("abcdef", min_size=1, max_size=6))
def test_messages_keep_a_files_name_and_lose_its_folders(folders, name):
    from logicval_hf.serve.health import without_paths

    path = "/" + "/".join([*folders, name + ".onnx"])
    assert without_paths(f"Load model from {path} failed") == f"Load model from {name}.onnx failed"
    assert without_paths(f"model file '{path}' is missing") == f"model file '{name}.onnx' is missing"


def test_overload_is_a_503_with_retry_after_that_flow_grpos_retry_honours():
    """Flow-GRPO's client retries only 500 by its status list, but urllib3 also retries a 503 that carries
    Retry-After: the queue-full answer must have that header, and the client must get through after waiting."""
    import socket
    import threading

    import uvicorn

    from logicval_hf.serve.batching import Overloaded
    from logicval_hf.serve.client import reward_session

    app = create_app(ServeConfig(backend="given", workers=0))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            time.sleep(0.02)
        batcher = app.state.server.batcher
        real, calls = batcher.score, []

        async def full_once(samples):
            calls.append(len(samples))
            if len(calls) <= 2:  # the plain post, then the retrying client's first try
                raise Overloaded("1024 images are waiting", retry_after=1)
            return await real(samples)

        batcher.score = full_once
        body = pickle.dumps({"images": [_scene("red")], "meta_datas": [{"spec": RED}], "only_strict": False})
        plain = __import__("requests").post(f"http://127.0.0.1:{port}/", data=body, timeout=30)
        assert plain.status_code == 503 and plain.headers["Retry-After"] == "1"
        start = time.monotonic()
        r = reward_session().post(f"http://127.0.0.1:{port}/", data=body, timeout=30)
        assert r.status_code == 200 and pickle.loads(r.content)["strict_rewards"] == [1.0]
        assert len(calls) == 3 and 0.9 < time.monotonic() - start < 10  # waited Retry-After, then got through
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
