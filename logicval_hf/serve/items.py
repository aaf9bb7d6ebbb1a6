"""What one image is scored against: a request's metadata item, read into a `Task`.

An item is one of

* **GenEval metadata** (``{"tag", "include", "exclude"?, "prompt"}``, the lines of GenEval's
  ``evaluation_metadata.jsonl`` that Flow-GRPO sends): a spec in the ``coco`` domain through the GenEval importer
  (`logicval_hf.benchmark.importers.geneval.spec_for`), scored on detections; grouped by its tag.
* **a LogicVal item**: ``{"spec_json": "..."}`` (a benchmark or `logicval build-prompts` row), ``{"id":
  "1SAT-0001"}`` (a benchmark prompt, resolved by the server before scoring), ``{"spec": {...}}`` or a spec dict
  itself (``{"n", "constraints"}``). Optional keys: ``tag`` (its group; default: its constraint classes),
  ``reward`` (a reward mode, `logicval_hf.serve.reward_modes`), ``label`` (``"SAT"``/``"UNSAT"``, saves a solver
  call), ``prompt`` and ``id`` (carried, not read; a prompt-only item is looked up, `logicval_hf.serve.prompts`).

`read_item` raises `ItemError` (a `ValueError`) naming what is wrong; the server turns it into the sample's
``errors`` entry.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.serve.reward_modes import check_reward_mode

__all__ = ["ItemError", "LOGICVAL_KEYS", "SPEC_KEYS", "Task", "benchmark_index", "is_geneval", "needs_benchmark_id",
           "read_item", "resolve_ids"]

#: keys a LogicVal item may carry
LOGICVAL_KEYS = ("spec_json", "spec", "id", "tag", "reward", "label", "prompt", "n", "constraints", "domain",
                 "score_threshold", "package")
#: the keys by which a LogicVal item carries its spec
SPEC_KEYS = ("spec_json", "spec", "constraints")


class ItemError(ValueError):
    """A metadata item cannot be scored (unknown kind, malformed spec, unknown class...)."""


@dataclass(frozen=True)
class Task:
    """One image's question.

    Attributes:
        kind: ``"geneval"`` or ``"logicval"``.
        spec: the spec the verdict is decided on (for GenEval: GenEval's rule, through the importer).
        groups: the groups the image's rewards are reported under.
        reward: a reward mode (`logicval_hf.serve.reward_modes`) of LogicVal items; GenEval's partial score is
            its own.
        label: the spec's SAT/UNSAT label when the item gave it.
        metadata: the GenEval metadata (GenEval items only), for the partial score.
    """

    kind: str
    spec: Spec
    groups: tuple[str, ...]
    reward: str = "fraction"
    label: str | None = None
    metadata: Mapping[str, Any] | None = None

    @property
    def judge_label(self) -> str | None:
        """The label the judge is given (None: solved within the default time budget): the item's own; ``SAT`` for
        GenEval metadata, whose verdict is whether the detections satisfy every constraint whatever the spec's
        label (an UNSAT line is never correct), so that the label only saves a solver call."""
        return "SAT" if self.kind == "geneval" else self.label


def is_geneval(item: Any) -> bool:
    return isinstance(item, Mapping) and ("include" in item or "exclude" in item)


def needs_benchmark_id(item: Any) -> bool:
    """A LogicVal item that names a benchmark prompt by ``id`` and carries no spec of its own."""
    return (isinstance(item, Mapping) and isinstance(item.get("id"), str) and not is_geneval(item)
            and not any(k in item for k in SPEC_KEYS))


def _geneval(item: Mapping[str, Any]) -> Task:
    from logicval_hf.benchmark.importers.geneval import spec_for

    try:
        spec = spec_for(item)
    except ValueError as e:
        raise ItemError(f"GenEval metadata: {e}") from None
    return Task("geneval", spec, (item["tag"],), metadata=item)


def _spec_of(item: Mapping[str, Any]) -> Any:
    if "spec_json" in item:
        return item["spec_json"]
    if "spec" in item:
        return item["spec"]
    if "constraints" in item:
        return {k: item[k] for k in ("n", "constraints", "domain", "score_threshold") if k in item}
    if "id" in item:
        raise ItemError(f"id {item['id']!r} is not a benchmark prompt this server knows")
    raise ItemError("a metadata item must be GenEval metadata (with 'include'), or a LogicVal item with "
                    f"'spec_json', 'spec', 'id' or 'constraints'; got keys {sorted(item)[:8]}")


def read_item(item: Any, default_reward: str = "fraction") -> Task:
    """The `Task` of one metadata item.

    Args:
        item: the item as the request sent it (see the module docstring).
        default_reward: the server's reward mode for LogicVal items without a ``reward`` key.
    Returns:
        The task.
    Raises:
        ItemError: the item is not one of the admitted kinds, or its spec is malformed.
    """
    if isinstance(item, str):  # a spec's JSON text on its own
        item = {"spec_json": item}
    if not isinstance(item, Mapping):
        raise ItemError(f"a metadata item must be a dict, got {type(item).__name__}")
    if is_geneval(item):
        return _geneval(item)
    unknown = [k for k in item if k not in LOGICVAL_KEYS]
    if unknown:
        raise ItemError(f"unknown keys {unknown} in a LogicVal item; expected {list(LOGICVAL_KEYS[:6])}")
    try:
        spec = as_spec(_spec_of(item))
    except ItemError:
        raise
    except ValueError as e:
        raise ItemError(str(e) if str(e).startswith("spec") else f"spec: {e}") from None
    reward = item.get("reward", default_reward)
    try:
        check_reward_mode(reward)
    except ValueError as e:
        raise ItemError(str(e)) from None
    label = item.get("label")
    if label not in (None, "SAT", "UNSAT"):
        raise ItemError(f"label must be 'SAT' or 'UNSAT', got {label!r}")
    tag = item.get("tag")
    if tag is not None and not isinstance(tag, str):
        raise ItemError(f"tag must be a string, got {tag!r}")
    groups = (tag,) if tag else tuple(dict.fromkeys(c.cls for c in spec.constraints))
    return Task("logicval", spec, groups, reward, label)


@functools.lru_cache(maxsize=2)
def benchmark_index(seed: int = 509) -> dict[str, dict[str, Any]]:
    """``{id: {"spec_json", "label"}}`` of the benchmark built with ``seed`` (built once, ~15 s, then read from the
    user-level cache: `logicval_hf.benchmark.rows.typed_benchmark`): the items an ``id`` stands for."""
    from logicval_hf.benchmark.rows import typed_benchmark

    return {row.id: {"spec_json": row.spec_json, "label": row.label} for row in typed_benchmark(seed)}


def resolve_ids(items: Sequence[Any], seed: int = 509) -> list[Any]:
    """The items with every benchmark ``id`` (`needs_benchmark_id`) given its spec and label; an unknown id is left
    as it is (`read_item` then names it)."""
    if not any(needs_benchmark_id(x) for x in items):
        return list(items)
    index = benchmark_index(seed)
    return [{**x, **index[x["id"]]} if needs_benchmark_id(x) and x["id"] in index else x for x in items]
