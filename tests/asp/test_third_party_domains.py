"""Domains of one's own run through the same solver and verifier as the shipped ones (docs/domains.md §7): centre
orders with and without regions, a quadrant declared without its values, and names ASP cannot read refused when
the file is read, never by clingo."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest

import logicval_hf as lv
from logicval_hf.asp.programs import grounding_estimate
from logicval_hf.asp.solver import ISOLATE_ABOVE
from logicval_hf.cli.main import main
from logicval_hf.contract import reference
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SceneError, SpecError

ORDERS = {
    "left": {"kind": "centre_order", "axis": "x", "sign": -1, "inverse": "right", "phrase": "to the left of"},
    "right": {"kind": "centre_order", "axis": "x", "sign": 1, "inverse": "left", "phrase": "to the right of"},
    "front": {"kind": "centre_order", "axis": "y", "sign": 1, "inverse": "behind", "phrase": "in front of"},
    "behind": {"kind": "centre_order", "axis": "y", "sign": -1, "inverse": "front", "phrase": "behind"},
}
REGION = {"region": {"kind": "quadrant", "values": ["r0", "r1", "r2", "r3"]}}


def shelf(tmp_path, name="shelf", axes=("x", "y"), derived=None, **extra):
    """A domain file of books on shelves, with centre-order relations on ``axes``."""
    relations = {r: d for r, d in ORDERS.items() if d["axis"] in axes}
    doc = {"name": name, "description": "Books on a shelf, seen from the front.",
           "attributes": {"book": ["novel", "atlas"], "color": ["red", "blue"]}, "relations": relations,
           "theta": ["=", "!=", "<", "<=", ">", ">="], "n_range": [2, 5], "noun": "book", "adjectives": ["color"],
           "slot_props": {"shape": "book", "color": "color"}, **extra}
    if derived is not None:
        doc["derived"] = derived
        doc["slot_props"]["region"] = "region"
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def lit(prop, value, negated=False):
    return {"prop": prop, "value": value, "negated": negated}


def rel(name, negated=False):
    return {"rel": name, "negated": negated}


def pair_rel(a, b, r):
    return {"template": "C4/pair_rel", "params": {"A1": a, "B1": b, "R1": rel(r)}}


def exact(a, k):
    return {"template": "C8/1prop_exact", "params": {"A1": a, "K": k}}


def spec_in(path, n, *constraints):
    return {"domain": path, "n": n, "constraints": list(constraints)}


def _witness_verifies(spec):
    result = lv.solve(spec)
    assert result.satisfiable
    witness = result.witness
    assert witness.domain is load_domain(spec["domain"])
    assert lv.verify(spec, witness).ok
    assert lv.verify(spec, witness.to_json()).ok  # and through its JSON, which names the domain
    return witness


@pytest.mark.parametrize("axes", [("x", "y"), ("x",), ("y",)])
def test_centre_orders_without_regions_solve_and_their_witness_verifies(tmp_path, axes):
    path = shelf(tmp_path, f"shelf_{''.join(axes)}", axes=axes)
    r = "left" if "x" in axes else "behind"
    spec = spec_in(path, 3, pair_rel(lit("book", "novel"), lit("color", "red"), r), exact(lit("book", "atlas"), 2))
    witness = _witness_verifies(spec)
    assert witness.to_dict()["domain"] == str(Path(path).resolve())
    assert Scene.from_dict(witness.to_json()).domain is witness.domain  # its JSON reads back by itself
    assert sum(o["book"] == "atlas" for o in witness) == 2


@pytest.mark.parametrize("axes", [("x", "y"), ("x",)])
def test_centre_orders_with_regions_solve_and_their_witness_verifies(tmp_path, axes):
    path = shelf(tmp_path, f"shelf_r{''.join(axes)}", axes=axes, derived=REGION)
    spec = spec_in(path, 3, {"template": "C4/pair_rel_region", "params": {
        "A1": lit("book", "novel"), "G1": lit("region", "r2"), "B1": lit("color", "red"), "R1": rel("left")}})
    witness = _witness_verifies(spec)
    novels = [i for i, o in enumerate(witness) if o["book"] == "novel" and witness.region(i) == "r2"]
    reds = [j for j, o in enumerate(witness) if o["color"] == "red"]
    assert any(witness.holds("left", i, j) for i in novels for j in reds)


def test_a_quadrant_declared_without_values_is_solved_over_the_four_regions(tmp_path):
    path = shelf(tmp_path, "shelf_q", derived={"region": {"kind": "quadrant"}})
    spec = spec_in(path, 2, {"template": "C4/pair_rel_region", "params": {
        "A1": lit("book", "atlas"), "G1": lit("region", "r3"), "B1": lit("book", "novel"), "R1": rel("behind")}})
    witness = _witness_verifies(spec)
    assert "r3" in witness.regions() and set(witness.regions()) <= {"r0", "r1", "r2", "r3"}


def test_contradictory_orders_are_unsat_with_a_core(tmp_path):
    path = shelf(tmp_path)
    novel = lit("book", "novel")
    spec = spec_in(path, 2, exact(novel, 1), pair_rel(novel, novel, "left"))
    result = lv.solve(spec)
    assert result.label == "UNSAT" and result.core == (0, 1)


# ---- a differential check: labels against every scene of three objects ----------------------------------------
def _scenes(domain, n):
    """Every scene of n objects of the shelf domain without regions, up to the exact coordinates: every choice of
    values and of the two orders."""
    values = list(itertools.product(*(domain.values(a) for a in domain.perceived_attributes)))
    for objs in itertools.product(values, repeat=n):
        for xs in itertools.permutations(range(n)):
            for ys in itertools.permutations(range(n)):
                yield Scene((480, 320), tuple(
                    SceneObject(dict(zip(domain.perceived_attributes, objs[i], strict=True)),
                                (40 + 100 * xs[i], 20 + 80 * ys[i], 80 + 100 * xs[i], 60 + 80 * ys[i]))
                    for i in range(n)), domain)


def _random_constraint(rng, domain, n):
    a = lit(*rng.choice([(p, v) for p in domain.perceived_attributes for v in domain.values(p)]))
    b = lit(*rng.choice([(p, v) for p in domain.perceived_attributes for v in domain.values(p)]))
    r = rng.choice(domain.relations)
    return rng.choice([pair_rel(a, b, r), exact(a, rng.randint(1, n)),
                       {"template": "C3/1prop", "params": {"A1": a, "C1": b}}])


def test_labels_agree_with_a_search_over_every_scene(tmp_path):
    path = shelf(tmp_path, "shelf_diff")
    domain = load_domain(path)
    scenes = list(_scenes(domain, 3))
    rng = random.Random(20261207)
    labels = []
    for _ in range(40):
        raw = spec_in(path, 3, *(_random_constraint(rng, domain, 3) for _ in range(rng.randint(1, 3))))
        try:
            spec = Spec.from_dict(raw, allowed_m=None)
        except SpecError:  # a slot rule the random draw broke
            continue
        expected = any(not reference.violated(spec, s) for s in scenes)
        result = lv.solve(spec)
        assert result.satisfiable == expected, raw
        if result.satisfiable:
            assert not reference.violated(spec, result.witness)
        labels.append(result.label)
    assert len(labels) >= 20 and set(labels) == {"SAT", "UNSAT"}, labels


# ---- bad names are refused when the file is read ---------------------------------------------------------------
def test_upper_case_names_get_one_line_naming_the_file_not_a_grounding_error(tmp_path):
    path = tmp_path / "loud.json"
    doc = json.loads(Path(shelf(tmp_path)).read_text())
    doc["attributes"]["Color"] = doc["attributes"].pop("color")
    doc["adjectives"], doc["slot_props"] = ["Color"], {"shape": "book"}
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as e:
        lv.solve(spec_in(str(path), 2, exact(lit("book", "novel"), 1)))
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and "attributes.Color" in msg and "lowercase" in msg
    assert "grounding" not in msg


# ---- the CLI -----------------------------------------------------------------------------------------------------
def test_cli_solves_and_verifies_in_a_domain_file(tmp_path, capsys):
    path = shelf(tmp_path)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(spec_in(path, 3, pair_rel(lit("book", "novel"), lit("color", "red"), "behind"))))
    witness = tmp_path / "witness.json"
    assert main(["solve", str(spec), "--witness"]) == 0
    witness.write_text(capsys.readouterr().out)
    assert json.loads(witness.read_text())["domain"] == str(Path(path).resolve())
    assert main(["verify", str(spec), str(witness)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_cli_names_a_bad_domain_file_in_one_line(tmp_path, capsys):
    path = shelf(tmp_path, "shelf_bad", derived={"region": {"kind": "quadrant", "values": ["a", "b"]}})
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(spec_in(path, 3, exact(lit("book", "novel"), 1))))
    assert main(["solve", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "derived.region.values" in err and path in err


# ---- a spec in a domain file reads back from its JSON ----------------------------------------------------------
def test_a_spec_in_a_domain_file_round_trips_and_is_labelled_in_a_child_process(tmp_path):
    path = shelf(tmp_path, "shelf_big", n_range=[2, 13])
    raw = spec_in(path, 13, *({"template": "C6/1prop", "params": {"A1": lit("book", b), "R1": rel("left")}}
                              for b in ("novel", "atlas")))
    spec = Spec.from_dict(raw, allowed_m=None)
    assert spec.to_dict()["domain"] == str(Path(path).resolve())
    assert Spec.from_dict(spec.to_json(), allowed_m=None).domain is spec.domain
    assert grounding_estimate(spec) > ISOLATE_ABOVE  # labelled in a child process, which reads the spec's JSON
    result = lv.solve(raw, timeout=120)  # both leftmost: contradictory
    assert result.label == "UNSAT" and result.core == (0, 1)


def test_a_scene_names_its_domain_by_name_or_by_file(tmp_path):
    path = shelf(tmp_path, "shelf_named")
    spec = spec_in(path, 2, exact(lit("book", "novel"), 1))
    objs = [{"book": "novel", "color": "red", "bbox": [10, 10, 50, 50]},
            {"book": "atlas", "color": "red", "bbox": [100, 10, 150, 50]}]
    for named in ("shelf_named", path, os.path.relpath(path)):
        assert lv.verify(spec, {"image_size": [480, 320], "domain": named, "objects": objs}).ok, named
    with pytest.raises(SceneError, match="'coco'"):
        lv.verify(spec, {"image_size": [480, 320], "domain": "coco", "objects": objs})
