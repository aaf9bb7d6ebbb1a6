"""The reward server's configuration: one frozen value the CLI, the app and the Ray deployment share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from logicval_hf.serve.protocol import REWARD_MODES, Limits
from logicval_hf.serve.worker import ScoringSettings

__all__ = ["DEFAULT_PORT", "ServeConfig"]

#: Flow-GRPO's client posts to http://127.0.0.1:18085
DEFAULT_PORT = 18085


@dataclass(frozen=True)
class ServeConfig:
    """What ``logicval serve`` runs.

    Attributes:
        host, port: where to listen (127.0.0.1 unless told otherwise).
        backend: the perception backend (``clevr``; ``neural`` for GenEval metadata, which needs the coco domain;
            ``given`` reads scene-graph JSON instead of images).
        backend_settings: keyword settings for the backend (e.g. ``{"second_look": False}``: no second look at
            uncertain peaks, a third faster).
        workers: scoring worker processes (0: a thread of the serving process, as a Ray Serve replica does).
        token: when set, every scoring request needs ``Authorization: Bearer <token>``.
        reward: ``scores`` of LogicVal items: ``fraction`` (constraints satisfied) or ``probability``.
        limits: the size caps (images per request, pixels per image, bytes).
        max_batch: images per micro-batch.
        max_queue: images allowed to wait before requests get 503.
        batch_wait_ms: how long an idle server waits to merge requests sent together.
        benchmark_seed: the benchmark whose ``id``\\ s items may name.
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

    def __post_init__(self) -> None:
        if self.reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {list(REWARD_MODES)}, got {self.reward!r}")
        if not isinstance(self.port, int) or not 0 <= self.port < 65536:
            raise ValueError(f"port must be 0..65535, got {self.port!r}")
        if self.token is not None and not self.token.strip():
            raise ValueError("token must not be empty")
        if self.batch_wait_ms < 0:
            raise ValueError(f"batch_wait_ms must be >= 0, got {self.batch_wait_ms!r}")

    @property
    def scoring(self) -> ScoringSettings:
        return ScoringSettings(self.backend, dict(self.backend_settings), self.reward)

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
