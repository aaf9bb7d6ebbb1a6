"""Repair costs as a score: one repair per scored image, and the mean cost overall and per package (the metric's
``repair=True``, the main job's report)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from logicval_hf.asp.solver import Solver
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.repairs.api import repair
from logicval_hf.repairs.model import Repair


def repair_many(items: Iterable[tuple[Spec, Scene | None]], *, count: str = "strict",
                costs: Mapping[str, int] | None = None, timeout: float | None = None,
                solver: Solver | None = None) -> list[Repair | str | None]:
    """The repair of every ``(spec, scene)``: None where there is no scene (a failed generation), the one-line error
    where there is none to give (a scene past the repair's limit, a spec not labelled within the budget).
    ``timeout``: the budget of each repair in seconds, None for none (the metric's convention)."""
    budget = math.inf if timeout is None else timeout
    out: list[Repair | str | None] = []
    for spec, scene in items:
        try:
            out.append(None if scene is None else repair(spec, scene, count=count, costs=costs, timeout=budget,
                                                         solver=solver))
        except ValueError as e:
            out.append(str(e))
    return out


def mean_costs(repairs: Sequence[Repair | str | None], packages: Sequence[str | None]) -> tuple[float | None,
                                                                                               dict[str, float]]:
    """The mean repair cost over the repaired items, and per package."""
    by: dict[str, list[int]] = {}
    for r, p in zip(repairs, packages, strict=True):
        if isinstance(r, Repair) and p is not None:
            by.setdefault(p, []).append(r.cost)
    costs = [r.cost for r in repairs if isinstance(r, Repair)]
    return (statistics.fmean(costs) if costs else None), {p: statistics.fmean(v) for p, v in by.items()}


def sample_fields(r: Repair | str | None) -> dict[str, Any]:
    """What a per-sample entry gains: ``repair_cost``, ``repair_optimal``, ``edits`` and ``instructions`` (None
    without a repair, and then ``repair_error`` saying why when there is a reason)."""
    if not isinstance(r, Repair):
        return {"repair_cost": None, "repair_optimal": None, "edits": None, "instructions": None,
                **({"repair_error": r} if r else {})}
    return {"repair_cost": r.cost, "repair_optimal": r.optimal, "edits": [e.to_dict() for e in r.edits],
            "instructions": list(r.instructions)}


__all__ = ["mean_costs", "repair_many", "sample_fields"]
