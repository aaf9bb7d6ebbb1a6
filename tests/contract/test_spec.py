import json
import random

import pytest
from helpers import CATALOG, attr, examples, rel
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf import Constraint, Spec
from logicval_hf.contract.params import random_constraint

TEMPLATE_IDS = sorted(CATALOG.templates)


def spec1(template, params, n=5):
    return {"n": n, "constraints": [{"template": template, "params": params}]}


class TestRoundTrip:
    @given(st.sampled_from(TEMPLATE_IDS), st.integers(3, 9), st.integers(0, 2**32 - 1))
    @settings(max_examples=examples(300), derandomize=True, deadline=None)
    def test_random_constraints_round_trip(self, tid, n, seed):
        c = random_constraint(tid, n, random.Random(seed))
        d = c.to_dict()
        assert Constraint.from_dict(d, n=n).to_dict() == d
        assert list(d["params"]) == [s.name for s in CATALOG.template(tid).slots]
        spec = Spec.from_dict({"n": n, "constraints": [d]})
        assert Spec.from_dict(json.loads(spec.to_json())) == spec

    def test_json_string_accepted(self):
        s = spec1("C1/1prop", {"A1": attr("color", "red")})
        assert Spec.from_dict(json.dumps(s)).to_dict() == s


class TestValidation:
    """Every slot rule of docs/spec_language.md §3.3 gives a ValueError naming the field."""

    def bad(self, spec, match, **kw):
        with pytest.raises(ValueError, match=match):
            Spec.from_dict(spec, **kw)

    def test_unknown_template(self):
        self.bad(spec1("C1/onepropp", {}), r"constraints\[0\]\.template: unknown template 'C1/onepropp'")

    def test_n_out_of_range(self):
        self.bad(spec1("C1/1prop", {"A1": attr("color", "red")}, n=2), r"spec\.n: 2 is outside 3\.\.9")
        self.bad(spec1("C1/1prop", {"A1": attr("color", "red")}, n=10), r"spec\.n")
        self.bad(spec1("C1/1prop", {"A1": attr("color", "red")}, n="5"), r"spec\.n: must be an integer")
        self.bad(spec1("C1/1prop", {"A1": attr("color", "red")}, n=True), r"spec\.n: must be an integer")

    def test_wrong_slot_type(self):
        self.bad(spec1("C1/1prop", {"A1": "red"}), r"params\.A1: an attribute literal must be a JSON object")
        self.bad(spec1("C4/pair_rel", {"A1": attr("color", "red"), "B1": attr("shape", "cube"),
                                       "R1": attr("color", "red")}),
                 r"params\.R1: a relation literal")
        self.bad(spec1("C8/1prop_exact", {"A1": attr("color", "red"), "K": "2"}),
                 r"params\.K: count must be an integer")
        self.bad(spec1("C8/1prop_exact", {"A1": attr("color", "red"), "K": 2.0}), r"params\.K")
        self.bad(spec1("C9/1prop_cmp", {"A1": attr("color", "red"), "B1": attr("shape", "cube"), "T": "=="}),
                 r"params\.T: comparator '=='")

    def test_bad_values(self):
        self.bad(spec1("C1/1prop", {"A1": attr("color", "pink")}), r"A1\.value: 'pink' is not a color")
        self.bad(spec1("C1/1prop", {"A1": attr("region", "r0")}), r"A1\.prop: 'region' is not allowed")
        self.bad(spec1("C1/1prop", {"A1": attr("color", "red", True)}), r"A1\.negated: slot A1 has fixed polarity")
        self.bad(spec1("C1/1prop", {"A1": {"prop": "color", "value": "red"}}), r"A1: .*missing \['negated'\]")
        self.bad(spec1("C1/1prop", {"A1": attr("color", "red"), "A2": attr("shape", "cube")}), r"unknown keys \['A2'\]")
        self.bad(spec1("C4/pair_rel", {"A1": attr("color", "red"), "B1": attr("shape", "cube"), "R1": rel("above")}),
                 r"R1\.rel: 'above' is not a relation")

    def test_k_out_of_range(self):
        # tautology overflow: max n-1
        self.bad(spec1("C8/1prop_atmost", {"A1": attr("color", "red"), "K": 5}, n=5),
                 r"params\.K: count 5 is out of range 1\.\.4 at n=5")
        # unsat overflow: allowed up to 9, not beyond
        Spec.from_dict(spec1("C8/1prop_atleast", {"A1": attr("color", "red"), "K": 9}, n=3))
        self.bad(spec1("C8/1prop_atleast", {"A1": attr("color", "red"), "K": 10}, n=3), r"params\.K")
        self.bad(spec1("C8/1prop_atleast", {"A1": attr("color", "red"), "K": 1}, n=3),
                 r"params\.K: count 1 is out of range 2")

    def test_classes_distinct(self):
        c = {"template": "C1/1prop", "params": {"A1": attr("color", "red")}}
        d = {"template": "C1/1prop_neg", "params": {"A1": attr("color", "red", True)}}
        e = {"template": "C2/1prop", "params": {"A1": attr("color", "red")}}
        self.bad({"n": 4, "constraints": [c, e, d]}, r"constraints\[2\]\.template: class C1 already used")

    def test_number_of_constraints(self):
        c = {"template": "C1/1prop", "params": {"A1": attr("color", "red")}}
        e = {"template": "C2/1prop", "params": {"A1": attr("color", "red")}}
        self.bad({"n": 4, "constraints": [c, e]}, r"2 constraints; a spec has 1 or 3 or 6")
        assert Spec.from_dict({"n": 4, "constraints": [c, e]}, allowed_m=None).m == 2
        self.bad({"n": 4, "constraints": []}, r"non-empty list")

    def test_spec_keys(self):
        self.bad({"n": 4, "constraint": []}, r"missing \['constraints'\]")
        self.bad("{not json", r"not valid JSON")

    @pytest.mark.parametrize("template,params,match", [
        ("C1/2prop", {"A1": attr("color", "red"), "A2": attr("color", "blue")}, "distinct_props"),
        ("C2/2prop_or", {"A1": attr("color", "red"), "A2": attr("color", "red")}, "distinct_literals"),
        ("C2/2prop_or", {"A1": attr("material", "metal"), "A2": attr("material", "rubber")}, "no_cover"),
        ("C4/pair_2rel", {"A1": attr("color", "red"), "B1": attr("shape", "cube"), "R1": rel("left"),
                          "R2": rel("right")},
         "different_axis"),
        ("C9/rel_rel", {"A1": attr("color", "red"), "D1": attr("shape", "cube"), "R1": rel("left"), "R2": rel("left"),
                        "T": "<"}, "distinct_values"),
        ("C9/2prop", {"A1": attr("color", "red"), "A2": attr("shape", "cube"), "B1": attr("shape", "cube"),
                      "B2": attr("color", "red"), "T": "<"}, "distinct_sets"),
        ("C7/propRel_neg", {"A1": attr("material", "metal"), "B1": attr("material", "rubber", True), "R1": rel("left")},
         "not_equivalent"),
        ("C9/1prop_neg", {"A1": attr("shape", "cube"), "B1": attr("shape", "cylinder", True), "T": "<="},
         "distinct_props_or_same_literal"),
    ])
    def test_slot_rules(self, template, params, match):
        self.bad(spec1(template, params), rf"params: slot rule {match}")

    def test_slot_rules_allow_the_legal_neighbours(self):
        Spec.from_dict(spec1("C9/1prop_neg", {"A1": attr("shape", "cube"), "B1": attr("shape", "cube", True),
                                              "T": "<="}))
        Spec.from_dict(spec1("C7/propRel_neg", {"A1": attr("material", "metal"), "B1": attr("material", "metal", True),
                                                "R1": rel("left")}))
        Spec.from_dict(spec1("C2/2prop_or", {"A1": attr("color", "red"), "A2": attr("color", "blue")}))
