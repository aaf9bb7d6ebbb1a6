"""The reward server's bounds, probed on 127.0.0.1 with hostile load (bounded loops), each next to what a good
client sees in the same seconds. Starts ``logicval serve`` itself, as a subprocess, once per part.

* ``isolation``: 8 good clients (pickle and JSON, 12 requests each) and one hostile client (items that raise
  TypeError, JSON nested 600 deep, scenes over the object bound...) at once: good requests failed, hostile 500s.
* ``deadline``: a request that keeps a worker past ``--deadline``: when /health shows the worker stuck (after the
  batch began), what the late request gets, and a good request's latency meanwhile.
* ``memory``: one request of 256 JPEGs of 2048x2048 (the clevr backend): the worker's peak resident memory above
  what it held before.
* ``pickle``: seven 15 MB pickles of cheap opcodes at once and one good request: how long each refusal took and
  the good request's latency.
* ``bodies``: eight 113 MB JSON bodies at once: answers by status, the server process's peak memory above idle.
* ``stall``: a connection that sends nothing, one with unfinished headers, one with an unfinished body: when the
  server dropped each (``--read-timeout``).

    python benchmarks/probe_reward_server_bounds.py [--parts isolation deadline memory pickle bodies stall]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import pickle
import random
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[1]
RED = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}
SLOW = {"n": 5, "constraints": [{"template": "C6/propRel_2rel", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False},
    "B1": {"prop": "material", "value": "rubber", "negated": False},
    "R1": {"rel": "behind", "negated": False}, "R2": {"rel": "left", "negated": False}}}]}


def scene(color: str, k: int = 3) -> bytes:
    objs = [{"color": color, "shape": "cube", "material": "rubber",
             "bbox": [i % 25 * 19, i // 25 * 15, i % 25 * 19 + 4, i // 25 * 15 + 4]} for i in range(k)]
    return json.dumps({"image_size": [480, 320], "objects": objs}).encode()


class Server:
    def __init__(self, *args: str):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen([sys.executable, "-m", "logicval_hf.cli", "serve", "--port", str(self.port),
                                      *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(1200):
            try:
                if requests.get(f"{self.url}/health", timeout=5).json()["status"] == "ok":
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def health(self) -> dict[str, Any]:
        return requests.get(f"{self.url}/health", timeout=30).json()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def peak_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def good_pickle(url: str, colours: list[str]) -> tuple[bool, float]:
    start = time.perf_counter()
    body = {"images": [scene(c) for c in colours], "meta_datas": [{"spec": RED}] * len(colours)}
    r = requests.post(url, data=pickle.dumps(body), timeout=300)
    ok = r.status_code == 200 and pickle.loads(r.content)["strict_rewards"] == [float(c == "red") for c in colours]
    return ok, time.perf_counter() - start


def part_isolation() -> None:
    with Server("--backend", "given", "--workers", "2") as server:
        stop, hostile_codes = threading.Event(), []

        def hostile() -> None:
            deep: dict = {"n": 3}
            for _ in range(300):
                deep = {"n": 3, "constraints": [deep]}
            bad_items = [{"spec": RED, "reward": []}, {"spec_json": "[" * 900 + "]" * 900}, {"spec": {"n": []}}]
            for k in range(1000):
                if stop.is_set():
                    break
                if k % 2:
                    body = {"images": [scene("red", 10_000 if k % 3 else 3)] * 2,
                            "meta_datas": [bad_items[k % 3], {"spec": RED}]}
                    hostile_codes.append(requests.post(server.url, data=pickle.dumps(body), timeout=60).status_code)
                else:
                    r = requests.post(f"{server.url}/compute", timeout=60, json={
                        "image": [base64.b64encode(scene("red")).decode()], "meta_datas": [{"spec": deep}]})
                    hostile_codes.append(r.status_code)

        def good(seed: int) -> list[bool]:
            rng = random.Random(seed)
            return [good_pickle(server.url, [rng.choice(["red", "blue"]) for _ in range(4)])[0] for _ in range(12)]

        attacker = threading.Thread(target=hostile)
        attacker.start()
        with ThreadPoolExecutor(8) as pool:
            results = [ok for oks in pool.map(good, range(8)) for ok in oks]
        stop.set()
        attacker.join()
        print(f"isolation: {results.count(False)} of {len(results)} good requests failed; hostile requests: "
              f"{len(hostile_codes)}, answered {sorted(set(hostile_codes))}, {hostile_codes.count(500)} of them 500")


def part_deadline(deadline: float = 3.0) -> None:
    with Server("--backend", "given", "--workers", "2", "--deadline", f"{deadline:g}") as server:
        answer: dict[str, Any] = {}

        def slow() -> None:
            body = {"images": [scene("red", 500)] * 16, "meta_datas": [{"spec": SLOW}] * 16}
            start = time.perf_counter()
            r = requests.post(server.url, data=pickle.dumps(body), timeout=300)
            answer.update(seconds=time.perf_counter() - start, errors=pickle.loads(r.content)["errors"])

        threading.Thread(target=slow).start()
        busy = stuck = None
        while stuck is None:
            h = server.health()
            now = time.perf_counter()
            if busy is None and any(w["images"] == 16 for w in h["busy_workers"]):
                busy = now
            if h["stuck_workers"]:
                stuck = now
            time.sleep(0.05)
        ok, latency = good_pickle(server.url, ["red", "blue"])
        while "errors" not in answer:
            time.sleep(0.1)
        late = sum("deadline" in e["error"] for e in answer["errors"])
        print(f"deadline {deadline:g} s: /health showed the worker stuck {stuck - busy:.2f} s after it showed it busy; "
              f"the late request answered in {answer['seconds']:.1f} s with {late} of 16 deadline errors; a good "
              f"request meanwhile: {'right' if ok else 'WRONG'} in {latency:.2f} s")


def part_memory() -> None:
    from PIL import Image, ImageDraw

    rng = random.Random(0)
    jpegs = []
    for _ in range(256):
        im = Image.new("RGB", (2048, 2048), (rng.randint(60, 200),) * 3)
        d = ImageDraw.Draw(im)
        for _ in range(6):
            x, y, r = rng.randint(100, 1900), rng.randint(100, 1900), rng.randint(40, 160)
            colour = (rng.randint(0, 255), rng.randint(0, 255), rng.randint(0, 255))
            d.ellipse((x - r, y - r, x + r, y + r), fill=colour)
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=75)
        jpegs.append(buf.getvalue())
    body = pickle.dumps({"images": jpegs, "meta_datas": [{"spec": RED}] * 256})
    with Server("--workers", "1", "--max-batch", "256") as server:
        worker = server.health()["worker_pids"][0]
        before = peak_mb(worker)
        start = time.perf_counter()
        r = requests.post(server.url, data=body, timeout=600)
        seconds = time.perf_counter() - start
        errors = len(pickle.loads(r.content)["errors"]) if r.status_code == 200 else r.status_code
        print(f"memory: one request of 256 JPEGs of 2048x2048 ({len(body) / 2**20:.1f} MB) scored in {seconds:.1f} s "
              f"({errors} errors); the worker's peak resident memory {before:.0f} MB before, "
              f"{peak_mb(worker):.0f} MB after (+{peak_mb(worker) - before:.0f} MB; all 256 decoded at once would "
              f"be {256 * 2048 * 2048 * 3 / 2**30:.1f} GB of RGB)")


def part_pickle() -> None:
    evil = b"\x80\x04" + b"N0" * (15 * 2**20 // 2) + b"N."
    with Server("--backend", "given", "--workers", "2") as server:
        times: list[tuple[int, float]] = []

        def post() -> None:
            start = time.perf_counter()
            r = requests.post(server.url, data=evil, timeout=300)
            times.append((r.status_code, time.perf_counter() - start))

        threads = [threading.Thread(target=post) for _ in range(7)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        ok, latency = good_pickle(server.url, ["red", "blue"])
        for t in threads:
            t.join()
        print(f"pickle: 7 x 15 MB opcode pickles answered {sorted({c for c, _ in times})} in at most "
              f"{max(s for _, s in times):.2f} s; a good request meanwhile: {'right' if ok else 'WRONG'} in "
              f"{latency:.2f} s")


def part_bodies() -> None:
    big = json.dumps({"image": ["A" * (113 * 2**20 - 200)], "specs": [RED]}).encode()
    with Server("--backend", "given", "--workers", "1") as server:
        idle = resident_mb(server.proc.pid)
        codes: list[int] = []

        def post() -> None:
            codes.append(requests.post(f"{server.url}/compute", data=big, timeout=300,
                                       headers={"content-type": "application/json"}).status_code)

        threads = [threading.Thread(target=post) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"bodies: 8 x {len(big) / 2**20:.0f} MB JSON at once: answers {sorted(codes)}; the server process's "
              f"peak resident memory {peak_mb(server.proc.pid):.0f} MB ({idle:.0f} MB idle)")


def part_stall(timeout: float = 5.0) -> None:
    with Server("--backend", "given", "--workers", "1", "--read-timeout", f"{timeout:g}") as server:
        heads = {"nothing sent": b"", "headers unfinished": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Le",
                 "body unfinished": b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"x" * 100}
        for what, head in heads.items():
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(head)
            start = time.perf_counter()
            s.settimeout(60)
            got = b""
            while chunk := s.recv(65536):
                got += chunk
            answer = got.split(b"\r\n", 1)[0].decode() or "no answer"
            print(f"stall ({what}): closed after {time.perf_counter() - start:.1f} s (--read-timeout {timeout:g}); "
                  f"{answer}")
            s.close()


PARTS = {"isolation": part_isolation, "deadline": part_deadline, "memory": part_memory, "pickle": part_pickle,
         "bodies": part_bodies, "stall": part_stall}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS), help="which probes to run")
    args = p.parse_args(argv)
    for name in args.parts:
        PARTS[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
