"""Time budgets for labelling specs: a deadline that every solving step checks, and the entry points' defaults.

A budget is wall-clock seconds for one label (its grounding, the satisfiability check, and the witness or every
core-shrinking step). Past it the answer is `SolverTimeout`, never a label the solver has not proved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import clingo

from logicval_hf.errors import SolverTimeout

#: The budget of the entry points that label specs for someone waiting (the CLI's ``--timeout`` default, the
#: metric, the Space, the importers): generous for any spec of the shipped benchmarks (the slowest labels in
#: tens of milliseconds), short enough that one hard spec cannot block a worker for long.
DEFAULT_TIMEOUT = 20.0


def check_timeout(timeout: float | None) -> float | None:
    """``timeout`` if it is None or a positive finite number of seconds, else a ValueError naming it."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a positive number of seconds (or None for no budget), got {timeout!r}")
    return float(timeout)


class Deadline:
    """The end of a budget (None: no budget) and the bounded clingo calls made before it."""

    def __init__(self, timeout: float | None, end: float | None = None):
        self.timeout = check_timeout(timeout)
        self.end: float | None
        if end is not None:  # a deadline set elsewhere (a parent process: the monotonic clock is system-wide)
            self.end = end
        else:
            self.end = None if self.timeout is None else time.monotonic() + self.timeout

    def remaining(self) -> float | None:
        return None if self.end is None else self.end - time.monotonic()

    def expired(self, stage: str) -> SolverTimeout:
        return SolverTimeout(f"labelling the spec exceeded its time budget of {self.timeout:g} s (during {stage}); "
                             "pass a larger timeout to try longer", self.timeout)

    def check(self, stage: str) -> None:
        """Raise `SolverTimeout` if the budget is spent (after an uninterruptible step such as grounding)."""
        left = self.remaining()
        if left is not None and left <= 0:
            raise self.expired(stage)

    def solve(self, ctl: clingo.Control, assumptions: Sequence[int], on_model: Callable[[clingo.Model], bool],
              on_core: Callable[[Sequence[int]], None]) -> clingo.SolveResult:
        """``ctl.solve`` under the deadline: interrupted (and `SolverTimeout` raised) when the budget runs out.

        The solve runs in the calling thread; one watchdog thread per process interrupts it at the deadline (an
        asynchronous solve per call would hand over between threads every time, which a loaded machine makes slow).
        """
        if self.end is None:
            return ctl.solve(assumptions=list(assumptions), on_model=on_model, on_core=on_core)
        if self.end - time.monotonic() <= 0:
            raise self.expired("solving")
        ticket = _WATCHDOG.watch(ctl, self.end)
        try:
            result = ctl.solve(assumptions=list(assumptions), on_model=on_model, on_core=on_core)
        finally:
            interrupted = _WATCHDOG.release(ticket)
        if interrupted or result.interrupted:
            if time.monotonic() >= self.end:
                raise self.expired("solving")
            # interrupted by a watch released too late for an earlier solve of this Control: solve again
            return ctl.solve(assumptions=list(assumptions), on_model=on_model, on_core=on_core)
        return result


class _Watchdog:
    """One thread that interrupts each watched solve at its deadline (`Deadline.solve`)."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._watched: dict[int, tuple[float, clingo.Control]] = {}
        self._fired: set[int] = set()
        self._next = 0
        self._thread: threading.Thread | None = None

    def watch(self, ctl: clingo.Control, end: float) -> int:
        with self._lock:
            self._next += 1
            self._watched[self._next] = (end, ctl)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="logicval-deadlines", daemon=True)
                self._thread.start()
            self._lock.notify()
            return self._next

    def release(self, ticket: int) -> bool:
        """Stop watching; whether the solve was interrupted at its deadline."""
        with self._lock:
            self._watched.pop(ticket, None)
            fired = ticket in self._fired
            self._fired.discard(ticket)
            return fired

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._watched:
                    self._lock.wait()
                now = time.monotonic()
                due = [t for t, (end, _) in self._watched.items() if end <= now]
                for t in due:
                    _, ctl = self._watched.pop(t)
                    ctl.interrupt()
                    self._fired.add(t)
                if not due:
                    self._lock.wait(min(end for end, _ in self._watched.values()) - now)


_WATCHDOG = _Watchdog()
