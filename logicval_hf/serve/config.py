"""The reward server's configuration: one frozen value the CLI, the app and the Ray deployment share, and the rule
that sizes the worker pool to the machine.

**Workers.** ``logicval serve`` without ``--workers`` starts `default_workers` processes: one per core this process
may use (`usable_cores`: the CPUs of its affinity mask, ``os.sched_getaffinity``, further limited by a cgroup CPU
quota such as ``docker --cpus`` or a Kubernetes CPU limit), at most `MAX_DEFAULT_WORKERS`. Each clevr worker then
gets ``cores // workers`` onnxruntime threads (at least 1), so workers x threads never exceeds the cores. Processes,
not threads, because a worker's images/s hardly grow with threads (a batch's decode, second look and solver calls
are serial) while a second process doubles them; the cap because each worker holds its own model and solver
(about 0.4 GB resident).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from logicval_hf.serve.protocol import Limits
from logicval_hf.serve.reward_modes import check_reward_mode
from logicval_hf.serve.worker import ScoringSettings

__all__ = ["DEFAULT_DEADLINE", "DEFAULT_INFLIGHT_BYTES", "DEFAULT_PORT", "DEFAULT_READ_TIMEOUT", "MAX_DEFAULT_WORKERS",
           "ServeConfig", "cgroup_cpu_quota", "default_workers", "usable_cores"]

#: Flow-GRPO's client posts to http://127.0.0.1:18085
DEFAULT_PORT = 18085
#: the most worker processes the default starts (module docstring); ``--workers N`` sets any number
MAX_DEFAULT_WORKERS = 8
#: seconds a micro-batch may take in a worker before the worker is replaced and its images answered with errors
#: (a batch of 64 CLEVR images takes about 1.5 s; Flow-GRPO's client gives up on a request after 120 s)
DEFAULT_DEADLINE = 120.0
#: bytes of request bodies the server holds at once, read, parsed or scored (503 with Retry-After beyond)
DEFAULT_INFLIGHT_BYTES = 256 * 2**20
#: seconds a client may leave a connection without sending (a request not started, a body not finished)
DEFAULT_READ_TIMEOUT = 30.0


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """The CPUs a cgroup quota allows this process (cgroup v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``), None without
    a quota."""
    v2 = _read(f"{root}/cpu.max").split()
    if v2:
        quota, period = [*v2, "100000"][:2]
    else:
        quota, period = _read(f"{root}/cpu/cpu.cfs_quota_us"), _read(f"{root}/cpu/cpu.cfs_period_us")
    try:
        q, p = float(quota), float(period)
    except ValueError:  # "max", or no such file: no quota
        return None
    return q / p if q > 0 and p > 0 else None


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def usable_cores() -> int:
    """The cores this process may use: its affinity mask's CPUs, limited by a cgroup CPU quota (rounded up)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def default_workers(cores: int | None = None) -> int:
    """``logicval serve``'s worker processes when ``--workers`` is not given: one per usable core, at most
    `MAX_DEFAULT_WORKERS` (module docstring)."""
    return max(1, min(cores if cores is not None else usable_cores(), MAX_DEFAULT_WORKERS))


@dataclass(frozen=True)
class ServeConfig:
    """What ``logicval serve`` runs.

    Attributes:
        host, port: where to listen (127.0.0.1 unless told otherwise).
        backend: the perception backend (``clevr``; ``neural`` for GenEval metadata, which needs the coco domain;
            ``given`` reads scene-graph JSON instead of images).
        backend_settings: keyword settings for the backend (e.g. ``{"second_look": False}``: no second look at
            uncertain peaks, a third faster).
        workers: scoring worker processes (0: a thread of the serving process, as a Ray Serve replica does; the
            CLI's default is `default_workers`).
        token: when set, every scoring request needs ``Authorization: Bearer <token>``.
        reward: ``scores`` of LogicVal items: ``fraction`` (constraints satisfied) or ``probability``.
        limits: the size caps (images per request, pixels per image, bytes).
        max_batch: images per micro-batch.
        max_queue: images allowed to wait before requests get 503.
        batch_wait_ms: how long an idle server waits to merge requests sent together.
        benchmark_seed: the benchmark whose ``id``\\ s items may name.
        prompts: a file or folder of prompts with their specs (``--prompts``; `logicval_hf.serve.prompts`): items
            that carry only a prompt, and Flow-Factory's prompt-only requests, are scored against the spec found
            under the prompt's text.
        deadline: seconds a micro-batch may take in a worker; past it the worker is replaced and the late
            request's images get error entries (None: no deadline).
        max_inflight_bytes: request bodies held at once, in bytes (at least ``limits.max_bytes``); a request
            that would pass it gets 503 with ``Retry-After``.
        read_timeout: seconds a connection may stay silent while the server waits on the client (before a
            request, within its headers or its body); past it the connection is closed (a body: 408). None: no
            timeout.
        min_confidence: the scene confidence, in [0, 1], below which an image is unread: reported with the
            reason, in no group, never a pass or a failure (None: every image is scored).
    """

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    backend: str = "clevr"
    backend_settings: Mapping[str, Any] = field(default_factory=dict)
    workers: int = 1
    token: str | None = None
    reward: str = "fraction"
    limits: Limits = field(default_factory=Limits)
    max_batch: int = 64
    max_queue: int = 1024
    batch_wait_ms: float = 2.0
    benchmark_seed: int = 509
    prompts: str | None = None
    deadline: float | None = DEFAULT_DEADLINE
    max_inflight_bytes: int = DEFAULT_INFLIGHT_BYTES
    read_timeout: float | None = DEFAULT_READ_TIMEOUT
    min_confidence: float | None = None

    def __post_init__(self) -> None:
        check_reward_mode(self.reward)
        object.__setattr__(self, "min_confidence", self.scoring.min_confidence)  # checked: a number in [0, 1]
        for name in ("deadline", "read_timeout"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf")):
                raise ValueError(f"{name} must be a positive number of seconds or None, got {v!r}")
        if isinstance(self.max_inflight_bytes, bool) or not isinstance(self.max_inflight_bytes, int) \
                or self.max_inflight_bytes < self.limits.max_bytes:
            raise ValueError(f"max_inflight_bytes must be a whole number >= max_bytes ({self.limits.max_bytes:,}), "
                             f"got {self.max_inflight_bytes!r}")
        if not isinstance(self.port, int) or not 0 <= self.port < 65536:
            raise ValueError(f"port must be 0..65535, got {self.port!r}")
        if self.token is not None and not self.token.strip():
            raise ValueError("token must not be empty")
        if self.batch_wait_ms < 0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {self.batch_wait_ms!r}")

    @property
    def scoring(self) -> ScoringSettings:
        return ScoringSettings(self.backend, dict(self.backend_settings), self.reward, self.min_confidence)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (for a Ray deployment's arguments)."""
        d = asdict(self)
        d["backend_settings"] = dict(self.backend_settings)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ServeConfig:
        d = dict(d)
        if isinstance(d.get("limits"), Mapping):
            d["limits"] = Limits(**d["limits"])
        return cls(**d)

    def replace(self, **changes: Any) -> ServeConfig:
        return replace(self, **changes)

    def sharing_cores(self, cores: float) -> ServeConfig:
        """This configuration with the clevr parser's onnxruntime threads set to ``cores`` (at least 1) when the
        settings do not name them: onnxruntime sizes its own pool to the whole machine in every process, so N
        workers (or replicas) on one machine would each spin as many threads as there are cores."""
        if self.backend != "clevr" or "threads" in self.backend_settings:
            return self
        return self.replace(backend_settings={**self.backend_settings, "threads": max(1, int(cores))})
