"""Starting and stopping a real ``logicval serve`` process on an ephemeral 127.0.0.1 port, and images whose
rewards are known: the oracle generator's image of a spec satisfies it, the perturbed generator's breaks exactly
one constraint (both 100 % / 0 % through the clevr backend on the benchmark)."""

from __future__ import annotations

import os
import pickle
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter, Retry

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, timeout: float = 120.0) -> dict[str, Any]:
    """/health once the server says ok; bounded by ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            r = requests.get(f"{url}/health", timeout=5)
            last = r.json()
            if last["status"] == "ok":
                return last
            if last["status"] == "unavailable":
                return last
        except requests.RequestException as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"the server at {url} did not become healthy in {timeout} s: {last}")


class ServerProcess:
    """``logicval serve`` in a subprocess, in a process group of its own (whatever it starts can be found)."""

    def __init__(self, *args: str, log: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
        with open(log, "wb") as out:  # the child writes to its own copy of the descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "logicval_hf.cli", "serve", "--port", str(self.port), *args],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        """SIGTERM to the server process alone (it stops what it started); SIGKILL to its group if it did not."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if process_group(self.proc.pid):
            os.killpg(self.proc.pid, signal.SIGKILL)


def process_group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (read from /proc: psutil may not be installed); zombies, which
    hold nothing but their exit status, are not counted."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended while we looked
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry.name))
    return sorted(out)


def pattern_images(specs: Sequence[Any], size: tuple[int, int] = (320, 320)) -> tuple[list[bytes], list[bytes]]:
    """``(oracle JPEGs, perturbed JPEGs)``: one of each per spec."""
    from logicval_hf.generation.builtin import make_generator
    from logicval_hf.serve.client import jpeg_bytes

    out = []
    for name in ("oracle", "perturbed"):
        g = make_generator(name, seed=1, image_size=size)
        out.append([jpeg_bytes(g.generate(s).image, quality=90) for s in specs])
    return out[0], out[1]


def pattern_request(bits: int, specs: Sequence[Any], oracle: Sequence[bytes], perturbed: Sequence[bytes]):
    """Images whose strict rewards spell ``bits`` (image k is the oracle's when bit k is set), with their items."""
    images = [oracle[k] if bits >> k & 1 else perturbed[k] for k in range(len(specs))]
    items = [{"spec_json": s.to_json()} for s in specs]
    expected = [float(bits >> k & 1) for k in range(len(specs))]
    return images, items, expected


def sat_specs(count: int, seed: int = 0) -> list[Any]:
    """``count`` satisfiable specs of 1 or 3 constraints from distinct classes, drawn from the catalog (seeded)."""
    import random

    from logicval_hf.asp.solver import default_solver
    from logicval_hf.contract.catalog import load_catalog
    from logicval_hf.contract.params import random_constraint
    from logicval_hf.contract.spec import Spec

    catalog, solver, rng = load_catalog(), default_solver(), random.Random(seed)
    out = []
    while len(out) < count:
        n = rng.randint(3, 6)
        classes = rng.sample(list(catalog.classes), rng.choice((1, 3)))  # a spec has 1, 3 or 6 constraints
        spec = Spec(n, tuple(random_constraint(rng.choice(catalog.by_class(k)), n, rng, catalog) for k in classes))
        if solver.solve(spec).satisfiable:
            out.append(spec)
    return out


def known_images(count: int, size: tuple[int, int] = (320, 320), seed: int = 0):
    """``(specs, oracle JPEGs, perturbed JPEGs)`` for ``count`` specs whose oracle image scores strict 1 and whose
    perturbed image scores 0 through the clevr backend in-process (so a wrong reward from the server can only be
    the server's doing)."""
    from logicval_hf.serve.worker import Sample, ScoringSettings, score_batch

    specs = sat_specs(count + count // 2 + 2, seed)
    oracle, perturbed = pattern_images(specs, size)
    items = [{"spec_json": s.to_json()} for s in specs]
    settings = ScoringSettings()
    good = score_batch([Sample(im, it) for im, it in zip(oracle, items, strict=True)], settings)
    bad = score_batch([Sample(im, it) for im, it in zip(perturbed, items, strict=True)], settings)
    keep = [k for k in range(len(specs)) if good[k].strict == 1.0 and bad[k].strict == 0.0][:count]
    if len(keep) < count:
        raise AssertionError(f"only {len(keep)} of {len(specs)} specs have clean oracle/perturbed images")
    return [specs[k] for k in keep], [oracle[k] for k in keep], [perturbed[k] for k in keep]


def client_loop(url: str, requests_per_client: int, seed: int, images, deadline: float,
                started: threading.Event | None = None, until: threading.Event | None = None):
    """One Flow-GRPO-shaped client: requests whose strict rewards spell a random pattern; returns (requests
    answered, mismatches). ``started`` is set once a first answer came back. ``until``: keep sending past
    ``requests_per_client`` until that event is set, and send one request more after it, so a fault test's kill
    falls inside the load however fast the server reads (bounded by ``deadline`` and 100 extra requests)."""
    specs, oracle, perturbed = images
    rng = random.Random(seed)
    sess = requests.Session()
    sess.mount("http://", HTTPAdapter(max_retries=Retry(total=1000, backoff_factor=0.2, status_forcelist=[500],
                                                        allowed_methods=False)))
    done, wrong, after = 0, [], 0
    for _ in range(requests_per_client + (100 if until is not None else 0)):
        if time.monotonic() > deadline:
            break
        if done >= requests_per_client and (until is None or after >= 1):
            break
        during = until is not None and until.is_set()
        bits = rng.getrandbits(len(specs))
        imgs, items, expected = pattern_request(bits, specs, oracle, perturbed)
        r = sess.post(url, data=pickle.dumps({"images": imgs, "meta_datas": items, "only_strict": False}),
                      timeout=120)
        got = pickle.loads(r.content)["strict_rewards"] if r.status_code == 200 else r.status_code
        if got != expected:
            wrong.append((expected, got))
        done += 1
        after += during
        if started is not None:
            started.set()
    return done, wrong
