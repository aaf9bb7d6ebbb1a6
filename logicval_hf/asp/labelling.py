"""Labels of specs: whether a spec is satisfiable, with a witness scene or a minimal unsat core.

One `clingo.Control` per spec answers the label, the witness and every core-shrinking step through assumptions on
``active(i)``. In a box-geometry domain whose spec tests relations, the program's relations are order atoms that obey
what every set of boxes obeys (``box_orders.lp``): no model means UNSAT. A model is then looked for again in a
program with the placement part (``box_placement.lp``), whose models are boxes built exactly
(`logicval_hf.asp.placement`): that model is the witness, and it proves each core minus one constraint SAT. The
placement program is grounded over as many object slots as the order model used, and over more (up to the spec's
universe) only when that finds none, so that its grounding stays small. Where the order rules leave a model and no
placement does, the answer is `logicval_hf.asp.placement.undecided`, never a label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import clingo

from logicval_hf.asp import messages
from logicval_hf.asp.budget import Deadline
from logicval_hf.asp.placement import MAX_RANKS, FloatBox, Placement, realise, undecided
from logicval_hf.asp.programs import relation_families, solve_program, universe
from logicval_hf.contract.catalog import Catalog, load_catalog
from logicval_hf.contract.domain_file import QUADRANT
from logicval_hf.contract.layout import layout_scene
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spatial import region_cell
from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.errors import SolverLimit

CLINGO_ARGS = ["--warn=none"]
#: placement programs decide where the boxes are first (the #heuristic directives of box_placement.lp)
PLACING_ARGS = [*CLINGO_ARGS, "--heuristic=Domain"]
#: families whose order atoms are already placements (areas: a weak order is a ranking of areas)
_PLACED_BY_ORDERS = frozenset({"area"})
#: placements tried, smallest first: (object slots at most, grid ranks, nesting depth, uniform); a small placement
#: grounds and searches fast, and its boxes are drawn largest (None: as many as the spec's universe allows). Uniform
#: placements (every object of one kind in one place) come first: they are found fastest where counts are large.
_STEPS = ((4, 2, 1, True), (8, 3, 2, True), (None, 5, 3, True),
          (4, 2, 1, False), (4, 3, 2, False), (8, 5, 3, False), (16, 8, 4, False),
          (None, 3, 1, False), (None, 5, 2, False), (None, 8, 4, False), (None, MAX_RANKS, None, False))
#: conflicts each placement step but the last may meet before the next one is tried (searches for placements have
#: heavy tails: another grid or depth is often found at once where one step stalls; a count, not seconds, so that the
#: answer does not depend on the machine's load)
STEP_CONFLICTS = 1000


def placement_steps(limit: int, families: set[str], fixed: bool) -> list[tuple[int, tuple[int, int, bool]]]:
    """(slots, (ranks, depth, uniform)) to try in turn for a spec of at most ``limit`` objects (``fixed``: a spec that
    gives its number of objects, so the slots are that number)."""
    out: list[tuple[int, tuple[int, int, bool]]] = []
    for slots, ranks, depth, uniform in _STEPS:
        s = limit if fixed or slots is None else min(slots, limit)
        r = max(1, min(ranks, s, MAX_RANKS)) if families & {"x", "y"} else 1
        d = min(depth if depth is not None else s, s) if "nest" in families else 0
        if (s, (r, d, uniform)) not in out:
            out.append((s, (r, d, uniform)))
    return out


Atom = tuple[str, tuple[Any, ...]]


def control(program: str, args: Sequence[str] = CLINGO_ARGS) -> clingo.Control:
    """A Control with ``program`` grounded (externals are declared ``[free]``: assumptions decide them)."""
    ctl = messages.control(args)
    ctl.add("base", [], program)
    ctl.ground([("base", [])])
    return ctl


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


# ---------------------------------------------------------------------------------------------------------------
# Reading models (one call into clingo per model: its text, parsed here)
# ---------------------------------------------------------------------------------------------------------------
def _term(text: str) -> Any:
    if text.startswith('"'):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if text.lstrip("-").isdigit():
        return int(text)
    return text


def parse_atoms(text: str) -> list[Atom]:
    """``name(arg,...)`` atoms of a model's text (``str(model)``): numbers as ints, strings unquoted, constants as
    their names (no atom shown here nests a function term)."""
    if '"' not in text:  # no quoted string: atoms are separated by spaces, arguments by commas
        out = []
        for atom in text.split():
            name, _, rest = atom.partition("(")
            out.append((name, tuple(_term(a) for a in rest[:-1].split(",")) if rest else ()))
        return out
    return _parse_quoted(text)


def _parse_quoted(text: str) -> list[Atom]:
    out: list[Atom] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] == " ":
            i += 1
        if i >= n:
            break
        j = i
        while j < n and text[j] not in " (":
            j += 1
        name = text[i:j]
        args: list[Any] = []
        if j < n and text[j] == "(":
            k = j + 1
            start, quoted = k, False
            while True:
                c = text[k]
                if quoted:
                    if c == "\\":
                        k += 1
                    elif c == '"':
                        quoted = False
                elif c == '"':
                    quoted = True
                elif c in ",)":
                    args.append(_term(text[start:k]))
                    start = k + 1
                    if c == ")":
                        break
                k += 1
            j = k + 1
        out.append((name, tuple(args)))
        i = j
    return out


# ---------------------------------------------------------------------------------------------------------------
# One spec
# ---------------------------------------------------------------------------------------------------------------
class _Grounded:
    """One grounded program of a spec and its ``active(i)`` literals."""

    def __init__(self, program: str, m: int, deadline: Deadline, args: Sequence[str] = CLINGO_ARGS):
        self.ctl = control(program, args)
        self.deadline = deadline
        deadline.check("grounding")
        self.active = [self._external(clingo.Function("active", [clingo.Number(i)])) for i in range(m)]
        self._index = {lit: i for i, lit in enumerate(self.active)}

    def _external(self, symbol: clingo.Symbol) -> int:
        """The literal of an atom the program declares ``#external`` (so it is always in the grounding)."""
        atom = self.ctl.symbolic_atoms[symbol]
        if atom is None:  # cannot happen: solve_program declares every active(I)
            raise RuntimeError(f"internal error: the solve program lacks {symbol}")
        return atom.literal

    def check(self, subset: Sequence[int], conflicts: int | None = None, read: bool = True
              ) -> tuple[bool, list[Atom] | None, list[int] | None]:
        """Solve with exactly the constraints in ``subset`` active: (satisfiable, a model, a core); with
        ``conflicts``, a search stopped after that many conflicts answers (False, None, None); without ``read``, a
        model comes back empty (reading it costs more than finding it, where only the label matters)."""
        solving = cast(clingo.Configuration, self.ctl.configuration.solve)
        solving.solve_limit = "umax" if conflicts is None else str(conflicts)
        on = set(subset)
        assumptions = [lit if i in on else -lit for i, lit in enumerate(self.active)]
        model: list[Atom] = []
        core: list[int] = []

        def on_model(m: clingo.Model) -> bool:
            if read:
                model.extend(parse_atoms(str(m)))
            return False

        res = self.deadline.solve(self.ctl, assumptions, on_model, core.extend)
        if res.satisfiable:
            return True, model, None
        return False, None, sorted({self._index[lit] for lit in core if lit in self._index})


class SpecSolver:
    """The programs of one spec; label, witness and core via assumptions."""

    def __init__(self, spec: Spec, catalog: Catalog, deadline: Deadline | None = None, extra: str = ""):
        self.spec = spec
        self.catalog = catalog
        self.deadline = deadline or Deadline(None)
        self.extra = extra
        self._orders: _Grounded | None = None
        self.families = relation_families(spec)
        self.placing = bool(set(self.families) - _PLACED_BY_ORDERS)  # whether orders need the placement part
        self._placers: dict[tuple[int, tuple[int, int, bool]], _Grounded] = {}

    @property
    def orders(self) -> _Grounded:
        """The program of the spec (its relations as order atoms in a box-geometry domain), grounded when first used
        (a small placement found first needs none)."""
        if self._orders is None:
            self._orders = _Grounded(solve_program(self.spec, self.catalog) + self.extra, self.spec.m, self.deadline)
        return self._orders

    def check(self, subset: Sequence[int], read: bool = True) -> tuple[bool, list[Atom] | None, list[int] | None]:
        """Solve the (order) program with exactly the constraints in ``subset`` active."""
        return self.orders.check(subset, read=read)

    def placed_check(self, subset: Sequence[int], model: list[Atom]) -> tuple[list[Atom], dict[int, FloatBox]]:
        """A model with the constraints in ``subset`` active and its boxes, given an order model of them
        (``model``: the answer itself when the orders need no placement; else placements are searched,
        `placement_steps`, and the first one whose boxes can be drawn is the answer).

        Raises:
            SolverLimit: no placement realises the subset (`logicval_hf.asp.placement.undecided`), or none that was
                found could be drawn.
        """
        dom = self.spec.domain
        if not self.placing:
            return model, realise(dom, self.families, _placement(model), dom.image_size)
        found = self._placements(subset, first_only=False)
        assert found is not None  # the last step raises rather than give up
        return found

    def _placements(self, subset: Sequence[int], first_only: bool) -> tuple[list[Atom], dict[int, FloatBox]] | None:
        """The first placement (in `placement_steps` order, or of the first step only) whose boxes can be drawn;
        None after the first step; `SolverLimit` after the last."""
        dom = self.spec.domain
        failure = undecided(self.families)
        steps = placement_steps(universe(self.spec), set(self.families), self.spec.n is not None)
        for k, (slots, grid) in enumerate(steps[:1] if first_only else steps):
            placer = self._placers.get((slots, grid))
            if placer is None:
                program = solve_program(self.spec, self.catalog, slots=slots, grid=grid) + self.extra
                placer = self._placers[(slots, grid)] = _Grounded(program, self.spec.m, self.deadline, PLACING_ARGS)
            found = placer.check(subset, None if k == len(steps) - 1 else STEP_CONFLICTS)[1]
            if found is not None:
                try:
                    return found, realise(dom, self.families, _placement(found), dom.image_size)
                except SolverLimit as e:  # too deep to draw: a larger step may place it otherwise
                    failure = e
        if first_only:
            return None
        raise failure

    def satisfiable(self, subset: Sequence[int]) -> bool:
        """Whether the constraints in ``subset`` have a model (decided exactly, or `SolverLimit`)."""
        sat, model, _ = self.check(subset, read=not self.placing)
        if model is not None and self.placing:
            if sorted(subset) == list(range(self.spec.m)):
                self.placed_check(subset, model)
            else:
                self._prove_sat(subset)
        return sat

    def result(self, image_size: tuple[float, float]) -> SolveResult:
        everything = list(range(self.spec.m))
        if self.placing:  # most specs with relations have a small placement: found first, it proves SAT by itself
            found = self._placements(everything, first_only=True)
            if found is not None:
                return SolveResult(True, witness=self._placed_witness(*found))
        _, model, core = self.check(everything)
        if model is not None:
            if self.spec.domain.ordered:
                return SolveResult(True, witness=self._witness(model, image_size))
            return SolveResult(True, witness=self._placed_witness(*self.placed_check(everything, model)))
        minimal, needed = self._shrink(core if core else everything)
        for i in needed:  # each stays because the core without it has an order model: prove it with boxes
            self._prove_sat([j for j in minimal if j != i])
        return SolveResult(False, core=tuple(minimal))

    def _prove_sat(self, subset: Sequence[int]) -> None:
        """Show with boxes that the constraints in ``subset``, a spec of their own, are SAT (they have an order
        model): a placement of the relations they read, over their own universe.

        Raises:
            SolverLimit: none found (`logicval_hf.asp.placement.undecided`).
        """
        spec = self.spec
        sub = Spec(spec.n, tuple(spec.constraints[j] for j in subset), spec.domain, spec.score_threshold)
        if set(relation_families(sub)) - _PLACED_BY_ORDERS:
            SpecSolver(sub, self.catalog, self.deadline, self.extra).placed_check(list(range(sub.m)), [])

    def _shrink(self, core: list[int]) -> tuple[list[int], list[int]]:
        """Deletion-based minimisation: drop each constraint whose removal keeps the set unsatisfiable. Returns the
        core and the constraints kept because dropping them gave an order model (the placement is still to realise
        it)."""
        core = sorted(core)
        needed = []
        for i in list(core):
            if i not in core:
                continue
            trial = [j for j in core if j != i]
            _, model, sub = self.check(trial, read=False)
            if model is None:
                core = sorted(set(sub)) if sub else trial
            else:
                needed.append(i)
        return core, [i for i in needed if i in core] if self.placing else []

    # -- witnesses ---------------------------------------------------------------------------------------------------
    def _witness(self, model: list[Atom], image_size: tuple[float, float]) -> Scene:
        """A witness of a centre-order domain (CLEVR): the model's values, regions and orders laid out. An axis no
        relation orders keeps the objects in their regions' order (back before front, left before right)."""
        dom = self.spec.domain
        n = self.spec.n if self.spec.n is not None else sum(1 for name, _ in model if name == "object")
        attrs: list[dict[str, str]] = [{} for _ in range(n)]
        regions = [""] * n
        y_before = [0] * n
        x_before = [0] * n
        for name, args in model:
            if name == "hasProperty":
                i, prop, val = args
                if prop == QUADRANT:
                    regions[i] = val
                else:
                    attrs[i][prop] = val
            elif name == "precedes":
                (x_before if args[0] == "x" else y_before)[args[2]] += 1
        if QUADRANT not in dom.derived:
            return layout_scene(attrs, None, sorted(range(n), key=lambda i: x_before[i]),
                                sorted(range(n), key=lambda i: y_before[i]), image_size, dom)
        cells = [region_cell(r) for r in regions]
        x_order = sorted(range(n), key=lambda i: (cells[i][0], x_before[i]))
        y_order = sorted(range(n), key=lambda i: (cells[i][1], y_before[i]))
        return layout_scene(attrs, regions, x_order, y_order, image_size, dom)

    def _placed_witness(self, model: list[Atom], boxes: Mapping[int, FloatBox]) -> Scene:
        """A witness of a box-geometry domain: the placement's boxes, scores falling with the object number (so
        confidence ranks are the solved ones), all above the spec's score threshold."""
        dom = self.spec.domain
        present = sorted(args[0] for name, args in model if name == "object")
        attrs: dict[int, dict[str, Any]] = {i: {} for i in present}
        for name, args in model:
            if name == "hasProperty" and args[1] in dom.perceived_attributes:
                attrs[args[0]][args[1]] = args[2]
        lo = self.spec.score_threshold if self.spec.score_threshold is not None else 0.5
        scored = bool(dom.numeric_attributes) or self.spec.score_threshold is not None
        objs = []
        for k, i in enumerate(present):
            score = round(lo + (1 - lo) * (len(present) - k) / (len(present) + 1), 6) if scored else None
            objs.append(SceneObject(attrs[i], boxes[i], score))
        return Scene(pair(dom.image_size), tuple(objs), dom)


def _placement(model: list[Atom]) -> Placement:
    return Placement.from_atoms([args[0] for name, args in model if name == "object"], model)


def label_here(spec: Any, image_size: tuple[float, float], deadline: Deadline) -> SolveResult:
    """Label a spec in this process whatever its grounding estimate (what `logicval_hf.asp.isolated`'s child
    does), uncached."""
    spec = as_spec(spec)
    return SpecSolver(spec, load_catalog(), deadline).result(pair(image_size))


def pair(image_size: Sequence[float]) -> tuple[float, float]:
    """An image size as the (width, height) tuple scenes carry (callers may pass a list, e.g. from JSON)."""
    if len(image_size) != 2:
        raise ValueError(f"image_size must be (width, height), got {image_size!r}")
    return image_size[0], image_size[1]
