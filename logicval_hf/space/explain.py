"""Why a constraint fails on a scene: the objects involved.

The solver says *which* constraints a scene violates; this module says *why*, on the objects, by walking the
template's formula with the plain-Python reference semantics (`logicval_hf.contract.reference.formula_holds`, the
independent implementation the solver is differentially tested against):

* ``forall``: the counterexamples, i.e. the objects (or pairs, triples) for which the body fails;
* ``exists``: that no object (tuple) is a witness, with the objects that match each variable's own literals
  (the near misses);
* a count comparison: the value of each count with the objects counted, and the comparison that fails;
* the anti-vacuity clause, when it is the part that fails.

Every explanation also lists, for each attribute literal of the constraint, the objects it holds for.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from logicval_hf.contract.reference import formula_holds
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit
from logicval_hf.contract.verbalise import constraint_text, predicate
from logicval_hf.space.common import listed, object_label

_THETA_WORDS = {"=": "=", "!=": "≠", "<": "<", "<=": "≤", ">": ">", ">=": "≥"}
_MAX_TUPLES = 20


def _val(x: Any, params: Mapping[str, Any]) -> Any:
    if isinstance(x, str) and x.startswith("$"):
        return params[x[1:]]
    return x


def _assignments(node: Mapping[str, Any], params: Mapping[str, Any], n: int, env: Mapping[str, int]
                 ) -> Iterator[dict[str, int]]:
    """docs/spec_language.md §4.3: tuples for ``vars`` (pairwise different if ``distinct``), avoiding
    ``distinct_from``."""
    vs = list(node.get("vars", ()))
    distinct = bool(_val(node.get("distinct", False), params))
    excluded = {env[u] for u in node.get("distinct_from", ()) if u in env}
    for tup in itertools.product(range(n), repeat=len(vs)):
        if any(o in excluded for o in tup) or (distinct and len(set(tup)) != len(tup)):
            continue
        e = dict(env)
        e.update(zip(vs, tup, strict=True))
        yield e


def _lit_text(lit: Any) -> str:
    """``a cube``, ``red``, ``not metal``, ``in the back-left region (r0)``."""
    if isinstance(lit, Mapping):
        lit = AttrLit(str(lit.get("prop")), str(lit.get("value")), bool(lit.get("negated", False)))
    return predicate(lit)


def _tuple_text(scene: Scene, vs: list[str], e: Mapping[str, int]) -> str:
    if len(vs) == 1:
        return object_label(scene, e[vs[0]])
    return "(" + ", ".join(f"{v}={object_label(scene, e[v])}" for v in vs) + ")"


def _unary_literals(body: Mapping[str, Any], var: str, params: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The attribute literals on ``var`` that are conjuncts of ``body`` (the variable's own description)."""
    parts = body["args"] if body.get("op") == "and" else [body]
    return [p for p in parts if p.get("op") == "attr" and p.get("var") == var]


def _count_text(scene: Scene, term: Mapping[str, Any], params: Mapping[str, Any], env: Mapping[str, int]
                ) -> tuple[int, list[str], set[int]]:
    if term["op"] == "const":
        return int(_val(term["value"], params)), [], set()
    hits = [e for e in _assignments(term, params, len(scene), env)
            if formula_holds(term["where"], params, scene, e)]
    vs = list(term.get("vars", ()))
    objs = {e[v] for e in hits for v in vs}
    return len(hits), [_tuple_text(scene, vs, e) for e in hits], objs


def _explain(f: Mapping[str, Any], params: Mapping[str, Any], scene: Scene, env: dict[str, int]
             ) -> tuple[str, set[int]]:
    """(sentence, objects involved) for a formula that is false under ``env``."""
    op = f["op"]
    n = len(scene)
    if op == "forall":
        vs = list(f.get("vars", ()))
        bad = [e for e in _assignments(f, params, n, env) if not formula_holds(f["body"], params, scene, e)]
        objs = {e[v] for e in bad for v in vs}
        texts = [_tuple_text(scene, vs, e) for e in bad[:_MAX_TUPLES]]
        more = f" ... ({len(bad) - _MAX_TUPLES} more)" if len(bad) > _MAX_TUPLES else ""
        what = "object" if len(vs) == 1 else "tuple"
        plural = "s" if len(bad) != 1 else ""
        return f"fails for {len(bad)} {what}{plural} (counterexamples): " + ", ".join(texts) + more, objs
    if op == "exists":
        vs = list(f.get("vars", ()))
        found, absent, objs = [], [], set()
        for v in vs:
            lits = _unary_literals(f["body"], v, params)
            if not lits:
                continue
            cands = [i for i in range(n) if all(formula_holds(lit, params, scene, {**env, v: i}) for lit in lits)]
            desc = " and ".join(_lit_text(_val(lit["lit"], params)) for lit in lits)
            if cands:
                objs.update(cands)
                found.append(f"{desc}: {listed([object_label(scene, i) for i in cands])}")
            else:
                absent.append(desc)
        if absent:  # the absence is the reason; no object is singled out
            return "no object is " + " and no object is ".join(absent), set()
        head = "no object is a witness" if len(vs) == 1 else "no tuple of objects is a witness"
        if found:
            head += " (candidates: " + "; ".join(found) + "; none of them satisfies the whole condition)"
        return head, objs
    if op == "cmp":
        theta = _val(f["theta"], params)
        lv, ltxt, lobjs = _count_text(scene, f["lhs"], params, env)
        rv, rtxt, robjs = _count_text(scene, f["rhs"], params, env)
        def side(v: int, txt: list[str], term: Mapping[str, Any]) -> str:
            if term["op"] == "const":
                return str(v)
            return f"{v} [{listed(txt)}]" if txt else f"{v}"
        return (f"count {side(lv, ltxt, f['lhs'])} {_THETA_WORDS.get(theta, theta)} {side(rv, rtxt, f['rhs'])} "
                "does not hold"), lobjs | robjs
    if op == "and":
        for g in f["args"]:
            if not formula_holds(g, params, scene, env):
                return _explain(g, params, scene, env)
    if op == "implies":
        return _explain(f["then"], params, scene, env)
    if op == "not":
        return "the negated part holds", set(env.values())
    return "does not hold", set(env.values())


def literal_objects(constraint: Constraint, scene: Scene) -> list[dict[str, Any]]:
    """For each attribute literal of the constraint, the objects it holds for (positive sense of the literal)."""
    out = []
    for name, v in constraint.params.items():
        if isinstance(v, AttrLit):
            idx = [i for i in range(len(scene)) if (scene.attribute(i, v.prop) == v.value) != v.negated]
            out.append({"slot": name, "literal": _lit_text(v), "objects": idx,
                        "labels": [object_label(scene, i) for i in idx]})
    return out


def explain_constraint(constraint: Constraint, scene: Scene, n: int | None = None) -> dict[str, Any]:
    """Why ``constraint`` fails (or that it holds) on ``scene``: a sentence and the objects involved."""
    t = constraint.template
    params = constraint.params
    formula_ok = formula_holds(t.formula, params, scene)
    av = t.anti_vacuity
    av_ok = av is None or formula_holds(av, params, scene)
    reasons: list[str] = []
    objs: set[int] = set()
    if not formula_ok:
        why, o = _explain(t.formula, params, scene, {})
        reasons.append(why)
        objs |= o
    if av is not None and not av_ok:
        why, o = _explain(av, params, scene, {})
        reasons.append("the anti-vacuity clause fails: " + why)
        objs |= o
    rels = sorted({v.rel + (" (negated)" if v.negated else "") for v in params.values() if isinstance(v, RelLit)})
    return {
        "template": t.id,
        "text": constraint_text(constraint, n, "short"),
        "holds": formula_ok and av_ok,
        "explanation": "; ".join(reasons) if reasons else "holds on this scene",
        "objects": sorted(objs),
        "object_labels": [object_label(scene, i) for i in sorted(objs)],
        "literal_objects": literal_objects(constraint, scene),
        "relations": rels,
    }
