"""benchmarks/bench_ort_spinning.py: onnxruntime's thread spinning on against off, in fresh processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_ort_spinning.py"
DATA = ROOT / "tests" / "data" / "clevr"


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.slow
def test_both_variants_read_the_same_scenes_and_a_ratio_is_printed():
    out = _run("--images", str(DATA), "--rounds", "1", "--size", "160")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ratio off/on: batched" in out.stdout
    assert "scenes identical across variants and rounds: True" in out.stdout


@pytest.mark.parametrize(("argv", "says"), [
    (["--images", "{missing}"], "--images: no such folder"),
    (["--images", "{empty}"], "--images: no PNG or JPEG in"),
    (["--rounds", "0"], "--rounds and --specs must be at least 1"),
])
def test_bad_arguments_are_one_line(tmp_path, argv, says):
    (tmp_path / "empty").mkdir()
    names = {"missing": str(tmp_path / "nowhere"), "empty": str(tmp_path / "empty")}
    out = _run(*(a.format(**names) for a in argv))
    assert out.returncode == 2
    assert says in out.stderr and "Traceback" not in out.stderr
