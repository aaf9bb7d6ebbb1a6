"""One round of self-correction (`logicval_hf.repairs.loop`) with the numpy renderer as the image editor and the
shipped scene parser as perception, and the benchmark script that runs it over the main job's images."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_repair import README_SPEC

from logicval_hf.contract.spec import as_spec
from logicval_hf.generation.builtin import make_generator, seed_for
from logicval_hf.perception import extract_scenes
from logicval_hf.repairs.loop import correct, summarise

ROOT = Path(__file__).resolve().parents[2]
LEFT_OF = {"n": 4, "constraints": [{"template": "C4/pair_rel", "params": {
    "A1": {"prop": "shape", "value": "sphere", "negated": False},
    "B1": {"prop": "color", "value": "red", "negated": False}, "R1": {"rel": "left", "negated": False}}}]}


def test_perturbed_and_naive_images_are_fixed_after_one_round():
    editor = make_generator("oracle", seed=0)
    ids, specs, images = [], [], []
    for k, spec in enumerate((README_SPEC, LEFT_OF)):
        for name in ("perturbed", "naive"):
            ids.append(f"{name}-{k}")
            specs.append(as_spec(spec))
            images.append(make_generator(name, seed=k).generate(spec).image)
    work = list(zip(ids, specs, extract_scenes(images), strict=True))

    def edit(rid, r):
        return editor.render(r.scene, seed_for("self-correct", rid))[0]

    out = correct(work, edit, extract_scenes)
    assert [c.id for c in out] == ids
    assert all(c.after_ok for c in out), [c.to_dict() for c in out]
    perturbed = [c for c in out if c.id.startswith("perturbed")]
    assert all(not c.before_ok and c.cost == 1 and c.edits == 1 for c in perturbed)
    s = summarise(out)["SAT"]
    assert s["n"] == 4 and s["fixed_share"] == 1.0 and s["costs"]["1"] >= 2


@pytest.mark.slow
def test_the_benchmark_script_runs_on_a_few_specs(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "self_correct.py"), "--job", str(tmp_path / "job"),
                          "--out", str(tmp_path / "out"), "--limit", "1"], capture_output=True, text=True,
                         timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "| perturbed | SAT | 3 |" in run.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["perturbed"]["SAT"]["fixed_share"] == 1.0 and summary["perturbed"]["SAT"]["median_cost"] == 1
