"""English words for a domain's vocabulary: articles, plurals, region names, predicates and noun phrases.

Which attribute is the head noun, which are adjectives and in what order, and each relation's phrase come from the
domain file (``noun``, ``adjectives``, each relation's ``phrase``: docs/domains.md §1); `DomainWords` holds them.
Functions that take a ``domain`` read its words; without one they use the words every shipped domain declares
(`SHIPPED_WORDS`), so text built from bare literals stays what it was. The verbaliser
(`logicval_hf.contract.verbalise`) renders the catalog's strings with these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from logicval_hf.contract.domain import Domain, domain_names, load_domain
from logicval_hf.contract.domain_file import QUADRANT
from logicval_hf.contract.spatial import region_cell
from logicval_hf.contract.spec import AttrLit, RelLit

__all__ = [
    "ADJECTIVE_ORDER", "ATTRIBUTE_PHRASES", "DomainWords", "GENERIC_NOUN", "IRREGULAR_PLURALS", "NOUN_ATTRIBUTE",
    "NOUN_ATTRIBUTES",
    "REGION_ATTRIBUTE", "REGION_COLUMN_WORDS", "REGION_ROW_WORDS", "REGION_TEMPLATE", "REL_PHRASES",
    "SHIPPED_WORDS", "THETA_FLIP", "THETA_PHRASES", "VerbaliseError", "article", "constraint_names",
    "count_phrase", "domain_words", "join_words", "noun_phrase", "plural", "predicate", "region_name",
    "rel_phrase", "with_article",
]


class VerbaliseError(ValueError):
    """A template string cannot be rendered (unknown placeholder, missing or mistyped slot, bad register)."""


@dataclass(frozen=True)
class DomainWords:
    """The grammatical roles of a domain's attributes and the phrases of its relations."""

    #: attributes whose value is the head noun (CLEVR ``cube``, COCO ``dog``); none: the noun is `GENERIC_NOUN`
    nouns: frozenset[str]
    #: attributes said as adjectives before the noun, in this order; any other attribute follows them
    adjectives: tuple[str, ...]
    #: each relation's phrase, reading ``rel(a, b)`` as "a is <phrase> b"
    phrases: Mapping[str, str]
    #: attributes said as a phrase after the noun, with the noun they take (the text domain's
    #: ``{"phrase": "reading \"{value}\"", "noun": "line"}``: a line reading "sale")
    attribute_phrases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


_SHIPPED = [load_domain(name) for name in domain_names()]
#: the words of every shipped domain together: what text built without a domain uses
SHIPPED_WORDS = DomainWords(frozenset(d.noun for d in _SHIPPED if d.noun),
                            tuple(dict.fromkeys(a for d in _SHIPPED for a in d.adjectives)),
                            {r: rule.phrase for d in _SHIPPED for r, rule in d.rules.items()},
                            {a: dict(p) for d in _SHIPPED for a, p in d.attribute_phrases.items()})
#: attributes rendered as adjectives before the noun, in this order (docs/verbaliser.md §3: colour, material)
ADJECTIVE_ORDER = SHIPPED_WORDS.adjectives
NOUN_ATTRIBUTES = SHIPPED_WORDS.nouns
NOUN_ATTRIBUTE = "shape"  # CLEVR's, kept for callers that name it
REL_PHRASES = dict(SHIPPED_WORDS.phrases)
#: attributes said as a phrase after the noun, in the shipped domains (the text domain's ``line reading "sale"``)
ATTRIBUTE_PHRASES = {a: dict(p) for a, p in SHIPPED_WORDS.attribute_phrases.items()}
#: the attribute rendered as a prepositional phrase after the noun (a domain's quadrant)
REGION_ATTRIBUTE = QUADRANT
GENERIC_NOUN = "object"


def domain_words(domain: Domain | None) -> DomainWords:
    """The words of ``domain`` (from its file); `SHIPPED_WORDS` for None."""
    if domain is None:
        return SHIPPED_WORDS
    return DomainWords(frozenset([domain.noun]) if domain.noun else frozenset(), tuple(domain.adjectives),
                       {r: rule.phrase for r, rule in domain.rules.items()}, dict(domain.attribute_phrases))


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

#: region words by (row, column) of docs/regions.md §2: row 0 = back, row 1 = front; column 0 = left, 1 = right
REGION_ROW_WORDS = ("back", "front")
REGION_COLUMN_WORDS = ("left", "right")
REGION_TEMPLATE = "the {row}-{column} region ({value})"

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


def join_words(items: Sequence[str], conj: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c`` (empty items dropped)."""
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {conj} {items[-1]}"


def constraint_names(indices: Iterable[int]) -> str:
    """Constraint indices (0-based, as in ``Verdict.violated`` and ``SolveResult.core``) named as the prompt
    numbers them (from 1, ``CONSTRAINT_ITEM_TEMPLATE``): ``[]`` -> ``"none"``, ``[0]`` -> ``"Constraint 1"``,
    ``[0, 2]`` -> ``"Constraints 1 and 3"``. For every human-facing text; JSON and Python stay 0-based."""
    nums = [str(int(i) + 1) for i in sorted(set(indices))]
    if not nums:
        return "none"
    return ("Constraint " if len(nums) == 1 else "Constraints ") + join_words(nums)


def region_name(value: str) -> str:
    """``the back-left region (r0)`` (docs/regions.md §2)."""
    try:
        col, row = region_cell(value)
        return REGION_TEMPLATE.format(row=REGION_ROW_WORDS[row], column=REGION_COLUMN_WORDS[col], value=value)
    except (ValueError, IndexError):
        raise VerbaliseError(f"unknown region {value!r}; regions are r0..r3 (docs/regions.md §2)") from None


# ------------------------------------------------------------------------------------------------
# Literals: predicates and noun phrases
# ------------------------------------------------------------------------------------------------


def predicate(lit: AttrLit, plural_form: bool = False, positive: bool = False, domain: Domain | None = None) -> str:
    """``red`` / ``a cube`` / ``cubes`` / ``in the back-left region (r0)``, prefixed ``not`` when negated.

    ``positive=True`` drops the negation (``{pos:..}``, ``{posp:..}``); ``domain`` says which attribute is the noun.
    """
    words = domain_words(domain)
    if lit.prop in words.nouns:
        core = plural(lit.value) if plural_form else with_article(lit.value)
    elif lit.prop in words.attribute_phrases:  # "a line reading "sale"", "not reading "sale""
        phrase = words.attribute_phrases[lit.prop]["phrase"].format(value=lit.value)
        core = phrase if lit.negated and not positive else noun_phrase([AttrLit(lit.prop, lit.value)], plural_form,
                                                                         with_art=True, domain=domain)
    elif lit.prop == REGION_ATTRIBUTE:
        core = "in " + region_name(lit.value)
    else:
        core = lit.value
    return f"not {core}" if lit.negated and not positive else core


def noun_phrase(lits: Iterable[AttrLit], plural_form: bool = False, with_art: bool = False,
                domain: Domain | None = None) -> str:
    """The noun phrase of a conjunction of literals (docs/verbaliser.md §3).

    Positive literals of the domain's adjective attributes come first (in its order, then any other attribute),
    the positive literal of its noun attribute is the head noun (otherwise ``object``), the positive region literal
    a trailing ``in the ... region (rK)``, and negated literals (in the given order) a relative clause
    ``that is not red and not a cube`` / ``that are not red and not cubes``.
    """
    lits = list(lits)
    for lit in lits:
        if not isinstance(lit, AttrLit):
            raise VerbaliseError(f"a noun phrase takes attribute literals, got {lit!r}")
    words = domain_words(domain)
    adjectives: list[AttrLit] = []
    noun: AttrLit | None = None
    region: AttrLit | None = None
    phrased: AttrLit | None = None
    clause: list[AttrLit] = []
    said = words.attribute_phrases
    for lit in lits:
        if lit.negated:
            clause.append(lit)
        elif lit.prop in words.nouns and noun is None:
            noun = lit
        elif lit.prop == REGION_ATTRIBUTE and region is None:
            region = lit
        elif lit.prop in said and phrased is None:
            phrased = lit
        elif lit.prop not in words.nouns | {REGION_ATTRIBUTE} | set(said) \
                and all(a.prop != lit.prop for a in adjectives):
            adjectives.append(lit)
        else:  # a second positive value of one attribute: cannot be an adjective, say it in the clause
            clause.append(lit)
    order = {p: i for i, p in enumerate(words.adjectives)}
    adjectives.sort(key=lambda a: order.get(a.prop, len(order)))  # stable: unknown attributes keep their order
    # a phrased attribute brings its own noun ("line") where no noun attribute names one
    generic = next((said[c.prop].get("noun", GENERIC_NOUN) for c in [phrased, *clause]
                    if c is not None and c.prop in said), GENERIC_NOUN)
    head = noun.value if noun else generic
    parts = [a.value for a in adjectives] + [plural(head) if plural_form else head]
    if phrased is not None:
        parts.append(said[phrased.prop]["phrase"].format(value=phrased.value))
    if region is not None:
        parts.append("in " + region_name(region.value))
    if clause:
        positives = [predicate(c, plural_form, domain=domain) for c in clause if not c.negated]
        negatives = [predicate(c, plural_form, domain=domain) for c in clause if c.negated]
        parts.append(("that are " if plural_form else "that is ") + join_words(positives + negatives))
    phrase = " ".join(parts)
    return with_article(phrase) if with_art and not plural_form else phrase


def count_phrase(k: int, lits: Sequence[AttrLit], domain: Domain | None = None) -> str:
    """``1 red object``, ``2 red objects``, ``3 objects``."""
    return f"{k} {noun_phrase(lits, plural_form=(k != 1), domain=domain)}"


def rel_phrase(lit: RelLit, domain: Domain | None = None) -> str:
    """The relation's phrase (from ``domain``'s file), ``not ...`` when negated."""
    phrases = domain_words(domain).phrases
    try:
        core = phrases[lit.rel]
    except KeyError:
        raise VerbaliseError(f"no English phrase for relation {lit.rel!r}; known: {sorted(phrases)}") from None
    return f"not {core}" if lit.negated else core
