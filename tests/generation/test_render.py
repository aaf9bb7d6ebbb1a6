"""The CLEVR-style renderer: layout contract (regions and relations survive drawing), look, determinism."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_data import needs_shared, shared_path

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.generation.render import CLEVR_COLORS, MAX_BOX_OVERLAP, layout_boxes, render_scene

DOMAIN = load_catalog().domain
COLORS = DOMAIN.attributes["color"]
SHAPES = DOMAIN.attributes["shape"]
MATERIALS = DOMAIN.attributes["material"]
RELATIONS = ("left", "right", "front", "behind")
SIZES = ((480, 320), (320, 240))
PROPERTIES = ("data", "clevr_dev", "properties.json")  # CLEVR's own colour table, under the test data root


# ---- building input scenes ---------------------------------------------------------------------------------
def _axis_values(sides: list[int], perm: list[int], total: float, jitter: list[float]) -> list[float]:
    """Distinct coordinates realising side (0: first half, 1: second half) and, within a side, the order of perm.

    The first object of the second half sits exactly on the midline (it belongs to the second half, docs/regions.md §6).
    """
    n = len(sides)
    out = [0.0] * n
    for side in (0, 1):
        members = sorted((i for i in range(n) if sides[i] == side), key=lambda i: perm[i])
        m = len(members)
        for k, i in enumerate(members):
            if side == 0:
                out[i] = (k + 0.5 + 0.4 * jitter[i]) / m * (total / 2)
            else:
                out[i] = total / 2 + (k + 0.45 * (1 + jitter[i]) * (k > 0)) / m * (total / 2) * 0.999
    return out


def make_scene(regions, x_perm, y_perm, attrs, size=(480, 320), halves=None, jitter=None) -> Scene:
    n = len(regions)
    W, H = size
    jx = jitter[0] if jitter else [0.0] * n
    jy = jitter[1] if jitter else [0.0] * n
    xs = _axis_values([r % 2 for r in regions], x_perm, W, jx)
    ys = _axis_values([r // 2 for r in regions], y_perm, H, jy)
    halves = halves or [(10.0, 10.0)] * n
    objs = tuple(SceneObject(dict(attrs[i]), (xs[i] - halves[i][0], ys[i] - halves[i][1], xs[i] + halves[i][0],
                                              ys[i] + halves[i][1])) for i in range(n))
    return Scene((W, H), objs)


def random_scene(rng: random.Random, n: int, size=(480, 320), regions=None) -> Scene:
    regions = regions if regions is not None else [rng.randrange(4) for _ in range(n)]
    x_perm = rng.sample(range(n), n)
    y_perm = rng.sample(range(n), n)
    attrs = [{"color": rng.choice(COLORS), "shape": rng.choice(SHAPES), "material": rng.choice(MATERIALS)}
             for _ in range(n)]
    halves = [(rng.uniform(1, 40), rng.uniform(1, 40)) for _ in range(n)]
    jitter = [[rng.uniform(-1, 1) for _ in range(n)] for _ in range(2)]
    return make_scene(regions, x_perm, y_perm, attrs, size, halves, jitter)


# ---- checks ------------------------------------------------------------------------------------------------
def assert_same_facts(inp: Scene, out: Scene) -> None:
    n = len(inp.objects)
    assert len(out.objects) == n
    assert out.regions() == inp.regions()
    for rel in RELATIONS:
        for a in range(n):
            for b in range(n):
                assert out.holds(rel, a, b) == inp.holds(rel, a, b), (rel, a, b)


def assert_total(out: Scene) -> None:
    """Strict on both axes: every pair of distinct objects is ordered (no ties)."""
    n = len(out.objects)
    for a in range(n):
        for b in range(a + 1, n):
            assert out.holds("left", a, b) != out.holds("left", b, a)
            assert out.holds("behind", a, b) != out.holds("behind", b, a)


def assert_well_formed(inp: Scene, img, out: Scene, size) -> None:
    W, H = size
    assert img.mode == "RGB" and img.size == (W, H)
    assert tuple(out.image_size) == (W, H)
    assert [dict(o.attributes) for o in out.objects] == [dict(o.attributes) for o in inp.objects]
    for o in out.objects:
        x0, y0, x1, y1 = o.bbox
        assert 0 <= x0 < x1 <= W and 0 <= y0 < y1 <= H
        assert all(float(v).is_integer() for v in o.bbox)  # tight pixel boxes
    assert max_overlap(out) <= MAX_BOX_OVERLAP


def max_overlap(out: Scene) -> float:
    worst = 0.0
    boxes = [o.bbox for o in out.objects]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
            ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
            small = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
            worst = max(worst, iw * ih / small)
    return worst


def own_pixels(arr: np.ndarray, out: Scene, i: int, inner: float = 0.3) -> np.ndarray:
    """Pixels of the central part of box i that lie in no other box, shape (k, 3)."""
    x0, y0, x1, y1 = (int(v) for v in out.objects[i].bbox)
    w, h = x1 - x0, y1 - y0
    cx0, cx1 = x0 + int(inner * w), x1 - int(inner * w)
    cy0, cy1 = y0 + int(inner * h), y1 - int(inner * h)
    X = np.arange(cx0, cx1)[None, :]
    Y = np.arange(cy0, cy1)[:, None]
    keep = np.ones((cy1 - cy0, cx1 - cx0), dtype=bool)
    for j, o in enumerate(out.objects):
        if j != i:
            b = o.bbox
            keep &= ~((b[0] <= X) & (b[2] > X) & (b[1] <= Y) & (b[3] > Y))
    return arr[cy0:cy1, cx0:cx1][keep].astype(np.float64)


PALETTE_NAMES = list(CLEVR_COLORS)
PALETTE = np.array([CLEVR_COLORS[c] for c in PALETTE_NAMES], dtype=np.float64)


def nearest_colour(rgb: np.ndarray) -> str:
    return PALETTE_NAMES[int(np.argmin(np.linalg.norm(PALETTE - rgb, axis=1)))]


# ---- vocabulary ---------------------------------------------------------------------------------------------
def test_palette_covers_domain_colours():
    assert set(COLORS) <= set(CLEVR_COLORS)


@needs_shared(*PROPERTIES)
def test_palette_is_clevrs():
    props = json.loads(shared_path(*PROPERTIES).read_text())
    assert {k: tuple(v) for k, v in props["colors"].items()} == dict(CLEVR_COLORS)


# ---- layout contract ----------------------------------------------------------------------------------------
@st.composite
def layouts(draw):
    n = draw(st.integers(0, 10))
    regions = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    x_perm = draw(st.permutations(range(n)))
    y_perm = draw(st.permutations(range(n)))
    attrs = draw(st.lists(st.fixed_dictionaries({"color": st.sampled_from(COLORS), "shape": st.sampled_from(SHAPES),
                                                 "material": st.sampled_from(MATERIALS)}), min_size=n, max_size=n))
    in_size = draw(st.sampled_from([(480, 320), (320, 240), (1000, 700)]))
    jit = st.lists(st.floats(-1, 1), min_size=n, max_size=n)
    jitter = [draw(jit), draw(jit)]
    halves = draw(st.lists(st.tuples(st.floats(0.5, 60), st.floats(0.5, 60)), min_size=n, max_size=n))
    scene = make_scene(regions, list(x_perm), list(y_perm), attrs, in_size, halves, jitter)
    return scene, draw(st.sampled_from(SIZES)), draw(st.integers(0, 2**31))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_render_preserves_regions_and_relations(case):
    scene, size, seed = case
    img, out = render_scene(scene, size, seed)
    assert_well_formed(scene, img, out, size)
    assert_same_facts(scene, out)
    assert_total(out)


@pytest.mark.slow
def test_seeded_random_scenes_facts_and_colours():
    """Many random scenes: facts survive, boxes are sane, and object pixels show their CLEVR colour."""
    rng = random.Random(20240611)
    checked = 0
    for t in range(120):
        n = rng.randint(0, 10)
        size = SIZES[t % 2]
        regions = [rng.randrange(4)] * n if t % 5 == 0 else None
        scene = random_scene(rng, n, size, regions)
        img, out = render_scene(scene, size, seed=t)
        assert_well_formed(scene, img, out, size)
        assert_same_facts(scene, out)
        arr = np.asarray(img)
        for i, o in enumerate(out.objects):
            px = own_pixels(arr, out, i)
            if len(px) < 4:
                continue
            assert nearest_colour(np.median(px, axis=0)) == o.attributes["color"], (t, i, o)
            checked += 1
    assert checked > 400


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("region", range(4))
def test_crowded_region(region, size):
    """Nine objects in one region (and ten) still come out with their regions, orders and separable boxes."""
    rng = random.Random(region)
    for n in (9, 10):
        scene = random_scene(rng, n, size, [region] * n)
        img, out = render_scene(scene, size, seed=n)
        assert_well_formed(scene, img, out, size)
        assert_same_facts(scene, out)
        for i in range(n):
            w = out.objects[i].bbox[2] - out.objects[i].bbox[0]
            assert w >= 8  # still visible objects


def test_planned_layout_realises_facts():
    rng = random.Random(7)
    for t in range(examples(60)):
        size = SIZES[t % 2]
        scene = random_scene(rng, rng.randint(1, 10), size)
        boxes = layout_boxes(scene, size, seed=t)
        planned = Scene(size, tuple(SceneObject(dict(o.attributes), tuple(b))
                                    for o, b in zip(scene.objects, boxes, strict=True)))
        assert_same_facts(scene, planned)
        for x0, y0, x1, y1 in boxes:
            assert 0 <= x0 < x1 <= size[0] and 0 <= y0 < y1 <= size[1]
        _, out = render_scene(scene, size, seed=t)
        assert np.abs(np.array(boxes) - np.array([o.bbox for o in out.objects])).max() <= 2.0


def test_ties_are_broken_by_index():
    a = {"color": "red", "shape": "cube", "material": "rubber"}
    b = {"color": "blue", "shape": "sphere", "material": "metal"}
    c = {"color": "green", "shape": "cylinder", "material": "rubber"}
    # objects 0 and 1 share their centre exactly (both axes); object 2 ties with 1 on y only
    scene = Scene((480, 320), (SceneObject(a, (90, 90, 110, 110)), SceneObject(b, (80, 80, 120, 120)),
                               SceneObject(c, (300, 95, 320, 105))))
    assert not scene.holds("left", 0, 1) and not scene.holds("left", 1, 0)
    _img, out = render_scene(scene, (480, 320), seed=1)
    assert out.regions() == scene.regions()
    assert out.holds("left", 0, 1) and out.holds("behind", 0, 1)  # lower index goes left / behind
    assert out.holds("behind", 1, 2)
    for rel in RELATIONS:  # every relation the input states is kept
        for i in range(3):
            for j in range(3):
                if scene.holds(rel, i, j):
                    assert out.holds(rel, i, j)
    assert_total(out)


def test_output_size_is_independent_of_input_size():
    rng = random.Random(3)
    scene = random_scene(rng, 7, (1000, 700))
    for size in SIZES:
        img, out = render_scene(scene, size, seed=5)
        assert_well_formed(scene, img, out, size)
        assert_same_facts(scene, out)


# ---- determinism and the empty scene ------------------------------------------------------------------------
def test_deterministic():
    scene = random_scene(random.Random(11), 6)
    img1, out1 = render_scene(scene, (480, 320), seed=4)
    img2, out2 = render_scene(scene, (480, 320), seed=4)
    assert img1.tobytes() == img2.tobytes()
    assert out1.to_dict() == out2.to_dict()
    img3, out3 = render_scene(scene, (480, 320), seed=5)
    assert img3.tobytes() != img1.tobytes()
    assert_same_facts(scene, out3)


def test_empty_scene():
    img, out = render_scene(Scene.empty((480, 320)), (320, 240), seed=9)
    assert img.mode == "RGB" and img.size == (320, 240)
    assert out.objects == () and tuple(out.image_size) == (320, 240)
    arr = np.asarray(img).astype(np.float64)
    assert 80 < arr.mean() < 160 and arr.std() < 25  # plain grey ground
    assert np.abs(arr[..., 0] - arr[..., 2]).mean() < 8  # no colour
    img2, _ = render_scene(Scene.empty(), (320, 240), seed=0)
    assert img2.tobytes() == img.tobytes()


def test_rejects_tiny_images_and_unknown_colours():
    scene = random_scene(random.Random(1), 2)
    with pytest.raises(ValueError):
        render_scene(scene, (40, 30))
    bad = Scene((480, 320), (SceneObject({"color": "pink", "shape": "cube", "material": "rubber"}, (0, 0, 10, 10)),))
    with pytest.raises(ValueError):
        render_scene(bad)


# ---- look ---------------------------------------------------------------------------------------------------
# the inner loop looks at the first shape only
@pytest.mark.parametrize("shape", [pytest.param(s, marks=() if i == 0 else pytest.mark.slow)
                                   for i, s in enumerate(SHAPES)])
def test_metal_has_brighter_specular_maxima(shape):
    """The whitest pixel (max over the box of min(R, G, B): a highlight, not a hue) is brighter for metal."""
    ground = np.asarray(render_scene(Scene.empty(), (480, 320))[0]).astype(np.float64).min(axis=2)
    for colour in COLORS:
        for seed in (0, 1):
            objs = (SceneObject({"color": colour, "shape": shape, "material": "rubber"}, (100, 200, 120, 220)),
                    SceneObject({"color": colour, "shape": shape, "material": "metal"}, (350, 200, 370, 220)))
            img, out = render_scene(Scene((480, 320), objs), (480, 320), seed)
            arr = np.asarray(img).astype(np.float64).min(axis=2)
            peak, floor = [], []
            for o in out.objects:
                x0, y0, x1, y1 = (int(v) for v in o.bbox)
                peak.append(arr[y0:y1, x0:x1].max())
                floor.append(ground[y0:y1, x0:x1].max())  # what the bare ground gives there
            assert peak[1] > peak[0] + 20, (colour, shape, seed, peak)
            assert peak[1] > floor[1] + 20  # the metal highlight is on the object, not the ground


def test_far_objects_are_higher_and_smaller():
    """Same object in front and behind: the one behind is drawn higher and smaller (perspective)."""
    o = {"color": "gray", "shape": "sphere", "material": "rubber"}
    compared = 0
    for seed in range(6):
        scene = Scene((480, 320), (SceneObject(o, (100, 50, 110, 60)), SceneObject(o, (300, 250, 310, 260))))
        _, out = render_scene(scene, (480, 320), seed)
        back, front = out.objects
        if abs((back.bbox[2] - back.bbox[0]) / (front.bbox[2] - front.bbox[0]) - 1) > 0.6:
            continue  # one large, one small (CLEVR sizes): not comparable
        assert back.center[1] < front.center[1]
        assert back.bbox[2] - back.bbox[0] < front.bbox[2] - front.bbox[0]
        compared += 1
    assert compared >= 3
