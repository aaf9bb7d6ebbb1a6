"""benchmarks/detector_cpu_check.py: a detector's raw outputs natively against the same inputs under qemu's
emulation of another CPU (the run itself needs qemu-x86_64; the parts it is made of do not)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from helpers import load_script

pytest.importorskip("onnxruntime")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "detector_cpu_check.py"
DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"


@pytest.fixture(scope="module")
def check():
    return load_script(SCRIPT, "detector_cpu_check")


def test_outputs_of_one_file_on_one_cpu_are_identical_and_compare_as_such(check, tmp_path):
    from logicval_hf.perception.scene_parser import INT8_MODEL

    check.prepare_inputs(sorted(DATA.glob("*.png"))[:2], tmp_path / "inputs.npz")
    for run in ("a", "b"):
        check.run_outputs(INT8_MODEL, tmp_path / "inputs.npz", tmp_path / f"{run}.npz")
    got = check.compare(tmp_path / "a.npz", tmp_path / "b.npz")
    assert set(got) == {"peak", "reg", "logits"}
    # two images, each as a first look and as the read at its scale
    assert all(row == {"max_abs_diff": 0.0, "inputs_differing": 0, "inputs": 4} for row in got.values())


def test_a_difference_is_found_and_counted_per_input(check, tmp_path):
    a = {"arr_0/peak": np.zeros((1, 1, 4, 4), np.float32), "arr_1/peak": np.zeros((1, 1, 4, 4), np.float32)}
    b = {k: v.copy() for k, v in a.items()}
    b["arr_1/peak"][0, 0, 2, 3] = 0.005
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "b.npz", **b)
    row = check.compare(tmp_path / "a.npz", tmp_path / "b.npz")["peak"]
    assert row["inputs"] == 2 and row["inputs_differing"] == 1
    assert row["max_abs_diff"] == pytest.approx(0.005)


def test_without_qemu_the_check_says_what_to_install(check, capsys):
    with pytest.raises(SystemExit) as e:
        check.main(["--qemu", "no-such-qemu-binary"])
    assert e.value.code == 2
    assert "apt-get install qemu-user" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("qemu-x86_64") is None, reason="needs qemu-x86_64 (apt-get install qemu-user)")
def test_the_shipped_8_bit_file_reads_the_same_under_avx2_emulation_up_to_float_rounding(check, capsys):
    assert check.main(["--count", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["cpu"] == "Haswell" and len(result["images"]) == 1
    # float rounding of the head only: far below one 8-bit step of any layer (0.005 in heat on the old layout)
    assert result["outputs"]["peak"]["max_abs_diff"] < 1e-4
    assert result["outputs"]["logits"]["max_abs_diff"] < 1e-3
