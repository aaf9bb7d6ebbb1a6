"""Compile the spec language's formulas (docs/spec_language.md §4) into ASP rules in the paper's violation-atom style.

A constraint with index ``i`` compiles to rules whose only interface is the atom ``violated(i)``: it is
derived iff the formula or the anti-vacuity clause fails on the scene described by ``object/1``,
``hasProperty/3`` and ``hasRelationship/3``. The formula is negated and pushed down to the literals
(negation normal form), so a universal becomes a counterexample rule, as in

    violated(0) :- object(X), hasProperty(X,color,red), not hasProperty(X,shape,cube).

Two renderings share one compiler:

* *instantiated* (`compile_constraint`): slot values are written into the rules (what solving and
  verification use, and what a dataset row shows);
* *parametric* (`compile_template`): slot references become ``lit(C,a1,X)`` / ``rlit(C,r1,X,Y)`` atoms,
  counts and comparators come from ``count_param/3`` and ``theta_param/3`` facts, and every rule is guarded
  by ``constraint(C,"<template id>")``; these are the checked-in ``asp/templates/*.lp`` files.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.contract.catalog import Domain, Template
from logicval_hf.contract.spatial import region_cell
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit

_CONSTANT = re.compile(r"[a-z][A-Za-z0-9_]*")
_KEYWORDS = {"not", "const", "show", "minimize", "maximize", "external", "include", "script", "program", "defined"}


def asp_term(value: Any) -> str:
    """A value as an ASP term: a plain constant where it is one (``red``), else a quoted string
    (``"potted plant"``), so any class name is a term and none can inject syntax."""
    if isinstance(value, bool):
        raise TypeError("a truth value is not an ASP term")
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _CONSTANT.fullmatch(text) and text not in _KEYWORDS:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def symbol_value(sym: Any) -> Any:
    """The Python value of an ASP term written by `asp_term` (constant, string or number)."""
    import clingo

    if sym.type == clingo.SymbolType.String:
        return sym.string
    if sym.type == clingo.SymbolType.Number:
        return sym.number
    return sym.name

_FLIP_THETA = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_ASP_THETA = {"=": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


# ---------------------------------------------------------------------------------------------
# Negation normal form
# ---------------------------------------------------------------------------------------------
def negate(node: Mapping[str, Any]) -> dict[str, Any]:
    """The negation of a formula, pushed down so that only atoms carry ``not``."""
    op = node["op"]
    if op == "true":
        return {"op": "false"}
    if op == "false":
        return {"op": "true"}
    if op in ("attr", "rel", "eq", "cmp"):
        return {"op": "not", "arg": dict(node)}
    if op == "not":
        return nnf(node["arg"])
    if op == "and":
        return {"op": "or", "args": [negate(a) for a in node["args"]]}
    if op == "or":
        return {"op": "and", "args": [negate(a) for a in node["args"]]}
    if op == "implies":
        return {"op": "and", "args": [nnf(node["if"]), negate(node["then"])]}
    if op in ("exists", "forall"):
        flipped = "forall" if op == "exists" else "exists"
        return {**node, "op": flipped, "body": negate(node["body"])}
    raise ValueError(f"unknown formula op {op!r}")


def nnf(node: Mapping[str, Any]) -> dict[str, Any]:
    """Negation normal form of a formula (``implies`` rewritten, ``not`` only on atoms)."""
    op = node["op"]
    if op == "not":
        return negate(node["arg"])
    if op in ("and", "or"):
        return {"op": op, "args": [nnf(a) for a in node["args"]]}
    if op == "implies":
        return {"op": "or", "args": [negate(node["if"]), nnf(node["then"])]}
    if op in ("exists", "forall"):
        return {**node, "body": nnf(node["body"])}
    return dict(node)


# ---------------------------------------------------------------------------------------------
# How slot values appear in rules
# ---------------------------------------------------------------------------------------------
class _Instantiated:
    """Slot values written into the rules; ``scene`` prefixes scene atoms with a scene argument (batches).

    ``orders`` (batches of a domain whose relations are strict orders of box centres: relation -> (axis, sign))
    writes a relation literal as a comparison of the two objects' centre ranks (``pos(S,X,A,_), pos(S,Y,B,_),
    A < B``; batch.lp), so no ``hasRelationship`` atom is derived for pairs the rules never look at."""

    parametric = False

    def __init__(self, params: Mapping[str, Any], scene: str = "",
                 orders: Mapping[str, tuple[str, int]] | None = None):
        self.params = params
        self.s = f"{scene}," if scene else ""
        self.orders = orders or {}
        self._ranks = 0

    def _value(self, ref: Any) -> Any:
        if isinstance(ref, str) and ref.startswith("$"):
            return self.params[ref[1:]]
        return ref

    def attr(self, lit: Any, var: str, positive: bool) -> list[str]:
        v = self._value(lit)
        if isinstance(v, Mapping):
            v = AttrLit(v["prop"], v["value"], bool(v.get("negated", False)))
        atom = f"hasProperty({self.s}{var},{v.prop},{asp_term(v.value)})"
        return [atom if positive != v.negated else f"not {atom}"]

    def rel(self, lit: Any, a: str, b: str, positive: bool) -> list[str]:
        v = self._value(lit)
        if isinstance(v, Mapping):
            v = RelLit(v["rel"], bool(v.get("negated", False)))
        holds = positive != v.negated
        if v.rel in self.orders:
            axis, sign = self.orders[v.rel]
            self._ranks += 1
            ra, rb = f"Rank{self._ranks}a", f"Rank{self._ranks}b"
            # every object has one pos fact, so "not related" is the complementary comparison of the same ranks
            theta = ("<" if holds else ">=") if sign < 0 else (">" if holds else "<=")
            return [self._pos(a, ra, axis), self._pos(b, rb, axis), f"{ra} {theta} {rb}"]
        atom = f"hasRelationship({self.s}{a},{v.rel},{b})"
        return [atom if holds else f"not {atom}"]

    def _pos(self, var: str, rank: str, axis: str) -> str:
        return f"pos({self.s}{var},{rank},_)" if axis == "x" else f"pos({self.s}{var},_,{rank})"

    def const(self, value: Any) -> tuple[list[str], str]:
        return [], str(int(self._value(value)))

    def constant_name(self, ref: Any) -> tuple[list[str], str]:
        return [], asp_term(self._value(ref))

    def theta(self, theta: str, lhs: str, rhs: str, positive: bool) -> list[str]:
        t = self._value(theta)
        t = t if positive else _FLIP_THETA[t]
        return [f"{lhs} {_ASP_THETA[t]} {rhs}"]


class _Parametric:
    """Slot values read from parameter facts of constraint ``C``."""

    parametric = True

    def attr(self, lit: Any, var: str, positive: bool) -> list[str]:
        if isinstance(lit, str):
            atom = f"lit(C,{lit[1:].lower()},{var})"
            return [atom if positive else f"not {atom}"]
        return _Instantiated({}).attr(lit, var, positive)

    def rel(self, lit: Any, a: str, b: str, positive: bool) -> list[str]:
        if isinstance(lit, str):
            atom = f"rlit(C,{lit[1:].lower()},{a},{b})"
            return [atom if positive else f"not {atom}"]
        return _Instantiated({}).rel(lit, a, b, positive)

    def const(self, value: Any) -> tuple[list[str], str]:
        if isinstance(value, str) and value.startswith("$"):
            var = f"P{value[1:].upper()}"
            return [f"count_param(C,{value[1:].lower()},{var})"], var
        return [], str(int(value))

    def constant_name(self, ref: Any) -> tuple[list[str], str]:
        if isinstance(ref, str) and ref.startswith("$"):
            var = f"P{ref[1:].upper()}"
            return [f"const_param(C,{ref[1:].lower()},{var})"], var
        return [], asp_term(ref)

    def theta(self, theta: str, lhs: str, rhs: str, positive: bool) -> list[str]:
        if isinstance(theta, str) and theta.startswith("$"):
            atom = f"compare(TH,{lhs},{rhs})"
            return [f"theta_param(C,{theta[1:].lower()},TH)", atom if positive else f"not {atom}"]
        return _Instantiated({}).theta(theta, lhs, rhs, positive)


# ---------------------------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------------------------
@dataclass
class _Compiler:
    prefix: str  # names auxiliary predicates, e.g. "c0" or "c5_pair_relA_propC"
    values: Any  # _Instantiated | _Parametric
    guard: list[str]  # literals every rule body starts with (parametric: constraint(C, id))
    head_args: list[str]  # leading head arguments (parametric: ["C"])
    scene_arg: str = ""  # batched programs: every object atom is object(S,X)
    guards: bool = False  # comparisons of aggregates as their guards (see `compile_constraint`)
    context_guards: bool = False  # auxiliary rules guarded by the literals beside their use (`compile_constraint`)
    rules: list[str] = field(default_factory=list)
    _aux: int = 0
    _fresh: int = 0

    def _new_aux(self, kind: str) -> str:
        self._aux += 1
        return f"{self.prefix}_{kind}{self._aux}"

    def _new_var(self, base: str) -> str:
        self._fresh += 1
        return f"{base.upper()}{self._fresh}"

    def atom(self, name: str, args: Sequence[str]) -> str:
        args = [*self.head_args, *args]
        return f"{name}({','.join(args)})" if args else name

    def rule(self, head: str, body: Sequence[str]) -> None:
        body = [*self.guard, *body]
        self.rules.append(f"{head} :- {', '.join(body)}." if body else f"{head}.")

    # -- blocks -------------------------------------------------------------------------------
    def _bind(self, node: Mapping[str, Any], env: Mapping[str, str]) -> tuple[dict[str, str], list[str], list[str]]:
        """Bind a quantifier block's variables: new env, object/1 literals and distinctness literals."""
        inner = dict(env)
        new = []
        for v in node["vars"]:
            name = v.upper() if v.upper() not in inner.values() else self._new_var(v)
            inner[v] = name
            new.append(name)
        objs = [self.obj(v) for v in new]
        dist = []
        if node.get("distinct"):
            dist += [f"{a} != {b}" for a, b in itertools.combinations(new, 2)]
        for u in node.get("distinct_from", []):
            if u not in env:
                raise ValueError(f"distinct_from names {u!r}, which is not bound by an outer block")
            dist += [f"{v} != {env[u]}" for v in new]
        return inner, objs, dist

    def _bound_objs(self, env: Mapping[str, str]) -> list[str]:
        return [self.obj(v) for v in env.values()]

    def obj(self, var: str) -> str:
        return f"object({self.scene_arg},{var})" if self.scene_arg else f"object({var})"

    # -- formulas (NNF) -> body literals --------------------------------------------------------
    def lits(self, node: Mapping[str, Any], env: Mapping[str, str], context: Sequence[str] = ()) -> list[str]:
        """The body literals of ``node``; ``context``: literals of the body they will stand in (with
        ``context_guards``, every auxiliary rule made here is guarded by them: its atom is only ever read where
        they hold, so it is derived for fewer tuples and means the same there)."""
        op = node["op"]
        if op == "true":
            return []
        if op == "false":
            return ["#false"]
        if op == "not":
            return self.atom_lits(node["arg"], env, positive=False)
        if op in ("attr", "rel", "eq", "cmp"):
            return self.atom_lits(node, env, positive=True)
        if op == "and":
            out: list[str] = []
            if not self.context_guards:
                for a in node["args"]:
                    out += self.lits(a, env)
                return out
            args = _conjuncts(node)
            for a in args:
                if _plain(a):
                    out += self.lits(a, env)
            inner_context = [*context, *out]
            for a in args:
                if not _plain(a):
                    out += self.lits(a, env, inner_context)
            return out
        guard = list(context) if self.context_guards else []
        if op == "or":
            args = node["args"]
            if len(args) == 1:
                return self.lits(args[0], env, context)
            head = self.atom(self._new_aux("or"), list(env.values()))
            if not args:
                return ["#false"]
            for a in args:
                self.rule(head, [*self._bound_objs(env), *guard, *self.lits(a, env, context)])
            return [head]
        if op == "exists":
            inner, objs, dist = self._bind(node, env)
            head = self.atom(self._new_aux("ex"), list(env.values()))
            self.rule(head, [*self._bound_objs(env), *guard, *objs, *dist, *self.lits(node["body"], inner, context)])
            return [head]
        if op == "forall":
            inner, objs, dist = self._bind(node, env)
            head = self.atom(self._new_aux("cex"), list(env.values()))
            self.rule(head, [*self._bound_objs(env), *guard, *objs, *dist,
                             *self.lits(negate(node["body"]), inner, context)])
            return [f"not {head}"]
        raise ValueError(f"unexpected op {op!r} in negation normal form")

    def atom_lits(self, node: Mapping[str, Any], env: Mapping[str, str], positive: bool) -> list[str]:
        op = node["op"]
        if op == "attr":
            return self.values.attr(node["lit"], env[node["var"]], positive)
        if op == "rel":
            a, b = (env[v] for v in node["args"])
            return self.values.rel(node["lit"], a, b, positive)
        if op == "eq":
            a, b = (env[v] for v in node["args"])
            return [f"{a} {'=' if positive else '!='} {b}"]
        if op == "cmp":
            pre: list[str] = []
            sides, parts = [], []
            for term in (node["lhs"], node["rhs"]):
                p, expr, part = self.term(term, env)
                pre += p
                sides.append(expr)
                parts.append(part)
            aggregates = [s.startswith("#") for s in sides]
            if not any(aggregates):
                return [*pre, *self.values.theta(node["theta"], sides[0], sides[1], positive)]
            if self.guards:
                # The comparison as the aggregate's own guard (one weight constraint for clasp), and two aggregates
                # compared as one sum of their difference against 0, rather than assigning each to a variable.
                if all(aggregates):
                    # only an aggregate term has an element, so both are there
                    (wa, ta, ca), (wb, tb, cb) = [part for part in parts if part is not None]
                    diff = f"#sum{{ {wa},a,{ta} : {ca} ; -{wb},b,{tb} : {cb} }}"
                    return [*pre, *self.values.theta(node["theta"], diff, "0", positive)]
                return [*pre, *self.values.theta(node["theta"], sides[0], sides[1], positive)]
            names = []
            for s in sides:
                if s.startswith("#"):
                    var = self._new_var("N")
                    pre.append(f"{var} = {s}")
                    names.append(var)
                else:
                    names.append(s)
            return [*pre, *self.values.theta(node["theta"], names[0], names[1], positive)]
        raise ValueError(f"not an atom: {op!r}")

    def term(self, node: Mapping[str, Any],
             env: Mapping[str, str]) -> tuple[list[str], str, tuple[str, str, str] | None]:
        """(literals it needs, the term's text, for an aggregate its (weight, tuple, condition) element)."""
        if node["op"] == "const":
            return (*self.values.const(node["value"]), None)
        if node["op"] == "value":  # a derived integer attribute of a bound object (a confidence rank)
            var = self._new_var("V")
            s = f"{self.scene_arg}," if self.scene_arg else ""
            return [f"hasProperty({s}{env[node['var']]},{node['attr']},{var})"], var, None
        if node["op"] in ("count", "sum"):
            inner, objs, dist = self._bind(node, env)
            new = [inner[v] for v in node["vars"]]
            cond = [*objs, *dist, *self.lits(nnf(node["where"]), inner)]
            if node["op"] == "count":
                return [], f"#count{{ {','.join(new)} : {', '.join(cond)} }}", ("1", ",".join(new), ", ".join(cond))
            # weights: the domain constant named by the slot, looked up by the object's value of its attribute
            pre, name = self.values.constant_name(node["weight"])
            s = f"{self.scene_arg}," if self.scene_arg else ""
            w, p, v = self._new_var("W"), self._new_var("P"), self._new_var("C")
            x = new[0]
            cond += [f"hasProperty({s}{x},{p},{v})", f"domain_constant({name},{p},{v},{w})"]
            return pre, f"#sum{{ {w},{','.join(new)} : {', '.join(cond)} }}", (w, ",".join(new), ", ".join(cond))
        raise ValueError(f"unknown term op {node['op']!r}")

    # -- top level ------------------------------------------------------------------------------
    def violation(self, formula: Mapping[str, Any], head: str) -> None:
        """Rules deriving ``head`` exactly when ``formula`` fails."""
        self._emit(negate(formula), head)

    def _emit(self, node: Mapping[str, Any], head: str) -> None:
        if node["op"] == "or":
            for a in node["args"]:
                self._emit(a, head)
        elif node["op"] == "exists":
            inner, objs, dist = self._bind(node, {})
            self.rule(head, [*objs, *dist, *self.lits(node["body"], inner)])
        else:
            self.rule(head, self.lits(node, {}))


def _conjuncts(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The arguments of a conjunction, nested conjunctions flattened."""
    out: list[Mapping[str, Any]] = []
    for a in node["args"]:
        out.extend(_conjuncts(a) if a["op"] == "and" else [a])
    return out


def _plain(node: Mapping[str, Any]) -> bool:
    """A formula that compiles to body literals alone (no auxiliary rule, no aggregate)."""
    op = node["op"]
    if op == "not":
        op = node["arg"]["op"]
    return op in ("attr", "rel", "eq", "true", "false")


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------
def _comment(text: str) -> str:
    return "\n".join(f"% {line}" if line else "%" for line in text.splitlines())


def compile_constraint(constraint: Constraint, index: int, prefix: str | None = None, batched: bool = False,
                       guards: bool = False, orders: Mapping[str, tuple[str, int]] | None = None) -> str:
    """Instantiated ASP rules for one constraint: ``violated(index)`` iff it fails (formula or anti-vacuity).

    With ``batched``, every scene atom carries a leading scene argument ``S`` (``object(S,X)``,
    ``hasProperty(S,X,P,V)``, ...), rules are guarded by ``scene(S)`` and the head is ``violated(S,index)``,
    so one grounding evaluates the constraint on many scenes. Batched rules check given facts, so they are
    written for grounding speed: each auxiliary rule (a disjunction, an inner quantifier) is guarded by the
    literals that stand beside its atom where it is read, and with ``orders`` (relation -> (axis, sign), a domain
    whose relations are strict orders of box centres) a relation literal compares the objects' centre ranks
    (``pos/4`` facts, batch.lp). The time to check a scene then grows with the tuples the formula's literals admit,
    not with every pair or triple of objects.

    With ``guards``, a count or sum compared with a number is written as the aggregate's guard
    (``#count{ X : ... } != 2``) and two aggregates compared as one sum of their difference (``#sum{ 1,a,X : ... ;
    -1,b,Y : ... } < 0``): one weight constraint each, which clasp propagates, where assigning each aggregate to a
    variable (``N = #count{...}``, the paper's rendering, kept for CLEVR) grounds one constraint per value.
    """
    t = constraint.template
    if batched:
        comp = _Compiler(prefix or f"c{index}", _Instantiated(constraint.params, "S", orders), ["scene(S)"], ["S"],
                         "S", guards, context_guards=True)
        head = f"violated(S,{index})"
    else:
        comp = _Compiler(prefix or f"c{index}", _Instantiated(constraint.params), [], [], "", guards)
        head = f"violated({index})"
    comp.rules.append(f"% constraint {index}: {t.id}  {_describe(constraint)}")
    comp.violation(t.formula, head)
    if t.anti_vacuity is not None:
        comp.rules.append(f"% constraint {index}: anti-vacuity")
        comp.violation(t.anti_vacuity, head)
    return "\n".join(comp.rules) + "\n"


def _describe(c: Constraint) -> str:
    parts = []
    for s in c.template.slots:
        v = c.params[s.name]
        if isinstance(v, AttrLit):
            parts.append(f"{s.name}={'not ' if v.negated else ''}{v.prop}:{v.value}")
        elif isinstance(v, RelLit):
            parts.append(f"{s.name}={'not ' if v.negated else ''}{v.rel}")
        else:
            parts.append(f"{s.name}={v}")
    return " ".join(parts)


def template_predicate(template: Template) -> str:
    return f"{template.cls.lower()}_{template.name}"


def compile_template(template: Template) -> str:
    """Parametric ASP rules for a template: ``violated(C)`` for every constraint ``C`` of this template."""
    guard = [f'constraint(C,"{template.id}")']
    comp = _Compiler(template_predicate(template), _Parametric(), guard, ["C"])
    slots = ", ".join(f"{s.name}:{s.type}{' (negated)' if s.negated else ''}" for s in template.slots)
    comp.rules.append(_comment(f"{template.id}: {template.nl['long']}\nslots: {slots}"))
    comp.violation(template.formula, "violated(C)")
    if template.anti_vacuity is not None:
        comp.rules.append(_comment(f"anti-vacuity: {template.nl.get('anti_vacuity', '')}"))
        comp.violation(template.anti_vacuity, "violated(C)")
    return "\n".join(comp.rules) + "\n"


def parameter_facts(constraint: Constraint, index: int) -> str:
    """Facts that instantiate the parametric template program for one constraint."""
    facts = [f'constraint({index},"{constraint.template_id}").']
    for s in constraint.template.slots:
        v = constraint.params[s.name]
        name = s.name.lower()
        if isinstance(v, AttrLit):
            facts.append(f"attr_param({index},{name},{v.prop},{asp_term(v.value)},{'neg' if v.negated else 'pos'}).")
        elif isinstance(v, RelLit):
            facts.append(f"rel_param({index},{name},{v.rel},{'neg' if v.negated else 'pos'}).")
        elif s.type == "count":
            facts.append(f"count_param({index},{name},{v}).")
        elif s.type == "constant":
            facts.append(f"const_param({index},{name},{asp_term(v)}).")
        else:
            facts.append(f'theta_param({index},{name},"{v}").')
    return "\n".join(facts) + "\n"


def vocabulary_program(domain: Domain) -> str:
    """ASP facts for a domain's vocabulary and the geometry of its regions and relations (from the domain file)."""
    lines = ["% Vocabulary, generated from the domain file (logicval_hf.asp.encoding.vocabulary_program)."]
    for a, values in domain.attributes.items():
        lines.append(f"attribute({a}).")
        lines.append(" ".join(f"property({a},{asp_term(v)})." for v in values))
    lines.append(" ".join(f"relation({r})." for r in domain.relations))
    if domain.derived.get("region", {}).get("kind") == "quadrant":
        cells = [(r, *region_cell(r)) for r in domain.attributes["region"]]
        lines.append(" ".join(f"region_col({r},{c})." for r, c, _ in cells))
        lines.append(" ".join(f"region_row({r},{w})." for r, _, w in cells))
    pairs = domain.canonical_relations()
    if domain.ordered:
        # background.lp: one strict total order per axis, the first relation of each pair forwards
        axes = {domain.rules[r].axis: (r, inv) for r, inv in pairs}
        lines.append(" ".join(f"axis_relation({ax},{r},{inv})." for ax, (r, inv) in sorted(axes.items())))
    lines.append(" ".join(f"relation_pair({r},{inv})." for r, inv in pairs))
    for a in domain.numeric_attributes:
        lines.append(f"numeric_attribute({a}).")
    lines.extend(constants_program(domain).splitlines())
    return "\n".join(lines) + "\n"


def constants_program(domain: Domain) -> str:
    """``domain_constant(Name, Attribute, Value, Weight)`` facts: the domain's per-value integers (keyed by
    its noun attribute, e.g. legs per class)."""
    facts = [f"domain_constant({asp_term(c)},{domain.noun},{asp_term(v)},{w})."
             for c, table in domain.constants.items() for v, w in table.items()]
    return "".join(f"{f}\n" for f in facts)


def scene_facts(scene: Any, scene_id: int | None = None) -> str:
    """A scene as ASP facts: ``object/1``, ``hasProperty/3`` (region included) and ``hasRelationship/3``.

    With ``scene_id``, every fact carries it as a first argument (and ``scene(id)`` is added), for batches.
    """
    s = "" if scene_id is None else f"{scene_id},"
    lines = [] if scene_id is None else [f"scene({scene_id})."]
    derived = list(scene.domain.derived)
    for i, obj in enumerate(scene.objects):
        props = [f"hasProperty({s}{i},{p},{asp_term(v)})." for p, v in obj.attributes.items()]
        props += [f"hasProperty({s}{i},{a},{asp_term(scene.attribute(i, a))})." for a in derived]
        lines.append(f"object({s}{i}). " + " ".join(props))
    rels = [f"hasRelationship({s}{a},{r},{b})." for a, r, b in scene.relations()]
    if rels:
        lines.append(" ".join(rels))
    return "\n".join(lines) + "\n"
