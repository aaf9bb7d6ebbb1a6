"""The command line as a new user meets it: ``logicval --version``; every command that writes checks its outputs
before any work; ``logicval run`` says what it is doing at every stage; ``--timeout none`` means what its error
says; ``logicval templates`` lists the templates; ``demo`` explains its region codes."""

from __future__ import annotations

import json

import pytest

import logicval_hf
from logicval_hf.cli.main import main


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"logicval {logicval_hf.__version__}\n"


@pytest.fixture
def work_forbidden(monkeypatch):
    """The work behind the commands whose inputs cannot fail first: reaching it fails the test."""
    def work(*a, **k):
        raise AssertionError("the command started working before checking its output")

    monkeypatch.setattr("logicval_hf.benchmark.dataset.write_dataset", work)
    monkeypatch.setattr("logicval_hf.job.run.run", work)
    monkeypatch.setattr("logicval_hf.cli.generate.load_rows", work)
    monkeypatch.setattr("logicval_hf.asp.programs.write_generated", work)


#: (argv with OUT where the output goes, the flag the message names); missing inputs come after the output
#: in each argv, so a command that read its inputs first would complain about them instead
WRITERS = [
    (["build-dataset", "--out", "OUT"], "--out"),
    (["run", "--out", "OUT", "--limit", "1"], "--out"),
    (["generate", "--model", "gpt-image-2", "--out", "OUT"], "--out"),
    (["render-clevr", "--out", "OUT", "--num-images", "1", "--assets", "MISSING"], "--out"),
    (["import", "geneval", "MISSING", "--out", "OUT"], "--out"),
    (["meta", "MISSING", "--out", "OUT"], "--out"),
    (["asp", "--write-templates", "OUT"], "--write-templates"),
]


@pytest.mark.parametrize("argv,flag", WRITERS, ids=[a[0] for a, _ in WRITERS])
@pytest.mark.parametrize("where", ["existing-file", "under-a-file"])
def test_an_output_folder_that_cannot_be_one_fails_before_any_work(tmp_path, capsys, work_forbidden, argv, flag,
                                                                     where):
    existing = tmp_path / "results.txt"
    existing.write_text("keep me\n")
    out = existing if where == "existing-file" else existing / "sub"
    argv = [str(out) if a == "OUT" else str(tmp_path / "missing") if a == "MISSING" else a for a in argv]
    rc, stdout, err = run(capsys, *argv)
    assert rc == 2 and stdout == "" and err.count("\n") == 1, err
    assert err.startswith(f"logicval: error: {flag} '{out}'"), err
    assert existing.read_text() == "keep me\n"  # nothing lost


def test_an_output_file_that_cannot_be_one_fails_before_reading_the_input(tmp_path, capsys):
    rc, _, err = run(capsys, "stats", tmp_path / "missing", "--plot", tmp_path)
    assert rc == 2 and err == f"logicval: error: --plot '{tmp_path}' is a folder: give a file name\n"
    (tmp_path / "f").write_text("")
    rc, _, err = run(capsys, "stats", tmp_path / "missing", "--plot", tmp_path / "f" / "plot.png")
    assert rc == 2 and "is a file, so nothing can be written under it" in err


def test_existing_output_folders_are_fine(tmp_path, capsys):
    rc, out, _ = run(capsys, "asp", "--write-templates", tmp_path)
    assert rc == 0 and (tmp_path / "templates").is_dir() and out.strip()


def test_run_says_what_it_is_doing_from_the_start(tmp_path, capsys):
    rc, out, err = run(capsys, "run", "--out", tmp_path / "r", "--generator", "oracle", "--limit", "1",
                       "--jobs", "1")
    assert rc == 0 and "oracle" in out
    lines = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip()]
    assert lines[0].startswith("logicval run: benchmark: "), lines[:3]
    assert f"logicval run: report: thumbnails, tables and plots into {tmp_path / 'r'}" in lines
    assert any(ln.startswith("generate oracle") for ln in lines) and any(ln.startswith("score oracle")
                                                                          for ln in lines)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["n_specs"] >= 1
    # every stage of the Timings table had a line as it began (perception and verification run as one: score/)
    stages = {k.replace("perceive/", "score/").replace("verify/", "score/") for k in summary["timings"]} - {"total"}
    assert {"benchmark", "generate/oracle", "score/oracle", "report"} <= stages
    missing = [st for st in stages if not any(ln.startswith(f"logicval run: {st}: ") for ln in lines)]
    assert not missing, (missing, lines)


def test_timeout_none_is_what_the_error_suggests(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"n": 3, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "red", "negated": False}}}]}))
    with pytest.raises(SystemExit) as e:
        main(["solve", str(spec), "--timeout", "0"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "or 'none' for no time budget, got '0'" in err, err
    for none in ("none", "None"):
        rc, out, err = run(capsys, "solve", spec, "--timeout", none)
        assert rc == 0 and json.loads(out)["satisfiable"] is True, err
    rc, out, _ = run(capsys, "solve", spec, "--timeout", "2.5")
    assert rc == 0 and json.loads(out)["label"] == "SAT"


def test_templates_lists_every_template_with_its_class_and_an_example(capsys):
    from logicval_hf.contract.catalog import load_catalog

    catalog = load_catalog()
    rc, out, _ = run(capsys, "templates")
    assert rc == 0
    lines = out.splitlines()
    for tid in catalog.templates:
        line = next(ln for ln in lines if ln.split()[:1] == [tid])
        assert len(line.split(maxsplit=1)[1]) > 10, line  # an example sentence beside the id
    for cls in catalog.classes:
        assert any(ln.startswith(f"{cls} ") for ln in lines), cls
    rc, again, _ = run(capsys, "templates")
    assert again == out  # examples drawn with a fixed seed
    rc, out, _ = run(capsys, "templates", "--class", "C8", "--json")
    table = json.loads(out)
    assert rc == 0 and {r["class"] for r in table} == {"C8"} and len(table) == len(catalog.by_class("C8"))
    assert all(r["slots"] and r["example"] for r in table)
    rc, out, _ = run(capsys, "templates", "--extensions", "--json")
    assert {r["id"] for r in json.loads(out)} == set(catalog.templates) | set(catalog.extensions)
    rc, out, err = run(capsys, "templates", "--class", "C10")
    assert rc == 2 and out == "" and err.count("\n") == 1 and "C10" in err and "C9" in err


def test_demo_explains_its_region_codes(capsys):
    rc, out, _ = run(capsys, "demo")
    assert rc == 0
    codes = {tok for ln in out.splitlines() if ln.lstrip().startswith("#") for tok in ln.split() if tok[:1] == "r"
             and tok[1:].isdigit()}
    legend = next(ln for ln in out.splitlines() if "regions" in ln)
    assert codes and all(f"{c} " in legend for c in codes), (codes, legend)
