"""The job's worker processes: one pool for generation and perception tasks."""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections.abc import Iterator, Sequence
from typing import Any

from logicval_hf.asp.solver import Solver

__all__ = ["WORKER", "Workers", "use_backend"]

#: per-process state of a worker (its solver and started backends by name, generators by (name, seed, size,
#: render settings)); empty in the main process
WORKER: dict[Any, Any] = {}


def _worker_init() -> None:
    # Ctrl-C reaches every process of the terminal's group: the main process ends the run in one line and stops
    # the pool; a worker's own KeyboardInterrupt would only print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    WORKER.clear()
    WORKER["solver"] = Solver()


class Workers:
    """A pool of ``jobs`` processes for generation and perception tasks, started on first use.

    Workers come from a fresh interpreter (``forkserver``, else ``spawn``), never from a fork of this process:
    a forked child inherits locks of threads it does not have (OpenCV's thread pool once perception has run
    here, tqdm's monitor, clingo), which can deadlock it. With ``jobs == 1`` (or few tasks) tasks run here.
    Every task returns ``(result, CPU seconds it used)``.
    """

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._pool: Any = None

    def runs_here(self, n_tasks: int) -> bool:
        """Whether `imap` runs ``n_tasks`` tasks in this process (one job, or too few tasks to pay for a pool):
        then their CPU seconds are this process's own, not to be booked again."""
        return self.jobs <= 1 or n_tasks < 4

    def imap(self, fn: Any, tasks: Sequence[Any], chunksize: int = 2) -> Iterator[Any]:
        if self.runs_here(len(tasks)):
            return map(fn, tasks)
        if self._pool is None:
            methods = mp.get_all_start_methods()
            ctx = mp.get_context("forkserver" if "forkserver" in methods else "spawn")
            self._pool = ctx.Pool(self.jobs, initializer=_worker_init)
        return self._pool.imap(fn, tasks, chunksize=chunksize)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


def use_backend(name: str, backend: Any) -> None:
    """Make ``backend`` the one registered as ``name`` here: a worker process knows only the built-in backends,
    so one registered at run time travels with each task. Its ``init_worker`` runs once per worker process
    (only worker processes have a solver: `_worker_init`)."""
    from logicval_hf import perception

    if name not in perception.BACKENDS or perception.get_backend(name) != backend:
        perception.register_backend(name, backend, replace=True)
    started = WORKER.setdefault("backends", set())
    if "solver" in WORKER and name not in started:
        started.add(name)
        if backend.init_worker is not None:
            backend.init_worker()
