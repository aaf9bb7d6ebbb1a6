"""Where micro-batches are scored: a pool of worker processes (``logicval serve --workers N``), or one thread of the
serving process (``workers=0``: a Ray Serve replica, which is itself the unit Ray scales and restarts).

Worker processes start with "forkserver" (never "fork": OpenCV/onnxruntime thread pools make forked children hang),
run `logicval_hf.serve.worker.start_worker`, and are warmed up (model loaded, solver built) before the server
reports itself healthy. A worker that dies (``kill -9``, the OOM killer) breaks the pool: the batches it held fail
with `WorkerLost` (the server answers 503 with ``Retry-After``, which Flow-GRPO's client retries), a fresh pool
replaces the broken one, and the next batches run there. No result is ever matched to the wrong batch: each batch
is one future of the executor.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.worker import Sample, ScoringSettings, score_batch, start_worker, warm_up

__all__ = ["WorkerLost", "WorkerPool"]

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
        self._executor = self._new_executor()

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
                                   initargs=(self.settings,))

    def pids(self) -> list[int]:
        """The processes that score: the workers', or this process's in thread mode."""
        if self.workers == 0:
            return [os.getpid()]
        processes = getattr(self._executor, "_processes", None) or {}  # ProcessPoolExecutor keeps them here
        return sorted(int(p) for p in processes)

    def _replace(self, broken: Executor) -> None:
        with self._lock:
            if self._executor is not broken:  # another batch of the same pool got here first
                return
            self.restarts += 1
            log.warning("a scoring worker died; starting a fresh pool (restart %d)", self.restarts)
            self._executor = self._new_executor()
        broken.shutdown(wait=False, cancel_futures=True)

    async def _call(self, fn: Any, *args: Any) -> Any:
        executor = self._executor
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

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
