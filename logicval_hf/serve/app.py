"""The reward server's HTTP face (FastAPI): ``POST /`` (Flow-GRPO's pickle protocol), ``POST /compute``
(Flow-Factory's JSON), ``GET /health``, and ``POST /load`` / ``POST /offload`` (Flow-Factory's client moves a remote
model between devices with them; here they answer 200 and do nothing: the model stays loaded in the workers).

Status codes, and why: 200 for every request that was read, bad samples included (each gets reward 0 and an
``errors`` entry: a 500 would make Flow-GRPO's client retry the same request a thousand times; whatever an item
makes raise is its own entry, `logicval_hf.serve.admission`); 400 for a body that is not the protocol (a pickle
naming a global is refused before anything in it runs); 401 without the token when one is set; 408 for a client
that stops sending its body; 413 over a size cap; 503 with ``Retry-After`` when the queue or the budget of bodies
held is full, a worker died holding the request or the server is stopping (Flow-GRPO's urllib3 retry honours it);
503 without it when the model cannot be loaded (a missing model file must stop a training run, not feed it zeros).
Bodies are parsed in a thread and scored in the worker pool: the event loop only moves bytes.
"""

# no `from __future__ import annotations`: FastAPI reads the routes' annotations, and `Request` is imported inside
# create_app (the extra is optional), where only an evaluated annotation can see it
import asyncio
import contextlib
import hmac
import json
import logging
import traceback
from collections.abc import Callable
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.common.version import __version__
from logicval_hf.serve.admission import admit
from logicval_hf.serve.batching import MicroBatcher, Overloaded, Stopping
from logicval_hf.serve.bodies import BodyBudget, Refused, read_body
from logicval_hf.serve.config import ServeConfig
from logicval_hf.serve.health import Health, without_paths
from logicval_hf.serve.items import resolve_ids
from logicval_hf.serve.pool import WorkerLost, WorkerPool
from logicval_hf.serve.prompts import load_prompts
from logicval_hf.serve.protocol import (
    BadRequest,
    RewardRequest,
    SampleResult,
    TooLarge,
    check_image_headers,
    json_response,
    parse_json_request,
    parse_pickle_request,
    pickle_response,
)
from logicval_hf.serve.worker import Sample

__all__ = ["RewardServer", "create_app"]

log = logging.getLogger("logicval.serve")


class RewardServer:
    """The state behind the routes: the worker pool, the micro-batcher and the health record."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self.health = Health(config.backend, dict(config.backend_settings))
        self.prompts = load_prompts(config.prompts) if config.prompts else None
        self.raw_input = _raw_input(config.backend)
        self.bodies = BodyBudget(config.max_inflight_bytes)
        self.pool: WorkerPool | None = None
        self.batcher: MicroBatcher | None = None
        self._warm: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.pool = WorkerPool(self.config.scoring, self.config.workers, self.config.deadline)
        self.batcher = MicroBatcher(self.pool, self.config.max_batch, self.config.max_queue,
                                    self.config.batch_wait_ms / 1000)
        self.batcher.start()
        self._warm = asyncio.get_running_loop().create_task(self._warm_up())

    async def _warm_up(self) -> None:
        assert self.pool is not None
        try:
            info = await self.pool.warm_up()
        except Exception as e:  # noqa: BLE001 - whatever stops the model from loading is the health report
            self.health.failed(e)
            log.error("the %s backend failed to start: %s", self.config.backend, self.health.error)
        else:
            self.health.loaded(info)

    def request_stop(self, grace: float) -> None:
        """Begin stopping, from any thread or a signal handler: new and waiting requests are refused with 503 at
        once, running batches get ``grace`` seconds (`MicroBatcher.stop`)."""
        if self._loop is not None and self.batcher is not None:
            self._loop.call_soon_threadsafe(self.batcher.stop, grace)

    async def close(self) -> None:
        """Refuse what is still waiting or running, then stop every process the pool started (bounded)."""
        if self._warm is not None:
            self._warm.cancel()
        if self.batcher is not None:
            await self.batcher.close()
        if self.pool is not None:
            await asyncio.to_thread(self.pool.close)

    def status(self) -> tuple[int, dict[str, Any]]:
        """``/health``'s status code and body."""
        body = self.health.report()
        if self.batcher is not None and self.batcher.stopping:  # a load balancer sends nothing more here
            body["status"] = "stopping"
        workers = self.pool.report() if self.pool is not None else {"busy": [], "stuck": []}
        body.update(version=__version__, workers=self.config.workers,
                    worker_pids=self.pool.pids() if self.pool is not None else [],
                    worker_restarts=self.pool.restarts if self.pool is not None else 0,
                    busy_workers=workers["busy"], stuck_workers=workers["stuck"], deadline_s=self.config.deadline,
                    queued_images=self.batcher.queued if self.batcher is not None else 0,
                    body_bytes=self.bodies.held, min_confidence=self.config.min_confidence,
                    prompts=None if self.prompts is None else {"source": self.prompts.source,
                                                               "count": len(self.prompts)})
        return (200 if body["status"] == "ok" else 503), body

    def _check_ready(self) -> None:
        problems = self.health.problems()
        if problems:
            raise Refused(503, "the reward model is not usable: " + "; ".join(problems))

    def check_token(self, header: str | None) -> None:
        token = self.config.token
        if token is None:
            return
        given = (header or "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise Refused(401, "missing or wrong token: send 'Authorization: Bearer <token>'",
                           {"WWW-Authenticate": "Bearer"})

    async def score(self, request: RewardRequest) -> list[Any]:
        """The request's results through the micro-batcher (`Refused` for 400s and 503s). Prompt-only items get
        their specs from the prompts file; one whose prompt is not there is its image's error entry."""
        self._check_ready()
        assert self.batcher is not None
        items, errors = request.items, dict[int, str]()
        if self.prompts is not None:
            items, errors = self.prompts.resolve(items, "prompt" if request.prompts_only else "meta_datas")
        elif request.prompts_only:
            raise Refused(400, "send one of 'specs' or 'meta_datas' (one per image) with the images, or start the "
                                "server with --prompts FILE (a build-prompts or build-dataset output) so that it "
                                "finds each prompt's spec: a free-text prompt cannot be verified")
        if any(isinstance(x, dict) and "id" in x for x in items):
            items = await asyncio.to_thread(resolve_ids, items, self.config.benchmark_seed)
        refused = await asyncio.to_thread(admit, request.images, items, self.raw_input,
                                          request.reward or self.config.reward, list(errors))
        refused.update((i, SampleResult.failed(e)) for i, e in errors.items())
        kept = [i for i in range(len(items)) if i not in refused]
        samples = [Sample(request.images[i], items[i], request.only_strict, request.reward, i) for i in kept]
        try:
            scored = dict(zip(kept, await self.batcher.score(samples), strict=True))
        except Overloaded as e:
            raise Refused(503, str(e), {"Retry-After": str(e.retry_after)}) from None
        except (WorkerLost, Stopping) as e:
            raise Refused(503, str(e), {"Retry-After": "1"}) from None
        results = [scored[i] if i in scored else refused[i] for i in range(len(items))]
        _log_failures(results)
        return results


def _log_failures(results: list[SampleResult]) -> None:
    """One line per bad sample (info: bad input is the client's; warning: a sample made scoring raise something
    other than bad input's ValueError), and its traceback, without paths, at debug level; one line per unread image
    (info)."""
    for i, r in enumerate(results):
        if r.unread is not None:
            log.info("unread sample: images[%d]: %s", i, r.unread)
        if r.error is None:
            continue
        if r.detail is None:
            log.info("bad sample: %s", r.error)
            continue
        log.warning("sample failed: %s", r.error)
        log.debug("sample failed: %s\n%s", r.error, r.detail.rstrip())


def _raw_input(backend: str) -> bool:
    """Whether the backend reads scene graphs (``given``) rather than pixels."""
    from logicval_hf.perception import get_backend

    return bool(get_backend(backend).raw_input)


def _loads(body: bytes) -> Any:
    """A JSON body; one nested past Python's recursion limit is a `BadRequest` like any other that is not JSON."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(f"the body is not JSON: {e}") from None
    except RecursionError:
        raise BadRequest("the body nests deeper than JSON is read here (about 1,000 levels)") from None


def _parse(parse: Callable[..., RewardRequest], data: Any, config: ServeConfig) -> RewardRequest:
    req = parse(data, config.limits)
    check_image_headers(req.images, config.limits)
    return req


async def _request_of(body: bytes, pickled: bool, config: ServeConfig) -> RewardRequest:
    """The request in ``body``, parsed in a thread (`Refused` with 400 or 413; never an exception of its own)."""
    try:
        if pickled:
            return await asyncio.to_thread(_parse, parse_pickle_request, body, config)
        data = await asyncio.to_thread(_loads, body)
        return await asyncio.to_thread(_parse, parse_json_request, data, config)
    except BadRequest as e:
        raise Refused(400, str(e)) from None
    except TooLarge as e:
        raise Refused(413, str(e)) from None
    except Exception as e:  # noqa: BLE001 - a body no check foresaw: its own 400, never a 500
        log.warning("a request could not be read: %s", type(e).__name__)
        log.debug("a request could not be read:\n%s", without_paths(traceback.format_exc()))
        raise Refused(400, f"the request could not be read ({type(e).__name__})") from None


def create_app(config: ServeConfig | None = None) -> Any:
    """The FastAPI app of the reward server (module docstring). The worker pool starts with the app's lifespan.

    Args:
        config: the server's configuration (default: `ServeConfig()`).
    Returns:
        A FastAPI application; ``app.state.server`` is its `RewardServer`.
    Raises:
        MissingExtraError: FastAPI is not installed (the ``serve`` extra).
    """
    fastapi = require("fastapi", "serve", "the reward server")
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response

    config = config or ServeConfig()
    server = RewardServer(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):
        await server.start()
        try:
            yield
        finally:
            await server.close()

    app = fastapi.FastAPI(title="LogicVal reward server", version=__version__, lifespan=lifespan,
                          docs_url=None, redoc_url=None, openapi_url=None)
    app.state.server = server

    def refused(e: Refused, pickled: bool) -> Any:
        # the pickle route answers in plain text: Flow-GRPO's client cannot read JSON, and prints the body it fails on
        if pickled:
            return Response(f"logicval serve: {e}\n", status_code=e.status, headers=e.headers, media_type="text/plain")
        return JSONResponse({"detail": str(e)}, status_code=e.status, headers=e.headers)

    async def handle(request: Any, pickled: bool) -> Any:
        try:
            server.check_token(request.headers.get("authorization"))
            async with read_body(request, config.limits.max_bytes, server.bodies, config.read_timeout) as body:
                req = await _request_of(body.take(), pickled, config)  # the raw bytes go once parsed
                results = await server.score(req)
                del req  # the images go before the answer is written
        except Refused as e:
            return refused(e, pickled)
        unread = config.min_confidence is not None  # the answers list unread images when the server sets any apart
        if pickled:
            return Response(await asyncio.to_thread(pickle_response, results, unread),
                            media_type="application/octet-stream")
        return JSONResponse(json_response(results, with_unread=unread))

    @app.post("/")
    async def flow_grpo(request: Request) -> Any:
        """Flow-GRPO's pickle protocol (module docstring of `logicval_hf.serve.protocol`)."""
        return await handle(request, pickled=True)

    @app.post("/compute")
    async def compute(request: Request) -> Any:
        """Flow-Factory's JSON protocol: prompts (looked up in ``--prompts``), ``specs`` or ``meta_datas``."""
        return await handle(request, pickled=False)

    @app.post("/load")
    @app.post("/offload")
    async def load_or_offload(request: Request) -> Any:
        """Flow-Factory's client asks a remote reward model to move to its device and back; this server's model
        lives on the CPU of its workers, loaded once, so there is nothing to move."""
        try:
            server.check_token(request.headers.get("authorization"))
        except Refused as e:
            return refused(e, pickled=False)
        return JSONResponse({"status": "ok"})

    @app.get("/health")
    async def health() -> Any:
        """Model loaded, backend, version, workers; 503 while starting, stopping or when the model cannot be used."""
        code, body = server.status()
        headers = {"Retry-After": "1"} if body["status"] == "starting" else None
        return JSONResponse(body, status_code=code, headers=headers)

    return app
