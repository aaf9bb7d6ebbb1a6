"""What a repair is: its edits, its cost model and the JSON a repair is written as."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.contract.scene import Scene

#: the four operations of self-correcting pipelines (SLD, GenArtist), in the order a repair lists its edits
EDIT_KINDS = ("set", "move", "remove", "add")
#: every edit costs 1 unless ``costs=`` says otherwise
DEFAULT_COSTS: Mapping[str, int] = {"set": 1, "move": 1, "add": 1, "remove": 1}


def check_costs(costs: Mapping[str, Any] | None) -> dict[str, int]:
    """The cost of each edit kind: the defaults with ``costs`` over them (positive integers, known keys only)."""
    out = dict(DEFAULT_COSTS)
    if costs is None:
        return out
    if not isinstance(costs, Mapping):
        raise ValueError(f"costs must map edit kinds to positive integers ({', '.join(DEFAULT_COSTS)}), "
                         f"got {type(costs).__name__}")
    for key, value in costs.items():
        if key not in DEFAULT_COSTS:
            close = difflib.get_close_matches(str(key), list(DEFAULT_COSTS), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"unknown cost key {key!r}; {hint}the allowed keys are {', '.join(DEFAULT_COSTS)}")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"cost {key}={value!r} must be a positive integer (keys: {', '.join(DEFAULT_COSTS)})")
        out[key] = value
    return out


def parse_costs(text: str) -> dict[str, int]:
    """``"set=1,move=2"`` (the CLI's ``--costs``) as a costs mapping, checked like `check_costs`."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not value.strip().lstrip("-").isdigit():
            raise ValueError(f"--costs: {part!r} is not KIND=INTEGER; the allowed kinds are {', '.join(DEFAULT_COSTS)}")
        out[key.strip()] = int(value)
    return check_costs(out)


@dataclass(frozen=True)
class Edit:
    """One operation on the input scene.

    ``kind``: ``"set"`` (``attribute`` of ``object`` from ``old`` to ``new``), ``"move"`` (``object`` to ``bbox``,
    its size kept), ``"remove"`` (``object``) or ``"add"`` (an object with the attributes ``new`` at ``bbox``;
    ``object`` is None). ``object`` is the index in the input scene.
    """

    kind: str
    object: int | None = None
    attribute: str | None = None
    old: str | None = None
    new: str | Mapping[str, str] | None = None
    bbox: tuple[float, float, float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every field, None where it does not apply (one shape for every kind)."""
        return {"kind": self.kind, "object": self.object, "attribute": self.attribute, "old": self.old,
                "new": dict(self.new) if isinstance(self.new, Mapping) else self.new,
                "bbox": list(self.bbox) if self.bbox is not None else None}


@dataclass(frozen=True)
class Repair:
    """The cheapest edits after which a scene satisfies a spec (`logicval_hf.repairs.repair`).

    ``satisfiable``: the spec's label (for an UNSAT spec the right image is empty: every object is removed, and
    ``core`` is a minimal unsatisfiable core, as `solve` gives it). ``cost``: the edits' total cost under ``costs``;
    ``optimal``: the solver proved that no cheaper repair exists (False only when the time budget ended first).
    ``scene``: the input with the edits applied; ``instructions``: one English sentence per edit.
    """

    satisfiable: bool
    cost: int
    optimal: bool
    edits: tuple[Edit, ...]
    scene: Scene
    instructions: tuple[str, ...]
    core: tuple[int, ...] | None = None
    count: str = "strict"
    costs: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_COSTS))

    @property
    def label(self) -> str:
        return "SAT" if self.satisfiable else "UNSAT"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "satisfiable": self.satisfiable,
            "core": list(self.core) if self.core is not None else None,
            "cost": self.cost,
            "optimal": self.optimal,
            "count": self.count,
            "costs": dict(self.costs),
            "edits": [e.to_dict() for e in self.edits],
            "instructions": list(self.instructions),
            "scene": self.scene.to_dict(),
        }


def apply_edits(scene: Scene, edits: tuple[Edit, ...] | list[Edit]) -> Scene:
    """``scene`` with ``edits`` applied: edited objects in their input order (new values, new boxes; their perceived
    probabilities dropped), removed ones gone, added ones after them."""
    from logicval_hf.contract.scene import SceneObject

    values = [dict(o.attributes) for o in scene.objects]
    bboxes = [o.bbox for o in scene.objects]
    edited: set[int] = set()
    gone: set[int] = set()
    added: list[SceneObject] = []
    for e in edits:
        if e.kind == "add":
            if e.bbox is None or not isinstance(e.new, Mapping):
                raise ValueError("an add edit needs the new object's attributes and bbox")
            added.append(SceneObject(dict(e.new), e.bbox))
            continue
        if e.object is None or not 0 <= e.object < len(scene.objects):
            raise ValueError(f"edit {e.kind}: object {e.object!r} is not an index of the scene's objects")
        edited.add(e.object)
        if e.kind == "remove":
            gone.add(e.object)
        elif e.kind == "set" and e.attribute is not None and isinstance(e.new, str):
            values[e.object][e.attribute] = e.new
        elif e.kind == "move" and e.bbox is not None:
            bboxes[e.object] = e.bbox
        else:
            raise ValueError(f"malformed {e.kind} edit: {e.to_dict()}")
    kept = [SceneObject(values[i], bboxes[i], o.score, None if i in edited else o.probs)
            for i, o in enumerate(scene.objects) if i not in gone]
    return Scene(scene.image_size, tuple(kept + added), scene.domain)
