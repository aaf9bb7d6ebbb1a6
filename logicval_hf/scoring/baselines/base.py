"""The common interface of the baseline metrics (paper §4.3): CLIPScore, VLM-Judge, Soft-TIFA.

Every metric scores images against prompts or benchmark rows::

    metric.score(images, items) -> list[float | None]        # one score per image
    metric.evaluate(images, items) -> list[BaselineResult]    # score + details per image

``images`` are PIL images, ``uint8`` arrays or paths (read by `logicval_hf.perception.load_image`); ``items``
are plain prompt strings or benchmark rows (``logicval_hf.benchmark.sampler`` rows: the prompt is read from
``prompt_field``, ``"full_prompt_short"`` by default; Soft-TIFA reads the row's ``"subquestions"``). A score
is ``None`` only when no honest score exists (an unparseable judge answer, a failed request under
``on_error="record"``); ``details["reason"]`` then says why.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.perception.images import to_pil

__all__ = ["BaselineError", "BaselineMetric", "BaselineResult", "BaselineSetupError", "prompt_text", "to_pil",
           "check_pairs"]

#: The prompt column of a benchmark row used by default (the prompt the image was generated from).
DEFAULT_PROMPT_FIELD = "full_prompt_short"


class BaselineError(RuntimeError):
    """A baseline metric cannot run: bad configuration (missing API key, unknown model) or bad input."""


class BaselineSetupError(BaselineError, ValueError):
    """A baseline cannot be built as asked: an unknown setting, weights that cannot be found, an endpoint that
    cannot be reached (also a `ValueError`: bad input, which the command line reports in one line)."""


@dataclass
class BaselineResult:
    """One image's score (``None`` when there is none; see ``details["reason"]``) and what led to it."""

    score: float | None
    details: dict[str, Any] = field(default_factory=dict)




def prompt_text(item: Any, field_name: str = DEFAULT_PROMPT_FIELD) -> str:
    """The prompt of an item: the string itself, ``item[field_name]`` of a benchmark row's columns, or that
    attribute of a typed row (`logicval_hf.benchmark.rows.BenchmarkRow`)."""
    if isinstance(item, str):
        return item
    value = getattr(item, field_name, None) if not isinstance(item, Mapping) else None
    if isinstance(value, str):
        return value
    if isinstance(item, Mapping):
        if field_name in item and isinstance(item[field_name], str):
            return item[field_name]
        if "prompt" in item and isinstance(item["prompt"], str):
            return item["prompt"]
        raise BaselineError(f"row has no prompt column {field_name!r} (columns: {sorted(item)[:12]})")
    raise BaselineError(f"expected a prompt string or a benchmark row, got {type(item).__name__}")


def check_pairs(images: Sequence[Any], items: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    images, items = list(images), list(items)
    if len(images) != len(items):
        raise ValueError(f"{len(images)} images but {len(items)} prompts/rows: they are scored pairwise")
    return images, items


class BaselineMetric(ABC):
    """A reference-free image-text alignment metric."""

    #: short name used in reports
    name: str = "baseline"

    @abstractmethod
    def evaluate(self, images: Sequence[Any], items: Sequence[Any]) -> list[BaselineResult]:
        """Score each ``images[i]`` against ``items[i]``, with details."""

    def score(self, images: Sequence[Any], items: Sequence[Any]) -> list[float | None]:
        """Scores only (``None`` where `evaluate` found no honest score)."""
        return [r.score for r in self.evaluate(images, items)]

    __call__ = score
