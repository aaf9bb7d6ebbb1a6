"""The checked-in ASP files are what the compiler produces, and the parametric template programs agree
with the instantiated rules the solver uses."""

import random

import pytest

from helpers import CATALOG, random_scene, violations
from logicval_hf.asp.encoding import compile_constraint, parameter_facts, scene_facts, vocabulary_program
from logicval_hf.contract.params import random_constraint
from logicval_hf.asp.programs import read_program, template_file


@pytest.mark.parametrize("cls", CATALOG.classes)
def test_template_files_are_up_to_date(cls):
    assert read_program(f"templates/{cls}.lp") == template_file(cls), "run `logicval asp --write-templates asp`"


def test_vocabulary_file_is_up_to_date():
    assert read_program("clevr_vocabulary.lp") == vocabulary_program(CATALOG.domain)


def test_vocabulary_comes_from_the_domain_block():
    from logicval_hf.contract.catalog import Domain

    other = Domain.from_dict({"color": ["orange"], "class": ["dog", "cat"], "region": ["r0", "r1", "r2", "r3"],
                              "relations": ["left", "right"], "theta": ["="], "n_range": [1, 4]})
    text = vocabulary_program(other)
    assert "property(class,dog)." in text and "property(color,orange)." in text and "red" not in text
    assert "axis_relation(x,left,right)." in text and "behind" not in text


@pytest.mark.slow
def test_parametric_templates_agree_with_instantiated_rules():
    rng = random.Random(7)
    params = read_program("params.lp")
    vocab = vocabulary_program(CATALOG.domain)
    templates = "".join(read_program(f"templates/{c}.lp") for c in CATALOG.classes)
    for tid in sorted(CATALOG.templates):
        for _ in range(6):
            n = rng.randint(3, 9)
            cons = random_constraint(tid, n, rng)
            scene = random_scene(rng, rng.randint(0, 7), grid=rng.choice([None, 3]))
            facts = scene_facts(scene)
            inst = violations(vocab + facts + compile_constraint(cons, 0) + "#defined violated/1.")
            para = violations(vocab + params + templates + facts + parameter_facts(cons, 0))
            assert inst == para, (tid, cons.to_dict(), scene.to_dict())


def test_rules_read_like_the_paper():
    cons = random_constraint("C3/1prop", 5, random.Random(0))
    text = compile_constraint(cons, 2)
    assert text.splitlines()[1].startswith("violated(2) :- object(X), hasProperty(X,")
    assert "not hasProperty(X," in text
