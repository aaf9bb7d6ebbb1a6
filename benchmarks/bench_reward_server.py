"""The reward server under a Flow-GRPO-shaped load, against the same work done in-process.

Images: 512x512 JPEGs (PIL's default quality, as Flow-GRPO sends) of the oracle and the naive generator for
``--specs`` satisfiable specs, each scored against its spec (a LogicVal item, ``spec_json``), clevr backend.

* in-process baseline, in this process on the same images: JPEG decode + `extract_scenes` (one batched call per
  ``--batch`` images, one onnxruntime thread as in a server worker) + `verify_many`; images/s.
* server: ``logicval serve`` on 127.0.0.1 (a subprocess; its default workers, one per usable core, unless
  ``--workers``), a client shaped like Flow-GRPO's: a thread pool of ``--clients`` (8) each posting requests of
  ``--per-request`` (16) images, pickled, with urllib3's retry; images/s over the whole run, p50/p99 latency of a
  request, the ratio ``server images/s / in-process images/s`` (the server's speed-up over one process reading
  the same images batched) and the HTTP path's overhead, ``1 - server images/s / (workers x in-process images/s)``.
* ``--ray``: the same app as ``--replicas`` Ray Serve replicas on a local Ray instance, same client.

The machine's load average is printed before and after: on a shared machine the wall-clock figures measure the
neighbours as much as the code, so the CPU time of every run is measured too (this process for the baseline, the
server's process tree, Ray's processes, read from /proc) and turned into CPU-seconds per image and the images/s
they allow on the machine's cores when nothing else runs; the HTTP path's overhead is also given as extra CPU per
image. ``--repeat N`` runs the baseline and the server N times, alternating, and prints each ratio and the median.

    python benchmarks/bench_reward_server.py [--workers N] [--setting second_look=false] [--repeat 3] [--ray]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_images(n_specs: int, size: int, seed: int) -> tuple[list[bytes], list[dict]]:
    """JPEGs and their items: the oracle's and the naive generator's image of each spec."""
    from logicval_hf.benchmark.sampler import sample
    from logicval_hf.generation.builtin import make_generator
    from logicval_hf.serve.client import jpeg_bytes

    packages, _ = sample(seed)
    specs = [s.spec for name in ("1SAT", "3SAT", "6SAT") for s in packages[name]]
    specs = random.Random(seed).sample(specs, n_specs)
    jpegs, items = [], []
    for name in ("oracle", "naive"):
        g = make_generator(name, seed=seed, image_size=(size, size))
        for spec in specs:
            jpegs.append(jpeg_bytes(g.generate(spec).image))
            items.append({"spec_json": spec.to_json(), "label": "SAT"})
    return jpegs, items


def in_process(jpegs: list[bytes], items: list[dict], settings: dict, batch: int, rounds: int) -> dict:
    """JPEG decode + batched extract_scenes + verify_many, as a single process does it; images/s."""
    import numpy as np
    from PIL import Image

    from logicval_hf.asp.solver import verify_many
    from logicval_hf.perception import extract_scenes

    def once() -> int:
        done = 0
        for start in range(0, len(jpegs), batch):
            chunk = jpegs[start:start + batch]
            arrays = [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in chunk]
            scenes = extract_scenes(arrays, "clevr", **settings)
            verify_many([(items[start + k]["spec_json"], s) for k, s in enumerate(scenes)],
                        labels=[items[start + k]["label"] for k in range(len(scenes))])
            done += len(chunk)
        return done

    once()  # warm: model loaded, groundings cached
    t0, c0 = time.perf_counter(), time.process_time()
    n = sum(once() for _ in range(rounds))
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"images": n, "seconds": round(dt, 2), "images_per_s": round(n / dt, 1), **_cpu_figures(n, cpu)}


def _cpu_figures(images: int, cpu: float | None) -> dict:
    """CPU-seconds per image and what they allow on the machine's cores when nothing else runs: on a shared machine
    wall-clock figures measure the neighbours as much as the code, CPU time much less."""
    if not cpu:
        return {}
    cores = os.cpu_count() or 1
    return {"cpu_s_per_image": round(cpu / images, 4),
            f"images_per_s_on_{cores}_free_cores": round(cores * images / cpu, 1)}


def _tree_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of a process and all its live descendants so far, from /proc (Linux); None
    elsewhere."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parent, cpu = {}, {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return None
    for e in entries:
        try:
            with open(f"/proc/{e}/stat") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, ..., utime (12th), stime (13th)
        parent[int(e)], cpu[int(e)] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick
    if pid not in cpu:
        return None
    tree, frontier = {pid}, [pid]
    while frontier:
        frontier = [p for p, pp in parent.items() if pp in frontier and p not in tree]
        tree.update(frontier)
    return sum(cpu[p] for p in tree)


def _wait(url: str, timeout: float = 180) -> dict:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            body = requests.get(f"{url}/health", timeout=5).json()
            if body["status"] == "ok":
                return body
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"no healthy server at {url} after {timeout} s")


def load(url: str, jpegs: list[bytes], items: list[dict], clients: int, per_request: int, requests_each: int,
         seed: int, server_cpu=lambda: None) -> dict:
    """Flow-GRPO-shaped clients; images/s over the run, per-request latencies, and the server's CPU time
    (``server_cpu()``: its CPU seconds so far) per image."""
    from logicval_hf.serve.client import reward_session

    def client(k: int) -> list[float]:
        rng = random.Random(seed * 1000 + k)
        session = reward_session()
        latencies = []
        for _ in range(requests_each):
            idx = [rng.randrange(len(jpegs)) for _ in range(per_request)]
            body = pickle.dumps({"images": [jpegs[i] for i in idx], "meta_datas": [items[i] for i in idx],
                                 "only_strict": False})
            t = time.perf_counter()
            r = session.post(url, data=body, timeout=120)
            r.raise_for_status()
            answer = pickle.loads(r.content)
            latencies.append(time.perf_counter() - t)
            if answer["errors"]:
                raise RuntimeError(f"unexpected errors: {answer['errors'][:2]}")
        return latencies

    with ThreadPoolExecutor(clients) as pool:  # one warm round: workers' groundings, connection set-up
        list(pool.map(lambda k: client(k) and None, range(clients)))
    t0, c0 = time.perf_counter(), server_cpu()
    with ThreadPoolExecutor(clients) as pool:
        lat = [x for xs in pool.map(client, range(clients)) for x in xs]
    dt, c1 = time.perf_counter() - t0, server_cpu()
    lat.sort()
    n = clients * requests_each * per_request
    return {"images": n, "seconds": round(dt, 2), "images_per_s": round(n / dt, 1),
            "p50_s": round(statistics.median(lat), 3), "p99_s": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3),
            "requests": len(lat), **_cpu_figures(n, c1 - c0 if c0 is not None and c1 is not None else None)}


def run_server(args, jpegs, items) -> dict:
    port = _free_port()
    cmd = [sys.executable, "-m", "logicval_hf.cli", "serve", "--port", str(port)]
    cmd += ["--workers", str(args.workers)] if args.workers else []
    for s in args.setting or ():
        cmd += ["--setting", s]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # the benchmark's own session: under Linux's autogroup scheduling a session of its own would get one share of
    # a loaded machine, however many workers it runs; and a SIGTERM to the server stops all it started
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        health = _wait(url)
        out = load(url, jpegs, items, args.clients, args.per_request, args.requests, args.seed,
                   lambda: _tree_cpu(proc.pid))
        return {"workers": health["workers"], **out}
    finally:
        proc.send_signal(signal.SIGTERM)  # the server stops its workers itself
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()  # its workers exit when it is gone
            proc.wait(10)


def run_ray(args, jpegs, items) -> dict:
    import ray

    from logicval_hf.serve.config import ServeConfig
    from logicval_hf.serve.ray_deployment import start, stop

    port = _free_port()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        settings = dict(_setting(s) for s in args.setting or ())
        start(ServeConfig(port=port, backend_settings=settings), replicas=args.replicas,
              cpus_per_replica=os.cpu_count() / args.replicas)
        url = f"http://127.0.0.1:{port}"
        _wait(url)

        def ray_cpu():  # Ray's processes are this driver's descendants; the driver itself is the client
            tree = _tree_cpu(os.getpid())
            return None if tree is None else tree - sum(os.times()[:2])

        return load(url, jpegs, items, args.clients, args.per_request, args.requests, args.seed, ray_cpu)
    finally:
        stop()


def _setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _ratios(run: dict, base: dict, workers: int) -> None:
    """The server's speed-up over the in-process read, and its HTTP path's overhead (per worker, and in CPU)."""
    run["x_in_process"] = round(run["images_per_s"] / base["images_per_s"], 3)
    run["http_overhead"] = round(1 - run["images_per_s"] / (workers * base["images_per_s"]), 3)
    if "cpu_s_per_image" in run and "cpu_s_per_image" in base:  # extra CPU per image on the HTTP path
        run["http_overhead_cpu"] = round(run["cpu_s_per_image"] / base["cpu_s_per_image"] - 1, 3)


def _print_run(name: str, run: dict, base: dict, args, cpus: int) -> None:
    workers = f", {run['workers']} worker(s)" if "workers" in run else ""
    print(f"{name}{workers}: {run['images_per_s']} images/s = x{run['x_in_process']:.2f} the in-process batched "
          f"read ({base['images_per_s']} images/s), p50 {run['p50_s']} s, p99 {run['p99_s']} s for "
          f"{args.per_request}-image requests from {args.clients} clients")
    cores = f"images_per_s_on_{cpus}_free_cores"
    if cores in run and cores in base:
        print(f"  CPU per image: in-process {base['cpu_s_per_image']} s, {name} {run['cpu_s_per_image']} s "
              f"(HTTP path {run['http_overhead_cpu']:+.1%}) -> {run[cores]} images/s on {cpus} free cores")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", type=int, default=32, help="specs (two images each)")
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--workers", type=int, default=None,
                    help="server worker processes (default: the server's own default, one per usable core)")
    ap.add_argument("--setting", action="append", metavar="KEY=VALUE", help="clevr backend setting (repeatable)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-request", type=int, default=16)
    ap.add_argument("--requests", type=int, default=4, help="timed requests per client")
    ap.add_argument("--batch", type=int, default=64, help="in-process batch (the server's micro-batch cap)")
    ap.add_argument("--rounds", type=int, default=2, help="in-process passes over the images")
    ap.add_argument("--repeat", type=int, default=1, help="baseline-then-server pairs, alternating")
    ap.add_argument("--ray", action="store_true", help="also through Ray Serve")
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--seed", type=int, default=509)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: stop the server too (the finally clauses)

    load_before = os.getloadavg()
    jpegs, items = make_images(args.specs, args.size, args.seed)
    settings = dict(_setting(s) for s in args.setting or ())
    cpus = os.cpu_count() or 1
    out: dict = {"cpus": cpus, "settings": settings, "runs": []}
    for _ in range(args.repeat):
        # the baseline runs the same per-process work as one server worker: one onnxruntime thread unless told
        base = in_process(jpegs, items, {"threads": 1, **settings}, args.batch, args.rounds)
        run = {"in_process": base, "server": run_server(args, jpegs, items)}
        _ratios(run["server"], base, run["server"]["workers"])
        _print_run("logicval serve", run["server"], base, args, cpus)
        out["runs"].append(run)
    if args.ray:
        base = out["runs"][-1]["in_process"]
        out["ray"] = run_ray(args, jpegs, items)
        _ratios(out["ray"], base, args.replicas)
        _print_run(f"Ray Serve, {args.replicas} replicas", out["ray"], base, args, cpus)
    ratios = sorted(r["server"]["x_in_process"] for r in out["runs"])
    out["x_in_process_median"] = ratios[len(ratios) // 2]
    out["load_average"] = {"before": [round(x, 2) for x in load_before],
                           "after": [round(x, 2) for x in os.getloadavg()]}
    print(f"logicval serve / in-process batched read: x{out['x_in_process_median']:.2f} (median of {ratios})")
    print(f"load average before {out['load_average']['before']}, after {out['load_average']['after']}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
