"""benchmarks/clevr_perception.py sorts each wrong image's errors into kinds, and tells apart the errors whose
truth the pixels cannot settle (a centre within 1 px of a midline, an object below CLEVR's visibility floor)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import clevr_folder, load_script, render_folder

from logicval_hf import Scene, SceneObject

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "clevr_perception_bench_kinds")


def _obj(x, y, color="red", shown=None, at_centre=None, j=0):
    o = {"pixel_coords": [x, y, 0.0], "color": color, "shape": "cube", "material": "rubber", "size": "small"}
    if shown is not None:
        o["_pixels_shown"], o["_centre_shows"] = shown, j if at_centre is None else at_centre
    return o


def _pred(W, H, *objs):
    return Scene((W, H), tuple(SceneObject({"color": c, "shape": "cube", "material": "rubber"},
                                           (x - 5, y - 5, x + 5, y + 5)) for x, y, c in objs))


def test_a_region_slip_at_the_midline_is_unsettled_and_one_further_out_is_not(bench):
    W, H = 480, 320
    near = {"image_filename": "a.png", "image_width": W, "image_height": H, "objects": [_obj(240.0, 100.0)]}
    far = {"image_filename": "b.png", "image_width": W, "image_height": H, "objects": [_obj(238.0, 100.0)]}
    r = bench.score([near, far], [_pred(W, H, (239.4, 100, "red")), _pred(W, H, (241.0, 100, "red"))])
    kinds = [p["error_kinds"] for p in r["per_image"]]
    assert kinds == [["region (centre within 1 px of the midline)"], ["region"]]
    assert r["exact_scene_graph_rate"] == 0.0
    assert r["exact_but_for_unsettled_truth"] == 0.5
    assert r["wrong_images_by_error_kind"] == {"region (centre within 1 px of the midline)": 1, "region": 1}


def test_errors_on_objects_behind_others_or_below_the_floor_are_named(bench):
    W, H = 480, 320  # the floor: 200 pixels
    s = {"image_filename": "c.png", "image_width": W, "image_height": H,
         "objects": [_obj(100.0, 100.0, "red", shown=150, j=0), _obj(300.0, 100.0, "blue", shown=900, at_centre=2, j=1),
                     _obj(400.0, 250.0, "green", shown=5000, j=2), _obj(100.0, 250.0, "gray", shown=3000, j=3)]}
    # object 0 read yellow (below the floor), object 1 missed (its centre on object 2), object 3 read brown
    r = bench.score([s], [_pred(W, H, (100, 100, "yellow"), (400, 250, "green"), (100, 250, "brown"))])
    got = r["per_image"][0]["error_kinds"]
    assert got == sorted(["color (below CLEVR's visibility floor)", "missed (centre hidden)", "color"])
    assert r["exact_but_for_unsettled_truth"] == 0.0  # a clear colour slip and a readable miss stay errors
    only_floor = bench.score([s], [_pred(W, H, (100, 100, "yellow"), (300, 100, "blue"), (400, 250, "green"),
                                         (100, 250, "gray"))])
    assert only_floor["per_image"][0]["error_kinds"] == ["color (below CLEVR's visibility floor)"]
    assert only_floor["exact_but_for_unsettled_truth"] == 1.0


def test_real_clevr_scenes_without_masks_get_plain_kinds(bench):
    s = {"image_filename": "d.png", "image_width": 480, "image_height": 320, "objects": [_obj(100.0, 100.0)]}
    r = bench.score([s], [_pred(480, 320, (100, 100, "blue"))])
    assert r["per_image"][0]["error_kinds"] == ["color"]
    assert bench.score([s], [_pred(480, 320, (100, 100, "red"))])["per_image"][0]["error_kinds"] == []


def test_render_folders_carry_what_each_object_shows(bench, tmp_path):
    folder = render_folder(tmp_path / "renders", 2, masks=True)
    scenes = bench.load_renders(folder, 1.0)
    for s in scenes:
        for o in s["objects"]:
            assert o["_pixels_shown"] > 0
            assert o["_centre_shows"] in range(-1, len(s["objects"]))
        assert sum(o["_pixels_shown"] for o in s["objects"]) <= s["image_width"] * s["image_height"]
    assert any(o["_centre_shows"] == j for s in scenes for j, o in enumerate(s["objects"]))
    assert len(scenes) == 2


def test_the_suite_table_ends_with_the_unsettled_column(bench, tmp_path, capsys):
    real = clevr_folder(tmp_path / "real", 2)
    renders = render_folder(tmp_path / "renders", 2, masks=True)
    out = tmp_path / "suite.json"
    bench.main([str(real), "--suite", "--suite-renders", f"tiny={renders}", "--no-speed", "--constraints", "0",
                "--json", str(out)])
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert table[0].endswith("| img/s | exact but for unsettled truth |")
    r = json.loads(out.read_text())
    assert set(r) >= {"real CLEVR", "renders tiny"}
    for name, row in zip(r, table[2:], strict=True):
        assert row.startswith(f"| {name} |")
        assert r[name]["exact_scene_graph_rate"] <= r[name]["exact_but_for_unsettled_truth"] <= 1.0
        assert row.endswith(f"| {r[name]['exact_but_for_unsettled_truth']:.3f} |")


def test_empty_scenes_count_what_was_seen_there_and_leave_undefined_rates_undefined(bench):
    W, H = 256, 256  # two frames with no objects (render-clevr --empty): one read empty, one with a false object
    e1 = {"image_filename": "e1.png", "image_width": W, "image_height": H, "objects": []}
    e2 = {"image_filename": "e2.png", "image_width": W, "image_height": H, "objects": []}
    r = bench.score([e1, e2], [_pred(W, H), _pred(W, H, (50, 60, "red"))])
    assert r["empty_scenes"] == 2 and r["empty_scenes_read_empty"] == 1
    assert r["count_accuracy"] == r["exact_scene_graph_rate"] == 0.5
    assert r["per_image"][1]["error_kinds"] == ["spurious"]
    # nothing to find and nothing matched: no recall or attribute accuracy, rather than a 0 that reads as failure
    assert r["detection_recall"] is None and r["detection_precision"] == 0.0
    assert r["region_accuracy_on_matched"] is None and set(r["attribute_accuracy_on_matched"].values()) == {None}
    full = {"image_filename": "f.png", "image_width": W, "image_height": H, "objects": [_obj(50.0, 60.0)]}
    mixed = bench.score([e1, full], [_pred(W, H), _pred(W, H, (50, 60, "red"))])
    assert mixed["empty_scenes"] == 1 and mixed["empty_scenes_read_empty"] == 1
    assert mixed["detection_recall"] == mixed["detection_precision"] == 1.0
