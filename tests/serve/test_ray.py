"""The reward server on Ray Serve (a local Ray instance, two replicas on 127.0.0.1): both replicas answer, and
kill -9 of one under load loses and swaps nothing (Ray restarts it; Flow-GRPO's retries cover the requests it held)."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("ray.serve")
import requests
from server_helpers import client_loop, free_port, known_images, wait_healthy

pytestmark = pytest.mark.slow  # a Ray instance takes ~10 s to start
#: when this module was imported, and the user's Ray token file: it may not be written after that
STARTED, USER_TOKEN = time.time(), Path.home() / ".ray" / "auth_token"


@pytest.fixture(scope="module")
def ray_server(tmp_path_factory):
    import ray

    from logicval_hf.serve.config import ServeConfig
    from logicval_hf.serve.ray_deployment import start, stop

    port = free_port()
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        # Serve's controller kills an HTTP proxy not ready within 5 s, which on two loaded cores (the suite's other
        # worker, a training job) happens; the Ray processes started here inherit this longer limit.
        mp.setenv("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
        # a new local Ray instance writes its authentication token to ~/.ray/auth_token: a test writes nothing in the
        # user's home, so Ray's processes get a home of their own (token authentication stays on, as for a user)
        mp.setenv("HOME", str(home))
        mp.delenv("RAY_AUTH_TOKEN", raising=False)
        mp.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 _temp_dir=str(tmp_path_factory.mktemp("ray")))
        try:
            start(ServeConfig(port=port), replicas=2, cpus_per_replica=0.5)
            url = f"http://127.0.0.1:{port}"
            assert wait_healthy(url)["status"] == "ok"
            yield url
        finally:
            stop()


def _replica_pids(url: str, want: int = 2, tries: int = 60) -> set[int]:
    pids: set[int] = set()
    for _ in range(tries):
        pids.update(requests.get(f"{url}/health", timeout=10).json()["worker_pids"])
        if len(pids) >= want:
            break
    return pids


def test_two_replicas_answer(ray_server):
    pids = _replica_pids(ray_server)
    assert len(pids) == 2 and os.getpid() not in pids


def test_the_user_home_is_left_alone(ray_server):
    assert (Path(os.environ["HOME"]) / ".ray" / "auth_token").is_file()  # where Ray wrote its token
    assert not USER_TOKEN.exists() or USER_TOKEN.stat().st_mtime < STARTED


def test_kill_9_of_a_replica_under_load_loses_and_swaps_nothing(ray_server):
    images = known_images(8)
    victim = sorted(_replica_pids(ray_server))[0]
    deadline = time.monotonic() + 240
    started, killed = threading.Event(), threading.Event()

    def killer():
        started.wait(120)  # the clients are under way (each keeps sending until after the kill)
        os.kill(victim, signal.SIGKILL)
        killed.set()

    threading.Thread(target=killer, daemon=True).start()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda k: client_loop(ray_server, 3, 100 + k, images, deadline, started, killed),
                                range(8)))
    assert killed.is_set()
    wrong = [w for _, ws in results for w in ws]
    assert sum(d for d, _ in results) >= 24 and wrong == [], wrong[:3]
    for _ in range(120):  # Ray brings the replica back (bounded wait)
        pids = _replica_pids(ray_server, tries=10)
        if len(pids) == 2 and victim not in pids:
            break
        time.sleep(1)
    assert len(pids) == 2 and victim not in pids
