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
    monkeypatch.setattr("logicval_hf.benchmark.prompt_rows.read_prompt_rows", work)
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


# ---- one line for every bad input ----------------------------------------------------------------------------
def one_line_exit(capsys, *argv) -> str:
    """A usage error: exit status 2, one line on stderr (argparse's usage line left out), nothing on stdout."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == "" and err.count("\n") == 1 and err.startswith("logicval: error: "), err
    return err


@pytest.mark.parametrize("argv, says", [
    (["chek"], "invalid choice: 'chek'"),
    ([], "the following arguments are required: command"),
    (["solve"], "the following arguments are required: spec (see `logicval solve --help`)"),
    (["run", "--limit", "0"], "argument --limit: expected a positive integer, got 0"),
    (["run", "--keep-images", "some"], "argument --keep-images: invalid choice: 'some'"),
    (["check", "s.json", "i.png", "--setting", "url"], "argument --setting: expected KEY=VALUE, got 'url'"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_usage_errors_are_one_line(capsys, argv, says):
    assert says in one_line_exit(capsys, *argv)


#: every command that takes --timeout, with what it needs besides (none of it is read: the timeout fails first)
TIMEOUTS = [["solve", "s.json"], ["verify", "s.json", "x.json"], ["check", "s.json", "i.png"],
            ["repair", "s.json", "x.json"], ["run-asp", "p.lp"], ["import", "geneval", "m.jsonl", "--out", "o"],
            ["generate", "--model", "gpt-image-2", "--out", "o"]]


@pytest.mark.parametrize("argv", TIMEOUTS, ids=[a[0] for a in TIMEOUTS])
@pytest.mark.parametrize("bad", ["inf", "0", "-3", "nan", "soon", "1e9"])
def test_every_timeout_is_read_alike(capsys, argv, bad):
    err = one_line_exit(capsys, *argv, "--timeout", bad)
    assert "argument --timeout: expected a positive number of seconds (at most 1000000)" in err
    assert err.rstrip().endswith(f"got {bad!r} (see `logicval {' '.join(argv[:2 if argv[0] == 'import' else 1])} "
                                 "--help`)"), err


def test_a_bounded_timeout_says_none_is_not_taken(capsys, tmp_path):
    err = one_line_exit(capsys, "run-asp", tmp_path / "p.lp", "--timeout", "none")
    assert "expected a positive number of seconds (at most 1000000), got 'none'" in err


@pytest.mark.parametrize("group", ["solve", "verify", "check", "asp_programs", "demo", "repair", "templates",
                                   "dataset", "meta", "run", "generate", "render_clevr", "import_prompts", "serve",
                                   "core", "imports"])
def test_a_command_group_run_as_a_module_never_does_nothing(group):
    import subprocess
    import sys

    from logicval_hf.cli.main import GROUPS

    former = {"core", "imports"}  # modules kept under their former names
    assert group in {g.__name__.rsplit(".", 1)[1] for g in GROUPS} | former
    proc = subprocess.run([sys.executable, "-m", f"logicval_hf.cli.{group}"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith("logicval: error: the following arguments are required: command"), proc.stderr


def test_core_commands_run_as_a_module(tmp_path):
    import subprocess
    import sys

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    proc = subprocess.run([sys.executable, "-m", "logicval_hf.cli.core", "solve", str(spec)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0 and json.loads(proc.stdout)["label"] == "SAT", proc.stderr


SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
    "A1": {"prop": "color", "value": "red", "negated": False}}}]}


@pytest.fixture
def latin1(tmp_path):
    """Files that are not UTF-8 (Latin-1 text), and a good spec beside them."""
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    bad = json.dumps(SPEC).replace("red", "r\u00e9d").encode("latin-1")
    for name in ("bad.json", "bad.lp", "bad.jsonl"):
        (tmp_path / name).write_bytes(bad if name != "bad.lp" else b"p(\xe9).\n")
    return tmp_path


@pytest.mark.parametrize("argv, names", [
    (["solve", "bad.json"], "bad.json"),
    (["asp", "bad.json"], "bad.json"),
    (["verify", "bad.json", "spec.json"], "bad.json"),
    (["verify", "spec.json", "bad.json"], "bad.json"),
    (["repair", "spec.json", "bad.json"], "bad.json"),
    (["check", "bad.json", "spec.json"], "bad.json"),
    (["run-asp", "bad.lp"], "bad.lp"),
    (["generate", "--model", "gpt-image-2", "--out", "OUT", "--dataset", "bad.jsonl"], "bad.jsonl"),
    (["import", "geneval", "bad.jsonl", "--out", "OUT"], "bad.jsonl"),
    (["serve", "--prompts", "bad.jsonl", "--port", "1"], "bad.jsonl"),
    (["meta", "bad.jsonl", "--out", "OUT"], "bad.jsonl"),  # read deep inside: dispatch names the file given
])
def test_a_file_that_is_not_utf8_is_named(latin1, capsys, argv, names):
    rc, out, err = run(capsys, *[str(latin1 / a) if a.endswith((".json", ".lp", ".jsonl")) or a == "OUT" else a
                                 for a in argv])
    assert rc == 2 and out == "" and err.count("\n") == 1 and str(latin1 / names) in err, err
    assert "codec" not in err


def test_a_pairs_line_that_is_not_utf8_is_that_lines_error(latin1, capsys):
    pairs = latin1 / "pairs.jsonl"
    scene = {"image_size": [480, 320], "objects": []}
    good = json.dumps({"spec": SPEC, "scene": scene}).encode()
    pairs.write_bytes(good + b"\n" + good.replace(b"red", b"r\xe9d") + b"\n" + good + b"\n")
    rc, out, _ = run(capsys, "verify", "--jsonl", pairs)
    lines = [json.loads(x) for x in out.splitlines()]
    assert rc == 2 and len(lines) == 3 and "ok" in lines[0] and "ok" in lines[2]
    assert lines[1]["line"] == 2 and lines[1]["error"].startswith(f"line 2 of {pairs} is not UTF-8 text")


def test_check_of_a_folder_says_it_is_a_folder(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    rc, out, err = run(capsys, "check", tmp_path / "spec.json", tmp_path)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert f"cannot read image '{tmp_path}': it is a folder, not a file" in err and "--generator" in err
    rc, out, err = run(capsys, "solve", tmp_path)
    assert rc == 2 and f"cannot read spec '{tmp_path}': it is a folder, not a file" in err


def test_a_spec_nested_deeper_than_python_reads_is_one_line(tmp_path, capsys):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    rc, out, err = run(capsys, "solve", tmp_path / "deep.json")
    assert rc == 2 and out == "" and err.count("\n") == 1 and "nests deeper than" in err and "deep.json" in err


@pytest.mark.parametrize("argv", [["run", "--limit", "1", "--out", "/proc/nope"],
                                  ["run", "--limit", "1", "--out", "/proc/self/nope/deeper"],
                                  ["stats", "MISSING", "--plot", "/proc/x.png"],
                                  ["build-prompts", "--out", "/proc/prompts"]])
def test_an_output_where_nothing_can_be_written_fails_before_any_work(tmp_path, capsys, work_forbidden, argv):
    rc, out, err = run(capsys, *[str(tmp_path / "missing") if a == "MISSING" else a for a in argv])
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert "cannot write in '/proc" in err and err.startswith("logicval: error: --"), err
