"""Open attributes: free-text values (the ``text`` domain's line text), folded as GIR-Bench folds text, through
specs, scenes, the solver, the verifier, the verbaliser and repairs."""

from __future__ import annotations

import json

import pytest

import logicval_hf as lv
from logicval_hf.contract.domain import Domain, load_domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import constraint_text
from logicval_hf.errors import SceneError, SpecError
from logicval_hf.repairs.api import repair


def t(value, negated=False):
    return {"prop": "text", "value": value, "negated": negated}


def spec(*constraints):
    return {"domain": "text", "constraints": list(constraints)}


def rel(a, r, b):
    return {"template": "C4/pair_rel", "params": {"A1": t(a), "B1": t(b), "R1": {"rel": r, "negated": False}}}


def count(a, theta, k):
    return {"template": "X1/count_cmp", "params": {"A1": t(a), "T": theta, "K": k}}


def scene(*lines, size=(400, 300)):
    return {"domain": "text", "image_size": list(size),
            "objects": [{"text": text, "bbox": list(box), "score": 0.9} for text, box in lines]}


def test_the_text_domain_has_one_open_attribute_and_the_box_relations():
    dom = load_domain("text")
    assert dom.attributes == {"text": ()} and dom.is_open("text") and not dom.ordered
    assert {"left", "above", "inside"} <= set(dom.relations)
    assert dom.canonical_value("text", "  Grand  Opening-SALE! ") == "grand openingsale"
    assert not load_domain("coco").is_open("class")


def test_spec_values_are_stored_folded_and_a_text_that_folds_to_nothing_is_refused():
    s = Spec.from_dict(spec(rel("SALE!", "above", "Today")))
    assert [s.constraints[0].params[k].value for k in ("A1", "B1")] == ["sale", "today"]
    with pytest.raises(SpecError, match=r"params.A1.value: '\?\?!' is not a text: give a text with a letter"):
        Spec.from_dict(spec(count("??!", "=", 1)))
    with pytest.raises(SpecError, match=r"params\.A1\.value: 7 is not a text"):
        Spec.from_dict(spec(count(7, "=", 1)))


def test_slot_rules_never_call_free_text_covered_or_equivalent():
    # C2/2prop_or needs the two literals not to cover every value: two texts never do
    Spec.from_dict(spec({"template": "X1/count_or_cmp", "params": {"A1": t("a"), "A2": t("b"), "T": ">=", "K": 1}}))
    with pytest.raises(SpecError, match="same literal"):
        Spec.from_dict(spec({"template": "X1/count_or_cmp", "params": {"A1": t("A"), "A2": t("a!"), "T": ">=",
                                                                       "K": 1}}))


def test_scenes_fold_their_text_and_refuse_a_non_string():
    sc = Scene.from_dict(scene(("50% OFF!", (10, 10, 100, 40))))
    assert sc.objects[0]["text"] == "50 off"
    with pytest.raises(SceneError, match=r"objects\[0\]\.text: 3 is not a text"):
        Scene.from_dict({"domain": "text", "image_size": [100, 100], "objects": [{"text": 3, "bbox": [1, 1, 9, 9]}]})


def test_the_solver_labels_text_specs_and_its_witness_verifies():
    sat = spec(rel("sale", "above", "today"), count("sale", "=", 1))
    r = lv.solve(sat)
    assert r.label == "SAT" and lv.verify(sat, r.witness).ok
    assert {o["text"] for o in r.witness.objects} >= {"sale", "today"}
    unsat = spec(rel("sale", "above", "today"), rel("sale", "below", "today"), count("sale", "=", 1),
                 count("today", "=", 1))
    assert lv.solve(unsat).label == "UNSAT"
    # "exactly two lines": every line is some text; 'other' stands for the texts the spec does not name
    two = spec({"template": "X1/count_cmp", "params": {"A1": t("sale", negated=False), "T": "=", "K": 1}},
               {"template": "X1/count_or_cmp", "params": {"A1": t("sale"), "A2": t("today"), "T": "=", "K": 2}})
    assert lv.solve(two).label == "SAT"


def test_verification_reads_the_scene_text_folded():
    s = spec(rel("SALE", "above", "TODAY"))
    good = scene(("Sale", (100, 20, 300, 80)), ("today!", (100, 150, 300, 210)))
    swapped = scene(("Sale", (100, 150, 300, 210)), ("today!", (100, 20, 300, 80)))
    assert lv.verify(s, good).ok and not lv.verify(s, swapped).ok
    assert lv.verify_many([(s, good), (s, swapped)]) == [lv.verify(s, good), lv.verify(s, swapped)]


def test_the_verbaliser_says_lines_reading_a_text():
    s = Spec.from_dict(spec(rel("sale", "above", "today"), count("sale", "=", 1)))
    assert constraint_text(s.constraints[0]) == 'There is a line reading "sale" that is above a line reading "today".'
    assert constraint_text(s.constraints[1]) == 'The number of lines reading "sale" is equal to 1.'


def test_repair_names_the_text_to_change():
    s = spec(rel("SALE", "above", "TODAY"))
    bad = scene(("SAEL", (100, 20, 300, 80)), ("TODAY", (100, 150, 300, 210)))
    r = repair(s, bad)
    assert r.cost == 1 and [(e.kind, e.attribute, e.old, e.new) for e in r.edits] == [("set", "text", "sael", "sale")]
    assert r.instructions == ('Change the line reading "sael" to read "sale".',)
    assert lv.verify(s, r.scene).ok


def test_a_domain_file_declares_open_attributes_and_phrases_checked(tmp_path):
    block = json.loads(json.dumps({"name": "notes", "attributes": {"text": [], "color": ["red"]},
                                   "open_attributes": {"text": "gir-bench"}, "relations": {}, "theta": ["="],
                                   "n_range": None}))
    assert Domain.from_dict(block).is_open("text")
    with pytest.raises(SpecError, match=r"open_attributes\.color: must be an attribute whose value list is empty"):
        Domain.from_dict({**block, "open_attributes": {"color": "gir-bench"}})
    with pytest.raises(SpecError, match="'upper' is not a fold"):
        Domain.from_dict({**block, "open_attributes": {"text": "upper"}})
    with pytest.raises(SpecError, match=r"attribute_phrases\.text"):
        Domain.from_dict({**block, "attribute_phrases": {"text": {"phrase": "reading"}}})
