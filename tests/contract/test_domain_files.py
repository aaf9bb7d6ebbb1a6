"""Reading a domain file: every key is checked when it is read, and a bad file gets one line naming the file and
the key (docs/domains.md §1), whatever is wrong with it, never another exception from further in."""

from __future__ import annotations

import copy
import itertools
import json
import re

import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logicval_hf.contract.domain import load_domain

FRUIT = {  # docs/domains.md §7
    "name": "fruit", "description": "Fruit on a table, seen from the front.",
    "attributes": {"fruit": ["apple", "pear", "plum"], "color": ["red", "green", "yellow"]},
    "relations": {
        "left": {"kind": "box_offset", "axis": "x", "sign": -1, "margin": 0.1, "threshold": 0.5, "inverse": "right",
                 "phrase": "to the left of"},
        "right": {"kind": "box_offset", "axis": "x", "sign": 1, "margin": 0.1, "threshold": 0.5, "inverse": "left",
                  "phrase": "to the right of"},
        "larger": {"kind": "box_area", "sign": 1, "inverse": "smaller", "phrase": "larger than"},
        "smaller": {"kind": "box_area", "sign": -1, "inverse": "larger", "phrase": "smaller than"}},
    "derived": {"rank": {"kind": "score_rank", "within": "fruit"}},
    "theta": ["=", "!=", "<", "<=", ">", ">="], "n_range": None, "max_objects": 12,
    "noun": "fruit", "adjectives": ["color"], "slot_props": {"shape": "fruit", "color": "color"},
    "constants": {"seeds": {"apple": 5, "pear": 8}}, "image_size": [640, 480],
}
SHELF = {  # centre orders and a quadrant
    "name": "shelf", "prompt_description": "Books on a shelf. {attributes} Regions: {regions}.",
    "attributes": {"book": ["novel", "atlas"], "color": ["red", "blue"]},
    "derived": {"region": {"kind": "quadrant", "values": ["r0", "r1", "r2", "r3"]}},
    "relations": {
        "left": {"kind": "centre_order", "axis": "x", "sign": -1, "inverse": "right"},
        "right": {"kind": "centre_order", "axis": "x", "sign": 1, "inverse": "left"}},
    "theta": ["="], "n_range": [2, 5], "noun": "book",
    "slot_props": {"shape": "book", "color": "color", "region": "region"},
}
_names = itertools.count()


def write(tmp_path, doc, name=None):
    path = tmp_path / f"{name or 'domain'}-{next(_names)}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def changed(base, *edits):
    """``base`` with each edit applied: ``(path, value)`` sets, ``(path, None)`` with ``DELETE`` deletes."""
    doc = copy.deepcopy(base)
    for path, value in edits:
        *head, last = path
        node = doc
        for k in head:
            node = node[k]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return doc


DELETE = object()


def test_the_examples_load(tmp_path):
    fruit, shelf = load_domain(write(tmp_path, FRUIT)), load_domain(write(tmp_path, SHELF))
    assert fruit.open_size and fruit.n_max == 12 and fruit.constant("seeds") == {"apple": 5, "pear": 8}
    assert shelf.ordered and shelf.values("region") == ("r0", "r1", "r2", "r3")


def test_a_quadrant_without_values_takes_the_four_regions(tmp_path):
    shelf = load_domain(write(tmp_path, changed(SHELF, (("derived", "region", "values"), DELETE))))
    assert shelf.values("region") == ("r0", "r1", "r2", "r3")
    assert shelf.derived["region"]["values"] == ["r0", "r1", "r2", "r3"]


BAD = [  # (base, edits, the key the message names, words it says)
    (FRUIT, [(("attributes", "Color"), ["red"])], "attributes.Color", "lowercase"),
    (FRUIT, [(("relations", "Bigger"), {"kind": "box_area", "sign": 1, "inverse": "bigger"})], "relations.Bigger",
     "lowercase"),
    (FRUIT, [(("derived", "Rank"), {"kind": "score_rank", "within": "fruit"})], "derived.Rank", "lowercase"),
    (FRUIT, [(("attributes", "not"), ["x"])], "attributes.not", "lowercase"),
    (FRUIT, [(("constants", "Seeds"), {"apple": 1})], "constants.Seeds", "lowercase"),
    (FRUIT, [(("attributes",), {})], "attributes", "at least one"),
    (FRUIT, [(("attributes", "color"), [])], "attributes.color", "empty"),
    (FRUIT, [(("attributes", "color"), "red")], "attributes.color", "list"),
    (FRUIT, [(("attributes", "color"), ["red", 3])], "attributes.color[1]", "text"),
    (FRUIT, [(("attributes", "color"), ["red", "red"])], "attributes.color", "twice"),
    (FRUIT, [(("attributes", "color"), ["re{d}"])], "attributes.color[0]", "braces"),
    (FRUIT, [(("attributes", "color"), ["red\ngreen"])], "attributes.color[0]", "line"),
    (FRUIT, [(("attributes", "region"), ["r0"])], "attributes.region", "quadrant"),
    (FRUIT, [(("name",), DELETE)], "missing ['name']", "missing"),
    (FRUIT, [(("name",), "my fruit")], "name", "domain name"),
    (FRUIT, [(("name",), "coco")], "name", "shipped"),
    (FRUIT, [(("colour",), 1)], "unknown keys ['colour']", "unknown"),
    (FRUIT, [(("relations", "larger", "sign"), DELETE)], "relations.larger", "missing ['sign']"),
    (FRUIT, [(("relations", "larger", "sign"), 2)], "relations.larger.sign", "1 or -1"),
    (FRUIT, [(("relations", "larger", "sign"), True)], "relations.larger.sign", "1 or -1"),
    (FRUIT, [(("relations", "larger", "axis"), "x")], "relations.larger", "unknown keys ['axis']"),
    (FRUIT, [(("relations", "left", "axis"), "z")], "relations.left.axis", "'z' is not one of"),
    (FRUIT, [(("relations", "left", "margin"), -1)], "relations.left.margin", ">= 0"),
    (FRUIT, [(("relations", "left", "threshold"), 1.5)], "relations.left.threshold", "[0, 1)"),
    (FRUIT, [(("relations", "left", "threshold"), float("nan"))], "relations.left.threshold", "finite"),
    (FRUIT, [(("relations", "left", "kind"), "teleport")], "relations.left.kind", "teleport"),
    (FRUIT, [(("relations", "left", "phrase"), "")], "relations.left.phrase", "text"),
    (FRUIT, [(("relations", "left", "inverse"), "left")], "relations.left.inverse", "another relation"),
    (FRUIT, [(("relations", "left", "inverse"), "up")], "relations.left.inverse", "another relation"),
    (FRUIT, [(("relations", "left", "margin"), 0.2)], "relations.left.inverse", "mirror"),
    (FRUIT, [(("relations", "left", "sign"), 1)], "relations.left.inverse", "mirror"),
    (FRUIT, [(("relations", "left"), {"kind": "centre_order", "axis": "x", "sign": -1, "inverse": "right"}),
             (("relations", "right"), {"kind": "centre_order", "axis": "x", "sign": 1, "inverse": "left"})],
     "relations", "mixes"),
    (SHELF, [(("relations", "west"), {"kind": "centre_order", "axis": "x", "sign": -1, "inverse": "east"}),
             (("relations", "east"), {"kind": "centre_order", "axis": "x", "sign": 1, "inverse": "west"})],
     "relations.", "one pair per axis"),
    (SHELF, [(("derived", "region", "values"), ["a", "b", "c", "d"])], "derived.region.values", "r0"),
    (SHELF, [(("derived", "region", "kind"), DELETE)], "derived.region.kind", "not one of"),
    (SHELF, [(("derived", "quad"), {"kind": "quadrant"})], "derived.quad", "named 'region'"),
    (SHELF, [(("derived", "rank"), {"kind": "score_rank", "within": "book"})], "derived.rank", "box relations"),
    (FRUIT, [(("derived", "region"), {"kind": "quadrant"})], "derived.region", "centre orders"),
    (FRUIT, [(("derived", "rank", "within"), "species")], "derived.rank.within", "species"),
    (FRUIT, [(("derived", "rank", "by"), "score")], "derived.rank", "unknown keys ['by']"),
    (FRUIT, [(("theta",), [])], "theta", "empty"),
    (FRUIT, [(("theta",), ["=="])], "theta[0]", "not one of"),
    (FRUIT, [(("theta",), ["=", "="])], "theta", "twice"),
    (FRUIT, [(("n_range",), [3])], "n_range", "[lo, hi]"),
    (FRUIT, [(("n_range",), [5, 3])], "n_range", "lo <= hi"),
    (FRUIT, [(("n_range",), [0, 3])], "n_range[0]", ">= 1"),
    (FRUIT, [(("n_range",), "3-9")], "n_range", "list"),
    (FRUIT, [(("max_objects",), 0)], "max_objects", ">= 1"),
    (FRUIT, [(("noun",), "shape")], "noun", "not one of"),
    (FRUIT, [(("adjectives",), ["fruit"])], "adjectives[0]", "noun"),
    (FRUIT, [(("adjectives",), ["size"])], "adjectives[0]", "not one of"),
    (FRUIT, [(("slot_props", "shape"), "kind")], "slot_props.shape", "not one of"),
    (FRUIT, [(("noun",), DELETE)], "constants", "noun"),
    (FRUIT, [(("constants", "seeds", "banana"), 3)], "constants.seeds.banana", "noun attribute"),
    (FRUIT, [(("constants", "seeds", "apple"), 2.5)], "constants.seeds.apple", "integer"),
    (FRUIT, [(("image_size",), [640, 0])], "image_size", "positive"),
    (FRUIT, [(("image_size",), [640])], "image_size", "[W, H]"),
    (FRUIT, [(("prompt_description",), "Fruit. {shape}")], "prompt_description", "{shape}"),
    (FRUIT, [(("prompt_description",), "Fruit. {regions}")], "prompt_description", "{regions}"),
    (FRUIT, [(("prompt_description",), "Fruit. {attributes")], "prompt_description", "template"),
    (FRUIT, [(("description",), 7)], "description", "text"),
]


@pytest.mark.parametrize("base, edits, key, words", BAD, ids=[f"{b['name']}-{k}-{w}" for b, _, k, w in BAD])
def test_a_bad_file_gets_one_line_naming_the_file_and_the_key(tmp_path, base, edits, key, words):
    path = write(tmp_path, changed(base, *edits))
    with pytest.raises(ValueError) as e:
        load_domain(path)
    msg = str(e.value)
    assert msg.startswith(f"domain file {path}: ") and "\n" not in msg, msg
    assert key in msg and words in msg, msg


def test_a_file_that_is_not_a_domain_object(tmp_path):
    paths = [write(tmp_path, doc) for doc in ([FRUIT], "fruit", {"attributes_": 1}, {})]
    for i, raw in enumerate((b"\xff\xfe{", b"{'name': 1}", b"[" * 100_000)):
        paths.append(str(tmp_path / f"raw-{i}.json"))
        (tmp_path / f"raw-{i}.json").write_bytes(raw)
    for path in paths:
        with pytest.raises(ValueError, match=re.escape(f"domain file {path}: ")) as e:
            load_domain(path)
        assert "\n" not in str(e.value)


# ---- any malformed file -------------------------------------------------------------------------------------------
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 20) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6) | st.sampled_from(["x", "X", "red", "left", "r0", "centre_order", "box_area", "quadrant"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6)


def _places(doc, prefix=()):
    """Every (container, key) of a JSON document, the root's keys included."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield doc, k
        yield from _places(v, (*prefix, k))


@st.composite
def malformed(draw):
    doc = copy.deepcopy(draw(st.sampled_from([FRUIT, SHELF])))
    for _ in range(draw(st.integers(1, 3))):
        places = list(_places(doc))
        if not places:
            break
        node, key = draw(st.sampled_from(places))
        how = draw(st.sampled_from(["delete", "replace", "rename", "upper", "add"]))
        if how == "delete":
            del node[key]
        elif how == "replace":
            node[key] = draw(_JSON)
        elif how in ("rename", "upper") and isinstance(node, dict):
            value = node.pop(key)
            node[key.upper() if how == "upper" else draw(st.text(max_size=6))] = value
        elif how == "add" and isinstance(node, dict):
            node[draw(st.text(max_size=6))] = draw(_JSON)
    return doc


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=malformed())
def test_a_malformed_file_loads_or_gets_a_one_line_value_error(tmp_path_factory, doc):
    path = write(tmp_path_factory.getbasetemp(), doc, "malformed")
    try:
        domain = load_domain(path)
    except ValueError as e:
        msg = str(e)
        assert msg.startswith(f"domain file {path}: ") and msg.strip() and "\n" not in msg, msg
        return
    # what loads is a domain ASP and the verbaliser can read: lowercase names, text values
    names = [*domain.attributes, *domain.relations, *domain.constants]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", a) for a in names), names
    assert all(isinstance(v, str) and v for vals in domain.attributes.values() for v in vals)
    for r in domain.relations:
        assert domain.rules[domain.rules[r].inverse].inverse == r
