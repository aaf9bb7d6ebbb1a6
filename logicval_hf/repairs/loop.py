"""One round of self-correction, measured: perceived scene -> repair -> the image editor applies the edits ->
perceive the edited image -> verify.

The editor and the perception are passed in (the built-in renderer and a perception backend in the self-correction
benchmark and the main job's report), so this loop knows neither. A scene that already satisfies its spec is not
edited: its verdict stands.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logicval_hf.asp.solver import default_solver
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.repairs.api import repair
from logicval_hf.repairs.model import Repair

#: the image editor: (item id, the repair) -> the edited image
Editor = Callable[[str, Repair], Any]
#: perception of many images at once -> their scenes
Perceiver = Callable[[list[Any]], list[Scene]]
#: images edited and perceived together
CHUNK = 64


@dataclass(frozen=True)
class Correction:
    """One image through one round: its verdict before, its repair, its verdict after."""

    id: str
    label: str
    before_ok: bool
    cost: int
    edits: int
    optimal: bool
    after_ok: bool
    instructions: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Correction:
        return cls(str(d["id"]), str(d["label"]), bool(d["before_ok"]), int(d["cost"]), int(d["edits"]),
                   bool(d["optimal"]), bool(d["after_ok"]), tuple(d.get("instructions", ())))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "before_ok": self.before_ok, "cost": self.cost,
                "edits": self.edits, "optimal": self.optimal, "after_ok": self.after_ok,
                "instructions": list(self.instructions)}


def correct(items: Iterable[tuple[str, Spec, Scene]], edit: Editor, perceive: Perceiver, *, count: str = "strict",
            costs: Mapping[str, int] | None = None, timeout: float | None = None,
            progress: Callable[[int], None] | None = None) -> list[Correction]:
    """Repair each ``(id, spec, perceived scene)``, edit the image of every one that needs it, perceive the edited
    images (``CHUNK`` at a time) and verify them; one `Correction` per item, in input order."""
    solver = default_solver()
    out: list[Correction | None] = []
    pending: list[tuple[int, Spec, Repair]] = []

    def flush() -> None:
        scenes = perceive([edit(r_id(k), r) for k, _, r in pending]) if pending else []
        for (k, spec, r), after in zip(pending, scenes, strict=True):
            ok = solver.verify(spec, after, count=count, label=r.label).ok
            out[k] = Correction(r_id(k), r.label, False, r.cost, len(r.edits), r.optimal, ok, r.instructions)
        if progress is not None and pending:
            progress(len(pending))
        pending.clear()

    ids: list[str] = []

    def r_id(k: int) -> str:
        return ids[k]

    for rid, spec, scene in items:
        ids.append(rid)
        r = repair(spec, scene, count=count, costs=costs, timeout=timeout, solver=solver)
        if not r.edits:  # already right: nothing to edit, the verdict stands
            out.append(Correction(rid, r.label, True, 0, 0, r.optimal, True))
            if progress is not None:
                progress(1)
            continue
        out.append(None)
        pending.append((len(out) - 1, spec, r))
        if len(pending) >= CHUNK:
            flush()
    flush()
    return [c for c in out if c is not None]


def summarise(corrections: Sequence[Correction]) -> dict[str, Any]:
    """Share fixed after one round (SAT and UNSAT apart), mean edits, repair costs and their distribution."""
    def part(items: Sequence[Correction]) -> dict[str, Any]:
        costs = [c.cost for c in items]
        return {
            "n": len(items),
            "right_before": sum(c.before_ok for c in items),
            "fixed": sum(c.after_ok for c in items),
            "fixed_share": sum(c.after_ok for c in items) / len(items) if items else None,
            "mean_edits": statistics.fmean(c.edits for c in items) if items else None,
            "median_cost": statistics.median(costs) if costs else None,
            "costs": {str(k): v for k, v in sorted(Counter(costs).items())},
            "unproven": sum(not c.optimal for c in items),
        }

    return {label: part([c for c in corrections if c.label == label]) for label in ("SAT", "UNSAT")}


__all__ = ["CHUNK", "Correction", "Editor", "Perceiver", "correct", "summarise"]
