"""GIR-Bench's prompt files through LogicVal (`logicval_hf.benchmark.importers.gir_bench`): each hand-written sample
file imports with labels the solver proves, the specs give GIR-Bench's verdict on random scene graphs (`gir_rule`, an
independent re-implementation of its rules), the gir domain's relation is GIR-Bench's box rule, and bad entries are
one line naming the entry."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from gir_rule import gir_relation, numerical_correct, spatial_correct
from hypothesis import given, settings
from hypothesis import strategies as st

import logicval_hf as lv
from logicval_hf.asp.solver import Solver
from logicval_hf.benchmark.imported import SourceError
from logicval_hf.benchmark.importers.gir_bench import import_source, read_entries, spec_for
from logicval_hf.cli.main import main
from logicval_hf.contract.domain import load_domain
from logicval_hf.errors import SolverLimit

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DATA = Path(__file__).resolve().parents[1] / "data" / "gir_bench"
GIR = load_domain("gir")


def entries(name):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize(("name", "labels"), [("NumericalReasoning.json", ["SAT", "SAT", "SAT", "UNSAT"]),
                                               ("SpatialLayout.json", ["SAT", "SAT", "SAT", "UNSAT"])])
def test_each_spec_file_imports_with_labels_the_solver_proves(tmp_path, name, labels):
    import pyarrow.parquet as pq

    summary = import_source(DATA / name, tmp_path / "out")
    assert summary["rows"] == len(labels) and summary["task"] in ("numerical", "spatial")
    rows = pq.read_table(tmp_path / "out" / "data" / "test.parquet").to_pylist()
    assert [r["label"] for r in rows] == labels
    for r, entry in zip(rows, entries(name), strict=True):
        spec = json.loads(r["spec_json"])
        assert spec["domain"] == "gir" and r["gir_id"] == str(entry["id"]) and r["prompt"] == entry["prompt"]
        if r["label"] == "SAT":  # the witness satisfies the spec and GIR-Bench's own rule
            witness = json.loads(r["witness"])
            assert lv.verify(spec, witness).ok
            correct = numerical_correct if "number" in entry["task"] else spatial_correct
            if not any(isinstance(o, list) for o in entry["task"]["objects"]):
                assert correct(entry["task"], witness["objects"])
        else:
            assert r["core"] and lv.solve({**spec, "constraints": [spec["constraints"][i] for i in r["core"]]}
                                          ).label == "UNSAT"


def test_the_text_file_becomes_target_texts_that_text_score_reads(tmp_path):
    import datasets

    summary = import_source(DATA / "TextRendering.json", tmp_path / "targets")
    assert summary == {"folder": str(tmp_path / "targets"), "rows": 3, "task": "text"}
    rows = list(datasets.load_dataset(str(tmp_path / "targets"), split="test"))
    assert [r["text"] for r in rows] == [e["text"] for e in entries("TextRendering.json")]
    assert rows[2]["text_folded"] == "happy 30th birthday" and rows[0]["gir_id"] == "1"


def random_scene(task, rng):
    names = [o for o in task["objects"] if isinstance(o, str)]
    colours = [c for c in (task.get("colors") or []) if c] + ["green"]
    objects = []
    for name in names:
        for _ in range(rng.choice((0, 1, 1, 1, 2)) if "number" not in task else rng.randint(0, 5)):
            x, y = rng.uniform(0, 900), rng.uniform(0, 900)
            w, h = rng.uniform(10, 400), rng.uniform(10, 400)
            objects.append({"class": name, "color": rng.choice(colours), "bbox": [x, y, min(1024, x + w),
                                                                                  min(1024, y + h)]})
    return {"domain": "gir", "image_size": [1024, 1024], "objects": objects}


@pytest.mark.parametrize("name", ["NumericalReasoning.json", "SpatialLayout.json"])
def test_the_specs_give_gir_benchs_verdict_on_random_scenes(name):
    """SAT entries without groups (GIR-Bench relates a group's enclosing box, the spec every member): the spec's
    verdict and GIR-Bench's agree on every scene, right ones included."""
    solver = Solver()
    rng = random.Random(7)
    verdicts = []
    for entry in entries(name):
        task = entry["task"]
        spec = spec_for(entry)
        if any(isinstance(o, list) for o in task["objects"]) or solver.solve(spec).label != "SAT":
            continue
        correct = numerical_correct if "number" in task else spatial_correct
        scenes = [random_scene(task, rng) for _ in range(400)]
        ours = solver.verify_many([(spec, s) for s in scenes], labels=["SAT"] * len(scenes))
        verdicts += [(v.ok, correct(task, s["objects"])) for v, s in zip(ours, scenes, strict=True)]
    assert all(ours == theirs for ours, theirs in verdicts)
    assert len(verdicts) >= 800 and sum(ours for ours, _ in verdicts) >= 10


boxes = st.tuples(st.floats(0, 500), st.floats(0, 500), st.floats(1, 300), st.floats(1, 300)).map(
    lambda t: (t[0], t[1], t[0] + t[2], t[1] + t[3]))


@settings(max_examples=400, deadline=None)
@given(boxes, boxes)
def test_the_gir_domain_decides_relations_by_gir_benchs_box_rule(a, b):
    for rel, direction in (("left", "left"), ("right", "right"), ("above", "up"), ("below", "down")):
        assert GIR.holds(rel, a, b) == gir_relation(a, b, direction)


def test_the_rule_is_not_transitive_so_negated_relations_get_no_label():
    # two wide boxes side by side, a small one below between their centres: wide left of small left of wide2, but
    # wide and wide2 overlap so much that GIR-Bench's gate gives them no relation
    wide, small, wide2 = (-50, -1, 50, 1), (4.5, 2.5, 5.5, 3.5), (-40, -1, 60, 1)
    assert GIR.holds("left", wide, small) and GIR.holds("left", small, wide2) and not GIR.holds("left", wide, wide2)
    c = {"prop": "class", "value": "car", "negated": False}
    d = {"prop": "class", "value": "dog", "negated": False}
    neg = {"domain": "gir", "constraints": [{"template": "C4/pair_rel_neg", "params": {
        "A1": c, "B1": d, "R1": {"rel": "left", "negated": True}}}]}
    with pytest.raises(SolverLimit, match="not transitive"):
        lv.solve(neg)


def bad_file(tmp_path, data):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return p


@pytest.mark.parametrize(("data", "message"), [
    ([{"id": 7, "prompt": "p", "task": {"objects": ["a", "b"], "colors": ["", ""],
                                        "relative_position": [{"subject": 0, "object": 1, "direction": "behind"}]}}],
     r"bad\.json: \[0\] \(id 7\)\.task\.relative_position\[0\]\.direction: 'behind' is not a direction"),
    ([{"id": 1, "prompt": "p", "task": {"objects": ["a"], "number": [1, 2]}}],
     r"\[0\] \(id 1\)\.task\.number: must be a list of 1 counts"),
    ([{"id": 1, "prompt": "p", "task": {"objects": ["a"], "number": [-1]}}], r"task\.number\[0\]: must be a whole"),
    ([{"id": 2, "prompt": "p", "task": {"objects": ["a", "b"],
                                        "relative_position": [{"subject": "c", "object": 1, "direction": "up"}]}}],
     r"\[0\] \(id 2\)\.task\.relative_position\[0\]\.subject: 'c' names no object"),
    ([{"id": 3, "task": {"objects": ["a"], "number": [1]}}], r"\[0\] \(id 3\)\.prompt: must be a non-empty string"),
    ([{"id": 4, "prompt": "p", "task": {"objects": ["a"]}}], r"\[0\] \(id 4\)\.task: has keys \['objects'\]"),
    ([{"id": 5, "prompt": "p", "text": "hi"}, {"id": 6, "prompt": "p", "task": {"objects": ["a"], "number": [1]}}],
     r"\[1\] \(id 6\): is a numerical entry in a file whose first entry is text"),
    ([{"id": 8, "prompt": "p", "text": "!!"}], r"\[0\] \(id 8\)\.text: '!!' is not a target text"),
    ([], r"must be a JSON list of entries, got an empty list"),
    ("{not json", r"not valid JSON"),
])
def test_bad_entries_are_one_line_naming_the_entry_and_nothing_is_written(tmp_path, data, message):
    with pytest.raises(SourceError, match=message) as e:
        import_source(bad_file(tmp_path, data), tmp_path / "out")
    assert "\n" not in str(e.value) and not (tmp_path / "out").exists()


def test_the_command_imports_and_refuses_in_one_line(tmp_path, capsys):
    assert main(["import", "gir-bench", str(DATA / "SpatialLayout.json"), "--out", str(tmp_path / "s"),
                 "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["labels"] == {"SAT": 3, "UNSAT": 1}
    bad = bad_file(tmp_path, [{"id": 9, "prompt": "p", "task": {"objects": ["a"], "number": ["x"]}}])
    assert main(["import", "gir-bench", str(bad), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("logicval: error:") and "[0] (id 9).task.number[0]" in err and "\n" not in err
    assert read_entries(DATA / "TextRendering.json")[0] == "text"


def test_the_metric_scores_imported_rows_like_the_benchmarks(tmp_path):
    import pyarrow.parquet as pq

    from logicval_hf.scoring.evaluation import compute

    import_source(DATA / "SpatialLayout.json", tmp_path / "s")
    rows = pq.read_table(tmp_path / "s" / "data" / "test.parquet").to_pylist()
    empty = {"domain": "gir", "image_size": [64, 64], "objects": []}
    witnesses = [json.loads(r["witness"]) if r["witness"] else empty for r in rows]
    assert compute(witnesses, rows, backend="given", per_sample=False)["logicval_score"] == 1.0
    swapped = [witnesses[1], witnesses[0], witnesses[3], witnesses[2]]  # other prompts' scenes: all wrong
    assert compute(swapped, rows, backend="given", per_sample=False)["logicval_score"] == 0.0
