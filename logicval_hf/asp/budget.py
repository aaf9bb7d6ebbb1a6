"""Time budgets for labelling specs: a deadline that every solving step checks, and the entry points' defaults.

A budget is wall-clock seconds for one label (its grounding, the satisfiability check, and the witness or every
core-shrinking step). Past it the answer is `SolverTimeout`, never a label the solver has not proved.
"""

from __future__ import annotations

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
        """``ctl.solve`` under the deadline: interrupted (and `SolverTimeout` raised) when the budget runs out."""
        left = self.remaining()
        if left is None:
            return ctl.solve(assumptions=list(assumptions), on_model=on_model, on_core=on_core)
        if left <= 0:
            raise self.expired("solving")
        with ctl.solve(assumptions=list(assumptions), on_model=on_model, on_core=on_core, async_=True) as handle:
            if not handle.wait(left):
                handle.cancel()
                raise self.expired("solving")
            return handle.get()
