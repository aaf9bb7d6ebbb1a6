"""The Check tab reads an image in its spec's domain (through the judge): a coco spec's image is perceived as COCO
by a backend that perceives it, and refused in one sentence by one that perceives CLEVR only."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from logicval_hf import Scene
from logicval_hf.perception import BACKENDS, PerceptionBackend, register_backend
from logicval_hf.space import check as chk

COCO_SPEC = {"domain": "coco", "n": 2, "constraints": [{"template": "X1/count_cmp", "params": {
    "A1": {"prop": "class", "value": "dog", "negated": False}, "T": ">=", "K": 2}}]}


@pytest.fixture
def any_domain():
    """A backend for any domain that answers two dogs in COCO, and records the domain it was asked for."""
    asked = []

    def extract(rgb, domain=None, **settings):
        asked.append(None if domain is None else domain.name)
        return Scene.from_dict({"image_size": [rgb.shape[1], rgb.shape[0]], "domain": "coco", "objects": [
            {"class": "dog", "color": "brown", "bbox": [4, 4, 20, 20], "score": 0.9},
            {"class": "dog", "color": "black", "bbox": [30, 4, 50, 20], "score": 0.8}]}, domain)

    register_backend("any-domain-test", PerceptionBackend("any-domain-test", extract, domains=None, takes_domain=True))
    yield asked
    BACKENDS.pop("any-domain-test")


def test_a_coco_spec_is_perceived_in_the_coco_domain(tmp_path, any_domain):
    path = tmp_path / "dogs.png"
    Image.new("RGB", (64, 48), (120, 110, 90)).save(path)
    res = chk.check_image(str(path), json.dumps(COCO_SPEC), backend="any-domain-test")
    assert any_domain == ["coco"]
    assert res["scene"]["domain"] == "coco" and res["backend"] == "any-domain-test"
    assert res["verdict"]["strict"]["ok"] is True and res["label"] == "SAT"
    assert res["repair"]["cost"] == 0 and res["probability"]["p"] == 1.0


def test_a_clevr_only_backend_refuses_a_coco_spec_in_one_sentence(tmp_path):
    path = tmp_path / "dogs.png"
    Image.new("RGB", (64, 48), (120, 110, 90)).save(path)
    with pytest.raises(chk.CheckError, match="'coco'") as e:
        chk.check_image(str(path), json.dumps(COCO_SPEC), backend="clevr")
    assert "\n" not in str(e.value) and "neural" in str(e.value)
