import json
import subprocess
import sys

import pytest

from helpers import attr, obj
from logicval_hf.cli.main import main

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
SCENE = {"image_size": [480, 320], "objects": [obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50)]}


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
    assert rc == 1 and "2 line(s)" in err


def test_bad_input_exit_code_and_message(files, capsys):
    (files / "bad.json").write_text('{"n": 3, "constraints": [{"template": "C1/nope", "params": {}}]}')
    rc, out, err = run(capsys, "solve", files / "bad.json")
    assert rc == 2 and out == "" and err.startswith("logicval: error: spec.constraints[0].template: unknown template")
    rc, _, err = run(capsys, "solve", files / "missing.json")
    assert rc == 2 and "cannot read spec" in err
    (files / "notjson.json").write_text("{")
    rc, _, err = run(capsys, "verify", files / "spec.json", files / "notjson.json")
    assert rc == 2 and "not valid JSON" in err


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
    proc = subprocess.run([sys.executable, "-m", "logicval_hf.cli.main", "demo"], capture_output=True, text=True, timeout=120)
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
