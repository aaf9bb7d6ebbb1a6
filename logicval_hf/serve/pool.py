"""Where micro-batches are scored: worker processes (``logicval serve --workers N``), each with an executor of its
own, or one thread of the serving process (``workers=0``: a Ray Serve replica, which is itself the unit Ray scales
and restarts).

Worker processes start with "forkserver" (never "fork": OpenCV/onnxruntime thread pools make forked children hang),
run `logicval_hf.serve.worker.start_worker`, and are warmed up (model loaded, solver built) before the server
reports itself healthy. No result is ever matched to the wrong batch: each batch is one future of one worker.

**Lost workers.** A worker that dies (``kill -9``, the OOM killer) fails only the batch it held, with `WorkerLost`
(the server answers 503 with ``Retry-After``, which Flow-GRPO's client retries), and is replaced; the other workers
go on.

**Deadlines.** A batch gets ``deadline`` seconds in its worker. Past it the worker is *stuck*: the batch fails with
`DeadlineExceeded` (the micro-batcher scores the batch's other requests apart and answers the late request's images
with error entries), the worker process is killed, and a fresh one replaces it; until the fresh one has loaded the
model the worker is reported stuck (`WorkerPool.report`, shown by ``/health``) and takes no batch. A thread cannot
be killed: in thread mode the stuck thread is reported until it ends, and a fresh thread takes the next batches.

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
from dataclasses import dataclass
from typing import Any

from logicval_hf.serve.health import without_paths
from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.worker import Sample, ScoringSettings, score_batch, start_worker, warm_up

__all__ = ["DeadlineExceeded", "WorkerLost", "WorkerPool", "stop_helpers"]

log = logging.getLogger("logicval.serve")


class WorkerLost(RuntimeError):
    """A worker process died while it held the batch (answered with 503 and ``Retry-After``)."""


class DeadlineExceeded(RuntimeError):
    """A batch ran past the pool's deadline; its worker was replaced."""

    def __init__(self, deadline: float):
        super().__init__(f"scoring took longer than the server's deadline of {deadline:g} s (the worker was "
                         "replaced)")
        self.deadline = deadline


@dataclass(eq=False)
class _Slot:
    """One worker: its executor (one process, or one thread) and what it is doing."""

    number: int
    executor: Executor
    pid: int | None = None
    busy_since: float | None = None
    images: int = 0
    ready: bool = True  # False while a replacement loads the model


@dataclass
class _Stuck:
    worker: int
    pid: int | None
    since: float
    images: int


class WorkerPool:
    """Scoring workers: ``workers`` processes, or one thread of this process when ``workers == 0``.

    Args:
        settings: what every worker scores with.
        workers: worker processes (0: a thread here).
        deadline: seconds a batch may take in a worker before the worker is replaced (None: no deadline).
    """

    def __init__(self, settings: ScoringSettings, workers: int = 1, deadline: float | None = None):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be a whole number >= 0, got {workers!r}")
        if deadline is not None and not 0 < deadline < float("inf"):
            raise ValueError(f"deadline must be a positive number of seconds, got {deadline!r}")
        self.settings = settings
        self.workers = workers
        self.deadline = deadline
        self.restarts = 0
        self._lock = threading.Lock()
        self._slots: list[_Slot] = [_Slot(k, self._new_executor()) for k in range(self.slots)]
        self._stuck: list[_Stuck] = []
        self._closed = False
        self._free: asyncio.Condition | None = None
        self._tasks: set[asyncio.Task] = set()

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
        return ProcessPoolExecutor(1, mp_context=ctx, initializer=start_worker, initargs=(self.settings, os.getpid()))

    def _pid_of(self, executor: Executor) -> int | None:
        if self.workers == 0:
            return os.getpid()
        processes = getattr(executor, "_processes", None) or {}  # where ProcessPoolExecutor keeps them
        return next(iter(processes), None)

    def pids(self) -> list[int]:
        """The processes that score: the workers', or this process's in thread mode."""
        if self.workers == 0:
            return [os.getpid()]
        return sorted(p for p in (self._pid_of(s.executor) for s in self._slots) if p is not None)

    def report(self) -> dict[str, list[dict[str, Any]]]:
        """``{"busy": [...], "stuck": [...]}``: each worker scoring a batch (``worker``, ``pid``, ``busy_s``,
        ``images``), each worker past its deadline that has not been replaced yet (``worker``, ``pid``,
        ``stuck_s``: seconds since it was given up, ``images``)."""
        now = time.monotonic()
        busy = [{"worker": s.number, "pid": s.pid, "busy_s": round(now - s.busy_since, 1), "images": s.images}
                for s in self._slots if s.busy_since is not None]
        stuck = [{"worker": s.worker, "pid": s.pid, "stuck_s": round(now - s.since, 1), "images": s.images}
                 for s in self._stuck]
        return {"busy": busy, "stuck": stuck}

    def _condition(self) -> asyncio.Condition:
        if self._free is None:
            self._free = asyncio.Condition()
        return self._free

    async def _acquire(self, images: int) -> _Slot:
        free = self._condition()
        async with free:
            while True:
                if self._closed:
                    raise WorkerLost("the scoring workers have been stopped")
                for s in self._slots:
                    if s.busy_since is None and s.ready:
                        s.busy_since, s.images = time.monotonic(), images
                        return s
                await free.wait()

    async def _release(self, slot: _Slot) -> None:
        free = self._condition()
        async with free:
            slot.busy_since, slot.images = None, 0
            free.notify_all()

    async def _call(self, slot: _Slot, deadline: float | None, fn: Any, *args: Any) -> Any:
        executor = slot.executor
        future = asyncio.get_running_loop().run_in_executor(executor, fn, *args)
        try:
            if deadline is None:
                result = await future
            else:
                result = await asyncio.wait_for(asyncio.shield(future), deadline)
        except TimeoutError:
            await self._give_up(slot, future)
            raise DeadlineExceeded(deadline) from None  # type: ignore[arg-type]  # set: a timeout needs one
        except BrokenProcessPool:
            self._replace(slot, executor, "died")
            raise WorkerLost("a scoring worker died while it held this request; retry it") from None
        slot.pid = self._pid_of(slot.executor)
        return result

    def _replace(self, slot: _Slot, broken: Executor, why: str) -> None:
        with self._lock:
            if slot.executor is not broken or self._closed:  # replaced already, or the pool was closed
                return
            self.restarts += 1
            log.warning("scoring worker %d (pid %s) %s; starting a fresh one (restart %d)", slot.number, slot.pid,
                        why, self.restarts)
            slot.executor = self._new_executor()
        threading.Thread(target=_dispose, args=(broken, self.workers, 1.0), name="logicval-dispose",
                         daemon=True).start()

    async def _give_up(self, slot: _Slot, future: asyncio.Future) -> None:
        """Past the deadline: record the worker as stuck, kill and replace it (process mode; a thread is left to
        end), and warm the fresh one up before it takes a batch."""
        future.add_done_callback(_retrieve)
        stuck = _Stuck(slot.number, slot.pid, time.monotonic(), slot.images)
        self._stuck.append(stuck)
        if self.workers == 0:  # a thread cannot be killed: a fresh one takes the next batches
            future.add_done_callback(lambda _: self._stuck.remove(stuck) if stuck in self._stuck else None)
            self._replace(slot, slot.executor, f"passed the deadline of {self.deadline:g} s")
            return
        slot.ready = False
        old, pid = slot.executor, self._pid_of(slot.executor)
        self._replace(slot, old, f"passed the deadline of {self.deadline:g} s scoring {slot.images} images")
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        task = asyncio.get_running_loop().create_task(self._warm(slot, stuck))
        self._tasks.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(self._tasks.discard)

    async def _warm(self, slot: _Slot, stuck: _Stuck) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(slot.executor, warm_up, self.settings)
        except Exception as e:  # noqa: BLE001 - the next batch on it reports what is wrong
            if self._closed:  # the server stopped while the replacement started
                return
            log.error("the replacement of scoring worker %d could not warm up: %s", slot.number,
                      without_paths(f"{type(e).__name__}: {e}"))
        free = self._condition()
        async with free:
            slot.pid, slot.ready = self._pid_of(slot.executor), True
            if stuck in self._stuck:
                self._stuck.remove(stuck)
            free.notify_all()

    async def warm_up(self) -> list[dict[str, Any]]:
        """Warm every worker up (one call each, no deadline: loading a model may take long).

        Raises:
            WorkerLost: a worker died while loading.
            Exception: what the backend raised when loading its model.
        """
        return list(await asyncio.gather(*(self._call(s, None, warm_up, self.settings) for s in self._slots)))

    async def run(self, samples: Sequence[Sample]) -> list[SampleResult]:
        """The results of one micro-batch (`logicval_hf.serve.worker.score_batch`) from the first free worker.

        Raises:
            WorkerLost: the worker holding it died.
            DeadlineExceeded: it took longer than ``deadline`` (the worker has been replaced).
        """
        slot = await self._acquire(len(samples))
        try:
            return await self._call(slot, self.deadline, score_batch, list(samples), self.settings)
        finally:
            await self._release(slot)

    def close(self, timeout: float = 1.0) -> None:
        """Stop every process this pool started, within about ``timeout`` + 2 seconds (module docstring): a
        batch still running after ``timeout`` is abandoned (its requests have been answered 503 by then)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            executors, self._slots = [s.executor for s in self._slots], []
        _dispose_all(executors, self.workers, timeout)
        # the executors' queues hold named semaphores, unlinked when collected: now, before the resource tracker
        # stops (it would report them as leaked, on the server's stderr)
        del executors
        gc.collect()
        if self.workers:
            stop_helpers()


def _retrieve(future: asyncio.Future) -> None:
    """Read a given-up batch's outcome (the worker was killed: BrokenProcessPool), so nothing reports it unread."""
    if not future.cancelled():
        future.exception()


def _dispose(executor: Executor, workers: int, timeout: float) -> None:
    _dispose_all([executor], workers, timeout)


def _dispose_all(executors: list[Executor], workers: int, timeout: float) -> None:
    """Shut executors down; their processes are asked to finish, then terminated, then killed, each step waited on
    with a deadline (``timeout`` for the first)."""
    processes = [p for e in executors for p in (getattr(e, "_processes", None) or {}).values()]
    managers = [m for e in executors if (m := getattr(e, "_executor_manager_thread", None)) is not None]
    for e in executors:
        e.shutdown(wait=False, cancel_futures=True)
    if not workers:
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
    for manager in managers:  # it exits once its workers have, letting go of the executor's queues
        manager.join(1.0)


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
