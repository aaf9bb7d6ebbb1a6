"""`DIR[:FRACTION]`, the held-out render folders the refit and the perception benchmark read, and who reports a
training folder's problems."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import render_folder

from logicval_hf.training.parser_data import load_folder, parse_held_out_folder, split_holdout

ROOT = Path(__file__).resolve().parents[2]


def test_a_folder_alone_is_read_whole(tmp_path):
    assert parse_held_out_folder(str(tmp_path)) == (tmp_path, 1.0)


@pytest.mark.parametrize("tail, fraction", [("0.05", 0.05), ("1", 1.0), (".5", 0.5)])
def test_a_fraction_after_the_last_colon(tmp_path, tail, fraction):
    assert parse_held_out_folder(f"{tmp_path}:{tail}") == (tmp_path, fraction)


def test_a_colon_inside_an_existing_folder_name_belongs_to_it(tmp_path):
    odd = tmp_path / "renders:v2"
    odd.mkdir()
    assert parse_held_out_folder(str(odd)) == (odd, 1.0)
    assert parse_held_out_folder(f"{odd}:0.25") == (odd, 0.25)


@pytest.mark.parametrize("suffix, message", [
    (":half", "FRACTION must be a number, got 'half'"),
    (":0", r"FRACTION must lie in \(0, 1\], got 0"),
    (":1.5", r"FRACTION must lie in \(0, 1\], got 1.5"),
    ("/missing", "no such folder"),
    ("/missing:0.5", "no such folder"),
])
def test_bad_specs_are_refused_in_one_line(tmp_path, suffix, message):
    with pytest.raises(ValueError, match=message):
        parse_held_out_folder(f"{tmp_path}{suffix}")


def test_the_fraction_selects_the_same_images_as_the_training_hold_out(tmp_path):
    folder = render_folder(tmp_path / "renders", 4, masks=True)
    path, fraction = parse_held_out_folder(f"{folder}:0.25")
    held = split_holdout(load_folder(path), fraction)[1]
    assert [r.name for r in held] == ["R_003.png"]


def test_problems_are_reported_under_the_reading_programs_name(tmp_path, capsys):
    folder = render_folder(tmp_path / "renders", 2)
    load_folder(folder, who="refit_parser")
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "R_bad.png" in line or "R_broken.json" in line]
    assert len(lines) == 2 and all(line.startswith("refit_parser: ") for line in lines)


def test_refit_cli_names_the_bad_data_argument(tmp_path):
    r = subprocess.run([sys.executable, "-m", "logicval_hf.training.refit_parser", "--data", f"{tmp_path}:half",
                        "--out", str(tmp_path / "x.onnx")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert "argument --data" in r.stderr and "FRACTION must be a number, got 'half'" in r.stderr
    assert "Traceback" not in r.stderr
