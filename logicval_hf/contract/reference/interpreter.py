"""The reference meaning of the spec language's formulas (docs/spec_language.md §4): a direct Tarskian interpreter over
any *world* (``__len__``, ``attribute(i, prop)``, ``holds(rel, a, b)``; a `Scene` is one, so is
`logicval_hf.contract.reference.worlds.AbstractWorld`), in any domain: relations are whatever the world decides,
``value`` terms read a derived integer attribute (a confidence rank), ``sum`` terms add a domain constant and need
a world with a ``domain`` (a `Scene`).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from logicval_hf.contract.reference.worlds import World
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit, Spec

__all__ = ["FormulaError", "constraint_holds", "formula_holds", "spec_holds", "violated"]

_THETA: dict[str, Callable[[int, int], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


class FormulaError(ValueError):
    """A formula is malformed: unknown op, unbound variable, missing slot, wrongly typed slot value, ..."""



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
    if not isinstance(rel, str):
        raise FormulaError(f"relation literal {lit!r}: the relation must be a name")
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
    if type(node) is dict and "op" in node:  # the common case, without the slower abstract Mapping check
        return node["op"]
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
# The interpreter (docs/spec_language.md §4): the reference meaning
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
    """docs/spec_language.md §4.3: all tuples of objects for ``vars`` (pairwise different if ``distinct``), each
    different from the objects bound to the ``distinct_from`` variables; yields the extended environments."""
    vs, distinct, dfrom = _block(node, params)
    excluded = {_var(env, u) for u in dfrom}
    for tup in itertools.product(range(n), repeat=len(vs)):
        if any(o in excluded for o in tup):
            continue
        if distinct and len(set(tup)) != len(tup):
            continue
        inner = dict(env)
        inner.update(zip(vs, tup, strict=True))
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
        # docs/spec_language.md §3.2: rel(a, a) is false whatever the world says; facts are read closed-world.
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
    if op == "value":  # a derived integer attribute of a bound object (a confidence rank)
        value = world.attribute(_var(env, t["var"]), t["attr"])
        if isinstance(value, bool) or not isinstance(value, int):
            raise FormulaError(f"value term: attribute {t['attr']!r} is not an integer ({value!r})")
        return value
    if op == "sum":  # the weight of the first variable's object, added over the tuples satisfying `where`
        weights = _weights(world, _resolve(t["weight"], params))
        first = t["vars"][0]
        return sum(weights.get(world.attribute(e[first], weights.noun), 0)
                   for e in _assignments(t, params, n, env) if _holds(t["where"], params, world, n, e))
    raise FormulaError(f"unknown term op {op!r} (terms are count, sum, value and const)")


class _Weights(dict):
    """A domain constant's table (value of the domain's noun attribute -> integer), with that attribute's name."""

    noun: str = ""


def _weights(world: World, name: Any) -> _Weights:
    domain = getattr(world, "domain", None)
    if domain is None or not isinstance(name, str) or name not in getattr(domain, "constants", {}):
        raise FormulaError(f"sum term: constant {name!r} needs a world whose domain has it (a Scene of that domain)")
    out = _Weights(domain.constants[name])
    out.noun = domain.noun
    return out


def _constraint(c: Constraint | Mapping[str, Any]) -> Constraint:
    return c if isinstance(c, Constraint) else Constraint.from_dict(c)


def constraint_holds(constraint: Constraint | Mapping[str, Any], world: World) -> bool:
    """docs/spec_language.md §4.4: the template's formula holds and so does its anti-vacuity clause when it has one."""
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
    """``strict``: exactly n objects and every constraint holds (docs/spec_language.md §1); ``relaxed``: ignore the
    count."""
    if count not in ("strict", "relaxed"):
        raise ValueError(f"count must be 'strict' or 'relaxed', got {count!r}")
    s = _spec(spec)
    if count == "strict" and len(world) != s.n:
        return False
    return not violated(s, world)
