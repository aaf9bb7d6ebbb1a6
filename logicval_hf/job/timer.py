"""Wall-clock and CPU seconds per stage of the main job (the report's *Timings* table)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from logicval_hf.common.cpu import cpu_seconds

__all__ = ["Stage", "StageTimer"]


class Stage:
    """A stage being timed: `add_cpu` books CPU seconds spent elsewhere on its behalf (worker processes)."""

    def __init__(self, timer: StageTimer, name: str):
        self._timer, self.name = timer, name

    def add_cpu(self, seconds: float) -> None:
        self._timer.add(self.name, cpu=seconds)


class StageTimer:
    """Seconds per named stage: ``wall`` and ``cpu`` (this process's, plus what stages book for their workers).

    A stage timed several times (perception chunk by chunk) adds up; names keep the order they first appear in.
    `finish` closes what is still open and books ``total`` (wall since the timer started; CPU: the sum of the
    stages, since worker processes are not this process's children and their time is booked per stage).
    """

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._open: dict[str, tuple[float, float]] = {}
        self._started = time.perf_counter()

    def add(self, name: str, wall: float = 0.0, cpu: float = 0.0) -> None:
        """Book seconds to ``name`` (creating it at zero: a stage with nothing to do still shows)."""
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    def begin(self, name: str) -> Stage:
        """Start timing ``name`` until `end` (or `finish`)."""
        self._open[name] = (time.perf_counter(), cpu_seconds())
        return Stage(self, name)

    def end(self, name: str) -> None:
        t0, c0 = self._open.pop(name)
        self.add(name, time.perf_counter() - t0, cpu_seconds() - c0)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[Stage]:
        """Time the block as (part of) stage ``name``."""
        stage = self.begin(name)
        try:
            yield stage
        finally:
            self.end(name)

    def finish(self) -> None:
        """End every open stage and book ``total``."""
        for name in list(self._open):
            self.end(name)
        self.wall["total"] = time.perf_counter() - self._started
        self.cpu["total"] = sum(v for k, v in self.cpu.items() if k != "total")
