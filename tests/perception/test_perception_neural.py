"""Neural perception (Grounding DINO + zero-shot CLIP) with tiny randomly initialised models, offline.

The detector is a tiny ``GroundingDinoForObjectDetection`` (Swin backbone of width 16, BERT text encoder of
width 32, 2 decoder layers, 12 queries) with a ``BertTokenizer`` over a 12-word vocabulary; CLIP is a tiny
open_clip model registered through open_clip's model-config mechanism (64 px, width 64) with the real BPE
tokenizer. Weights are random, so the tests check geometry, plumbing, batching and aggregation arithmetic,
not accuracy.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from helpers import lazy, requires

pytestmark = requires("torch", "transformers", "open_clip")
torch = lazy("torch")
transformers = lazy("transformers")
open_clip = lazy("open_clip")

from logicval_hf import Scene, SceneObject, load_catalog  # noqa: E402
from logicval_hf.generation.render import render_scene  # noqa: E402
from logicval_hf.perception import neural  # noqa: E402
from logicval_hf.perception.neural import build_pipeline  # noqa: E402
from logicval_hf.perception.neural.boxes import box_iou, containment, suppress_duplicates  # noqa: E402
from logicval_hf.perception.neural.prompts import TEMPLATES, attribute_sources, default_detector_prompt  # noqa: E402
from logicval_hf.perception.neural.views import VIEW_SCALES, VIEW_SPECS, render_view, view_window  # noqa: E402

DOMAIN = load_catalog().domain
TINY_CLIP = "logicval-test-tiny-clip"


# ---------------------------------------------------------------------------------------------------
# tiny models
# ---------------------------------------------------------------------------------------------------
def tiny_detector():
    """CLEVR's nouns plus "object", one token per word (`tiny_models.tiny_grounding_dino`'s defaults)."""
    from tiny_models import tiny_grounding_dino

    return tiny_grounding_dino()


def register_tiny_clip(tmp_dir) -> None:
    cfg = {"embed_dim": 32,
           "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
           "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2}}
    (tmp_dir / f"{TINY_CLIP}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(str(tmp_dir))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    register_tiny_clip(tmp_path_factory.mktemp("clipcfg"))
    det, proc = tiny_detector()
    torch.manual_seed(1)
    clip = open_clip.create_model(TINY_CLIP, pretrained=None).eval()
    return det, proc, clip, open_clip.get_tokenizer(TINY_CLIP)


@pytest.fixture(scope="module")
def images():
    rng = random.Random(3)
    out = []
    for i in range(3):
        objs = [SceneObject({a: rng.choice(DOMAIN.attributes[a]) for a in DOMAIN.perceived_attributes},
                            (0, 0, 1, 1)) for _ in range(rng.randint(3, 6))]
        img, _ = render_scene(Scene((480, 320), tuple(objs)), seed=i)
        out.append(np.asarray(img))
    return out


@pytest.fixture(scope="module")
def pipe(models):
    det, proc, clip, tok = models
    # random weights: a zero threshold lets the (meaningless) detections through so that CLIP runs too
    return build_pipeline(det, proc, clip, tok, device="cpu", box_threshold=0.0, max_objects=6)


# ---------------------------------------------------------------------------------------------------
# geometry
# ---------------------------------------------------------------------------------------------------
def test_iou_and_containment_by_hand():
    a, b = [0, 0, 10, 10], [5, 0, 15, 10]
    assert box_iou(a, b)[0, 0] == pytest.approx(50 / 150)
    assert containment([2, 2, 4, 4], a)[0, 0] == 1.0
    assert containment(a, [2, 2, 4, 4])[0, 0] == pytest.approx(0.04)
    assert box_iou(a, [20, 20, 30, 30])[0, 0] == 0.0


def test_suppression_iou_and_containment():
    boxes = [
        [0, 0, 10, 10],  # 0 A  .90
        [1, 1, 11, 11],  # 1 B  .80: IoU(A) = 81/119 = .68 > .5 -> dropped
        [2, 2, 6, 6],  # 2 C  .70: inside A (containment 1.0) and IoU .16 -> dropped by containment
        [20, 20, 30, 30],  # 3 D  .60: 25% inside E -> kept
        [25, 25, 60, 60],  # 4 E  .95
        [0, 0, 100, 100],  # 5 F  .10: contains everything but is itself only 1-12% inside any -> kept
    ]
    scores = [0.9, 0.8, 0.7, 0.6, 0.95, 0.1]
    assert suppress_duplicates(boxes, scores, 0.5, 0.85) == [4, 0, 3, 5]
    # containment rule off: C survives (its IoU with A is only 16/100)
    assert suppress_duplicates(boxes, scores, 0.5, None) == [4, 0, 2, 3, 5]
    # IoU rule off: B survives (only 81% of it lies inside A, under 0.85)
    assert suppress_duplicates(boxes, scores, None, 0.85) == [4, 0, 1, 3, 5]
    # a lower-confidence box containing a higher one is not suppressed by containment (only IoU)
    assert suppress_duplicates([[4, 4, 6, 6], [0, 0, 10, 10]], [0.9, 0.5], 0.5, 0.85) == [0, 1]


def test_suppression_thresholds_are_strict_and_ties_stable():
    # IoU exactly 1/3 with threshold 1/3: kept (strictly greater drops)
    a, b = [0, 0, 10, 10], [5, 0, 15, 10]
    assert suppress_duplicates([a, b], [0.9, 0.8], 50 / 150, None) == [0, 1]
    assert suppress_duplicates([a, b], [0.9, 0.8], 50 / 150 - 1e-9, None) == [0]
    # equal scores: the lower index is the "higher" detection
    assert suppress_duplicates([a, a], [0.5, 0.5], 0.5, 0.85) == [0]
    assert suppress_duplicates(np.zeros((0, 4)), [], 0.5, 0.85) == []
    with pytest.raises(ValueError):
        suppress_duplicates([a], [0.1, 0.2])


def test_view_window_geometry():
    # box 20 x 40 centred at (20, 40): longer side 40
    assert view_window((10, 20, 30, 60), VIEW_SCALES["tight"]) == (0, 20, 40)
    assert view_window((10, 20, 30, 60), VIEW_SCALES["medium"]) == (-10, 10, 60)
    assert view_window((10, 20, 30, 60), VIEW_SCALES["wide"]) == (-30, -10, 100)
    # fractional boxes round to whole pixels, side at least 1
    assert view_window((5.2, 5.2, 5.4, 5.3), 1.0)[2] == 1


def test_render_view_backgrounds():
    H, W = 50, 80
    rgb = np.zeros((H, W, 3), np.uint8)
    rgb[..., 0] = np.arange(W)[None, :]  # red encodes x
    rgb[..., 1] = np.arange(H)[:, None]  # green encodes y
    rgb[..., 2] = 200
    box = (10, 20, 30, 30)  # 20 x 10, centre (20, 25)
    tight = render_view(rgb, box, 1.0, "grey", grey=128)
    assert tight.shape == (20, 20, 3)  # square of the longer side
    ox, oy, side = view_window(box, 1.0)
    assert (ox, oy, side) == (10, 15, 20)
    # rows 5..14 of the canvas hold image rows 20..29; the rest is grey
    assert np.array_equal(tight[5:15], rgb[20:30, 10:30])
    assert (tight[:5] == 128).all() and (tight[15:] == 128).all()
    medium_grey = render_view(rgb, box, 1.5, "grey", grey=128)
    assert medium_grey.shape == (30, 30, 3)
    ox, oy, _ = view_window(box, 1.5)
    inside = np.zeros((30, 30), bool)
    inside[20 - oy:30 - oy, 10 - ox:30 - ox] = True
    assert np.array_equal(medium_grey[inside].reshape(10, 20, 3), rgb[20:30, 10:30])
    assert (medium_grey[~inside] == 128).all()
    medium_orig = render_view(rgb, box, 1.5, "original", grey=128)
    assert np.array_equal(medium_orig, rgb[oy:oy + 30, ox:ox + 30])  # context kept (window inside the image)
    # a window reaching outside the image: the outside part is grey, the inside part is the image
    corner = render_view(rgb, (0, 0, 10, 10), 2.5, "original", grey=7)
    ox, oy, side = view_window((0, 0, 10, 10), 2.5)
    assert (ox, oy, side) == (-7, -7, 25)  # centre 5 - 12.5 rounds half up
    assert (corner[:7] == 7).all() and (corner[:, :7] == 7).all()
    assert np.array_equal(corner[7:, 7:], rgb[:18, :18])
    with pytest.raises(ValueError):
        render_view(rgb, box, 1.0, "black")


def test_views_follow_the_paper():
    assert set(VIEW_SPECS["shape"]) == {("tight", "grey"), ("medium", "grey")}
    assert set(VIEW_SPECS["color"]) == {("tight", "grey"), ("medium", "grey"), ("wide", "grey")}
    assert set(VIEW_SPECS["material"]) == {("medium", "original")}
    assert default_detector_prompt(DOMAIN) == "a cube. a sphere. a cylinder."


# ---------------------------------------------------------------------------------------------------
# end to end with tiny models
# ---------------------------------------------------------------------------------------------------
def _check_scene(scene: Scene, rgb: np.ndarray, max_objects: int, threshold: float) -> None:
    H, W = rgb.shape[:2]
    assert scene.image_size == (W, H)
    assert len(scene) <= max_objects
    for o in scene.objects:
        x0, y0, x1, y1 = o.bbox
        assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
        assert o.score is not None and o.score >= threshold
        assert set(o.attributes) == set(DOMAIN.perceived_attributes)
        for a in DOMAIN.perceived_attributes:
            dist = o.probs[a]
            assert list(dist) == list(DOMAIN.attributes[a])
            assert sum(dist.values()) == pytest.approx(1.0, abs=1e-9)
            assert all(0 <= p <= 1 for p in dist.values())
            assert o.attributes[a] == max(dist, key=dist.get)
    # no surviving pair violates the suppression rules
    b = np.array([o.bbox for o in scene.objects]).reshape(-1, 4)
    iou, cont = box_iou(b, b), containment(b, b)
    for i in range(len(b)):
        for j in range(len(b)):
            if i != j and scene.objects[j].score <= scene.objects[i].score:
                assert iou[i, j] <= 0.5 and cont[j, i] <= 0.85
    # the scene is valid scene JSON
    assert Scene.from_dict(scene.to_dict()).to_dict() == scene.to_dict()


def _assert_same(a: list[Scene], b: list[Scene]) -> None:
    assert len(a) == len(b)
    for sa, sb in zip(a, b, strict=True):
        assert len(sa) == len(sb)
        for oa, ob in zip(sa.objects, sb.objects, strict=True):
            assert np.allclose(oa.bbox, ob.bbox, atol=1e-3)
            assert oa.score == pytest.approx(ob.score, abs=1e-5)
            assert oa.attributes == ob.attributes
            for a in oa.probs:
                assert np.allclose(list(oa.probs[a].values()), list(ob.probs[a].values()), atol=1e-5)


def test_end_to_end_scenes_are_valid(pipe, images):
    scenes = pipe.extract_batch(images)
    assert len(scenes) == len(images)
    assert sum(len(s) for s in scenes) > 0
    for s, rgb in zip(scenes, images, strict=True):
        _check_scene(s, rgb, 6, 0.0)


def test_batched_equals_per_image(pipe, images):
    batched = pipe.extract_batch(images, detector_batch_size=3, clip_batch_size=64)
    single = [pipe.extract(im, detector_batch_size=1, clip_batch_size=1) for im in images]
    _assert_same(batched, single)
    odd = pipe.extract_batch(images, detector_batch_size=2, clip_batch_size=5, image_chunk=2)
    _assert_same(batched, odd)


def test_forward_counts(pipe, images):
    """One detector forward per detector batch; CLIP image forwards in chunks of clip_batch_size over all
    crops of all images; 4 distinct views per object (tight/medium/wide on grey + medium on original)."""
    det_calls, clip_sizes = [], []
    h = pipe.detector.register_forward_hook(lambda m, i, o: det_calls.append(1))
    real = pipe.clip.encode_image

    def spy(x, *a, **k):
        clip_sizes.append(x.shape[0])
        return real(x, *a, **k)

    pipe.clip.encode_image = spy
    try:
        scenes = pipe.extract_batch(images, detector_batch_size=2, clip_batch_size=7)
    finally:
        h.remove()
        del pipe.clip.encode_image
    n = sum(len(s) for s in scenes)
    assert len(det_calls) == math.ceil(len(images) / 2)
    assert sum(clip_sizes) == 4 * n
    assert all(s == 7 for s in clip_sizes[:-1]) and 0 < clip_sizes[-1] <= 7


def test_no_detection_gives_empty_scene_and_no_clip(pipe, images):
    called = []
    real = pipe.clip.encode_image
    pipe.clip.encode_image = lambda *a, **k: called.append(1) or real(*a, **k)
    try:
        scenes = pipe.extract_batch(images[:2], box_threshold=1.0)
    finally:
        del pipe.clip.encode_image
    assert [len(s) for s in scenes] == [0, 0] and not called
    assert scenes[0].image_size == (480, 320)


def _fake_clip():
    """A `_FakeClip` (defined here, not at module level: torch is imported only when a test needs it)."""

    class _FakeClip(torch.nn.Module):
        """Deterministic stand-in for CLIP: image feature = per-channel mean and std of the normalised crop
        (plus a constant); text features = fixed random vectors per distinct text. Lets the test recompute the
        aggregation by hand."""

        def __init__(self):
            super().__init__()
            self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(10.0)))
            self.texts: list[str] = []
            g = torch.Generator().manual_seed(0)
            self.table = torch.randn(256, 7, generator=g)

        def tokenizer(self, texts):
            ids = []
            for t in texts:
                if t not in self.texts:
                    self.texts.append(t)
                ids.append(self.texts.index(t))
            return torch.tensor(ids)[:, None]

        def encode_text(self, tokens):
            return self.table[tokens[:, 0]]

        def encode_image(self, x):
            return torch.cat([x.mean((2, 3)), x.std((2, 3)), torch.ones(len(x), 1)], 1)

    return _FakeClip()


def test_template_and_view_aggregation_by_hand(models, images):
    det, proc, _, _ = models
    fake = _fake_clip()
    pre = {"size": (32, 32), "mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25)}
    p = build_pipeline(det, proc, fake, fake.tokenizer, clip_preprocess=pre, device="cpu", box_threshold=0.0,
                       max_objects=3, grey=100)
    rgb = images[0]
    boxes = [(100.0, 80.0, 160.0, 150.0), (300.5, 200.2, 330.7, 260.9)]
    got = p.classify_batch([rgb], [boxes])[0]
    from PIL import Image

    def feat(canvas):
        x = np.asarray(Image.fromarray(canvas).resize((32, 32), Image.BICUBIC), np.float32) / 255.0
        x = (torch.from_numpy(x).permute(2, 0, 1)[None] - 0.5) / 0.25
        f = fake.encode_image(x)[0]
        return f / f.norm()

    for b, dist in zip(boxes, got, strict=True):
        for a in DOMAIN.perceived_attributes:
            values = DOMAIN.attributes[a]
            templates = TEMPLATES[a]
            logits = np.zeros(len(values))
            for size, bg in VIEW_SPECS[a]:
                f = feat(render_view(rgb, b, VIEW_SCALES[size], bg, 100))
                for k, v in enumerate(values):
                    for t in templates:
                        e = fake.encode_text(fake.tokenizer([t.format(v)]))[0]
                        logits[k] += 10.0 * float(f @ (e / e.norm())) / len(templates) / len(VIEW_SPECS[a])
            want = np.exp(logits - logits.max())
            want /= want.sum()
            assert np.allclose(list(dist[a].values()), want, atol=1e-5), a
    # text embeddings are computed once per attribute and cached
    n_texts = len(fake.texts)
    p.classify_batch([rgb], [boxes])
    assert len(fake.texts) == n_texts
    # class names and custom templates reach the prompts
    p.classify_batch([rgb], [boxes[:1]], templates={"material": ["{} stuff"]},
                     class_names={"material": {"metal": "shiny metal"}})
    assert "shiny metal stuff" in fake.texts and "rubber stuff" in fake.texts


def test_settings_validation(pipe, images):
    with pytest.raises(ValueError, match="unknown neural perception settings"):
        pipe.extract(images[0], box_treshold=0.2)
    with pytest.raises(ValueError, match="box_threshold"):
        pipe.extract(images[0], box_threshold=1.5)
    with pytest.raises(ValueError, match="image_chunk"):
        pipe.extract(images[0], image_chunk=0)
    with pytest.raises(ValueError, match="view size"):
        pipe.extract(images[0], views={"shape": [("huge", "grey")]})
    with pytest.raises(ValueError, match="model settings"):
        neural.extract(images[0], pipeline=pipe, detector="x")


def test_loading_from_local_directories(models, images, tmp_path):
    """Real loading code: from_pretrained on a saved tiny Grounding DINO, open_clip with a local state dict;
    the registry's lazy backend reference calls the module-level extract."""
    det, proc, clip, _ = models
    det_dir = tmp_path / "gdino"
    det.save_pretrained(det_dir)
    proc.save_pretrained(det_dir)
    weights = tmp_path / "clip.pt"
    torch.save(clip.state_dict(), weights)

    model, _ = neural.load_detector(str(det_dir), "cpu")
    assert type(model).__name__ == "GroundingDinoForObjectDetection"
    for k, v in det.state_dict().items():
        assert torch.equal(model.state_dict()[k], v), k
    c2, _ = neural.load_clip(TINY_CLIP, str(weights), "cpu")
    assert all(torch.equal(c2.state_dict()[k], v) for k, v in clip.state_dict().items())

    settings = {"detector": str(det_dir), "clip_model": TINY_CLIP, "clip_pretrained": str(weights), "device": "cpu"}
    neural.clear_cache()
    try:
        p1 = neural.load_pipeline(**settings)
        assert neural.load_pipeline(**settings) is p1  # cached per model settings
        from logicval_hf.perception import BACKENDS, extract_scene, register_backend

        name = "neural-test-backend"
        register_backend(name, "logicval_hf.perception.neural:extract", replace=True)
        try:
            via_registry = extract_scene(images[0], backend=name, box_threshold=0.0, max_objects=4, **settings)
        finally:
            BACKENDS.pop(name, None)
        direct = neural.extract_batch(images[:1], box_threshold=0.0, max_objects=4, **settings)
        _assert_same([via_registry], direct)
        _check_scene(via_registry, images[0], 4, 0.0)
    finally:
        neural.clear_cache()


def test_clevr_keeps_the_papers_pipeline(pipe, images):
    """CLEVR: the detector gets the one shape prompt and gives boxes only; CLIP over views perceives every
    attribute (the noun too), as in the paper; the scenes are CLEVR scenes."""

    assert attribute_sources(DOMAIN) == dict.fromkeys(DOMAIN.perceived_attributes, "views")
    texts = []
    real = pipe.detector_processor

    class Spy:
        def __call__(self, *a, **k):
            texts.append(list(k["text"]))
            return real(*a, **k)

        def __getattr__(self, name):
            return getattr(real, name)

    pipe.detector_processor = Spy()
    try:
        scenes = pipe.extract_batch(images[:2], detector_batch_size=2)
    finally:
        pipe.detector_processor = real
    assert texts == [["a cube. a sphere. a cylinder."] * 2]
    assert all(s.domain is DOMAIN for s in scenes)
    _assert_same(scenes[:1], [pipe.extract(images[0], domain="clevr")])
