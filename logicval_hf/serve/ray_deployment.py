"""The reward server scaled out on Ray Serve (extra ``serve-ray``): ``logicval serve --ray --replicas N``.

Each replica runs the same FastAPI app (`logicval_hf.serve.app.create_app`) with its scoring in a thread of the
replica (``workers=0``): the replica is the unit Ray schedules, load-balances, health-checks and restarts, so no
process pool of ours sits inside it. Ray Serve starts an HTTP proxy on every node (``proxy_location``
"EveryNode"), bound to ``--host`` (127.0.0.1 by default) and ``--port``: a trainer on any node posts to its own
node's proxy, exactly as to a one-machine server, and Ray routes the request to a replica anywhere in the cluster.

Multi-node::

    ray start --head --port 6379                     # on the head node
    ray start --address HEAD:6379                    # on every other node
    logicval serve --ray --replicas 8 --gpus-per-replica 0.5 --backend neural    # on any node

A replica that dies (``kill -9``, a lost node) is restarted by Ray; requests it held fail with a 5xx that
Flow-GRPO's client retries, and no request is ever answered with another one's rewards (each HTTP request is
answered by the replica that scored it).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.serve.config import ServeConfig

__all__ = ["APP_NAME", "build_deployment", "serve_forever", "start", "stop"]

#: the Ray Serve application's name
APP_NAME = "logicval-reward"

log = logging.getLogger("logicval.serve")


def build_deployment(config: ServeConfig, replicas: int = 1, gpus_per_replica: float = 0.0,
                     cpus_per_replica: float = 1.0, max_ongoing_requests: int = 16) -> Any:
    """The bound Ray Serve application: ``replicas`` copies of the reward app.

    Args:
        config: the app's configuration (its ``workers`` is set to 0: scoring in the replica's thread; the clevr
            parser gets ``cpus_per_replica`` threads unless its settings name them).
        replicas: how many replicas.
        gpus_per_replica: GPUs Ray reserves for each replica (``ray_actor_options={"num_gpus": G}``).
        cpus_per_replica: CPUs Ray reserves for each replica.
        max_ongoing_requests: requests a replica holds at once (its micro-batcher merges them).
    Returns:
        The bound application, for ``serve.run``.
    Raises:
        MissingExtraError: Ray Serve is not installed (the ``serve-ray`` extra).
    """
    serve = require("ray.serve", "serve-ray", "the reward server on Ray Serve")
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas!r}")
    if gpus_per_replica < 0 or cpus_per_replica < 0:
        raise ValueError("gpus_per_replica and cpus_per_replica must be >= 0")
    settings = config.replace(workers=0).sharing_cores(max(cpus_per_replica, 1)).to_dict()

    @serve.deployment(name="LogicValReward", num_replicas=replicas, max_ongoing_requests=max_ongoing_requests,
                      ray_actor_options={"num_cpus": cpus_per_replica, "num_gpus": gpus_per_replica})
    @serve.ingress()
    class LogicValReward:
        def __init__(self, config_dict: dict[str, Any]):
            self._config = ServeConfig.from_dict(config_dict)

        def __serve_build_asgi_app__(self) -> Any:
            from logicval_hf.serve.app import create_app

            return create_app(self._config)

    # ray types serve.ingress as returning the class itself; serve.deployment has made it a Deployment
    # (unused-ignore: a later ray may type it right)
    return LogicValReward.bind(settings)  # type: ignore[attr-defined, unused-ignore]


def start(config: ServeConfig, replicas: int = 1, gpus_per_replica: float = 0.0, cpus_per_replica: float = 1.0,
          address: str | None = None, ray_init: dict[str, Any] | None = None) -> Any:
    """Connect to Ray (``address``, or a running cluster, or a new local instance), start Serve's HTTP proxies on
    ``config.host:config.port`` and deploy the app. Returns when every replica is up.

    Returns:
        The application's deployment handle.
    """
    ray = require("ray", "serve-ray", "the reward server on Ray Serve")
    from ray import serve

    if not ray.is_initialized():
        ray.init(address=address, **(ray_init or {}))
    serve.start(http_options={"host": config.host, "port": config.port})
    app = build_deployment(config, replicas, gpus_per_replica, cpus_per_replica)
    return serve.run(app, name=APP_NAME, route_prefix="/")


def stop() -> None:
    """Remove the application and shut Serve and this process's Ray connection down."""
    import ray
    from ray import serve

    serve.shutdown()
    ray.shutdown()


def serve_forever(config: ServeConfig, replicas: int = 1, gpus_per_replica: float = 0.0,
                  address: str | None = None) -> None:
    """`start`, then block until Ctrl-C (``logicval serve --ray``)."""
    start(config, replicas, gpus_per_replica, address=address)
    print(f"logicval serve: {replicas} Ray Serve replica(s) of the {config.backend} backend at "
          f"http://{config.host}:{config.port} on every node (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stop()
