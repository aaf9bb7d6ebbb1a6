"""What the ``vlm`` backend sends and how it reads what comes back, without a server: the JSON schema built per
domain, the sent image's size (Qwen-VL's resize rule), both box conventions mapped to the image's pixels, the
tolerant parse and the strict vocabulary."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.contract.domain import Domain, load_domain
from logicval_hf.perception.vlm.answer import AnswerError, parse_json, read_objects
from logicval_hf.perception.vlm.request import answer_schema, fit_size, instruction, response_format

CLEVR, COCO = load_domain("clevr"), load_domain("coco")


def read(text: str, domain: Domain = CLEVR, boxes: str = "pixels", seen=(480, 320), image=(480, 320), **kw):
    return read_objects(text, domain, boxes=boxes, seen=seen, image=image, max_objects=kw.pop("max_objects", 64), **kw)


def obj(bbox, **attrs) -> dict:
    return {"color": "red", "shape": "cube", "material": "metal", **attrs, "bbox": bbox}


# ---- the schema and the instruction ------------------------------------------------------------------------
@pytest.mark.parametrize("domain", [CLEVR, COCO])
def test_the_schema_is_built_from_the_domain(domain, tmp_path):
    schema = answer_schema(domain)
    item = schema["properties"]["objects"]["items"]
    assert schema["required"] == ["objects"] and schema["additionalProperties"] is False
    assert item["required"] == [*domain.perceived_attributes, "bbox"] and item["additionalProperties"] is False
    for a in domain.perceived_attributes:
        assert item["properties"][a] == {"type": "string", "enum": list(domain.attributes[a])}
    assert item["properties"]["bbox"] == {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}
    assert "region" not in item["properties"] and "rank" not in item["properties"]  # derived, never asked
    fmt = response_format("json_schema", domain)
    assert fmt == {"type": "json_schema", "json_schema": {"name": "scene_graph", "schema": schema, "strict": True}}
    assert response_format("json_object", domain) == {"type": "json_object"} and response_format("none", domain) is None
    text = instruction(domain, "norm1000", (100, 50))
    assert all(f"- {a}: {', '.join(domain.attributes[a])}" in text for a in domain.perceived_attributes)
    assert "normalised to 0-1000" in text and "100x50" not in text
    assert "in pixels of this 100x50 image" in instruction(domain, "pixels", (100, 50))


def test_a_domain_file_of_ones_own_gets_its_own_schema(tmp_path):
    block = json.loads(json.dumps({
        "name": "fruit", "attributes": {"kind": ["apple", "pear"], "ripeness": ["green", "ripe"]},
        "relations": {"left": {"kind": "box_offset", "axis": "x", "sign": -1, "inverse": "right", "margin": 0.1},
                      "right": {"kind": "box_offset", "axis": "x", "sign": 1, "inverse": "left", "margin": 0.1}},
        "theta": ["="], "n_range": [1, 4]}))
    path = tmp_path / "fruit.json"
    path.write_text(json.dumps(block))
    fruit = load_domain(str(path))
    item = answer_schema(fruit)["properties"]["objects"]["items"]
    assert item["properties"]["kind"]["enum"] == ["apple", "pear"] and item["required"] == ["kind", "ripeness", "bbox"]
    scene = read('{"objects": [{"kind": "pear", "ripeness": "ripe", "bbox": [1, 2, 30, 40]}]}', fruit)
    assert scene.domain == fruit and scene.objects[0].attributes == {"kind": "pear", "ripeness": "ripe"}


# ---- the sent image's size -----------------------------------------------------------------------------------
@pytest.mark.parametrize("size, args, want", [
    ((480, 320), (1, None, None), (480, 320)),  # as it is
    ((480, 320), (28, None, None), (476, 308)),  # Qwen2.5-VL's patch grid: 17 x 11 patches of 28
    ((512, 512), (28, None, None), (504, 504)),
    ((1024, 1024), (28, None, 512 * 28 * 28), (616, 616)),  # downscaled into max_pixels, still on the grid
    ((40, 30), (28, 56 * 56, None), (84, 56)),  # upscaled to min_pixels
    ((10, 10), (28, None, None), (28, 28)),  # never below one patch
])
def test_the_sent_size_follows_qwens_resize_rule(size, args, want):
    assert fit_size(*size, *args) == want


@settings(max_examples=200, deadline=None)
@given(st.integers(8, 4000), st.integers(8, 4000), st.sampled_from([1, 14, 16, 28, 32]),
       st.sampled_from([None, 256 * 28 * 28, 1280 * 28 * 28]))
def test_a_resized_image_is_left_alone_by_a_second_resize(w, h, f, max_pixels):
    """The point of sending the image resized: the server's own resize (the same rule) keeps it as sent, so pixel
    boxes are in the sent image's pixels."""
    sent = fit_size(w, h, f, None, max_pixels)
    assert sent[0] % f == 0 and sent[1] % f == 0
    if max_pixels is not None and sent[0] * sent[1] > f * f:
        assert sent[0] * sent[1] <= max_pixels
    assert fit_size(*sent, f, None, max_pixels) == sent


# ---- boxes in both conventions -------------------------------------------------------------------------------
def test_pixel_boxes_are_in_the_pixels_of_the_image_the_model_saw():
    # a 480x320 image sent as 476x308 (multiple_of=28): the model's box [119, 77, 238, 154] is a quarter of it
    s = read(json.dumps({"objects": [obj([119, 77, 238, 154])]}), seen=(476, 308), image=(480, 320))
    assert s.objects[0].bbox == (120.0, 80.0, 240.0, 160.0) and s.image_size == (480, 320)
    s = read(json.dumps({"objects": [obj([119, 77, 238, 154])]}), seen=(476, 308), image=(952, 616))
    assert s.objects[0].bbox == (238.0, 154.0, 476.0, 308.0)


def test_normalised_boxes_are_thousandths_of_the_image():
    s = read(json.dumps({"objects": [obj([250, 500, 750, 1000])]}), boxes="norm1000", seen=(476, 308),
             image=(480, 320))
    assert s.objects[0].bbox == (120.0, 160.0, 360.0, 320.0)  # the sent size does not matter
    s = read(json.dumps({"objects": [obj([1, 1, 999, 3])]}), boxes="norm1000", image=(333, 333))
    assert s.objects[0].bbox == (0.333, 0.333, 332.667, 0.999)  # rounded to a thousandth of a pixel


@settings(max_examples=200, deadline=None)
@given(st.integers(16, 3000), st.integers(16, 3000), st.sampled_from(["pixels", "norm1000"]),
       st.sampled_from([1, 28]), st.data())
def test_boxes_come_back_where_the_model_put_them(w, h, boxes, f, data):
    """A box at fractions (a, b, c, d) of the image, written in either convention for the size the model saw, is
    read at the same fractions of the original image."""
    seen = fit_size(w, h, f)
    a, b = data.draw(st.floats(0, 0.45)), data.draw(st.floats(0, 0.45))
    c, d = data.draw(st.floats(0.55, 1)), data.draw(st.floats(0.55, 1))
    span = seen if boxes == "pixels" else (1000, 1000)
    raw = [a * span[0], b * span[1], c * span[0], d * span[1]]
    got = read(json.dumps({"objects": [obj(raw)]}), boxes=boxes, seen=seen, image=(w, h)).objects[0].bbox
    assert got == pytest.approx((a * w, b * h, c * w, d * h), abs=1e-3 + 1e-9 * max(w, h))


@pytest.mark.parametrize("boxes, bbox, seen, msg", [
    ("pixels", [500, 10, 540, 50], (480, 320), "lies outside the 480x320 image (pixels boxes): its centre (520, 30)"),
    ("pixels", [-90, 10, -10, 50], (480, 320), "lies outside the 480x320 image"),
    ("norm1000", [900, 990, 1100, 1200], (480, 320), "lies outside the 0-1000 frame (norm1000 boxes)"),
    ("pixels", [50, 10, 40, 50], (480, 320), "is empty or reversed (needs x1 > x0 and y1 > y0)"),
    ("pixels", [10, 10, 10, 50], (480, 320), "is empty or reversed"),
    ("pixels", [10, 10, 50], (480, 320), "must be four numbers [x0, y0, x1, y1], got [10, 10, 50]"),
    ("pixels", [10, "10", 50, 60], (480, 320), "must be four numbers"),
    ("pixels", [10, 10, 50, float("nan")], (480, 320), "must be four numbers"),
])
def test_a_box_outside_the_image_or_not_a_box_is_an_error(boxes, bbox, seen, msg):
    with pytest.raises(AnswerError) as e:
        read(json.dumps({"objects": [obj([1, 1, 20, 20]), obj(bbox)]}), boxes=boxes, seen=seen)
    assert str(e.value).startswith("vlm answer: objects[1].bbox") and msg in str(e.value)


def test_a_box_overhanging_an_edge_is_kept_as_the_scene_contract_allows():
    s = read(json.dumps({"objects": [obj([-10, 300, 30, 330])]}))
    assert s.objects[0].bbox == (-10.0, 300.0, 30.0, 330.0)


# ---- the tolerant parse and the strict vocabulary ------------------------------------------------------------
GOOD = {"objects": [obj([10, 20, 60, 80], color="blue"), obj([200, 100, 260, 150], shape="sphere")]}


@pytest.mark.parametrize("text", [
    json.dumps(GOOD),
    "```json\n" + json.dumps(GOOD) + "\n```",
    "Sure! Here is the scene:\n```\n" + json.dumps(GOOD, indent=2) + "\n```\nAnything else?",
    "The objects are " + json.dumps(GOOD) + " as requested.",
    json.dumps(GOOD["objects"]),  # a bare list
    json.dumps({"objects": [{**{k: v for k, v in o.items() if k != "bbox"}, "bbox_2d": o["bbox"]}
                            for o in GOOD["objects"]]}),  # Qwen-VL's own box key
    json.dumps({"objects": [{**o, "color": o["color"].upper() + " ", "label": "thing", "confidence": 0.9}
                            for o in GOOD["objects"]]}),  # letter case, spaces, extra keys
])
def test_the_parse_tolerates_what_servers_wrap_around_json(text):
    s = read(text)
    assert [o.attributes for o in s.objects] == [{"color": "blue", "shape": "cube", "material": "metal"},
                                                 {"color": "red", "shape": "sphere", "material": "metal"}]
    assert s.objects[1].bbox == (200.0, 100.0, 260.0, 150.0)


@pytest.mark.parametrize("text, msg", [
    ("", "malformed JSON: Expecting value at character 0"),
    ("I see a red cube.", "malformed JSON"),
    (json.dumps(GOOD)[:-3], "malformed JSON"),  # an object inside a cut answer is not read as the answer
    ('{"scene": []}', "the JSON has no 'objects' list (keys ['scene'])"),
    ('{"objects": {"a": 1}}', "'objects' must be a list, got dict"),
    ('{"objects": [3]}', "objects[0] must be a JSON object, got int"),
    ('{"objects": [{"color": "red", "shape": "cube", "bbox": [1, 2, 3, 4]}]}', "objects[0] has no 'material'"),
    ('{"objects": [{"color": "red", "shape": "cube", "material": "metal"}]}', "objects[0] has no 'bbox'"),
    (json.dumps({"objects": [obj([1, 2, 3, 4], color="crimson")]}),
     "objects[0].color 'crimson' is outside the vocabulary: expected one of ['gray', 'red', 'blue', 'green'"),
    (json.dumps({"objects": [obj([1, 2, 3, 4], material=None)]}), "objects[0].material None is outside the vocabulary"),
    (json.dumps({"objects": [obj([1, 2, 3, 4])] * 5}), "5 objects, more than max_objects (4)"),
])
def test_anything_else_is_an_error_naming_what_was_wrong(text, msg):
    with pytest.raises(AnswerError) as e:
        read(text, max_objects=4)
    assert str(e.value).startswith("vlm answer: ") and msg in str(e.value) and "\n" not in str(e.value)


def test_a_coco_value_outside_the_vocabulary_suggests_the_closest():
    with pytest.raises(AnswerError, match=r"objects\[0\]\.class 'dogg' is outside the vocabulary: did you mean 'dog'"):
        read(json.dumps({"objects": [{"class": "dogg", "color": "red", "bbox": [1, 2, 3, 4]}]}), COCO)


def test_a_cut_answer_says_so():
    with pytest.raises(AnswerError, match=r"malformed JSON \(the answer was cut off at max_tokens\)"):
        read(json.dumps(GOOD)[:40], finish_reason="length")


def test_parse_json_reads_the_first_usable_value():
    assert parse_json('noise [1, 2] {"objects": []} tail') == {"objects": []}
    assert parse_json("[]") == []
    with pytest.raises(json.JSONDecodeError):
        parse_json("{" * 100)
    assert len(parse_json("{\"objects\": [" + ", ".join(["{}"] * 50) + "]}")["objects"]) == 50


def test_the_docs_table_names_every_setting():
    from pathlib import Path

    from logicval_hf.perception.vlm.settings import SETTINGS

    text = (Path(__file__).resolve().parents[2] / "docs" / "vlm.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `")}
    assert set(SETTINGS) <= rows, set(SETTINGS) - rows
