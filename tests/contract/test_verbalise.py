"""Tests of the deterministic verbaliser (logicval_hf/verbalise.py).

Over all 71 templates and many random parameter draws at several scene sizes: no placeholder leaks, clean
spacing, sentence case and punctuation, a/an, count agreement, negation phrasing; the rendering of
examples.md (a copy in tests/data) and a built-in golden subset; full prompts; the
sub-question records and `check_expect`; and the docs/verbaliser.md §6 property that the plain
"How many <np> are there?" expectations hold on every scene that satisfies the constraint (checked with a
small brute-force evaluator of the DSL on random admissible scenes).
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import re
from pathlib import Path

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from shared_data import needs_shared, shared_path

from logicval_hf.contract import verbalise as V
from logicval_hf.contract.catalog import Catalog, load_catalog
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit, Spec
from logicval_hf.contract.verbalise import VerbaliseError
from logicval_hf.errors import SpecError

CAT = load_catalog()
DOM = CAT.domain
TEMPLATE_IDS = sorted(CAT.templates)
NS = (3, 4, 6, 9)
SHAPES = DOM.values("shape")
SHAPE_PLURALS = tuple(V.plural(s) for s in SHAPES)
NOUNS_SG = (*SHAPES, "object")
NOUNS_PL = (*SHAPE_PLURALS, "objects")



def draws(ns=NS, seeds=range(6)):
    """Fixed-seed random constraints: every template, every n, several seeds."""
    for tid in TEMPLATE_IDS:
        for n in ns:
            for seed in seeds:
                rng = random.Random(f"{tid}|{n}|{seed}")
                yield tid, n, random_constraint(tid, n, rng)


# ------------------------------------------------------------------------------------------------
# Text checks
# ------------------------------------------------------------------------------------------------

_SENT_SPLIT = re.compile(r"(?<=[.?])\s+")


def expected_article(word: str) -> str:
    """Independent a/an rule for the test vocabulary (no 'uni-', 'hour' words occur in CLEVR)."""
    return "an" if word[0].lower() in "aeiou" else "a"


def check_text(text: str, end: str = ".", where: str = "") -> None:
    ctx = f"{where}: {text!r}"
    assert text, ctx
    for ch in "{}$":
        assert ch not in text, f"leaked {ch!r} in {ctx}"
    assert "  " not in text, f"double space in {ctx}"
    assert text == text.strip(), f"outer whitespace in {ctx}"
    assert " ," not in text and " ." not in text and " ?" not in text, f"space before punctuation in {ctx}"
    assert ".." not in text and ",," not in text, ctx
    sentences = _SENT_SPLIT.split(text)
    for s in sentences:
        assert s[0].isupper(), f"sentence does not start with a capital: {s!r} in {ctx}"
        assert s[-1] in ".?", f"sentence does not end with '.' or '?': {s!r} in {ctx}"
    assert text.endswith(end), f"does not end with {end!r}: {ctx}"
    # a / an before the next word
    for m in re.finditer(r"\b([Aa]n?) ([A-Za-z0-9]+)", text):
        art, word = m.group(1).lower(), m.group(2)
        assert art == expected_article(word), f"'{m.group(0)}' should use '{expected_article(word)}' in {ctx}"
    # counts agree with their noun: "1 red object", "2 red objects"
    for m in re.finditer(r"\b(\d+) ((?:[a-z]+ ){{0,3}}?)({})\b".format("|".join(NOUNS_PL + NOUNS_SG)), text):
        k, noun = int(m.group(1)), m.group(3)
        if k == 1:
            assert noun in NOUNS_SG, f"'{m.group(0)}' should be singular in {ctx}"
        else:
            assert noun in NOUNS_PL, f"'{m.group(0)}' should be plural in {ctx}"
    # negations: "not a cube" (singular), "not cubes" (plural), never "not cube" / "not a cubes"
    for m in re.finditer(r"\bnot (an? )?({})\b".format("|".join(SHAPE_PLURALS + SHAPES)), text):
        art, noun = m.group(1), m.group(2)
        if noun in SHAPE_PLURALS:
            assert not art, f"'{m.group(0)}' in {ctx}"
        else:
            assert art, f"'{m.group(0)}' lacks its article in {ctx}"
    # relative clauses agree in number with their head noun
    assert not re.search(r"\b({}) that is\b".format("|".join(NOUNS_PL)), text), f"plural head + 'that is' in {ctx}"
    assert not re.search(r"\b({}) that are\b".format("|".join(NOUNS_SG)), text), f"singular head + 'that are' in {ctx}"
    assert not re.search(r"\bthat are (not )?an? ", text), f"'that are a ...' in {ctx}"
    plural_after_is = r"\bthat is (not )?({})\b".format("|".join(SHAPE_PLURALS))
    assert not re.search(plural_after_is, text), f"'that is <plural>' in {ctx}"


def all_texts(c: Constraint, n: int):
    for reg in V.REGISTERS:
        yield reg, V.constraint_text(c, n, reg), "."
    for i, sq in enumerate(V.subquestions(c, n)):
        yield f"q{i}", sq["question"], "?"


def plural_subject_singular_predicate(q: str) -> bool:
    return bool(re.search(r"\b({}) are (?:[a-z]+ )*?(?:or|but not) an? ".format("|".join(NOUNS_PL)), q)) or bool(
        re.search(r"\bare an? ({})\b(?! that)".format("|".join(NOUNS_SG)), q) and q.startswith("How many"))


# ------------------------------------------------------------------------------------------------
# All templates, fixed seeds
# ------------------------------------------------------------------------------------------------


def test_catalog_has_71_templates():
    assert len(TEMPLATE_IDS) == 71


def test_every_template_renders_cleanly_fixed_seeds():
    seen = set()
    for tid, n, c in draws():
        seen.add(tid)
        for where, text, end in all_texts(c, n):
            check_text(text, end, f"{tid} n={n} {where} {c.key()}")
    assert seen == set(TEMPLATE_IDS)


def test_constraint_text_is_register_then_anti_vacuity():
    for _tid, n, c in draws(ns=(5,), seeds=range(2)):
        av = c.template.nl.get("anti_vacuity")
        for reg in V.REGISTERS:
            text = V.constraint_text(c, n, reg)
            head = V.render(c.template.nl[reg], c, n)
            assert text.startswith(head[0].upper() + head[1:])
            if av:
                tail = V.render(av, c, n)
                assert text == f"{head[0].upper()}{head[1:]} {tail[0].upper()}{tail[1:]}"
            else:
                assert text == head[0].upper() + head[1:]


def test_no_plural_subject_with_a_singular_predicate():
    """Catalog 1.2 fixed the last two (C2/2prop_or, C3/1prop_or use plural predicates): none is left."""
    found = set()
    for tid, n, c in draws(ns=(6,), seeds=range(4)):
        for sq in V.subquestions(c, n):
            if plural_subject_singular_predicate(sq["question"]):
                found.add(tid)
    assert not found, found


@settings(max_examples=examples(250), deadline=None)
@given(tid=st.sampled_from(TEMPLATE_IDS), n=st.integers(DOM.n_min, DOM.n_max), seed=st.integers(0, 2**32 - 1))
def test_random_constraints_render_cleanly(tid, n, seed):
    c = random_constraint(tid, n, random.Random(seed))
    for where, text, end in all_texts(c, n):
        check_text(text, end, f"{tid} n={n} {where} {c.key()}")
    for sq in V.subquestions(c, n):
        _check_subquestion_record(sq, c, n)


# ------------------------------------------------------------------------------------------------
# Placeholders (docs/verbaliser.md §2 table)
# ------------------------------------------------------------------------------------------------

RED, CUBE, METAL, R0 = (AttrLit("color", "red"), AttrLit("shape", "cube"), AttrLit("material", "metal"),
                        AttrLit("region", "r0"))


def neg(lit: AttrLit) -> AttrLit:
    return AttrLit(lit.prop, lit.value, True)


P = {
    "A1": RED, "A2": CUBE, "A3": METAL, "A4": R0,
    "N1": neg(RED), "N2": neg(CUBE), "N3": neg(METAL), "N4": neg(R0),
    "R1": RelLit("left"), "R2": RelLit("behind"), "RN": RelLit("front", True),
    "K": 2, "K1": 1, "T": "<=", "U": ">",
}


@pytest.mark.parametrize("template, expected", [
    ("{np:A1,A2}", "red cube"),
    ("{np:A2,A1}", "red cube"),
    ("{np:A3}", "metal object"),
    ("{np:A4}", "object in the back-left region (r0)"),
    ("{np:A1,N2}", "red object that is not a cube"),
    ("{np:A2,A4,A3,A1}", "red metal cube in the back-left region (r0)"),
    ("{np:A1,A4,N2,N3}", "red object in the back-left region (r0) that is not a cube and not metal"),
    ("{np:N1,N2,N3}", "object that is not red, not a cube and not metal"),
    ("{a:A1,A2}", "a red cube"),
    ("{a:N1}", "an object that is not red"),
    ("{a:A4}", "an object in the back-left region (r0)"),
    ("{a:A3,A2}", "a metal cube"),
    ("{nps:A1,A2}", "red cubes"),
    ("{nps:N1}", "objects that are not red"),
    ("{nps:N1,N3}", "objects that are not red and not metal"),
    ("{nps:A1,N2}", "red objects that are not cubes"),
    ("{nps:A4}", "objects in the back-left region (r0)"),
    ("{pred:A1}", "red"), ("{pred:A2}", "a cube"), ("{pred:A3}", "metal"),
    ("{pred:A4}", "in the back-left region (r0)"),
    ("{pred:N1}", "not red"), ("{pred:N2}", "not a cube"), ("{pred:N4}", "not in the back-left region (r0)"),
    ("{ppred:A1}", "red"), ("{ppred:A2}", "cubes"), ("{ppred:N2}", "not cubes"),
    ("{pos:N2}", "a cube"), ("{pos:A2}", "a cube"), ("{posp:N2}", "cubes"), ("{posp:N1}", "red"),
    ("{posnps:N1}", "red objects"), ("{posnps:N2}", "cubes"),
    ("{mustbe:A1}", "must be red"), ("{mustbe:N2}", "must not be a cube"),
    ("{mustbe:A4}", "must be in the back-left region (r0)"),
    ("{rel:R1}", "to the left of"), ("{rel:R2}", "behind"), ("{rel:RN}", "not in front of"),
    ("{rel:R1,R2}", "to the left of and behind"),
    ("{prop:A1}", "color"), ("{val:A1}", "red"), ("{prop:A2}", "shape"), ("{val:N2}", "cube"),
    ("{K}", "2"), ("{num:K,A1}", "2 red objects"), ("{num:K1,A1}", "1 red object"),
    ("{num:K}", "2 objects"), ("{num:K1}", "1 object"), ("{num:K,A1,A2}", "2 red cubes"),
    ("{num:K1,N2}", "1 object that is not a cube"), ("{num:K,N2}", "2 objects that are not cubes"),
    ("{theta:T}", "at most"), ("{flip:T}", ">="), ("{flip:U}", "<"), ("{n}", "7"),
])
def test_placeholder(template, expected):
    assert V.render(template, P, 7) == expected


def test_theta_and_flip_tables_cover_the_domain():
    for t in DOM.thetas:
        assert V.render("{theta:T}", {"T": t}) in {"equal to", "different from", "smaller than", "at most",
                                                   "greater than", "at least"}
        f = V.render("{flip:T}", {"T": t})
        for a, b in itertools.product(range(4), repeat=2):  # a T b  iff  b flip(T) a
            assert V.check_expect(f"{t}{b}", a) == V.check_expect(f"{f}{a}", b)


def test_region_names():
    assert [V.region_name(r) for r in DOM.values("region")] == [
        "the back-left region (r0)", "the back-right region (r1)", "the front-left region (r2)",
        "the front-right region (r3)"]


@pytest.mark.parametrize("bad", [
    "{foo:A1}", "{np:Z9}", "{np:R1}", "{rel:A1}", "{num:A1}", "{theta:K}", "{K2}", "{}", "{np:}", "{np:A1,}",
    "{val:A1,A2}", "There is {a:A1", "{{np:A1}}", "x}", "{n}",
])
def test_bad_placeholders_raise(bad):
    with pytest.raises(VerbaliseError):
        V.render(bad, P, None)


def test_unknown_register_raises():
    c = random_constraint("C1/1prop", 5, random.Random(0))
    with pytest.raises(VerbaliseError):
        V.constraint_text(c, 5, "medium")


def test_a_spec_without_a_scene_size_has_no_full_prompt_nor_sub_questions():
    """An open-size spec (COCO, n absent): a clear error rather than "None objects" or a TypeError."""
    spec = Spec.from_dict({"domain": "coco", "constraints": [
        {"template": "C1/1prop", "params": {"A1": {"prop": "color", "value": "red", "negated": False}}}]})
    assert spec.n is None
    with pytest.raises(SpecError, match="a full prompt needs the spec's scene size n"):
        V.full_prompt(spec)
    with pytest.raises(SpecError, match="the sub-questions need"):
        V.spec_subquestions(spec)


def test_articles_and_plurals():
    assert [V.article(w) for w in ("object", "orange box", "red cube", "umbrella", "unicorn", "hour", "8", "2")] == [
        "an", "an", "a", "an", "a", "an", "an", "a"]
    assert [V.plural(w) for w in ("cube", "sphere", "cylinder", "object", "box", "body", "toy")] == [
        "cubes", "spheres", "cylinders", "objects", "boxes", "bodies", "toys"]


# ------------------------------------------------------------------------------------------------
# Another vocabulary: nothing is hard-coded
# ------------------------------------------------------------------------------------------------

def other_catalog() -> Catalog:
    raw = copy.deepcopy(CAT.raw)
    raw["domain"]["color"] = ["orange", "red", "indigo", "umber"]
    raw["domain"]["shape"] = ["box", "ellipsoid", "cone"]
    raw["domain"]["material"] = ["iron", "wood"]
    return Catalog.from_dict(raw)


def test_other_vocabulary():
    cat = other_catalog()
    desc = V.domain_description(cat.domain)
    assert "orange, red, indigo or umber" in desc and "box, ellipsoid or cone" in desc and "iron or wood" in desc
    for word in DOM.values("color") + DOM.values("shape") + DOM.values("material"):
        if word != "red":
            assert word not in desc
    c = Constraint.from_dict({"template": "C1/3prop", "params": {
        "A1": {"prop": "shape", "value": "ellipsoid", "negated": False},
        "A2": {"prop": "color", "value": "orange", "negated": False},
        "A3": {"prop": "material", "value": "iron", "negated": False}}}, n=5, catalog=cat)
    assert V.constraint_text(c, 5) == "There is an orange iron ellipsoid."
    c = Constraint.from_dict({"template": "C8/1prop_atleast", "params": {
        "A1": {"prop": "shape", "value": "box", "negated": False}, "K": 2}}, n=5, catalog=cat)
    assert V.constraint_text(c, 5) == "The scene contains at least 2 boxes."
    c = Constraint.from_dict({"template": "C1/1prop_neg", "params": {
        "A1": {"prop": "material", "value": "iron", "negated": True}}}, n=5, catalog=cat)
    assert V.constraint_text(c, 5) == "There is an object that is not iron."
    c = Constraint.from_dict({"template": "C6/1prop", "params": {
        "A1": {"prop": "shape", "value": "cone", "negated": False}, "R1": {"rel": "left", "negated": False}}},
        n=5, catalog=cat)
    (sq,) = V.subquestions(c, 5, catalog=cat)
    assert sq["candidates"] == ["box", "ellipsoid", "cone"] and sq["expect"] == "cone"
    rng = random.Random(3)
    for tid in TEMPLATE_IDS:
        c = random_constraint(tid, 5, rng, catalog=cat)
        for reg in V.REGISTERS:
            text = V.constraint_text(c, 5, reg)
            assert "{" not in text and "  " not in text
            for m in re.finditer(r"\b(an?) (orange|indigo|umber|iron|ellipsoid|object|box|cone|red|wood)\b", text):
                assert m.group(1) == expected_article(m.group(2)), text
        V.subquestions(c, 5, catalog=cat)


# ------------------------------------------------------------------------------------------------
# examples.md (illustrative; the catalog and docs/spec_language.md are the contract) and a built-in golden subset
# ------------------------------------------------------------------------------------------------

#: one rendered instance of every template: a copy of the template contract's examples.md (``spec/`` under the test
#: data root, `shared_data`), so that a fresh clone runs the comparison; `test_examples_md_copy_is_current` keeps it
#: equal to the contract's where that is present
EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "examples.md"
CONTRACT_EXAMPLES = ("spec", "examples.md")


def parse_examples(text: str) -> list[dict]:
    out = []
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        tid = block.split()[0]
        n = int(re.search(r"at n=(\d+)", block.splitlines()[0]).group(1))
        sqs = re.findall(r"^- subq \((\w+)\): (.*) -> `([^`]*)`(?: \[binds (\w+)\])?$", block, re.M)
        out.append({
            "template": tid, "n": n,
            "params": json.loads(re.search(r"^- params: `(.*)`$", block, re.M).group(1)),
            "short": re.search(r"^- short: (.*)$", block, re.M).group(1),
            "long": re.search(r"^- long: (.*)$", block, re.M).group(1),
            "subq": [{"type": t, "question": q, "expect": e, "bind": b or None} for t, q, e, b in sqs],
        })
    return out


def normalise_example_expect(e: str, n: int) -> str:
    """examples.md writes `Yes`/`No`/`Cube` and `=n`; the verbaliser renders lowercase and substitutes n
    (deliberate: the catalog spells expectations in lowercase and docs/verbaliser.md §6 fills in n)."""
    return re.sub(r"(?<![A-Za-z0-9_])n(?![A-Za-z0-9_])", str(n), e).lower()


def compare_example(ex: dict) -> list[str]:
    c = Constraint.from_dict({"template": ex["template"], "params": ex["params"]}, n=ex["n"])
    diffs = []
    for reg in V.REGISTERS:
        got = V.constraint_text(c, ex["n"], reg)
        if got != ex[reg]:
            diffs.append(f"{ex['template']} {reg}:\n  examples.md: {ex[reg]}\n  verbaliser:  {got}")
    mine = V.subquestions(c, ex["n"])
    if len(mine) != len(ex["subq"]):
        diffs.append(f"{ex['template']}: {len(mine)} sub-questions, examples.md has {len(ex['subq'])}")
    for a, b in zip(ex["subq"], mine, strict=False):
        want = (a["type"], a["question"], normalise_example_expect(a["expect"], ex["n"]), a["bind"])
        got = (b["type"], b["question"], b["expect"], b["bind"])
        if want != got:
            diffs.append(f"{ex['template']} sub-question:\n  examples.md: {want}\n  verbaliser:  {got}")
    return diffs


def test_examples_md_matches():
    examples = parse_examples(EXAMPLES.read_text(encoding="utf-8"))
    assert {e["template"] for e in examples} == set(TEMPLATE_IDS)
    diffs = [d for ex in examples for d in compare_example(ex)]
    assert not diffs, "\n".join(diffs)


@needs_shared(*CONTRACT_EXAMPLES)
def test_examples_md_copy_is_current():
    contract = shared_path(*CONTRACT_EXAMPLES)
    assert EXAMPLES.read_bytes() == contract.read_bytes(), f"tests/data/examples.md differs from {contract}: copy it"


# A subset of examples.md written out by hand: each template its own test case, the expected text in view.
GOLDEN = [
    ("C1/3prop_neg", {"A1": ["material", "metal", False], "A2": ["color", "red", False], "A3": ["shape", "cube", True]},
     "There is a red metal object that is not a cube.",
     "There must exist at least one object in the scene that is metal, red and not a cube.",
     [("yes_no", "Is there a red metal object that is not a cube?", "yes", None),
      ("count", "How many red metal objects that are not cubes are there?", ">0", None),
      ("yes_no", "Are all objects cubes?", "no", None)]),
    ("C1/2prop_neg2", {"A1": ["material", "metal", True], "A2": ["color", "red", True]},
     "There is an object that is not metal and not red.",
     "There must exist at least one object in the scene that is not metal and not red.",
     [("yes_no", "Is there an object that is not metal and not red?", "yes", None),
      ("count", "How many objects that are not metal and not red are there?", ">0", None),
      ("yes_no", "Are all objects metal?", "no", None), ("yes_no", "Are all objects red?", "no", None)]),
    ("C2/2prop_or", {"A1": ["shape", "cylinder", False], "A2": ["material", "metal", False]},
     "Every object is a cylinder or metal (or both). There is at least one object in the scene.",
     "For every object x in the scene, x must be a cylinder or x must be metal (or both). "
     "There is at least one object in the scene.",
     [("count", "How many cylinders are there?", ">=0", "c"),
      ("count", "How many objects are metal but not cylinders?", "=6-c", None)]),
    ("C3/1prop_region", {"A1": ["shape", "cylinder", False], "C1": ["region", "r2", False]},
     "All cylinders are in the front-left region (r2). There is at least one cylinder.",
     "For every object x in the scene: if x is a cylinder, then x must be in the front-left region (r2). "
     "There is at least one cylinder.",
     [("count", "How many cylinders are there?", ">0", "c"),
      ("count", "How many cylinders in the front-left region (r2) are there?", "=c", None)]),
    ("C4/pair_rel_neg", {"A1": ["material", "rubber", False], "B1": ["color", "cyan", False], "R1": ["behind", True]},
     "There are two different objects, a rubber object and a cyan object, such that the first is not behind the "
     "second.",
     "There must exist two different objects x and y such that x is rubber, y is cyan, and x is not behind y.",
     [("count", "How many rubber objects are there?", ">0", None),
      ("count", "How many cyan objects are there?", ">0", None),
      ("yes_no", "Are there two different objects, a rubber object and a cyan object, such that the first is not "
                 "behind the second?", "yes", None)]),
    ("C6/1prop", {"A1": ["shape", "cube", False], "R1": ["front", False]},
     "There is a cube that is in front of all other objects. There is at least one cube and at least one other object.",
     "There must exist an object x that is a cube such that there is at least one other object and, for every other "
     "object y, x is in front of y. There is at least one cube and at least one other object.",
     [("value", "What is the shape of the object that is in front of all other objects?", "cube", None)]),
    ("C7/1prop_exact", {"A1": ["shape", "cube", False], "R1": ["front", False], "K": 4},
     "Every cube has exactly 4 objects in front of it. There is at least one cube.",
     "For every object x that is a cube, the number of other objects y such that y is in front of x must be exactly 4. "
     "There is at least one cube.",
     [("count", "How many cubes are there?", ">0", "c"),
      ("count", "How many cubes have exactly 4 objects in front of them?", "=c", None)]),
    ("C8/1prop_atmost_neg", {"A1": ["material", "rubber", True], "K": 4},
     "The scene contains at most 4 objects that are not rubber.",
     "The number of objects x such that x is not rubber must be at most 4.",
     [("count", "How many objects that are not rubber are there?", "<=4", None)]),
    ("C9/1prop_cmp", {"A1": ["shape", "cylinder", False], "B1": ["material", "rubber", False], "T": "<="},
     "The number of cylinders is at most the number of rubber objects.",
     "Let a be the number of objects that are cylinders and b the number of objects that are rubber; "
     "a must be at most b.",
     [("count", "How many cylinders are there?", ">=0", "c"),
      ("count", "How many rubber objects are there?", ">=c", None)]),
    ("C5/pair_propA_2relC", {"A1": ["color", "blue", False], "B1": ["color", "yellow", False], "R1": ["front", False],
                             "R2": ["left", False]},
     "Every blue object is in front of and to the left of every other yellow object. "
     "There is at least one blue object and at least one other object that is yellow.",
     "For every pair of different objects x and y: if x is blue and y is yellow, then x must be in front of y and x "
     "must be to the left of y. There is at least one blue object and at least one other object that is yellow.",
     [("count", "How many blue objects are there?", ">0", None),
      ("count", "How many yellow objects are there?", ">0", None),
      ("yes_no", "Are there a blue object and a different yellow object such that the first is not in front of the "
                 "second?", "no", None),
      ("yes_no", "Are there a blue object and a different yellow object such that the first is not to the left of "
                 "the second?", "no", None)]),
]


def _params(compact: dict) -> dict:
    out = {}
    for k, v in compact.items():
        if isinstance(v, list) and len(v) == 3:
            out[k] = {"prop": v[0], "value": v[1], "negated": v[2]}
        elif isinstance(v, list):
            out[k] = {"rel": v[0], "negated": v[1]}
        else:
            out[k] = v
    return out


@pytest.mark.parametrize("tid, params, short, long, sqs", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden(tid, params, short, long, sqs):
    c = Constraint.from_dict({"template": tid, "params": _params(params)}, n=6)
    assert V.constraint_text(c, 6, "short") == short
    assert V.constraint_text(c, 6, "long") == long
    got = [(s["type"], s["question"], s["expect"], s["bind"]) for s in V.subquestions(c, 6)]
    assert got == sqs


# ------------------------------------------------------------------------------------------------
# Full prompts
# ------------------------------------------------------------------------------------------------

def random_spec(m: int, n: int, rng: random.Random) -> Spec:
    classes = rng.sample(list(CAT.classes), m)
    cons = [random_constraint(rng.choice(CAT.by_class(k)), n, rng) for k in classes]
    return Spec.from_dict({"n": n, "constraints": [c.to_dict() for c in cons]})


def test_domain_description_reads_the_catalog():
    desc = V.domain_description(DOM)
    for attr in DOM.perceived_attributes:
        for v in DOM.values(attr):
            assert re.search(rf"\b{v}\b", desc), v
        assert f"one {attr} (" in desc
    for r in DOM.values("region"):
        assert V.region_name(r) in desc
    assert "regions fix only the order across the midlines" in desc
    check_text(desc)
    assert V.domain_description() == desc


@pytest.mark.parametrize("m", [1, 3, 6])
@pytest.mark.parametrize("register", V.REGISTERS)
def test_full_prompt(m, register):
    rng = random.Random(f"prompt{m}{register}")
    for n in (3, 6, 9):
        spec = random_spec(m, n, rng)
        plain = V.full_prompt(spec, register, white_background=False)
        white = V.full_prompt(spec, register, white_background=True)
        for p in (plain, white):
            assert "{" not in p and "}" not in p and "$" not in p and "  " not in p
            lines = p.split("\n")
            for line in lines:
                check_text(line, ".", f"m={m} n={n}")
            assert lines[0] == V.domain_description(DOM)
            assert f"exactly {n} objects" in lines[1]
            numbered = [ln for ln in lines if ln.startswith("Constraint ")]
            texts = [V.constraint_text(c, n, register) for c in spec.constraints]
            if m == 1:
                assert not numbered and "Constraint 1:" not in p
                assert texts[0] in lines
            else:
                assert numbered == [f"Constraint {i}: {t}" for i, t in enumerate(texts, 1)]
            assert "contradictory" in lines[-1] and "empty" in lines[-1]
        # the white variant differs only in the background instruction
        assert plain.replace(V.EMPTY_SCENE_INSTRUCTION, V.EMPTY_SCENE_INSTRUCTION_WHITE) == white
        assert "white" not in plain.lower() and "white background" in white.lower()
        assert "empty white scene" in white
        assert V.full_prompt(spec.to_dict(), register) == plain  # dicts accepted too


def test_full_prompt_bad_register():
    spec = random_spec(1, 5, random.Random(0))
    with pytest.raises(VerbaliseError):
        V.full_prompt(spec, "verbose")


# ------------------------------------------------------------------------------------------------
# Sub-questions and expectations
# ------------------------------------------------------------------------------------------------

def _check_subquestion_record(sq: dict, c: Constraint, n: int) -> None:
    assert set(sq) == {"question", "type", "expect", "bind", "candidates"}
    assert sq["type"] in ("yes_no", "count", "value")
    if sq["type"] == "yes_no":
        assert sq["expect"] in ("yes", "no") and sq["candidates"] == ["yes", "no"]
    elif sq["type"] == "value":
        assert sq["expect"] in sq["candidates"]
        assert any(sq["candidates"] == list(DOM.values(a)) for a in DOM.attributes)
    else:
        assert sq["candidates"] == list(range(max(n, 10) + 1))
        _op, rhs = V.parse_expect(sq["expect"])
        assert "{" not in rhs and not re.search(r"(?<![A-Za-z0-9_])n(?![A-Za-z0-9_])", rhs)
    assert sq["bind"] is None or sq["type"] == "count"


def test_subquestion_records_all_templates():
    for tid, n, c in draws(seeds=range(3)):
        sqs = V.subquestions(c, n)
        assert len(sqs) == len(c.template.subquestions) >= 1
        bound = set()
        for raw, sq in zip(c.template.subquestions, sqs, strict=False):
            _check_subquestion_record(sq, c, n)
            if sq["type"] == "count":
                _op, rhs = V.parse_expect(sq["expect"])
                assert set(re.findall(r"[A-Za-z_]\w*", rhs)) <= bound, (tid, sq)
                if "{K}" in raw["expect"]:
                    assert rhs == str(c.params["K"])
                if raw["expect"] == "=n":
                    assert sq["expect"] == f"={n}"
            if sq["bind"]:
                bound.add(sq["bind"])
            assert sq["bind"] == raw.get("bind")


def test_spec_subquestions_keep_their_constraint():
    rng = random.Random(11)
    for m in (1, 3, 6):
        spec = random_spec(m, 6, rng)
        allq = V.spec_subquestions(spec)
        per = [V.subquestions(c, spec.n) for c in spec.constraints]
        assert [q["constraint"] for q in allq] == [i for i, qs in enumerate(per) for _ in qs]
        assert [{k: v for k, v in q.items() if k != "constraint"} for q in allq] == [q for qs in per for q in qs]


@pytest.mark.parametrize("expect, answer, bindings, ok", [
    (">0", 1, {}, True), (">0", 0, {}, False), ("=3", 3, {}, True), ("=3", 2, {}, False),
    (">=2", 2, {}, True), ("<=2", 3, {}, False), ("!=c", 2, {"c": 2}, False), ("!=c", 1, {"c": 2}, True),
    ("=c", 4, {"c": 4}, True), (">c", 5, {"c": 4}, True), ("<c", 4, {"c": 4}, False),
    ("=6-c", 4, {"c": 2}, True), ("=6-c", 3, {"c": 2}, False), ("=n-c", 4, {"n": 6, "c": 2}, True),
    ("=n", 6, {"n": 6}, True), (">= 0", 0, {}, True),
    ("yes", "yes", {}, True), ("yes", "Yes", {}, True), ("yes", "no", {}, False), ("no", False, {}, True),
    ("cube", "cube", {}, True), ("cube", "Cube ", {}, True), ("cube", "sphere", {}, False),
])
def test_check_expect(expect, answer, bindings, ok):
    assert V.check_expect(expect, answer, bindings) is ok


@pytest.mark.parametrize("expect, answer, bindings", [
    ("=c", 2, {}), (">0", "two", {}), (">0", True, {}), ("=>2", 2, {}), ("=c*2", 2, {"c": 1}), ("=", 1, {}),
])
def test_check_expect_errors(expect, answer, bindings):
    with pytest.raises(VerbaliseError):
        V.check_expect(expect, answer, bindings)


# ------------------------------------------------------------------------------------------------
# docs/verbaliser.md §6: plain count expectations hold on every satisfying scene
# ------------------------------------------------------------------------------------------------

_PLAIN = re.compile(r"^How many \{(nps|posnps):([A-Za-z0-9_,]+)\} are there\?$")


def plain_count(raw_q: str, c: Constraint, scene) -> int | None:
    if raw_q == "How many objects are there?":
        return len(scene)
    m = _PLAIN.match(raw_q)
    if not m:
        return None
    lits = [c.params[s] for s in m.group(2).split(",")]
    if m.group(1) == "posnps":
        lits = [AttrLit(lit.prop, lit.value, False) for lit in lits]
    return sum(all((scene.attribute(i, lit.prop) == lit.value) != lit.negated for lit in lits)
               for i in range(len(scene)))


@pytest.mark.slow  # solves every template (~3 s)
def test_plain_count_expectations_hold_on_solver_witnesses():
    """docs/verbaliser.md §6: the plain "How many ... are there?" expectations hold on every solver witness."""
    from logicval_hf.asp.solver import Solver

    solver = Solver()
    rng = random.Random(2024)
    checked: dict[str, int] = {}
    unbound: set[str] = set()  # plain questions whose expectation names a count of a non-plain question
    with_plain = set()
    for tid in TEMPLATE_IDS:
        t = CAT.templates[tid]
        if not any(_PLAIN.match(q["q"]) or q["q"] == "How many objects are there?" for q in t.subquestions):
            continue
        with_plain.add(tid)
        for n in (3, 4, 5):
            for _ in range(3):
                c = random_constraint(tid, n, rng)
                result = solver.solve(Spec(n, (c,)))
                if not result.satisfiable:
                    continue
                sqs = V.subquestions(c, n)
                bindings: dict[str, int] = {}
                for raw, sq in zip(t.subquestions, sqs, strict=False):
                    if sq["type"] != "count":
                        continue
                    truth = plain_count(raw["q"], c, result.witness)
                    if truth is None:
                        continue
                    _, rhs = V.parse_expect(sq["expect"])
                    if set(re.findall(r"[A-Za-z_]\w*", rhs)) <= set(bindings):
                        assert V.check_expect(sq["expect"], truth, bindings), (tid, c.key(), sq, truth)
                        checked[tid] = checked.get(tid, 0) + 1
                    else:
                        unbound.add(tid)
                    if sq["bind"]:
                        bindings[sq["bind"]] = truth
    # every template with a checkable plain count question had a satisfiable draw and was checked
    assert with_plain - set(checked) <= unbound, sorted(with_plain - set(checked) - unbound)
    assert len(checked) >= 50


# ------------------------------------------------------------------------------------------------
# The checks above are live: they reject the mistakes they look for
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    "There is a object.", "There is an red cube.", "There is {a:A1}.", "There is $A1.", "There is  a cube.",
    "there is a cube.", "There is a cube", "The scene contains 1 red objects.", "The scene contains 2 red object.",
    "There is an object that is not cube.", "There is an object that is not a cubes.",
    "How many objects that is not red are there?", "How many objects that are not a cube are there?",
    "There is a cube . ", "There is a cube. it is red.",
])
def test_text_checker_rejects(bad):
    with pytest.raises(AssertionError):
        check_text(bad, "?" if bad.startswith("How") else ".")
