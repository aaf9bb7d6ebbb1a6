"""The reward server's bounds, each fault first reproduced against the real server process on 127.0.0.1 (bounded
loops): a batch past the deadline replaces its worker, answers its images with error entries and shows in /health
as stuck, while other clients are answered; request bodies in flight are bounded (503 beyond the budget); a client
that stops sending is dropped (408 for an unfinished body); a pickle of cheap opcodes is refused by counting; a
900-megapixel header is a 413; a batch is perceived in chunks of bounded decoded pixels."""

from __future__ import annotations

import base64
import io
import pickle
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import requests
from helpers import load_script, png_header
from server_helpers import ServerProcess, wait_healthy

from logicval_hf.contract.scene import MAX_SCENE_OBJECTS
from logicval_hf.serve.unpickling import MAX_OPCODES, UnsafePickleError, restricted_loads

#: the probe script's request pieces: a spec every pair of a uniform scene's objects meets (its verification grows
#: with n^2 pairs: the slow request), and scene graphs of k objects in a grid
PROBE = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "probe_reward_server_bounds.py",
                    "probe_reward_server_bounds")
RED, SLOW, scene = PROBE.RED, PROBE.SLOW, PROBE.scene


def good_request(url: str, colours: list[str]) -> object:
    body = {"images": [scene(c) for c in colours], "meta_datas": [{"spec": RED}] * len(colours)}
    r = requests.post(url, data=pickle.dumps(body), timeout=120)
    return pickle.loads(r.content)["strict_rewards"] if r.status_code == 200 else r.status_code


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = ServerProcess("--backend", "given", "--workers", "2", "--deadline", "2", "--read-timeout", "1",
                      "--max-bytes", "1000000", "--max-inflight-bytes", "1500000",
                      log=tmp_path_factory.mktemp("bounds") / "server.log")
    try:
        assert wait_healthy(s.url)["status"] == "ok"
        yield s
    finally:
        s.stop()


def test_a_batch_past_the_deadline_replaces_its_worker_and_shows_as_stuck(server):
    health = requests.get(f"{server.url}/health", timeout=10).json()
    assert health["deadline_s"] == 2 and health["busy_workers"] == [] and health["stuck_workers"] == []
    restarts = health["worker_restarts"]
    slow_answer: dict = {}

    def slow() -> None:
        body = {"images": [scene("red", MAX_SCENE_OBJECTS)] * 16, "meta_datas": [{"spec": SLOW}] * 16}
        r = requests.post(server.url, data=pickle.dumps(body), timeout=120)
        slow_answer.update(status=r.status_code, answer=pickle.loads(r.content) if r.status_code == 200 else r.text)

    sender = threading.Thread(target=slow)
    sender.start()
    seen_busy = seen_stuck = None
    stuck_entry = None
    for _ in range(300):  # 30 s at most
        h = requests.get(f"{server.url}/health", timeout=10).json()
        now = time.monotonic()
        if seen_busy is None and any(w["images"] == 16 for w in h["busy_workers"]):
            seen_busy = now
        if h["stuck_workers"]:
            seen_stuck, stuck_entry = now, h["stuck_workers"][0]
            break
        time.sleep(0.1)
    # the other worker answers in the meantime
    with ThreadPoolExecutor(2) as pool:
        good = list(pool.map(lambda c: good_request(server.url, c), [["red", "blue"], ["blue", "red"]] * 3))
    sender.join(60)
    assert seen_busy is not None and seen_stuck is not None and stuck_entry["images"] == 16
    assert seen_stuck - seen_busy < 2 + 5  # the deadline, plus a loaded machine's slack (figures: docs)
    assert good == [[1.0, 0.0], [0.0, 1.0]] * 3
    assert slow_answer["status"] == 200
    errors = slow_answer["answer"]["errors"]
    assert [e["index"] for e in errors] == list(range(16))
    assert all("deadline of 2 s" in e["error"] for e in errors)
    for _ in range(200):  # the replacement loads its model, then the worker is no longer stuck
        h = requests.get(f"{server.url}/health", timeout=10).json()
        if not h["stuck_workers"]:
            break
        time.sleep(0.1)
    assert h["stuck_workers"] == [] and h["worker_restarts"] == restarts + 1 and h["status"] == "ok"
    assert stuck_entry["pid"] not in h["worker_pids"] and len(h["worker_pids"]) == 2
    assert good_request(server.url, ["red"] * 4) == [1.0] * 4


def _open(server, head: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(head)
    return s


def _closed_within(s: socket.socket, seconds: float) -> tuple[bool, bytes]:
    """(whether the server closed the connection within ``seconds``, what it sent before)."""
    s.settimeout(seconds)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return True, got
            got += chunk
    except TimeoutError:
        return False, got
    finally:
        s.close()


def test_bodies_in_flight_are_bounded_by_the_budget(server):
    """Bodies of 0.9 MB against a budget of 1.5 MB: while one is held (all but its last bytes sent), the next is
    refused with 503 and Retry-After once its bytes pass the budget; when the first is answered, the budget is
    free again. A body is held as it arrives: a declared length alone holds nothing."""
    declared = _open(server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n")
    first = _open(server, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n" + b"\x80" * 899_000)
    for _ in range(100):
        if requests.get(f"{server.url}/health", timeout=10).json()["body_bytes"] == 899_000:
            break
        time.sleep(0.05)
    assert requests.get(f"{server.url}/health", timeout=10).json()["body_bytes"] == 899_000
    r = requests.post(server.url, data=b"\x80" * 900_000, timeout=30)
    assert r.status_code == 503 and r.headers["Retry-After"] == "1" and "budget" in r.text
    first.sendall(b"\x80" * 1000)
    _, answer = _closed_within(first, 10)
    assert answer.startswith(b"HTTP/1.1 400")  # read whole: not a pickle, but no longer held
    declared.close()
    assert requests.get(f"{server.url}/health", timeout=10).json()["body_bytes"] == 0
    assert good_request(server.url, ["red"]) == [1.0]


@pytest.mark.parametrize("head", [b"", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Le"],
                         ids=["nothing-sent", "headers-unfinished"])
def test_a_silent_connection_is_closed_after_the_read_timeout(server, head):
    closed, _ = _closed_within(_open(server, head), 8)
    assert closed


def test_an_unfinished_body_is_answered_408_and_the_connection_closed(server):
    head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"
    closed, answer = _closed_within(_open(server, head + b"\x80" * 100), 8)
    assert closed and answer.startswith(b"HTTP/1.1 408") and b"sent nothing for 1 s" in answer
    assert requests.get(f"{server.url}/health", timeout=10).json()["body_bytes"] == 0


def test_a_pickle_of_cheap_opcodes_is_refused_by_counting_them():
    body = b"\x80\x04" + b"N0" * (15 * 2**20 // 2) + b"N."  # 15 MB: NONE, POP, ... (7.9 million opcodes)
    with pytest.raises(UnsafePickleError, match=f"more than {MAX_OPCODES:,} opcodes"):
        restricted_loads(body)
    many = pickle.dumps({"images": [b"x" * 10] * 256, "meta_datas": [{"spec": SLOW, "tag": "t"}] * 256})
    assert len(restricted_loads(many)["images"]) == 256  # the largest ordinary request is far under the count


def test_a_900_megapixel_header_is_413(server):
    body = {"images": [png_header(30_000, 30_000)], "meta_datas": [{"spec": RED}]}
    for url in (server.url, None):
        if url is None:  # the JSON route too
            r = requests.post(f"{server.url}/compute", timeout=30,
                              json={"image": [base64.b64encode(png_header(30_000, 30_000)).decode()],
                                    "specs": [RED]})
        else:
            r = requests.post(url, data=pickle.dumps(body), timeout=30)
        assert r.status_code == 413 and "900,000,000 pixels" in r.text


# ---- in-process: images decoded as they are scored --------------------------------------------------------
def test_a_batch_is_perceived_in_chunks_of_bounded_decoded_pixels(monkeypatch):
    from PIL import Image

    import logicval_hf.perception as perception
    from logicval_hf.serve import worker
    from logicval_hf.serve.worker import Sample, ScoringSettings, score_batch

    def jpeg(w: int, h: int) -> bytes:
        buf = io.BytesIO()
        Image.new("RGB", (w, h), (90, 90, 90)).save(buf, format="JPEG")
        return buf.getvalue()

    seen: list[int] = []
    real = perception.extract_scenes

    def recording(images, *args, **kwargs):
        seen.append(sum(im.shape[0] * im.shape[1] for im in images))
        return real(images, *args, **kwargs)

    monkeypatch.setattr(perception, "extract_scenes", recording)
    monkeypatch.setattr(worker, "DECODE_PIXELS", 3 * 256 * 256)
    sizes = [(256, 256)] * 7 + [(512, 512)] + [(64, 64)] * 2
    out = score_batch([Sample(jpeg(w, h), {"spec": RED}, index=k) for k, (w, h) in enumerate(sizes)],
                      ScoringSettings())
    assert len(out) == 10 and all(r.error is None for r in out)
    assert sum(seen) == sum(w * h for w, h in sizes)
    assert all(p <= 3 * 256 * 256 for p in seen if p != 512 * 512)  # an image over the budget goes alone
    assert len(seen) == 5  # 3 + 3 + 1 small ones, the large one, then the last small ones together


def test_chunks_keep_order_and_the_budget():
    from logicval_hf.serve.worker import _chunks

    pixels = {0: 5, 1: 5, 2: 20, 3: 1, 4: 9, 5: 0}
    assert _chunks([0, 1, 2, 3, 4, 5], pixels, 10) == [[0, 1], [2], [3, 4, 5]]
    assert _chunks([], {}, 10) == []


def test_in_thread_mode_a_late_batch_is_given_up_and_its_thread_reported_until_it_ends():
    """A Ray replica scores in a thread, which cannot be killed: past the deadline the batch fails with
    DeadlineExceeded, the thread is reported stuck until it ends, and a fresh thread takes the next batch."""
    import asyncio

    from logicval_hf.serve.pool import DeadlineExceeded, WorkerPool
    from logicval_hf.serve.worker import Sample, ScoringSettings

    async def scenario():
        pool = WorkerPool(ScoringSettings(backend="given"), workers=0, deadline=1.5)
        await pool.warm_up()
        slow = [Sample(scene("red", MAX_SCENE_OBJECTS), {"spec": SLOW}, index=k) for k in range(6)]
        with pytest.raises(DeadlineExceeded, match=r"deadline of 1\.5 s"):
            await pool.run(slow)
        stuck = pool.report()["stuck"]
        good = await pool.run([Sample(scene("red"), {"spec": RED})])  # on a fresh thread, while the old one works
        for _ in range(600):  # the old thread ends by itself (bounded: 60 s)
            if not pool.report()["stuck"]:
                break
            await asyncio.sleep(0.1)
        after = pool.report()
        pool.close()
        return stuck, good, after

    stuck, good, after = asyncio.run(scenario())
    assert len(stuck) == 1 and stuck[0]["images"] == 6 and good[0].strict == 1.0
    assert after == {"busy": [], "stuck": []}
