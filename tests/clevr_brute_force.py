"""SAT/UNSAT of a CLEVR spec by enumerating *all* admissible scenes of exactly n objects (docs/regions.md §5), made
feasible by exact reductions (symmetry breaking, attribute abstraction), with the compiled semantics: the tests'
clingo-free labels (`logicval_hf.contract.reference` is the interpreter these build on).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clevr_compiled import _compile_constraint, _Grid

from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.reference.interpreter import (
    FormulaError,
    _attr_lit,
    _constraint,
    _op,
    _rel_lit,
    _spec,
    constraint_holds,
    formula_holds,
)
from logicval_hf.contract.reference.worlds import _CELL_REGION, _REGION, _REL_AXIS, AbstractWorld, _order_facts, _ranks
from logicval_hf.contract.spec import Constraint, Spec

__all__ = ["BruteForceLimit", "DEFAULT_MAX_WORLDS", "brute_force_satisfiable", "is_tautology"]

DEFAULT_MAX_WORLDS = 5_000_000


class BruteForceLimit(RuntimeError):
    """The exhaustive search would examine more worlds than allowed; no answer is given (never a guess)."""



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
                rel = _rel_lit(node["lit"], params)[0]
                if rel not in _REL_AXIS:
                    raise FormulaError(f"unknown relation {rel!r}; the search knows {sorted(_REL_AXIS)}")
                self.axes.add(_REL_AXIS[rel][0])

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

    Symmetry breaking (docs/regions.md §5): no formula names an object, so renumbering objects maps models to
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
    types = [dict(zip(props, t, strict=True)) for t in itertools.product(*(choices[p] for p in props))]

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
    types = [dict(zip(props, t, strict=True)) for t in itertools.product(*(choices[p] for p in props))]
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
    n = s.fixed_n("the brute-force search")
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
            if not _search(n, [item], domain, max_worlds)[0]:
                return False, None
    return _search(n, items, domain, max_worlds)


def is_tautology(constraint: Constraint | Mapping[str, Any], n: int, max_worlds: int = DEFAULT_MAX_WORLDS) -> bool:
    """True iff the constraint holds on every admissible scene of n objects (docs/spec_language.md §8.2)."""
    sat, _ = brute_force_satisfiable(Spec(n, (_constraint(constraint),)), max_worlds, negate=(0,))
    return not sat
