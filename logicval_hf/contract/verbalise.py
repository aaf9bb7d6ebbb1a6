"""The deterministic verbaliser: constraints and specs to English, and Soft-TIFA sub-questions.

Everything rendered here comes from the catalog: the template strings (``nl.short``, ``nl.long``,
``nl.anti_vacuity`` and ``subquestions``, dsl.md §6-7) and the domain vocabulary (``load_catalog().domain``).
This module only knows the *grammar* of the placeholders:

* noun phrases put the colour and material adjectives first, then the shape noun (or ``object``), then the
  region (``in the back-left region (r0)``), then the negated literals as a relative clause
  (``red object that is not a cube``, ``objects that are not red and not metal``);
* articles (a/an) follow the sound of the next word, plurals follow English spelling rules, and a count
  agrees with its noun (``1 red object``, ``2 red objects``);
* an unknown placeholder, a missing slot or a slot of the wrong type raises `VerbaliseError`; no brace
  ever reaches the output.

The full prompt (Appendix C of the paper) is assembled from the module-level string templates below
(``DOMAIN_TEMPLATE``, ``PROMPT_TEMPLATE``, ...), so the exact wording can be reviewed in one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.domain import domain_names, load_domain
from logicval_hf.contract.spatial import region_cell
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit, Spec, as_spec

__all__ = [
    "VerbaliseError", "REGISTERS", "article", "with_article", "plural", "region_name", "noun_phrase",
    "predicate", "render", "constraint_text", "domain_description", "full_prompt", "subquestions",
    "spec_subquestions", "check_expect", "count_candidates", "parse_expect", "constraint_names",
]


class VerbaliseError(ValueError):
    """A template string cannot be rendered (unknown placeholder, missing or mistyped slot, bad register)."""


REGISTERS = ("short", "long")

# ------------------------------------------------------------------------------------------------
# Grammar of the attribute vocabulary. Attribute *names* play fixed grammatical roles; the attribute
# *values* (the vocabulary) are always read from the catalog's domain block.
# ------------------------------------------------------------------------------------------------

_DOMAINS = [load_domain(name) for name in domain_names()]
#: attributes rendered as adjectives before the noun, in this order (dsl.md §6: colour, material), as every
#: shipped domain file declares them
ADJECTIVE_ORDER = tuple(dict.fromkeys(a for d in _DOMAINS for a in d.adjectives))
#: the attributes whose value is the head noun (CLEVR ``cube``, COCO ``dog``); without one the noun is
#: ``GENERIC_NOUN``
NOUN_ATTRIBUTES = frozenset(d.noun for d in _DOMAINS if d.noun)
NOUN_ATTRIBUTE = "shape"  # CLEVR's, kept for callers that name it
#: the attribute rendered as a prepositional phrase after the noun
REGION_ATTRIBUTE = "region"
GENERIC_NOUN = "object"
#: attributes said as a phrase after the noun, with the noun they take (the text domain's ``line reading "sale"``)
ATTRIBUTE_PHRASES = {a: dict(p) for d in _DOMAINS for a, p in d.attribute_phrases.items()}

#: the phrase of each relation, reading ``rel(a, b)`` as "a is <phrase> b" (regions.md §3; the domain files)
REL_PHRASES = {r: rule.phrase for d in _DOMAINS for r, rule in d.rules.items()}

#: comparators in words, for "the number of A is <words> the number of B"
THETA_PHRASES = {
    "=": "equal to",
    "!=": "different from",
    "<": "smaller than",
    "<=": "at most",
    ">": "greater than",
    ">=": "at least",
}

#: the mirrored comparator: ``a T b`` iff ``b FLIP[T] a``
THETA_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

#: region words by (row, column) of regions.md §2: row 0 = back, row 1 = front; column 0 = left, 1 = right
REGION_ROW_WORDS = ("back", "front")
REGION_COLUMN_WORDS = ("left", "right")
REGION_TEMPLATE = "the {row}-{column} region ({value})"

# ------------------------------------------------------------------------------------------------
# The prompt (Appendix C). ``{...}`` fields here are Python format fields, filled by `full_prompt`.
# ------------------------------------------------------------------------------------------------

#: the CLEVR domain description at the top of every prompt (fields filled by `domain_description`)
DOMAIN_TEMPLATE = (
    "The image shows a CLEVR scene: simple 3D objects standing on a flat surface, seen by a camera "
    "from the front and above. {attributes} "
    "The surface is divided into a 2 x 2 grid of four regions by its vertical and horizontal midlines: {regions}. "
    "Back means farther from the camera (higher in the image) and front means closer to the camera "
    "(lower in the image); left and right are as seen in the image. "
    "The regions fix only the order across the midlines: every object in a left region is to the left "
    "of every object in a right region, and every object in a back region is behind every object in a "
    "front region; objects on the same side of a midline may be in either order along that direction."
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

# ------------------------------------------------------------------------------------------------
# Words
# ------------------------------------------------------------------------------------------------

# words spelled with a vowel but pronounced with a consonant sound, and the other way round
_A_PREFIXES = ("uni", "use", "usu", "uti", "ure", "eu", "ewe", "one", "once", "ubiq")
_AN_PREFIXES = ("hour", "honest", "honor", "honour", "heir")


def article(phrase: str) -> str:
    """``a`` or ``an`` for the phrase that follows (by the sound of its first word)."""
    word = phrase.strip().split(" ", 1)[0].lower() if phrase.strip() else ""
    if not word:
        raise VerbaliseError("an article needs a following word")
    if word.startswith(_AN_PREFIXES):
        return "an"
    if word.startswith(_A_PREFIXES):
        return "a"
    if word[0].isdigit():  # "an 8", "an 11", "an 18", "a 2"
        return "an" if word[0] == "8" or word in ("11", "18") else "a"
    return "an" if word[0] in "aeiou" else "a"


def with_article(phrase: str) -> str:
    return f"{article(phrase)} {phrase}"


#: plurals the regular rule gets wrong (COCO's nouns among them)
IRREGULAR_PLURALS = {"person": "people", "sheep": "sheep", "skis": "skis", "scissors": "scissors", "knife": "knives",
                     "mouse": "mice", "broccoli": "broccoli", "tv": "tvs"}


def plural(noun: str) -> str:
    """English plural of a (regular) noun: cube/cubes, box/boxes, body/bodies."""
    if not noun:
        raise VerbaliseError("cannot pluralise an empty noun")
    head, _, last = noun.rpartition(" ")
    if last.lower() in IRREGULAR_PLURALS:  # on the last word: "computer mouse" -> "computer mice"
        return (head + " " if head else "") + IRREGULAR_PLURALS[last.lower()]
    low = noun.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _join(items: Sequence[str], conj: str = "and") -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {conj} {items[-1]}"


def constraint_names(indices: Iterable[int]) -> str:
    """Constraint indices (0-based, as in ``Verdict.violated`` and ``SolveResult.core``) named as the prompt
    numbers them (from 1, `CONSTRAINT_ITEM_TEMPLATE`): ``[]`` -> ``"none"``, ``[0]`` -> ``"Constraint 1"``,
    ``[0, 2]`` -> ``"Constraints 1 and 3"``. For every human-facing text; JSON and Python stay 0-based."""
    nums = [str(int(i) + 1) for i in sorted(set(indices))]
    if not nums:
        return "none"
    return ("Constraint " if len(nums) == 1 else "Constraints ") + _join(nums)


def region_name(value: str) -> str:
    """``the back-left region (r0)`` (regions.md §2, DECISIONS.md 5)."""
    try:
        col, row = region_cell(value)
        return REGION_TEMPLATE.format(row=REGION_ROW_WORDS[row], column=REGION_COLUMN_WORDS[col], value=value)
    except (ValueError, IndexError):
        raise VerbaliseError(f"unknown region {value!r}; regions are r0..r3 (regions.md §2)") from None


def _capitalise(s: str) -> str:
    return s[:1].upper() + s[1:]


# ------------------------------------------------------------------------------------------------
# Literals: predicates and noun phrases
# ------------------------------------------------------------------------------------------------


def predicate(lit: AttrLit, plural_form: bool = False, positive: bool = False) -> str:
    """``red`` / ``a cube`` / ``cubes`` / ``in the back-left region (r0)``, prefixed ``not`` when negated.

    ``positive=True`` drops the negation (``{pos:..}``, ``{posp:..}``).
    """
    if lit.prop in NOUN_ATTRIBUTES:
        core = plural(lit.value) if plural_form else with_article(lit.value)
    elif lit.prop in ATTRIBUTE_PHRASES:  # "a line reading "sale"", "not reading "sale""
        phrase = ATTRIBUTE_PHRASES[lit.prop]["phrase"].format(value=lit.value)
        core = phrase if lit.negated and not positive else noun_phrase([AttrLit(lit.prop, lit.value)], plural_form,
                                                                         with_art=True)
    elif lit.prop == REGION_ATTRIBUTE:
        core = "in " + region_name(lit.value)
    else:
        core = lit.value
    return f"not {core}" if lit.negated and not positive else core


def noun_phrase(lits: Iterable[AttrLit], plural_form: bool = False, with_art: bool = False) -> str:
    """The noun phrase of a conjunction of literals (dsl.md §6).

    Positive colour/material literals become adjectives (in ``ADJECTIVE_ORDER``, then any other attribute),
    the positive shape literal the head noun (otherwise ``object``), the positive region literal a trailing
    ``in the ... region (rK)``, and negated literals (in the given order) a relative clause
    ``that is not red and not a cube`` / ``that are not red and not cubes``.
    """
    lits = list(lits)
    for lit in lits:
        if not isinstance(lit, AttrLit):
            raise VerbaliseError(f"a noun phrase takes attribute literals, got {lit!r}")
    adjectives: list[AttrLit] = []
    noun: AttrLit | None = None
    region: AttrLit | None = None
    phrased: AttrLit | None = None
    clause: list[AttrLit] = []
    for lit in lits:
        if lit.negated:
            clause.append(lit)
        elif lit.prop in NOUN_ATTRIBUTES and noun is None:
            noun = lit
        elif lit.prop == REGION_ATTRIBUTE and region is None:
            region = lit
        elif lit.prop in ATTRIBUTE_PHRASES and phrased is None:
            phrased = lit
        elif lit.prop not in NOUN_ATTRIBUTES | {REGION_ATTRIBUTE} | set(ATTRIBUTE_PHRASES) \
                and all(a.prop != lit.prop for a in adjectives):
            adjectives.append(lit)
        else:  # a second positive value of one attribute: cannot be an adjective, say it in the clause
            clause.append(lit)
    order = {p: i for i, p in enumerate(ADJECTIVE_ORDER)}
    adjectives.sort(key=lambda a: order.get(a.prop, len(order)))  # stable: unknown attributes keep their order
    generic = next((ATTRIBUTE_PHRASES[c.prop].get("noun", GENERIC_NOUN) for c in [phrased, *clause]
                    if c is not None and c.prop in ATTRIBUTE_PHRASES), GENERIC_NOUN)
    head = noun.value if noun else generic
    words = [a.value for a in adjectives] + [plural(head) if plural_form else head]
    if phrased is not None:
        words.append(ATTRIBUTE_PHRASES[phrased.prop]["phrase"].format(value=phrased.value))
    if region is not None:
        words.append("in " + region_name(region.value))
    if clause:
        positives = [predicate(c, plural_form) for c in clause if not c.negated]
        negatives = [predicate(c, plural_form) for c in clause if c.negated]
        words.append(("that are " if plural_form else "that is ") + _join(positives + negatives))
    phrase = " ".join(words)
    return with_article(phrase) if with_art and not plural_form else phrase


def count_phrase(k: int, lits: Sequence[AttrLit]) -> str:
    """``1 red object``, ``2 red objects``, ``3 objects``."""
    return f"{k} {noun_phrase(lits, plural_form=(k != 1))}"


def rel_phrase(lit: RelLit) -> str:
    try:
        core = REL_PHRASES[lit.rel]
    except KeyError:
        raise VerbaliseError(f"no English phrase for relation {lit.rel!r}; known: {sorted(REL_PHRASES)}") from None
    return f"not {core}" if lit.negated else core


# ------------------------------------------------------------------------------------------------
# Placeholder renderer (dsl.md §6)
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


def _render_one(body: str, params: Mapping[str, Any], n: int | None) -> str:
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
            return noun_phrase(lits)
        if kind == "a":
            return noun_phrase(lits, with_art=True)
        if kind == "nps":
            return noun_phrase(lits, plural_form=True)
        if kind == "posnps":
            return noun_phrase([AttrLit(lit.prop, lit.value, False) for lit in lits], plural_form=True)
        if kind == "pred":
            return _join([predicate(lit) for lit in lits])
        if kind == "ppred":
            return _join([predicate(lit, plural_form=True) for lit in lits])
        if kind == "pos":
            return _join([predicate(lit, positive=True) for lit in lits])
        if kind == "posp":
            return _join([predicate(lit, plural_form=True, positive=True) for lit in lits])
        if kind == "mustbe":
            return _join([("must not be " if lit.negated else "must be ") + predicate(lit, positive=True)
                          for lit in lits])
        if kind == "prop":
            return lits[0].prop
        return lits[0].value  # val
    if kind == "rel":
        rels = [_slot(params, a, kind, (RelLit,)) for a in args]
        return _join([rel_phrase(r) for r in rels])
    if kind == "num":
        k = _slot(params, args[0], kind, (int,))
        lits = [_slot(params, a, kind, (AttrLit,)) for a in args[1:]]
        return count_phrase(k, lits)
    if kind in ("theta", "flip"):
        if len(args) != 1:
            raise VerbaliseError(f"placeholder {{{body}}} takes exactly one comparator slot")
        t = _slot(params, args[0], kind, (str,))
        table = THETA_PHRASES if kind == "theta" else THETA_FLIP
        if t not in table:
            raise VerbaliseError(f"placeholder {{{body}}}: unknown comparator {t!r}; known: {list(table)}")
        return table[t]
    raise VerbaliseError(f"unknown placeholder {{{body}}}; kinds are {list(_ALL_KINDS)}")


def render(text: str, params: Mapping[str, Any] | Constraint, n: int | None = None) -> str:
    """Fill every placeholder of a catalog string with the constraint's parameters.

    ``params`` is a `Constraint` or its ``params`` mapping. Raises `VerbaliseError` on an unknown placeholder,
    a missing or mistyped slot, or a stray brace; the result never contains ``{`` or ``}``.
    """
    if isinstance(params, Constraint):
        params = params.params
    out = _PLACEHOLDER.sub(lambda m: _render_one(m.group(1), params, n), text)
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


def constraint_text(constraint: Constraint, n: int | None = None, register: str = "short") -> str:
    """The constraint in English: the register's sentence, then the anti-vacuity sentence if any (dsl.md §6)."""
    _check_register(register)
    nl = constraint.template.nl
    if register not in nl:
        raise VerbaliseError(f"template {constraint.template.id} has no {register!r} string")
    parts = [_sentence(render(nl[register], constraint, n))]
    if nl.get("anti_vacuity"):
        parts.append(_sentence(render(nl["anti_vacuity"], constraint, n)))
    return " ".join(parts)


def domain_description(domain: Domain | None = None) -> str:
    """The CLEVR domain description (attribute vocabulary and the 2x2 regions) read from the catalog domain."""
    domain = domain or load_catalog().domain
    items = [
        ATTRIBUTE_ITEM_TEMPLATE.format(attribute=a, values=_join(list(domain.values(a)), "or"))
        for a in domain.perceived_attributes
    ]
    regions = [region_name(r) for r in domain.attributes.get(REGION_ATTRIBUTE, ())]
    return DOMAIN_TEMPLATE.format(attributes=ATTRIBUTES_TEMPLATE.format(items=_join(items)), regions=_join(regions))


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
        domain=domain_description(catalog.domain),
        objects=count_phrase(n, []),
        lead_in=lead_in,
        constraints=body,
        closing=EMPTY_SCENE_INSTRUCTION_WHITE if white_background else EMPTY_SCENE_INSTRUCTION,
    )


# ------------------------------------------------------------------------------------------------
# Sub-questions (dsl.md §7, paper Appendix E)
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
    """Every sub-question of the constraint's template, rendered (dsl.md §7).

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
            candidates = list(catalog.domain.values(lit.prop))
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
