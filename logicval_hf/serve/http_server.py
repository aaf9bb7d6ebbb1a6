"""``logicval serve`` on one machine: the app under uvicorn, stopped cleanly by SIGTERM or SIGINT.

SIGTERM (what systemd, Docker, Kubernetes and Ray send) and SIGINT (Ctrl-C) take the same path, within
`STOP_SECONDS` in all:

1. uvicorn stops accepting connections; at the same moment the server refuses every waiting and every new request
   with 503 and ``Retry-After`` (Flow-GRPO's client retries it, against this server's successor);
2. a batch already being scored has `GRACE_SECONDS` to finish and be answered, else its requests get 503 too;
3. the app's shutdown stops the worker processes, the multiprocessing forkserver and the resource tracker, each
   with a deadline (`logicval_hf.serve.pool.WorkerPool.close`), before uvicorn re-raises the signal and the
   process ends. Nothing it started outlives it; a worker also exits by itself when the server process dies
   any other way (SIGKILL, a crash).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.serve.config import ServeConfig

__all__ = ["GRACE_SECONDS", "STOP_SECONDS", "configure_logging", "run_server"]

#: how long a batch already running when the stop begins may take to be answered
GRACE_SECONDS = 3.0
#: what a stop takes at most: the grace, uvicorn's wait for the answers to go out, the workers' and helpers' ends
STOP_SECONDS = 10.0


class _Format(logging.Formatter):
    """uvicorn's layout: ``INFO:     message``."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname + ':':<9} {record.getMessage()}"


def configure_logging(level: str) -> None:
    """The server's own log (``logicval.serve``) on stderr at uvicorn's level, in uvicorn's format: one line per
    bad sample at ``info``, per failure nothing foresaw at ``warning``, their tracebacks (without paths) at
    ``debug``."""
    logger = logging.getLogger("logicval.serve")
    logger.setLevel(level.upper() if level.lower() != "trace" else "DEBUG")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(_Format())
        logger.addHandler(handler)
        logger.propagate = False


def run_server(config: ServeConfig, log_level: str = "warning") -> None:
    """Serve ``config`` with uvicorn on ``config.host:config.port`` until SIGTERM or SIGINT (module docstring).

    Raises:
        MissingExtraError: FastAPI or uvicorn is not installed (the ``serve`` extra).
    """
    uvicorn = require("uvicorn", "serve", "the reward server")
    from logicval_hf.serve.app import create_app

    configure_logging(log_level)
    app = create_app(config)
    reward_server = app.state.server

    class _Server(uvicorn.Server):  # type: ignore[misc, name-defined, unused-ignore]
        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            reward_server.request_stop(GRACE_SECONDS)

    # uvicorn waits this long for the answers to go out before cancelling what is left: longer than the grace,
    # after which every request has its answer (a result or 503)
    settings = uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level,
                              timeout_graceful_shutdown=GRACE_SECONDS + 2)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it handled: the stop is done
        _Server(settings).run()
