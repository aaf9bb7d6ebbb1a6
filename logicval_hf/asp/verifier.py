"""Verdicts: whether a scene satisfies a spec.

One grounding per (spec, universe size) checks any number of scenes, each given as assumptions on the scene's
external atoms (`SceneLayout`, `ScenesVerifier`); `verify_batch` checks many scenes of one spec in a single
grounding (the program is stratified, so grounding alone decides every atom).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import clingo

from logicval_hf.asp import messages
from logicval_hf.asp.encoding import symbol_value
from logicval_hf.asp.labelling import CLINGO_ARGS, control
from logicval_hf.asp.programs import (
    batch_attributes,
    batch_relations,
    batch_scene_facts,
    batch_verify_program,
    scene_externals_program,
    verify_program,
)
from logicval_hf.contract.catalog import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec


def check_mode(count: str, label: str | None = None) -> None:
    """Validate a count mode and an optional SAT/UNSAT label (shared by every verification entry point)."""
    if count not in ("strict", "relaxed"):
        raise ValueError(f"count must be 'strict' or 'relaxed', got {count!r}")
    if label is not None and label not in ("SAT", "UNSAT"):
        raise ValueError(f"label must be 'SAT' or 'UNSAT', got {label!r}")


@dataclass(frozen=True)
class Verdict:
    """Whether a scene satisfies a spec.

    ``ok`` is the verdict under the chosen count mode; ``count_ok`` says whether the scene has exactly n
    objects; ``violated`` lists the failing constraints (formula or anti-vacuity). For an UNSAT spec the
    right answer is the empty scene: ``ok`` iff the scene has no object.
    """

    ok: bool
    count_ok: bool
    violated: tuple[int, ...]
    label: str
    count: str
    n_objects: int

    @property
    def constraints_ok(self) -> bool:
        return not self.violated

    def with_count(self, count: str) -> Verdict:
        """The same verification under another count mode (no solver call: ``count_ok`` and ``violated``
        do not depend on the mode, only ``ok`` does)."""
        return verdict(self.label, count, self.n_objects, self.count_ok, self.violated)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "count_ok": self.count_ok,
            "violated": list(self.violated),
            "label": self.label,
            "count": self.count,
            "n_objects": self.n_objects,
        }


def verdict(label: str, count: str, n_objects: int, count_ok: bool, violated: Sequence[int]) -> Verdict:
    """The `Verdict` of a checked scene under a spec's label and a count mode."""
    check_mode(count, label)
    ok = n_objects == 0 if label == "UNSAT" else not violated and (count_ok or count == "relaxed")
    return Verdict(ok, count_ok, tuple(violated), label, count, n_objects)


def verify_batch(spec: Spec, scenes: Sequence[Scene]) -> list[tuple[bool, list[int]]]:
    """(count_ok, violated) for many scenes of one spec with a single grounding (the program is stratified,
    so grounding alone decides every atom)."""
    text = batch_verify_program(spec) + batch_scene_facts(scenes, batch_attributes(spec), batch_relations(spec))
    ctl = control(text)
    count_ok = [False] * len(scenes)
    violated: list[list[int]] = [[] for _ in scenes]

    def on_model(m: clingo.Model) -> bool:
        for sym in m.symbols(shown=True):
            args = sym.arguments
            if sym.name == "violated":
                violated[args[0].number].append(args[1].number)
            else:
                count_ok[args[0].number] = True
        return False

    ctl.solve(on_model=on_model)
    return [(count_ok[k], sorted(violated[k])) for k in range(len(scenes))]


class SceneLayout:
    """Where each scene external sits in the assumption list, for one universe size.

    The scene part is grounded first and alone, so clingo numbers its atoms identically in every Control
    (checked on each new Control); decoding the atoms once per universe size is then enough.
    """

    def __init__(self, universe: int, domain: Domain):
        self.universe = universe
        self.domain = domain
        self.text = scene_externals_program(universe, domain)
        ctl = messages.control(CLINGO_ARGS)
        ctl.add("scene", [], self.text)
        ctl.ground([("scene", [])])
        lits: list[int] = []
        self.obj_pos: list[int] = [0] * universe
        self.prop_pos: dict[str, dict[Any, list[int]]] = {}  # attribute -> value -> position per object
        self.rel_pos: dict[str, list[list[int]]] = {}  # canonical relation -> [a][b] -> position
        self.symbols: list[clingo.Symbol] = []
        for name, arity in (("scene_object", 1), ("scene_has", 3), ("scene_num", 3), ("scene_rel", 3)):
            for sa in ctl.symbolic_atoms.by_signature(name, arity):
                sym = sa.symbol
                args = sym.arguments
                if name == "scene_object":
                    self.obj_pos[args[0].number] = len(lits)
                elif name in ("scene_has", "scene_num"):
                    slots = self.prop_pos.setdefault(args[1].name, {}).setdefault(symbol_value(args[2]), [0] * universe)
                    slots[args[0].number] = len(lits)
                else:
                    grid = self.rel_pos.setdefault(args[1].name, [[-1] * universe for _ in range(universe)])
                    grid[args[0].number][args[2].number] = len(lits)
                lits.append(sa.literal)
                self.symbols.append(sym)
        self.lits = lits
        self.all_false = [-lit for lit in lits]
        self._probe = [0, len(lits) // 2, len(lits) - 1] if lits else []

    def control(self) -> clingo.Control:
        """A new Control with the scene part grounded, its numbering checked against this layout."""
        ctl = messages.control(CLINGO_ARGS)
        ctl.add("scene", [], self.text)
        ctl.ground([("scene", [])])
        atoms = ctl.symbolic_atoms
        for k in self._probe:
            sa = atoms[self.symbols[k]]
            if sa is None or sa.literal != self.lits[k]:
                raise RuntimeError("clingo numbered the scene atoms differently; cannot reuse the layout")
        return ctl

    def assumptions(self, scene: Scene) -> list[int]:
        a = list(self.all_false)
        lits = self.lits
        objs = scene.objects
        for i in range(len(objs)):
            k = self.obj_pos[i]
            a[k] = lits[k]
        derived = scene.domain.derived
        for prop, by_value in self.prop_pos.items():
            values = scene.derived(prop) if prop in derived else [o.attributes[prop] for o in objs]
            for i, v in enumerate(values):
                k = by_value[v][i]
                a[k] = lits[k]
        centres = [o.center for o in objs]
        n = len(objs)
        for rel, grid in self.rel_pos.items():
            rule = self.domain.rules[rel]
            if rule.kind == "centre_order":  # the common case, kept cheap: compare centres once
                c = [p[0] if rule.axis == "x" else p[1] for p in centres]
                sign = rule.sign
                facts = ((i, j) for i in range(n) for j in range(n) if sign * (c[i] - c[j]) > 0)
            else:
                facts = ((i, j) for i in range(n) for j in range(n) if scene.holds(rel, i, j))
            for i, j in facts:
                k = grid[i][j]
                a[k] = lits[k]
        return a


class ScenesVerifier:
    """One grounded program for a spec over a scene layout; each scene arrives as assumptions."""

    def __init__(self, spec: Spec, layout: SceneLayout):
        self.spec = spec
        self.layout = layout
        self.ctl = layout.control()
        self.ctl.add("base", [], verify_program(spec))
        self.ctl.ground([("base", [])])
        atoms = self.ctl.symbolic_atoms
        self.violated_lit = {}
        for i in range(spec.m):
            sa = atoms[clingo.Function("violated", [clingo.Number(i)])]
            if sa is not None:
                self.violated_lit[i] = sa.literal
        sa = atoms[clingo.Function("count_ok", [])]
        self.count_ok_lit = sa.literal if sa is not None else None

    def check(self, scene: Scene) -> tuple[bool, list[int]]:
        with self.ctl.solve(assumptions=self.layout.assumptions(scene), yield_=True) as handle:
            model = handle.model()
            if model is None:  # cannot happen: the verification program is stratified and constraint-free
                raise RuntimeError("internal error: verification program has no model")
            violated = [i for i, lit in self.violated_lit.items() if model.is_true(lit)]
            count_ok = self.count_ok_lit is not None and model.is_true(self.count_ok_lit)
        return count_ok, violated
