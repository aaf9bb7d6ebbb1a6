import json
import math

import pytest
from helpers import obj

from logicval_hf import Scene, SceneError

RED_CUBE = obj("red", "cube", "metal", 10, 10)


def one(o: dict) -> dict:
    """A 480x320 scene dict holding the one object ``o``."""
    return {"image_size": [480, 320], "objects": [o]}


def scene(*objects, size=(480, 320)):
    return Scene.from_dict({"image_size": list(size), "objects": list(objects)})


class TestScene:
    def test_round_trip(self):
        d = {"image_size": [480, 320], "objects": [obj("red", "cube", "metal", 100, 100),
                                                   obj("blue", "sphere", "rubber", 300, 250)]}
        s = Scene.from_dict(d)
        assert s.to_dict() == d
        assert Scene.from_dict(json.dumps(d)).to_dict() == d

    def test_optional_fields_round_trip(self):
        o = obj("red", "cube", "metal", 100, 100)
        o["score"] = 0.9
        o["probs"] = {"color": {"red": 0.8, "blue": 0.2}}
        s = scene(o)
        assert s.to_dict()["objects"][0] == o

    def test_regions_and_midlines(self):
        s = scene(obj("red", "cube", "metal", 100, 100), obj("red", "cube", "metal", 240, 100),
                  obj("red", "cube", "metal", 100, 160), obj("red", "cube", "metal", 400, 300))
        # a centre exactly on a midline belongs to the right column / front row
        assert s.regions() == ["r0", "r1", "r2", "r3"]

    def test_relations_and_ties(self):
        s = scene(obj("red", "cube", "metal", 100, 100), obj("blue", "cube", "metal", 200, 100),
                  obj("green", "cube", "metal", 100, 50))
        rels = set(s.relations())
        assert (0, "left", 1) in rels and (1, "right", 0) in rels
        assert not any(r for r in rels if {r[0], r[2]} == {0, 2} and r[1] in ("left", "right"))  # equal cx
        assert not any(r for r in rels if {r[0], r[2]} == {0, 1} and r[1] in ("front", "behind"))  # equal cy
        assert (2, "behind", 0) in rels and (0, "front", 2) in rels
        assert not s.holds("left", 0, 0)

    @pytest.mark.parametrize("bad,match", [
        (one(dict(obj("pink", "cube", "metal", 10, 10))), r"objects\[0\]\.color: 'pink'"),
        (one(dict(obj("red", "cone", "metal", 10, 10))), r"objects\[0\]\.shape: 'cone'"),
        (one({"color": "red", "shape": "cube", "material": "metal"}), r"missing 'bbox'"),
        (one({**RED_CUBE, "bbox": [5, 5, 4, 9]}), r"x1 > x0"),
        (one({**RED_CUBE, "bbox": [5, 5, 9]}), r"bbox: must be"),
        (one({**RED_CUBE, "bbox": [5, 5, math.nan, 9]}), r"finite"),
        (one({**RED_CUBE, "bbox": [5, "5", 9, 9]}), r"bbox\[1\]"),
        (one(obj("red", "cube", "metal", 900, 10)), r"outside the 480x320 image"),
        (one({**RED_CUBE, "colour": "red"}), r"unknown keys \['colour'\]"),
        ({"image_size": [0, 320], "objects": []}, r"positive"),
        ({"image_size": [480], "objects": []}, r"image_size: must be \[W, H\]"),
        ({"image_size": [480, 320], "objects": {}}, r"objects: must be a list"),
        ({"image_size": [480, 320]}, r"missing \['objects'\]"),
        (one({**RED_CUBE, "probs": {"color": {"red": 1.5}}}), r"outside \[0, 1\]"),
        ([1, 2], r"must be a JSON object"),
    ])
    def test_bad_input(self, bad, match):
        with pytest.raises(SceneError, match=match):
            Scene.from_dict(bad)
        assert issubclass(SceneError, ValueError)


def test_a_scene_carries_its_provenance_through_json_unread():
    d = {"image_size": [480, 320], "objects": [obj("red", "cube", "metal", 100, 100)],
         "provenance": {"backend": "vlm", "prompt": "Find every object", "sent_size": [476, 308]}}
    s = Scene.from_dict(json.dumps(d))
    assert s.provenance == d["provenance"] and s.to_dict() == d
    assert s == Scene.from_dict({k: v for k, v in d.items() if k != "provenance"})  # not part of equality
    assert s.above(0.5).provenance == d["provenance"]
    assert "provenance" not in Scene.from_dict({"image_size": [4, 4], "objects": []}).to_dict()
    with pytest.raises(SceneError, match=r"scene\.provenance: must be a JSON object, got str"):
        Scene.from_dict({**d, "provenance": "vlm"})
