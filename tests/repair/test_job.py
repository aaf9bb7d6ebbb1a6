"""The main job's repairs: the repair-cost distribution per generator, the instructions in the gallery, and with
``repair=True`` one round of self-correction, in the summary and the report."""

from __future__ import annotations

import json

import pytest

from logicval_hf.job.run import run


@pytest.mark.slow  # a small main job (generation, perception, repairs, self-correction): about a minute
def test_the_report_shows_repair_costs_instructions_and_self_correction(tmp_path):
    out = tmp_path / "job"
    summary = run(out, generators=["naive", "perturbed"], limit=1, jobs=1, progress=False, repair=True)
    for name in ("naive", "perturbed"):
        e = summary["generators"][name]
        assert e["repair"]["n"] == e["n_images"] and e["repair"]["unproven"] == 0
        assert sum(e["repair"]["costs"].values()) == e["repair"]["n"]
        corrected = e["self_correction"]["SAT"]
        assert corrected["n"] >= 1 and corrected["fixed_share"] == 1.0
    perturbed = summary["generators"]["perturbed"]
    assert perturbed["repair"]["median"] == 1
    shots = [x for x in perturbed["gallery"] if x["instructions"]]
    assert shots and all(isinstance(s, str) and s.endswith(".") for x in shots for s in x["instructions"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Repair cost" in report and "## Self-correction (one round)" in report and " Fix: " in report
    cached = json.loads((out / "repairs" / "perturbed.json").read_text(encoding="utf-8"))
    assert len(cached) == perturbed["repair"]["n"] and all(set(v) == {"key", "repair"} for v in cached.values())
    again = run(out, generators=["perturbed"], limit=1, jobs=1, progress=False)  # resumed: the repairs are reused
    assert again["generators"]["perturbed"]["repair"] == perturbed["repair"]
    assert "self_correction" not in again["generators"]["perturbed"]
