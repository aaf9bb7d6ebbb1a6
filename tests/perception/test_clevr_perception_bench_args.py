"""benchmarks/clevr_perception.py refuses a render folder it cannot measure in one line, before any work (a
missing or empty folder once printed a table of zeros)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import clevr_folder, load_script, render_folder

from logicval_hf.perception.scene_parser import MODEL_PATHS

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "clevr_perception_bench")


@pytest.mark.parametrize(("argv", "message"), [
    (["--renders", "{missing}"], "argument --renders: '{missing}': no such folder"),
    (["--suite", "--suite-renders", "t={missing}"], "argument --suite-renders: '{missing}': no such folder"),
    (["--suite", "--suite-renders", "{empty}"], "expected NAME=DIR[:FRACTION], got '{empty}'"),
    (["--suite", "--suite-renders", "t={empty}:2"], "FRACTION must lie in (0, 1], got 2"),
    (["--suite", "--suite-renders", "t={empty}:half"], "FRACTION must be a number, got 'half'"),
    (["--set", "model=x.onnx"], "unsupported setting 'model'; did you mean 'model_path'?"),
    (["--set", "visible_peaks=true"], "unsupported setting 'visible_peaks' (supported: threshold,"),
    (["--model", "{missing}/x.onnx"], "x.onnx"),
    (["{empty}"], "no scenes.json in '{empty}': give a folder in CLEVR's layout (benchmarks/clevr_layout.py"),
])
def test_bad_render_sets_are_refused_in_one_line(bench, tmp_path, capsys, argv, message):
    names = {"missing": str(tmp_path / "nowhere"), "empty": str(tmp_path)}
    with pytest.raises(SystemExit) as e:
        bench.main([a.format(**names) for a in argv])
    assert e.value.code == 2
    assert message.format(**names) in capsys.readouterr().err


def test_a_folder_without_scenes_is_refused(bench, tmp_path):
    with pytest.raises(SystemExit, match=r"no usable scene in '.*' \(held-out share 1; expected the CLEVR layout"):
        bench.main(["--renders", str(tmp_path), "--holdout-fraction", "1", "--no-speed"])


def test_one_set_reports_the_scene_confidence_calibration(bench, tmp_path):
    """A single set (not only the suite) reports the confidence's calibration, and each image its confidence,
    so a candidate read set by set can be compared on ECE as well."""
    real = clevr_folder(tmp_path / "real", 3)
    out = tmp_path / "r.json"
    bench.main([str(real), "--no-speed", "--constraints", "0", "--json", str(out)])
    r = json.loads(out.read_text())
    assert 0.0 <= r["calibration"]["ece"] <= 1.0
    assert 0.0 < r["calibration"]["mean_confidence"] <= 1.0
    assert [0.0 < p["confidence"] <= 1.0 for p in r["per_image"]] == [True] * 3


def test_a_detector_without_its_classifier_is_named(bench, tmp_path, capsys):
    """A detector file of one's own (as train_scene_parser exports it) has no classifier beside it, so the
    parser reads attributes with the detector's own heads: the benchmark says so, and is silent when a
    classifier is given or lies beside the file."""
    detector = tmp_path / "mine.onnx"
    shutil.copy(MODEL_PATHS[0], detector)
    real = clevr_folder(tmp_path / "real", 2)
    base = [str(real), "--no-speed", "--constraints", "0", "--model", str(detector)]
    bench.main(base)
    assert "no mine_attributes.onnx beside" in capsys.readouterr().err
    bench.main([*base, "--set", f"attribute_model={MODEL_PATHS[2]}"])
    assert "own heads" not in capsys.readouterr().err
    shutil.copy(MODEL_PATHS[2], tmp_path / "mine_attributes.onnx")
    bench.main(base)
    assert "own heads" not in capsys.readouterr().err


def test_the_suite_finds_the_held_out_sets_under_the_renders_root(bench, tmp_path):
    (tmp_path / "t2i_heldout").mkdir()
    (tmp_path / "unrelated").mkdir()
    names = [name for name, _, _ in bench.default_render_sets(tmp_path)]
    assert "t2i (held out)" in names and "t2i_wide (held out)" not in names
    assert all(name in {"clevr_blender (training hold-out)", "t2i (held out)"} for name in names)
    assert [n for n, _, _ in bench.default_render_sets(None)] == [n for n in names if n != "t2i (held out)"]


def test_the_suite_prints_relaxed_and_strict_verdicts(bench, tmp_path, capsys):
    real, renders = clevr_folder(tmp_path / "real", 2), render_folder(tmp_path / "renders", 2, masks=True)
    bench.main([str(real), "--suite", "--suite-renders", f"tiny={renders}", "--no-speed", "--constraints", "2"])
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert "| exact | verdicts | strict | ECE |" in table[0]
    row = [c.strip() for c in table[2].strip("|").split("|")]
    assert row[0] == "real CLEVR" and 0 <= float(row[8]) <= 1 and 0 <= float(row[9]) <= 1
