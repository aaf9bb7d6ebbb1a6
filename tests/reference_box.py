"""An independent reference for box-geometry domains (COCO): SAT/UNSAT of open-size specs by a plain-Python search,
with no clingo, no code of the encoding or of its placements, and no lattice.

What is searched. A scene is a sequence of objects, each a tuple of attribute values; detection scores fall along
the sequence, so the objects of a class are ranked in their order. `satisfiable` enumerates such sequences of at most
`size_bound` objects up to two reductions (an attribute's values the spec never names satisfy the same literals, so
one of them stands for all, one per weight for a summed noun; renaming objects maps models to models, so sequences
are multisets, except within a class when ranks are read), pruning prefixes that a plain universal or a count
bounded from above already breaks.

Relations, lazily. A spec reads relations only through the interpreter's ``holds(rel, a, b)``. For a sequence of
objects the search evaluates the constraints on a `PatternWorld` whose relations are chosen on demand: when the
interpreter asks for a relation no choice has fixed yet, the search branches on it (before / after / neither on an
offset axis or for containment, smaller / larger / equal for areas, and for containment also "the same box"). Every
branch keeps the choices consistent with what any set of boxes obeys (module docstring of `Pattern`); a branch
where every constraint holds has relations that boxes might have. Then `realise` looks for boxes: a linear program
over centres and sizes for fixed orders of the centres, with GenEval's rule replaced by linear conditions that imply
it; boxes it finds are checked with the exact rule (rational arithmetic) and in floating point, and the
interpreter evaluates the spec on them. So

* SAT: boxes were found on which the interpreter finds every constraint true (a real witness);
* UNSAT: no consistent choice of relations satisfies the constraints, for any sequence up to the bound;
* `Undecided` (raised): relations were found, boxes were not.

`size_bound` is this module's own bound, from a plain reading of the formulas (every constant plus one, every
existential variable, twice under a universal). It is not the solver's (`logicval_hf.asp.universe`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from logicval_hf.contract.domain import Domain
from logicval_hf.contract.reference.interpreter import constraint_holds, formula_holds
from logicval_hf.contract.spec import AttrLit, RelLit, Spec


def _resolve(v: Any, params: Mapping[str, Any]) -> Any:
    return params[v[1:]] if isinstance(v, str) and v.startswith("$") else v


def _nodes(spec: Spec) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    for c in spec.constraints:
        for node in _walk(c.template.formula) + _walk(c.template.anti_vacuity):
            yield node, c.params


def named(spec: Spec) -> tuple[dict[str, set[str]], set[str], list[str], bool]:
    """(values named per attribute, relations named, constants summed, whether a rank is read)."""
    values: dict[str, set[str]] = {}
    rels: set[str] = set()
    sums: list[str] = []
    ranked = False
    for node, params in _nodes(spec):
        op = node["op"]
        if op == "attr":
            lit = _resolve(node["lit"], params)
            prop, value = (lit.prop, lit.value) if isinstance(lit, AttrLit) else (lit["prop"], lit["value"])
            values.setdefault(prop, set()).add(value)
        elif op == "rel":
            lit = _resolve(node["lit"], params)
            rels.add(lit.rel if isinstance(lit, RelLit) else lit["rel"])
        elif op == "sum":
            sums.append(_resolve(node["weight"], params))
        elif op == "value":
            ranked = True
    return values, rels, sums, ranked


def value_choices(spec: Spec) -> dict[str, list[str]]:
    """Per perceived attribute: the named values, then one unnamed value per weight (one in all without sums)."""
    dom = spec.domain
    values, _, sums, _ = named(spec)
    out = {}
    for attr in dom.perceived_attributes:
        mentioned = values.get(attr, set())
        chosen = [v for v in dom.values(attr) if v in mentioned]
        by_weight: dict[tuple, str] = {}
        for v in dom.values(attr):
            if v not in mentioned:
                key = tuple(dom.constants[c].get(v) for c in sums) if attr == dom.noun else ()
                by_weight.setdefault(key, v)
        out[attr] = chosen + list(by_weight.values())
    return out


def size_bound(spec: Spec) -> int:
    """This module's bound on the objects a model needs (see the module docstring): one more than every count,
    sum or rank constant, one per variable of a block that asks for objects to exist (an ``exists``, or a
    ``forall`` that asks for one inside), two per such variable when a ``forall`` holds it (a witness for each of
    the objects the rest needs), plus one; then twice that, plus one, for every comparison of two counts (each can
    ask for one more object than all the others need)."""
    total = 1
    for c in spec.constraints:
        for formula in (c.template.formula, c.template.anti_vacuity):
            total += _witnesses(formula, c.params, False)
    for c in spec.constraints:
        for formula in (c.template.formula, c.template.anti_vacuity):
            for node in _walk(formula):
                if node["op"] == "cmp" and all(node[s].get("op") in ("count", "sum") for s in ("lhs", "rhs")):
                    total = 2 * total + 1
    return total


def _witnesses(node: Any, params: Mapping[str, Any], under_forall: bool) -> int:
    if not isinstance(node, Mapping):
        return sum(_witnesses(v, params, under_forall) for v in node) if isinstance(node, list) else 0
    op = node.get("op")
    own = 0
    if op == "const":
        own = int(_resolve(node["value"], params)) + 1
    elif op == "exists" or (op in ("count", "sum") and under_forall):
        own = len(node["vars"]) * (2 if under_forall else 1)
    inner = under_forall or op == "forall"
    return own + sum(_witnesses(v, params, inner) for k, v in node.items() if k != "op")


def _walk(node: Any) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    if isinstance(node, Mapping):
        if "op" in node:
            out.append(node)
        for v in node.values():
            out += _walk(v)
    elif isinstance(node, list):
        for v in node:
            out += _walk(v)
    return out


def _geometric(c: Any) -> bool:
    """Whether a constraint reads a relation."""
    return any(node["op"] == "rel" for node in _walk(c.template.formula) + _walk(c.template.anti_vacuity))


def _prunable(c: Any) -> bool:
    """Whether adding objects can only keep the formula false once it is false: a plain universal (``forall`` at
    the top, nothing inside that asks for objects or reads a rank), or a count or weighted sum of a plain condition
    bounded from above by a constant."""
    f = c.template.formula
    op = f.get("op")
    if op == "forall":
        return not any(n["op"] in ("exists", "count", "sum", "value") for n in _walk(f["body"]))
    if op == "cmp":
        theta = _resolve(f["theta"], c.params)
        lhs, rhs = f["lhs"], f["rhs"]
        term, upper = (lhs, theta in ("<", "<=")) if rhs.get("op") == "const" else (rhs, theta in (">", ">="))
        one_constant = (lhs.get("op") == "const") != (rhs.get("op") == "const")
        return (upper and term.get("op") in ("count", "sum") and one_constant
                and not any(n["op"] in ("exists", "forall", "count", "sum", "value") for n in _walk(term["where"])))
    return False


class TooLarge(RuntimeError):
    """The search would go past its limit: the case is left out, never answered by a guess."""


class Undecided(RuntimeError):
    """Relations satisfying the spec were found, and no boxes for them: neither label is claimed."""


# ---------------------------------------------------------------------------------------------------------------
# Families of relations (this module's reading of the domain file)
# ---------------------------------------------------------------------------------------------------------------
def _family(domain: Domain, rel: str) -> tuple[str, bool]:
    """(family, whether ``rel`` is the family's forward relation): offsets by axis, areas, containment. The forward
    relation of a family is the one from the object with the smaller coordinate, area, or the inner box."""
    rule = domain.rules[rel]
    if rule.kind == "box_offset":
        return rule.axis, rule.sign < 0
    if rule.kind == "box_area":
        return "area", rule.sign < 0
    if rule.kind == "box_inside":
        return "nest", rule.sign < 0
    raise ValueError(f"{rel}: not a box relation")


class Unknown(Exception):
    """The interpreter asked for a relation between two twin classes that no choice has fixed yet."""

    def __init__(self, family: str, a: int, b: int):
        super().__init__(family, a, b)
        self.family, self.a, self.b = family, a, b


@dataclass
class Pattern:
    """Relations chosen so far between the twin classes of k objects.

    ``cls[i]``: object i's class (objects of one class have the same box: containment both ways, no other relation
    between them, the same relations to everything else). ``chosen[family][(a, b)]`` with a < b, for classes a and b:
    ``"lt"`` (a's forward relation to b: a left of / above / smaller than / strictly inside b), ``"gt"`` (b's to a),
    ``"none"`` (neither; never for areas) or ``"eq"`` (equal areas).

    Consistent choices are what boxes obey (each family checked on the closure of its choices): offsets and strict
    containment are strict partial orders (transitive, acyclic); areas are a weak order (a cycle of smaller-or-equal
    has no strict step); a box strictly inside another has a smaller area. Choices that are consistent extend to a
    full set of relations with the same properties (the closures, and a ranking of areas).
    """

    k: int
    families: tuple[str, ...]
    cls: list[int] = field(default_factory=list)
    chosen: dict[str, dict[tuple[int, int], str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.cls:
            self.cls = list(range(self.k))
        for f in self.families:
            self.chosen.setdefault(f, {})

    def copy(self) -> Pattern:
        return Pattern(self.k, self.families, list(self.cls), {f: dict(c) for f, c in self.chosen.items()})

    def classes(self) -> list[int]:
        return sorted(set(self.cls))

    def value(self, family: str, a: int, b: int) -> str | None:
        """The choice between classes a != b, read from a's side."""
        flip = {"lt": "gt", "gt": "lt", "none": "none", "eq": "eq"}
        v = self.chosen[family].get((min(a, b), max(a, b)))
        return v if v is None or a < b else flip[v]

    def holds(self, domain: Domain, rel: str, i: int, j: int) -> bool:
        family, forward = _family(domain, rel)
        a, b = self.cls[i], self.cls[j]
        if a == b:
            return family == "nest"
        if family not in self.chosen:
            raise KeyError(f"relation {rel!r} is not among the families searched")
        v = self.value(family, a, b)
        if v is None:
            raise Unknown(family, a, b)
        return v == ("lt" if forward else "gt")

    def choose(self, family: str, a: int, b: int, v: str) -> Pattern | None:
        """This pattern with one more choice (``"twin"``: classes a and b become one), or None if inconsistent."""
        p = self.copy()
        if v == "twin":
            if not p._merge(a, b):
                return None
        else:
            flip = {"lt": "gt", "gt": "lt", "none": "none", "eq": "eq"}
            p.chosen[family][(min(a, b), max(a, b))] = v if a < b else flip[v]
        return p if p.consistent() else None

    def _merge(self, a: int, b: int) -> bool:
        """Make classes a and b one (the same box); False when their choices disagree."""
        keep, gone = min(a, b), max(a, b)
        for f, choices in self.chosen.items():
            between = choices.pop((keep, gone), None)
            if between is not None and (f == "nest" or between not in ("none", "eq")):
                return False
            for other in self.classes():
                if other in (keep, gone):
                    continue
                mine, theirs = self.value(f, keep, other), self.value(f, gone, other)
                if mine is not None and theirs is not None and mine != theirs:
                    return False
                choices.pop((min(gone, other), max(gone, other)), None)
                if mine is None and theirs is not None:
                    flip = {"lt": "gt", "gt": "lt", "none": "none", "eq": "eq"}
                    choices[(min(keep, other), max(keep, other))] = theirs if keep < other else flip[theirs]
        self.cls = [keep if c == gone else c for c in self.cls]
        return True

    def _closure(self, family: str) -> tuple[list[int], list[list[bool]]]:
        cs = self.classes()
        index = {c: n for n, c in enumerate(cs)}
        m = len(cs)
        lt = [[False] * m for _ in range(m)]
        for (a, b), v in self.chosen[family].items():
            if v == "lt":
                lt[index[a]][index[b]] = True
            elif v == "gt":
                lt[index[b]][index[a]] = True
        for w in range(m):
            for u in range(m):
                if lt[u][w]:
                    for v in range(m):
                        if lt[w][v]:
                            lt[u][v] = True
        return cs, lt

    def consistent(self) -> bool:
        closures = {}
        for f in self.families:
            if f == "area":
                continue
            cs, lt = self._closure(f)
            closures[f] = (cs, lt)
            index = {c: n for n, c in enumerate(cs)}
            if any(lt[u][u] for u in range(len(cs))):
                return False
            for (a, b), v in self.chosen[f].items():
                u, w = index[a], index[b]
                if (v == "none" and (lt[u][w] or lt[w][u])) or (v == "lt" and lt[w][u]) or (v == "gt" and lt[u][w]):
                    return False
        if "area" in self.families:
            return self._areas_consistent(closures.get("nest"))
        return True

    def _areas_consistent(self, nest: tuple[list[int], list[list[bool]]] | None) -> bool:
        """Whether the area choices (and strict containments, which make the inner box smaller) extend to a
        ranking of areas: no cycle of smaller-or-equal with a strict step."""
        cs = self.classes()
        index = {c: n for n, c in enumerate(cs)}
        m = len(cs)
        le = [[u == w for w in range(m)] for u in range(m)]
        strict = []
        for (a, b), v in self.chosen["area"].items():
            u, w = index[a], index[b]
            if v == "lt":
                le[u][w] = True
                strict.append((u, w))
            elif v == "gt":
                le[w][u] = True
                strict.append((w, u))
            else:
                le[u][w] = le[w][u] = True
        if nest is not None:
            ncs, nlt = nest
            for u, a in enumerate(ncs):
                for w, b in enumerate(ncs):
                    if nlt[u][w]:
                        le[index[a]][index[b]] = True
                        strict.append((index[a], index[b]))
        for x in range(m):
            for u in range(m):
                if le[u][x]:
                    for w in range(m):
                        if le[x][w]:
                            le[u][w] = True
        return not any(le[w][u] for u, w in strict)

    def options(self, family: str) -> tuple[str, ...]:
        if family == "area":
            return ("lt", "gt", "eq")
        if family == "nest":
            return ("lt", "gt", "none", "twin")
        return ("lt", "gt", "none")


@dataclass
class PatternWorld:
    """A world for the interpreter: objects' values, ranks by order, relations from a `Pattern`."""

    domain: Domain
    values: Sequence[Mapping[str, str]]
    pattern: Pattern

    def __post_init__(self) -> None:
        self.rank = _ranks(self.domain, self.values)

    def __len__(self) -> int:
        return len(self.values)

    def attribute(self, i: int, prop: str) -> Any:
        d = self.domain.derived.get(prop)
        if d is not None and d["kind"] == "score_rank":
            return self.rank[i][self.values[i][d["within"]]]
        return self.values[i][prop]

    def holds(self, rel: str, a: int, b: int) -> bool:
        return self.pattern.holds(self.domain, rel, a, b)


def _ranks(domain: Domain, values: Sequence[Mapping[str, str]]) -> list[dict[str, int]]:
    """Scores fall along the sequence: the k-th object of a class has rank k."""
    out: list[dict[str, int]] = []
    seen: dict[str, int] = {}
    for v in values:
        for d in domain.derived.values():
            if d["kind"] == "score_rank":
                seen[v[d["within"]]] = seen.get(v[d["within"]], 0) + 1
        out.append(dict(seen))
    return out


@dataclass
class BoxWorld:
    """A world of real boxes (rationals): relations by this module's exact reading of the domain's rules."""

    domain: Domain
    values: Sequence[Mapping[str, str]]
    boxes: Sequence[tuple[Fraction, Fraction, Fraction, Fraction]]

    def __post_init__(self) -> None:
        self.rank = _ranks(self.domain, self.values)

    def __len__(self) -> int:
        return len(self.values)

    attribute = PatternWorld.attribute

    def holds(self, rel: str, a: int, b: int) -> bool:
        return rule_holds(self.domain, rel, self.boxes[a], self.boxes[b])


def rule_holds(domain: Domain, rel: str, a: Sequence[Fraction], b: Sequence[Fraction]) -> bool:
    """``rel(a, b)`` in exact arithmetic: GenEval's published position rule (offset of the centres, each axis shrunk
    by margin x the two sizes, normalised by the raw offset's length, nothing under 1e-3), areas, containment."""
    rule = domain.rules[rel]
    if rule.kind == "box_inside":
        inner, outer = (a, b) if rule.sign < 0 else (b, a)
        return outer[0] <= inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2] and inner[3] <= outer[3]
    if rule.kind == "box_area":
        area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
        return area_a > area_b if rule.sign > 0 else area_a < area_b
    offset = [(a[0] + a[2] - b[0] - b[2]) / 2, (a[1] + a[3] - b[1] - b[3]) / 2]
    dims = [a[2] - a[0] + b[2] - b[0], a[3] - a[1] + b[3] - b[1]]
    margin = Fraction(str(rule.margin))
    revised = [max(abs(o) - margin * d, Fraction(0)) * (1 if o > 0 else -1) for o, d in zip(offset, dims, strict=True)]
    if all(abs(r) < Fraction(1, 1000) for r in revised):
        return False
    r = revised[0 if rule.axis == "x" else 1] * rule.sign
    threshold = Fraction(str(rule.threshold))
    return r > 0 and r * r > threshold * threshold * (offset[0] ** 2 + offset[1] ** 2)


# ---------------------------------------------------------------------------------------------------------------
# Boxes for a pattern: a linear program per choice of orders
# ---------------------------------------------------------------------------------------------------------------
def _orders(pattern: Pattern, family: str, cs: list[int], tries: int) -> list[list[int]]:
    """A few linear extensions of a family's choices over the classes (different tie-breaks)."""
    out: list[list[int]] = []
    if family not in pattern.chosen:
        return [list(cs), list(reversed(cs))][:tries]
    for key in (lambda c: c, lambda c: -c, lambda c: (c * 7919) % 101, lambda c: (c * 104729) % 97)[:tries]:
        left = list(cs)
        order: list[int] = []
        while left:
            free = [c for c in left if not any(pattern.value(family, d, c) == "lt" for d in left if d != c)]
            nxt = min(free, key=key)
            order.append(nxt)
            left.remove(nxt)
        if order not in out:
            out.append(order)
    return out


class _LinearProgram:
    """Rows ``A x <= b`` over the centres and sizes of the classes (cx, cy, w, h each) and a slack t, the last
    variable."""

    def __init__(self, classes: Sequence[int], squares: bool):
        self.index = {c: n for n, c in enumerate(classes)}
        self.squares = squares
        self.size = 4 * len(classes) + 1
        self.rows: list[list[float]] = []
        self.rhs: list[float] = []

    def var(self, c: int, k: int) -> int:
        """Column of class c's centre x (k=0), centre y (1), width (2), height (3; the width for squares)."""
        return 4 * self.index[c] + (2 if self.squares and k == 3 else k)

    def geq(self, terms: Mapping[int, float], const: float = 0.0, slack: float = 1.0) -> None:
        """sum(terms) - slack * t >= const."""
        row = [0.0] * self.size
        for j, a in terms.items():
            row[j] -= a
        row[-1] += slack
        self.rows.append(row)
        self.rhs.append(-const)


def _signed(var: Any, c: int, d: int, k: int, sign: float) -> dict[int, float]:
    """|centre_k(d) - centre_k(c)| as terms, its sign fixed by the orders."""
    return {var(d, k): sign, var(c, k): -sign}


def add(*parts: Mapping[int, float]) -> dict[int, float]:
    """The sum of linear terms."""
    out: dict[int, float] = {}
    for p in parts:
        for j, a in p.items():
            out[j] = out.get(j, 0.0) + a
    return out


def realise(pattern: Pattern, domain: Domain, fams: Mapping[str, str], tries: int = 3
            ) -> list[tuple[Fraction, Fraction, Fraction, Fraction]] | None:
    """Boxes (one per object) with every chosen relation, or None when no try finds them. ``fams``: family ->
    forward relation name. For each pair of orders of the centres (linear extensions of the offset choices), one
    linear program: the centres in those orders, each chosen relation implied by linear conditions (below), a slack
    maximised; a positive slack gives boxes, kept only if the exact rule gives back every choice."""
    from scipy.optimize import linprog

    cs = pattern.classes()
    margins = {f: float(domain.rules[r].margin) for f, r in fams.items()}
    for ox, oy in itertools.product(_orders(pattern, "x", cs, tries), _orders(pattern, "y", cs, tries)):
        px = {c: n for n, c in enumerate(ox)}
        py = {c: n for n, c in enumerate(oy)}
        lp = _LinearProgram(cs, squares="area" in fams)  # areas compared linearly: squares, area order = side order
        var, geq = lp.var, lp.geq
        for c in cs:
            geq({var(c, 2): 1.0}, 0.0)  # sizes at least the slack
            geq({var(c, 3): 1.0}, 0.0)
            for k in (0, 1):
                geq({var(c, k): 1.0}, 0.0, 0.0)
                geq({var(c, k): -1.0}, -100.0, 0.0)
        feasible = True
        for c, d in itertools.combinations(cs, 2):
            sx = 1.0 if px[d] > px[c] else -1.0
            sy = 1.0 if py[d] > py[c] else -1.0
            adx, ady = _signed(var, c, d, 0, sx), _signed(var, c, d, 1, sy)
            geq(adx, 0.0)  # the centres in the chosen orders, apart
            geq(ady, 0.0)
            need = {}
            for f, s in (("x", sx), ("y", sy)):
                v = pattern.value(f, c, d) if f in fams else None
                if v is not None:
                    want = 1.0 if v == "lt" else -1.0 if v == "gt" else 0.0
                    feasible &= want in (0.0, s)  # the orders must not contradict the choice
                    need[f] = bool(want)
            mx = {var(c, 2): -margins.get("x", 0.0), var(d, 2): -margins.get("x", 0.0)}
            my = {var(c, 3): -margins.get("y", 0.0), var(d, 3): -margins.get("y", 0.0)}
            on = {f for f, v in need.items() if v}
            if on == {"x", "y"}:  # both: a diagonal, |d| <= 0.73 (|dx| + |dy|) for ratios within 2:3
                geq(add({j: 1.5 * a for j, a in ady.items()}, {j: -a for j, a in adx.items()}), 0.0, 0.0)
                geq(add({j: 1.5 * a for j, a in adx.items()}, {j: -a for j, a in ady.items()}), 0.0, 0.0)
                for own in (add(adx, mx), add(ady, my)):
                    geq(add(own, {j: -0.365 * a for j, a in add(adx, ady).items()}))
            elif on:  # one axis: the other within half of it, |d| <= 1.12 |d_on|
                a_on, a_off, m_on = (adx, ady, mx) if "x" in on else (ady, adx, my)
                geq(add(a_on, {j: -2.0 * a for j, a in a_off.items()}), 0.0, 0.0)
                geq(add(a_on, m_on, {j: -0.56 * a for j, a in a_on.items()}))
            for f in (f for f, v in need.items() if not v):  # neither: |d_f| - margin <= (|dx| + |dy|) / 4
                a_f, m_f = (adx, mx) if f == "x" else (ady, my)
                geq(add({j: -a for j, a in add(a_f, m_f).items()}, {j: 0.25 * a for j, a in add(adx, ady).items()}))
            v = pattern.value("area", c, d) if "area" in fams else None
            if v == "lt":
                geq({var(d, 2): 1.0, var(c, 2): -1.0})
            elif v == "gt":
                geq({var(c, 2): 1.0, var(d, 2): -1.0})
            elif v == "eq":
                geq({var(d, 2): 1.0, var(c, 2): -1.0}, 0.0, 0.0)
                geq({var(c, 2): 1.0, var(d, 2): -1.0}, 0.0, 0.0)
            v = pattern.value("nest", c, d) if "nest" in fams else None
            if v in ("lt", "gt"):
                inner, outer = (c, d) if v == "lt" else (d, c)
                for k, size in ((0, 2), (1, 3)):  # |centre offset| + inner half-size <= outer half-size
                    for s in (1.0, -1.0):
                        geq({var(outer, size): 0.5, var(inner, size): -0.5, var(outer, k): s, var(inner, k): -s},
                            0.0, 0.0)
            elif v == "none":  # the x-intervals cross: each box sticks out on one side
                lo, hi = (c, d) if sx > 0 else (d, c)
                geq({var(hi, 0): 1.0, var(hi, 2): -0.5, var(lo, 0): -1.0, var(lo, 2): 0.5})
                geq({var(hi, 0): 1.0, var(hi, 2): 0.5, var(lo, 0): -1.0, var(lo, 2): -0.5})
        if feasible:
            cost = [0.0] * lp.size
            cost[-1] = -1.0
            bounds = [(None, None)] * (lp.size - 1) + [(None, 1.0)]
            res = linprog(cost, A_ub=lp.rows, b_ub=lp.rhs, bounds=bounds, method="highs")
            if res.status != 0 or -res.fun < 1e-6:
                continue
            boxes = []
            for i in range(pattern.k):
                c = pattern.cls[i]
                cx, cy = Fraction(res.x[var(c, 0)]), Fraction(res.x[var(c, 1)])
                w, h = Fraction(res.x[var(c, 2)]), Fraction(res.x[var(c, 3)])
                boxes.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
            if _gives_back(pattern, domain, fams, boxes):
                return boxes
    return None


def _gives_back(pattern: Pattern, domain: Domain, fams: Mapping[str, str], boxes: Sequence[Sequence[Fraction]]
                ) -> bool:
    """Whether the boxes have every chosen relation (exactly and in floating point)."""
    floats = [tuple(float(v) for v in b) for b in boxes]
    for i, j in itertools.permutations(range(pattern.k), 2):
        for rel in fams.values():
            try:
                want = pattern.holds(domain, rel, i, j)
            except Unknown:
                continue
            if rule_holds(domain, rel, boxes[i], boxes[j]) != want or domain.holds(rel, floats[i], floats[j]) != want:
                return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------------------------------------------
def satisfiable(spec: Spec, max_worlds: int = 200_000) -> tuple[bool, BoxWorld | None]:
    """Whether some scene of at most `size_bound(spec)` objects satisfies every constraint (with a witness of real
    boxes when it does).

    Raises:
        TooLarge: past ``max_worlds`` steps; Undecided: relations satisfy the spec and no boxes were found.
    """
    dom = spec.domain
    _, rels, _, ranked = named(spec)
    fams: dict[str, str] = {}
    for r in sorted(rels):
        f, forward = _family(dom, r)
        fams[f] = r if forward else dom.rules[r].inverse
    choices = value_choices(spec)
    attrs = list(choices)
    types = [dict(zip(attrs, t, strict=True)) for t in itertools.product(*(choices[a] for a in attrs))]
    geometric = [_geometric(c) for c in spec.constraints]
    budget = [max_worlds]
    undecided = [False]
    within = [d["within"] for d in dom.derived.values() if d["kind"] == "score_rank"]

    def spend() -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise TooLarge(f"more than {max_worlds} steps")

    bound = size_bound(spec)
    klass = within[0] if ranked and within else None
    class_index = {v: i for i, v in enumerate(choices.get(klass, ()))} if klass else {}
    plain_prunable = [c for c, g in zip(spec.constraints, geometric, strict=True) if not g and _prunable(c)]
    checks = [c for c, g in zip(spec.constraints, geometric, strict=True) if g]

    def place(vals: list[Mapping[str, str]]) -> BoxWorld | None:
        """Boxes for these objects under which every constraint holds, by the lazy search over relations."""
        def search(p: Pattern) -> BoxWorld | None:
            spend()
            world = PatternWorld(dom, vals, p)
            try:
                ok = all(constraint_holds(c, world) for c in checks)
            except Unknown as u:
                for v in p.options(u.family):
                    q = p.choose(u.family, u.a, u.b, v)
                    found = search(q) if q is not None else None
                    if found is not None:
                        return found
                return None
            if not ok:
                return None
            boxes = realise(p, dom, fams)
            if boxes is None:
                undecided[0] = True
                return None
            real = BoxWorld(dom, vals, boxes)
            assert all(constraint_holds(c, real) for c in spec.constraints), "boxes that break the constraints"
            return real

        return search(Pattern(len(vals), tuple(fams)))

    def dfs(order: list[int]) -> BoxWorld | None:
        spend()
        vals = [types[t] for t in order]
        plain = PatternWorld(dom, vals, Pattern(len(vals), ()))
        if not all(formula_holds(c.template.formula, c.params, plain) for c in plain_prunable):
            return None  # a counterexample among these objects stays one whatever is added
        if all(constraint_holds(c, plain) for c, g in zip(spec.constraints, geometric, strict=True) if not g):
            found = place(vals) if checks else BoxWorld(dom, vals, _spread(len(vals)))
            if found is not None:
                return found
        if len(order) == bound:
            return None
        for t in range(len(types)):
            if order and (t < order[-1] if klass is None
                          else class_index[types[t][klass]] < class_index[types[order[-1]][klass]]):
                continue
            found = dfs([*order, t])
            if found is not None:
                return found
        return None

    found = dfs([])
    if found is not None:
        return True, found
    if undecided[0]:
        raise Undecided("relations satisfying the spec were found, boxes for them were not")
    return False, None


@functools.lru_cache(maxsize=64)
def _spread(k: int) -> tuple[tuple[Fraction, ...], ...]:
    """Boxes for objects whose relations nothing reads: small and apart."""
    return tuple((Fraction(10 * i), Fraction(0), Fraction(10 * i + 1), Fraction(1)) for i in range(k))
