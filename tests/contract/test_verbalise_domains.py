"""The verbaliser speaks each spec's domain: a third-party domain's noun, adjectives, relation phrases and prompt
description come from its file (docs/domains.md §1), and CLEVR's prompts stay exactly what the benchmark holds."""

from __future__ import annotations

import hashlib
import json

import pytest

from logicval_hf.benchmark.sampler import cached_benchmark
from logicval_hf.contract.compact_prompt import compact_prompt
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import (
    VerbaliseError,
    constraint_text,
    domain_description,
    full_prompt,
    noun_phrase,
    spec_subquestions,
)

GARDEN = {
    "name": "garden", "prompt_description": "A flower bed seen from above. {attributes}",
    "attributes": {"plant": ["rose", "tulip", "iris"], "size": ["tall", "short"], "color": ["red", "white"]},
    "relations": {
        "bigger": {"kind": "box_area", "sign": 1, "inverse": "tinier", "phrase": "bigger than"},
        "tinier": {"kind": "box_area", "sign": -1, "inverse": "bigger", "phrase": "tinier than"}},
    "theta": ["=", "!=", "<", "<=", ">", ">="], "n_range": [1, 6],
    "noun": "plant", "adjectives": ["size", "color"],
    "slot_props": {"shape": "plant", "color": "color", "material": "size"},
}
SHELF = {
    "name": "shelf", "description": "Books on a shelf, seen from the front.",
    "attributes": {"book": ["novel", "atlas"], "color": ["red", "blue"]},
    "derived": {"region": {"kind": "quadrant"}},
    "relations": {
        "left": {"kind": "centre_order", "axis": "x", "sign": -1, "inverse": "right", "phrase": "to the left of"},
        "right": {"kind": "centre_order", "axis": "x", "sign": 1, "inverse": "left", "phrase": "to the right of"}},
    "theta": ["="], "n_range": [1, 4], "noun": "book",
}


def lit(prop, value, negated=False):
    return {"prop": prop, "value": value, "negated": negated}


@pytest.fixture
def garden(tmp_path):
    path = tmp_path / "garden.json"
    path.write_text(json.dumps(GARDEN))
    return str(path)


def garden_spec(path):
    return Spec.from_dict({"domain": path, "n": 4, "constraints": [
        {"template": "C4/pair_2prop_rel", "params": {
            "A1": lit("color", "red"), "A2": lit("size", "tall"), "B1": lit("plant", "tulip"),
            "B2": lit("color", "white"), "R1": {"rel": "bigger", "negated": False}}},
        {"template": "C8/1prop_exact", "params": {"A1": lit("plant", "rose"), "K": 2}},
        {"template": "C6/1prop", "params": {"A1": lit("size", "short"), "R1": {"rel": "tinier", "negated": False}}},
    ]}, allowed_m=None)


def test_a_domain_files_noun_adjectives_and_phrases_make_its_sentences(garden):
    spec = garden_spec(garden)
    pair, count, _ = spec.constraints
    # the file's adjective order (size before colour), its noun (plant) and its phrase ("bigger than")
    assert constraint_text(pair, 4) == "There is a tall red object that is bigger than a white tulip."
    assert constraint_text(count, 4) == "The scene contains exactly 2 roses."
    assert noun_phrase([pair.params["B1"], pair.params["A1"], pair.params["A2"]], domain=spec.domain) == \
        "tall red tulip"
    # the shipped domains' words know neither this noun nor this relation
    assert noun_phrase([pair.params["A1"], pair.params["A2"]]) == "red tall object"
    with pytest.raises(VerbaliseError, match="bigger"):
        constraint_text(pair, 4, domain=load_domain("coco"))


def test_a_domain_files_prompt_description_opens_its_full_prompt(garden):
    spec = garden_spec(garden)
    prompt = full_prompt(spec)
    first, second, *_ = prompt.split("\n")
    assert first == ("A flower bed seen from above. Every object has one plant (rose, tulip or iris), one size "
                     "(tall or short) and one color (red or white).")
    assert second.startswith("Generate an image of such a scene with exactly 4 objects.")
    assert "CLEVR" not in prompt and "tinier than all other objects" in prompt
    values = [q for q in spec_subquestions(spec) if q["type"] == "value"]
    assert values and values[0]["candidates"] == ["tall", "short"]


def test_without_a_prompt_description_the_description_and_vocabulary_open_the_prompt(tmp_path):
    path = tmp_path / "shelf.json"
    path.write_text(json.dumps(SHELF))
    text = domain_description(load_domain(str(path)))
    assert text == ("Books on a shelf, seen from the front. Every object has one book (novel or atlas) and one color "
                    "(red or blue). The image is divided into a 2 x 2 grid of four regions by its vertical and "
                    "horizontal midlines: the back-left region (r0), the back-right region (r1), the front-left "
                    "region (r2) and the front-right region (r3); back means the upper half of the image and front "
                    "the lower half.")
    without = dict(SHELF, relations={}, derived={})
    del without["description"]
    other = tmp_path / "bare.json"
    other.write_text(json.dumps(dict(without, name="bare")))
    assert domain_description(load_domain(str(other))) == (
        "The image shows a scene of objects. Every object has one book (novel or atlas) and one color (red or blue).")


def test_coco_prompts_describe_coco():
    spec = {"domain": "coco", "n": 2, "constraints": [
        {"template": "C8/1prop_exact", "params": {"A1": lit("class", "dog"), "K": 2}}]}
    prompt = full_prompt(spec)
    assert prompt.startswith("The image is a photograph of everyday objects. Every object has one class (person, ")
    assert "CLEVR" not in prompt and "exactly 2 dogs" in prompt


#: sha256 of every benchmark row's prompts, each constraint's texts and the sub-questions, as the benchmark was
#: published (recomputed from each row's spec): the verbaliser must keep CLEVR's text byte for byte
BENCHMARK_TEXT_SHA256 = "303f6c969577f1e16742a1b086a069fb0c3c7a430edb91a8dc39f97818b9c1d1"


def test_clevr_prompts_of_the_benchmark_are_unchanged():
    digest = hashlib.sha256()
    rows = cached_benchmark().all_rows()
    for row in rows:
        spec = Spec.from_dict(row["spec_json"])
        texts = [full_prompt(spec, r, w) for w in (False, True) for r in ("short", "long")]
        texts += [compact_prompt(spec)]
        texts += [constraint_text(c, spec.n, r) for c in spec.constraints for r in ("short", "long")]
        texts.append(json.dumps(spec_subquestions(spec), sort_keys=True))
        assert texts[0] == row["full_prompt_short"] and texts[3] == row["full_prompt_white_long"], row["id"]
        digest.update("\0".join(texts).encode())
    assert len(rows) == 509 and digest.hexdigest() == BENCHMARK_TEXT_SHA256
