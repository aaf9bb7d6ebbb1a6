"""The repair as one clingo optimisation (``asp/repair.lp``): the cheapest repaired scene as the solver chose it
(which objects stay, move, go or come, their values, their positions), within a time budget.

Added objects come from a pool of slots. A first solve offers ``deficit + 1`` of them (the objects a strict count
needs, and one more). A repair with ``a`` additions costs at least ``a * weight(add)``, and under a strict count also
the removals that keep the count (`least_cost`); so when the best repair found is cheaper than any repair with one
more addition than the pool holds, it is the optimum over every pool, and otherwise the solve is repeated with as
many slots as its cost can pay for. A choice whose boxes cannot be realised (`logicval_hf.repairs.realise`) is
excluded by a nogood and the optimisation goes on. Core-guided optimisation (clasp's ``usc``) proves the optimum
fastest here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import clingo

from logicval_hf.asp import messages
from logicval_hf.asp.encoding import symbol_value
from logicval_hf.asp.programs import constraint_rules, read_program, vocabulary
from logicval_hf.errors import SolverTimeout
from logicval_hf.repairs.facts import Problem

_ARGS = ["--warn=none", "--opt-mode=opt", "--opt-strategy=usc"]


@dataclass
class Choice:
    """One repaired scene as the solver chose it (object ids: input indices, then pool slots)."""

    cost: int
    optimal: bool
    removed: set[int] = field(default_factory=set)
    moved: set[int] = field(default_factory=set)
    added: list[int] = field(default_factory=list)
    values: dict[int, dict[str, str]] = field(default_factory=dict)
    at: dict[tuple[str, int], int] = field(default_factory=dict)  # (axis, object) -> position
    before: set[tuple[str, int, int]] = field(default_factory=set)
    place: dict[int, int] = field(default_factory=dict)  # box domains: object -> class of candidate boxes
    mm: set[tuple[int, str, int]] = field(default_factory=set)  # box domains: relations between moved/added objects
    exclusion: str | None = None  # the realiser's own nogood for this choice (box domains)

    @classmethod
    def of(cls, symbols: list[clingo.Symbol], optimal: bool) -> Choice:
        c = cls(0, optimal)
        for s in symbols:
            a = s.arguments
            if s.name == "cost":
                c.cost += a[0].number
            elif s.name == "hasProperty":
                c.values.setdefault(a[0].number, {})[a[1].name] = symbol_value(a[2])
            elif s.name == "at":
                c.at[(a[0].name, a[1].number)] = a[2].number
            elif s.name == "before":
                c.before.add((a[0].name, a[1].number, a[2].number))
            elif s.name == "removed":
                c.removed.add(a[0].number)
            elif s.name == "moved":
                c.moved.add(a[0].number)
            elif s.name == "added":
                c.added.append(a[0].number)
            elif s.name == "place":
                c.place[a[0].number] = a[1].number
            elif s.name == "mm":
                c.mm.add((a[0].number, a[1].name, a[2].number))
        c.added.sort()
        return c

    def nogood(self) -> str:
        """A constraint that excludes this choice's placement of its moved and added objects."""
        if self.exclusion is not None:
            return self.exclusion
        body = [f"mover({x})" for x in sorted(self.moved) + self.added]
        body += [f"at({ax},{x},{p})" for (ax, x), p in sorted(self.at.items()) if x in self.moved or x in self.added]
        body += [f"before({ax},{x},{y})" for ax, x, y in sorted(self.before)
                 if {x, y} <= self.moved | set(self.added)]
        return f":- {', '.join(body)}.\n"


class Budget:
    """Wall-clock end of a repair (None: unbounded)."""

    def __init__(self, timeout: float | None):
        self.timeout = timeout
        self.end = None if timeout is None else time.monotonic() + timeout

    def left(self) -> float | None:
        return None if self.end is None else self.end - time.monotonic()

    def expired(self) -> SolverTimeout:
        return SolverTimeout(f"repair exceeded its time budget of {self.timeout:g} s before finding any repair; pass "
                             "a larger timeout to try longer", self.timeout)


def _program(problem: Problem, pool: int, floor: tuple[int, int] | None = None) -> str:
    extra = f"bound({floor[0]}). floor({floor[1]}).\n" if floor else ""
    parts = [vocabulary(problem.scene.domain), read_program("repair.lp"), constraint_rules(problem.spec),
             problem.facts(pool), extra]
    if problem.geometry:  # a box domain's candidate boxes (logicval_hf.repairs.boxes)
        parts += [read_program("repair_boxes.lp"), problem.geometry]
    return "\n".join(parts)


def _optimise(ctl: clingo.Control, budget: Budget) -> tuple[Choice | None, bool]:
    """The best model (and whether it is proven optimal) of a grounded control within the budget; with the control's
    optimisation switched off, the first model."""
    best: list[list[clingo.Symbol]] = []

    def on_model(m: clingo.Model) -> None:
        best[:] = [list(m.symbols(shown=True))]

    left = budget.left()
    if left is not None and left <= 0:
        return None, False
    with ctl.solve(on_model=on_model, async_=True) as handle:
        finished = handle.wait(left) if left is not None else handle.wait()
        if not finished:
            handle.cancel()
        result = handle.get()
    finished = bool(finished and (result.exhausted or result.unsatisfiable or
                                  (result.satisfiable and cast(Any, ctl.configuration).solve.opt_mode == "ignore")))
    if not best:
        return None, finished
    return Choice.of(best[0], finished), finished


def least_cost(problem: Problem, additions: int) -> int:
    """The least cost of any repair that adds ``additions`` objects: their cost, and under a strict count also the
    removals that keep the count (the input's size minus removals plus additions is n)."""
    cost = additions * problem.costs["add"]
    if problem.count == "strict" and problem.spec.n is not None:
        cost += max(0, additions + problem.n_inputs - problem.spec.n) * problem.costs["remove"]
    return cost


class _Pool:
    """A grounded repair program with ``size`` slots for added objects; realisation failures become nogoods."""

    def __init__(self, problem: Problem, size: int, floor: tuple[int, int] | None = None,
                 checker: Callable[[], Any] | None = None):
        self.ctl = messages.control(_ARGS)
        if checker is not None:  # a propagator that refuses, during the search, choices it cannot realise
            self.ctl.register_propagator(checker())
        self.ctl.add("base", [], _program(problem, size, floor))
        self.ctl.ground([("base", [])])
        self.floor = floor
        self.rounds = 0

    def best(self, budget: Budget, realisable: Callable[[Choice], bool],
             cheaper: bool = False) -> tuple[Choice | None, bool]:
        """The cheapest realisable repair and whether the search finished; with ``cheaper``, any realisable repair
        cheaper than the floor's bound with more additions than its pool (the first found: not optimised)."""
        if self.floor is not None:
            for sym in (clingo.Function("cheaper_than", [clingo.Number(self.floor[0])]),
                        clingo.Function("more_added_than", [clingo.Number(self.floor[1])])):
                self.ctl.assign_external(sym, cheaper)
        cast(Any, self.ctl.configuration).solve.opt_mode = "ignore" if cheaper else "opt"
        while True:
            choice, finished = _optimise(self.ctl, budget)
            if choice is None or realisable(choice):
                return choice, finished
            self.rounds += 1
            self.ctl.add(f"nogood{self.rounds}", [], choice.nogood())
            self.ctl.ground([(f"nogood{self.rounds}", [])])


def search(problem: Problem, budget: Budget, realisable: Callable[[Choice], bool],
           checker: Callable[[], Any] | None = None) -> Choice | None:
    """The cheapest repair whose boxes `realisable` can place (optimal unless the budget ended first), or None when
    the budget ended before any was found. ``checker`` makes a clingo propagator for each grounding (box domains:
    `logicval_hf.repairs.boxes.BoxRoom.checker`).

    The pool holds ``deficit + 1`` added objects first. Its optimum is the optimum over every pool unless a cheaper
    repair adds more (repairs as cheap that add more come later in the documented order): the slots such a repair
    could pay for are offered and a cheaper one is looked for; only if one exists is the wider pool optimised.
    """
    strict = problem.count == "strict" and problem.spec.n is not None
    cap = problem.spec.n if strict and problem.spec.n is not None else problem.scene.domain.n_max
    pool = min(problem.deficit() + 1, cap)
    best, finished = _Pool(problem, pool, checker=checker).best(budget, realisable)
    if not finished:
        return best
    while best is None:  # no repair with so few additions: offer twice as many, up to what the count allows
        if pool >= cap:
            return None
        pool = min(cap, 2 * pool + 1)
        best, finished = _Pool(problem, pool, checker=checker).best(budget, realisable)
        if not finished:
            return best
    wider = pool
    while wider < cap and least_cost(problem, wider + 1) < best.cost:
        wider += 1
    if wider == pool:
        return best
    bigger = _Pool(problem, wider, (best.cost, pool), checker)
    cheaper, finished = bigger.best(budget, realisable, cheaper=True)
    if cheaper is None:
        best.optimal = finished
        return best
    found, finished = bigger.best(budget, realisable)
    if found is None or found.cost > cheaper.cost:
        cheaper.optimal = False
        return cheaper
    return found
