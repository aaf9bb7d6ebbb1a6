"""Domains as data: the shipped domain files, their geometry, and clear errors for bad ones."""

from __future__ import annotations

import json

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import domain_names, load_domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spatial import normalised_offset, score_ranks
from logicval_hf.errors import SceneError, SpecError


def test_shipped_domains():
    assert domain_names() == ["clevr", "coco", "gir", "text"]
    coco = load_domain("coco")
    assert len(coco.values("class")) == 80 and "potted plant" in coco.values("class")
    assert coco.values("color") == ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black",
                                    "white")
    assert coco.open_size and coco.numeric_attributes == ("rank",)
    assert coco.constant("legs")["dog"] == 4


def test_clevr_domain_file_is_the_catalog_block():
    """The CLEVR domain file declares exactly the contract's vocabulary (catalog.json's domain block)."""
    block = json.loads(load_catalog().raw and json.dumps(load_catalog().raw["domain"]))
    clevr = load_domain("clevr")
    assert load_catalog().domain is clevr
    for attr in ("color", "shape", "material", "region"):
        assert list(clevr.values(attr)) == block[attr]
    assert list(clevr.relations) == block["relations"]
    assert [clevr.n_min, clevr.n_max] == block["n_range"]
    assert clevr.perceived_attributes == ("color", "shape", "material")


def test_unknown_domain_suggests_a_name():
    with pytest.raises(SpecError, match="did you mean 'coco'"):
        load_domain("coc")


@pytest.mark.parametrize("change, match", [
    ({"relations": {"left": {"kind": "centre_order", "axis": "x", "sign": -1, "inverse": "up"}}}, "inverse"),
    ({"relations": {"left": {"kind": "teleport", "inverse": "left"}}}, "teleport"),
    ({"derived": {"rank": {"kind": "score_rank", "within": "species"}}}, "species"),
    ({"colour": []}, "unknown keys"),
])
def test_bad_domain_files_name_the_field(tmp_path, change, match):
    base = json.loads(json.dumps({"name": "toy", "attributes": {"color": ["red"]}, "relations": {}, "theta": ["="],
                                  "n_range": [1, 3]}))
    path = tmp_path / "toy.json"
    path.write_text(json.dumps({**base, **change}))
    with pytest.raises(SpecError, match=match) as e:
        load_domain(path)
    assert str(path) in str(e.value)


def test_a_custom_domain_file_loads(tmp_path):
    path = tmp_path / "toy.json"
    path.write_text(json.dumps({"name": "toy", "attributes": {"kind": ["a", "b"]}, "relations": {
        "smaller": {"kind": "box_area", "sign": -1, "inverse": "larger"},
        "larger": {"kind": "box_area", "sign": 1, "inverse": "smaller"}}, "theta": ["=", ">="], "n_range": None}))
    toy = load_domain(str(path))
    assert toy.open_size and toy.canonical_relations() == [("smaller", "larger")]
    assert toy.holds("larger", (0, 0, 10, 10), (0, 0, 5, 5)) and not toy.holds("larger", (0, 0, 5, 5), (0, 0, 5, 5))


# ---- COCO geometry: GenEval's rule, stated independently here --------------------------------------------------
def geneval_relations(a, b, margin=0.1):
    """From the description: offset of centres, each axis reduced by margin x (sum of both sizes) towards 0,
    divided by the norm of the raw offset; thresholds at +-0.5."""
    ca = ((a[0] + a[2]) / 2, (a[1] + a[3]) / 2)
    cb = ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
    off = (ca[0] - cb[0], ca[1] - cb[1])
    dims = ((a[2] - a[0]) + (b[2] - b[0]), (a[3] - a[1]) + (b[3] - b[1]))
    red = []
    for o, d in zip(off, dims, strict=False):
        m = max(abs(o) - margin * d, 0.0)
        red.append(m if o > 0 else -m if o < 0 else 0.0)
    if all(abs(r) < 1e-3 for r in red):
        return set()
    norm = (off[0] ** 2 + off[1] ** 2) ** 0.5
    x, y = red[0] / norm, red[1] / norm
    return {name for name, ok in (("left", x < -0.5), ("right", x > 0.5), ("above", y < -0.5), ("below", y > 0.5))
            if ok}


box = st.tuples(st.floats(0, 500), st.floats(0, 500), st.floats(1, 200), st.floats(1, 200)).map(
    lambda t: (t[0], t[1], t[0] + t[2], t[1] + t[3]))


@settings(max_examples=examples(300), deadline=None)
@given(box, box)
def test_coco_relations_follow_genevals_rule(a, b):
    coco = load_domain("coco")
    got = {r for r in ("left", "right", "above", "below") if coco.holds(r, a, b)}
    assert got == geneval_relations(a, b)
    # inverses are exact, so the verifier may derive them
    assert all(coco.holds(r, a, b) == coco.holds(coco.rules[r].inverse, b, a) for r in coco.relations)


def test_offset_of_touching_boxes_is_no_relation():
    assert normalised_offset((0, 0, 10, 10), (0, 0, 10, 10), 0.1) == (0.0, 0.0)
    # side by side but overlapping more than the margin allows: nothing on x
    assert load_domain("coco").holds("left", (0, 0, 100, 100), (30, 0, 130, 100)) is False
    assert load_domain("coco").holds("left", (0, 0, 100, 100), (50, 0, 150, 100)) is True


def test_score_ranks_per_group():
    assert score_ranks(["dog", "cat", "dog", "dog"], [0.5, 0.9, 0.8, None]) == [2, 1, 1, 3]
    assert score_ranks(["a", "a"], [0.5, 0.5]) == [1, 2]  # ties keep input order


# ---- scenes of a domain ------------------------------------------------------------------------------------------
COCO_SCENE = {"image_size": [512, 512], "domain": "coco", "objects": [
    {"class": "dog", "color": "brown", "bbox": [10, 10, 110, 110], "score": 0.93},
    {"class": "potted plant", "color": "green", "bbox": [300, 20, 400, 120], "score": 0.5}]}


def test_coco_scene_round_trip_and_derived_facts():
    scene = Scene.from_dict(COCO_SCENE)
    assert scene.domain.name == "coco" and scene.to_dict() == COCO_SCENE
    assert scene.attribute(0, "rank") == 1 and scene.holds("left", 0, 1) and scene.holds("right", 1, 0)
    assert [o.attributes["class"] for o in scene.above(0.6)] == ["dog"]


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d["objects"][0].update({"class": "unicorn"}), r"objects\[0\]\.class: 'unicorn' is not a class"),
    (lambda d: d["objects"][1].update({"color": "teal"}), r"objects\[1\]\.color: 'teal' is not a color"),
    (lambda d: d.update({"domain": "cocoa"}), "did you mean 'coco'"),
    (lambda d: d["objects"][0].pop("class"), "missing 'class'"),
])
def test_bad_coco_scenes(mutate, match):
    d = json.loads(json.dumps(COCO_SCENE))
    mutate(d)
    with pytest.raises(SceneError, match=match):
        Scene.from_dict(d)


def test_scene_of_another_domain_is_refused():
    with pytest.raises(SceneError, match=r"domain 'coco'.*'clevr' is expected"):
        Scene.from_dict(COCO_SCENE, load_domain("clevr"))
