"""The schema of a domain file (docs/domains.md §1-3), checked when the file is read.

`check_domain_block` walks every key of a domain file's JSON and raises `SpecError` (a `ValueError`) on the first
problem, one line that names the file and the key: ``domain file fruit.json: relations.Left: 'Left' is not a
lowercase name ...``. Names (attributes, relations, constants) are written into ASP as constants, so they must be
lowercase identifiers; values and phrases are written into prompts, so they are single-line text without braces.
Everything `logicval_hf.contract.domain.Domain` builds from a checked block is then well formed: no later step meets
a missing key, a value of the wrong type, or a relation whose inverse does not mirror it.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Mapping
from typing import Any

from logicval_hf.contract.folding import FOLDS
from logicval_hf.errors import SpecError

__all__ = ["AXES", "DERIVED_KINDS", "KEYS", "OFFSET_MEASURES", "QUADRANT", "QUADRANT_VALUES", "RELATION_KINDS",
           "THETAS", "check_domain_block"]

KEYS = ("name", "description", "prompt_description", "compact_description", "attributes", "derived", "relations",
        "theta", "n_range", "max_objects", "noun", "adjectives", "slot_props", "constants", "image_size",
        "open_attributes", "attribute_phrases")
REQUIRED = ("name", "attributes", "relations", "theta")
DERIVED_KINDS = ("quadrant", "score_rank")
RELATION_KINDS = ("centre_order", "box_offset", "box_area", "box_inside")
#: what a box_offset's direction is measured on: GenEval's shrunk offset, or GIR-Bench's raw centre offset
OFFSET_MEASURES = ("shrunk", "centre")
AXES = ("x", "y")
THETAS = ("=", "!=", "<", "<=", ">", ">=")
#: the name of the quadrant attribute, as the templates' region slots and the verbaliser's region phrases read it
QUADRANT = "region"
#: the quadrant's values: the four regions of docs/regions.md §2, as `logicval_hf.contract.spatial.region_of` names them
QUADRANT_VALUES = ("r0", "r1", "r2", "r3")
#: each relation kind's fields besides ``kind``, ``inverse`` and ``phrase`` (True: required)
RELATION_FIELDS: dict[str, dict[str, bool]] = {
    "centre_order": {"axis": True, "sign": True},
    "box_offset": {"axis": True, "sign": True, "margin": False, "threshold": False, "measure": False},
    "box_area": {"sign": True},
    "box_inside": {"sign": True},
}
#: each derived kind's fields besides ``kind`` (True: required)
DERIVED_FIELDS: dict[str, dict[str, bool]] = {"quadrant": {"values": False}, "score_rank": {"within": True}}
#: the prompt description's fields (docs/verbaliser.md §5)
PROMPT_FIELDS = ("attributes", "regions")

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_DOMAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_ASP_KEYWORDS = frozenset({"not"})
_BAD_TEXT = re.compile(r"[{}\x00-\x1f\x7f]")


def _show(value: Any) -> str:
    """A value in an error message: its repr, cut short (the message stays one readable line)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    def __init__(self, where: str):
        self.where = where

    def fail(self, key: str, msg: str) -> SpecError:
        text = f"{self.where}: {key}: {msg}" if key else f"{self.where}: {msg}"
        # keys are the file's own strings: a line break in one must not break the message's line
        return SpecError("".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text))

    # ---- shapes ------------------------------------------------------------------------------------------------
    def mapping(self, key: str, value: Any) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(key, f"must be a JSON object, got {_show(value)}")
        return value

    def array(self, key: str, value: Any, nonempty: bool = True) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(key, f"must be a JSON list, got {_show(value)}")
        if nonempty and not value:
            raise self.fail(key, "must not be empty")
        return value

    def name(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or not _NAME.fullmatch(value) or value in _ASP_KEYWORDS:
            raise self.fail(key, f"{_show(value)} is not a lowercase name (a letter a-z, then letters a-z, digits "
                                 "or _; not 'not'): names are written into ASP as constants")
        return value

    def text(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip() or _BAD_TEXT.search(value):
            raise self.fail(key, f"{_show(value)} is not a non-empty line of text without braces")
        return value

    def integer(self, key: str, value: Any, lo: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or (lo is not None and value < lo):
            raise self.fail(key, f"must be an integer{'' if lo is None else f' >= {lo}'}, got {_show(value)}")
        return value

    def number(self, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(key, f"must be a finite number, got {_show(value)}")
        return float(value)

    def fields(self, key: str, entry: Mapping[str, Any], allowed: Mapping[str, bool]) -> None:
        unknown = [k for k in entry if k not in allowed]
        if unknown:
            raise self.fail(key, f"unknown keys {unknown}; this kind has {list(allowed)}")
        missing = [k for k, required in allowed.items() if required and k not in entry]
        if missing:
            raise self.fail(key, f"missing {missing}")

    def one_of(self, key: str, value: Any, allowed: Any, names: Any) -> Any:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(key, f"{_show(value)} is not one of {list(names)}")
        return value


def check_domain_block(block: Any, where: str = "domain") -> None:
    """Check a domain file's JSON against the schema of docs/domains.md.

    Args:
        block: the parsed JSON of the file.
        where: how messages name the file (``domain file <path>``).
    Raises:
        SpecError: the first problem, one line naming the file and the key.
    """
    c = _Checker(where)
    block = c.mapping("", block)
    unknown = [k for k in block if k not in KEYS]
    if unknown:
        raise c.fail("", f"unknown keys {unknown}; a domain has {list(KEYS)}")
    missing = [k for k in REQUIRED if k not in block]
    if missing:
        raise c.fail("", f"missing {missing} (a domain needs {list(REQUIRED)})")
    name = block["name"]
    if not isinstance(name, str) or not _DOMAIN_NAME.fullmatch(name):
        raise c.fail("name", f"{_show(name)} is not a domain name (letters, digits, '_', '.' or '-')")
    if "description" in block:
        c.text("description", block["description"])
    attributes = _attributes(c, block["attributes"], _open_attributes(c, block))
    derived = _derived(c, block.get("derived", {}), attributes)
    ordered = _relations(c, block["relations"])
    ranks = [a for a, d in derived.items() if d["kind"] == "score_rank"]
    if QUADRANT in derived and ordered is False:
        raise c.fail(f"derived.{QUADRANT}", "a quadrant needs a domain whose relations are centre orders (or one "
                                            "without relations): box relations are not solved with regions")
    if ranks and (ordered or QUADRANT in derived):
        raise c.fail(f"derived.{ranks[0]}", "a score rank needs a domain of box relations (or one without relations) "
                                            "and no quadrant: centre orders and regions are solved without scores")
    thetas = c.array("theta", block["theta"])
    for i, t in enumerate(thetas):
        c.one_of(f"theta[{i}]", t, THETAS, THETAS)
    if len(set(thetas)) != len(thetas):
        raise c.fail("theta", f"lists a comparator twice: {thetas}")
    _sizes(c, block)
    _words(c, block, attributes, derived)
    _constants(c, block, attributes)
    if "attribute_phrases" in block:
        _attribute_phrases(c, block["attribute_phrases"], attributes)
    if block.get("image_size") is not None:
        size = c.array("image_size", block["image_size"])
        if len(size) != 2 or any(c.number(f"image_size[{i}]", v) <= 0 for i, v in enumerate(size)):
            raise c.fail("image_size", f"must be [W, H], two positive numbers, got {_show(size)}")


def _open_attributes(c: _Checker, block: Mapping[str, Any]) -> Mapping[str, str]:
    """The free-text attributes (``open_attributes``: attribute -> a fold of `logicval_hf.contract.folding`)."""
    opened = c.mapping("open_attributes", block.get("open_attributes") or {})
    attributes = block["attributes"] if isinstance(block["attributes"], Mapping) else {}
    for a, fold in opened.items():
        key = f"open_attributes.{a}"
        if a not in attributes or attributes[a] != []:
            raise c.fail(key, "must be an attribute whose value list is empty (any text is a value)")
        if not isinstance(fold, str) or fold not in FOLDS:
            raise c.fail(key, f"{_show(fold)} is not a fold; expected one of {sorted(FOLDS)}")
    return opened


def _attribute_phrases(c: _Checker, raw: Any, attributes: Mapping[str, Any]) -> None:
    for a, raw_entry in c.mapping("attribute_phrases", raw).items():
        key = f"attribute_phrases.{a}"
        c.one_of(key, a, attributes, list(attributes))
        entry = c.mapping(key, raw_entry)
        c.fields(key, entry, {"phrase": True, "noun": False})
        phrase = entry["phrase"]
        if not isinstance(phrase, str) or _BAD_TEXT.search(phrase.replace("{value}", "")) or "{value}" not in phrase:
            raise c.fail(f"{key}.phrase", f"{_show(phrase)} must be one line holding {{value}} and no other brace")
        if "noun" in entry:
            c.text(f"{key}.noun", entry["noun"])


def _attributes(c: _Checker, raw: Any, opened: Mapping[str, str]) -> Mapping[str, list[Any]]:
    attributes = c.mapping("attributes", raw)
    if not attributes:
        raise c.fail("attributes", "must declare at least one attribute")
    for a, values in attributes.items():
        key = f"attributes.{a}"
        c.name(key, a)
        if a == QUADRANT:
            raise c.fail(key, f"{QUADRANT!r} names the quadrant, a derived attribute (derived.{QUADRANT}); a "
                              "perceived attribute needs another name")
        for i, v in enumerate(c.array(key, values, nonempty=a not in opened)):
            c.text(f"{key}[{i}]", v)
        if len(set(values)) != len(values):
            raise c.fail(key, f"lists a value twice: {_show(values)}")
    return attributes


def _derived(c: _Checker, raw: Any, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    derived = c.mapping("derived", raw)
    for a, raw_entry in derived.items():
        key = f"derived.{a}"
        c.name(key, a)
        if a in attributes:
            raise c.fail(key, f"{a!r} is already a perceived attribute")
        entry = c.mapping(key, raw_entry)
        kind = c.one_of(f"{key}.kind", entry.get("kind"), DERIVED_KINDS, DERIVED_KINDS)
        c.fields(key, entry, {"kind": True, **DERIVED_FIELDS[kind]})
        if kind == "quadrant":
            if a != QUADRANT:
                raise c.fail(key, f"a quadrant attribute is named {QUADRANT!r} (the templates' region slots and the "
                                  "verbaliser read it by that name)")
            if "values" in entry and entry["values"] != list(QUADRANT_VALUES):
                raise c.fail(f"{key}.values", f"must be {list(QUADRANT_VALUES)} (the four regions of a box centre), "
                                              f"got {_show(entry['values'])}")
        else:
            c.one_of(f"{key}.within", entry["within"], attributes, list(attributes))
    return derived


def _relations(c: _Checker, raw: Any) -> bool | None:
    """Check the relations; whether they are centre orders (None: there are none)."""
    relations = c.mapping("relations", raw)
    for r, raw_entry in relations.items():
        key = f"relations.{r}"
        c.name(key, r)
        entry = c.mapping(key, raw_entry)
        kind = c.one_of(f"{key}.kind", entry.get("kind"), RELATION_KINDS, RELATION_KINDS)
        c.fields(key, entry, {"kind": True, "inverse": True, "phrase": False, **RELATION_FIELDS[kind]})
        if "axis" in entry:
            c.one_of(f"{key}.axis", entry["axis"], AXES, AXES)
        if isinstance(entry["sign"], bool) or entry["sign"] not in (1, -1):
            raise c.fail(f"{key}.sign", f"must be 1 or -1, got {_show(entry['sign'])}")
        if "margin" in entry and c.number(f"{key}.margin", entry["margin"]) < 0:
            raise c.fail(f"{key}.margin", f"must be >= 0, got {_show(entry['margin'])}")
        if "threshold" in entry and not 0 <= c.number(f"{key}.threshold", entry["threshold"]) < 1:
            raise c.fail(f"{key}.threshold", f"must be in [0, 1), got {_show(entry['threshold'])}")
        if "measure" in entry:
            c.one_of(f"{key}.measure", entry["measure"], OFFSET_MEASURES, OFFSET_MEASURES)
        if "phrase" in entry:
            c.text(f"{key}.phrase", entry["phrase"])
    for r, entry in relations.items():
        key = f"relations.{r}.inverse"
        inv = entry["inverse"]
        if not isinstance(inv, str) or inv == r or inv not in relations or relations[inv].get("inverse") != r:
            raise c.fail(key, f"{_show(inv)} must be another relation whose inverse is {r!r}")
        other = relations[inv]
        same = ("kind", "axis", "margin", "threshold", "measure")
        if any(entry.get(k) != other.get(k) for k in same) or entry["sign"] != -other["sign"]:
            raise c.fail(key, f"{inv!r} must mirror {r!r}: the same kind, axis, margin, threshold and measure, the "
                              "opposite sign")
    kinds = {entry["kind"] == "centre_order" for entry in relations.values()}
    if len(kinds) > 1:
        raise c.fail("relations", "mixes centre_order with box relations; one domain uses one geometry")
    axes: dict[str, str] = {}
    for r, entry in relations.items():
        if entry["kind"] == "centre_order" and entry["sign"] < 0:
            if entry["axis"] in axes:
                raise c.fail(f"relations.{r}.axis", f"axis {entry['axis']} already has the pair of "
                                                    f"{axes[entry['axis']]!r}; centre orders take one pair per axis")
            axes[entry["axis"]] = r
    return None if not kinds else kinds == {True}


def _sizes(c: _Checker, block: Mapping[str, Any]) -> None:
    n_range = block.get("n_range")
    if n_range is not None:
        pair = c.array("n_range", n_range)
        if len(pair) != 2:
            raise c.fail("n_range", f"must be [lo, hi] or null, got {_show(n_range)}")
        lo, hi = (c.integer(f"n_range[{i}]", v, 1) for i, v in enumerate(pair))
        if lo > hi:
            raise c.fail("n_range", f"must be [lo, hi] with 1 <= lo <= hi, got {_show(n_range)}")
    if block.get("max_objects") is not None:
        c.integer("max_objects", block["max_objects"], 1)


def _words(c: _Checker, block: Mapping[str, Any], attributes: Mapping[str, Any], derived: Mapping[str, Any]) -> None:
    noun = block.get("noun")
    if noun is not None:
        c.one_of("noun", noun, attributes, list(attributes))
    adjectives = c.array("adjectives", block.get("adjectives", []), nonempty=False)
    for i, a in enumerate(adjectives):
        if a == noun:
            raise c.fail(f"adjectives[{i}]", f"{a!r} is the noun attribute")
        c.one_of(f"adjectives[{i}]", a, attributes, list(attributes))
    if len(set(adjectives)) != len(adjectives):
        raise c.fail("adjectives", f"lists an attribute twice: {adjectives}")
    if block.get("slot_props") is not None:
        own = [*attributes, *(a for a, d in derived.items() if d.get("kind") == "quadrant")]
        for k, v in c.mapping("slot_props", block["slot_props"]).items():
            c.name(f"slot_props.{k}", k)
            c.one_of(f"slot_props.{k}", v, own, own)
    if "prompt_description" in block:
        text = block["prompt_description"]
        if not isinstance(text, str) or not text.strip():
            raise c.fail("prompt_description", f"must be a non-empty string, got {_show(text)}")
        allowed = PROMPT_FIELDS if QUADRANT in derived else PROMPT_FIELDS[:1]
        try:
            fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text) if f is not None]
        except ValueError as e:
            raise c.fail("prompt_description", f"is not a template string ({e}); write a literal brace as {{{{ or }}}}"
                         ) from None
        for f, spec, conv in fields:
            if f not in allowed or spec or conv:
                raise c.fail("prompt_description", f"field {{{f}}} is not one of "
                                                   f"{['{' + a + '}' for a in allowed]}")
    if "compact_description" in block:
        _template(c, "compact_description", block["compact_description"], ("objects",), required=True)


def _template(c: _Checker, key: str, text: Any, allowed: tuple[str, ...], required: bool = False) -> None:
    """A one-line template string whose fields are among ``allowed`` (all of them when ``required``)."""
    if not isinstance(text, str) or not text.strip() or "\n" in text:
        raise c.fail(key, f"must be a non-empty one-line string, got {_show(text)}")
    try:
        fields = {f for _, f, spec, conv in string.Formatter().parse(text) if f is not None and not (spec or conv)}
        bad = [f for _, f, spec, conv in string.Formatter().parse(text) if f is not None and (f not in allowed
                                                                                              or spec or conv)]
    except ValueError as e:
        raise c.fail(key, f"is not a template string ({e}); write a literal brace as {{{{ or }}}}") from None
    if bad or (required and fields != set(allowed)):
        raise c.fail(key, f"must hold exactly the field(s) {['{' + a + '}' for a in allowed]}")


def _constants(c: _Checker, block: Mapping[str, Any], attributes: Mapping[str, Any]) -> None:
    if not block.get("constants"):
        return
    noun = block.get("noun")
    if noun is None:
        raise c.fail("constants", "per-value constants are keyed by the noun attribute's values; declare 'noun'")
    for name, table in c.mapping("constants", block["constants"]).items():
        key = f"constants.{name}"
        c.name(key, name)
        for v, w in c.mapping(key, table).items():
            if v not in attributes[noun]:
                raise c.fail(f"{key}.{v}", f"{v!r} is not a value of the noun attribute {noun!r}")
            c.integer(f"{key}.{v}", w)
