"""The real server process (``logicval serve``, clevr backend, worker processes) on 127.0.0.1: Flow-GRPO's client
code shape unchanged, a malicious pickle refused with its side effect absent, and (slow) kill -9 of a worker under
load: the clients' retries succeed and no request gets another request's rewards."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import requests
from requests.adapters import HTTPAdapter, Retry
from server_helpers import ServerProcess, client_loop, known_images, wait_healthy


@pytest.fixture(scope="module")
def images():
    return known_images(4)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = ServerProcess("--workers", "2", log=tmp_path_factory.mktemp("serve") / "server.log")
    try:
        assert wait_healthy(s.url)["status"] == "ok"
        yield s
    finally:
        s.stop()


def test_flow_grpo_client_code_works_unchanged(server, images):
    """Flow-GRPO's `geneval_score` client, step by step: session, retry policy, JPEG bytes, pickle, timeout."""
    specs, oracle, perturbed = images
    jpeg_images = oracle + perturbed
    meta_datas = [{"spec_json": s.to_json(), "prompt": "...", "tag": "1SAT"} for s in specs] * 2
    sess = requests.Session()
    retries = Retry(total=1000, backoff_factor=1, status_forcelist=[500], allowed_methods=False)
    sess.mount("http://", HTTPAdapter(max_retries=retries))
    data = {"images": jpeg_images, "meta_datas": list(meta_datas), "only_strict": False}
    data_bytes = pickle.dumps(data)
    response = sess.post(server.url, data=data_bytes, timeout=120)
    response_data = pickle.loads(response.content)
    assert response.status_code == 200
    assert response_data["strict_rewards"] == [1.0] * 4 + [0.0] * 4
    assert response_data["scores"][:4] == [1.0] * 4 and all(0 <= s <= 1 for s in response_data["scores"][4:])
    assert response_data["group_strict_rewards"]["1SAT"] == [1.0] * 4 + [0.0] * 4
    assert len(response_data["group_rewards"]["counting"]) == 8 and response_data["errors"] == []


def test_a_malicious_pickle_is_refused_by_the_server_process(server, tmp_path):
    marker = tmp_path / "pwned"

    class Shell:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    r = requests.post(server.url, data=pickle.dumps({"images": [Shell()], "meta_datas": [{}]}), timeout=30)
    assert r.status_code == 400 and "refused" in r.text
    time.sleep(0.2)
    assert not marker.exists()
    assert requests.get(f"{server.url}/health", timeout=10).json()["status"] == "ok"


@pytest.mark.slow
def test_kill_9_of_a_worker_under_load_loses_and_swaps_nothing(tmp_path):
    images = known_images(8)
    server = ServerProcess("--workers", "2", log=tmp_path / "server.log")
    try:
        health = wait_healthy(server.url)
        victim = health["worker_pids"][0]
        deadline = time.monotonic() + 240
        started, killed = threading.Event(), threading.Event()

        def killer():
            started.wait(120)  # the clients are under way (each keeps sending until after the kill)
            os.kill(victim, signal.SIGKILL)
            killed.set()

        threading.Thread(target=killer, daemon=True).start()
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda k: client_loop(server.url, 3, k, images, deadline, started, killed),
                                    range(8)))
        assert killed.is_set()
        done = sum(d for d, _ in results)
        wrong = [w for _, ws in results for w in ws]
        assert done >= 24 and wrong == [], wrong[:3]
        after = requests.get(f"{server.url}/health", timeout=10).json()
        assert after["status"] == "ok" and after["worker_restarts"] >= 1 and victim not in after["worker_pids"]
    finally:
        server.stop()
