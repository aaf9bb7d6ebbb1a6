"""The Annotate tab's actions without a browser or a server (`logicval_hf.space.annotate_actions`): what
``space/app.py`` used to decide itself (the echo of a load, the next image, the export zip)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from logicval_hf.space import annotation_values as vals
from logicval_hf.space.annotate_actions import AnnotationDesk

IDS = ["3SAT-0001", "3SAT-0002", "3SAT-0003", "1SAT-0004"]


def _box(x: float, y: float, label: str, w: float = 40, h: float = 30) -> dict:
    return {"xmin": x, "ymin": y, "xmax": x + w, "ymax": y + h, "label": label,
            "color": vals.rgb_string(vals.label_color(label))}


@pytest.fixture
def desk(tmp_path):
    root = tmp_path / "outputs"
    (root / "m").mkdir(parents=True)
    for i in IDS:
        Image.new("RGB", (120, 80), "gray").save(root / "m" / f"{i}.png")
    return AnnotationDesk(root, max_file_bytes=1024 * 1024)


def test_load_then_its_echo_is_not_an_edit(desk, tmp_path):
    shown = desk.load("m", "3SAT-0001", tmp_path / "cache")
    assert shown.boxes == [] and shown.status == "Loaded **3SAT-0001** (no annotation yet)"
    assert Path(shown.image).read_bytes() == (desk.root / "m" / "3SAT-0001.png").read_bytes()
    assert not shown.image.startswith(str(desk.root))  # served from the cache copy, not the folder
    echo = desk.save_boxes(shown.key, [], "alice")
    assert echo.status is None and json.loads(echo.key)["fresh"] is False
    assert desk.store.history("m") == []
    saved = desk.save_boxes(echo.key, [_box(10, 10, "red metal cube")], "alice")
    assert saved.status.startswith("✔ Saved 1 box(es) of **3SAT-0001** (edit #1, alice")
    again = desk.load("m", "3SAT-0001", tmp_path / "cache")
    assert [b["label"] for b in again.boxes] == ["red metal cube"] and "last edit by alice" in again.status
    # once settled, the same boxes again are a save that changes nothing
    assert desk.save_boxes(saved.key, [_box(10, 10, "red metal cube")], "bob").status.startswith("1 box(es) of")


def test_fields_and_refusals(desk, tmp_path):
    key = desk.load("m", "3SAT-0002", tmp_path / "cache").key
    assert desk.save_field(key, "empty_scene", True, "bob").startswith("✔ Saved empty scene of **3SAT-0002**")
    with pytest.raises(vals.AnnotationError, match="no image loaded"):
        desk.save_field("", "notes", "x", "bob")
    with pytest.raises(ValueError, match="box 1"):
        desk.save_boxes(json.dumps({"model": "m", "image_id": "3SAT-0002", "fresh": False}),
                        [_box(500, 500, "red metal cube")], "bob")
    assert [h["field"] for h in desk.store.history("m")] == ["empty_scene"]


def test_next_unannotated_goes_on_from_the_current_image_and_wraps(desk):
    for i in ("3SAT-0001", "3SAT-0003"):
        desk.store.save("m", i, "empty_scene", True, "alice")
    assert desk.next_unannotated("m", "3SAT", None) == "3SAT-0002"
    assert desk.next_unannotated("m", "3SAT", "3SAT-0002") == "3SAT-0002"  # the only one left, wrapped round
    desk.store.save("m", "3SAT-0002", "empty_scene", True, "alice")
    assert desk.next_unannotated("m", "3SAT", "3SAT-0001") is None
    assert desk.next_unannotated("m", None, "3SAT-0003") == "1SAT-0004"
    assert desk.next_unannotated(None, "3SAT", None) is None
    assert desk.progress_text("m", "3SAT") == "**m / 3SAT:** 3 of 3 images annotated."


def test_export_zip_holds_the_exported_files(desk):
    desk.store.save("m", "3SAT-0001", "boxes", [_box(10, 10, "red metal cube")], "alice")
    desk.store.save("m", "3SAT-0002", "deformed", True, "alice")  # a flag alone is not an annotation
    md, path = desk.export_zip("m")
    assert md.startswith("Exported **1** scene graph(s)") and "Skipped 1:\n- 3SAT-0002" in md
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["m/3SAT-0001.json", "m/annotations.jsonl", "m/flags.jsonl"]
        scene = json.loads(z.read("m/3SAT-0001.json"))
    assert scene["objects"][0]["color"] == "red" and scene["image_size"] == [120, 80]
    assert (desk.export_dir / "m" / "3SAT-0001.json").is_file()
    with pytest.raises(vals.AnnotationError, match="choose a model folder"):
        desk.export_zip("")
