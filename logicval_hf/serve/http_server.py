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

A connection on which the server waits for the client (no request started, headers unfinished, silence after an
answer) is closed after ``read_timeout`` seconds of silence (`silence_timeout`); a body that stops coming is
answered 408 (`logicval_hf.serve.bodies`). A thousand stalled connections then hold nothing for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.serve.config import ServeConfig

__all__ = ["GRACE_SECONDS", "STOP_SECONDS", "configure_logging", "run_server", "silence_timeout"]

#: how long a batch already running when the stop begins may take to be answered
GRACE_SECONDS = 3.0
#: what a stop takes at most: the grace, uvicorn's wait for the answers to go out, the workers' and helpers' ends
STOP_SECONDS = 10.0


def silence_timeout(base: type, timeout: float) -> type:
    """``base`` (a uvicorn HTTP protocol class) closing a connection on which the server has waited ``timeout``
    seconds for the client: no request started, headers not finished, or nothing sent since the last answer (a
    body left unfinished is answered 408 by the app, `logicval_hf.serve.bodies`). A request being scored is never
    cut: the server, not the client, is the one working then.

    Uses the protocol's ``transport``, ``loop`` and ``cycle`` (uvicorn's h11 and httptools protocols both have
    them); without them the class behaves as ``base``."""

    class Silenced(base):
        _last_data = 0.0
        _watch: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._last_data = time.monotonic()
            self._arm()

        def data_received(self, data: bytes) -> None:
            self._last_data = time.monotonic()
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._watch is not None:
                self._watch.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            loop = getattr(self, "loop", None)
            if loop is not None:
                self._watch = loop.call_later(max(0.05, timeout / 4), self._check)

        def _check(self) -> None:
            transport = getattr(self, "transport", None)
            if transport is None or transport.is_closing():
                return
            cycle = getattr(self, "cycle", None)
            waiting_on_client = cycle is None or getattr(cycle, "response_complete", False)
            if waiting_on_client and time.monotonic() - self._last_data >= timeout:
                transport.close()
                return
            self._arm()

    Silenced.__name__ = Silenced.__qualname__ = f"Silenced{base.__name__}"
    return Silenced


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

    from uvicorn.config import HTTP_PROTOCOLS
    from uvicorn.importer import import_from_string

    protocol = import_from_string(HTTP_PROTOCOLS["auto"])
    if config.read_timeout is not None:
        protocol = silence_timeout(protocol, config.read_timeout)
    # uvicorn waits this long for the answers to go out before cancelling what is left: longer than the grace,
    # after which every request has its answer (a result or 503)
    settings = uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, http=protocol,
                              timeout_graceful_shutdown=GRACE_SECONDS + 2)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it handled: the stop is done
        _Server(settings).run()
