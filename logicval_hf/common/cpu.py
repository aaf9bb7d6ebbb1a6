"""CPU time, for the job's and the benchmarks' reports (wall clock alone hides how loaded the machine was)."""

from __future__ import annotations


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and its finished children (worker pools)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
