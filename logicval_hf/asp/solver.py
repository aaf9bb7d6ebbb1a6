"""clingo behind three questions: is a spec satisfiable (with a witness scene or a minimal unsat core), and
does a given scene satisfy it.

Grounded programs are reused: one `clingo.Control` per spec answers the label, the witness and every
core-shrinking step through assumptions on ``active(i)``; one per (spec, universe size) verifies any number
of scenes through assumptions on the scene's external atoms. Both caches are LRU and thread-safe.

Time budgets. ``solve(spec, timeout=...)`` (or ``Solver(timeout=...)``) answers within the budget or raises
`SolverTimeout`, never a label it has not proved. Solving is interrupted at the budget (clingo's asynchronous
solve); grounding cannot be, so it is bounded by design: a spec whose program could take long to ground
(`logicval_hf.asp.programs.grounding_estimate` above `ISOLATE_ABOVE`) is labelled in a child process that is
killed at the budget (`logicval_hf.asp.isolated`); every other grounding takes a fraction of a second. A result
is cached only when it was found within its budget.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import clingo

from logicval_hf.asp.budget import Deadline, check_timeout
from logicval_hf.asp.encoding import symbol_value
from logicval_hf.asp.programs import (
    GRID,
    batch_scene_facts,
    batch_verify_program,
    grounding_estimate,
    placement_box,
    scene_externals_program,
    sizes_for,
    solve_program,
    verify_program,
)
from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.layout import layout_scene
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.errors import SceneError

_CLINGO_ARGS = ["--warn=none"]
DEFAULT_IMAGE_SIZE = (480, 320)
#: ground-size estimate above which a spec is labelled in a child process (grounding could outlast a budget);
#: calibrated at about a microsecond of grounding per unit, so in-process grounding stays under half a second
ISOLATE_ABOVE = 500_000


class Default:
    """The type of `DEFAULT`: "the solver's own budget" (None means no budget)."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = Default()


def _control(program: str) -> clingo.Control:
    """A Control with ``program`` grounded (externals are declared ``[free]``: assumptions decide them)."""
    ctl = clingo.Control(_CLINGO_ARGS, logger=lambda code, msg: None)
    ctl.add("base", [], program)
    ctl.ground([("base", [])])
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

    def with_count(self, count: str) -> Verdict:
        """The same verification under another count mode (no solver call: ``count_ok`` and ``violated``
        do not depend on the mode, only ``ok`` does)."""
        return Solver._verdict(self.label, count, self.n_objects, self.count_ok, self.violated)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "count_ok": self.count_ok,
            "violated": list(self.violated),
            "label": self.label,
            "count": self.count,
            "n_objects": self.n_objects,
        }


def check_mode(count: str, label: str | None = None) -> None:
    """Validate a count mode and an optional SAT/UNSAT label (shared by every verification entry point)."""
    if count not in ("strict", "relaxed"):
        raise ValueError(f"count must be 'strict' or 'relaxed', got {count!r}")
    if label is not None and label not in ("SAT", "UNSAT"):
        raise ValueError(f"label must be 'SAT' or 'UNSAT', got {label!r}")


# ---------------------------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------------------------
class _SpecSolver:
    """One grounded generative program for a spec; label, witness and core via assumptions."""

    def __init__(self, spec: Spec, catalog: Catalog, deadline: Deadline | None = None):
        self.spec = spec
        self.catalog = catalog
        self.deadline = deadline or Deadline(None)
        self.ctl = _control(solve_program(spec, catalog))
        self.deadline.check("grounding")
        self.active = [self._external(clingo.Function("active", [clingo.Number(i)])) for i in range(spec.m)]
        self._index = {lit: i for i, lit in enumerate(self.active)}

    def _external(self, symbol: clingo.Symbol) -> int:
        """The literal of an atom the program declares ``#external`` (so it is always in the grounding)."""
        atom = self.ctl.symbolic_atoms[symbol]
        if atom is None:  # cannot happen: solve_program declares every active(I)
            raise RuntimeError(f"internal error: the solve program lacks {symbol}")
        return atom.literal

    def check(self, subset: Sequence[int]) -> tuple[bool, list[clingo.Symbol] | None, list[int] | None]:
        """Solve with exactly the constraints in ``subset`` active."""
        on = set(subset)
        assumptions = [lit if i in on else -lit for i, lit in enumerate(self.active)]
        model: list[clingo.Symbol] = []
        core: list[int] = []

        def on_model(m: clingo.Model) -> bool:
            model.extend(m.symbols(shown=True))
            return False

        res = self.deadline.solve(self.ctl, assumptions, on_model, core.extend)
        if res.satisfiable:
            return True, model, None
        return False, None, sorted({self._index[lit] for lit in core if lit in self._index})

    def result(self, image_size: tuple[float, float]) -> SolveResult:
        everything = list(range(self.spec.m))
        _, model, core = self.check(everything)
        if model is not None:  # satisfiable (`check` gives a model exactly then)
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
        if not self.spec.domain.ordered:
            return self._placed_witness(model)
        n = self.spec.n if self.spec.n is not None else sum(1 for s in model if s.name == "object")
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

    def _placed_witness(self, model: list[clingo.Symbol]) -> Scene:
        """A witness of a box-geometry domain (or of an open scene size): each object at its solved placement,
        scores falling with the object number (so confidence ranks are the solved ones), all above the spec's
        score threshold."""
        dom = self.spec.domain
        present = sorted({s.arguments[0].number for s in model if s.name == "object"})
        attrs: dict[int, dict[str, str]] = {i: {} for i in present}
        cell: dict[int, int] = {}
        size: dict[int, int] = {}
        for sym in model:
            if sym.name == "hasProperty":
                i, prop = sym.arguments[0].number, sym.arguments[1].name
                if prop in dom.perceived_attributes:
                    attrs[i][prop] = symbol_value(sym.arguments[2])
            elif sym.name in ("at", "sized"):
                (cell if sym.name == "at" else size)[sym.arguments[0].number] = sym.arguments[1].number
        sizes = sizes_for(self.spec)
        lo = self.spec.score_threshold if self.spec.score_threshold is not None else 0.5
        scored = bool(dom.numeric_attributes) or self.spec.score_threshold is not None
        objs = []
        for k, i in enumerate(present):
            # objects no relation constrains were not placed: give them cells of their own, in order
            box = placement_box(dom, cell.get(i, k % (GRID * GRID)), sizes[size.get(i, 0)])
            score = round(lo + (1 - lo) * (len(present) - k) / (len(present) + 1), 6) if scored else None
            objs.append(SceneObject(attrs[i], box, score))
        return Scene(_pair(dom.image_size), tuple(objs), dom)


class Solver:
    """Labels specs and verifies scenes, reusing grounded programs (LRU caches keyed by the spec).

    Args:
        catalog: the template catalog (default: the shipped one).
        max_specs, max_verifiers: sizes of the two caches.
        timeout: the default budget in seconds of every label this solver computes (`solve`, and `verify` of a
            spec given without its label); None: no budget. A call's own ``timeout`` overrides it.
    """

    def __init__(self, catalog: Catalog | None = None, max_specs: int = 256, max_verifiers: int = 128,
                 timeout: float | None = None):
        self.catalog = catalog or load_catalog()
        self._results: collections.OrderedDict[str, SolveResult] = collections.OrderedDict()
        self._verifiers: collections.OrderedDict[tuple[str, int], _Verifier] = collections.OrderedDict()
        self._layouts: dict[tuple[Domain, int], _SceneLayout] = {}
        self.max_specs = max_specs
        self.max_verifiers = max_verifiers
        self.timeout = check_timeout(timeout)
        self._lock = threading.RLock()

    def solve(self, spec: Any, image_size: tuple[float, float] | None = None,
              timeout: float | Default | None = DEFAULT) -> SolveResult:
        """Label a spec: a witness scene if SAT, a minimal unsat core if UNSAT.

        Args:
            spec: a `Spec`, its dict or its JSON.
            image_size: the witness's image size (default: the domain's).
            timeout: budget in seconds (default: the solver's ``timeout``; None: no budget).
        Raises:
            SpecError: a malformed spec; `SolverLimit` (a SpecError) when an open-size spec may need more objects
                than its domain allows.
            SolverTimeout: no answer within the budget.
        """
        spec = as_spec(spec, self.catalog)
        budget = self.timeout if isinstance(timeout, Default) else check_timeout(timeout)
        deadline = Deadline(budget)
        size = _pair(image_size or spec.domain.image_size)
        key = f"{spec.key()}@{size}"
        with self._lock:
            hit = self._results.get(key)
            if hit is not None:
                self._results.move_to_end(key)
                return hit
        # solved outside the lock: each spec has its own Control, and a caller waits for its own budget only
        if budget is not None and grounding_estimate(spec) > ISOLATE_ABOVE:
            from logicval_hf.asp.isolated import solve_in_child

            result = solve_in_child(spec, size, deadline)
        else:
            result = _SpecSolver(spec, self.catalog, deadline).result(size)
        with self._lock:
            self._results[key] = result
            if len(self._results) > self.max_specs:
                self._results.popitem(last=False)
        return result

    def is_satisfiable(self, spec: Any, subset: Iterable[int] | None = None,
                       timeout: float | Default | None = DEFAULT) -> bool:
        """Whether the spec (or only the constraints in ``subset``) has a model at its n."""
        spec = as_spec(spec, self.catalog)
        if subset is None:
            return self.solve(spec, timeout=timeout).satisfiable
        deadline = Deadline(self.timeout if isinstance(timeout, Default) else timeout)
        return _SpecSolver(spec, self.catalog, deadline).check(sorted(set(subset)))[0]

    def is_tautology(self, constraint: Any, n: int) -> bool:
        """Whether a constraint holds in every admissible scene of n objects (its negation is UNSAT at n).

        Such a constraint says nothing at that n and is rejected when sampling (DECISIONS.md 10).
        """
        from logicval_hf.contract.spec import Constraint

        if not isinstance(constraint, Constraint):
            constraint = Constraint.from_dict(constraint, n=n, catalog=self.catalog)
        spec = Spec(n, (constraint,))
        program = solve_program(spec, self.catalog) + ":- not violated(0).\n"
        ctl = _control(program)
        return not ctl.solve().satisfiable

    def parse_pair(self, spec: Any, scene: Any) -> tuple[Spec, Scene]:
        """A spec and a scene from their objects, dicts or JSON (the scene validated in the spec's domain).

        The scene comes back with only the objects that count for the spec (score above its threshold)."""
        spec = as_spec(spec, self.catalog)
        if not isinstance(scene, Scene):
            scene = Scene.from_dict(scene, spec.domain)
        elif scene.domain != spec.domain:
            raise SceneError(f"scene: the scene is in domain {scene.domain.name!r}, the spec in {spec.domain.name!r}")
        return spec, scene.above(spec.score_threshold)

    def verify_many(
        self,
        pairs: Iterable[tuple[Any, Any]],
        count: str = "strict",
        labels: Sequence[str | None] | None = None,
        batch_size: int = 512,
        timeout: float | Default | None = DEFAULT,
    ) -> list[Verdict]:
        """Verify many (spec, scene) pairs; scenes of the same spec share one grounding per batch.

        Returns verdicts in input order. Raises `SpecError`/`SceneError` on the first malformed item, naming
        its position; `SolverTimeout` when labelling a spec given without its label exceeds ``timeout`` (per spec;
        default: the solver's).
        """
        check_mode(count)
        items: list[tuple[Spec, Scene]] = []
        for k, (raw_spec, raw_scene) in enumerate(pairs):
            try:
                items.append(self.parse_pair(raw_spec, raw_scene))
            except ValueError as e:
                raise type(e)(f"item {k}: {e}") from None
        if labels is not None and len(labels) != len(items):
            raise ValueError(f"labels has {len(labels)} entries for {len(items)} pairs")
        groups: dict[str, list[int]] = {}
        for k, (spec, _) in enumerate(items):
            groups.setdefault(spec.key(), []).append(k)
        out: list[Verdict | None] = [None] * len(items)
        for idx in groups.values():
            spec = items[idx[0]][0]
            for start in range(0, len(idx), batch_size):
                chunk = idx[start:start + batch_size]
                results = _verify_batch(spec, [items[k][1] for k in chunk])
                for k, (count_ok, violated) in zip(chunk, results, strict=True):  # one result per scene
                    given = labels[k] if labels is not None else None
                    label = given if given is not None else self.solve(spec, timeout=timeout).label
                    out[k] = self._verdict(label, count, len(items[k][1]), count_ok, violated)
        return out  # type: ignore[return-value]

    @staticmethod
    def _verdict(label: str, count: str, n_objects: int, count_ok: bool, violated: Sequence[int]) -> Verdict:
        check_mode(count, label)
        ok = n_objects == 0 if label == "UNSAT" else not violated and (count_ok or count == "relaxed")
        return Verdict(ok, count_ok, tuple(violated), label, count, n_objects)

    def verify(self, spec: Any, scene: Any, count: str = "strict", label: str | None = None,
               timeout: float | Default | None = DEFAULT) -> Verdict:
        """Check a scene against a spec (see the module-level `verify`); ``timeout`` bounds labelling the spec when
        no label is given (default: the solver's budget)."""
        spec, scene = self.parse_pair(spec, scene)
        check_mode(count, label)
        if label is None:
            label = self.solve(spec, timeout=timeout).label
        # The universe only has to hold the scene's objects; n keeps one grounding per spec in the usual case.
        universe = max(spec.n or 0, len(scene), 1)
        key = (spec.key(), universe)
        with self._lock:
            verifier = self._verifiers.get(key)
            if verifier is None:
                layout = self._layouts.get((spec.domain, universe))
                if layout is None:
                    layout = self._layouts[(spec.domain, universe)] = _SceneLayout(universe, spec.domain)
                verifier = _Verifier(spec, layout)
                self._verifiers[key] = verifier
                if len(self._verifiers) > self.max_verifiers:
                    self._verifiers.popitem(last=False)
            else:
                self._verifiers.move_to_end(key)
            count_ok, violated = verifier.check(scene)
        return self._verdict(label, count, len(scene), count_ok, sorted(violated))


def label_here(spec: Any, image_size: tuple[float, float], deadline: Deadline) -> SolveResult:
    """Label a spec in this process whatever its grounding estimate (what `logicval_hf.asp.isolated`'s child
    does), uncached."""
    spec = as_spec(spec)
    return _SpecSolver(spec, load_catalog(), deadline).result(_pair(image_size))


def _pair(image_size: Sequence[float]) -> tuple[float, float]:
    """An image size as the (width, height) tuple scenes carry (callers may pass a list, e.g. from JSON)."""
    if len(image_size) != 2:
        raise ValueError(f"image_size must be (width, height), got {image_size!r}")
    return image_size[0], image_size[1]


def _verify_batch(spec: Spec, scenes: Sequence[Scene]) -> list[tuple[bool, list[int]]]:
    """(count_ok, violated) for many scenes of one spec with a single grounding (the program is stratified,
    so grounding alone decides every atom)."""
    text = batch_verify_program(spec) + batch_scene_facts(scenes)
    ctl = _control(text)
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


class _SceneLayout:
    """Where each scene external sits in the assumption list, for one universe size.

    The scene part is grounded first and alone, so clingo numbers its atoms identically in every Control
    (checked on each new Control); decoding the atoms once per universe size is then enough.
    """

    def __init__(self, universe: int, domain: Domain):
        self.universe = universe
        self.domain = domain
        self.text = scene_externals_program(universe, domain)
        ctl = clingo.Control(_CLINGO_ARGS, logger=lambda code, msg: None)
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
        ctl = clingo.Control(_CLINGO_ARGS, logger=lambda code, msg: None)
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


class _Verifier:
    """One grounded program for a spec over a scene layout; each scene arrives as assumptions."""

    def __init__(self, spec: Spec, layout: _SceneLayout):
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


# ---------------------------------------------------------------------------------------------
# Module-level convenience API
# ---------------------------------------------------------------------------------------------
_default: Solver | None = None
_default_lock = threading.Lock()


def default_solver() -> Solver:
    global _default  # noqa: PLW0603  the process-wide solver, built once on first use under the lock
    with _default_lock:
        if _default is None:
            _default = Solver()
        return _default


def solve(spec: Any, image_size: tuple[float, float] | None = None, timeout: float | None = None) -> SolveResult:
    """Label a spec (a `Spec`, its dict or its JSON): witness scene if SAT, minimal unsat core if UNSAT.

    Args:
        spec: the specification.
        image_size: the witness's image size (default: the domain's).
        timeout: budget in seconds for this label (None: no budget).
    Raises:
        SpecError: a malformed spec, or (`SolverLimit`) an open-size spec that may need more objects than its
            domain's ``max_objects``.
        SolverTimeout: no answer within ``timeout`` (raised within about a second of it).
    """
    return default_solver().solve(spec, image_size, timeout=timeout)


def verify(spec: Any, scene: Any, count: str = "strict", label: str | None = None,
           timeout: float | None = None) -> Verdict:
    """Check a scene (a `Scene`, its dict or its JSON) against a spec.

    Args:
        spec: the specification.
        scene: the perceived (or annotated) scene graph.
        count: ``"strict"`` (exactly n objects and every constraint) or ``"relaxed"`` (object count ignored).
        label: the spec's SAT/UNSAT label if known (saves a solver call); computed otherwise.
        timeout: budget in seconds for computing the label (None: no budget).
    Returns:
        A `Verdict` with ``ok``, ``count_ok`` and ``violated``.
    Raises:
        SpecError / SceneError (both `ValueError`): malformed spec or scene.
        SolverTimeout: the label was not found within ``timeout``.
    """
    return default_solver().verify(spec, scene, count=count, label=label, timeout=timeout)


def verify_many(pairs: Iterable[tuple[Any, Any]], count: str = "strict",
                labels: Sequence[str | None] | None = None, timeout: float | None = None) -> list[Verdict]:
    """Verify many (spec, scene) pairs in batches (one grounding per spec and batch); verdicts in input order.
    ``timeout`` bounds labelling each spec given without its label."""
    return default_solver().verify_many(pairs, count=count, labels=labels, timeout=timeout)
