"""benchmarks/second_look_study.py: the second look's decisions against the first read's, per held-out set."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import load_script, render_folder

pytest.importorskip("onnxruntime")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "second_look_study.py"


@pytest.fixture(scope="module")
def study():
    return load_script(SCRIPT, "second_look_study")


def test_a_render_folder_gets_a_row_and_a_ratio_against_the_first_read(study, tmp_path, capsys):
    folder = render_folder(tmp_path / "renders", 4)
    assert study.main([f"tiny={folder}"]) == 0
    out = capsys.readouterr().out
    assert "first-read threshold" in out and "fitted on tiny: threshold" in out
    row = next(line for line in out.splitlines() if line.startswith("| tiny |"))
    cells = row.strip("|").split("|")
    assert len(cells) == 3 + len(study.GRID)
    assert all(c.strip().isdigit() for c in cells[1:])
    assert "wrong decisions over all sets: first read" in out


@pytest.mark.parametrize(("argv", "says"), [
    (["t={missing}"], "no such folder"),
    (["{folder}"], "expected NAME=DIR[:FRACTION]"),
    (["t={folder}", "--fit", "other"], "--fit names sets that were not read: other (read: t)"),
])
def test_bad_arguments_are_refused_in_one_line(study, tmp_path, capsys, argv, says):
    folder = render_folder(tmp_path / "renders", 2)
    names = {"missing": str(tmp_path / "nowhere"), "folder": str(folder)}
    with pytest.raises(SystemExit) as e:
        study.main([a.format(**names) for a in argv])
    assert e.value.code == 2
    assert says in capsys.readouterr().err
