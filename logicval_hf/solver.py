"""clingo behind three questions: is a spec satisfiable (with a witness scene or a minimal unsat core), and
does a given scene satisfy it.

Grounded programs are reused: one `clingo.Control` per spec answers the label, the witness and every
core-shrinking step through assumptions on ``active(i)``; one per (spec, universe size) verifies any number
of scenes through assumptions on the scene's external atoms. Both caches are LRU and thread-safe.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import clingo

from .catalog import Catalog, load_catalog
from .layout import layout_scene
from .programs import solve_program, verify_program
from .scene import Scene
from .spec import Spec, as_spec

_CLINGO_ARGS = ["--warn=none"]
DEFAULT_IMAGE_SIZE = (480, 320)


def _control(program: str) -> clingo.Control:
    """Ground a program; its externals are freed so that assumptions alone decide them per solve call."""
    ctl = clingo.Control(_CLINGO_ARGS, logger=lambda code, msg: None)
    ctl.add("base", [], program)
    ctl.ground([("base", [])])
    for sa in ctl.symbolic_atoms:
        if sa.is_external:
            ctl.assign_external(sa.literal, None)
    return ctl


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SolveResult:
    """Label of a spec: a witness scene when satisfiable, a minimal unsat core (constraint indices) otherwise."""

    satisfiable: bool
    witness: Scene | None = None
    core: tuple[int, ...] | None = None

    @property
    def label(self) -> str:
        return "SAT" if self.satisfiable else "UNSAT"

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "satisfiable": self.satisfiable,
            "witness": self.witness.to_dict() if self.witness is not None else None,
            "core": list(self.core) if self.core is not None else None,
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "count_ok": self.count_ok,
            "violated": list(self.violated),
            "label": self.label,
            "count": self.count,
            "n_objects": self.n_objects,
        }


# ---------------------------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------------------------
class _SpecSolver:
    """One grounded generative program for a spec; label, witness and core via assumptions."""

    def __init__(self, spec: Spec, catalog: Catalog):
        self.spec = spec
        self.catalog = catalog
        self.ctl = _control(solve_program(spec, catalog))
        atoms = self.ctl.symbolic_atoms
        self.active = [atoms[clingo.Function("active", [clingo.Number(i)])].literal for i in range(spec.m)]
        self._index = {lit: i for i, lit in enumerate(self.active)}

    def check(self, subset: Sequence[int]) -> tuple[bool, list[clingo.Symbol] | None, list[int] | None]:
        """Solve with exactly the constraints in ``subset`` active."""
        on = set(subset)
        assumptions = [lit if i in on else -lit for i, lit in enumerate(self.active)]
        model: list[clingo.Symbol] = []
        core: list[int] = []

        def on_model(m: clingo.Model) -> bool:
            model.extend(m.symbols(shown=True))
            return False

        res = self.ctl.solve(assumptions=assumptions, on_model=on_model, on_core=core.extend)
        if res.satisfiable:
            return True, model, None
        return False, None, sorted({self._index[lit] for lit in core if lit in self._index})

    def result(self, image_size: tuple[float, float]) -> SolveResult:
        everything = list(range(self.spec.m))
        sat, model, core = self.check(everything)
        if sat:
            return SolveResult(True, witness=self._witness(model, image_size))
        return SolveResult(False, core=tuple(self._shrink(core if core else everything)))

    def _shrink(self, core: list[int]) -> list[int]:
        """Deletion-based minimisation: drop each constraint whose removal keeps the set unsatisfiable."""
        core = sorted(core)
        for i in list(core):
            if i not in core:
                continue
            trial = [j for j in core if j != i]
            sat, _, sub = self.check(trial)
            if not sat:
                core = sorted(set(sub)) if sub else trial
        return core

    def _witness(self, model: list[clingo.Symbol], image_size: tuple[float, float]) -> Scene:
        n = self.spec.n
        attrs: list[dict[str, str]] = [{} for _ in range(n)]
        regions = [""] * n
        y_before = [0] * n
        x_before = [0] * n
        for sym in model:
            if sym.name == "hasProperty":
                i, prop, val = sym.arguments[0].number, sym.arguments[1].name, sym.arguments[2].name
                if prop == "region":
                    regions[i] = val
                else:
                    attrs[i][prop] = val
            elif sym.name == "precedes":
                axis, later = sym.arguments[0].name, sym.arguments[2].number
                (x_before if axis == "x" else y_before)[later] += 1
        x_order = sorted(range(n), key=lambda i: x_before[i])
        y_order = sorted(range(n), key=lambda i: y_before[i])
        return layout_scene(attrs, regions, x_order, y_order, image_size)


class Solver:
    """Labels specs and verifies scenes, reusing grounded programs (LRU caches keyed by the spec)."""

    def __init__(self, catalog: Catalog | None = None, max_specs: int = 256, max_verifiers: int = 128):
        self.catalog = catalog or load_catalog()
        self._results: collections.OrderedDict[str, SolveResult] = collections.OrderedDict()
        self._verifiers: collections.OrderedDict[tuple[str, int], _Verifier] = collections.OrderedDict()
        self.max_specs = max_specs
        self.max_verifiers = max_verifiers
        self._lock = threading.RLock()

    def solve(self, spec: Any, image_size: tuple[float, float] = DEFAULT_IMAGE_SIZE) -> SolveResult:
        spec = as_spec(spec, self.catalog)
        key = f"{spec.key()}@{image_size}"
        with self._lock:
            hit = self._results.get(key)
            if hit is not None:
                self._results.move_to_end(key)
                return hit
            result = _SpecSolver(spec, self.catalog).result(tuple(image_size))
            self._results[key] = result
            if len(self._results) > self.max_specs:
                self._results.popitem(last=False)
            return result

    def is_satisfiable(self, spec: Any, subset: Iterable[int] | None = None) -> bool:
        """Whether the spec (or only the constraints in ``subset``) has a model at its n."""
        spec = as_spec(spec, self.catalog)
        if subset is None:
            return self.solve(spec).satisfiable
        return _SpecSolver(spec, self.catalog).check(sorted(set(subset)))[0]

    def verify(self, spec: Any, scene: Any, count: str = "strict", label: str | None = None) -> Verdict:
        spec = as_spec(spec, self.catalog)
        if not isinstance(scene, Scene):
            scene = Scene.from_dict(scene, self.catalog.domain)
        if count not in ("strict", "relaxed"):
            raise ValueError(f"count must be 'strict' or 'relaxed', got {count!r}")
        if label is None:
            label = self.solve(spec).label
        elif label not in ("SAT", "UNSAT"):
            raise ValueError(f"label must be 'SAT' or 'UNSAT', got {label!r}")
        universe = max(self.catalog.domain.n_max, len(scene))
        key = (spec.key(), universe)
        with self._lock:
            verifier = self._verifiers.get(key)
            if verifier is None:
                verifier = _Verifier(spec, universe, self.catalog)
                self._verifiers[key] = verifier
                if len(self._verifiers) > self.max_verifiers:
                    self._verifiers.popitem(last=False)
            else:
                self._verifiers.move_to_end(key)
            count_ok, violated = verifier.check(scene)
        if label == "UNSAT":
            ok = len(scene) == 0
        else:
            ok = not violated and (count_ok or count == "relaxed")
        return Verdict(ok, count_ok, tuple(violated), label, count, len(scene))


class _Verifier:
    """One grounded program for a spec over ``universe`` object slots; the scene arrives as assumptions."""

    def __init__(self, spec: Spec, universe: int, catalog: Catalog):
        self.spec = spec
        self.universe = universe
        self.ctl = _control(verify_program(spec, universe, catalog))
        lits: list[int] = []
        self.pos: dict[tuple, int] = {}
        for sa in self.ctl.symbolic_atoms.by_signature("object", 1):
            self.pos[("o", sa.symbol.arguments[0].number)] = len(lits)
            lits.append(sa.literal)
        for sa in self.ctl.symbolic_atoms.by_signature("hasProperty", 3):
            a = sa.symbol.arguments
            if sa.is_external:
                self.pos[("p", a[0].number, a[1].name, a[2].name)] = len(lits)
                lits.append(sa.literal)
        for sa in self.ctl.symbolic_atoms.by_signature("hasRelationship", 3):
            a = sa.symbol.arguments
            if sa.is_external:
                self.pos[("r", a[0].number, a[1].name, a[2].number)] = len(lits)
                lits.append(sa.literal)
        self.lits = lits
        self.all_false = [-lit for lit in lits]
        atoms = self.ctl.symbolic_atoms
        self.violated_lit = {}
        for i in range(spec.m):
            sa = atoms[clingo.Function("violated", [clingo.Number(i)])]
            if sa is not None:
                self.violated_lit[i] = sa.literal
        sa = atoms[clingo.Function("count_ok", [])]
        self.count_ok_lit = sa.literal if sa is not None else None

    def assumptions(self, scene: Scene) -> list[int]:
        a = list(self.all_false)
        pos, lits = self.pos, self.lits
        attrs = scene.domain.perceived_attributes
        for i, obj in enumerate(scene.objects):
            k = pos[("o", i)]
            a[k] = lits[k]
            for prop in attrs:
                k = pos[("p", i, prop, obj.attributes[prop])]
                a[k] = lits[k]
            k = pos[("p", i, "region", scene.region(i))]
            a[k] = lits[k]
        for i, rel, j in scene.relations():
            k = pos[("r", i, rel, j)]
            a[k] = lits[k]
        return a

    def check(self, scene: Scene) -> tuple[bool, list[int]]:
        out: dict[str, Any] = {}

        def on_model(m: clingo.Model) -> bool:
            out["violated"] = [i for i, lit in self.violated_lit.items() if m.is_true(lit)]
            out["count_ok"] = self.count_ok_lit is not None and m.is_true(self.count_ok_lit)
            return False

        res = self.ctl.solve(assumptions=self.assumptions(scene), on_model=on_model)
        if not res.satisfiable:  # cannot happen: the verification program is stratified and constraint-free
            raise RuntimeError("internal error: verification program has no model")
        return out["count_ok"], sorted(out["violated"])


# ---------------------------------------------------------------------------------------------
# Module-level convenience API
# ---------------------------------------------------------------------------------------------
_default: Solver | None = None
_default_lock = threading.Lock()


def default_solver() -> Solver:
    global _default
    with _default_lock:
        if _default is None:
            _default = Solver()
        return _default


def solve(spec: Any, image_size: tuple[float, float] = DEFAULT_IMAGE_SIZE) -> SolveResult:
    """Label a spec (a `Spec`, its dict or its JSON): witness scene if SAT, minimal unsat core if UNSAT."""
    return default_solver().solve(spec, image_size)


def verify(spec: Any, scene: Any, count: str = "strict", label: str | None = None) -> Verdict:
    """Check a scene (a `Scene`, its dict or its JSON) against a spec.

    Args:
        spec: the specification.
        scene: the perceived (or annotated) scene graph.
        count: ``"strict"`` (exactly n objects and every constraint) or ``"relaxed"`` (object count ignored).
        label: the spec's SAT/UNSAT label if known (saves a solver call); computed otherwise.
    Returns:
        A `Verdict` with ``ok``, ``count_ok`` and ``violated``.
    Raises:
        SpecError / SceneError (both `ValueError`): malformed spec or scene.
    """
    return default_solver().verify(spec, scene, count=count, label=label)
