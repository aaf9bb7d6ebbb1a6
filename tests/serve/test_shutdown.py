"""Stopping the reward server. The real ``logicval serve`` process on 127.0.0.1 (slow): SIGTERM and SIGINT sent to
the server process alone (as systemd, Docker, Kubernetes and Ray do) end every process it started within
`STOP_SECONDS`, each request in flight getting its rewards or a 503; a server killed outright (SIGKILL) leaves no
process behind either. In-process: the micro-batcher's refusals, /health while stopping, the pool's bounded close."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pickle
import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import requests
from fastapi.testclient import TestClient
from server_helpers import ServerProcess, pattern_images, process_group, wait_healthy

from logicval_hf.contract.spec import Spec
from logicval_hf.serve.app import create_app
from logicval_hf.serve.batching import MicroBatcher, Stopping
from logicval_hf.serve.config import ServeConfig
from logicval_hf.serve.http_server import STOP_SECONDS
from logicval_hf.serve.pool import WorkerPool
from logicval_hf.serve.worker import Sample, ScoringSettings

RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}
SCENE = json.dumps({"image_size": [480, 320], "objects": [
    {"color": "red", "shape": "cube", "material": "rubber", "bbox": [10 + 40 * i, 10, 30 + 40 * i, 30]}
    for i in range(3)]}).encode()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _post(url: str, body: bytes) -> int | str:
    """The answer's status code, or the name of the error that ended the request (a hang ends as ReadTimeout)."""
    try:
        return requests.post(url, data=body, timeout=60).status_code
    except requests.RequestException as e:
        return type(e).__name__


def _wait_queued(url: str, images: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if requests.get(f"{url}/health", timeout=10).json()["queued_images"] >= images:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {images} images ever waited at {url}")


def _gone(pgid: int, timeout: float) -> list[int]:
    """The processes of group ``pgid`` still there after ``timeout`` seconds (polled; empty as soon as none is)."""
    deadline = time.monotonic() + timeout
    while (left := process_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("sig", [  # a real server each (4 s on two quiet cores, about 15 s on loaded ones)
    signal.SIGTERM,
    pytest.param(signal.SIGINT, marks=pytest.mark.slow),
    pytest.param(signal.SIGKILL, marks=pytest.mark.slow),
], ids=lambda s: s.name)
def test_a_stopped_server_leaves_no_process_and_answers_what_it_held(sig, tmp_path):
    spec = Spec.from_dict(RED)
    oracle, _ = pattern_images([spec])
    item = {"spec_json": spec.to_json(), "label": "SAT"}
    body = pickle.dumps({"images": oracle * 16, "meta_datas": [item] * 16, "only_strict": False})
    log = tmp_path / "server.log"
    server = ServerProcess("--max-batch", "16", log=log)  # the default workers: one per core
    pgid = server.proc.pid  # its own session: every process it starts is in this group
    try:
        health = wait_healthy(server.url)
        assert health["status"] == "ok" and health["workers"] >= 1
        started = process_group(pgid)  # the server, its workers, the forkserver, the resource tracker
        assert set(health["worker_pids"]) < set(started) and len(started) >= len(health["worker_pids"]) + 3
        first = requests.post(server.url, data=body, timeout=60)
        assert first.status_code == 200
        answer = pickle.loads(first.content)
        assert answer["errors"] == [] and len(answer["strict_rewards"]) == 16
        with ThreadPoolExecutor(health["workers"] + 4) as clients:
            answers = [clients.submit(_post, server.url, body) for _ in range(health["workers"] + 4)]
            _wait_queued(server.url, 16)  # every worker busy, requests waiting behind them
            server.proc.send_signal(sig)  # the server process alone
            codes = [a.result() for a in answers]
        assert _gone(pgid, STOP_SECONDS) == [], process_group(pgid)
        text = log.read_text()
        if sig != signal.SIGKILL:  # (killed, it cannot answer; the resource tracker reports what it cleaned up)
            assert set(codes) <= {200, 503} and 503 in codes, codes
            assert "Traceback" not in text and "leaked" not in text, text[-2000:]
            assert not re.search(r"(?<![\w./:])/[\w.-]+/[\w.-]+/", text), text[-2000:]  # no absolute path logged
    finally:
        for pid in process_group(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        server.stop()


def test_a_stopping_server_refuses_with_503_and_retry_after():
    with TestClient(create_app(ServeConfig(backend="given", workers=0))) as c:
        for _ in range(500):
            if c.get("/health").json()["status"] == "ok":
                break
            time.sleep(0.02)
        body = pickle.dumps({"images": [SCENE], "meta_datas": [{"spec": RED}]})
        assert pickle.loads(c.post("/", content=body).content)["strict_rewards"] == [1.0]
        server = c.app.state.server
        server.request_stop(0.0)
        for _ in range(500):  # the stop is scheduled on the server's event loop
            if server.batcher.stopping:
                break
            time.sleep(0.01)
        r = c.post("/", content=body)
        assert r.status_code == 503 and r.headers["Retry-After"] == "1" and "stopping" in r.text
        r = c.post("/compute", json={"image": [SCENE.decode()], "specs": [RED]})
        assert r.status_code == 503 and "stopping" in r.json()["detail"]
        health = c.get("/health")
        assert health.status_code == 503 and health.json()["status"] == "stopping"


def test_waiting_requests_are_refused_at_once_when_the_stop_begins():
    async def scenario() -> None:
        pool = WorkerPool(ScoringSettings(backend="given"), workers=0)
        batcher = MicroBatcher(pool)  # not started: every request waits in the queue
        sample = Sample(SCENE, {"spec": RED})
        waiting = asyncio.ensure_future(batcher.score([sample, sample]))
        await asyncio.sleep(0)
        assert batcher.queued == 2
        batcher.stop(grace=5.0)
        with pytest.raises(Stopping):
            await asyncio.wait_for(waiting, 1.0)
        with pytest.raises(Stopping):
            await batcher.score([sample])
        assert batcher.queued == 0
        pool.close()

    asyncio.run(scenario())


def test_closing_the_pool_ends_its_workers_and_the_multiprocessing_helpers():
    from multiprocessing import forkserver, resource_tracker

    pool = WorkerPool(ScoringSettings(backend="given"), workers=1)
    try:
        asyncio.run(pool.warm_up())
        workers = pool.pids()
        helpers = [forkserver._forkserver._forkserver_pid, resource_tracker._resource_tracker._pid]
        assert len(workers) == 1 and all(_alive(p) for p in workers + helpers)
    finally:
        pool.close()
    assert not any(_alive(p) for p in workers + helpers)
