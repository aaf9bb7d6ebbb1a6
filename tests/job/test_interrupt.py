"""Ctrl-C in ``logicval run`` (SIGINT to the terminal's whole process group: the run, its worker processes and the
forkserver): one line on stderr, exit status 130, nothing half-written, and the same command goes on from there.
The run reads its images with the ``vlm`` backend from a slow fake endpoint (tests/fake_vlm.py), so that it is
surely interrupted while it perceives."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fake_vlm import FakeVLM

CLI = "import sys; from logicval_hf.cli import main; sys.exit(main(sys.argv[1:]))"


def _run(out: Path, fake: FakeVLM) -> subprocess.Popen:
    argv = ["run", "--out", str(out), "--generator", "oracle", "--limit", "2", "--jobs", "2", "--quiet",
            "--no-repair", "--backend", "vlm", "--setting", f"url={fake.base_url}", "--setting", "model=fake-vlm"]
    return subprocess.Popen([sys.executable, "-c", CLI, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def test_ctrl_c_ends_a_run_in_one_line_and_the_same_command_goes_on(tmp_path):
    out = tmp_path / "report"
    with FakeVLM(delay=1.0) as fake:
        proc = _run(out, fake)
        deadline = time.monotonic() + 300
        while not fake.requests and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.requests, proc.communicate(timeout=60)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stderr
        assert stdout == "" and stderr == (f"logicval: run interrupted: the images, verdicts and repairs done so far "
                                           f"are kept in {out}; run the same command again to go on from there\n")
        assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
        assert len(list((out / "images" / "oracle").glob("*.png"))) == 12
        again = _run(out, fake)
        stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["work"]["oracle"]["reused"] == 12 and summary["work"]["oracle"]["generated"] == 0
    assert summary["n_specs"] == 12 and "oracle" in stdout
