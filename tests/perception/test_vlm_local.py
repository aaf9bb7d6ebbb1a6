"""The ``vlm`` backend's ``transformers`` transport: a tiny Qwen2.5-VL (real classes, random weights, built from a
small config and saved to a folder) loaded through the Auto classes from that folder, as a hub id would be.

A random model writes no scene graph: its answers are errors naming what was wrong, never objects. The slow test
trains the tiny model for a few dozen steps to write two answers, and reads them back: pixel boxes in the size the
processor gave the image (112x84 for a 480x320 image) come back in the image's pixels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import lazy, requires

from logicval_hf.contract.domain import load_domain
from logicval_hf.perception import PerceptionError, extract_scenes
from logicval_hf.perception.vlm import clear_cache
from logicval_hf.perception.vlm.answer import AnswerError
from logicval_hf.perception.vlm.request import instruction

torch = lazy("torch")
pytestmark = requires("torch", "transformers")

IMAGES = [np.full((320, 480, 3), c, np.uint8) for c in ((200, 30, 30), (30, 30, 200))]


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    from tiny_models import tiny_qwen25_vl

    model, proc = tiny_qwen25_vl()
    folder = tmp_path_factory.mktemp("tiny-qwen25-vl")
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def _fresh():
    clear_cache()
    yield
    clear_cache()


def local(folder, **more) -> dict:
    return {"transport": "transformers", "model": str(folder), "device": "cpu", "dtype": "float32", **more}


def test_a_local_model_loads_from_a_folder_and_a_random_one_invents_nothing(qwen_dir):
    from logicval_hf.perception.vlm import reader

    out = extract_scenes(IMAGES, backend="vlm", errors="return", **local(qwen_dir, max_tokens=12, batch_size=2))
    assert all(isinstance(o, AnswerError) and str(o).startswith(f"images[{i}]: vlm answer: ")
               for i, o in enumerate(out))
    (model,) = reader._MODELS.values()
    assert type(model.model).__name__ == "Qwen2_5_VLForConditionalGeneration" and model.batch_size == 2
    assert next(model.model.parameters()).dtype == torch.float32
    text = model.chat_text(instruction(load_domain("clevr"), "pixels", (480, 320)))
    assert text.startswith("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Find every object")
    assert model.generate_sized(IMAGES[:1], ["hi"], max_new_tokens=2)[0][1] == (112, 84)  # the processor's grid
    with pytest.raises(PerceptionError, match=r"^images\[0\]: vlm answer: "):
        extract_scenes(IMAGES, backend="vlm", **local(qwen_dir, max_tokens=12))


def test_a_local_model_needs_no_url_but_a_model():
    with pytest.raises(PerceptionError, match="vlm backend: the setting 'model' is missing"):
        extract_scenes(IMAGES, backend="vlm", transport="transformers")


@pytest.mark.slow  # about a minute of training on two cores
def test_a_trained_tiny_model_answers_are_read_with_its_own_image_size(qwen_dir):
    """Fit the tiny model to two answers (pixel boxes in the 112x84 image it sees) and read them back."""
    from logicval_hf.perception.vlm.local import LocalVLM

    answers = [{"objects": [{"color": "red", "shape": "cube", "material": "metal", "bbox": [14, 21, 56, 63]}]},
               {"objects": []}]
    vlm = LocalVLM.from_pretrained(str(qwen_dir), device="cpu")
    prompt = vlm.chat_text(instruction(load_domain("clevr"), "pixels", (480, 320)))
    texts = [json.dumps(a) + "<|im_end|>" for a in answers]
    proc = vlm.processor
    from PIL import Image

    pils = [Image.fromarray(im) for im in IMAGES]
    enc = proc(images=pils, text=[prompt + t for t in texts], return_tensors="pt", padding=True, padding_side="left")
    labels = enc["input_ids"].clone()
    for i, t in enumerate(texts):  # learn the answers only
        labels[i, : labels.shape[1] - len(proc.tokenizer(t)["input_ids"])] = -100
    torch.manual_seed(0)
    opt = torch.optim.Adam(vlm.model.parameters(), lr=1e-2)
    vlm.model.train()
    for _ in range(200):
        loss = vlm.model(**enc, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.005:
            break
    vlm.model.eval()
    trained = qwen_dir.parent / "trained"
    vlm.model.save_pretrained(trained)
    proc.save_pretrained(trained)
    out = extract_scenes(IMAGES, backend="vlm", **local(trained, max_tokens=120))
    assert [o.to_dict()["objects"] for o in out] == [
        [{"color": "red", "shape": "cube", "material": "metal", "bbox": [60.0, 80.0, 240.0, 240.0]}], []]
    prov = out[0].provenance
    assert prov["transport"] == "transformers" and prov["sent_size"] == [480, 320] and prov["seen_size"] == [112, 84]
    assert json.loads(prov["answer"]) == answers[0] and "url" not in prov
