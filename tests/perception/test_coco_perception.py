"""The neural backend perceiving COCO: classes from the detector's labels, colours from GenEval's CLIP classifier.

Tiny random models (tests/tiny_models.py): a Grounding DINO detector over a word-level vocabulary of the COCO
class names reading at most 128 text tokens (so the 80 classes need several prompt chunks), and a tiny open_clip
CLIP. Weights are random: the tests recompute what the pipeline must have done from the models' own outputs
(labels, scores, colour probabilities), never what a trained model would see.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from helpers import lazy, requires

pytestmark = requires("torch", "transformers", "open_clip")
torch = lazy("torch")
tiny_models = lazy("tiny_models")

from logicval_hf import Scene, load_catalog, verify  # noqa: E402
from logicval_hf.contract.domain import load_domain  # noqa: E402
from logicval_hf.perception import PerceptionError, extract_scene, extract_scenes  # noqa: E402
from logicval_hf.perception.neural import build_pipeline  # noqa: E402
from logicval_hf.perception.neural.prompts import (  # noqa: E402
    GENEVAL_TEMPLATES,
    attribute_sources,
    default_detector_prompt,
)
from logicval_hf.perception.neural.views import geneval_crop  # noqa: E402

COCO = load_domain("coco")
CLEVR = load_catalog().domain
CLASSES = COCO.attributes["class"]
COLORS = COCO.attributes["color"]
MAX_TEXT = 128


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    det, proc = tiny_models.tiny_grounding_dino(CLASSES, max_text_len=MAX_TEXT)
    clip, tok = tiny_models.tiny_clip(tmp_path_factory.mktemp("clipcfg"))
    return det, proc, clip, tok


@pytest.fixture(scope="module")
def images():
    from PIL import Image, ImageDraw

    out = []
    for k, (w, h) in enumerate([(128, 96), (112, 112)]):
        im = Image.new("RGB", (w, h), (150, 150, 150))
        d = ImageDraw.Draw(im)
        d.rectangle([10 + 5 * k, 20, 50, 70], fill=(200, 30, 30))
        d.ellipse([60, 30, 100, 80 - 10 * k], fill=(30, 40, 190))
        out.append(np.asarray(im))
    return out


@pytest.fixture(scope="module")
def pipe(models):
    det, proc, clip, tok = models
    # random weights: a zero threshold lets the (meaningless) detections through so that CLIP runs too
    return build_pipeline(det, proc, clip, tok, device="cpu", domain="coco", box_threshold=0.0, max_objects=5)


class SpyProcessor:
    """The detector's processor, recording the text of every call."""

    def __init__(self, proc):
        self.proc, self.texts = proc, []

    def __call__(self, *args, **kwargs):
        self.texts.append(list(kwargs["text"]))
        return self.proc(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.proc, name)


def _spans_by_hand(tokens: list[str]) -> list[tuple[str, list[int]]]:
    """(class name, positions of its word tokens) from the detector's tokens: "[CLS] a dog . a traffic light . ...":
    each phrase is an article, the name's words, then a dot (the tiny vocabulary has one token per word)."""
    out, k = [], 1
    while tokens[k] != "[SEP]":
        assert tokens[k] in ("a", "an"), tokens[k]
        end = tokens.index(".", k)
        out.append((" ".join(tokens[k + 1:end]), list(range(k + 1, end))))
        k = end + 1
    return out


# ---------------------------------------------------------------------------------------------------
# sources and prompts
# ---------------------------------------------------------------------------------------------------
def test_sources_per_domain():
    assert attribute_sources(CLEVR) == {"color": "views", "shape": "views", "material": "views"}  # the paper's
    assert attribute_sources(COCO) == {"class": "detector", "color": "geneval"}
    assert attribute_sources(COCO, {"color": "views"}) == {"class": "detector", "color": "views"}
    with pytest.raises(ValueError, match="only the domain's noun"):
        attribute_sources(COCO, {"color": "detector"})
    with pytest.raises(ValueError, match="cannot classify the noun"):
        attribute_sources(COCO, {"class": "geneval"})
    with pytest.raises(ValueError, match="not a perceived attribute"):
        attribute_sources(COCO, {"material": "views"})
    with pytest.raises(ValueError, match="not one of"):
        attribute_sources(COCO, {"color": "clip"})


def test_prompts_are_the_domain_noun_values():
    assert default_detector_prompt(CLEVR) == "a cube. a sphere. a cylinder."  # unchanged
    prompt = default_detector_prompt(COCO)
    assert prompt.startswith("a person. a bicycle. a car.") and prompt.endswith("a toothbrush.")
    assert "an airplane." in prompt and "a traffic light." in prompt and prompt.count(".") == len(CLASSES)


def test_prompt_chunks_fit_the_detector_and_cover_every_class(pipe, models):
    _, proc, _, _ = models
    chunks = pipe.class_prompts()
    assert len(chunks) > 1  # 80 classes do not fit 128 tokens
    assert [v for _, values, _ in chunks for v in values] == list(CLASSES)
    assert " ".join(p for p, _, _ in chunks) == default_detector_prompt(COCO)
    for prompt, values, spans in chunks:
        tokens = proc.tokenizer.convert_ids_to_tokens(proc.tokenizer(prompt)["input_ids"])
        assert len(tokens) <= MAX_TEXT
        by_hand = _spans_by_hand(tokens)
        assert [n for n, _ in by_hand] == list(values)
        assert [list(s) for s in spans] == [p for _, p in by_hand]  # the name's tokens: no article, no dot
    assert pipe.class_prompts() is not None and pipe._prompt_cache  # cached per domain
    with pytest.raises(ValueError, match="detector_prompt"):
        pipe.class_prompts(detector_prompt="a dog.")


# ---------------------------------------------------------------------------------------------------
# end to end
# ---------------------------------------------------------------------------------------------------
def test_coco_scenes_are_valid_and_verifiable(pipe, images):
    spy = SpyProcessor(pipe.detector_processor)
    pipe.detector_processor = spy
    try:
        scenes = pipe.extract_batch(images, detector_batch_size=2)
    finally:
        pipe.detector_processor = spy.proc
    chunks = pipe.class_prompts()
    # the detector was given the domain's class names: every chunk once per batch of images
    assert spy.texts == [[p] * len(images) for p, _, _ in chunks]
    given = " ".join(t[0] for t in spy.texts)
    assert all(f"a {c}." in given or f"an {c}." in given for c in CLASSES)
    assert sum(len(s) for s in scenes) > 0
    for scene, rgb in zip(scenes, images, strict=True):
        H, W = rgb.shape[:2]
        assert scene.domain == COCO and scene.image_size == (W, H) and len(scene) <= 5
        for o in scene.objects:
            assert set(o.attributes) == {"class", "color"}
            assert o["class"] in CLASSES and o["color"] in COLORS
            assert isinstance(o.score, float) and 0.0 <= o.score <= 1.0
            x0, y0, x1, y1 = o.bbox
            assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
            assert list(o.probs["color"]) == list(COLORS)
            assert sum(o.probs["color"].values()) == pytest.approx(1.0, abs=1e-9)
            assert o["color"] == max(o.probs["color"], key=o.probs["color"].get)
            assert o["class"] == max(o.probs["class"], key=o.probs["class"].get)
            assert sum(o.probs["class"].values()) == pytest.approx(1.0, abs=1e-9)
        assert [o.score for o in scene.objects] == sorted((o.score for o in scene.objects), reverse=True)
        d = scene.to_dict()
        assert d["domain"] == "coco"
        assert Scene.from_dict(json.loads(json.dumps(d))).to_dict() == d
    # verify accepts the perceived scene (and its JSON) against COCO specs
    scene = max(scenes, key=len)
    top = scene.objects[0]
    n_top = sum(o["class"] == top["class"] for o in scene.objects)

    def spec(k):
        return {"domain": "coco", "score_threshold": 0.0, "constraints": [
            {"template": "X1/count_cmp", "params": {"A1": {"prop": "class", "value": top["class"], "negated": False},
                                                   "T": ">=", "K": k}}]}

    assert verify(spec(n_top), scene).ok
    assert verify(spec(n_top), scene.to_json()).ok
    assert not verify(spec(n_top + 1), scene).ok


def test_labels_and_scores_are_the_detectors(pipe, models, images):
    """Recompute by hand: per chunk, the detector's token probabilities averaged over each class name's tokens;
    every perceived object is a (chunk, query) whose best class is its label and whose class score its score."""
    det, proc, _, _ = models
    rgb = images[0]
    H, W = rgb.shape[:2]
    scene = pipe.extract(rgb)
    dets = pipe.detect_batch([rgb])[0]
    assert [(d.bbox, d.score, d.label) for d in dets] == [(o.bbox, o.score, o["class"]) for o in scene.objects]
    cands = []
    from PIL import Image

    for prompt, _, _ in pipe.class_prompts():
        inputs = proc(images=[Image.fromarray(rgb)], text=[prompt], return_tensors="pt")
        with torch.no_grad():
            out = det(**inputs)
        tokens = proc.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
        probs = torch.sigmoid(out.logits[0]).numpy()
        for q in range(probs.shape[0]):
            scores = {name: float(probs[q, pos].mean()) for name, pos in _spans_by_hand(tokens)}
            best = max(scores, key=scores.get)
            cx, cy, w, h = out.pred_boxes[0, q].tolist()
            box = np.clip([(cx - w / 2) * W, (cy - h / 2) * H, (cx + w / 2) * W, (cy + h / 2) * H],
                          0, [W, H, W, H])
            cands.append((box, best, scores[best]))
    for o in scene.objects:
        assert any(np.allclose(o.bbox, box, atol=1e-3) and label == o["class"]
                   and math.isclose(o.score, s, abs_tol=1e-5) for box, label, s in cands), o


def test_colour_is_genevals_classifier(pipe, models, images):
    """The colour distribution recomputed by hand as GenEval does: the box crop, resized on its short side and
    centre-cropped; per colour the mean of the normalised embeddings of the three prompts with the class name;
    softmax of 100 * cos."""
    _, _, clip, tok = models
    rgb = images[1]
    scene = pipe.extract(rgb)
    assert len(scene) > 0
    size = pipe.clip_preprocess["size"]
    mean = torch.tensor(pipe.clip_preprocess["mean"]).view(3, 1, 1)
    std = torch.tensor(pipe.clip_preprocess["std"]).view(3, 1, 1)
    from PIL import Image

    for o in scene.objects[:3]:
        crop = Image.fromarray(rgb).crop(tuple(round(v) for v in o.bbox))
        w, h = crop.size
        s = size[0]
        crop = crop.resize((s, int(s * h / w)) if w <= h else (int(s * w / h), s), Image.BICUBIC)
        left, top = round((crop.size[0] - s) / 2), round((crop.size[1] - s) / 2)
        crop = np.asarray(crop.crop((left, top, left + s, top + s)))
        assert np.array_equal(crop, geneval_crop(rgb, o.bbox, size))
        x = (torch.from_numpy(crop.copy()).permute(2, 0, 1).float() / 255 - mean) / std
        with torch.no_grad():
            f = torch.nn.functional.normalize(clip.encode_image(x[None]).float(), dim=-1)[0]
            clf = []
            for c in COLORS:
                texts = [t.format(c=c, classname=o["class"]) for t in GENEVAL_TEMPLATES]
                e = torch.nn.functional.normalize(clip.encode_text(tok(texts)).float(), dim=-1).mean(0)
                clf.append(e / e.norm())
            logits = 100.0 * (torch.stack(clf) @ f).double()
        want = torch.softmax(logits, -1).numpy()
        assert np.allclose(list(o.probs["color"].values()), want, atol=1e-5)
    # one classifier per class, cached: a second pass encodes no text
    calls = []
    real = pipe.clip.encode_text
    pipe.clip.encode_text = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        pipe.extract(rgb)
    finally:
        del pipe.clip.encode_text
    assert not calls


def test_domain_setting_reaches_the_backend(models, images):
    """A pipeline built for CLEVR perceives COCO when asked (``domain``), through the backend registry too."""
    det, proc, clip, tok = models
    clevr_pipe = build_pipeline(det, proc, clip, tok, device="cpu", box_threshold=0.0, max_objects=2)
    coco = extract_scene(images[0], backend="neural", domain="coco", pipeline=clevr_pipe)
    assert coco.domain == COCO and all(o["class"] in CLASSES for o in coco.objects)
    assert coco.to_dict() == clevr_pipe.extract(images[0], domain=COCO).to_dict()
    both = extract_scenes(images, backend="neural", domain=COCO, pipeline=clevr_pipe)
    assert [s.domain for s in both] == [COCO, COCO]
    assert [s.to_dict() for s in both] == [s.to_dict() for s in clevr_pipe.extract_batch(images, domain="coco")]
    assert extract_scene(images[0], backend="neural", pipeline=clevr_pipe).domain == CLEVR
    with pytest.raises(ValueError, match="domain"):
        extract_scene(images[0], backend="neural", domain="cocoa", pipeline=clevr_pipe)
    with pytest.raises(PerceptionError, match="'clevr' scenes only"):
        extract_scene(images[0], backend="clevr", domain="coco")


def test_metric_perceives_images_in_their_spec_domain(models, images):
    from logicval_hf.scoring.evaluation import compute

    det, proc, clip, tok = models
    clevr_pipe = build_pipeline(det, proc, clip, tok, device="cpu", box_threshold=0.0, max_objects=2)
    spec = {"domain": "coco", "n": 2, "score_threshold": 0.0, "constraints": [
        {"template": "X1/count_cmp", "params": {"A1": {"prop": "class", "value": "dog", "negated": False},
                                               "T": ">=", "K": 1}}]}
    r = compute(list(images), [spec, spec], backend="neural", backend_settings={"pipeline": clevr_pipe})
    wants = clevr_pipe.extract_batch(images, domain="coco")
    for s, want in zip(r["per_sample"], wants, strict=True):
        assert s["scene"]["domain"] == "coco"
        assert s["scene"]["objects"] == [{k: v for k, v in o.items() if k != "probs"}
                                         for o in want.to_dict()["objects"]]
        assert s["n_objects"] == len(want) and s["ok"] == verify(spec, want).ok
