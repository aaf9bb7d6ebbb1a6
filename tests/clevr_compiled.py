"""The interpreter's semantics compiled into closures over a flat CLEVR world (`_Grid`), exact or three-valued,
for the exhaustive search (`clevr_brute_force`); tested against the interpreter.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from logicval_hf.contract.reference.interpreter import (
    _THETA,
    FormulaError,
    _attr_lit,
    _block,
    _const,
    _op,
    _rel_lit,
    _resolve,
    _theta,
)
from logicval_hf.contract.reference.worlds import _REGION, _REL_AXIS, World
from logicval_hf.contract.spec import Constraint

# ---------------------------------------------------------------------------------------------------------------
# Compiled evaluation (same semantics, closures over a flat world) used by the exhaustive search
# ---------------------------------------------------------------------------------------------------------------


class _Grid:
    """A flat world for the search: ``cols[prop][i]`` attribute values, ``region[i]`` and ``rel[r][a][b]``."""

    __slots__ = ("cols", "n", "region", "rel")

    def __init__(self, n: int, cols: Mapping[str, Sequence[str]], region: Sequence[str],
                 rel: Mapping[str, Sequence[Sequence[bool]]]) -> None:
        self.n, self.cols, self.region, self.rel = n, cols, region, rel

    @classmethod
    def from_world(cls, world: World, props: Iterable[str]) -> _Grid:
        n = len(world)
        cols = {p: [world.attribute(i, p) for i in range(n)] for p in props if p != _REGION}
        region = [world.attribute(i, _REGION) for i in range(n)] if _REGION in props else []
        rel = {r: [[a != b and bool(world.holds(r, a, b)) for b in range(n)] for a in range(n)] for r in _REL_AXIS}
        return cls(n, cols, region, rel)


_Fn = Callable[[_Grid, list], Any]

# Kleene connectives over True / False / None (unknown), used by the three-valued mode.


def _decide(values: Iterable[bool | None], stop: bool) -> bool | None:
    """Kleene ``or`` (``stop`` True) or ``and`` (``stop`` False) of the values, lazily: ``stop`` at the first value
    that is ``stop``, unknown (None) if a value was unknown, else ``not stop``."""
    unknown = False
    for v in values:
        if v is None:
            unknown = True
        elif v == stop:
            return stop
    return None if unknown else not stop


def _k_not(v: bool | None) -> bool | None:
    return None if v is None else not v


def _interval_cmp(theta: str, a: tuple[int, int], b: tuple[int, int]) -> bool | None:
    """``x theta y`` for all x in [a0, a1], y in [b0, b1]: True or False when that is decided, else None."""
    (a0, a1), (b0, b1) = a, b
    if theta in ("=", "!="):  # equality is certain iff both are the same point, impossible iff disjoint
        if a0 == a1 == b0 == b1:
            return theta == "="
        if a1 < b0 or b1 < a0:
            return theta == "!="
        return None
    cmp = _THETA[theta]  # <, <=, >, >= are monotone in each argument, so the corners decide
    outcomes = {cmp(x, y) for x in (a0, a1) for y in (b0, b1)}
    return outcomes.pop() if len(outcomes) == 1 else None


class _Compiler:
    """Turns a formula into a closure ``f(grid, env)``; variables become fixed positions of the list ``env``.

    Two modes. Exact (default): the same semantics as `formula_holds`, over a `_Grid`. Three-valued
    (``partial=True``, Kleene logic): region literals and relation facts between distinct objects are unknown
    (None) and counts are intervals ``(lo, hi)``. That mode is sound (a True/False answer holds in every
    layout), which lets the search drop attribute assignments before enumerating layouts.
    """

    def __init__(self, params: Mapping[str, Any], partial: bool = False) -> None:
        self.params = params
        self.partial = partial
        self.size = 0

    def program(self, formula: Mapping[str, Any]) -> Callable[[_Grid], Any]:
        f = self.formula(formula, {})
        env: list = [0] * self.size
        return lambda g: f(g, env)

    def _pos(self, scope: Mapping[str, int], v: str) -> int:
        try:
            return scope[v]
        except KeyError:
            raise FormulaError(f"unbound variable {v!r} (bound: {sorted(scope)})") from None

    # -- quantifier blocks --------------------------------------------------------------------------------------
    def _block(self, node: Mapping[str, Any], scope: Mapping[str, int], kind: str, body_node: Mapping[str, Any]
               ) -> _Fn:
        """A block of docs/spec_language.md §4.3 as a closure; ``kind`` is exists, forall or count."""
        vs, distinct, dfrom = _block(node, self.params)
        excl = [self._pos(scope, u) for u in dfrom]
        inner = dict(scope)
        pos = []
        for v in vs:
            inner[v] = self.size
            pos.append(self.size)
            self.size += 1
        body = self.formula(body_node, inner)
        k = len(pos)

        def free(g: _Grid, e: list) -> Iterable[int]:
            if not excl:
                return range(g.n)
            bad = {e[p] for p in excl}
            return [o for o in range(g.n) if o not in bad]

        if k == 1:
            p0 = pos[0]

            def values(g: _Grid, e: list) -> Iterator[Any]:
                for o in free(g, e):
                    e[p0] = o
                    yield body(g, e)
        else:
            def values(g: _Grid, e: list) -> Iterator[Any]:
                objs = list(free(g, e))
                for tup in (itertools.permutations(objs, k) if distinct else itertools.product(objs, repeat=k)):
                    for p, o in zip(pos, tup, strict=True):
                        e[p] = o
                    yield body(g, e)

        if not self.partial:
            if kind == "exists":
                return lambda g, e: any(values(g, e))
            if kind == "forall":
                return lambda g, e: all(values(g, e))
            return lambda g, e: sum(1 for v in values(g, e) if v)
        if kind == "count":
            def count(g: _Grid, e: list) -> tuple[int, int]:
                lo = hi = 0
                for v in values(g, e):
                    if v is not False:
                        hi += 1
                        lo += v is True
                return lo, hi
            return count
        stop = kind == "exists"  # the value that decides the quantifier

        return lambda g, e: _decide(values(g, e), stop)

    # -- formulas and terms -------------------------------------------------------------------------------------
    def formula(self, f: Mapping[str, Any], scope: Mapping[str, int]) -> _Fn:
        op = _op(f)
        part = self.partial
        if op == "true":
            return lambda g, e: True
        if op == "false":
            return lambda g, e: False
        if op == "attr":
            prop, value, neg = _attr_lit(f["lit"], self.params)
            p = self._pos(scope, f["var"])
            if prop == _REGION:
                if part:
                    return lambda g, e: None
                return lambda g, e: (g.region[e[p]] == value) != neg
            return lambda g, e: (g.cols[prop][e[p]] == value) != neg
        if op == "rel":
            rel, neg = _rel_lit(f["lit"], self.params)
            if rel not in _REL_AXIS:
                raise FormulaError(f"unknown relation {rel!r}; expected one of {sorted(_REL_AXIS)}")
            pa, pb = (self._pos(scope, v) for v in f["args"])
            if part:  # rel(a, a) is false (so the literal is `neg`); other facts are unknown
                return lambda g, e: neg if e[pa] == e[pb] else None
            return lambda g, e: (e[pa] != e[pb] and g.rel[rel][e[pa]][e[pb]]) != neg
        if op == "eq":
            pa, pb = (self._pos(scope, v) for v in f["args"])
            return lambda g, e: e[pa] == e[pb]
        if op == "not":
            h = self.formula(f["arg"], scope)
            return (lambda g, e: _k_not(h(g, e))) if part else (lambda g, e: not h(g, e))
        if op in ("and", "or", "implies"):
            hs: tuple[_Fn, ...]
            if op == "implies":  # a -> b  ==  (not a) or b
                hs = (self.formula({"op": "not", "arg": f["if"]}, scope), self.formula(f["then"], scope))
            else:
                hs = tuple(self.formula(a, scope) for a in f["args"])
            stop = op != "and"  # the value that decides the connective

            return lambda g, e: _decide((h(g, e) for h in hs), stop)
        if op in ("exists", "forall"):
            return self._block(f, scope, op, f["body"])
        if op == "cmp":
            theta = _resolve(f["theta"], self.params)
            cmp = _theta(theta, self.params)
            lhs, rhs = self.term(f["lhs"], scope), self.term(f["rhs"], scope)
            if part:
                return lambda g, e: _interval_cmp(theta, lhs(g, e), rhs(g, e))
            return lambda g, e: cmp(lhs(g, e), rhs(g, e))
        raise FormulaError(f"unknown formula op {op!r}")

    def term(self, t: Mapping[str, Any], scope: Mapping[str, int]) -> _Fn:
        op = _op(t)
        if op == "const":
            k = _const(t["value"], self.params)
            return (lambda g, e: (k, k)) if self.partial else (lambda g, e: k)
        if op == "count":
            return self._block(t, scope, "count", t["where"])
        raise FormulaError(f"unknown term op {op!r} (terms are count and const)")


def _compile_constraint(c: Constraint, negate: bool = False, partial: bool = False) -> Callable[[_Grid], Any]:
    """The constraint (formula and anti-vacuity), or its negation, as one closure over a `_Grid`."""
    t = c.template
    node: dict[str, Any] = {"op": "and", "args": [t.formula] + ([t.anti_vacuity] if t.anti_vacuity else [])}
    if negate:
        node = {"op": "not", "arg": node}
    return _Compiler(c.params, partial).program(node)
