"""Every image entry point refuses a header that claims too many pixels in one line.

A PNG header can claim 100000x100000 pixels in 60 bytes. PIL refuses such a header itself when it opens it
(``DecompressionBombError``, before any size check of ours could run), so each entry point must turn that
refusal into the same one-line message as an image just over the package's cap (8000x6000).
"""

from __future__ import annotations

import json

import pytest
from helpers import png_header, requires

from logicval_hf.cli.main import main
from logicval_hf.perception import MAX_PIXELS, PerceptionError, extract_scene, load_image
from logicval_hf.perception.images import open_checked

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop",
                                 "params": {"A1": {"prop": "color", "value": "red", "negated": False}}}]}
#: (width, height) a header claims: PIL's hard refusal (> 179 MP), its warning range (89-179 MP), our cap only
CLAIMS = [(100_000, 100_000), (10_000, 10_000), (8_000, 6_000)]
CLAIM_IDS = ["10000MP-pil-error", "100MP-pil-warning", "48MP-our-cap"]


@pytest.fixture(params=CLAIMS, ids=CLAIM_IDS)
def huge(request, tmp_path):
    w, h = request.param
    path = tmp_path / "huge.png"
    path.write_bytes(png_header(w, h))
    return path


def _one_line_refusal(message: str) -> None:
    assert "\n" not in message.strip() and "Traceback" not in message, message
    assert "megapixels exceeds the limit of" in message and f"{MAX_PIXELS / 1e6:.0f} megapixels" in message, message


def test_the_opener(huge):
    with pytest.raises(PerceptionError) as e:
        open_checked(huge, "x")
    _one_line_refusal(str(e.value))
    with pytest.raises(PerceptionError) as e:
        open_checked(huge.read_bytes(), "x")  # encoded bytes, as the metric and the T2I clients hand them
    _one_line_refusal(str(e.value))


def test_check_command(huge, tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    assert main(["check", str(spec), str(huge)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("logicval: error: image ") and err.count("\n") == 1, err
    _one_line_refusal(err)


def test_perception(huge):
    for call in (lambda: extract_scene(huge), lambda: load_image(huge), lambda: load_image(str(huge))):
        with pytest.raises(PerceptionError) as e:
            call()
        _one_line_refusal(str(e.value))


def test_metric_inputs(huge):
    from logicval_hf.scoring.evaluation import compute

    data = huge.read_bytes()
    for prediction in (str(huge), data, {"bytes": data, "path": None}, {"bytes": None, "path": str(huge)}):
        with pytest.raises(ValueError) as e:
            compute([prediction], [json.dumps(SPEC)])
        assert str(e.value).startswith("predictions[0]")
        _one_line_refusal(str(e.value))


def test_space_gate(huge):
    from logicval_hf.space import images

    with pytest.raises(images.ImageInputError) as e:
        images.image_size(huge)
    assert str(e.value).startswith("huge.png: ")
    _one_line_refusal(str(e.value))


def test_caption_grounding(huge):
    from logicval_hf.training.captions import image_size_of

    with pytest.raises(PerceptionError) as e:
        image_size_of(huge)
    _one_line_refusal(str(e.value))


@requires("torch")
def test_lora_data_loader(huge):
    from logicval_hf.training.lora import load_image as load_training_image

    with pytest.raises(PerceptionError) as e:
        load_training_image(huge, 64, 48)
    assert "training image" in str(e.value)
    _one_line_refusal(str(e.value))
