"""The real text-to-image development set (benchmarks/real_t2i): its committed manifest is valid and labelled in the
domain's vocabulary, the rebuild script brings images back from a local git copy (crop and digests checked, offline),
the images of a local copy match the manifest where one is given, and the measurement script grades readings."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import load_script
from PIL import Image

from logicval_hf import Scene, SceneObject
from logicval_hf.perception import register_backend

REPO = Path(__file__).resolve().parents[2]
SET_DIR = REPO / "benchmarks" / "real_t2i"


@pytest.fixture(scope="module")
def man():
    return load_script(SET_DIR / "manifest.py", "real_t2i_manifest")


@pytest.fixture(scope="module")
def rebuild():
    return load_script(SET_DIR / "rebuild.py", "real_t2i_rebuild")


@pytest.fixture(scope="module")
def bench():
    return load_script(REPO / "benchmarks" / "real_t2i_perception.py", "real_t2i_perception")


@pytest.fixture(scope="module")
def entries(man):
    return man.load(man.MANIFEST)


# ---- the committed manifest ---------------------------------------------------------------------------------
def test_the_committed_manifest_is_valid(man, entries):
    assert man.validate(entries) == []


def test_the_set_is_large_and_diverse_and_split_by_repository(entries):
    assert len(entries) >= 150
    assert len({e["repository"] for e in entries}) >= 6
    assert len({e["model"] for e in entries}) >= 6
    parts = Counter(e["split"] for e in entries)
    assert set(parts) == {"dev", "heldout"}
    assert 0.35 <= parts["dev"] / len(entries) <= 0.65, parts
    for key in ("repository", "source_group"):
        split_of: dict[str, set[str]] = {}
        for e in entries:
            split_of.setdefault(e[key], set()).add(e["split"])
        assert all(len(s) == 1 for s in split_of.values()), key


def test_every_label_is_in_the_vocabulary_and_every_entry_names_its_source(man, entries):
    vocab = man.vocabulary()
    assert set(vocab) == {"color", "shape", "material"}
    for e in entries:
        assert man.HEX40.match(e["commit"]) and man.HEX64.match(e["sha256"]), e["id"]
        assert e["repository"].count("/") == 1 and e["path"] and e["licence"], e["id"]
        for o in e["objects"]:
            for a in ("color", "shape", "material"):
                assert o[a] is None or o[a] in vocab[a], (e["id"], o)
            assert man.in_vocabulary(o) or o["description"], (e["id"], o)


def test_every_kind_of_the_issue_is_represented(man, entries):
    seen = Counter(k for e in entries for k in e["kinds"])
    assert set(man.KINDS) - {"plain"} <= set(seen), seen
    assert all(n >= 3 for k, n in seen.items() if k != "plain"), seen


def _entry(**changes):
    e = {"id": "a-b", "repository": "o/r", "path": "x/y.png", "commit": "a" * 40, "licence": "MIT", "model": "m",
         "prompt": "a red cube", "crop": [0, 0, 4, 2], "sha256": "b" * 64, "crop_sha256": "c" * 64, "size": [4, 2],
         "split": "dev", "source_group": "g", "kinds": ["plain"],
         "objects": [{"color": "red", "shape": "cube", "material": "rubber"}], "undecided": ""}
    e.update(changes)
    return e


@pytest.mark.parametrize(("changes", "message"), [
    ({"objects": [{"color": "black", "shape": "cube", "material": None}]}, "color 'black' is not one of"),
    ({"objects": [{"color": "red", "shape": "cone", "material": None}]}, "shape 'cone' is not one of"),
    ({"objects": [{"color": "red", "shape": "cube", "material": "glass"}]}, "material 'glass' is not one of"),
    ({"objects": [{"color": None, "shape": "cone", "material": None, "in_vocabulary": False}],
      "kinds": ["out_of_vocabulary"]}, "needs a description"),
    ({"objects": [{"color": None, "shape": None, "material": None, "in_vocabulary": False, "description": "a cone"}]},
     "out_of_vocabulary is in kinds exactly when"),
    ({"objects": [{"color": None, "shape": "cube", "material": None}]}, "needs the undecided note"),
    ({"objects": [{"color": "red", "shape": "cube"}]}, "missing material"),
    ({"commit": "HEAD"}, "commit must be 40"),
    ({"sha256": "abc"}, "sha256 must be 64"),
    ({"split": "test"}, "split must be one of"),
    ({"kinds": ["plain", "glass"]}, "plain stands alone"),
    ({"kinds": ["shiny"]}, "kinds must be a non-empty list"),
    ({"crop": [4, 0, 2, 2]}, "crop must be [x0, y0, x1, y1]"),
    ({"size": [5, 2]}, "is not the crop's"),
    ({"crop": None}, "crop_sha256 without a crop"),
    ({"prompt": None}, "a missing prompt needs notes"),
    ({"path": "../secret.png"}, "path must be a relative path"),
    ({"repository": "nobody"}, "repository must be owner/name"),
    ({"colour": "red"}, "unknown key 'colour'"),
])
def test_a_bad_entry_is_named_with_its_problem(man, changes, message):
    problems = man.validate([_entry(**changes)])
    assert any(message in p for p in problems), problems


def test_duplicate_ids_and_a_repository_in_both_parts_are_refused(man):
    assert man.validate([_entry(), _entry()]) == ["entry 2 (a-b): duplicate id"]
    problems = man.validate([_entry(), _entry(id="a-c", split="heldout", source_group="h")])
    assert problems == ["entry 2 (a-c): repository 'o/r' has images in both parts"]


def test_the_pixel_digest_depends_on_pixels_and_shape_only(man):
    a = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    assert man.pixels_sha256(a) == man.pixels_sha256(a.copy())
    assert man.pixels_sha256(a) != man.pixels_sha256(a.reshape(4, 2, 3))
    with pytest.raises(ValueError, match="H x W x 3"):
        man.pixels_sha256(a[..., 0])


# ---- rebuilding from a local git copy ---------------------------------------------------------------------------
def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def fake_source(tmp_path, man):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    """A mirror folder holding one repository (``owner/figs``) with one PNG (a 6 x 4 figure) committed, and a
    manifest with the whole file and one crop of it."""
    rgb = np.arange(6 * 4 * 3, dtype=np.uint8).reshape(4, 6, 3) * 3
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    data = buf.getvalue()
    work = tmp_path / "mirrors" / "owner+figs"
    (work / "img").mkdir(parents=True)
    (work / "img" / "grid 1.png").write_bytes(data)
    _git(work, "init", "-q")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "figure")
    commit = _git(work, "rev-parse", "HEAD")
    base = _entry(repository="owner/figs", path="img/grid 1.png", commit=commit,
                  sha256=hashlib.sha256(data).hexdigest())
    whole = dict(base, id="figs-whole", crop=None, crop_sha256=None, size=[6, 4])
    part = dict(base, id="figs-part", crop=[1, 1, 4, 3], crop_sha256=man.pixels_sha256(rgb[1:3, 1:4]), size=[3, 2])
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(e) + "\n" for e in (whole, part)))
    return {"mirror": tmp_path / "mirrors", "manifest": manifest, "rgb": rgb, "data": data, "work": work}


def test_rebuild_from_a_mirror_writes_verifies_and_resumes(rebuild, fake_source, tmp_path, capsys):
    out = tmp_path / "images"
    argv = ["--manifest", str(fake_source["manifest"]), "--mirror", str(fake_source["mirror"]), "--out", str(out)]
    assert rebuild.main(argv) == 0
    assert "2 images: 2 written, 0 kept, 0 failed" in capsys.readouterr().out
    assert (out / "figs-whole.png").read_bytes() == fake_source["data"]
    part = np.asarray(Image.open(out / "figs-part.png").convert("RGB"))
    assert np.array_equal(part, fake_source["rgb"][1:3, 1:4])
    assert rebuild.main(argv) == 0  # a second run keeps the verified files
    assert "0 written, 2 kept" in capsys.readouterr().out
    assert rebuild.main([*argv[:2], "--out", str(out), "--check"]) == 0

    Image.fromarray(np.zeros((2, 3, 3), np.uint8)).save(out / "figs-part.png")  # a wrong crop is caught...
    assert rebuild.main([*argv[:2], "--out", str(out), "--check"]) == 1
    assert "figs-part: pixel sha256" in capsys.readouterr().err
    assert rebuild.main(argv) == 0  # ...and rewritten by the next rebuild
    assert "1 written, 1 kept" in capsys.readouterr().out


def test_rebuild_finds_the_other_mirror_layouts(rebuild, fake_source, tmp_path):
    nested = tmp_path / "nested"
    (nested / "owner").mkdir(parents=True)
    fake_source["work"].rename(nested / "owner" / "figs")
    out = tmp_path / "images"
    assert rebuild.main(["--manifest", str(fake_source["manifest"]), "--mirror", str(nested), "--out", str(out),
                         "--ids", "figs-part"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["figs-part.png"]


@pytest.mark.parametrize(("change", "message"), [
    ({"sha256": "0" * 64}, "has sha256"),
    ({"crop_sha256": "0" * 64}, "the crop's pixel sha256"),
    ({"commit": "f" * 40}, "has no 'img/grid 1.png'"),
    ({"repository": "owner/other"}, "no git copy of owner/other"),
    ({"crop": [1, 1, 9, 3], "size": [8, 2]}, "leaves the 6x4 source"),
])
def test_a_source_that_is_not_the_recorded_one_fails_by_name(rebuild, fake_source, tmp_path, capsys, change,
                                                            message):
    rows = [json.loads(line) for line in fake_source["manifest"].read_text().splitlines()]
    rows[1].update(change)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(e) + "\n" for e in rows))
    out = tmp_path / "images"
    code = rebuild.main(["--manifest", str(bad), "--mirror", str(fake_source["mirror"]), "--out", str(out)])
    assert code == 1
    err = capsys.readouterr().err
    assert "figs-part: " in err and message in err, err
    assert not (out / "figs-part.png").exists()


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give --out DIR"),
    (["--out", "{tmp}", "--mirror", "{tmp}/nowhere"], "no such folder"),
    (["--out", "{tmp}", "--ids", "nope"], "unknown id 'nope'"),
    (["--out", "{tmp}", "--manifest", "{tmp}/bad.jsonl"], "the manifest is not valid: entry 1"),
])
def test_bad_rebuild_arguments_are_one_line_exit_2(rebuild, fake_source, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.delenv(rebuild.OUT_ENV, raising=False)
    (tmp_path / "bad.jsonl").write_text(json.dumps(_entry(split="test")) + "\n")
    args = [a.format(tmp=tmp_path) for a in argv]
    if "--manifest" not in args:
        args += ["--manifest", str(fake_source["manifest"])]
    with pytest.raises(SystemExit) as e:
        rebuild.main(args)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_a_local_copy_of_the_images_matches_the_manifest(rebuild, entries):
    """Where a copy of the images is named (``$LOGICVAL_REAL_T2I``), every file in it is the recorded one."""
    folder = os.environ.get(rebuild.OUT_ENV)
    if not folder or not Path(folder).is_dir():
        pytest.skip(f"no local copy of the images (${rebuild.OUT_ENV})")
    present = [e for e in entries if (Path(folder) / rebuild.file_name(e)).is_file()]
    if not present:
        pytest.skip(f"${rebuild.OUT_ENV} holds none of the images")
    bad = {e["id"]: why for e in present if (why := rebuild.verify_file(e, Path(folder) / rebuild.file_name(e)))}
    assert bad == {}


# ---- measuring -----------------------------------------------------------------------------------------------
def _read_by_pixel(rgb: np.ndarray, **_settings) -> Scene:
    """A backend for these tests: the top-left pixel says what it reads (red: how many red cubes, green: the
    confidence in hundredths)."""
    n, conf = int(rgb[0, 0, 0]), int(rgb[0, 0, 1]) / 100
    objs = tuple(SceneObject({"color": "red", "shape": "cube", "material": "rubber"}, (1.0 + i, 1.0, 2.0 + i, 2.0))
                 for i in range(n))
    return Scene((rgb.shape[1], rgb.shape[0]), objs, confidence=conf)


@pytest.fixture
def small_set(tmp_path, man):
    register_backend("real_t2i_test", _read_by_pixel, replace=True)
    images = tmp_path / "images"
    images.mkdir()
    cube = {"color": "red", "shape": "cube", "material": "rubber"}
    cone = {"color": "blue", "shape": None, "material": None, "in_vocabulary": False, "description": "a blue cone"}
    rows = []
    # (id, split, truth objects, kinds, reading: red cubes, confidence %)
    for k, (split, objs, kinds, n_read, conf) in enumerate([
        ("dev", [cube], ["plain"], 1, 90),                               # right, confident
        ("dev", [cube, cube], ["stacked"], 3, 80),                       # a count too many, confident
        ("dev", [cube, dict(cube, color="blue")], ["plain"], 2, 30),     # count right, colour wrong
        ("dev", [cube, cone], ["out_of_vocabulary"], 1, 60),              # the cone skipped: vocabulary count right
        ("heldout", [cube], ["glass"], 1, 95),
        ("heldout", [cube, cube], ["glass"], 1, 10),
    ]):
        rgb = np.full((8, 8, 3), 128, np.uint8)
        rgb[0, 0] = (n_read, conf, 0)
        buf = io.BytesIO()
        Image.fromarray(rgb).save(buf, format="PNG")
        repo = f"o/{split}"
        rows.append(_entry(id=f"img-{k}", repository=repo, crop=None, crop_sha256=None, size=[8, 8], split=split,
                           source_group=split, sha256=hashlib.sha256(buf.getvalue()).hexdigest(), kinds=kinds,
                           objects=objs))
        (images / f"img-{k}.png").write_bytes(buf.getvalue())
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(e) + "\n" for e in rows))
    assert man.validate(rows) == []
    return {"images": images, "manifest": manifest}


def test_the_figures_grade_count_colour_shape_and_confidence(bench, small_set, tmp_path, capsys):
    out = tmp_path / "r.json"
    r = bench.main(["--images", str(small_set["images"]), "--manifest", str(small_set["manifest"]),
                    "--backend", "real_t2i_test", "--min-confidence", "0.5", "--json", str(out)])
    dev = r["parts"]["dev"]["summary"]
    assert (dev["images"], dev["count"], dev["count_vocabulary"]) == (4, 0.5, 0.75)
    assert (dev["colour_shape"], dev["colour_shape_n"]) == (1 / 3, 3)  # the cone image is not judged
    assert dev["right"] == 0.25 and (dev["too_many"], dev["too_few"]) == (1, 1)
    assert (dev["confident"], dev["confident_right"]) == (3, 1)
    view = r["parts"]["dev"]["min_confidence"][0]
    assert (view["read"], view["images"], view["count"], view["right"]) == (3, 4, 1 / 3, 1 / 3)
    held = r["parts"]["heldout"]
    assert held["by_kind"]["glass"]["count"] == 0.5 and held["summary"]["auroc"] == 1.0
    assert json.loads(out.read_text())["parts"]["dev"]["by_kind"]["stacked"]["count"] == 0.0
    text = capsys.readouterr().out
    assert "real text-to-image set: 6 images (dev 4, heldout 2)" in text and "dev: by kind" in text


def test_separation_reads_the_dev_part_only(bench, small_set, capsys):
    r = bench.main(["--images", str(small_set["images"]), "--manifest", str(small_set["manifest"]),
                    "--backend", "real_t2i_test", "--separation", "--part", "dev"])
    feats = {d["feature"]: d for d in r["separation"]}
    assert feats["confidence"]["auroc"] == 1.0  # the one right reading is the most confident
    assert "candidate_peaks" not in feats  # the clevr backend's own peaks only
    assert set(r["parts"]) == {"dev"}
    with pytest.raises(SystemExit) as e:
        bench.main(["--images", str(small_set["images"]), "--manifest", str(small_set["manifest"]),
                    "--backend", "real_t2i_test", "--separation", "--part", "heldout"])
    assert e.value.code == 2 and "dev part only" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--min-confidence", "1.5"], "--min-confidence must lie in [0, 1], got 1.5"),
    (["--set", "visible_peaks=1", "--backend", "clevr"], "unsupported setting 'visible_peaks'"),
    (["--images", "{tmp}/nowhere"], "no such folder"),
])
def test_bad_measure_arguments_are_one_line_exit_2(bench, small_set, tmp_path, capsys, argv, message):
    args = ["--images", str(small_set["images"]), "--manifest", str(small_set["manifest"]),
            "--backend", "real_t2i_test", *[a.format(tmp=tmp_path) for a in argv]]
    with pytest.raises(SystemExit) as e:
        bench.main(args)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_a_missing_or_changed_image_is_refused_before_any_reading(bench, small_set, capsys):
    (small_set["images"] / "img-2.png").write_bytes(b"not a png")
    with pytest.raises(SystemExit) as e:
        bench.main(["--images", str(small_set["images"]), "--manifest", str(small_set["manifest"]),
                    "--backend", "real_t2i_test"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "1 of 6 images missing or not the recorded ones" in err and "rebuild.py --out" in err


def test_separation_with_the_shipped_parser_counts_its_candidate_peaks(bench, small_set):
    r = bench.main(["--images", str(small_set["images"]), "--manifest", str(small_set["manifest"]),
                    "--separation", "--part", "dev"])
    feats = {d["feature"] for d in r["separation"]}
    assert {"candidate_peaks", "max_candidate_heat", "confidence", "min_shape_prob"} <= feats
    assert len(r["per_image"]) == 4 and all(row["confidence"] is not None for row in r["per_image"])
