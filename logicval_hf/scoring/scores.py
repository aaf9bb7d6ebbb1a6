"""From verdicts to scores: the LogicVal score, the count-relaxed score, UNSAT abstention and breakdowns.

A *record* is one scored image: the spec it was generated for (with its benchmark package and label), the
verdicts under both count modes and the scene they were reached on. `Record.to_sample` writes it as one
``per_sample`` entry (the metric's output, the main job's verdict files) and `Record.from_sample` reads such an
entry back. `aggregate` turns records into the paper's tables:

* ``logicval_score``: fraction of images whose verdict is ok (strict: exactly n objects, every constraint;
  UNSAT specs: the empty scene);
* ``relaxed_score``: the same with the object count ignored (paper §5.4);
* ``abstention_rate``: on UNSAT specs, the fraction of empty scenes (paper §5.2);
* breakdowns per package, per class and per template (single-constraint specs, as in the paper's Figure 2
  and Appendix H.2), per constraint class over all constraints, and per logical operator (∃, ∀, →, count);
* ``by_load``: success on SAT specs per *compositional load* (Imag-Eval): the number of object instances plus
  the number of constraints that must hold at once, ``n + m`` (keys are the loads as strings, in increasing
  order).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.asp.solver import Verdict
from logicval_hf.contract.catalog import Template, load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec

OPERATORS = ("exists", "forall", "implies", "count")


@functools.cache
def operators_of(template_id: str) -> tuple[str, ...]:
    """Logical operators a template's formula uses (∃, ∀, →, count), in a fixed order."""
    t: Template = load_catalog().template(template_id)
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            op = node.get("op")
            if op in ("exists", "forall", "implies", "count"):
                found.add(op)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(t.formula)
    return tuple(op for op in OPERATORS if op in found)


@dataclass(frozen=True)
class Record:
    """One scored image: ``scene`` is the scene graph the verdicts were reached on (None: no image, a failed
    generation)."""

    spec: Spec
    label: str
    strict: Verdict
    relaxed: Verdict
    package: str | None = None
    id: str | None = None
    scene: Scene | None = field(default=None, compare=False)

    @property
    def abstained(self) -> bool:
        return self.strict.n_objects == 0

    @property
    def load(self) -> int:
        """Compositional load of the spec: object instances plus constraints that must hold at once."""
        return compositional_load(self.spec)

    @property
    def confidence(self) -> float | None:
        """The perception backend's probability that the scene graph is right (`Scene.confidence`), if any."""
        return None if self.scene is None else self.scene.confidence

    def to_sample(self, probs: bool = False) -> dict[str, Any]:
        """The record as one ``per_sample`` entry: ``id``, ``package``, ``label``, ``ok``, ``relaxed_ok``,
        ``count_ok``, ``violated``, ``n_objects``, ``load``, ``confidence`` (the perception backend's
        probability that the scene graph is right; None when it gives none) and ``scene`` (its objects'
        ``probs`` only when ``probs``)."""
        scene = scene_sample(self.scene, probs)
        return {
            "id": self.id,
            "package": self.package,
            "label": self.label,
            "ok": self.strict.ok,
            "relaxed_ok": self.relaxed.ok,
            "count_ok": self.strict.count_ok,
            "violated": list(self.strict.violated),
            "n_objects": self.strict.n_objects if self.scene is not None else None,
            "load": self.load,
            "confidence": self.confidence,
            "scene": scene,
        }

    @classmethod
    def from_sample(cls, spec: Spec, sample: Mapping[str, Any]) -> Record:
        """The record a `to_sample` entry describes, for ``spec`` (its scene read in the spec's domain). An entry
        without a scene (a failed generation) keeps its verdicts and is never an abstention."""
        scene = None if sample.get("scene") is None else Scene.from_dict(sample["scene"], spec.domain)
        n_objects = -1 if sample.get("n_objects") is None else int(sample["n_objects"])
        violated = tuple(int(i) for i in sample.get("violated") or ())
        label = str(sample["label"])
        strict = Verdict(bool(sample["ok"]), bool(sample["count_ok"]), violated, label, "strict", n_objects)
        relaxed = Verdict(bool(sample["relaxed_ok"]), bool(sample["count_ok"]), violated, label, "relaxed", n_objects)
        return cls(spec, label, strict, relaxed, sample.get("package"), sample.get("id"), scene)


def scene_sample(scene: Scene | None, probs: bool = False) -> dict[str, Any] | None:
    """A scene graph as a ``per_sample`` entry holds it: its JSON, the objects' ``probs`` only when ``probs``."""
    if scene is None:
        return None
    out = scene.to_dict()
    if not probs:
        for o in out["objects"]:
            o.pop("probs", None)
    return out


def compositional_load(spec: Spec) -> int:
    """Imag-Eval's compositional load of a spec: ``n`` (object instances) + ``m`` (constraints). A spec with an
    open scene size counts the objects a model of it may need (`logicval_hf.asp.universe.objects_needed`)."""
    if spec.n is None:
        from logicval_hf.asp.universe import objects_needed

        return objects_needed(spec) + spec.m
    return spec.n + spec.m


def _rate(xs: Sequence[bool]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _group(records: Iterable[Record], key, order=None) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Record]] = {}
    for r in records:
        for k in key(r):
            groups.setdefault(k, []).append(r)
    return {
        k: {"n": len(rs), "score": _rate([r.strict.ok for r in rs]), "relaxed_score": _rate([r.relaxed.ok for r in rs])}
        for k, rs in sorted(groups.items(), key=order)
    }


def aggregate(records: Sequence[Record]) -> dict[str, Any]:
    """The headline scores and breakdowns of a list of records (see the module docstring)."""
    records = list(records)
    sat = [r for r in records if r.label == "SAT"]
    unsat = [r for r in records if r.label == "UNSAT"]
    single_sat = [r for r in sat if r.spec.m == 1]
    groups = {  # the breakdowns first: the per-operator tally below reads the catalog
        "by_package": _group(records, lambda r: [r.package] if r.package else []),
        "by_class": _group(single_sat, lambda r: [r.spec.constraints[0].cls]),
        "by_template": _group(single_sat, lambda r: [r.spec.constraints[0].template_id]),
        "by_load": _group(sat, lambda r: [str(r.load)], order=lambda kv: int(kv[0])),
    }
    per_constraint: dict[str, list[bool]] = {}
    per_operator: dict[str, list[bool]] = {}
    for r in sat:
        bad = set(r.relaxed.violated)
        for i, c in enumerate(r.spec.constraints):
            ok = i not in bad
            per_constraint.setdefault(c.cls, []).append(ok)
            for op in operators_of(c.template_id):
                per_operator.setdefault(op, []).append(ok)
    return {
        "n_samples": len(records),
        "logicval_score": _rate([r.strict.ok for r in records]),
        "relaxed_score": _rate([r.relaxed.ok for r in records]),
        "sat_score": _rate([r.strict.ok for r in sat]),
        "sat_relaxed_score": _rate([r.relaxed.ok for r in sat]),
        "count_accuracy": _rate([r.strict.count_ok for r in sat]),
        "abstention_rate": _rate([r.abstained for r in unsat]),
        "false_abstention_rate": _rate([r.abstained for r in sat]),
        **groups,
        "constraint_success_by_class": {k: {"n": len(v), "rate": _rate(v)} for k, v in sorted(per_constraint.items())},
        "constraint_success_by_operator": {k: {"n": len(per_operator[k]), "rate": _rate(per_operator[k])}
                                           for k in OPERATORS if k in per_operator},
    }
