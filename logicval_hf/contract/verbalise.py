"""The deterministic verbaliser: constraints and specs to English, and Soft-TIFA sub-questions.

Everything rendered here comes from the catalog and the spec's domain: the template strings (``nl.short``,
``nl.long``, ``nl.anti_vacuity`` and ``subquestions``, docs/verbaliser.md), the domain's vocabulary and words (its
noun, adjectives and relation phrases: `logicval_hf.contract.grammar`) and the domain file's prompt description.
This module only knows the *grammar* of the placeholders:

* noun phrases put the domain's adjectives first (CLEVR: colour, then material), then its noun (CLEVR: the shape;
  ``object`` without one), then the region (``in the back-left region (r0)``), then the negated literals as a
  relative clause (``red object that is not a cube``, ``objects that are not red and not metal``);
* articles (a/an) follow the sound of the next word, plurals follow English spelling rules, and a count
  agrees with its noun (``1 red object``, ``2 red objects``);
* an unknown placeholder, a missing slot or a slot of the wrong type raises `VerbaliseError`; no brace
  ever reaches the output.

The full prompt (Appendix C of the paper) is assembled from the domain's description and the module-level string
templates below (``PROMPT_TEMPLATE``, ...), so the exact wording can be reviewed in one place; CLEVR's description
is ``prompt_description`` in ``domains/clevr.json``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.grammar import (
    ADJECTIVE_ORDER,
    ATTRIBUTE_PHRASES,
    GENERIC_NOUN,
    IRREGULAR_PLURALS,
    NOUN_ATTRIBUTE,
    NOUN_ATTRIBUTES,
    REGION_ATTRIBUTE,
    REGION_COLUMN_WORDS,
    REGION_ROW_WORDS,
    REGION_TEMPLATE,
    REL_PHRASES,
    THETA_FLIP,
    THETA_PHRASES,
    VerbaliseError,
    article,
    constraint_names,
    count_phrase,
    join_words,
    noun_phrase,
    plural,
    predicate,
    region_name,
    rel_phrase,
    with_article,
)
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit, Spec, as_spec

__all__ = [
    "VerbaliseError", "REGISTERS", "article", "with_article", "plural", "region_name", "noun_phrase",
    "predicate", "render", "constraint_text", "domain_description", "full_prompt", "subquestions",
    "spec_subquestions", "check_expect", "count_candidates", "parse_expect", "constraint_names",
    # the grammar's names, read from here by callers (logicval_hf.contract.grammar)
    "ADJECTIVE_ORDER", "ATTRIBUTE_PHRASES", "GENERIC_NOUN", "IRREGULAR_PLURALS", "NOUN_ATTRIBUTE", "NOUN_ATTRIBUTES",
    "REGION_ATTRIBUTE",
    "REGION_COLUMN_WORDS", "REGION_ROW_WORDS", "REGION_TEMPLATE", "REL_PHRASES", "THETA_FLIP", "THETA_PHRASES",
    "count_phrase", "rel_phrase",
]

REGISTERS = ("short", "long")

# ------------------------------------------------------------------------------------------------
# The prompt (Appendix C). ``{...}`` fields here are Python format fields, filled by `full_prompt`.
# ------------------------------------------------------------------------------------------------

#: the description of a domain whose file has no ``prompt_description``: its ``description`` (or
#: `GENERIC_DESCRIPTION`), the attribute vocabulary, and the regions when it has them
GENERIC_DESCRIPTION = "The image shows a scene of objects."
GENERIC_DOMAIN_TEMPLATE = "{description} {attributes}"
GENERIC_REGIONS_TEMPLATE = (
    " The image is divided into a 2 x 2 grid of four regions by its vertical and horizontal midlines: {regions}; "
    "back means the upper half of the image and front the lower half."
)
#: how the attribute vocabulary is listed ("one color (gray, red, ... or yellow)")
ATTRIBUTES_TEMPLATE = "Every object has {items}."
ATTRIBUTE_ITEM_TEMPLATE = "one {attribute} ({values})"

#: the whole prompt: domain description, number of objects, constraints, contradiction instruction
PROMPT_TEMPLATE = (
    "{domain}\n"
    "Generate an image of such a scene with exactly {objects}. {lead_in}\n"
    "{constraints}\n"
    "{closing}"
)
LEAD_IN_ONE = "The scene must satisfy the following constraint."
LEAD_IN_MANY = "The scene must satisfy all of the following {m} constraints."
CONSTRAINT_ITEM_TEMPLATE = "Constraint {i}: {text}"
#: the closing instruction of the open-model prompts
EMPTY_SCENE_INSTRUCTION = (
    "If the description is contradictory, so that no scene can satisfy it, generate an empty scene "
    "without any objects."
)
#: the closing instruction of the proprietary-model prompts (white background); the only difference
EMPTY_SCENE_INSTRUCTION_WHITE = (
    "Use a plain white background. If the description is contradictory, so that no scene can satisfy it, "
    "generate an empty white scene without any objects."
)


def _capitalise(s: str) -> str:
    return s[:1].upper() + s[1:]


# ------------------------------------------------------------------------------------------------
# Placeholder renderer (docs/verbaliser.md §2)
# ------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ATTR_KINDS = ("np", "a", "nps", "pred", "ppred", "pos", "posp", "posnps", "mustbe", "prop", "val")
_ALL_KINDS = (*_ATTR_KINDS, "rel", "num", "theta", "flip", "K", "n")


def _slot(params: Mapping[str, Any], name: str, kind: str, types: tuple[type, ...]) -> Any:
    if name not in params:
        raise VerbaliseError(f"placeholder {{{kind}:...}} names slot {name!r}, which the constraint does not have "
                             f"(slots: {sorted(params)})")
    v = params[name]
    if isinstance(v, bool) or not isinstance(v, types):
        want = " or ".join(t.__name__ for t in types)
        raise VerbaliseError(f"placeholder {{{kind}:...}}: slot {name} holds {v!r}, expected {want}")
    return v


def _render_one(body: str, params: Mapping[str, Any], n: int | None, domain: Domain | None) -> str:
    kind, sep, arg = body.partition(":")
    kind = kind.strip()
    args = [a.strip() for a in arg.split(",")] if sep else []
    if sep and (not arg.strip() or any(not a for a in args)):
        raise VerbaliseError(f"placeholder {{{body}}} has an empty slot name")
    if not sep:
        if kind == "n":
            if n is None:
                raise VerbaliseError("placeholder {n} needs the scene size n")
            return str(n)
        if kind in params and isinstance(params[kind], str):  # a comparator or a domain constant's name
            return params[kind]
        if kind in params and params[kind] is not None:
            v = params[kind]
            if isinstance(v, bool) or not isinstance(v, int):
                raise VerbaliseError(f"placeholder {{{kind}}}: slot {kind} holds {v!r}, expected an integer count")
            return str(v)
        raise VerbaliseError(f"unknown placeholder {{{body}}}; placeholders are {{kind:SLOTS}} with kind in "
                             f"{list(_ALL_KINDS)}, or a count slot such as {{K}}, or {{n}}")
    if kind in _ATTR_KINDS:
        lits = [_slot(params, a, kind, (AttrLit,)) for a in args]
        if kind in ("prop", "val") and len(lits) != 1:
            raise VerbaliseError(f"placeholder {{{body}}} takes exactly one attribute slot")
        if kind == "np":
            return noun_phrase(lits, domain=domain)
        if kind == "a":
            return noun_phrase(lits, with_art=True, domain=domain)
        if kind == "nps":
            return noun_phrase(lits, plural_form=True, domain=domain)
        if kind == "posnps":
            return noun_phrase([AttrLit(lit.prop, lit.value, False) for lit in lits], plural_form=True, domain=domain)
        if kind == "pred":
            return join_words([predicate(lit, domain=domain) for lit in lits])
        if kind == "ppred":
            return join_words([predicate(lit, plural_form=True, domain=domain) for lit in lits])
        if kind == "pos":
            return join_words([predicate(lit, positive=True, domain=domain) for lit in lits])
        if kind == "posp":
            return join_words([predicate(lit, plural_form=True, positive=True, domain=domain) for lit in lits])
        if kind == "mustbe":
            return join_words([("must not be " if lit.negated else "must be ")
                               + predicate(lit, positive=True, domain=domain) for lit in lits])
        if kind == "prop":
            return lits[0].prop
        return lits[0].value  # val
    if kind == "rel":
        rels = [_slot(params, a, kind, (RelLit,)) for a in args]
        return join_words([rel_phrase(r, domain) for r in rels])
    if kind == "num":
        k = _slot(params, args[0], kind, (int,))
        lits = [_slot(params, a, kind, (AttrLit,)) for a in args[1:]]
        return count_phrase(k, lits, domain)
    if kind in ("theta", "flip"):
        if len(args) != 1:
            raise VerbaliseError(f"placeholder {{{body}}} takes exactly one comparator slot")
        t = _slot(params, args[0], kind, (str,))
        table = THETA_PHRASES if kind == "theta" else THETA_FLIP
        if t not in table:
            raise VerbaliseError(f"placeholder {{{body}}}: unknown comparator {t!r}; known: {list(table)}")
        return table[t]
    raise VerbaliseError(f"unknown placeholder {{{body}}}; kinds are {list(_ALL_KINDS)}")


def render(text: str, params: Mapping[str, Any] | Constraint, n: int | None = None,
           domain: Domain | None = None) -> str:
    """Fill every placeholder of a catalog string with the constraint's parameters.

    ``params`` is a `Constraint` or its ``params`` mapping; ``domain`` gives the words (default: the constraint's
    domain, else the shipped domains' words: `logicval_hf.contract.grammar`). Raises `VerbaliseError` on an unknown
    placeholder, a missing or mistyped slot, or a stray brace; the result never contains ``{`` or ``}``.
    """
    if isinstance(params, Constraint):
        domain = domain or params.domain
        params = params.params
    out = _PLACEHOLDER.sub(lambda m: _render_one(m.group(1), params, n, domain), text)
    if "{" in out or "}" in out:
        raise VerbaliseError(f"unbalanced brace in template string {text!r}")
    return out


def _sentence(s: str) -> str:
    s = re.sub(r" {2,}", " ", s.strip())
    return _capitalise(s)


# ------------------------------------------------------------------------------------------------
# Constraints and prompts
# ------------------------------------------------------------------------------------------------


def _check_register(register: str) -> None:
    if register not in REGISTERS:
        raise VerbaliseError(f"unknown register {register!r}; expected one of {list(REGISTERS)}")


def constraint_text(constraint: Constraint, n: int | None = None, register: str = "short",
                    domain: Domain | None = None) -> str:
    """The constraint in English: the register's sentence, then the anti-vacuity sentence if any
    (docs/verbaliser.md §1), in the words of ``domain`` (default: the constraint's)."""
    _check_register(register)
    nl = constraint.template.nl
    if register not in nl:
        raise VerbaliseError(f"template {constraint.template.id} has no {register!r} string")
    parts = [_sentence(render(nl[register], constraint, n, domain))]
    if nl.get("anti_vacuity"):
        parts.append(_sentence(render(nl["anti_vacuity"], constraint, n, domain)))
    return " ".join(parts)


def domain_description(domain: Domain | None = None) -> str:
    """The paragraph that opens a full prompt: the domain file's ``prompt_description`` with the attribute
    vocabulary and the region names filled in, or, without one, its ``description`` followed by the vocabulary
    and the regions (docs/domains.md §1). Default domain: the catalog's (CLEVR)."""
    domain = domain or load_catalog().domain
    items = [
        ATTRIBUTE_ITEM_TEMPLATE.format(attribute=a, values=join_words(list(domain.values(a)), "or"))
        for a in domain.perceived_attributes
    ]
    attributes = ATTRIBUTES_TEMPLATE.format(items=join_words(items))
    regions = join_words([region_name(r) for r in domain.attributes.get(REGION_ATTRIBUTE, ())])
    if domain.prompt_description:
        return domain.prompt_description.format(attributes=attributes, regions=regions)
    text = GENERIC_DOMAIN_TEMPLATE.format(description=domain.description or GENERIC_DESCRIPTION,
                                          attributes=attributes)
    return text + (GENERIC_REGIONS_TEMPLATE.format(regions=regions) if regions else "")


def full_prompt(
    spec: Spec | Mapping[str, Any] | str,
    register: str = "short",
    white_background: bool = False,
    catalog: Catalog | None = None,
) -> str:
    """The whole prompt of a spec (paper, Appendix C).

    Domain description, the number of objects, the constraint(s) (``Constraint i: ...`` when there are
    several) and the instruction to draw an empty scene when the description is contradictory.
    ``white_background=True`` (the proprietary models) asks for a white background and an empty *white*
    scene; it changes nothing else.
    """
    _check_register(register)
    catalog = catalog or load_catalog()
    spec = as_spec(spec, catalog)
    n = spec.fixed_n("a full prompt")  # it states the number of objects
    texts = [constraint_text(c, n, register) for c in spec.constraints]
    if len(texts) == 1:
        lead_in, body = LEAD_IN_ONE, texts[0]
    else:
        lead_in = LEAD_IN_MANY.format(m=len(texts))
        body = "\n".join(CONSTRAINT_ITEM_TEMPLATE.format(i=i, text=t) for i, t in enumerate(texts, 1))
    return PROMPT_TEMPLATE.format(
        domain=domain_description(spec.domain),
        objects=count_phrase(n, []),
        lead_in=lead_in,
        constraints=body,
        closing=EMPTY_SCENE_INSTRUCTION_WHITE if white_background else EMPTY_SCENE_INSTRUCTION,
    )


# ------------------------------------------------------------------------------------------------
# Sub-questions (docs/verbaliser.md §6, paper Appendix E)
# ------------------------------------------------------------------------------------------------

_OPS = ("!=", "<=", ">=", "=", "<", ">")  # two-character operators first
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TERM = rf"(?:\d+|{_NAME})"
_RHS = re.compile(rf"^\s*{_TERM}\s*(?:[+-]\s*{_TERM}\s*)*$")
YES, NO = "yes", "no"


def count_candidates(n: int) -> list[int]:
    """Candidate answers of a count question: ``0..max(n, 10)`` (Appendix E)."""
    return list(range(0, max(n, 10) + 1))


def parse_expect(expect: str) -> tuple[str, str]:
    """Split a count expectation ``OP RHS`` into ``(OP, RHS)``; raises `VerbaliseError` if malformed."""
    s = expect.strip()
    for op in _OPS:
        if s.startswith(op):
            rhs = s[len(op):].strip()
            if not _RHS.match(rhs):
                raise VerbaliseError(f"count expectation {expect!r}: right-hand side {rhs!r} is not an integer, "
                                     "a bound name, or a sum/difference of them")
            return op, rhs
    raise VerbaliseError(f"count expectation {expect!r} does not start with one of {list(_OPS)}")


def _eval_rhs(rhs: str, bindings: Mapping[str, int], expect: str) -> int:
    tokens = re.findall(rf"[+-]|{_TERM}", rhs)
    total, sign = 0, 1
    for tok in tokens:
        if tok in "+-":
            sign = 1 if tok == "+" else -1
            continue
        if tok.isdigit():
            val = int(tok)
        elif tok in bindings:
            val = bindings[tok]
            if isinstance(val, bool) or not isinstance(val, int):
                raise VerbaliseError(f"expectation {expect!r}: binding {tok!r} = {val!r} is not an integer")
        else:
            raise VerbaliseError(f"expectation {expect!r} refers to {tok!r}, which is not bound "
                                 f"(bound: {sorted(bindings)}); an earlier sub-question must bind it")
        total += sign * val
    return total


def _compare(a: int, op: str, b: int) -> bool:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def check_expect(expect: str, answer: int | str | bool, bindings: Mapping[str, int] | None = None) -> bool:
    """Does ``answer`` meet the rendered expectation ``expect``?

    * ``yes`` / ``no``: the answer (a string, case-insensitive, or a bool) must be that word;
    * a count condition ``OP RHS`` (``>0``, ``=3``, ``>=c``, ``=6-c``): the integer answer must satisfy it,
      names in RHS are looked up in ``bindings`` (e.g. ``{"c": 2}``; ``n`` too if left unsubstituted);
    * anything else is a value (``cube``): the answer must equal it, case-insensitive.
    """
    bindings = bindings or {}
    e = expect.strip()
    if e[:1] in "=!<>":
        op, rhs = parse_expect(e)
        if isinstance(answer, bool) or not isinstance(answer, int):
            raise VerbaliseError(f"count expectation {expect!r} needs an integer answer, got {answer!r}")
        return _compare(answer, op, _eval_rhs(rhs, bindings, expect))
    if isinstance(answer, bool):
        answer = YES if answer else NO
    return str(answer).strip().lower() == e.lower()


_VAL_EXPECT = re.compile(r"^\{val:\s*([A-Za-z0-9_]+)\s*\}$")


def subquestions(constraint: Constraint, n: int, catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """Every sub-question of the constraint's template, rendered (docs/verbaliser.md §6).

    Each entry is ``{"question", "type", "expect", "bind", "candidates"}``: ``expect`` is ``yes``/``no``, the
    attribute value, or a count condition with ``{K}`` and ``n`` substituted and bound names (``c``) kept;
    ``bind`` names the count this question introduces (or None); candidates are ``["yes", "no"]``, the
    attribute's values, or ``0..max(n, 10)``.
    """
    catalog = catalog or load_catalog()
    out: list[dict[str, Any]] = []
    bound: set[str] = set()
    for i, sq in enumerate(constraint.template.subquestions):
        where = f"{constraint.template.id} sub-question {i}"
        qtype = sq.get("type")
        raw_expect = str(sq.get("expect", ""))
        question = _sentence(render(sq["q"], constraint, n))
        bind = sq.get("bind")
        if qtype == "yes_no":
            expect = raw_expect.strip().lower()
            if expect not in (YES, NO):
                raise VerbaliseError(f"{where}: yes_no expectation must be yes or no, got {raw_expect!r}")
            candidates: list[Any] = [YES, NO]
        elif qtype == "value":
            m = _VAL_EXPECT.match(raw_expect.strip())
            if not m:
                raise VerbaliseError(
                    f"{where}: value expectation must be a {{val:SLOT}} placeholder, got {raw_expect!r}")
            lit = _slot(constraint.params, m.group(1), "val", (AttrLit,))
            expect = lit.value
            candidates = list((constraint.domain or catalog.domain).values(lit.prop))
        elif qtype == "count":
            expect = render(raw_expect, constraint, n).replace(" ", "")
            expect = re.sub(r"(?<![A-Za-z0-9_])n(?![A-Za-z0-9_])", str(n), expect)
            _, rhs = parse_expect(expect)
            names = set(re.findall(_NAME, rhs))
            if names - bound:
                raise VerbaliseError(f"{where}: expectation {raw_expect!r} uses {sorted(names - bound)} before any "
                                     "earlier sub-question binds it")
            candidates = count_candidates(n)
        else:
            raise VerbaliseError(f"{where}: unknown sub-question type {qtype!r}")
        if bind is not None:
            if qtype != "count":
                raise VerbaliseError(f"{where}: only count questions can bind a name")
            bound.add(bind)
        out.append({"question": question, "type": qtype, "expect": expect, "bind": bind, "candidates": candidates})
    return out


def spec_subquestions(spec: Spec | Mapping[str, Any] | str, catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """The sub-questions of every constraint of a spec, in order; each entry also carries ``"constraint"``
    (the 0-based index of the constraint it comes from). Bound names are scoped per constraint."""
    catalog = catalog or load_catalog()
    spec = as_spec(spec, catalog)
    n = spec.fixed_n("the sub-questions")  # count questions offer 0..max(n, 10)
    out = []
    for i, c in enumerate(spec.constraints):
        for sq in subquestions(c, n, catalog):
            out.append({**sq, "constraint": i})
    return out
