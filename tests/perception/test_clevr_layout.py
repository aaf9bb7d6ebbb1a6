"""benchmarks/clevr_layout.py lays out images of the CLEVR v1.0 release (its zip or the unpacked folder) as
benchmarks/clevr_perception.py reads them. The release here is a tiny stand-in of the same shape: the eight CLEVR
images of tests/data/clevr under the release's names and folders, with their official scene entries."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from helpers import load_script

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "clevr"


@pytest.fixture(scope="module")
def layout():
    return load_script(REPO / "benchmarks" / "clevr_layout.py", "clevr_layout_script")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """``CLEVR_v1.0/`` with the eight images as val images 0..7 (shuffled in the scene file, as order must not
    matter), a train split of the first three, and no test scenes."""
    root = tmp_path_factory.mktemp("release") / "CLEVR_v1.0"
    shipped = json.loads((DATA / "scenes.json").read_text())
    for split, scenes in (("val", shipped), ("train", shipped[:3])):
        (root / "images" / split).mkdir(parents=True)
        entries = []
        for i, s in enumerate(scenes):
            name = f"CLEVR_{split}_{i:06d}.png"
            shutil.copy(DATA / s["image_filename"], root / "images" / split / name)
            entries.append({**s, "image_filename": name, "image_index": i, "split": split})
        (root / "scenes").mkdir(exist_ok=True)
        info = {"split": split, "version": "1.0", "license": "Creative Commons Attribution (CC BY 4.0)"}
        (root / "scenes" / f"CLEVR_{split}_scenes.json").write_text(json.dumps({"info": info,
                                                                                  "scenes": entries[::-1]}))
    (root / "images" / "test").mkdir()
    return root


@pytest.fixture(scope="module")
def release_zip(release) -> Path:
    path = release.parent / "CLEVR_v1.0.zip"
    with zipfile.ZipFile(path, "w") as z:
        for f in sorted(release.rglob("*")):
            z.write(f, f.relative_to(release.parent).as_posix())
    return path


def _names(out: Path) -> list[str]:
    return [s["image_filename"] for s in json.loads((out / "scenes.json").read_text())]


@pytest.mark.parametrize("kind", ["zip", "folder", "parent folder"])
def test_the_first_images_of_a_split_in_the_benchmarks_layout(layout, release, release_zip, tmp_path, kind):
    source = {"zip": release_zip, "folder": release, "parent folder": release.parent}[kind]
    assert layout.main([str(source), "--out", str(tmp_path / "out"), "--count", "5"]) == 0
    out = tmp_path / "out"
    assert _names(out) == [f"CLEVR_val_{i:06d}.png" for i in range(5)]
    assert sorted(p.name for p in (out / "images").iterdir()) == _names(out)
    for name in _names(out):  # images unchanged
        assert (out / "images" / name).read_bytes() == (release / "images" / "val" / name).read_bytes()
    # what the perception benchmark reads: scenes with images and their objects' pixel centres
    bench = load_script(REPO / "benchmarks" / "clevr_perception.py", "clevr_perception_for_layout")
    scenes = bench.load_clevr(out)
    assert len(scenes) == 5 and all(s["_rgb"].ndim == 3 and s["objects"] for s in scenes)


def test_named_images_and_a_seeded_sample(layout, release_zip, tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("# two of them\nCLEVR_train_000002.png\nCLEVR_train_000000.png  # the first\n\n")
    layout.main([str(release_zip), "--out", str(tmp_path / "a"), "--split", "train", "--names", str(names)])
    assert _names(tmp_path / "a") == ["CLEVR_train_000000.png", "CLEVR_train_000002.png"]
    for k in "bc":
        layout.main([str(release_zip), "--out", str(tmp_path / k), "--count", "3", "--seed", "4"])
    assert _names(tmp_path / "b") == _names(tmp_path / "c") and len(_names(tmp_path / "b")) == 3


@pytest.mark.parametrize(("argv", "message"), [
    (["{zip}", "--split", "test"], "the test split has none"),
    (["{zip}", "--count", "9"], "--count 9: the split has only 8 scenes"),
    (["{zip}", "--count", "0"], "--count must be at least 1"),
    (["{zip}", "--names", "{names}", "--count", "2"], "leave out --count and --seed"),
    (["{zip}", "--names", "{names}"], "not in this split, e.g. 'CLEVR_val_000099.png'"),
    (["{missing}"], "no such file or folder"),
    (["{names}"], "not a zip file"),
    (["{empty}"], "no scenes/CLEVR_val_scenes.json"),
    (["{zip}", "--out", "{names}"], "exists and is not an empty folder"),
])
def test_bad_input_is_one_line_and_writes_nothing(layout, release_zip, tmp_path, capsys, argv, message):
    (tmp_path / "names.txt").write_text("CLEVR_val_000099.png\n")
    (tmp_path / "empty").mkdir()
    fill = {"zip": str(release_zip), "names": str(tmp_path / "names.txt"), "missing": str(tmp_path / "nowhere"),
            "empty": str(tmp_path / "empty")}
    argv = [a.format(**fill) for a in argv]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as e:
        layout.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1], err
    assert not (tmp_path / "out").exists()
