"""An independent reference for box-geometry domains (COCO): SAT/UNSAT of open-size specs by a plain-Python search
over small scenes. No clingo and no code of the encoding: only the contract (domain geometry, templates), the
plain-Python interpreter (`logicval_hf.contract.reference.interpreter`) and the definition of the lattice of box
placements the solver searches (`GRID`, the two size sets, `placement_box`: what "SAT" is decided over).

A scene is a sequence of objects, each a tuple of attribute values and a placement on the lattice; detection
scores fall along the sequence, so the objects of a class are ranked in their order. `satisfiable` enumerates
every such scene of at most `size_bound` objects, up to two reductions argued here, and evaluates the spec with
the interpreter on each:

* values: an attribute's values the spec never names satisfy the same literals, so one of them (and, for the
  attribute a weighted sum reads, one per weight) stands for all (re-derived here from the formulas);
* order: renaming objects maps models to models, so objects are enumerated as multisets (a sorted sequence) of
  (values, placement), except that within one class, when the spec reads a confidence rank, every order is tried;
* pruning: objects are added one at a time, and a constraint that adding objects can only keep false (a plain
  universal, a count bounded from above) is checked on every prefix: a prefix that breaks it is not extended.

`size_bound` is this module's own bound, from a plain reading of the formulas (every constant plus one, every
existential variable, twice under a universal). It is not the solver's (`logicval_hf.asp.universe`): a spec whose
models need more objects than the solver searches shows up as a disagreement.
Placements are searched object by object with the same pruning.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from logicval_hf.asp.programs import GRID, SIZES, SIZES_COMPARED, placement_box
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
    the objects the rest needs), plus one."""
    total = 1
    for c in spec.constraints:
        for formula in (c.template.formula, c.template.anti_vacuity):
            total += _witnesses(formula, c.params, False)
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


@functools.lru_cache(maxsize=32)
def _lattice(domain: Domain, rels: tuple[str, ...], compared: bool) -> tuple[list[tuple], dict[str, list[list[bool]]]]:
    """Boxes of the placements and, per relation, its truth between every two placements; placements that no named
    relation tells apart (the same truths to and from every placement) are kept once."""
    sizes = SIZES_COMPARED if compared else SIZES
    boxes = [placement_box(domain, c, s) for c in range(GRID * GRID) for s in sizes]
    full = {r: [[domain.holds(r, a, b) for b in boxes] for a in boxes] for r in rels}
    keep, seen = [], set()
    for p in range(len(boxes)):
        signature = tuple((tuple(full[r][p]), tuple(row[p] for row in full[r])) for r in rels)
        if signature not in seen:
            seen.add(signature)
            keep.append(p)
    table = {r: [[full[r][p][q] for q in keep] for p in keep] for r in rels}
    return [boxes[p] for p in keep], table


@dataclass
class BoxWorld:
    """A scene for the interpreter: objects' values, placements (indices into the lattice), ranks by order."""

    domain: Domain
    values: Sequence[Mapping[str, str]]
    places: Sequence[int]
    table: Mapping[str, list[list[bool]]]

    def __post_init__(self) -> None:
        self.rank = []
        seen: dict[str, int] = {}
        for v in self.values:  # scores fall along the sequence: the k-th object of a class has rank k
            for a, d in self.domain.derived.items():
                if d["kind"] == "score_rank":
                    seen[v[d["within"]]] = seen.get(v[d["within"]], 0) + 1
            self.rank.append(dict(seen))

    def __len__(self) -> int:
        return len(self.values)

    def attribute(self, i: int, prop: str) -> Any:
        d = self.domain.derived.get(prop)
        if d is not None and d["kind"] == "score_rank":
            return self.rank[i][self.values[i][d["within"]]]
        return self.values[i][prop]

    def holds(self, rel: str, a: int, b: int) -> bool:
        return self.table[rel][self.places[a]][self.places[b]]

    def boxes(self, lattice: Sequence[tuple]) -> list[tuple]:
        return [lattice[p] for p in self.places]


class TooLarge(RuntimeError):
    """The search would go past its limit on worlds: the case is left out, never answered by a guess."""


def satisfiable(spec: Spec, max_worlds: int = 200_000) -> tuple[bool, BoxWorld | None]:
    """Whether some scene of at most `size_bound(spec)` objects on the lattice satisfies every constraint."""
    dom = spec.domain
    values, rels, _, ranked = named(spec)
    compared = any(dom.rules[r].kind in ("box_area", "box_inside") for r in rels)
    lattice, table = _lattice(dom, tuple(sorted(rels)), compared)
    n_places = len(lattice) if rels else 1
    choices = value_choices(spec)
    attrs = list(choices)
    types = [dict(zip(attrs, t)) for t in itertools.product(*(choices[a] for a in attrs))]
    geometric = [_geometric(c) for c in spec.constraints]
    budget = [max_worlds]
    within = [d["within"] for d in dom.derived.values() if d["kind"] == "score_rank"]

    def spend() -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise TooLarge(f"more than {max_worlds} worlds")

    bound = size_bound(spec)
    if any(geometric) and n_places ** bound > MAX_TABULATED * 10:
        raise TooLarge(f"placements of {bound} objects on {n_places} places are too many to search")
    klass = within[0] if ranked and within else None
    class_index = {v: i for i, v in enumerate(choices.get(klass, ()))} if klass else {}
    plain_prunable = [c for c, g in zip(spec.constraints, geometric) if not g and _prunable(c)]

    def dfs(order: list[int]) -> BoxWorld | None:
        """Scenes whose objects extend ``order``: types in canonical order (non-decreasing; with ranks, classes
        non-decreasing and any order within a class)."""
        spend()
        vals = [types[t] for t in order]
        plain = BoxWorld(dom, vals, [0] * len(order), table)
        if not all(formula_holds(c.template.formula, c.params, plain) for c in plain_prunable):
            return None  # a counterexample among these objects stays one whatever is added
        if all(constraint_holds(c, plain) for c, g in zip(spec.constraints, geometric) if not g):
            found = plain if not any(geometric) else _place(dom, vals, order, n_places, ranked, table, spec,
                                                              geometric, spend, rels, compared)
            if found is not None:
                return found
        if len(order) == bound:
            return None
        for t in range(len(types)):
            if order and (t < order[-1] if klass is None else class_index[types[t][klass]] < class_index[types[order[-1]][klass]]):
                continue
            found = dfs(order + [t])
            if found is not None:
                return found
        return None

    found = dfs([])
    return (True, found) if found is not None else (False, None)


def _geometric(c: Any) -> bool:
    """Whether a constraint reads a relation (else its truth does not depend on the placements)."""
    return any(node["op"] == "rel" for node in _walk(c.template.formula) + _walk(c.template.anti_vacuity))


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
        return (upper and term.get("op") in ("count", "sum") and (lhs.get("op") == "const") != (rhs.get("op") == "const")
                and not any(n["op"] in ("exists", "forall", "count", "sum", "value") for n in _walk(term["where"])))
    return False


#: most placement tuples whose relation patterns are tabulated at once (numpy), instead of searched one by one
MAX_TABULATED = 60_000


@functools.lru_cache(maxsize=64)
def _patterns(domain: Domain, rels: tuple[str, ...], compared: bool, k: int) -> list[tuple[int, ...]]:
    """One placement tuple of k objects per distinct pattern of the named relations among them: what the formulas
    can tell apart of a placement is which relations hold between which objects, so one tuple per pattern is
    enough."""
    import numpy as np

    if k == 0:
        return [()]
    lattice, table = _lattice(domain, rels, compared)
    n = len(lattice)
    tuples = np.indices((n,) * k).reshape(k, -1).T
    bits = [np.asarray(table[r], dtype=bool)[tuples[:, i], tuples[:, j]]
            for r in rels for i in range(k) for j in range(k) if i != j]
    if not bits:
        return [tuple([0] * k)]
    _, first = np.unique(np.stack(bits, axis=1), axis=0, return_index=True)
    return [tuple(int(p) for p in tuples[i]) for i in sorted(first)]


def _place(dom: Domain, vals: Sequence[Mapping[str, str]], order: Sequence[int], n_places: int, ranked: bool,
           table: Mapping[str, list[list[bool]]], spec: Spec, geometric: Sequence[bool], spend: Any,
           rels: set[str] = frozenset(), compared: bool = False) -> BoxWorld | None:
    """A placement of the objects under which every geometric constraint holds, or None: one per relation pattern
    when the placement tuples are few enough to tabulate, else depth first with prefixes pruned by plain
    universals (objects of one type get non-decreasing placements unless their order is a rank order)."""
    k = len(order)
    checks = [c for c, g in zip(spec.constraints, geometric) if g]
    if n_places ** k <= MAX_TABULATED:
        for places in _patterns(dom, tuple(sorted(rels)), compared, k):
            spend()
            world = BoxWorld(dom, vals, list(places), table)
            if all(constraint_holds(c, world) for c in checks):
                return world
        return None
    prefix_checks = [c for c in checks if _prunable(c)]
    places: list[int] = []

    def formula_only(c: Any, world: BoxWorld) -> bool:
        return formula_holds(c.template.formula, c.params, world)

    def rec(i: int) -> BoxWorld | None:
        if i == k:
            spend()
            world = BoxWorld(dom, vals, list(places), table)
            return world if all(constraint_holds(c, world) for c in checks) else None
        lo = places[-1] if i and not ranked and order[i] == order[i - 1] else 0
        for p in range(lo, n_places):
            places.append(p)
            prefix = BoxWorld(dom, vals[:i + 1], list(places), table)
            if all(formula_only(c, prefix) for c in prefix_checks):
                found = rec(i + 1)
                if found is not None:
                    return found
            places.pop()
        return None

    return rec(0)
