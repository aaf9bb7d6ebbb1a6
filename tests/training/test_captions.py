"""The CLEVR caption grounder and the LoRA training data (held-out set, balanced batches).

Runs on the 170 real CLEVR dev scenes (``data/clevr_dev`` under the test data root, `shared_data`, or
$LOGICVAL_CLEVR_DEV; skipped if absent), on
tests/data/clevr (if another engineer shipped CLEVR scenes there; skipped otherwise) and on synthetic scenes.
"""

from __future__ import annotations

import collections
import json
import os
import random
from pathlib import Path

import pytest
from shared_data import shared_path

from logicval_hf import Scene, Spec
from logicval_hf.asp.solver import Solver
from logicval_hf.contract.spec import Constraint
from logicval_hf.contract.verbalise import constraint_text
from logicval_hf.training.captions import (
    CaptionGrounder,
    caption_prompt,
    clevr_scene_to_scene,
    ground_captions,
    load_clevr_scenes,
    scene_seed,
)
from logicval_hf.training.lora_data import build_pairs, read_split, split_pairs, write_split
from logicval_hf.training.lora_data import main as lora_data_main

DEV = Path(os.environ.get("LOGICVAL_CLEVR_DEV") or shared_path("data", "clevr_dev"))
SHIPPED = Path(__file__).resolve().parents[1] / "data" / "clevr"
# grounding the 170 dev scenes costs ~10 s: these run in the whole suite, not the inner loop
_dev_present = pytest.mark.skipif(not (DEV / "scenes.json").is_file(), reason="CLEVR dev scenes not available")


def needs_dev(test):
    return pytest.mark.slow(_dev_present(test))


def _clevr(objs, **extra):
    return {"image_filename": "x.png", **extra,
            "objects": [{"color": c, "shape": s, "material": m, "size": "large", "pixel_coords": [x, y, 9.0]}
                        for c, s, m, x, y in objs]}


def _check_captions(scene: Scene, caps: list[dict], solver: Solver) -> None:
    """Every caption holds on its scene (strict count, label SAT), reads as the verbaliser says, one per class."""
    n = len(scene)
    assert len({c["class"] for c in caps}) == len(caps)
    pairs = []
    for c in caps:
        con = Constraint.from_dict(c["constraint"])
        assert c["template"] == con.template_id and c["class"] == con.cls and c["n"] == n
        assert c["prompt"] == caption_prompt(n, constraint_text(con, n, "short"))
        pairs.append((Spec(n, (con,)), scene))
    assert all(v.ok for v in solver.verify_many(pairs, labels=["SAT"] * len(pairs)))


@pytest.fixture(scope="module")
def dev_grounded():
    """All 170 dev scenes grounded once (through `build_pairs`, which the split tests use as well)."""
    if not (DEV / "scenes.json").is_file():
        pytest.skip("CLEVR dev scenes not available")
    grounder = CaptionGrounder()
    return build_pairs(DEV / "scenes.json", DEV / "images", seed=42, grounder=grounder), grounder


@pytest.fixture(scope="module")
def dev(dev_grounded):
    pairs, grounder = dev_grounded
    scenes = load_clevr_scenes(DEV / "scenes.json")
    objs = [clevr_scene_to_scene(s, image_path=DEV / "images" / s["image_filename"]) for s in scenes]
    by_image = collections.defaultdict(list)
    for p in pairs:
        by_image[p.image_filename].append({"class": p.cls, "template": p.template, "n": p.n,
                                           "constraint": dict(p.constraint), "prompt": p.prompt})
    return scenes, objs, [by_image[s["image_filename"]] for s in scenes], grounder


# ---------------------------------------------------------------------------------------------------------
# CLEVR scenes -> Scene
# ---------------------------------------------------------------------------------------------------------
def test_clevr_scene_conversion(tmp_path):
    from PIL import Image

    raw = _clevr([("red", "cube", "metal", 100, 50), ("blue", "sphere", "rubber", 400, 300),
                  ("gray", "cylinder", "rubber", 500, -3)])
    s = clevr_scene_to_scene(raw)
    assert s.image_size == (480, 320) and len(s) == 3  # default size
    assert s.objects[0].center == (100, 50) and s.objects[0].bbox[2] - s.objects[0].bbox[0] == 1.0
    assert s.objects[2].center == (480, 0)  # clamped into the image
    assert s.regions()[:2] == ["r0", "r3"] and s.holds("left", 0, 1) and s.holds("behind", 0, 1)
    assert clevr_scene_to_scene(raw, image_size=(1000, 1000)).regions()[1] == "r0"
    assert clevr_scene_to_scene({**raw, "image_width": 320, "image_height": 240}).image_size == (320, 240)
    Image.new("RGB", (640, 480)).save(tmp_path / "x.png")
    sized = clevr_scene_to_scene({**raw, "image_width": 320, "image_height": 240}, image_path=tmp_path / "x.png")
    assert sized.image_size == (640, 480)  # the image file wins
    with pytest.raises(ValueError, match="color"):
        clevr_scene_to_scene(_clevr([("pink", "cube", "metal", 1, 1)]))
    (tmp_path / "scenes.json").write_text(json.dumps({"info": {}, "scenes": [raw, raw]}))
    assert len(load_clevr_scenes(tmp_path / "scenes.json")) == 2
    assert caption_prompt(1, "X.") == "There is 1 object in the scene. X."
    assert caption_prompt(6, "X.") == "There are 6 objects in the scene. X."


def test_small_and_large_scenes():
    solver = Solver()
    one = _clevr([("red", "cube", "metal", 100, 50)])
    caps = ground_captions(one, seed=0)
    assert caps and {c["class"] for c in caps} <= {"C1", "C2", "C3", "C8", "C9"}  # no relation without a pair
    _check_captions(clevr_scene_to_scene(one), caps, solver)
    rng = random.Random(1)
    ten = _clevr([(rng.choice(["red", "blue", "cyan"]), rng.choice(["cube", "sphere"]), "rubber",
                   rng.uniform(0, 480), rng.uniform(0, 320)) for _ in range(10)])
    caps = ground_captions(ten, seed=3)
    assert len(caps) == 9 and all(c["n"] == 10 for c in caps)  # CLEVR's 10-object scenes work (counts <= 9)
    assert caps[0]["prompt"].startswith("There are 10 objects in the scene. ")
    _check_captions(clevr_scene_to_scene(ten), caps, solver)
    assert ground_captions(_clevr([]), seed=0) == []


# ---------------------------------------------------------------------------------------------------------
# The grounder on the 170 dev scenes
# ---------------------------------------------------------------------------------------------------------
@needs_dev
def test_dev_captions_hold_and_cover_the_classes(dev):
    _, objs, caps, grounder = dev
    solver = Solver()
    for scene, cs in zip(objs, caps, strict=True):
        _check_captions(scene, cs, solver)
    multi = [len(cs) for s, cs in zip(objs, caps, strict=True) if len(s) >= 3]
    assert sum(m == 9 for m in multi) >= 0.95 * len(multi)  # all nine classes on (almost) every real scene
    templates = collections.Counter(c["template"] for cs in caps for c in cs)
    assert len(templates) >= 60  # templates are spread within classes
    assert grounder.stats["disagreements"] == 0  # the prefilter never contradicted the solver


@pytest.mark.slow
@needs_dev
def test_dev_captions_are_deterministic_and_informative(dev):
    scenes, objs, caps, _ = dev
    g = CaptionGrounder()
    sub = list(range(100, 130))
    again = g.ground_many([objs[i] for i in sub], [scene_seed(42, scenes[i]["image_filename"]) for i in sub])
    assert again == [caps[i] for i in sub]
    other = g.ground_many([objs[i] for i in sub], [scene_seed(43, scenes[i]["image_filename"]) for i in sub])
    assert other != again
    solver = Solver()
    for i, cs in zip(sub, again, strict=True):
        for c in cs:  # docs/spec_language.md §8.2: a caption that holds in every scene of size n says nothing
            assert not solver.is_tautology(Constraint.from_dict(c["constraint"]), len(objs[i]))


@needs_dev
def test_prefilter_does_not_change_the_captions(dev):
    scenes, objs, caps, _ = dev
    sub = [100, 130, 150, 165]  # 4 real scenes of 3..10 objects
    plain = CaptionGrounder(prefilter=False).ground_many([objs[i] for i in sub],
                                                         [scene_seed(42, scenes[i]["image_filename"]) for i in sub])
    assert plain == [caps[i] for i in sub]


@pytest.mark.skipif(not (SHIPPED / "scenes.json").is_file(), reason="no CLEVR scenes shipped in tests/data/clevr")
def test_shipped_clevr_scenes():
    """The few real CLEVR images shipped with the tests (images next to scenes.json): sizes from the files,
    captions that hold, pairs pointing at existing images."""
    solver = Solver()
    raws = load_clevr_scenes(SHIPPED / "scenes.json")
    pairs = build_pairs(SHIPPED / "scenes.json", SHIPPED, seed=5)
    assert pairs and all(Path(p.image).is_file() for p in pairs)
    for raw in raws:
        img = SHIPPED / raw["image_filename"]
        scene = clevr_scene_to_scene(raw, image_path=img)
        if img.is_file():
            from logicval_hf.training.captions import image_size_of

            assert scene.image_size == image_size_of(img)
        caps = [{"class": p.cls, "template": p.template, "n": p.n, "constraint": p.constraint, "prompt": p.prompt}
                for p in pairs if p.image_filename == raw["image_filename"]]
        assert len(caps) == len(ground_captions(raw, seed=scene_seed(5, raw["image_filename"]), image_path=img))
        _check_captions(scene, caps, solver)


# ---------------------------------------------------------------------------------------------------------
# Training data: pairs, held-out set, batches
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dev_pairs(dev_grounded):
    return dev_grounded[0]


def _check_split(split, pairs):
    held_images = {p.image_filename for p in split.heldout}
    assert len(held_images) == len(split.heldout)  # one held-out pair per image
    seen = set()
    for batch in split.batches:
        assert len({p.image_filename for p in batch}) == len(batch)  # no image twice in a batch
        assert not held_images & {p.image_filename for p in batch}  # held-out images never train
        per = collections.Counter(p.key for p in batch)
        assert set(per) == set(split.templates) and set(per.values()) == {split.quota}
        ids = {(p.image_filename, p.cls) for p in batch}
        assert not ids & seen  # a pair is used once over all batches
        seen |= ids
    assert all(p in pairs for b in split.batches for p in b)


@needs_dev
def test_dev_split_heldout_and_balanced_batches(dev_pairs, tmp_path):
    assert len({p.image_filename for p in dev_pairs}) == 170
    split = split_pairs(dev_pairs, seed=42, batch_size=70, min_template_count=1)
    assert len(split.heldout) == 99
    assert collections.Counter(p.cls for p in split.heldout) == {f"C{i}": 11 for i in range(1, 10)}
    assert len(split.batches) >= 2
    _check_split(split, dev_pairs)
    again = split_pairs(dev_pairs, seed=42, batch_size=70)
    assert again.heldout == split.heldout and again.batches == split.batches
    assert split_pairs(dev_pairs, seed=7, batch_size=70).heldout != split.heldout
    write_split(split, tmp_path)
    back = read_split(tmp_path)
    assert back.heldout == split.heldout and back.batches == split.batches and back.quota == split.quota
    summary = json.loads((tmp_path / "split.json").read_text())
    assert summary["heldout"]["images"] == 99 and summary["batches"] == [len(b) for b in split.batches]


@needs_dev
def test_dev_split_reports_what_cannot_be_done(dev_pairs):
    with pytest.raises(ValueError, match="distinct images"):
        split_pairs(dev_pairs, seed=42, batch_size=2000)
    with pytest.raises(ValueError, match="held-out set"):
        split_pairs(dev_pairs, seed=42, heldout_per_class=40)
    few = split_pairs(dev_pairs, seed=42, batch_size=30, min_template_count=6, max_batches=1)
    assert len(few.batches) == 1 and len(few.templates) < 71
    _check_split(few, dev_pairs)


@pytest.mark.slow  # renders and grounds scenes end to end (~3 s); the grounder has quick tests above
def test_lora_data_cli_on_rendered_scenes(tmp_path, capsys):
    root = _rendered(tmp_path / "clevr", 40)
    out = tmp_path / "data"
    assert lora_data_main(["--scenes", str(root / "scenes.json"), "--images", str(root / "images"), "--out", str(out),
                           "--heldout-per-class", "1", "--batch-size", "10", "--min-template-count", "6"]) == 0
    split = read_split(out)
    assert len(split.heldout) == 9 and split.batches
    pairs = build_pairs(root / "scenes.json", root / "images", seed=42)
    _check_split(split, pairs)
    assert all(Path(p.image).is_file() for b in split.batches for p in b)
    # the scene's image size is read from its file (96x64), so regions are those of the rendered image
    raw = load_clevr_scenes(root / "scenes.json")[0]
    scene = clevr_scene_to_scene(raw, image_path=root / "images" / raw["image_filename"])
    assert scene.image_size == (96, 64)
    solver = Solver()
    by_image = collections.defaultdict(list)
    for p in pairs:
        by_image[p.image_filename].append({"class": p.cls, "template": p.template, "n": p.n,
                                           "constraint": p.constraint, "prompt": p.prompt})
    _check_captions(scene, by_image[raw["image_filename"]], solver)


def _rendered(tmp_path: Path, count: int) -> Path:
    from logicval_hf.benchmark.sampler import random_scene
    from logicval_hf.generation.render import render_scene

    (tmp_path / "images").mkdir(parents=True)
    rng = random.Random(0)
    scenes = []
    for i in range(count):
        img, drawn = render_scene(random_scene(rng.randint(3, 7), rng, image_size=(96, 64)), (96, 64), seed=i)
        img.save(tmp_path / "images" / f"R_{i:03d}.png")
        scenes.append({"image_filename": f"R_{i:03d}.png", "objects": [
            dict(o.attributes, pixel_coords=[(o.bbox[0] + o.bbox[2]) / 2, (o.bbox[1] + o.bbox[3]) / 2, 1.0])
            for o in drawn.objects]})
    (tmp_path / "scenes.json").write_text(json.dumps({"info": {}, "scenes": scenes}))
    return tmp_path
