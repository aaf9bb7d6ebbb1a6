"""``logicval serve`` (LogicVal as an RL reward server) and ``logicval build-prompts`` (training prompts apart from
the benchmark). The server's logic is `logicval_hf.serve`; the prompts' is `logicval_hf.benchmark.training_prompts`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from logicval_hf.cli.dispatch import check_backend, check_output_dir, emit, setting, standalone_main, timeout_seconds
from logicval_hf.cli.dispatch import positive_int as _positive_int

__all__ = ["add_subcommands", "cmd_build_prompts", "cmd_serve", "main"]

_TOKEN_ENV = "LOGICVAL_SERVE_TOKEN"


def _config(args: argparse.Namespace) -> Any:
    from logicval_hf.cli.dispatch import min_confidence
    from logicval_hf.serve.config import ServeConfig, default_workers, usable_cores
    from logicval_hf.serve.protocol import Limits

    cores = usable_cores()
    workers = args.workers or default_workers(cores)
    config = ServeConfig(
        host=args.host, port=args.port, backend=args.backend, backend_settings=dict(args.setting or ()),
        workers=0 if args.ray else workers, token=args.token or os.environ.get(_TOKEN_ENV) or None,
        reward=args.reward, limits=Limits(args.max_images, args.max_pixels, args.max_bytes),
        max_batch=args.max_batch, max_queue=args.max_queue, deadline=args.deadline,
        max_inflight_bytes=args.max_inflight_bytes, read_timeout=args.read_timeout,
        min_confidence=min_confidence(args),
        prompts=str(Path(args.prompts).expanduser().resolve()) if args.prompts else None)
    # Ray shares the cores out per replica (`ray_deployment`); here the workers share this process's cores
    return config if args.ray else config.sharing_cores(cores / workers)


def cmd_serve(args: argparse.Namespace) -> int:
    from logicval_hf.common.extras import require

    config = _config(args)
    # an unknown backend (with a suggestion), a missing extra, a setting the backend refuses: one line here, before
    # anything starts, not a server that answers 503 for ever
    check_backend(args.backend, config.backend_settings)
    prompts = ""
    if config.prompts:  # a bad file is one line before anything starts; the app reuses what is read here
        from logicval_hf.serve.prompts import load_prompts

        prompts = f", {len(load_prompts(args.prompts)):,} prompts of {Path(config.prompts).name}"
    if args.ray:
        from logicval_hf.serve.ray_deployment import serve_forever

        serve_forever(config, replicas=args.replicas, gpus_per_replica=args.gpus_per_replica,
                      address=args.address)
        return 0
    if args.replicas != 1 or args.gpus_per_replica:
        raise ValueError("--replicas and --gpus-per-replica scale out on Ray Serve: add --ray")
    require("uvicorn", "serve", "the reward server")
    from logicval_hf.serve.http_server import run_server

    threads = config.backend_settings.get("threads")
    print(f"logicval serve: {config.backend} backend, {config.workers} worker(s)"
          f"{f' x {threads} thread(s)' if threads else ''}{prompts}, http://{config.host}:{config.port} "
          "(POST /, POST /compute, GET /health; SIGTERM or Ctrl-C stops)", file=sys.stderr)
    run_server(config, log_level=args.log_level)
    return 0


def cmd_build_prompts(args: argparse.Namespace) -> int:
    from logicval_hf.benchmark.training_prompts import build_prompts

    check_output_dir(args.out, "--out")  # before any sampling: a file or an unwritable place is one line
    summary = build_prompts(args.out, n=args.n, seed=args.seed, progress=not args.no_progress)
    emit(summary, args.pretty)
    return 0


def add_subcommands(subparsers: Any) -> None:
    """Register ``serve`` and ``build-prompts`` on an argparse subparsers object."""
    from logicval_hf.cli.dispatch import min_confidence_option
    from logicval_hf.serve.config import (
        DEFAULT_DEADLINE,
        DEFAULT_INFLIGHT_BYTES,
        DEFAULT_READ_TIMEOUT,
        MAX_DEFAULT_WORKERS,
    )
    from logicval_hf.serve.reward_modes import REWARD_MODES

    p = subparsers.add_parser(
        "serve", help="LogicVal as an RL reward: Flow-GRPO's pickle protocol at POST /, Flow-Factory's JSON at "
                      "POST /compute, GET /health (extra 'serve'; --ray: extra 'serve-ray')")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=18085, help="port (default 18085, where Flow-GRPO's client posts)")
    p.add_argument("--backend", default="clevr",
                   help="perception backend: clevr (LogicVal specs, default), neural (GenEval metadata: the coco "
                        "domain; extra 'neural'), vlm (a grounding VLM behind an OpenAI-compatible endpoint: "
                        "--setting url=URL --setting model=NAME; docs/vlm.md), given (scene-graph JSON instead of "
                        "images)")
    p.add_argument("--setting", action="append", type=setting, metavar="KEY=VALUE",
                   help="a backend setting, repeatable (e.g. second_look=false: the clevr parser without its "
                        "second look at uncertain peaks, about a third faster)")
    p.add_argument("--workers", type=_positive_int, default=None,
                   help="scoring worker processes (default: one per core this process may use, at most "
                        f"{MAX_DEFAULT_WORKERS}; each clevr worker gets cores//N onnxruntime threads unless "
                        "--setting threads=T; a Ray replica gets its CPUs)")
    p.add_argument("--token", default=None,
                   help=f"require 'Authorization: Bearer TOKEN' on scoring routes (or set {_TOKEN_ENV})")
    p.add_argument("--prompts", default=None, metavar="FILE",
                   help="prompts with their specs (a build-prompts folder or its *_metadata.jsonl, a build-dataset "
                        "folder, GenEval's metadata): an image sent with only its prompt (Flow-Factory's client) is "
                        "scored against the spec found under the prompt's exact text")
    p.add_argument("--reward", choices=list(REWARD_MODES), default="fraction",
                   help="'scores' of LogicVal items, a reward mode (default fraction: the share of the spec's "
                        "constraints satisfied; each mode's formula: docs/reward_server.md); a request or an item "
                        "may name another")
    p.add_argument("--max-images", type=_positive_int, default=256, help="images per request (413 beyond)")
    p.add_argument("--max-pixels", type=_positive_int, default=2048 * 2048,
                   help="pixels per image, read from the header (413 beyond; default 2048x2048)")
    p.add_argument("--max-bytes", type=_positive_int, default=128 * 2**20, help="bytes per request (413 beyond)")
    p.add_argument("--max-batch", type=_positive_int, default=64, help="images per micro-batch")
    p.add_argument("--max-queue", type=_positive_int, default=1024,
                   help="images allowed to wait; beyond, 503 with Retry-After")
    p.add_argument("--deadline", type=timeout_seconds, default=DEFAULT_DEADLINE, metavar="SECONDS",
                   help=f"seconds a micro-batch may take in a worker (default {DEFAULT_DEADLINE:g}; none: no "
                        "deadline); past it the worker is replaced and the late request's images get error entries")
    p.add_argument("--max-inflight-bytes", type=_positive_int, default=DEFAULT_INFLIGHT_BYTES, metavar="BYTES",
                   help="bytes of request bodies held at once, read, parsed or scored (default 256 MiB, at least "
                        "--max-bytes); beyond, 503 with Retry-After")
    p.add_argument("--read-timeout", type=timeout_seconds, default=DEFAULT_READ_TIMEOUT, metavar="SECONDS",
                   help=f"seconds a client may send nothing while the server waits on it (default "
                        f"{DEFAULT_READ_TIMEOUT:g}; none: no limit); past it the connection is closed (a body: 408)")
    min_confidence_option(p)
    p.add_argument("--ray", action="store_true", help="run as a Ray Serve deployment (extra 'serve-ray')")
    p.add_argument("--replicas", type=_positive_int, default=1, help="Ray Serve replicas (with --ray)")
    p.add_argument("--gpus-per-replica", type=float, default=0.0, metavar="G", help="GPUs per replica (with --ray)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join (with --ray; default: a running cluster if any, else a local one)")
    p.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))
    p.set_defaults(func=cmd_serve)

    b = subparsers.add_parser(
        "build-prompts", help="sample training specs from the benchmark's templates and packages, none of them one "
                              "of the benchmark's specs (a dataset folder plus Flow-GRPO's *_metadata.jsonl)")
    b.add_argument("--n", type=_positive_int, default=50_000, help="training prompts (default 50000)")
    b.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    b.add_argument("--out", required=True, metavar="DIR", help="folder to write; an unfinished one is resumed")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument("--pretty", action="store_true", help="indent the JSON summary")
    b.set_defaults(func=cmd_build_prompts)


def main(argv: Sequence[str] | None = None) -> int:
    return standalone_main(add_subcommands, argv, "LogicVal as an RL reward.")


if __name__ == "__main__":
    sys.exit(main())
