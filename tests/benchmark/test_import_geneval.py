"""GenEval's prompts through LogicVal (`logicval_hf.benchmark.importers.geneval`): the import, its dataset
folder, its errors, and its faithfulness: on random detection sets, the imported specs and an independent
re-implementation of GenEval's rule (`geneval_rule`) give the same verdict on every case.

The sample metadata (tests/data/geneval) is hand-written; GenEval's own file (``peers/geneval/`` under the test data
root, `shared_data`; MIT) is used only where present.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
from pathlib import Path

import pytest
from geneval_rule import geneval_correct, random_detections
from shared_data import needs_shared, shared_path

from logicval_hf.asp.solver import Solver
from logicval_hf.benchmark.imported import SourceError
from logicval_hf.benchmark.importers.geneval import import_source, read_specs, spec_for
from logicval_hf.cli.main import main
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "geneval" / "metadata_sample.jsonl"
GENEVAL_FILE = ("peers", "geneval", "evaluation_metadata.jsonl")
REAL = shared_path(*GENEVAL_FILE)
COCO = load_domain("coco")
# the sample's two contradictory lines and their minimal cores (line 15 counts the dog twice, once per include:
# either count with the rank rule is a minimal core)
UNSAT_LINES = {14: [[0, 1]], 15: [[0, 2], [1, 2]]}
SOURCE_FIELDS = ["tag", "prompt", "include", "exclude", "line"]


def sample_lines() -> list[dict]:
    return [json.loads(s) for s in SAMPLE.read_text(encoding="utf-8").splitlines() if s.strip()]


def scene_of(detections) -> Scene:
    return Scene.from_dict({"image_size": [512, 512], "domain": "coco", "objects": detections}, COCO)


@pytest.fixture(scope="module")
def solver():
    return Solver()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The sample imported through the CLI: (summary, folder)."""
    out = tmp_path_factory.mktemp("geneval") / "sample"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["import", "geneval", str(SAMPLE), "--out", str(out), "--no-progress"])
    assert rc == 0
    return json.loads(buf.getvalue()), out


@pytest.fixture(scope="module")
def dataset(imported, tmp_path_factory):
    datasets = pytest.importorskip("datasets")
    _, out = imported
    return datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path_factory.mktemp("hf_cache")))


# ---- the sample's dataset folder --------------------------------------------------------------------------
def test_cli_summary_and_card(imported):
    summary, out = imported
    n = len(sample_lines())
    assert summary == {"folder": str(out), "rows": n, "labels": {"SAT": n - 2, "UNSAT": 2}}
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "# GenEval through LogicVal" in card and "github.com/djghosh13/geneval" in card and "MIT" in card
    assert "| counting | 2 | 1 |" in card  # the UNSAT table groups by tag


def test_dataset_columns_labels_and_source_fields(dataset):
    lines = sample_lines()
    assert dataset.column_names[:9] == ["id", "source", "spec_json", "asp_program", "label", "prompt_short",
                                        "witness", "core", "core_text"]
    assert dataset.column_names[9:] == SOURCE_FIELDS
    assert len(dataset) == len(lines)
    for k, (row, meta) in enumerate(zip(dataset, lines, strict=False)):
        assert row["id"] == f"geneval-{k:04d}" and row["line"] == k + 1
        assert row["source"] == f"GenEval {SAMPLE.name}:{k + 1}"
        assert row["tag"] == meta["tag"] and row["prompt"] == meta["prompt"]
        assert json.loads(row["include"]) == meta["include"]
        assert json.loads(row["exclude"]) == meta.get("exclude", [])
        spec = json.loads(row["spec_json"])
        assert spec["domain"] == "coco" and "n" not in spec
        assert spec["score_threshold"] == (0.9 if meta["tag"] == "counting" else 0.3)
        assert row["asp_program"].strip() and row["prompt_short"].strip()
        if row["line"] in UNSAT_LINES:
            assert row["label"] == "UNSAT" and row["core"] in UNSAT_LINES[row["line"]]
            assert row["witness"] == "" and row["core_text"]
        else:
            assert row["label"] == "SAT" and row["core"] == [] and row["core_text"] == ""


def test_witnesses_pass_genevals_rule(dataset):
    """Every SAT row's witness, read as detections, is an image GenEval would score correct."""
    for row, meta in zip(dataset, sample_lines(), strict=False):
        if row["label"] == "SAT":
            detections = json.loads(row["witness"])["objects"]
            assert all("score" in d for d in detections)
            assert geneval_correct(meta, detections), row["line"]


def test_contradictory_lines_explain_themselves(dataset):
    rows = {r["line"]: r for r in dataset}
    assert "at least 2" in rows[14]["core_text"] and "smaller than 2" in rows[14]["core_text"]
    assert "to the left of each of the 1 most confidently detected dogs" in rows[15]["core_text"]


# ---- the specs ----------------------------------------------------------------------------------------------
def templates(spec) -> list[str]:
    return [c["template"] for c in spec.to_dict()["constraints"]]


def test_spec_for_maps_each_field_to_its_template():
    meta = {"tag": "position", "prompt": "two people in red under two kites",
            "include": [{"class": "kite", "count": 2},
                        {"class": "person", "count": 2, "color": "red", "position": ["below", 0]}],
            "exclude": [{"class": "cat", "count": 1}]}
    ranked = spec_for(meta)
    assert ranked.score_threshold == 0.3 and ranked.n is None and ranked.domain.name == "coco"
    assert templates(ranked) == ["X1/count_cmp", "X1/count_cmp", "X2/ranked_prop", "X3/ranked_rel", "X1/count_cmp"]
    c = ranked.to_dict()["constraints"]
    assert c[1]["params"]["T"] == ">=" and c[1]["params"]["K"] == 2
    assert c[2]["params"] == {"A1": {"prop": "class", "value": "person", "negated": False}, "K": 2,
                              "B1": {"prop": "color", "value": "red", "negated": False}}
    assert c[3]["params"]["R1"]["rel"] == "below" and c[3]["params"]["B1"]["value"] == "kite"
    assert (c[3]["params"]["K1"], c[3]["params"]["K2"]) == (2, 2)
    assert c[4]["params"]["T"] == "<" and c[4]["params"]["A1"]["value"] == "cat" and c[4]["params"]["K"] == 1
    plain = spec_for(meta, plain=True)
    assert templates(plain) == ["X1/count_cmp", "X1/count2_cmp", "C4/pair_rel", "X1/count_cmp"]
    assert "rank" not in plain.to_json()
    assert spec_for({**meta, "tag": "counting"}).score_threshold == 0.9


@needs_shared(*GENEVAL_FILE)
def test_every_real_line_builds_both_readings():
    ranked, plain = read_specs(REAL), read_specs(REAL, plain=True)
    assert len(ranked) == len(plain) == 553
    tags = {meta["tag"] for _, meta, _ in ranked}
    assert tags == {"single_object", "two_object", "counting", "colors", "position", "color_attr"}


# ---- faithfulness: imported specs vs. GenEval's rule on random detections -----------------------------------
def differential(lines, per_line: int, seed: int, solver: Solver, labels=None):
    """(reference verdicts, LogicVal verdicts, plain-reading verdicts) over random detection sets."""
    rng = random.Random(seed)
    specs = [spec_for(m) for m in lines]
    plains = [spec_for(m, plain=True) for m in lines]
    cases = [(k, random_detections(m, rng)) for k, m in enumerate(lines) for _ in range(per_line)]
    scenes = [scene_of(d) for _, d in cases]
    ref = [geneval_correct(lines[k], d) for k, d in cases]
    lab = [labels[k] if labels else "SAT" for k, _ in cases]
    got = solver.verify_many([(specs[k], s) for (k, _), s in zip(cases, scenes, strict=False)], labels=lab)
    plain = solver.verify_many([(plains[k], s) for (k, _), s in zip(cases, scenes, strict=False)],
                               labels=["SAT"] * len(cases))
    return [k for k, _ in cases], ref, got, plain


def test_sample_agrees_with_genevals_rule(solver, dataset):
    lines = sample_lines()
    labels = list(dataset["label"])
    idx, ref, got, plain = differential(lines, 40, seed=1, solver=solver, labels=labels)
    assert len(ref) == 600
    bad = [(lines[k]["prompt"], r, v.constraints_ok) for k, r, v in zip(idx, ref, got, strict=False)
           if r != v.constraints_ok]
    assert not bad, bad[:5]
    for k, r, v in zip(idx, ref, got, strict=False):
        if labels[k] == "SAT":
            assert v.ok == r  # open scene size: ok is exactly "every constraint holds"
        else:
            assert not r  # GenEval never scores an UNSAT line correct
    assert 0.25 < sum(ref) / len(ref) < 0.75  # the detection sets are biased to both verdicts
    assert sum(r != p.ok for r, p in zip(ref, plain, strict=False)) > 0  # ranks matter on this sample


@pytest.mark.slow
@needs_shared(*GENEVAL_FILE)
def test_all_real_lines_agree_with_genevals_rule(solver):
    lines = [json.loads(s) for s in REAL.read_text(encoding="utf-8").splitlines() if s.strip()]
    idx, ref, got, plain = differential(lines, 8, seed=0, solver=solver)
    assert len(ref) == 553 * 8
    bad = [(lines[k]["prompt"], r) for k, r, v in zip(idx, ref, got, strict=False) if r != v.ok]
    assert not bad, f"{len(bad)} disagreements, e.g. {bad[:5]}"
    for tag in ("single_object", "two_object", "counting", "colors", "position", "color_attr"):
        verdicts = [r for k, r in zip(idx, ref, strict=False) if lines[k]["tag"] == tag]
        assert 0.1 < sum(verdicts) / len(verdicts) < 0.9, tag
    plain_off = {lines[k]["tag"] for k, r, p in zip(idx, ref, plain, strict=False) if r != p.ok}
    assert {"colors", "color_attr", "position"} <= plain_off  # where the plain reading is not GenEval's


# ---- bad input --------------------------------------------------------------------------------------------
GOOD = '{"tag": "single_object", "include": [{"class": "dog", "count": 1}], "prompt": "a dog"}'


def line(include=None, **top):
    d = {"tag": "two_object", "include": include if include is not None else [{"class": "dog", "count": 1}],
         "prompt": "p"}
    d.update(top)
    return json.dumps({k: v for k, v in d.items() if v is not None})


BAD = [
    ('{"tag": "colors", "include": [', "line", "not valid JSON"),
    (line(prompt=None), "line", r"missing \['prompt'\]"),
    (line(includes=[]), "line", r"unknown keys \['includes'\]"),
    (line(tag="couting"), "tag", "'couting' is not a GenEval tag"),
    (line(include={"class": "dog"}), "include", "must be a list"),
    (line(include=[]), "include", "checks nothing"),
    (line([{"class": "dog", "count": 1, "colour": "red"}]), r"include\[0\]", r"unknown keys \['colour'\]"),
    (line([{"class": "dgo", "count": 1}]), r"include\[0\]\.class", "'dgo' is not a class; did you mean 'dog'"),
    (line([{"class": "dog", "count": 1, "color": "magenta"}]), r"include\[0\]\.color", "'magenta' is not a color"),
    (line([{"class": "dog", "count": 0}]), r"include\[0\]\.count", "must be a positive integer, got 0"),
    (line([{"class": "dog", "count": "2"}]), r"include\[0\]\.count", "must be a positive integer, got '2'"),
    (line([{"class": "dog", "count": True}]), r"include\[0\]\.count", "must be a positive integer, got True"),
    (line([{"class": "dog", "count": 17}]), r"include\[0\]\.count", "more than the 16 detections per class"),
    (line([{"class": "dog", "count": 1}, {"class": "cat", "count": 1, "position": ["left of", 1]}]),
     r"include\[1\]\.position\[1\]", "1 is not the index of an earlier include"),
    (line([{"class": "dog", "count": 1, "position": ["left of", 0]}]),
     r"include\[0\]\.position\[1\]", "include\\[0\\] has no earlier include"),
    (line([{"class": "dog", "count": 1}, {"class": "cat", "count": 1, "position": ["next to", 0]}]),
     r"include\[1\]\.position\[0\]", "'next to' is not a GenEval relation"),
    (line([{"class": "dog", "count": 1}, {"class": "cat", "count": 1, "position": "left of"}]),
     r"include\[1\]\.position", "must be \\[relation, index of an earlier include\\]"),
    (line(exclude=[{"class": "dog"}]), r"exclude\[0\]", r"missing \['count'\]"),
    (line(exclude=[{"class": "dog", "count": 99}]), r"exclude\[0\]\.count", "never fail"),
]


@pytest.mark.parametrize("text,field,message", BAD, ids=[f"{i}-{b[1]}" for i, b in enumerate(BAD)])
def test_bad_line_names_file_line_and_field_and_writes_nothing(tmp_path, text, field, message):
    src = tmp_path / "meta.jsonl"
    src.write_text(GOOD + "\n" + text + "\n", encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(SourceError, match=f"^{src}:2: {field}: .*{message}"):
        import_source(src, out)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["meta.jsonl"]


def test_failed_import_keeps_an_existing_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "marker").write_text("old")
    src = tmp_path / "meta.jsonl"
    src.write_text(GOOD + "\n\n" + line([{"class": "unicorn", "count": 1}]) + "\n")
    with pytest.raises(SourceError, match=r":3: include\[0\]\.class: 'unicorn' is not a class"):
        import_source(src, out)  # the blank line 2 is skipped, but counted
    assert [p.name for p in out.iterdir()] == ["marker"]


def test_empty_or_missing_file(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n \n")
    with pytest.raises(SourceError, match=r"empty\.jsonl: file: has no metadata lines"):
        import_source(empty, tmp_path / "out")
    with pytest.raises(SourceError, match=r"nope\.jsonl: file: cannot read it"):
        import_source(tmp_path / "nope.jsonl", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_spec_for_names_the_field():
    with pytest.raises(SourceError, match=r"^<metadata>: include\[0\]\.count: must be a positive integer"):
        spec_for({"tag": "counting", "include": [{"class": "dog", "count": -1}], "prompt": "p"})


def test_cli_reports_a_bad_line(tmp_path, capsys):
    src = tmp_path / "meta.jsonl"
    src.write_text(line([{"class": "dog", "count": 1, "color": "teal"}]) + "\n")
    rc = main(["import", "geneval", str(src), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{src}:1: include[0].color: 'teal' is not a color" in err
    assert not (tmp_path / "out").exists()


def test_a_reimport_compares_labels_with_the_folder_it_replaces(tmp_path):
    out = tmp_path / "ds"
    first = import_source(SAMPLE, out)
    assert "relabelled" not in first and "## Changelog" in (out / "README.md").read_text()
    again = import_source(SAMPLE, out)
    assert again["relabelled"] == {"compared": first["rows"], "changed": {}, "sources": []}
    assert f"0 of {first['rows']} labels changed (none)" in (out / "README.md").read_text()
