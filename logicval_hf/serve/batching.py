"""Micro-batching: concurrent requests merged into batches, so that perception sees many images per call.

Requests wait in one queue. Whenever a worker slot is free, the dispatcher takes the oldest requests, whole, up to
``max_batch`` images (a larger request goes alone: every image of a request is in one batched perception call), and
hands them to the `WorkerPool` as one batch; the results are split back by position. Under load the queue fills
while every worker is busy, so batches grow by themselves; when idle a request leaves after ``wait_s`` (a few
milliseconds, to catch requests sent together). The event loop only moves lists and futures.

When the images waiting would exceed ``max_queue``, a new request is refused with `Overloaded`, whose
``retry_after`` (seconds) estimates when the queue will have drained: the server answers 503 with ``Retry-After``,
which Flow-GRPO's client (urllib3's ``Retry``) honours and retries.

A batch that fails as a whole for a reason other than a lost worker (a sample no check foresaw) is scored again
in halves, down to the one sample that fails alone, which gets an error entry; a batch that runs past the pool's
deadline is scored again request by request, and the images of a request late on its own get error entries: one
request never costs another request its rewards.

When the server stops (`MicroBatcher.stop`), every waiting request and every new one is refused with `Stopping`
at once (503 with ``Retry-After``); a batch already running is answered if it finishes within the grace period,
and refused with `Stopping` after it, so no request waits on a server that is going away.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from logicval_hf.serve.pool import DeadlineExceeded, WorkerLost, WorkerPool
from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.worker import Sample, failure

__all__ = ["MicroBatcher", "Overloaded", "Stopping"]

log = logging.getLogger("logicval.serve")


class Overloaded(RuntimeError):
    """The queue is full; ``retry_after`` seconds is when to try again."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class Stopping(RuntimeError):
    """The server is stopping: the request is refused (503 with ``Retry-After``)."""

    def __init__(self, message: str = "the reward server is stopping; retry the request"):
        super().__init__(message)


@dataclass(eq=False)  # compared and hashed by identity: held in a set while its batch runs
class _Pending:
    samples: Sequence[Sample]
    future: asyncio.Future


class MicroBatcher:
    """Merges requests into micro-batches for a `WorkerPool` (module docstring).

    Args:
        pool: where batches run.
        max_batch: images per batch (a larger request is a batch of its own).
        max_queue: images allowed to wait; beyond it new requests get `Overloaded`.
        wait_s: how long an idle dispatcher waits for more requests before sending a small batch.
    """

    def __init__(self, pool: WorkerPool, max_batch: int = 64, max_queue: int = 1024, wait_s: float = 0.002):
        for name, v in (("max_batch", max_batch), ("max_queue", max_queue)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self.pool = pool
        self.max_batch = max_batch
        self.max_queue = max_queue
        self.wait_s = wait_s
        self.queued = 0  # images waiting for a slot
        self.batches = 0
        self._queue: collections.deque[_Pending] = collections.deque()
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(pool.slots)
        self._running: set[asyncio.Task] = set()
        self._inflight: set[_Pending] = set()
        self._dispatcher: asyncio.Task | None = None
        self.stopping = False
        self._seconds_per_image = 0.05  # moving estimate, for Retry-After

    def start(self) -> None:
        self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch(), name="logicval-dispatch")

    def stop(self, grace: float) -> None:
        """Refuse every waiting and every new request with `Stopping` now, and a running batch's requests after
        ``grace`` seconds unless it has been answered by then (module docstring)."""
        if self.stopping:
            return
        self.stopping = True
        if self._dispatcher is not None:
            self._dispatcher.cancel()
        while self._queue:
            self._refuse(self._queue.popleft())
        self.queued = 0
        asyncio.get_running_loop().call_later(grace, self._refuse_running)

    def _refuse_running(self) -> None:
        for p in list(self._inflight):
            self._refuse(p)

    @staticmethod
    def _refuse(p: _Pending) -> None:
        if not p.future.done():
            p.future.set_exception(Stopping())

    async def close(self) -> None:
        """`stop` with no grace, and the running batches' tasks cancelled."""
        self.stop(0.0)
        self._refuse_running()
        for task in list(self._running):
            task.cancel()

    async def score(self, samples: Sequence[Sample]) -> list[SampleResult]:
        """The results of one request's samples, in order.

        Raises:
            Overloaded: too many images are waiting.
            WorkerLost: the worker holding the batch died.
            Stopping: the server is stopping.
        """
        if self.stopping:
            raise Stopping()
        n = len(samples)
        if n == 0:
            return []
        if self.queued and self.queued + n > self.max_queue:
            wait = self.queued * self._seconds_per_image / self.pool.slots
            raise Overloaded(f"{self.queued} images are waiting (the queue holds {self.max_queue}); retry later",
                             max(1, math.ceil(wait)))
        future = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(samples, future))
        self.queued += n
        self._wake.set()
        return await future

    def _take(self) -> list[_Pending]:
        batch: list[_Pending] = []
        size = 0
        while self._queue:
            head = self._queue[0]
            if head.future.done():  # the client went away while it waited
                self._queue.popleft()
                self.queued -= len(head.samples)
                continue
            if batch and size + len(head.samples) > self.max_batch:
                break
            self._queue.popleft()
            self.queued -= len(head.samples)
            batch.append(head)
            size += len(head.samples)
        return batch

    async def _dispatch(self) -> None:
        while True:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            await self._slots.acquire()
            if self.wait_s and self.queued < self.max_batch:
                await asyncio.sleep(self.wait_s)
            batch = self._take()
            if not batch:
                self._slots.release()
                continue
            task = asyncio.get_running_loop().create_task(self._run(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _requests_apart(self, batch: list[_Pending]) -> list[SampleResult]:
        """The batch's results; when it runs past the pool's deadline, each of its requests is scored again on its
        own (with a deadline of its own), and the images of a request that is late alone get error entries: a slow
        request costs the others of its batch one deadline of waiting, never their rewards."""
        samples = [s for p in batch for s in p.samples]
        try:
            return await self._isolated(samples)
        except DeadlineExceeded as e:
            if len(batch) == 1:
                return [SampleResult.failed(f"images[{k if s.index is None else s.index}]: {e}")
                        for k, s in enumerate(samples)]
            log.warning("a micro-batch of %d requests ran past the deadline; scoring them one by one", len(batch))
            out: list[SampleResult] = []
            for p in batch:
                out += await self._requests_apart([p])
            return out

    async def _isolated(self, samples: list[Sample]) -> list[SampleResult]:
        """The batch's results; a batch that fails as a whole for any other reason than a lost worker or a stop (a
        sample no check foresaw) is scored again in halves, down to the sample that fails alone, which gets an
        error entry: one sample never costs another its reward."""
        try:
            return await self.pool.run(samples)
        except (WorkerLost, Stopping, DeadlineExceeded):
            raise
        except Exception as e:  # noqa: BLE001 - split below; one sample's failure is its error entry
            if len(samples) == 1:
                s = samples[0]
                return [failure(f"images[{0 if s.index is None else s.index}]", e)]
            log.warning("a micro-batch of %d images failed as a whole (%s); scoring it in parts",
                        len(samples), type(e).__name__)
            half = len(samples) // 2
            return await self._isolated(samples[:half]) + await self._isolated(samples[half:])

    async def _run(self, batch: list[_Pending]) -> None:
        samples = [s for p in batch for s in p.samples]
        start = time.perf_counter()
        self._inflight.update(batch)
        try:
            results = await self._requests_apart(batch)
        except BaseException as e:  # WorkerLost, Stopping, cancelled: every request of the batch learns of it
            for p in batch:
                if not p.future.done():  # cancelled: the server is stopping
                    p.future.set_exception(e if isinstance(e, Exception) else Stopping())
            if not isinstance(e, Exception):
                raise
            return
        finally:
            self._slots.release()
            self._inflight.difference_update(batch)
        self.batches += 1
        per_image = (time.perf_counter() - start) / len(samples)
        self._seconds_per_image = 0.8 * self._seconds_per_image + 0.2 * per_image
        offset = 0
        for p in batch:
            n = len(p.samples)
            if not p.future.done():
                p.future.set_result(results[offset:offset + n])
            offset += n
