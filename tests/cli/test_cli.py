import json
import subprocess
import sys

import pytest
from helpers import attr, obj

from logicval_hf.cli.main import main

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
SCENE = {"image_size": [480, 320],
         "objects": [obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50)]}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    (tmp_path / "scene.json").write_text(json.dumps(SCENE))
    return tmp_path


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_solve(files, capsys):
    rc, out, _ = run(capsys, "solve", files / "spec.json")
    res = json.loads(out)
    assert rc == 0 and res["label"] == "SAT" and len(res["witness"]["objects"]) == 3 and res["core"] is None


def test_verify_strict_and_relaxed(files, capsys):
    rc, out, _ = run(capsys, "verify", files / "spec.json", files / "scene.json")
    assert rc == 0 and json.loads(out)["ok"] is False and json.loads(out)["count_ok"] is False
    rc, out, _ = run(capsys, "verify", files / "spec.json", files / "scene.json", "--relaxed")
    assert json.loads(out)["ok"] is True


def test_verify_jsonl(files, capsys):
    lines = [json.dumps({"spec": SPEC, "scene": SCENE}), json.dumps({"spec": SPEC, "scene": SCENE, "count": "relaxed"}),
             "{broken", json.dumps({"spec": {"n": 1, "constraints": []}, "scene": SCENE})]
    (files / "pairs.jsonl").write_text("\n".join(lines) + "\n")
    rc, out, err = run(capsys, "verify", "--jsonl", files / "pairs.jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r.get("ok") for r in rows[:2]] == [False, True]
    assert rows[2]["line"] == 3 and "error" in rows[2]
    assert "spec.n" in rows[3]["error"]
    assert rc == 2 and "2 line(s)" in err  # bad input exits 2, as the README says; the good lines still get verdicts


def test_verify_jsonl_a_pair_the_judge_cannot_label_fails_alone(files, capsys):
    """A spec that cannot be labelled within the budget gets its error line; the pairs beside it their verdicts."""
    horses = {"domain": "coco", "constraints": [{"template": "X1/count_cmp", "params": {
        "A1": {"prop": "class", "value": "horse", "negated": False}, "T": ">=", "K": 4}}]}
    empty = {"domain": "coco", "image_size": [512, 512], "objects": []}
    lines = [{"spec": SPEC, "scene": SCENE, "label": "SAT"}, {"spec": horses, "scene": empty},
             {"spec": SPEC, "scene": SCENE, "label": "SAT", "count": "relaxed"}]
    (files / "pairs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    rc, out, err = run(capsys, "verify", "--jsonl", files / "pairs.jsonl", "--timeout", "1e-9")
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r.get("ok") for r in rows] == [False, None, True]
    assert rows[1]["line"] == 2 and rows[1]["error"].startswith("line 2: labelling the spec exceeded its time budget")
    assert rc == 2 and "1 line(s)" in err


def test_bad_input_exit_code_and_message(files, capsys):
    (files / "bad.json").write_text('{"n": 3, "constraints": [{"template": "C1/nope", "params": {}}]}')
    rc, out, err = run(capsys, "solve", files / "bad.json")
    assert rc == 2 and out == "" and err.startswith("logicval: error: spec.constraints[0].template: unknown template")
    rc, _, err = run(capsys, "solve", files / "missing.json")
    assert rc == 2 and "cannot read spec" in err
    (files / "notjson.json").write_text("{")
    rc, _, err = run(capsys, "verify", files / "spec.json", files / "notjson.json")
    assert rc == 2 and "not valid JSON" in err


def test_verify_takes_what_solve_prints(files, capsys):
    """`logicval solve spec.json > scene.json; logicval verify spec.json scene.json`."""
    rc, out, _ = run(capsys, "solve", files / "spec.json")
    (files / "answer.json").write_text(out)
    rc, out, err = run(capsys, "verify", files / "spec.json", files / "answer.json")
    assert rc == 0 and json.loads(out)["ok"] is True, err
    # --witness prints the scene graph alone
    rc, out, _ = run(capsys, "solve", files / "spec.json", "--witness")
    scene = json.loads(out)
    assert rc == 0 and set(scene) == {"image_size", "objects"} and len(scene["objects"]) == 3
    (files / "witness.json").write_text(out)
    rc, out, _ = run(capsys, "verify", files / "spec.json", files / "witness.json")
    assert rc == 0 and json.loads(out)["ok"] is True
    # the answer stands for its witness in the batch mode too
    (files / "pairs.jsonl").write_text(json.dumps({"spec": SPEC, "scene": json.loads(
        (files / "answer.json").read_text())}) + "\n")
    rc, out, _ = run(capsys, "verify", "--jsonl", files / "pairs.jsonl")
    assert rc == 0 and json.loads(out)["ok"] is True


def test_an_unsat_spec_has_no_witness_to_print_or_verify(files, capsys):
    from logicval_hf.cli.demo import EXAMPLE_UNSAT

    (files / "unsat.json").write_text(json.dumps(EXAMPLE_UNSAT))
    rc, out, err = run(capsys, "solve", files / "unsat.json", "--witness")
    assert rc == 1 and out == "" and len(err.splitlines()) == 1
    assert "is UNSAT" in err and "no witness" in err and "Constraints 1, 2 and 3" in err
    rc, out, _ = run(capsys, "solve", files / "unsat.json")
    (files / "answer.json").write_text(out)
    rc, out, err = run(capsys, "verify", files / "unsat.json", files / "answer.json")
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert "`logicval solve`'s answer for an UNSAT spec" in err


@pytest.mark.parametrize("content", ["", "\n", "{}", "[]"], ids=["empty", "blank", "empty-object", "list"])
def test_verify_of_an_empty_scene_suggests_a_command_that_works(files, capsys, content):
    """The suggestion is `logicval solve SPEC --witness > SCENE.json`, which writes a scene
    graph `verify` takes (`logicval check` refuses JSON), and following it works."""
    empty = files / "empty.json"
    empty.write_text(content)
    rc, out, err = run(capsys, "verify", files / "spec.json", empty)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, err
    assert "logicval check" not in err
    suggested = f"`logicval solve {files / 'spec.json'} --witness > SCENE.json`"
    assert suggested in err, err
    rc, out, _ = run(capsys, "solve", files / "spec.json", "--witness")
    empty.write_text(out)
    rc, out, _ = run(capsys, "verify", files / "spec.json", empty)
    assert rc == 0 and json.loads(out)["ok"] is True


def test_asp_and_run_asp(files, capsys):
    rc, out, _ = run(capsys, "asp", files / "spec.json")
    assert rc == 0 and "violated(0)" in out and "object(0..2)." in out
    (files / "spec.lp").write_text(out)
    rc, out, _ = run(capsys, "run-asp", files / "spec.lp")
    assert rc == 0 and json.loads(out)["label"] == "SAT"
    (files / "evil.lp").write_text('#include "/etc/passwd".')
    rc, _, err = run(capsys, "run-asp", files / "evil.lp")
    assert rc == 2 and "#include" in err


def test_console_script_demo():
    proc = subprocess.run([sys.executable, "-m", "logicval_hf.cli.main", "demo"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Solver label: SAT" in proc.stdout and "Verify witness: ok=True" in proc.stdout
    assert "minimal unsat core" in proc.stdout


def test_top_level_entry_points():
    import logicval_hf as lv

    r = lv.solve(SPEC)
    assert r.satisfiable and lv.verify(SPEC, r.witness).ok
    assert lv.verify_many([(SPEC, r.witness)])[0].ok
    assert callable(lv.extract_scene) and callable(lv.ground_captions) and callable(lv.probability)
    with pytest.raises(AttributeError):
        lv.no_such_thing  # noqa: B018


# ---- images: `check`, and `verify` given an image ----------------------------------------------
@pytest.fixture(scope="module")
def witness_png(tmp_path_factory):
    import logicval_hf as lv
    from logicval_hf.generation.render import render_scene

    path = tmp_path_factory.mktemp("img") / "witness.png"
    render_scene(lv.solve(SPEC).witness)[0].save(path)
    return path


def test_verify_given_an_image_says_scenes_are_json(files, witness_png, capsys):
    rc, out, err = run(capsys, "verify", files / "spec.json", witness_png)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert f"scene '{witness_png}' is not JSON text" in err and "scenes are JSON" in err
    assert f"`logicval check {files / 'spec.json'} {witness_png}`" in err


def test_check_image_to_verdict(files, witness_png, capsys):
    rc, out, _ = run(capsys, "check", files / "spec.json", witness_png)
    res = json.loads(out)
    assert rc == 0 and res["ok"] is True and res["violated"] == [] and res["backend"] == "clevr"
    assert len(res["scene"]["objects"]) == 3 and res["scene"]["image_size"] == [480, 320]
    assert all("probs" not in o for o in res["scene"]["objects"])
    # a failing verdict still exits 0
    from logicval_hf.cli.demo import EXAMPLE_SAT  # five objects: three is the wrong count

    (files / "five.json").write_text(json.dumps(EXAMPLE_SAT))
    rc, out, _ = run(capsys, "check", files / "five.json", witness_png, "--pretty")
    res = json.loads(out)
    assert rc == 0 and res["ok"] is False and res["count_ok"] is False and res["count"] == "strict"
    rc, out, _ = run(capsys, "check", files / "spec.json", witness_png, "--relaxed", "--probs")
    res = json.loads(out)
    assert rc == 0 and res["count"] == "relaxed" and any("probs" in o for o in res["scene"]["objects"])


def _sure_of_one_red_cube(rgb, **settings):
    """A backend for the test below: one red cube, 37 % sure of it."""
    from logicval_hf import Scene

    return Scene.from_dict({"image_size": [rgb.shape[1], rgb.shape[0]],
                            "objects": [obj("red", "cube", "metal", 50, 50)], "confidence": 0.37})


def _no_idea(rgb, **settings):
    from logicval_hf import Scene

    return Scene.empty()


def test_check_says_how_sure_the_backend_is(files, witness_png, capsys):
    import argparse

    from logicval_hf.cli.check import cmd_check
    from logicval_hf.perception import BACKENDS, PerceptionBackend, register_backend

    _rc, out, _ = run(capsys, "check", files / "spec.json", witness_png)
    res = json.loads(out)
    assert 0 <= res["confidence"] <= 1 and res["confidence"] == res["scene"]["confidence"]  # the clevr parser's
    # a backend registered in-process (`check --backend` offers the built-in ones, so the command's function)
    args = argparse.Namespace(spec=str(files / "spec.json"), image=str(witness_png), backend="one-red-cube-test",
                              timeout=20.0, relaxed=False, probs=False, pretty=False)
    register_backend("one-red-cube-test", PerceptionBackend("one-red-cube-test", _sure_of_one_red_cube))
    try:
        assert cmd_check(args) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["confidence"] == 0.37 and res["ok"] is False and res["n_objects"] == 1
        register_backend("one-red-cube-test", PerceptionBackend("one-red-cube-test", _no_idea), replace=True)
        assert cmd_check(args) == 0
        assert json.loads(capsys.readouterr().out)["confidence"] is None  # a backend that does not say
    finally:
        BACKENDS.pop("one-red-cube-test")


def test_check_min_confidence_sets_an_unsure_reading_apart(files, witness_png, capsys):
    import argparse

    from logicval_hf.cli.check import cmd_check
    from logicval_hf.perception import BACKENDS, PerceptionBackend, register_backend

    args = argparse.Namespace(spec=str(files / "spec.json"), image=str(witness_png), backend="one-red-cube-test",
                              timeout=20.0, relaxed=False, probs=False, pretty=False, min_confidence="0.5")
    register_backend("one-red-cube-test", PerceptionBackend("one-red-cube-test", _sure_of_one_red_cube))
    try:
        assert cmd_check(args) == 0
        res = json.loads(capsys.readouterr().out)  # 0.37 < 0.5: no verdict either way, and why
        assert res["unread"] == "scene confidence 0.370 is below the minimum 0.5"
        assert res["ok"] is None and res["count_ok"] is None and res["confidence"] == 0.37
        assert len(res["scene"]["objects"]) == 1
        args.min_confidence = "0.3"
        assert cmd_check(args) == 0
        res = json.loads(capsys.readouterr().out)
        assert res["unread"] is None and res["ok"] is False and res["n_objects"] == 1
    finally:
        BACKENDS.pop("one-red-cube-test")
    # the shipped parser through the command line: 0 reads everything
    rc, out, _ = run(capsys, "check", files / "spec.json", witness_png, "--min-confidence", "0")
    assert rc == 0 and json.loads(out)["unread"] is None and json.loads(out)["ok"] is True
    for bad in ("1.5", "-0.1", "sure"):
        rc, out, err = run(capsys, "check", files / "spec.json", witness_png, "--min-confidence", bad)
        assert rc == 2 and out == "" and err.count("\n") == 1
        assert err.startswith("logicval: error: --min-confidence must be a number in [0, 1]") and bad in err


def test_check_bad_input(files, witness_png, capsys):
    rc, out, err = run(capsys, "check", files / "spec.json", files / "scene.json")
    assert rc == 2 and out == "" and "is a JSON file" in err and "logicval verify" in err
    rc, _, err = run(capsys, "check", files / "spec.json", files / "nope.png")
    assert rc == 2 and "cannot read image" in err and "no such file" in err
    (files / "text.png").write_text("not an image")
    rc, _, err = run(capsys, "check", files / "spec.json", files / "text.png")
    assert rc == 2 and "not an image file" in err
    rc, _, err = run(capsys, "check", files / "scene.json", witness_png)
    assert rc == 2 and err.startswith("logicval: error: spec")
    rc, _, err = run(capsys, "check", files / "spec.json", witness_png, "--backend", "magic")
    # the list names every shipped backend (and any a test registered in this process)
    assert rc == 2 and err.startswith("logicval: error: unknown perception backend 'magic' (known: clevr, given, ")
    assert err.count("\n") == 1 and all(name in err for name in ("neural", "ocr", "vlm"))


# ---- pipes and human-facing numbering -----------------------------------------------------------
def test_broken_pipe_exits_quietly(files):
    """`logicval asp spec.json | head`: the reader goes away before we write; no error, status 0."""
    code = "import sys; from logicval_hf.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "asp", str(files / "spec.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `head` exiting before the program's first write
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""


def test_demo_numbers_constraints_from_one(capsys):
    rc, out, _ = run(capsys, "demo")
    assert rc == 0
    assert "  Constraint 1: " in out and "violated: none" in out
    assert "minimal unsat core: Constraints 1, 2 and 3" in out
    assert "violated=[" not in out and "constraints=[" not in out  # no bare lists of numbers


def test_constraint_names():
    from logicval_hf.contract.verbalise import constraint_names

    assert constraint_names([]) == "none"
    assert constraint_names([0]) == "Constraint 1"
    assert constraint_names((2, 0)) == "Constraints 1 and 3"
    assert constraint_names([0, 1, 5]) == "Constraints 1, 2 and 6"


def test_solve_witness_image_size_is_integers(files, capsys):
    _rc, out, _ = run(capsys, "solve", files / "spec.json", "--image-size", "640", "480")
    size = json.loads(out)["witness"]["image_size"]
    assert size == [640, 480] and all(type(v) is int for v in size)
