"""An independent, plain-Python reference semantics of the contract's JSON logic language (no solver).

Written from dsl.md / regions.md / catalog.json only, to serve as the second implementation in differential
tests against the ASP encoding. Three layers:

* `formula_holds` / `constraint_holds` / `violated` / `spec_holds`: a direct Tarskian interpreter of dsl.md §3
  over any *world* (an object with ``__len__``, ``attribute(i, prop) -> str`` and ``holds(rel, a, b) -> bool``;
  a `Scene` is one, so is `AbstractWorld`).
* `AbstractWorld`: a world given by explicit attribute dicts and relation facts (orders, ties, anything).
* `brute_force_satisfiable`: decides SAT/UNSAT of a spec by enumerating *all* admissible scenes of exactly n
  objects (regions.md §5), made feasible by exact reductions (symmetry breaking, attribute abstraction); it
  evaluates formulas with a compiled form of the same semantics that is tested against the interpreter.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, Protocol, Sequence

from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit, Spec

__all__ = [
    "AbstractWorld", "BruteForceLimit", "FormulaError", "World", "brute_force_satisfiable", "constraint_holds",
    "formula_holds", "is_tautology", "spec_holds", "violated",
]

# ---------------------------------------------------------------------------------------------------------------
# Vocabulary fixed by regions.md (kept local on purpose: this module must not share code with the encoding).
# ---------------------------------------------------------------------------------------------------------------

#: relation -> (axis, direction): ``rel(a, b)`` iff ``rank_axis(a) < rank_axis(b)`` (direction +1) or ``>`` (-1),
#: where ranks go left-to-right on x and back-to-front on y (regions.md §3).
_REL_AXIS: dict[str, tuple[str, int]] = {"left": ("x", +1), "right": ("x", -1), "behind": ("y", +1), "front": ("y", -1)}
#: region name -> (column, row) (regions.md §2: column 0 = left, row 0 = back).
_REGION_CELL: dict[str, tuple[int, int]] = {"r0": (0, 0), "r1": (1, 0), "r2": (0, 1), "r3": (1, 1)}
_CELL_REGION: dict[tuple[int, int], str] = {v: k for k, v in _REGION_CELL.items()}
#: the attribute derived from geometry (regions.md §6); every other attribute is chosen freely per object.
_REGION = "region"

_THETA: dict[str, Callable[[int, int], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}

DEFAULT_MAX_WORLDS = 5_000_000


class FormulaError(ValueError):
    """A formula is malformed: unknown op, unbound variable, missing slot, wrongly typed slot value, ..."""


class BruteForceLimit(RuntimeError):
    """The exhaustive search would examine more worlds than allowed; no answer is given (never a guess)."""


class World(Protocol):
    """What the evaluator needs from a scene: its size, attribute values (region included) and relation facts."""

    def __len__(self) -> int: ...
    def attribute(self, i: int, prop: str) -> str: ...
    def holds(self, rel: str, a: int, b: int) -> bool: ...


# ---------------------------------------------------------------------------------------------------------------
# Abstract worlds
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AbstractWorld:
    """A world given explicitly: one attribute dict per object and the set of true ``(rel, a, b)`` facts.

    Nothing is derived: a relation holds iff its fact is listed, so ties (no fact either way) and even
    inadmissible worlds can be written. `from_orders` builds the facts of two strict total orders.
    """

    objects: tuple[Mapping[str, str], ...]
    relations: frozenset[tuple[str, int, int]] = field(default_factory=frozenset)

    def __len__(self) -> int:
        return len(self.objects)

    def attribute(self, i: int, prop: str) -> str:
        return self.objects[i][prop]

    def holds(self, rel: str, a: int, b: int) -> bool:
        return (rel, a, b) in self.relations

    @classmethod
    def from_orders(
        cls, objects: Sequence[Mapping[str, str]], x_order: Sequence[int] | None = None,
        y_order: Sequence[int] | None = None,
    ) -> "AbstractWorld":
        """Facts of two strict total orders: ``x_order`` lists objects left to right, ``y_order`` back to front
        (default: by index). Regions are not derived; put them in ``objects`` yourself."""
        n = len(objects)
        xs = list(range(n)) if x_order is None else list(x_order)
        ys = list(range(n)) if y_order is None else list(y_order)
        if sorted(xs) != list(range(n)) or sorted(ys) != list(range(n)):
            raise ValueError("x_order and y_order must be permutations of the object indices")
        return cls(tuple(dict(o) for o in objects), _order_facts({"x": _ranks(xs), "y": _ranks(ys)}))

    @classmethod
    def from_world(cls, world: World, attributes: Iterable[str]) -> "AbstractWorld":
        """Snapshot any world (e.g. a `Scene`): the listed attributes of every object and all relation facts."""
        n = len(world)
        attrs = list(attributes)
        objs = tuple({a: world.attribute(i, a) for a in attrs} for i in range(n))
        facts = frozenset(
            (r, a, b) for r in _REL_AXIS for a in range(n) for b in range(n) if a != b and world.holds(r, a, b)
        )
        return cls(objs, facts)

    # -- admissibility (regions.md §5) ---------------------------------------------------------------------------
    def axis_ranks(self) -> dict[str, list[int]] | None:
        """Ranks on each axis if both axes are strict total orders with their inverses; else None."""
        n = len(self)
        out: dict[str, list[int]] = {}
        for axis, (fwd, bwd) in (("x", ("left", "right")), ("y", ("behind", "front"))):
            for a in range(n):
                if self.holds(fwd, a, a) or self.holds(bwd, a, a):
                    return None
                for b in range(n):
                    if a != b and (self.holds(fwd, a, b) == self.holds(fwd, b, a)
                                   or self.holds(fwd, a, b) != self.holds(bwd, b, a)):
                        return None  # not total/antisymmetric, or the inverse is wrong
            # a tournament is transitive iff its out-degrees are 0..n-1; the rank is the number of predecessors
            ranks = [sum(self.holds(fwd, b, a) for b in range(n)) for a in range(n)]
            if sorted(ranks) != list(range(n)):
                return None
            out[axis] = ranks
        return out

    def is_admissible(self, domain: Domain | None = None) -> bool:
        """regions.md §5: one value per attribute from the domain, total orders, regions consistent with them."""
        domain = domain or load_catalog().domain
        for o in self.objects:
            for prop, values in domain.attributes.items():
                if o.get(prop) not in values:
                    return False
        ranks = self.axis_ranks()
        if ranks is None:
            return False
        n = len(self)
        for a in range(n):
            for b in range(n):
                ca, ra = _REGION_CELL[self.attribute(a, _REGION)]
                cb, rb = _REGION_CELL[self.attribute(b, _REGION)]
                if ca < cb and not ranks["x"][a] < ranks["x"][b]:
                    return False
                if ra < rb and not ranks["y"][a] < ranks["y"][b]:
                    return False
        return True

    def to_scene(self, image_size: tuple[float, float] = (480, 320)) -> Any:
        """A `Scene` whose box centres realise this admissible world exactly (regions, both orders)."""
        from logicval_hf.contract.scene import Scene, SceneObject  # local: scene.py is only needed for this conversion

        ranks = self.axis_ranks()
        if ranks is None:
            raise ValueError("to_scene needs strict total orders on both axes")
        w, h = image_size
        n = len(self)
        cells = [_REGION_CELL[self.attribute(i, _REGION)] for i in range(n)]
        centre = [[0.0, 0.0] for _ in range(n)]
        for k, (axis, size) in enumerate((("x", w), ("y", h))):
            for half in (0, 1):
                members = sorted((i for i in range(n) if cells[i][k] == half), key=lambda i: ranks[axis][i])
                for j, i in enumerate(members):  # evenly spaced strictly inside that half of the image
                    centre[i][k] = half * size / 2 + (j + 1) * (size / 2) / (len(members) + 1)
        domain = load_catalog().domain
        objs = []
        for i in range(n):
            cx, cy = centre[i]
            attrs = {p: self.attribute(i, p) for p in domain.perceived_attributes}
            objs.append(SceneObject(attrs, (cx - 2.0, cy - 2.0, cx + 2.0, cy + 2.0)))
        return Scene((w, h), tuple(objs), domain)


def _ranks(order: Sequence[int]) -> list[int]:
    ranks = [0] * len(order)
    for pos, obj in enumerate(order):
        ranks[obj] = pos
    return ranks


def _order_facts(ranks: Mapping[str, Sequence[int]]) -> frozenset[tuple[str, int, int]]:
    n = len(next(iter(ranks.values()))) if ranks else 0
    facts = set()
    for rel, (axis, d) in _REL_AXIS.items():
        r = ranks[axis]
        for a in range(n):
            for b in range(n):
                if a != b and (r[a] < r[b] if d > 0 else r[a] > r[b]):
                    facts.add((rel, a, b))
    return frozenset(facts)


# ---------------------------------------------------------------------------------------------------------------
# Slot references and literals
# ---------------------------------------------------------------------------------------------------------------


def _resolve(x: Any, params: Mapping[str, Any]) -> Any:
    """``"$NAME"`` -> the value of slot NAME; anything else unchanged."""
    if isinstance(x, str) and x.startswith("$"):
        name = x[1:]
        if name not in params:
            raise FormulaError(f"reference {x!r} to a slot that has no value (params: {sorted(params)})")
        return params[name]
    return x


def _attr_lit(lit: Any, params: Mapping[str, Any]) -> tuple[str, str, bool]:
    lit = _resolve(lit, params)
    if isinstance(lit, AttrLit):
        return lit.prop, lit.value, lit.negated
    if isinstance(lit, Mapping) and "prop" in lit and "value" in lit:
        prop, value, neg = (_resolve(lit.get(k, False), params) for k in ("prop", "value", "negated"))
        if not isinstance(neg, bool):
            raise FormulaError(f"attribute literal {dict(lit)}: negated must be a boolean")
        return str(prop), str(value), neg
    raise FormulaError(f"expected an attribute literal, got {lit!r}")


def _rel_lit(lit: Any, params: Mapping[str, Any]) -> tuple[str, bool]:
    lit = _resolve(lit, params)
    if isinstance(lit, RelLit):
        rel, neg = lit.rel, lit.negated
    elif isinstance(lit, Mapping) and "rel" in lit:
        rel, neg = (_resolve(lit.get(k, False), params) for k in ("rel", "negated"))
    else:
        raise FormulaError(f"expected a relation literal, got {lit!r}")
    if rel not in _REL_AXIS:
        raise FormulaError(f"unknown relation {rel!r}; expected one of {sorted(_REL_AXIS)}")
    if not isinstance(neg, bool):
        raise FormulaError(f"relation literal {lit!r}: negated must be a boolean")
    return rel, neg


def _theta(t: Any, params: Mapping[str, Any]) -> Callable[[int, int], bool]:
    t = _resolve(t, params)
    if t not in _THETA:
        raise FormulaError(f"unknown comparator {t!r}; expected one of {list(_THETA)}")
    return _THETA[t]


def _const(v: Any, params: Mapping[str, Any]) -> int:
    v = _resolve(v, params)
    if isinstance(v, bool) or not isinstance(v, int):
        raise FormulaError(f"const term needs an integer, got {v!r}")
    return v


def _op(node: Any) -> str:
    if not isinstance(node, Mapping) or "op" not in node:
        raise FormulaError(f"not a formula node: {node!r}")
    return node["op"]


def _block(node: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[list[str], bool, list[str]]:
    vs = list(node.get("vars", ()))
    distinct = _resolve(node.get("distinct", False), params)
    if not isinstance(distinct, bool):
        raise FormulaError(f"{node['op']} block: distinct must be a boolean, got {distinct!r}")
    return vs, distinct, list(node.get("distinct_from", ()))


# ---------------------------------------------------------------------------------------------------------------
# The interpreter (dsl.md §3): the reference meaning
# ---------------------------------------------------------------------------------------------------------------


def formula_holds(
    formula: Mapping[str, Any], params: Mapping[str, Any], world: World, env: Mapping[str, int] | None = None
) -> bool:
    """Truth of a DSL formula on ``world`` under variable bindings ``env`` (var name -> object index).

    ``params`` maps slot names to values (`AttrLit`, `RelLit`, int, comparator string, or the JSON dict forms);
    ``"$NAME"`` in a literal, a theta or a const is looked up there.
    """
    return _holds(formula, params, world, len(world), dict(env or {}))


def _var(env: Mapping[str, int], v: str) -> int:
    try:
        return env[v]
    except KeyError:
        raise FormulaError(f"unbound variable {v!r} (bound: {sorted(env)})") from None


def _assignments(node: Mapping[str, Any], params: Mapping[str, Any], n: int, env: Mapping[str, int]
                 ) -> Iterator[dict[str, int]]:
    """dsl.md §3.1: all tuples of objects for ``vars`` (pairwise different if ``distinct``), each different from
    the objects bound to the ``distinct_from`` variables; yields the extended environments."""
    vs, distinct, dfrom = _block(node, params)
    excluded = {_var(env, u) for u in dfrom}
    for tup in itertools.product(range(n), repeat=len(vs)):
        if any(o in excluded for o in tup):
            continue
        if distinct and len(set(tup)) != len(tup):
            continue
        inner = dict(env)
        inner.update(zip(vs, tup))
        yield inner


def _holds(f: Mapping[str, Any], params: Mapping[str, Any], world: World, n: int, env: dict[str, int]) -> bool:
    op = _op(f)
    if op == "true":
        return True
    if op == "false":
        return False
    if op == "attr":
        prop, value, neg = _attr_lit(f["lit"], params)
        return (world.attribute(_var(env, f["var"]), prop) == value) != neg
    if op == "rel":
        rel, neg = _rel_lit(f["lit"], params)
        a, b = (_var(env, v) for v in f["args"])
        # dsl.md §2.1: rel(a, a) is false whatever the world says; facts are read closed-world.
        fact = a != b and bool(world.holds(rel, a, b))
        return fact != neg
    if op == "eq":
        a, b = (_var(env, v) for v in f["args"])
        return a == b
    if op == "not":
        return not _holds(f["arg"], params, world, n, env)
    if op == "and":
        return all(_holds(g, params, world, n, env) for g in f["args"])
    if op == "or":
        return any(_holds(g, params, world, n, env) for g in f["args"])
    if op == "implies":
        return (not _holds(f["if"], params, world, n, env)) or _holds(f["then"], params, world, n, env)
    if op == "exists":
        return any(_holds(f["body"], params, world, n, e) for e in _assignments(f, params, n, env))
    if op == "forall":
        return all(_holds(f["body"], params, world, n, e) for e in _assignments(f, params, n, env))
    if op == "cmp":
        cmp = _theta(f["theta"], params)
        return cmp(_term(f["lhs"], params, world, n, env), _term(f["rhs"], params, world, n, env))
    raise FormulaError(f"unknown formula op {op!r}")


def _term(t: Mapping[str, Any], params: Mapping[str, Any], world: World, n: int, env: dict[str, int]) -> int:
    op = _op(t)
    if op == "const":
        return _const(t["value"], params)
    if op == "count":  # number of tuples (assignments of all of vars) satisfying `where`
        return sum(1 for e in _assignments(t, params, n, env) if _holds(t["where"], params, world, n, e))
    raise FormulaError(f"unknown term op {op!r} (terms are count and const)")


def _constraint(c: Constraint | Mapping[str, Any]) -> Constraint:
    return c if isinstance(c, Constraint) else Constraint.from_dict(c)


def constraint_holds(constraint: Constraint | Mapping[str, Any], world: World) -> bool:
    """dsl.md §3.2: the template's formula holds and so does its anti-vacuity clause when it has one."""
    c = _constraint(constraint)
    t = c.template
    if not formula_holds(t.formula, c.params, world):
        return False
    return t.anti_vacuity is None or formula_holds(t.anti_vacuity, c.params, world)


def _spec(spec: Spec | Mapping[str, Any] | str) -> Spec:
    return spec if isinstance(spec, Spec) else Spec.from_dict(spec, allowed_m=None)


def violated(spec: Spec | Mapping[str, Any], world: World) -> list[int]:
    """Indices of the spec's constraints that fail on ``world`` (the object count is not looked at)."""
    s = _spec(spec)
    return [i for i, c in enumerate(s.constraints) if not constraint_holds(c, world)]


def spec_holds(spec: Spec | Mapping[str, Any], world: World, count: str = "strict") -> bool:
    """``strict``: exactly n objects and every constraint holds (dsl.md §3.2); ``relaxed``: ignore the count."""
    if count not in ("strict", "relaxed"):
        raise ValueError(f"count must be 'strict' or 'relaxed', got {count!r}")
    s = _spec(spec)
    if count == "strict" and len(world) != s.n:
        return False
    return not violated(s, world)


# ---------------------------------------------------------------------------------------------------------------
# Compiled evaluation (same semantics, closures over a flat world) used by the exhaustive search
# ---------------------------------------------------------------------------------------------------------------


class _Grid:
    """A flat world for the search: ``cols[prop][i]`` attribute values, ``region[i]`` and ``rel[r][a][b]``."""

    __slots__ = ("n", "cols", "region", "rel")

    def __init__(self, n: int, cols: Mapping[str, Sequence[str]], region: Sequence[str],
                 rel: Mapping[str, Sequence[Sequence[bool]]]) -> None:
        self.n, self.cols, self.region, self.rel = n, cols, region, rel

    @classmethod
    def from_world(cls, world: World, props: Iterable[str]) -> "_Grid":
        n = len(world)
        cols = {p: [world.attribute(i, p) for i in range(n)] for p in props if p != _REGION}
        region = [world.attribute(i, _REGION) for i in range(n)] if _REGION in props else []
        rel = {r: [[a != b and bool(world.holds(r, a, b)) for b in range(n)] for a in range(n)] for r in _REL_AXIS}
        return cls(n, cols, region, rel)


_Fn = Callable[[_Grid, list], Any]

# Kleene connectives over True / False / None (unknown), used by the three-valued mode.


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
        """A block of dsl.md §3.1 as a closure; ``kind`` is exists, forall or count."""
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
                    for p, o in zip(pos, tup):
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

        def quant(g: _Grid, e: list) -> bool | None:
            unknown = False
            for v in values(g, e):
                if v is None:
                    unknown = True
                elif v == stop:
                    return stop
            return None if unknown else not stop
        return quant

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
            if op == "implies":  # a -> b  ==  (not a) or b
                hs = (self.formula({"op": "not", "arg": f["if"]}, scope), self.formula(f["then"], scope))
            else:
                hs = tuple(self.formula(a, scope) for a in f["args"])
            stop = op != "and"  # the value that decides the connective

            def conn(g: _Grid, e: list) -> bool | None:
                unknown = False
                for h in hs:
                    v = h(g, e)
                    if v is None:
                        unknown = True
                    elif v == stop:
                        return stop
                return None if unknown else not stop
            return conn
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


# ---------------------------------------------------------------------------------------------------------------
# Exhaustive satisfiability
# ---------------------------------------------------------------------------------------------------------------


def _walk(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        if "op" in node:
            yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from _walk(v)


@dataclass
class _Usage:
    """What a set of formulas can observe: attribute values tested per attribute, relations, regions."""

    values: dict[str, set[str]] = field(default_factory=dict)
    axes: set[str] = field(default_factory=set)

    def add(self, formula: Mapping[str, Any] | None, params: Mapping[str, Any]) -> None:
        for node in _walk(formula):
            if node["op"] == "attr":
                prop, value, _ = _attr_lit(node["lit"], params)
                self.values.setdefault(prop, set()).add(value)
            elif node["op"] == "rel":
                self.axes.add(_REL_AXIS[_rel_lit(node["lit"], params)[0]][0])

    @property
    def geometric(self) -> bool:
        return bool(self.axes) or _REGION in self.values


def _usage(c: Constraint) -> _Usage:
    u = _Usage()
    u.add(c.template.formula, c.params)
    u.add(c.template.anti_vacuity, c.params)
    return u


def _unary_body(f: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``forall x. B(x)`` where B only tests non-region attributes of x: then every object must satisfy B."""
    if _op(f) != "forall" or len(f.get("vars", ())) != 1 or f.get("distinct_from"):
        return None
    x = f["vars"][0]
    for node in _walk(f["body"]):
        op = node["op"]
        if op in ("true", "false", "not", "and", "or", "implies"):
            continue
        if op == "attr" and node["var"] == x and _attr_lit(node["lit"], params)[0] != _REGION:
            continue
        return None
    return x, f["body"]


@dataclass(frozen=True)
class _Layout:
    """One admissible geometry: ranks on both axes (left-to-right, back-to-front) and the regions they allow."""

    xr: tuple[int, ...]
    yr: tuple[int, ...]
    region: tuple[str, ...]
    rel: Mapping[str, tuple[tuple[bool, ...], ...]]


def _make_layout(xr: Sequence[int], yr: Sequence[int], col_split: int, row_split: int) -> _Layout:
    """Column 1 iff x-rank >= col_split, row 1 iff y-rank >= row_split: region-consistent by construction
    (all left-column objects precede all right-column ones in x, likewise back before front in y)."""
    n = len(xr)
    region = tuple(_CELL_REGION[(int(xr[i] >= col_split), int(yr[i] >= row_split))] for i in range(n))
    rel = {}
    for r, (axis, d) in _REL_AXIS.items():
        rk = xr if axis == "x" else yr
        rel[r] = tuple(tuple(a != b and (rk[a] < rk[b] if d > 0 else rk[a] > rk[b]) for b in range(n))
                       for a in range(n))
    return _Layout(tuple(xr), tuple(yr), region, rel)


def _layout_tree(n: int, usage: _Usage) -> list[tuple[_Layout, list[_Layout]]]:
    """All admissible geometries the formulas can tell apart, grouped by y-order: ``[(base, children)]`` where
    ``base`` carries one y-order (with a fixed region split) and ``children`` that y-order with every region
    split that matters.

    Symmetry breaking (regions.md §5): no formula names an object, so renumbering objects maps models to
    models; we number them left to right, which makes the x-order the identity (and the column condition
    "column non-decreasing in the index"). If regions are not tested, every pair of orders is admissible with
    the fixed split below (column 1 iff x-rank >= d, row 1 iff y-rank >= d is consistent with any orders), and
    if at most one axis is tested we may number the objects along *that* axis instead, so one y-order
    suffices.
    """
    ident = list(range(n))
    d = (n + 1) // 2
    uses_region = _REGION in usage.values
    y_orders = itertools.permutations(range(n)) if uses_region or usage.axes == {"x", "y"} else [ident]
    splits = [(c, r) for c in range(n + 1) for r in range(n + 1)] if uses_region else [(d, d)]
    return [(_make_layout(ident, _ranks(yo), d, d), [_make_layout(ident, _ranks(yo), c, r) for c, r in splits])
            for yo in y_orders]


def _multiset_perms(ms: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Distinct orderings of a multiset (sorted input), each once."""
    counts: dict[int, int] = {}
    for v in ms:
        counts[v] = counts.get(v, 0) + 1
    keys = sorted(counts)
    n = len(ms)
    out = [0] * n

    def rec(i: int) -> Iterator[tuple[int, ...]]:
        if i == n:
            yield tuple(out)
            return
        for k in keys:
            if counts[k]:
                counts[k] -= 1
                out[i] = k
                yield from rec(i + 1)
                counts[k] += 1
    return rec(0)


def _spec_usage(items: Sequence[tuple[Constraint, bool]]) -> _Usage:
    usage = _Usage()
    for c, _ in items:
        u = _usage(c)
        for p, vals in u.values.items():
            usage.values.setdefault(p, set()).update(vals)
        usage.axes |= u.axes
    return usage


def _abstract_values(domain: Domain, usage: _Usage, spare: int = 1) -> dict[str, list[str]]:
    """Per perceived attribute: the values the formulas mention, plus up to ``spare`` unmentioned ones."""
    out = {}
    for p in domain.perceived_attributes:
        mentioned = usage.values.get(p, set())
        vals = [v for v in domain.values(p) if v in mentioned]
        vals += [v for v in domain.values(p) if v not in mentioned][:spare]
        out[p] = vals
    return out


def _search(
    n: int, items: Sequence[tuple[Constraint, bool]], domain: Domain, max_worlds: int,
) -> tuple[bool, AbstractWorld | None]:
    """Exhaustive search over admissible n-object worlds for one where every constraint holds (or, if its flag
    is set, fails)."""
    usage = _spec_usage(items)

    # Attribute abstraction. A formula can observe an attribute only through literals ``o.prop == v`` (possibly
    # negated) with v among the values the spec mentions. Two values of prop that are both unmentioned satisfy
    # exactly the same literals, so replacing every unmentioned value by one representative preserves the
    # truth of every literal and hence (by induction on formulas) of every formula, and it keeps admissibility
    # (perceived attributes are independent of the layout). So the worlds over {mentioned values} +
    # {one representative, if some value is unmentioned} realise every truth pattern that all worlds realise.
    # Region is not abstracted: it is derived from the layout, which is enumerated in full.
    props = list(domain.perceived_attributes)
    choices = _abstract_values(domain, usage)
    types = [dict(zip(props, t)) for t in itertools.product(*(choices[p] for p in props))]

    # Exact pruning: a (non-negated) constraint ``forall x. B(x)`` with B over x's own perceived attributes
    # forces every object to satisfy B; other objects types can never occur in a model.
    for c, neg in items:
        ub = None if neg else _unary_body(c.template.formula, c.params)
        if ub is not None:
            x, body = ub
            types = [t for t in types if formula_holds(body, c.params, AbstractWorld((t,)), {x: 0})]

    # Constraints by what they observe. With the x-order fixed to the identity, a constraint that tests only
    # left/right is decided by the attribute assignment alone; one that also tests front/behind by the y-order
    # too; only region literals need the column/row split. Each is checked at the outermost loop that fixes
    # everything it can see, which prunes without losing any world.
    # (Constraints that see no geometry are decided in stage 1.)
    levels: dict[int, list[Callable[[_Grid], bool]]] = {1: [], 2: [], 3: []}
    for c, neg in items:
        u = _usage(c)
        if u.geometric:
            levels[3 if _REGION in u.values else 2 if "y" in u.axes else 1].append(_compile_constraint(c, neg))

    budget = [max_worlds]

    def spend() -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise BruteForceLimit(f"more than max_worlds={max_worlds} worlds examined at n={n} without an answer")

    ident = list(range(n))
    d = (n + 1) // 2
    default = _make_layout(ident, ident, d, d)

    def columns(assign: Sequence[int]) -> dict[str, list[str]]:
        return {p: [types[k][p] for k in assign] for p in props}

    def witness(assign: Sequence[int], lay: _Layout) -> AbstractWorld:
        objs = tuple({**types[k], _REGION: lay.region[i]} for i, k in enumerate(assign))
        return AbstractWorld(objs, _order_facts({"x": lay.xr, "y": lay.yr}))

    def all_hold(checks: list[Callable[[_Grid], Any]], g: _Grid, partial: bool = False) -> bool:
        """Every check passes (three-valued: none is False). Fail-first: a check that fails moves to the front."""
        for i, chk in enumerate(checks):
            if chk(g) is False if partial else not chk(g):
                if i:
                    checks.insert(0, checks.pop(i))
                return False
        return True

    partial = [_compile_constraint(c, neg, partial=True) for c, neg in items]
    tree = _layout_tree(n, usage)
    for ms in itertools.combinations_with_replacement(range(len(types)), n):
        # Stage 1, per multiset of object types. With the geometry unknown (three-valued mode of `_Compiler`)
        # a closed formula is invariant under permuting the objects, so a multiset is tested once: a
        # constraint that is already False rules it out in every layout; if all are already True, every
        # layout is a model. Constraints that see no geometry are decided exactly here.
        spend()
        g = _Grid(n, columns(ms), default.region, default.rel)
        if not all_hold(partial, g, partial=True):
            continue
        if all(chk(g) is True for chk in partial):
            return True, witness(ms, default)
        # Stage 2: every ordering of the multiset, in every layout (nested as described above).
        for assign in _multiset_perms(ms):
            cols = columns(assign)
            spend()
            if not all_hold(levels[1], _Grid(n, cols, default.region, default.rel)):
                continue
            for base, children in tree:
                spend()
                if not all_hold(levels[2], _Grid(n, cols, base.region, base.rel)):
                    continue
                for lay in children:
                    spend()
                    if all_hold(levels[3], _Grid(n, cols, lay.region, lay.rel)):
                        return True, witness(assign, lay)
    return False, None


def _naive_search(
    n: int, items: Sequence[tuple[Constraint, bool]], domain: Domain, spare: int = 2,
) -> tuple[bool, AbstractWorld | None]:
    """The same decision with no cleverness, for testing `_search`: the interpreter on every world with every
    x-order, every y-order and every region split (all splits only when a region literal occurs), and
    ``spare`` unmentioned values per attribute. Only feasible for tiny n and few mentioned values."""
    usage = _spec_usage(items)
    choices = _abstract_values(domain, usage, spare)
    props = list(choices)
    types = [dict(zip(props, t)) for t in itertools.product(*(choices[p] for p in props))]
    perms = list(itertools.permutations(range(n)))
    d = (n + 1) // 2
    splits = [(c, r) for c in range(n + 1) for r in range(n + 1)] if _REGION in usage.values else [(d, d)]
    for xo in perms:
        for yo in perms:
            facts = _order_facts({"x": _ranks(xo), "y": _ranks(yo)})
            xr, yr = _ranks(xo), _ranks(yo)
            for c, r in splits:
                regions = [_CELL_REGION[(int(xr[i] >= c), int(yr[i] >= r))] for i in range(n)]
                for assign in itertools.product(types, repeat=n):
                    w = AbstractWorld(tuple({**t, _REGION: regions[i]} for i, t in enumerate(assign)), facts)
                    if all(constraint_holds(cn, w) != neg for cn, neg in items):
                        return True, w
    return False, None


def brute_force_satisfiable(
    spec: Spec | Mapping[str, Any], max_worlds: int = DEFAULT_MAX_WORLDS, *,
    negate: Collection[int] = (), catalog: Catalog | None = None,
) -> tuple[bool, AbstractWorld | None]:
    """Decide whether some admissible scene of exactly ``spec.n`` objects satisfies every constraint.

    Exact: enumerates all admissible scenes up to the reductions argued in `_layout_tree` and `_search`. Returns
    ``(True, witness)`` or ``(False, None)``. Constraints whose index is in ``negate`` must be *false* instead
    (e.g. a constraint is a tautology at n iff its negation is UNSAT, see `is_tautology`). Raises
    `BruteForceLimit` rather than examine more than ``max_worlds`` worlds. A `Spec` may be built directly
    (``Spec(n, (c1, c2))``) to test combinations the spec rules forbid (e.g. two constraints of one class).
    """
    s = _spec(spec)
    domain = (catalog or load_catalog()).domain
    negated = set(negate)
    bad = sorted(i for i in negated if not 0 <= i < len(s.constraints))
    if bad:
        raise IndexError(f"negate indices {bad} out of range")
    items = [(c, i in negated) for i, c in enumerate(s.constraints)]
    if len(items) > 1:
        # Exact shortcut: if one constraint alone has no model, neither has the conjunction (these single
        # searches are small; they spare the full search its worst case, e.g. a count K above n).
        for item in items:
            if not _search(s.n, [item], domain, max_worlds)[0]:
                return False, None
    return _search(s.n, items, domain, max_worlds)


def is_tautology(constraint: Constraint | Mapping[str, Any], n: int, max_worlds: int = DEFAULT_MAX_WORLDS) -> bool:
    """True iff the constraint holds on every admissible scene of n objects (DECISIONS.md 10)."""
    sat, _ = brute_force_satisfiable(Spec(n, (_constraint(constraint),)), max_worlds, negate=(0,))
    return not sat
