"""The main job: generate -> perceive -> verify -> report, resumable, atomic; image folders; the CLI."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

import logicval_hf.job.run as run_mod
from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES
from logicval_hf.cli.run import add_subcommands, main
from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.job import analysis as analysis_mod
from logicval_hf.job import cache as cache_mod
from logicval_hf.job import generate as generate_mod
from logicval_hf.job.analysis import scene_diff
from logicval_hf.job.cache import load_rows
from logicval_hf.job.plan import limit_rows, resolve_generators
from logicval_hf.job.report import GENERATOR_KEYS, SUMMARY_KEYS, VOLATILE_KEYS
from logicval_hf.job.report_sections import _fmt
from logicval_hf.job.run import run

LIMIT = 2
GENS = ("oracle", "naive", "perturbed")


def _stable(summary: dict) -> dict:
    """The summary without what legitimately changes between runs (times, redone/reused work)."""
    return {k: v for k, v in json.loads(json.dumps(summary)).items() if k not in VOLATILE_KEYS}


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "report"
    summary = run(out, limit=LIMIT, progress=False, jobs=2)
    return out, summary


def test_limit_rows_per_package():
    rows = load_rows()
    picked = limit_rows(rows, 3)
    assert [sum(r.package == p for r in picked) for p in PACKAGE_NAMES] == [3] * 6
    # evenly spaced through the package, not the first three (which share one template)
    assert len({r.templates[0] for r in picked if r.package == "1SAT"}) == 3
    with pytest.raises(ValueError, match="limit"):
        limit_rows(rows, 0)


def test_outputs_exist_and_are_complete(first):
    out, summary = first
    n = LIMIT * len(PACKAGE_NAMES)
    assert summary["n_specs"] == n
    for g in GENS:
        assert len(list((out / "images" / g).glob("*.png"))) == n
        assert len(list((out / "intended" / g).glob("*.json"))) == n
        assert len(list((out / "verdicts" / g).glob("*.json"))) == n
    for name in ("report.md", "report.html", "summary.json", "disagreements.json", "benchmark.json",
                 "plots/by_class.png", "plots/by_package.png", "plots/agreement.png"):
        assert (out / name).is_file(), name
    for png in (out / "plots").glob("*.png"):
        with Image.open(png) as im:
            im.verify()
    # no temporary file left anywhere
    assert not [p for p in _files(out) if p.name.endswith(".tmp")]


def test_summary_json(first):
    out, summary = first
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert tuple(on_disk) == SUMMARY_KEYS
    assert list(on_disk["generators"]) == list(GENS)
    for _g, e in on_disk["generators"].items():
        assert set(GENERATOR_KEYS) <= set(e)
        m = e["metric"]
        assert set(m["by_package"]) == set(PACKAGE_NAMES)
        for key in ("logicval_score", "relaxed_score", "abstention_rate", "by_class", "constraint_success_by_operator",
                    "abstention_by_package"):
            assert key in m
        a = e["agreement"]
        assert a["tp"] + a["fp"] + a["fn"] + a["tn"] == a["n"] == on_disk["n_specs"]
        assert a["accuracy"] == pytest.approx((a["tp"] + a["tn"]) / a["n"])
        assert set(a["by_package"]) == set(PACKAGE_NAMES)
    gens = on_disk["generators"]
    assert gens["oracle"]["truth"]["logicval_score"] == 1.0
    assert gens["perturbed"]["truth"]["logicval_score"] == 0.0
    assert gens["perturbed"]["inexact_perturbations"] == []
    assert gens["naive"]["truth"]["abstention_rate"] == 0.0
    for stage in ("benchmark", "generate/oracle", "perceive/naive", "verify/perturbed", "report", "total"):
        assert stage in on_disk["timings"] and stage in on_disk["cpu_seconds"]


def test_known_truth_is_the_verdict_on_the_intended_scene(first):
    """Per image: the metric's verdict file and the intended scene agree with the summary's agreement counts."""
    out, summary = first
    for g in GENS:
        fp = fn = 0
        for f in (out / "intended" / g).glob("*.json"):
            rec = json.loads(f.read_text())
            verdict = json.loads((out / "verdicts" / g / f.name).read_text())["verdict"]
            t, m = rec["metadata"]["truth_ok"], verdict["ok"]
            fp += (m and not t)
            fn += (t and not m)
        a = summary["generators"][g]["agreement"]
        assert (a["fp"], a["fn"]) == (fp, fn)
    dis = json.loads((out / "disagreements.json").read_text())
    assert sum(len(v) for v in dis.values()) == sum(summary["generators"][g]["agreement"]["disagreements"]
                                                    for g in GENS)


def test_report_tables_mention_everything(first):
    out, _summary = first
    md = (out / "report.md").read_text()
    html_text = (out / "report.html").read_text()
    classes = load_catalog().classes
    for text in (md, html_text):
        for word in [*PACKAGE_NAMES, *classes, *GENS, "abstention", "relaxed", "Agreement", "∃", "∀", "→"]:
            assert word in text, word
    for title in ("Success rate per package", "1SAT success per constraint class", "Count-relaxed success",
                  "UNSAT abstention", "Constraint success per logical operator", "Agreement with the known truth",
                  "Timings"):
        assert f"## {title}" in md
    for g in GENS:
        for d in json.loads((out / "disagreements.json").read_text())[g][:analysis_mod.WORST_SHOWN]:
            assert d["id"] in md

    class Checker(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.bad = [], []

        def handle_starttag(self, tag, attrs):
            if tag not in ("meta", "img", "br"):
                self.stack.append(tag)

        def handle_endtag(self, tag):
            if not self.stack or self.stack.pop() != tag:
                self.bad.append(tag)

    c = Checker()
    c.feed(html_text)
    assert not c.bad and not c.stack
    assert html_text.startswith("<!DOCTYPE html>")
    # Markdown tables: every row has as many cells as its header
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            width = lines[i - 1].count(" | ")
            j = i + 1
            while j < len(lines) and lines[j].startswith("| "):
                assert lines[j].replace("\\|", "").count(" | ") == width, lines[j]
                j += 1


def test_report_breaks_success_down_by_compositional_load(first):
    out, summary = first
    rows = load_rows(DEFAULT_SEED, out / "benchmark.json", reuse=True)
    sat = [r.spec for r in limit_rows(rows, LIMIT) if r.label == "SAT"]
    loads = sorted({s.n + s.m for s in sat})
    for g in GENS:
        for who in ("metric", "truth"):
            by_load = summary["generators"][g][who]["by_load"]
            assert [int(k) for k in by_load] == loads
            assert sum(v["n"] for v in by_load.values()) == len(sat)
    assert all(v["score"] == 1.0 for v in summary["generators"]["oracle"]["truth"]["by_load"].values())
    assert all(v["score"] == 0.0 for v in summary["generators"]["perturbed"]["truth"]["by_load"].values())
    md = (out / "report.md").read_text()
    assert "## Success per compositional load" in md and "![Success per compositional load](plots/by_load.png)" in md
    assert "| generator | verdicts | " + " | ".join(f"load {k}" for k in loads) + " |" in md
    png = (out / "plots" / "by_load.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_names_constraints_from_one(first):
    from logicval_hf.job.report import sections, to_markdown

    _out, summary = first
    worst = {"perturbed": [{"id": "3SAT-0000", "package": "3SAT", "kind": "false positive", "intended_objects": 4,
                            "perceived_objects": 4, "scene_errors": 1, "diff": "obj 0 color red->blue",
                            "truth_violated": [1], "metric_violated": [], "generation": "recoloured"}]}
    md = to_markdown(sections(summary, worst))
    row = next(line for line in md.splitlines() if line.startswith("| 3SAT-0000 "))
    assert "| Constraint 2 | none |" in row and "[1]" not in row


def test_resume_skips_work_and_reproduces_the_summary(first, monkeypatch):
    out, summary = first
    before = {p: p.stat().st_mtime_ns for p in _files(out / "images")}
    # the rows come from out/benchmark.json: building them again would be a fault of the resume
    import logicval_hf.job.cache as job_cache

    def no_build(*_a, **_k):
        raise AssertionError("the benchmark rows were built again on resume")

    monkeypatch.setattr(job_cache, "typed_benchmark", no_build)
    again = run(out, limit=LIMIT, progress=False)
    for g in GENS:
        assert again["work"][g] == {"generated": 0, "reused": len(before) // 3, "scored": 0,
                                    "reused_verdicts": len(before) // 3, "deleted_images": 0}
    assert {p: p.stat().st_mtime_ns for p in _files(out / "images")} == before
    assert _stable(again) == _stable(summary)


@pytest.mark.slow  # a second perception pass (~2 s)
def test_image_folder_scores_user_images(first, tmp_path):
    """A folder of images named by id: one id missing, one unreadable -> both are failed generations."""
    out, _summary = first
    folder = tmp_path / "my_model"
    folder.mkdir()
    ids = sorted(p.stem for p in (out / "images" / "oracle").glob("*.png"))
    missing, broken = ids[0], ids[1]
    for i in ids[2:]:
        shutil.copy(out / "images" / "oracle" / f"{i}.png", folder / f"{i}.png")
    (folder / f"{broken}.png").write_bytes(b"not a png")
    with pytest.warns(run_mod.MissingImagesWarning, match="1 of 12 specs have no image"):
        res = run(tmp_path / "rep", generators=[str(folder)], limit=LIMIT, progress=False)
    e = res["generators"]["my_model"]
    assert e["kind"] == "folder" and e["truth"] is None and e["agreement"] is None
    assert e["missing"] == [missing] and e["unreadable"] == [broken]
    assert e["n_images"] == len(ids) - 1
    # the same pixels give the same verdicts as the oracle run; failed generations count as not ok
    oracle_ok = {i: json.loads((out / "verdicts" / "oracle" / f"{i}.json").read_text())["verdict"]["ok"] for i in ids}
    expected = sum(oracle_ok[i] for i in ids[2:]) / len(ids)
    assert e["metric"]["logicval_score"] == pytest.approx(expected)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Failed generations" in md and missing in md and broken in md
    # image_folder= is the same as naming the folder as a generator
    with pytest.warns(run_mod.MissingImagesWarning):
        res2 = run(tmp_path / "rep", generators=(), image_folder=folder, limit=LIMIT, progress=False)
    assert res2["generators"]["my_model"]["metric"] == e["metric"]


def test_min_confidence_sets_unsure_images_apart(first, tmp_path, capsys):
    """A minimum confidence: the images read below it are unread (with why), every score is over the others, and
    the summary, the report and the command's headline say how many were read."""
    from logicval_hf.cli.main import main

    out, summary = first
    copy = tmp_path / "report"
    shutil.copytree(out, copy)  # every image, verdict and repair reused: nothing is perceived again
    conf = {i: json.loads((out / "verdicts" / "oracle" / f"{i}.json").read_text())["verdict"]["confidence"]
            for i in (p.stem for p in (out / "verdicts" / "oracle").glob("*.json"))}
    floor = sorted(conf.values())[len(conf) // 2]  # the median: about half the images are unread
    res = run(copy, limit=LIMIT, progress=False, jobs=1, min_confidence=floor)
    assert res["min_confidence"] == floor and "min_confidence" not in summary
    e = res["generators"]["oracle"]
    unread = {x["id"]: x["reason"] for x in e["unread"]["images"]}
    assert set(unread) == {i for i, c in conf.items() if c < floor} and unread
    assert all(why.startswith("scene confidence ") and f"below the minimum {floor:g}" in why for why in unread.values())
    assert e["unread"]["n_read"] == len(conf) - len(unread) == e["metric"]["n_samples"]
    assert e["truth"]["n_samples"] == e["agreement"]["n"] == e["unread"]["n_read"]
    ok = {i: json.loads((out / "verdicts" / "oracle" / f"{i}.json").read_text())["verdict"]["ok"] for i in conf}
    read = [i for i in conf if i not in unread]
    assert e["metric"]["logicval_score"] == pytest.approx(sum(ok[i] for i in read) / len(read))
    md = (copy / "report.md").read_text()
    assert "## Unread images" in md and next(iter(unread)) in md and f"read (confidence >= {floor:g})" in md
    assert json.loads((copy / "summary.json").read_text())["min_confidence"] == floor
    # through the command line: the headline says how many were read; a bad T is one line, exit 2, before any work
    assert main(["run", "--out", str(copy), "--limit", str(LIMIT), "--quiet", "--generator", "oracle",
                 "--min-confidence", str(floor)]) == 0
    headline = capsys.readouterr().out
    assert f"{e['unread']['n_read']} read with confidence >= {floor:g}" in headline
    assert f"{len(unread)} unread" in headline
    for bad in ("1.5", "-1", "high"):
        assert main(["run", "--out", str(tmp_path / "never"), "--min-confidence", bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--min-confidence must be a number in [0, 1]" in err
    assert not (tmp_path / "never").exists()
    with pytest.raises(ValueError, match="min_confidence"):
        run(tmp_path / "never", min_confidence=2)


def test_run_takes_an_options_object(tmp_path):
    from logicval_hf.job.options import RunOptions

    opts = RunOptions(tmp_path / "x", generators="oracle", limit=1, progress=False, jobs=1)
    assert opts.generators == ("oracle",) and opts.workers == 1 and opts.image_size == (480, 320)
    with pytest.raises(TypeError, match="beside a RunOptions"):
        run(opts, limit=2)
    with pytest.raises(TypeError):
        run(tmp_path / "x", colour="red")
    with pytest.raises(ValueError, match="keep_images"):
        RunOptions(keep_images="some")


def test_resolve_generators(tmp_path):
    (tmp_path / "oracle").mkdir()
    assert resolve_generators(["oracle", "naive"]) == [("oracle", None), ("naive", None)]
    got = resolve_generators(["oracle", str(tmp_path / "oracle")])
    assert got[1] == ("custom", tmp_path / "oracle")
    with pytest.raises(ValueError, match="neither"):
        resolve_generators(["dalle"])


@pytest.mark.slow
def test_interrupted_run_leaves_no_partial_files_and_resumes(first, tmp_path, monkeypatch):
    _out_first, summary = first
    out = tmp_path / "report"
    calls = {"n": 0}
    real = generate_mod.png_bytes

    def flaky(image):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real(image)

    monkeypatch.setattr(generate_mod, "png_bytes", flaky)
    with pytest.raises(KeyboardInterrupt):
        run(out, limit=LIMIT, progress=False, jobs=1)
    monkeypatch.setattr(generate_mod, "png_bytes", real)
    files = _files(out)
    assert len(list((out / "images" / "oracle").glob("*.png"))) == 4
    assert not [p for p in files if p.name.endswith(".tmp")]
    for p in files:
        if p.suffix == ".png":
            with Image.open(p) as im:
                im.verify()
        elif p.suffix == ".json":
            json.loads(p.read_text())
    # a temp file from a crash is cleaned up; the resumed run matches an uninterrupted one
    (out / "images" / "oracle" / ".x.png.abc123.tmp").write_bytes(b"partial")
    resumed = run(out, limit=LIMIT, progress=False, jobs=1)
    assert resumed["work"]["oracle"]["reused"] == 4
    assert not (out / "images" / "oracle" / ".x.png.abc123.tmp").exists()
    assert _stable(resumed) == _stable(summary)


@pytest.mark.slow  # a second job run each; the inner loop keeps the resume test
def test_no_resume_redoes_everything(first, tmp_path):
    out = tmp_path / "r"
    run(out, generators=["oracle"], limit=1, progress=False, jobs=1)
    again = run(out, generators=["oracle"], limit=1, progress=False, resume=False, jobs=1)
    assert again["work"]["oracle"]["generated"] == len(PACKAGE_NAMES)
    assert again["work"]["oracle"]["scored"] == len(PACKAGE_NAMES)


@pytest.mark.slow  # a second job run each; the inner loop keeps the resume test
def test_changed_backend_rescores_cached_images(first, tmp_path, monkeypatch):
    """Verdict files are keyed by the backend's code/model hash: a retrained backend re-perceives every image."""
    out = tmp_path / "r"
    run(out, generators=["oracle"], limit=1, progress=False, jobs=1)
    monkeypatch.setattr(cache_mod, "backend_fingerprint", lambda backend: "retrained")
    again = run(out, generators=["oracle"], limit=1, progress=False, jobs=1)
    assert again["work"]["oracle"] == {"generated": 0, "reused": 6, "scored": 6, "reused_verdicts": 0,
                                       "deleted_images": 0}


@pytest.mark.slow  # a second job run each; the inner loop keeps the resume test
def test_changed_generator_code_regenerates_images(first, tmp_path, monkeypatch):
    """Intended-scene records carry the generators' code hash: edited generators or renderer redraw every image."""
    out = tmp_path / "r"
    run(out, generators=["oracle"], limit=1, progress=False, jobs=1)
    rec = json.loads(next((out / "intended" / "oracle").glob("*.json")).read_text())
    assert rec["generator_fingerprint"] == cache_mod.generator_fingerprint()
    monkeypatch.setattr(cache_mod, "generator_fingerprint", lambda: "edited")
    again = run(out, generators=["oracle"], limit=1, progress=False, jobs=1)
    assert again["work"]["oracle"]["generated"] == len(PACKAGE_NAMES)
    assert again["work"]["oracle"]["reused"] == 0


def test_scene_diff():
    a = {"image_size": [480, 320], "objects": [
        {"color": "red", "shape": "cube", "material": "metal", "bbox": [10, 10, 50, 50]},
        {"color": "blue", "shape": "sphere", "material": "rubber", "bbox": [300, 200, 340, 240]}]}
    assert scene_diff(a, a)["exact"]
    b = {"image_size": [480, 320], "objects": [
        {"color": "red", "shape": "cube", "material": "rubber", "bbox": [12, 10, 52, 50]}]}
    d = scene_diff(a, b)
    assert (d["missed"], d["extra"], d["attribute_errors"], d["errors"]) == (1, 0, 1, 2)
    assert "material metal->rubber" in d["text"]
    assert scene_diff(a, None)["missed"] == 2


def test_cli(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    add_subcommands(sub)
    args = parser.parse_args(["run", "--generator", "oracle", "naive", "--generator", "x", "--limit", "3"])
    assert args.generator == ["oracle", "naive", "x"] and args.limit == 3 and args.out == "logicval_report"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--limit", "0"])
    out = tmp_path / "cli"
    assert main(["run", "--out", str(out), "--generator", "oracle", "--limit", "1", "--jobs", "1",
                 "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "oracle" in printed and "agreement" in printed and str(out) in printed
    assert json.loads((out / "summary.json").read_text())["n_specs"] == len(PACKAGE_NAMES)
    assert main(["run", "--out", str(out), "--generator", str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "logicval: error:" in capsys.readouterr().err


def test_atomic_write_helpers(tmp_path):
    p = tmp_path / "a" / "b.json"
    atomic_write_json(p, {"x": 1})
    assert json.loads(p.read_text()) == {"x": 1}
    assert os.listdir(p.parent) == ["b.json"]


def test_backend_fingerprint_covers_every_model_file_of_the_backend(tmp_path):
    """The clevr backend declares its weight files (float detector, its 8-bit copy, attribute classifier):
    retraining any re-scores."""
    import dataclasses

    from logicval_hf.perception import BACKENDS, get_backend, register_backend

    clevr = get_backend("clevr")
    assert [p.name for p in clevr.model_files] == ["scene_parser.onnx", "scene_parser_int8.onnx",
                                                   "scene_parser_attributes.onnx"]
    det, attrs = tmp_path / "d.onnx", tmp_path / "d_attributes.onnx"
    det.write_bytes(b"detector v1")
    attrs.write_bytes(b"classifier v1")
    register_backend("clevr-retrained", dataclasses.replace(clevr, model_files=(det, attrs)))
    try:
        first = cache_mod.backend_fingerprint("clevr-retrained")
        attrs.write_bytes(b"classifier v2")
        second = cache_mod.backend_fingerprint("clevr-retrained")
        det.write_bytes(b"detector v2")
        assert len({first, second, cache_mod.backend_fingerprint("clevr-retrained")}) == 3
    finally:
        BACKENDS.pop("clevr-retrained", None)
    with pytest.raises(ValueError, match="unknown perception backend 'clevr-retrained'"):
        cache_mod.backend_fingerprint("clevr-retrained")


def test_stage_timer_adds_up_repeated_stages_and_books_the_total():
    from logicval_hf.job.timer import StageTimer

    timer = StageTimer()
    timer.add("perceive/x")  # a stage with nothing to do still shows
    for _ in range(2):
        with timer.stage("verify/x") as stage:
            sum(range(20000))
            stage.add_cpu(1.5)  # a worker's CPU seconds
    timer.begin("report")
    timer.finish()
    assert list(timer.wall) == ["perceive/x", "verify/x", "report", "total"] == list(timer.cpu)
    assert timer.wall["perceive/x"] == 0.0 and timer.cpu["verify/x"] >= 3.0
    assert timer.wall["total"] >= timer.wall["verify/x"] + timer.wall["report"]
    assert timer.cpu["total"] == pytest.approx(sum(v for k, v in timer.cpu.items() if k != "total"))


def test_a_partly_filled_folder_is_warned_about_and_can_be_scored_on_what_it_has(first, tmp_path, capsys):
    from logicval_hf.job.run import MissingImagesWarning

    out, _summary = first
    folder = tmp_path / "partial"
    folder.mkdir()
    ids = sorted(p.stem for p in (out / "images" / "oracle").glob("*.png"))
    for i in ids[:3]:
        shutil.copy(out / "images" / "oracle" / f"{i}.png", folder / f"{i}.png")
    rep = tmp_path / "rep"
    args = ["run", "--out", str(rep), "--generator", str(folder), "--limit", str(LIMIT), "--jobs", "1", "--quiet"]
    assert main(args) == 0
    err = capsys.readouterr().err
    said = f"logicval: warning: {len(ids) - 3} of {len(ids)} specs have no image in {folder}"
    assert err.count(said) == 2 and "--only-present" in err  # at once, and again after the scores
    e = json.loads((rep / "summary.json").read_text())["generators"]["partial"]
    assert e["metric"]["n_samples"] == len(ids) and e["missing"] == ids[3:] and e["left_out"] == []
    assert len(e["warnings"]) == 1
    md = (rep / "report.md").read_text()
    assert md.index("## Warnings") < md.index("## Success rate per package") and "- **partial**: " in md
    assert "<li><strong>partial</strong>: " in (rep / "report.html").read_text()

    assert main([*args, "--only-present"]) == 0
    printed = capsys.readouterr()
    assert "are scored (--only-present)" in printed.err and f"3 specs scored, {len(ids) - 3}" in printed.out
    e = json.loads((rep / "summary.json").read_text())["generators"]["partial"]
    assert e["metric"]["n_samples"] == 3 and e["missing"] == [] and e["left_out"] == ids[3:]
    oracle_ok = [json.loads((out / "verdicts" / "oracle" / f"{i}.json").read_text())["verdict"]["ok"]
                 for i in ids[:3]]
    assert e["metric"]["logicval_score"] == pytest.approx(sum(oracle_ok) / 3)

    with pytest.warns(MissingImagesWarning, match="have no image"):  # the Python API says it too
        run(rep, generators=[str(folder)], limit=LIMIT, progress=False, jobs=1)
    (tmp_path / "unnamed").mkdir()
    (tmp_path / "unnamed" / "img_001.png").write_bytes((folder / f"{ids[0]}.png").read_bytes())
    assert main(["run", "--out", str(rep), "--generator", str(tmp_path / "unnamed"), "--limit", "1", "--quiet"]) == 2
    assert "named by a benchmark id" in capsys.readouterr().err


# ---- the report's pictures ---------------------------------------------------------------------------------------
def test_the_known_truth_shows_where_it_equals_the_metric_on_the_load_plot(first, tmp_path):
    """The truth's curve is visible even where it lies exactly on the metric's (it used to hide under it)."""
    import copy

    import numpy as np

    from logicval_hf.job.report import write_plots

    _, summary = first
    agree = copy.deepcopy(summary)
    for e in agree["generators"].values():
        e["truth"] = copy.deepcopy(e["metric"])
    alone = copy.deepcopy(summary)
    for e in alone["generators"].values():
        e["truth"] = e["agreement"] = None

    def axes_pixels(s, where):
        write_plots(where, s)
        with Image.open(where / "plots" / "by_load.png") as im:
            return np.asarray(im.convert("RGB"), dtype=int)

    a, b = axes_pixels(agree, tmp_path / "a"), axes_pixels(alone, tmp_path / "b")
    w = int(min(a.shape[1], b.shape[1]) * 0.6)  # the axes, at the same place in both; the legend lies to the right
    a, b = a[:, :w], b[:, :w]
    assert a.shape == b.shape
    assert (np.abs(a - b).max(axis=2) > 40).sum() > 500


def test_the_gallery_shows_failures_first_with_boxes_and_the_violated_constraint(first):
    import numpy as np

    out, summary = first
    for g in GENS:
        shots = summary["generators"][g]["gallery"]
        assert 0 < len(shots) <= 8
        failed = [not s["ok"] or s["truth"] != s["ok"] for s in shots]
        assert failed == sorted(failed, reverse=True)  # failures first
        for s in shots:
            thumb = out / s["image"]
            assert thumb.suffix == ".jpg" and thumb.stat().st_size < 30_000
            with Image.open(thumb) as im:
                assert im.width == 200
    perturbed = summary["generators"]["perturbed"]["gallery"]
    assert all(not s["ok"] for s in perturbed)
    assert any("violates Constraint" in s["caption"] for s in perturbed)
    assert any(("the prompt asks for" in s["caption"] or "unsatisfiable" in s["caption"]) for s in perturbed)
    # the perceived boxes are drawn (yellow) on an image with objects
    shot = next(s for s in summary["generators"]["oracle"]["gallery"] if s["id"].startswith("1SAT"))
    with Image.open(out / shot["image"]) as im:
        a = np.asarray(im.convert("RGB"), dtype=int)
    assert ((a[..., 0] > 200) & (a[..., 1] > 170) & (a[..., 2] < 90)).sum() > 50
    md, html_text = (out / "report.md").read_text(), (out / "report.html").read_text()
    for g in GENS:
        assert f"### Examples: {g}" in md and f"(gallery/{g}/" in md
        assert f'<img src="gallery/{g}/' in html_text
    assert sorted(p.name for p in (out / "gallery" / "oracle").glob("*.jpg")) == \
        sorted(f"{s['id']}.jpg" for s in summary["generators"]["oracle"]["gallery"])


def test_keep_images_none_keeps_the_report_and_a_rerun_redraws(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "--out", str(out), "--generator", "oracle", "perturbed", "--limit", "1", "--jobs", "1",
                 "--quiet", "--keep-images", "none"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert not list((out / "images").rglob("*.png"))
    assert summary["work"]["oracle"]["deleted_images"] == len(PACKAGE_NAMES)
    assert all((out / s["image"]).is_file() for g in ("oracle", "perturbed")
               for s in summary["generators"][g]["gallery"])
    # failures: the perturbed images (all rejected) stay, the accepted oracle ones go
    again = run(out, generators=["oracle", "perturbed"], limit=1, progress=False, jobs=1, keep_images="failures")
    assert again["work"]["oracle"]["generated"] == len(PACKAGE_NAMES)  # drawn again ...
    assert again["work"]["oracle"]["reused_verdicts"] == len(PACKAGE_NAMES)  # ... to the same bytes: not re-scored
    kept = {g: len(list((out / "images" / g).glob("*.png"))) for g in ("oracle", "perturbed")}
    # kept: every image but those accepted by the metric and the known truth alike (the true positives)
    assert kept == {"oracle": len(PACKAGE_NAMES) - again["generators"]["oracle"]["agreement"]["tp"],
                    "perturbed": len(PACKAGE_NAMES)}
    with pytest.raises(ValueError, match="keep_images must be one of"):
        run(out, generators=["oracle"], limit=1, progress=False, keep_images="some")


def test_the_report_lists_the_least_certain_images_first(first):
    out, summary = first
    md = (out / "report.md").read_text()
    assert "## Perception confidence" in md
    for g in GENS:
        c = summary["generators"][g]["confidence"]
        rated = sorted((json.loads(f.read_text())["verdict"]["confidence"], f.stem)
                       for f in (out / "verdicts" / g).glob("*.json"))
        assert c["n"] == len(rated) and c["min"] == rated[0][0]
        assert c["mean"] == pytest.approx(sum(x for x, _ in rated) / len(rated))
        least = c["least_certain"]
        assert [(x["confidence"], x["id"]) for x in least] == rated[:len(least)]
        assert len(least) == min(analysis_mod.LEAST_CERTAIN_SHOWN, len(rated))
        section = md[md.index(f"### Least certain images: {g}"):]
        rows = [line for line in section.splitlines() if line.startswith("| ")][1:1 + len(least)]
        assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [x["id"] for x in least]
        assert f"| {_fmt(least[0]['confidence'])} |" in rows[0]
    # the worst-disagreements table has a confidence column
    from logicval_hf.job.report import sections, to_markdown

    worst = {"perturbed": [{"id": "3SAT-0000", "package": "3SAT", "kind": "false positive", "intended_objects": 4,
                            "perceived_objects": 4, "scene_errors": 1, "diff": "obj 0 color red->blue",
                            "truth_violated": [1], "metric_violated": [], "generation": "recoloured",
                            "confidence": 0.31}]}
    table = to_markdown(sections(summary, worst))
    assert "| scene errors | confidence | what broke (truth) |" in table and "| 1 | 0.31 | Constraint 2 |" in table


def test_the_report_never_rounds_a_rate_to_an_exact_one_it_is_not():
    assert _fmt(508 / 509) == "0.998" and _fmt(1 / 509) == "0.002"  # one scene of 509 missed: not "1.00"
    assert _fmt(1.0) == "1.00" and _fmt(0.0) == "0.00" and _fmt(0.5) == "0.50"
    assert _fmt(1 - 1e-7) == ">0.9999" and _fmt(1e-7) == "<0.0001"
    for k in range(1, 2000):  # every fraction of up to 2,000 images: exact only when it is
        x = (k - 1) / k
        assert (_fmt(x) in ("1.00", "0.00")) == (x in (0.0, 1.0)), (k, _fmt(x))


def test_a_failed_verdict_says_what_broke_a_count_included():
    from logicval_hf.job.report import what_broke

    assert what_broke([1]) == "Constraint 2"
    assert what_broke([], count_ok=False, n_objects=4, n=5) == "count: 4 object(s), the prompt asks for 5"
    assert what_broke([0, 2], False, 6, 5) == "Constraints 1 and 3; count: 6 object(s), the prompt asks for 5"
    assert what_broke([], True, 3, 3, "UNSAT") == "3 object(s) drawn for an unsatisfiable prompt (the right " \
                                                   "answer is an empty scene)"
    assert what_broke([], True, 5, 5) == "none" and what_broke(None) == "–"


def test_perturbed_rows_that_break_only_the_count_say_so(first):
    """The perturbed generator breaks one constraint or only the count: no failing row reads "none"."""
    out, _summary = first
    md = (out / "report.md").read_text()
    lines = md[md.index("### Least certain images: perturbed"):].splitlines()[1:]
    section = lines[:next((k for k, ln in enumerate(lines) if ln.startswith("#")), len(lines))]
    failing = [ln for ln in section if ln.startswith("| ") and "| not ok |" in ln]
    assert failing and not any(ln.rstrip(" |").endswith("| none") for ln in failing), failing
