"""benchmarks/clevr_perception.py breaks render sets down by the kinds their scenes record (the world kind of
profile t2i_world, the floor kind) and gives the materials' whole confusion matrix: the figures a refit for
metal that reflects a world is measured by."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import load_script

from logicval_hf import Scene, SceneObject

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "clevr_perception_bench_worlds")


def _scene(name: str, materials: list[str], groups: dict[str, str]) -> dict:
    objs = [{"pixel_coords": [60.0 + 100 * k, 100.0, 0.0], "color": "red", "shape": "cube", "material": m}
            for k, m in enumerate(materials)]
    return {"image_filename": name, "image_width": 480, "image_height": 320, "objects": objs, "_groups": groups}


def _read(scene: dict, materials: list[str]) -> Scene:
    return Scene((480, 320), tuple(SceneObject({"color": "red", "shape": "cube", "material": m},
                                               (o["pixel_coords"][0] - 5, 95, o["pixel_coords"][0] + 5, 105))
                                   for o, m in zip(scene["objects"], materials, strict=True)))


def test_metal_read_as_rubber_is_counted_per_world_and_floor_kind(bench):
    sky = _scene("a.png", ["metal", "metal", "rubber"], {"world": "sky_gradient", "floor": "white"})
    studio = _scene("b.png", ["metal", "rubber"], {"world": "studio", "floor": "white"})
    plain = _scene("c.png", ["rubber"], {"world": "plain", "floor": "texture"})
    r = bench.score([sky, studio, plain], [_read(sky, ["rubber", "metal", "rubber"]), _read(studio, ["metal", "metal"]),
                                           _read(plain, ["rubber"])])
    assert r["material_confusion"] == {"metal": {"metal": 2, "rubber": 1}, "rubber": {"metal": 1, "rubber": 2}}
    g = r["by_group"]
    assert list(g) == sorted(g)
    assert g["world=sky_gradient"] == {"images": 1, "count": 1, "exact": 0, "metal": 2, "metal_read_as_rubber": 1}
    assert g["world=studio"] == {"images": 1, "count": 1, "exact": 0, "metal": 1, "metal_read_as_rubber": 0}
    assert g["world=plain"] == {"images": 1, "count": 1, "exact": 1, "metal": 0, "metal_read_as_rubber": 0}
    assert g["floor=white"] == {"images": 2, "count": 2, "exact": 0, "metal": 3, "metal_read_as_rubber": 1}
    # sets without recorded kinds (real CLEVR) have no breakdown
    bare = {k: v for k, v in plain.items() if k != "_groups"}
    assert bench.score([bare], [_read(bare, ["rubber"])])["by_group"] == {}


def test_each_variation_an_image_got_is_a_group_of_its_own(bench):
    both = _scene("a.png", ["metal", "rubber"], {"variation": ["glossy_floor", "stacked"]})
    glossy = _scene("b.png", ["rubber"], {"variation": ["glossy_floor"]})
    one_missed = _read(both, ["metal", "rubber"])
    one_missed = Scene(one_missed.image_size, one_missed.objects[:1])
    r = bench.score([both, glossy], [one_missed, _read(glossy, ["rubber"])])
    g = r["by_group"]
    assert g["variation=glossy_floor"] == {"images": 2, "count": 1, "exact": 1, "metal": 1,
                                           "metal_read_as_rubber": 0}
    assert g["variation=stacked"]["images"] == 1 and g["variation=stacked"]["count"] == 0


def test_the_kinds_are_read_from_each_scenes_render_settings(bench, tmp_path):
    (tmp_path / "scenes").mkdir()
    settings = {"CLEVRX_000000.png": {"world": {"kind": "studio", "gap": 1.0}, "floor": {"kind": "texture"}},
                "CLEVRX_000001.png": {"floor": "white"},  # profile randomise: the floor kind is a name
                "CLEVRX_000002.png": {},                   # profile clevr: nothing drawn
                "CLEVRX_000003.png": {"variations": {"stacked": {"pairs": 1}, "glossy_floor": None}}}
    for i, (name, rs) in enumerate(settings.items()):
        (tmp_path / "scenes" / f"CLEVRX_{i:06d}.json").write_text(
            json.dumps({"image_filename": name, "render_settings": rs, "objects": []}))
    assert bench.render_groups(tmp_path) == {"CLEVRX_000000.png": {"world": "studio", "floor": "texture"},
                                             "CLEVRX_000001.png": {"floor": "white"}, "CLEVRX_000002.png": {},
                                             "CLEVRX_000003.png": {"variation": ["stacked"]}}
