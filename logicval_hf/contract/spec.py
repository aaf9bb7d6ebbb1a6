"""Constraints and specs: contract JSON in, typed and validated objects out, the same JSON back.

A constraint is ``{"template": "C8/rel_exact", "params": {...}}``; a spec is ``{"n": 5, "constraints": [...]}``
(docs/spec_language.md §1-3). Every slot rule of docs/spec_language.md §3.3 is checked; a violation raises `SpecError`
(a `ValueError`) whose message starts with the path of the offending field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from logicval_hf.contract.catalog import Catalog, Slot, Template, load_catalog
from logicval_hf.contract.domain import DEFAULT_DOMAIN, Domain, load_domain
from logicval_hf.errors import SpecError

ALLOWED_M = (1, 3, 6)


@dataclass(frozen=True)
class AttrLit:
    """An attribute literal: ``prop == value``, flipped when ``negated``."""

    prop: str
    value: str
    negated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"prop": self.prop, "value": self.value, "negated": self.negated}

    def denotes(self, values: tuple[str, ...]) -> frozenset[str]:
        """The attribute values an object may have for this literal to hold."""
        return frozenset(v for v in values if v != self.value) if self.negated else frozenset([self.value])


@dataclass(frozen=True)
class RelLit:
    """A relation literal ``rel(a, b)``, flipped when ``negated``."""

    rel: str
    negated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"rel": self.rel, "negated": self.negated}


ParamValue = AttrLit | RelLit | int | str
_Lit = TypeVar("_Lit", AttrLit, RelLit)
#: slot-rule kinds over attribute literals and over relation literals (docs/spec_language.md §3.3)
_ATTR_RULES = frozenset({"distinct_props", "distinct_literals", "no_cover", "not_equivalent",
                         "distinct_props_or_same_literal"})
_REL_RULES = frozenset({"different_axis", "distinct_values"})


def _fail(path: str, msg: str) -> SpecError:
    return SpecError(f"{path}: {msg}")


def _check_keys(path: str, d: Any, required: tuple[str, ...], what: str) -> None:
    if not isinstance(d, Mapping):
        raise _fail(path, f"{what} must be a JSON object with keys {list(required)}, got {type(d).__name__}")
    missing = [k for k in required if k not in d]
    extra = [k for k in d if k not in required]
    if missing:
        raise _fail(path, f"{what} is missing {missing} (expected keys {list(required)})")
    if extra:
        raise _fail(path, f"{what} has unknown keys {extra} (expected keys {list(required)})")


def _fixed_polarity(slot: Slot) -> str:
    return f"slot {slot.name} has fixed polarity negated={str(bool(slot.negated)).lower()}"


def _parse_param(path: str, slot: Slot, raw: Any, dom: Domain) -> ParamValue:
    if slot.type == "attr":
        _check_keys(path, raw, ("prop", "value", "negated"), "an attribute literal")
        prop, value, neg = raw["prop"], raw["value"], raw["negated"]
        allowed = dom.slot_attributes(slot.props)
        if prop not in allowed:
            raise _fail(path + ".prop", f"{prop!r} is not allowed here; slot {slot.name} takes {list(allowed)}")
        if dom.is_open(prop):  # free text: stored folded; a text with nothing left after folding names nothing
            value = dom.canonical_value(prop, value) if isinstance(value, str) else value
            if not isinstance(value, str) or not value:
                raise _fail(path + ".value", f"{raw['value']!r} is not a {prop}: give a text with a letter or a digit")
        elif value not in dom.attributes[prop]:
            raise _fail(path + ".value", f"{value!r} is not a {prop}; {dom.expected(prop, value)}")
        if not isinstance(neg, bool):
            raise _fail(path + ".negated", f"must be true or false, got {neg!r}")
        if neg != bool(slot.negated):
            raise _fail(path + ".negated", _fixed_polarity(slot))
        return AttrLit(prop, value, neg)
    if slot.type == "rel":
        _check_keys(path, raw, ("rel", "negated"), "a relation literal")
        rel, neg = raw["rel"], raw["negated"]
        allowed = dom.slot_relations(slot.values)
        if rel not in allowed:
            raise _fail(path + ".rel", f"{rel!r} is not a relation of domain {dom.name!r} allowed here; "
                        f"expected one of {list(allowed)}")
        if not isinstance(neg, bool):
            raise _fail(path + ".negated", f"must be true or false, got {neg!r}")
        if neg != bool(slot.negated):
            raise _fail(path + ".negated", _fixed_polarity(slot))
        return RelLit(rel, neg)
    if slot.type == "count":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise _fail(path, f"count must be an integer, got {raw!r}")
        lo = slot.count_min()
        hi = slot.max if isinstance(slot.max, int) else dom.n_max
        if raw < lo or raw > hi:
            raise _fail(path, f"count {raw} is out of range {lo}..{hi}")
        return int(raw)
    if slot.type == "constant":
        if not isinstance(raw, str) or raw not in dom.constants:
            raise _fail(path, f"{raw!r} is not a constant of domain {dom.name!r}; it has {sorted(dom.constants)}")
        return raw
    if slot.type == "theta":
        if raw not in slot.values:
            raise _fail(path, f"comparator {raw!r} is not allowed; slot {slot.name} takes {list(slot.values)}")
        return raw
    raise _fail(path, f"unknown slot type {slot.type!r} in the catalog")


def _check_slot_rules(path: str, template: Template, params: Mapping[str, ParamValue], dom: Domain) -> None:
    for rule in template.slot_constraints:
        kind, names = rule["kind"], rule["slots"]
        where = f"{path}: slot rule {kind} on {names}"
        if kind == "distinct_sets":
            first, second = ({params[s] for s in grp} for grp in names)
            if first == second:
                raise SpecError(f"{where}: the two groups name the same literals")
            continue
        if kind in _REL_RULES:
            rels = _literals(where, [params[s] for s in names], RelLit)
            if kind == "different_axis":
                if dom.relation(rels[0].rel).axis_key == dom.relation(rels[1].rel).axis_key:
                    raise SpecError(f"{where}: {rels[0].rel} and {rels[1].rel} lie on the same axis")
            elif rels[0].rel == rels[1].rel:  # distinct_values
                raise SpecError(f"{where}: both relations are {rels[0].rel}")
            continue
        if kind not in _ATTR_RULES:
            raise SpecError(f"{where}: unknown slot-rule kind in the catalog")
        lits = _literals(where, [params[s] for s in names], AttrLit)
        pairs = [(i, j) for i in range(len(lits)) for j in range(i + 1, len(lits))]
        if kind == "distinct_props":
            for i, j in pairs:
                if lits[i].prop == lits[j].prop:
                    raise SpecError(f"{where}: {names[i]} and {names[j]} both constrain {lits[i].prop}")
        elif kind == "distinct_literals":
            for i, j in pairs:
                if (lits[i].prop, lits[i].value) == (lits[j].prop, lits[j].value):
                    raise SpecError(f"{where}: {names[i]} and {names[j]} are the same literal {lits[i].value}")
        elif kind == "no_cover":
            by_prop: dict[str, set[str]] = {}
            for lit in lits:
                if dom.is_open(lit.prop):  # free text: no set of literals covers every text
                    continue
                by_prop.setdefault(lit.prop, set()).update(lit.denotes(dom.values(lit.prop)))
            for prop, vals in by_prop.items():
                if vals >= set(dom.values(prop)):
                    raise SpecError(f"{where}: the literals cover every {prop}, so the disjunction always holds")
        elif kind == "not_equivalent":
            a, b = lits
            same = (a == b) if dom.is_open(a.prop) else a.denotes(dom.values(a.prop)) == b.denotes(dom.values(b.prop))
            if a.prop == b.prop and same:
                raise SpecError(f"{where}: {names[0]} and {names[1]} denote the same objects")
        else:  # distinct_props_or_same_literal
            a, b = lits
            if a.prop == b.prop and a.value != b.value:
                raise SpecError(f"{where}: two different values of {a.prop} make the comparison always true")


def _literals(where: str, values: list[ParamValue], kind: type[_Lit]) -> list[_Lit]:
    """The slots' values as literals of the kind the rule needs (a catalog mistake otherwise)."""
    lits = [v for v in values if isinstance(v, kind)]
    if len(lits) != len(values):
        raise SpecError(f"{where}: the catalog applies it to slots that are not {kind.__name__} slots")
    return lits


@dataclass(frozen=True)
class Constraint:
    """A template instantiated with parameter values, in a domain (None: built without one, read as the catalog's;
    the verbaliser then uses the shipped domains' words)."""

    template: Template
    params: Mapping[str, ParamValue]
    domain: Domain | None = field(default=None, compare=False, repr=False)

    @property
    def template_id(self) -> str:
        return self.template.id

    @property
    def cls(self) -> str:
        return self.template.cls

    @classmethod
    def from_dict(
        cls, d: Any, n: int | None = None, catalog: Catalog | None = None, path: str = "constraint",
        domain: Domain | None = None,
    ) -> Constraint:
        """Parse and validate one constraint in ``domain`` (default: the catalog's, CLEVR); with ``n`` given,
        counts are checked against that scene size."""
        catalog = catalog or load_catalog()
        dom = domain or catalog.domain
        _check_keys(path, d, ("template", "params"), "a constraint")
        try:
            template = catalog.template(d["template"])
        except SpecError as e:
            raise _fail(path + ".template", str(e)) from None
        raw = d["params"]
        names = [s.name for s in template.slots]
        _check_keys(path + ".params", raw, tuple(names), f"params of {template.id}")
        for attr in sorted(_numeric_terms(template.formula)):
            if attr not in dom.numeric_attributes:
                raise _fail(path + ".template", f"{template.id} reads the derived attribute {attr!r}, which domain "
                            f"{dom.name!r} lacks (it has {list(dom.numeric_attributes) or 'none'})")
        params = {s.name: _parse_param(f"{path}.params.{s.name}", s, raw[s.name], dom) for s in template.slots}
        _check_slot_rules(path + ".params", template, params, dom)
        c = cls(template, params, dom)
        if n is not None:
            c.check_counts(n, catalog, path, dom)
        return c

    def count(self, name: str, path: str = "constraint") -> int:
        """The value of the count slot ``name`` (a `SpecError` if that parameter is not an integer)."""
        k = self.params[name]
        if isinstance(k, bool) or not isinstance(k, int):
            raise _fail(f"{path}.params.{name}", f"count must be an integer, got {k!r}")
        return k

    def check_counts(self, n: int, catalog: Catalog | None = None, path: str = "constraint",
                     domain: Domain | None = None) -> None:
        dom = domain or (catalog or load_catalog()).domain
        for slot in self.template.slots:
            if slot.type != "count" or not isinstance(slot.max, str):
                continue
            k = self.count(slot.name, path)
            lo, hi = slot.count_range(n, dom.n_max)
            if not lo <= k <= hi:
                why = "overflow 'unsat' allows up to the largest n" if slot.overflow == "unsat" else (
                    f"max is {slot.max}, overflow {slot.overflow!r}")
                raise _fail(f"{path}.params.{slot.name}", f"count {k} is out of range {lo}..{hi} at n={n} ({why})")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for slot in self.template.slots:
            v = self.params[slot.name]
            out[slot.name] = v.to_dict() if isinstance(v, (AttrLit, RelLit)) else v
        return {"template": self.template.id, "params": out}

    def key(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


def _numeric_terms(node: Any) -> set[str]:
    """Derived integer attributes a formula reads through ``value`` terms."""
    found: set[str] = set()
    if isinstance(node, Mapping):
        if node.get("op") == "value":
            found.add(node["attr"])
        for v in node.values():
            found |= _numeric_terms(v)
    elif isinstance(node, list):
        for v in node:
            found |= _numeric_terms(v)
    return found


_SPEC_KEYS = ("n", "constraints", "domain", "score_threshold")
MAX_CONSTRAINTS = 64


@dataclass(frozen=True)
class Spec:
    """A scene size n and its constraints, in a domain.

    The paper's specs (CLEVR, n given) have 1, 3 or 6 constraints from distinct classes. A spec in another
    domain, or with the scene size left open (``n`` absent: any number of objects), may have any number of
    constraints, classes repeated. ``score_threshold``: only objects whose detection score is above it count
    (objects without a score always count), as in detector-based benchmarks.
    """

    n: int | None
    constraints: tuple[Constraint, ...]
    domain: Domain = None  # type: ignore[assignment]
    score_threshold: float | None = None

    def __post_init__(self) -> None:
        if self.domain is None:
            object.__setattr__(self, "domain", load_domain(DEFAULT_DOMAIN))

    def fixed_n(self, what: str) -> int:
        """The scene size, where ``what`` needs one: a `SpecError` naming ``what`` if this spec leaves it open."""
        if self.n is None:
            raise SpecError(f"{what} needs the spec's scene size n; this spec leaves it open")
        return self.n

    @classmethod
    def from_dict(cls, d: Any, catalog: Catalog | None = None, allowed_m: tuple[int, ...] | None = ALLOWED_M) -> Spec:
        """Parse and validate a spec. ``allowed_m=None`` accepts any number of constraints up to `MAX_CONSTRAINTS`."""
        catalog = catalog or load_catalog()
        if isinstance(d, (str, bytes)):
            try:
                d = json.loads(d)
            except json.JSONDecodeError as e:
                raise SpecError(f"spec: not valid JSON ({e})") from None
            except RecursionError:
                raise SpecError("spec: nested too deeply to be a spec") from None
        if not isinstance(d, Mapping):
            raise SpecError("spec: a spec must be a JSON object with keys ['n', 'constraints'], "
                            f"got {type(d).__name__}")
        if "constraints" not in d:
            raise SpecError("spec: a spec is missing ['constraints'] (expected keys ['n', 'constraints'])")
        extra = [k for k in d if k not in _SPEC_KEYS]
        if extra:
            raise SpecError(f"spec: a spec has unknown keys {extra} (expected keys {list(_SPEC_KEYS)})")
        name = d.get("domain", DEFAULT_DOMAIN)
        if not isinstance(name, str):
            raise SpecError(f"spec.domain: must be a domain name, got {name!r}")
        try:
            dom = catalog.domain if name == DEFAULT_DOMAIN else load_domain(name)
        except SpecError as e:
            raise SpecError(f"spec.domain: {e}") from None
        if "n" not in d and not dom.open_size:
            raise SpecError(f"spec: a spec is missing ['n'] (domain {dom.name!r} needs a scene size; expected keys "
                            "['n', 'constraints'])")
        n = d.get("n")
        if n is not None:
            if isinstance(n, bool) or not isinstance(n, int):
                raise SpecError(f"spec.n: must be an integer, got {n!r}")
            if not dom.n_min <= n <= dom.n_max:
                raise SpecError(f"spec.n: {n} is outside {dom.n_min}..{dom.n_max}")
        threshold = d.get("score_threshold")
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                      or not 0 <= threshold < 1):
            raise SpecError(f"spec.score_threshold: must be a number in [0, 1), got {threshold!r}")
        raw = d["constraints"]
        if not isinstance(raw, list) or not raw:
            raise SpecError("spec.constraints: must be a non-empty list of constraints")
        paper = dom.name == DEFAULT_DOMAIN and n is not None
        if paper and allowed_m is not None and len(raw) not in allowed_m:
            raise SpecError(f"spec.constraints: {len(raw)} constraints; a spec has {' or '.join(map(str, allowed_m))}")
        if len(raw) > MAX_CONSTRAINTS:
            raise SpecError(f"spec.constraints: {len(raw)} constraints; at most {MAX_CONSTRAINTS}")
        cons = tuple(
            Constraint.from_dict(c, n=n if n is not None else dom.n_max, catalog=catalog,
                                 path=f"spec.constraints[{i}]", domain=dom)
            for i, c in enumerate(raw)
        )
        if paper:
            seen: dict[str, int] = {}
            for i, c in enumerate(cons):
                if c.cls in seen:
                    raise SpecError(
                        f"spec.constraints[{i}].template: class {c.cls} already used by constraints[{seen[c.cls]}]; "
                        "a spec's constraints come from distinct classes"
                    )
                seen[c.cls] = i
        return cls(n, cons, dom, None if threshold is None else float(threshold))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.domain.name != DEFAULT_DOMAIN:  # a domain of one's own by its file, so that the JSON reads back
            out["domain"] = self.domain.source or self.domain.name
        if self.n is not None:
            out["n"] = self.n
        out["constraints"] = [c.to_dict() for c in self.constraints]
        if self.score_threshold is not None:
            out["score_threshold"] = self.score_threshold
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    def key(self) -> str:
        """Canonical string of the spec (for caching and de-duplication)."""
        return self._key

    @functools.cached_property
    def _key(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def m(self) -> int:
        return len(self.constraints)


def as_spec(spec: Any, catalog: Catalog | None = None) -> Spec:
    """Accept a `Spec`, a dict or a JSON string."""
    return spec if isinstance(spec, Spec) else Spec.from_dict(spec, catalog=catalog)
