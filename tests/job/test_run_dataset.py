"""`logicval run --dataset DIR`: an imported folder's rows scored by the main job like the benchmark's (verdicts on
right and wrong scene graphs, the report naming the dataset, resume keyed by it), its bad inputs refused in one line
before any work, and the same rows scored by the metric after `datasets.load_dataset(DIR)`."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from logicval_hf.benchmark.dataset_folder import read_dataset
from logicval_hf.cli.main import main
from logicval_hf.job.report import SUMMARY_KEYS
from logicval_hf.job.run import run

DATA = Path(__file__).resolve().parents[1] / "data"
METRIC = Path(__file__).resolve().parents[2] / "metric" / "logicval"


def _scene_graphs(rows, folder: Path, right: bool) -> Path:
    """``<id>.json`` per row: the right answer (the row's witness; the empty scene for UNSAT) or a wrong one (the
    empty scene for SAT; for UNSAT, objects the detector is sure of, where none should be drawn)."""
    folder.mkdir()
    for r in rows:
        size = (r.witness or {}).get("image_size", [512, 512])
        empty = {"image_size": size, "objects": []}
        drawn = {"image_size": size, "objects": [{"class": "dog", "color": "red", "bbox": [10, 10, 200, 200],
                                                  "score": 0.99}]}
        scene = (dict(r.witness) if r.label == "SAT" else empty) if right else \
            (empty if r.label == "SAT" else drawn)
        (folder / f"{r.id}.json").write_text(json.dumps(scene), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """GenEval's and GIR-Bench's hand-written samples imported with `logicval import`, with folders of right and
    wrong scene graphs named by the rows' ids."""
    root = tmp_path_factory.mktemp("imported")
    assert main(["import", "geneval", str(DATA / "geneval" / "metadata_sample.jsonl"), "--out",
                 str(root / "geneval")]) == 0
    assert main(["import", "gir-bench", str(DATA / "gir_bench" / "SpatialLayout.json"), "--out",
                 str(root / "gir")]) == 0
    out = {}
    for name in ("geneval", "gir"):
        rows = read_dataset(root / name).rows
        out[name] = (root / name, _scene_graphs(rows, root / f"{name}_right", True),
                     _scene_graphs(rows, root / f"{name}_wrong", False), rows)
    return root, out


def test_read_dataset_types_the_rows_of_an_import(imported):
    _, sets = imported
    folder, _, _, rows = sets["geneval"]
    ds = read_dataset(folder)
    assert ds.name == "geneval" and len(ds.fingerprint) == 12 and ds.rows == rows
    assert {r.package for r in rows} == {"geneval"} and {r.spec.domain.name for r in rows} == {"coco"}
    assert {r.label for r in rows} == {"SAT", "UNSAT"}
    assert all((r.witness is None) == (r.label == "UNSAT") for r in rows)
    assert {r.package for r in read_dataset(sets["gir"][0]).rows} == {"gir-spatial"}


@pytest.mark.parametrize("name", ["geneval", "gir"])
def test_run_scores_right_and_wrong_scene_graphs_of_an_import(imported, name, capsys):
    root, sets = imported
    folder, right, wrong, rows = sets[name]
    out = root / f"report_{name}"
    assert main(["run", "--dataset", str(folder), "--generator", str(right), str(wrong), "--backend", "given",
                 "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert f"{len(rows)} specs" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert tuple(summary) == SUMMARY_KEYS
    ds = read_dataset(folder)
    assert summary["dataset"] == {"name": name, "fingerprint": ds.fingerprint, "rows": len(rows)}
    assert summary["seed"] is None and summary["n_specs"] == len(rows)
    assert summary["packages"] == {rows[0].package: len(rows)}
    gens = summary["generators"]
    assert gens[right.name]["metric"]["logicval_score"] == 1.0
    assert gens[wrong.name]["metric"]["logicval_score"] == 0.0
    for r in rows:
        ok = json.loads((out / "verdicts" / wrong.name / f"{r.id}.json").read_text())["verdict"]["ok"]
        assert ok is False, r.id
    report = (out / "report.md").read_text()
    assert f"dataset `{name}`, fingerprint `{ds.fingerprint}`" in report and "benchmark seed" not in report
    assert f"{rows[0].package} {len(rows)}" in report  # the package sizes: the import's source


def test_resume_reuses_verdicts_of_the_same_dataset_only(imported, tmp_path):
    _, sets = imported
    folder, right, _, rows = sets["geneval"]
    out = tmp_path / "report"
    first = run(out, dataset=folder, generators=[str(right)], backend="given", progress=False, jobs=1)
    again = run(out, dataset=folder, generators=[str(right)], backend="given", progress=False, jobs=1)
    assert again["work"][right.name]["reused_verdicts"] == len(rows) and again["work"][right.name]["scored"] == 0
    assert again["generators"] == first["generators"]
    # another dataset in the same folder, same ids and specs but other labels and package: nothing reused
    table = pq.read_table(folder / "data" / "test.parquet").to_pylist()
    for r in table:
        r["label"] = "UNSAT" if r["label"] == "SAT" else "SAT"
        r["package"] = "flipped"
    other = tmp_path / "flipped"
    (other / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(table), other / "data" / "test.parquet")
    flipped = run(out, dataset=other, generators=[str(right)], backend="given", progress=False, jobs=1)
    assert flipped["work"][right.name]["reused_verdicts"] == 0
    assert flipped["dataset"]["fingerprint"] != first["dataset"]["fingerprint"]
    assert flipped["packages"] == {"flipped": len(rows)}
    # the witnesses of SAT rows, now labelled UNSAT, are drawings where none is asked for
    assert flipped["generators"][right.name]["metric"]["logicval_score"] < 1.0
    assert json.loads((out / "benchmark.json").read_text())["dataset"] == "flipped"


def _table(folder: Path, rows: list[dict], name: str = "test") -> Path:
    (folder / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows) if rows else pa.table({"id": pa.array([], pa.string())}),
                   folder / "data" / f"{name}.parquet")
    return folder


def test_bad_datasets_are_one_line_before_any_work(imported, tmp_path, capsys):
    _, sets = imported
    folder, right, _, _ = sets["geneval"]
    good = pq.read_table(folder / "data" / "test.parquet").to_pylist()
    assert main(["import", "gir-bench", str(DATA / "gir_bench" / "TextRendering.json"), "--out",
                 str(tmp_path / "texts")]) == 0
    capsys.readouterr()
    (tmp_path / "plain").mkdir()
    (tmp_path / "notparquet" / "data").mkdir(parents=True)
    (tmp_path / "notparquet" / "data" / "test.parquet").write_text("id,label\n")
    cases = {
        "missing": (tmp_path / "nowhere", "no such folder"),
        "plain": (tmp_path / "plain", "not a LogicVal dataset folder"),
        "notparquet": (tmp_path / "notparquet", "not a Parquet file"),
        "columns": (_table(tmp_path / "columns", []), "no column(s) ['label', 'spec_json']"),
        "malformed": (_table(tmp_path / "malformed", [dict(good[0], spec_json='{"constraints": [{"template": '
                                                                            '"nope"}]}')]), "geneval-0000"),
        "notjson": (_table(tmp_path / "notjson", [dict(good[0], spec_json="not json")]), "geneval-0000"),
        "twice": (_table(tmp_path / "twice", [good[0], good[0]]), "used twice"),
        "texts": (tmp_path / "texts", "logicval text-score IMAGES --targets"),
    }
    for name, (dataset, message) in cases.items():
        out = tmp_path / f"out_{name}"
        assert main(["run", "--dataset", str(dataset), "--generator", str(right), "--backend", "given", "--out",
                     str(out), "--quiet"]) == 2, name
        err = capsys.readouterr().err
        assert err.startswith("logicval: error:") and err.count("\n") == 1 and message in err, (name, err)
        assert not out.exists(), name  # refused before the output folder is made


def test_an_empty_dataset_file_is_refused(imported, tmp_path):
    folder = imported[1]["geneval"][0]
    schema = pq.read_table(folder / "data" / "test.parquet").schema
    (tmp_path / "empty" / "data").mkdir(parents=True)
    pq.write_table(schema.empty_table(), tmp_path / "empty" / "data" / "test.parquet")
    with pytest.raises(ValueError, match="no rows"):
        read_dataset(tmp_path / "empty")


def test_what_cannot_read_or_draw_box_specs_is_refused(imported, tmp_path, capsys):
    _, sets = imported
    folder, right, _, _ = sets["geneval"]
    refusals = {
        ("--generator", "oracle", "--backend", "given"): "generator 'oracle' draws CLEVR scenes only",
        ("--generator", str(right), "--backend", "given", "--repair"): "self-correction (--repair) draws CLEVR",
        ("--generator", str(right)): "the 'clevr' perception backend perceives 'clevr' scenes only",
    }
    for k, (args, message) in enumerate(refusals.items()):
        out = tmp_path / f"out{k}"
        assert main(["run", "--dataset", str(folder), *args, "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert not out.exists()


def test_a_folder_without_scene_graphs_named_by_the_ids_is_refused(imported, tmp_path, capsys):
    folder = imported[1]["gir"][0]
    (tmp_path / "pngs").mkdir()
    assert main(["run", "--dataset", str(folder), "--generator", str(tmp_path / "pngs"), "--backend", "given",
                 "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "no scene graph in" in capsys.readouterr().err


def test_the_metric_scores_a_loaded_import_like_the_benchmark(imported, tmp_path):
    """``datasets.load_dataset(DIR)``'s rows, as references (the ``spec_json`` column, or the rows' columns), score
    the same verdicts through the `evaluate` metric as through `logicval run`."""
    datasets = pytest.importorskip("datasets")
    evaluate = pytest.importorskip("evaluate")
    _, sets = imported
    folder, right, wrong, _ = sets["gir"]
    ds = datasets.load_dataset(str(folder), split="test")
    for scenes, expected in ((right, 1.0), (wrong, 0.0)):
        predictions = [(scenes / f"{i}.json").read_text() for i in ds["id"]]
        metric = evaluate.load(str(METRIC), cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
        by_spec = metric.compute(predictions=predictions, references=ds["spec_json"])
        metric = evaluate.load(str(METRIC), cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
        rows = [json.dumps({k: r[k] for k in ("id", "label", "spec_json")}) for r in ds]
        by_row = metric.compute(predictions=predictions, references=rows)
        assert by_spec["logicval_score"] == by_row["logicval_score"] == expected
        assert [s["id"] for s in by_row["per_sample"]] == ds["id"]


def test_run_scores_images_of_an_import_read_by_a_vlm(imported, tmp_path, capsys):
    """Images named by the rows' ids, read by the ``vlm`` backend (a grounding VLM's answers served on 127.0.0.1 by
    the test server, which knows each image's true objects): the right images pass, the wrong ones fail. (GenEval's
    coco domain: the vlm backend asks for a closed vocabulary, which the gir domain's free-text classes are not.)"""
    from fake_vlm import FakeVLM
    from PIL import Image

    from logicval_hf.contract.scene import Scene
    from logicval_hf.perception.vlm import clear_cache

    _, sets = imported
    folder, right, wrong, rows = sets["geneval"]
    clear_cache()
    with FakeVLM(boxes="norm1000") as fake:
        for scenes in (right, wrong):
            images = tmp_path / scenes.name
            images.mkdir()
            for r in rows:
                scene = Scene.from_dict(json.loads((scenes / f"{r.id}.json").read_text()), r.spec.domain)
                Image.fromarray(fake.image(scene)).save(images / f"{r.id}.png")
        out = tmp_path / "report"
        assert main(["run", "--dataset", str(folder), "--generator", str(tmp_path / right.name),
                     str(tmp_path / wrong.name), "--backend", "vlm", "--setting", f"url={fake.base_url}", "--setting",
                     "model=fake-vlm", "--setting", f"boxes={fake.boxes}", "--out", str(out), "--jobs", "1",
                     "--quiet", "--no-repair"]) == 0, capsys.readouterr().err
    clear_cache()
    gens = json.loads((out / "summary.json").read_text())["generators"]
    assert gens[right.name]["metric"]["logicval_score"] == 1.0 and not gens[right.name]["unreadable"]
    assert gens[wrong.name]["metric"]["logicval_score"] == 0.0
