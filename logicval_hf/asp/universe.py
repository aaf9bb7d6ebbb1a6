"""How many objects a spec with an open scene size is solved over, and what the solver may leave out of it.

A spec without ``n`` asks whether *some* scene, of any size, satisfies it. The solver searches scenes of at most
`universe_bound` objects, so that number must be large enough never to turn a satisfiable spec into UNSAT, and it
must stay below the domain's ``max_objects`` (the hard limit): past it `solver_limit` says so by name, never a label.

Why the bound is enough: take any model and drop objects one at a time while the spec still holds. In a model
where no object can be dropped, every object is *needed* by some constraint:

* a count or weighted sum compared with a constant K at a tight lower bound (``>= K``, ``= K``, ``> K``,
  ``!= K``): at most K (K + 1 for ``>`` and ``!=``) objects per such comparison, times the objects each of them
  needs through its own nested existential (a ``where`` that asks for another object); for a sum, K divided by
  the smallest positive weight (each object it keeps adds at least that);
* a witness of an existential: one object per variable of an ``exists`` block that must hold;
* a confidence rank ``rank <= K``: dropping a more confident object of the class would promote another, so the
  K most confident objects of the class may be needed;
* a universal with a nested existential (``for every x ... there is a y``, C7) or a count compared with another
  count (C9) can need one more object for every object the spec needs otherwise (a witness each, or one more than
  the other count), and one of its own. Such constraints compound: the objects one of them adds can be what the
  next one counts against (``more blue cats than blue birds`` and ``fewer cats than objects that are not blue``
  beside ``more than two blue birds`` need 3 + 4 + 5 objects), so each one doubles the need, plus one.

Universal constraints without nested existentials (``every A is left of every B``) need nothing: dropping an
object keeps them true. A comparison whose counted objects are the objects of an ``= K`` count of a weaker
condition (``exactly 5 red dogs`` beside ``exactly 5 dogs``) adds nothing: those objects are among the five dogs.

The argument is exact for the counting rules the peers' prompts use (GenEval, Imag-Eval: counts, colours of
counted classes, ranks, relations between groups); for nested rules it is an estimate that the differential
tests check against a plain-Python search that looks past the bound (``tests/reference_box.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from logicval_hf.asp.encoding import nnf
from logicval_hf.contract.spec import AttrLit, Constraint, Spec
from logicval_hf.errors import SolverLimit

__all__ = ["constraint_need", "formula_nodes", "mentioned_values", "objects_needed", "solving_values", "spare_text",
           "universe_bound", "weight_tables"]


def _resolve(value: Any, params: Mapping[str, Any]) -> Any:
    return params[value[1:]] if isinstance(value, str) and value.startswith("$") else value


def _count_constant(node: Mapping[str, Any], params: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, int] | None:
    """``(term, theta, K)`` for a comparison of a count, sum or rank with a constant (constant on the right)."""
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}
    lhs, rhs, theta = node["lhs"], node["rhs"], _resolve(node["theta"], params)
    if rhs.get("op") == "const" and lhs.get("op") != "const":
        return lhs, theta, int(_resolve(rhs["value"], params))
    if lhs.get("op") == "const" and rhs.get("op") != "const":
        return rhs, flip[theta], int(_resolve(lhs["value"], params))
    return None


def _lower_need(theta: str, k: int) -> int:
    """Objects a tight lower bound keeps: ``>= K`` and ``= K`` keep K, ``> K`` and ``!= K`` keep K + 1
    (dropping one of K + 1 would make it K), upper bounds keep none."""
    return {">=": k, "=": k, ">": k + 1, "!=": k + 1}.get(theta, 0)


class _Need:
    """Walks one constraint's formulas (negation normal form, so every node is something that must hold)."""

    def __init__(self, params: Mapping[str, Any], domain: Any):
        self.params = params
        self.domain = domain
        self.nested = False  # a universal with a nested existential, or a count against a count

    def formula(self, node: Mapping[str, Any], under_forall: bool = False) -> int:
        op = node["op"]
        if op == "and":
            return sum(self.formula(a, under_forall) for a in node["args"])
        if op == "or":
            return max((self.formula(a, under_forall) for a in node["args"]), default=0)
        if op == "exists":
            if under_forall:
                self.nested = True
            return len(node["vars"]) + self.formula(node["body"], under_forall)
        if op == "forall":
            return self.formula(node["body"], True)
        if op == "cmp":
            return self.comparison(node, under_forall)
        if op == "not":
            return self.formula(node["arg"], under_forall) if node["arg"].get("op") == "cmp" else 0
        return 0

    def comparison(self, node: Mapping[str, Any], under_forall: bool) -> int:
        found = _count_constant(node, self.params)
        if found is None:  # a count against a count (C9)
            self.nested = True
            return sum(self.term(t) for t in (node["lhs"], node["rhs"]))
        term, theta, k = found
        if term["op"] == "value":  # a confidence rank: the K most confident of the class
            return k
        if under_forall:  # counted for every object of an outer block (C7/1prop_exact)
            self.nested = True
        inner = self.formula(nnf(term["where"]))
        if inner:
            self.nested = True
        if term["op"] == "sum":  # each object it keeps weighs at least the smallest positive weight
            weights = [w for w in self.domain.constant(str(_resolve(term["weight"], self.params))).values() if w > 0]
            lowest, highest = (min(weights), max(weights)) if weights else (1, 1)
            lower = {">=": k, "=": k, ">": k + 1, "!=": k + highest}.get(theta, 0)
            return -(-lower // lowest) * (1 + inner)
        return _lower_need(theta, k) * (1 + inner)

    def term(self, t: Mapping[str, Any]) -> int:
        if t["op"] in ("count", "sum"):
            return self.formula(nnf(t["where"]))
        return 0


def _where_literals(c: Constraint) -> tuple[frozenset[tuple[str, str]], str, int] | None:
    """For a constraint that is exactly one count of a conjunction of plain attribute literals compared with K:
    (the literals, theta, K); None otherwise."""
    f = c.template.formula
    if c.template.anti_vacuity is not None or f.get("op") != "cmp":
        return None
    found = _count_constant(f, c.params)
    if found is None or found[0]["op"] != "count" or len(found[0]["vars"]) != 1:
        return None
    where = found[0]["where"]
    parts = where["args"] if where.get("op") == "and" else [where]
    lits = set()
    for p in parts:
        if p.get("op") != "attr":
            return None
        lit = _resolve(p["lit"], c.params)
        if not isinstance(lit, AttrLit) or lit.negated:
            return None
        lits.add((lit.prop, lit.value))
    return frozenset(lits), found[1], found[2]


def constraint_need(c: Constraint, domain: Any) -> tuple[int, bool]:
    """(objects the constraint needs by itself in ``domain``, whether it can need one more object per object of
    the rest)."""
    walker = _Need(c.params, domain)
    need = walker.formula(nnf(c.template.formula))
    if c.template.anti_vacuity is not None:
        need += walker.formula(nnf(c.template.anti_vacuity))
    return need, walker.nested


def _covered(i: int, counts: Mapping[int, tuple[frozenset[tuple[str, str]], str, int]]) -> bool:
    """Whether constraint i counts a subset of the objects of an ``= K`` count of a weaker condition, with at most
    K of them: its objects are then among that count's (see the module docstring)."""
    lits, theta, k = counts[i]
    for j, (other, t, kj) in counts.items():
        if j != i and t == "=" and other < lits and (_lower_need(theta, k) <= kj):
            return True
    return False


def objects_needed(spec: Spec) -> int:
    """Objects a model of the spec needs at most (see the module docstring); at least 1."""
    counts = {i: w for i, c in enumerate(spec.constraints) if (w := _where_literals(c)) is not None}
    base, nested = 0, 0
    for i, c in enumerate(spec.constraints):
        need, is_nested = constraint_need(c, spec.domain)
        nested += is_nested
        if is_nested or not (i in counts and _covered(i, counts)):
            base += need
    # each nested constraint can need one object more for every object needed so far, and one of its own
    return max(1, (base + 1) * 2 ** nested - 1)


def universe_bound(spec: Spec) -> int:
    """How many object slots an open-size spec is solved over: `objects_needed`.

    Raises:
        SolverLimit: the spec needs more objects than its domain's ``max_objects`` (the hard limit).
    """
    need = objects_needed(spec)
    limit = spec.domain.n_max
    if need > limit:
        raise SolverLimit(solver_limit(spec, need, limit))
    return need


def solver_limit(spec: Spec, need: int, limit: int) -> str:
    """The one-line message for a spec past the hard limit, naming the constraints that ask for the most."""
    needs = sorted(((-constraint_need(c, spec.domain)[0], i) for i, c in enumerate(spec.constraints)))
    top = ", ".join(f"constraints[{i}] ({spec.constraints[i].template_id}: {-k})" for k, i in needs[:3] if k)
    return (f"spec: a model may need up to {need} objects ({top or 'its constraints together'}), more than domain "
            f"{spec.domain.name!r} allows a scene (max_objects = {limit}); no label is given")


def formula_nodes(spec: Spec) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Every formula and term node of the spec's constraints (anti-vacuity included), with its constraint's params."""
    def walk(node: Any, params: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        if isinstance(node, Mapping):
            if "op" in node:
                yield node, params
            for v in node.values():
                yield from walk(v, params)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v, params)

    for c in spec.constraints:
        yield from walk(c.template.formula, c.params)
        yield from walk(c.template.anti_vacuity, c.params)


def mentioned_values(spec: Spec) -> dict[str, set[Any]]:
    """Attribute values the spec's literals test, per attribute (slot values and literals written in formulas)."""
    out: dict[str, set[Any]] = {}
    for node, params in formula_nodes(spec):
        if node["op"] == "attr":
            lit = _resolve(node["lit"], params)
            prop, value = (lit.prop, lit.value) if isinstance(lit, AttrLit) else (lit["prop"], lit["value"])
            out.setdefault(prop, set()).add(value)
    return out


def weight_tables(spec: Spec) -> list[Mapping[str, int]]:
    """The domain constants the spec's weighted sums read (keyed by the domain's noun attribute)."""
    return [spec.domain.constant(str(_resolve(node["weight"], params)))
            for node, params in formula_nodes(spec) if node["op"] == "sum"]


def spare_text(named: Any) -> str:
    """A value of an open (free-text) attribute that is none of ``named``: ``other``, else ``other 2``, ..."""
    k = 1
    while (text := "other" if k == 1 else f"other {k}") in named:
        k += 1
    return text


def solving_values(spec: Spec) -> dict[str, tuple[Any, ...]]:
    """Per perceived attribute, the values a solve chooses from: those the spec tests, plus one value it does not
    test (in domain order), plus, for an attribute a weighted sum reads, one untested value per weight.

    Why nothing is lost: no rule compares two objects' values, so two values the spec never names satisfy exactly
    the same literals; replacing every untested value by one representative (of the same weight) keeps every
    formula's truth (by induction on formulas), and the representative is a real value of the domain, so a
    witness stays a real scene. An open attribute (free text) works the same way, with a spare text (`spare_text`).
    """
    dom = spec.domain
    named = mentioned_values(spec)
    tables = weight_tables(spec)
    out: dict[str, tuple[Any, ...]] = {}
    for attr in dom.perceived_attributes:
        if dom.is_open(attr):  # free text: the named texts and one text none of them is
            out[attr] = (*sorted(named.get(attr, ())), spare_text(named.get(attr, ())))
            continue
        values = dom.values(attr)
        chosen = [v for v in values if v in named.get(attr, ())]
        spare: dict[Any, Any] = {}
        for v in values:
            if v in named.get(attr, ()):
                continue
            weights = tuple(t.get(v) for t in tables) if attr == dom.noun else ()
            spare.setdefault(weights, v)
        out[attr] = tuple(chosen) + tuple(spare.values())
    return out
