"""Where micro-batches are scored: a pool of worker processes (``logicval serve --workers N``), or one thread of the
serving process (``workers=0``: a Ray Serve replica, which is itself the unit Ray scales and restarts).

Worker processes start with "forkserver" (never "fork": OpenCV/onnxruntime thread pools make forked children hang),
run `logicval_hf.serve.worker.start_worker`, and are warmed up (model loaded, solver built) before the server
reports itself healthy. A worker that dies (``kill -9``, the OOM killer) breaks the pool: the batches it held fail
with `WorkerLost` (the server answers 503 with ``Retry-After``, which Flow-GRPO's client retries), a fresh pool
replaces the broken one, and the next batches run there. No result is ever matched to the wrong batch: each batch
is one future of the executor.

Stopping (`WorkerPool.close`) is bounded and complete: the workers are asked to finish, then terminated, then
killed, each step waited on with a deadline; then the forkserver and the resource tracker this process started
are stopped the same way. Nothing is left to interpreter exit, which a server stopped by SIGTERM never reaches
(uvicorn re-raises the signal with its default action once it has shut down). A worker also ends by itself when
the server process is gone however it died (`logicval_hf.serve.worker.start_worker` watches it).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.worker import Sample, ScoringSettings, score_batch, start_worker, warm_up

__all__ = ["WorkerLost", "WorkerPool", "stop_helpers"]

log = logging.getLogger("logicval.serve")


class WorkerLost(RuntimeError):
    """A worker process died while it held the batch (answered with 503 and ``Retry-After``)."""


class WorkerPool:
    """Scoring workers: ``workers`` processes, or one thread of this process when ``workers == 0``.

    Args:
        settings: what every worker scores with.
        workers: worker processes (0: a thread here).
    """

    def __init__(self, settings: ScoringSettings, workers: int = 1):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be a whole number >= 0, got {workers!r}")
        self.settings = settings
        self.workers = workers
        self.restarts = 0
        self._lock = threading.Lock()
        self._executor: Executor | None = self._new_executor()

    @property
    def slots(self) -> int:
        """Batches that can run at once."""
        return max(self.workers, 1)

    def _new_executor(self) -> Executor:
        if self.workers == 0:
            return ThreadPoolExecutor(1, thread_name_prefix="logicval-score")
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["logicval_hf.serve.worker"])
        return ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=start_worker,
                                   initargs=(self.settings, os.getpid()))

    def pids(self) -> list[int]:
        """The processes that score: the workers', or this process's in thread mode."""
        if self.workers == 0:
            return [os.getpid()]
        processes = getattr(self._executor, "_processes", None) or {}  # where ProcessPoolExecutor keeps them
        return sorted(int(p) for p in processes)

    def _replace(self, broken: Executor) -> None:
        with self._lock:
            if self._executor is not broken:  # another batch of the same pool got here first, or it was closed
                return
            self.restarts += 1
            log.warning("a scoring worker died; starting a fresh pool (restart %d)", self.restarts)
            self._executor = self._new_executor()
        broken.shutdown(wait=False, cancel_futures=True)

    async def _call(self, fn: Any, *args: Any) -> Any:
        executor = self._executor
        if executor is None:
            raise WorkerLost("the scoring workers have been stopped")
        try:
            return await asyncio.get_running_loop().run_in_executor(executor, fn, *args)
        except BrokenProcessPool:
            self._replace(executor)
            raise WorkerLost("a scoring worker died while it held this request; retry it") from None

    async def warm_up(self) -> list[dict[str, Any]]:
        """Warm every worker up (one call each; which worker takes which call is the executor's choice).

        Raises:
            WorkerLost: a worker died while loading.
            Exception: what the backend raised when loading its model.
        """
        return list(await asyncio.gather(*(self._call(warm_up, self.settings) for _ in range(self.slots))))

    async def run(self, samples: Sequence[Sample]) -> list[SampleResult]:
        """The results of one micro-batch (`logicval_hf.serve.worker.score_batch`).

        Raises:
            WorkerLost: the worker holding it died.
        """
        return await self._call(score_batch, list(samples), self.settings)

    def close(self, timeout: float = 1.0) -> None:
        """Stop every process this pool started, within about ``timeout`` + 2 seconds (module docstring): a
        batch still running after ``timeout`` is abandoned (its requests have been answered 503 by then)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is None:
            return
        processes = list((getattr(executor, "_processes", None) or {}).values())
        manager = getattr(executor, "_executor_manager_thread", None)  # shutdown() forgets it
        executor.shutdown(wait=False, cancel_futures=True)
        if self.workers == 0:
            return
        deadline = time.monotonic() + timeout
        for p in processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for step in ("terminate", "kill"):
            alive = [p for p in processes if p.is_alive()]
            for p in alive:
                getattr(p, step)()
            for p in alive:
                p.join(1.0)
        if manager is not None:  # it exits once its workers have, letting go of the executor's queues
            manager.join(1.0)
        # the executor's queues hold named semaphores, unlinked when collected: now, before the resource tracker
        # stops (it would report them as leaked, on the server's stderr)
        del executor, manager
        gc.collect()
        stop_helpers()


def _stop_bounded(helper: Any, pid: int | None, timeout: float) -> None:
    """``helper._stop()`` (multiprocessing's own stop: it closes the helper's pipe and waits for it to exit), given
    ``timeout`` seconds before the helper process ``pid`` is killed, which ends the wait."""
    stop = getattr(helper, "_stop", None)
    if pid is None or stop is None:
        return
    waiter = threading.Thread(target=stop, name="logicval-stop-helper", daemon=True)
    waiter.start()
    waiter.join(timeout)
    if waiter.is_alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        waiter.join(1.0)


def stop_helpers(timeout: float = 1.0) -> None:
    """Stop this process's multiprocessing forkserver and resource tracker, if running (each restarts on demand).

    Both exit on their own once every process holding their pipe has ended; ``multiprocessing`` only stops them at
    interpreter exit, with waits that have no bound. Here each gets ``timeout`` seconds, then SIGKILL."""
    from multiprocessing import forkserver, resource_tracker

    server: Any = forkserver._forkserver  # the process-wide instances; their private state is typed nowhere
    _stop_bounded(server, getattr(server, "_forkserver_pid", None), timeout)
    tracker: Any = resource_tracker._resource_tracker
    _stop_bounded(tracker, getattr(tracker, "_pid", None), timeout)
