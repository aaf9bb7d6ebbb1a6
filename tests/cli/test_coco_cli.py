"""The core ``logicval`` commands with COCO specs and scenes: scenes are read in the spec's domain."""

import json

import pytest

from logicval_hf.cli.main import main


def cls(name):
    return {"prop": "class", "value": name, "negated": False}


SPEC = {"domain": "coco", "score_threshold": 0.3, "constraints": [
    {"template": "X1/count_cmp", "params": {"A1": cls("dog"), "T": ">=", "K": 2}},
    {"template": "C4/pair_rel", "params": {"A1": cls("dog"), "R1": {"rel": "left", "negated": False},
                                           "B1": cls("cat")}},
]}


def dog(x, score=0.9, color="brown"):
    return {"class": "dog", "color": color, "bbox": [x, 200, x + 60, 260], "score": score}


CAT = {"class": "cat", "color": "black", "bbox": [400, 200, 460, 260], "score": 0.8}
GOOD = {"image_size": [512, 512], "domain": "coco", "objects": [dog(20), dog(120), CAT]}
# the second dog is under the spec's score threshold: it does not count
WEAK = {"image_size": [512, 512], "objects": [dog(20), dog(120, score=0.2), CAT]}


@pytest.fixture
def files(tmp_path):
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    (tmp_path / "good.json").write_text(json.dumps(GOOD))
    (tmp_path / "weak.json").write_text(json.dumps(WEAK))
    return tmp_path


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_verify_ok_and_not_ok(files, capsys):
    rc, out, err = run(capsys, "verify", files / "spec.json", files / "good.json")
    assert rc == 0 and err == ""
    v = json.loads(out)
    assert v["ok"] is True and v["label"] == "SAT" and v["n_objects"] == 3
    # a scene without "domain" is read in the spec's: COCO; one dog under the threshold leaves one dog
    rc, out, _ = run(capsys, "verify", files / "spec.json", files / "weak.json")
    v = json.loads(out)
    assert rc == 0 and v["ok"] is False and v["violated"] == [0] and v["n_objects"] == 2


def test_bad_class_name_is_one_line_exit_2(files, capsys):
    bad = json.loads(json.dumps(GOOD))
    bad["objects"][0]["class"] = "dgo"
    (files / "bad.json").write_text(json.dumps(bad))
    rc, out, err = run(capsys, "verify", files / "spec.json", files / "bad.json")
    assert rc == 2 and out == ""
    assert err.startswith("logicval: error: ") and err.count("\n") == 1
    assert "scene.objects[0].class" in err and "'dgo'" in err and "'dog'" in err  # did you mean 'dog'?
    # and in the spec
    spec = json.loads(json.dumps(SPEC))
    spec["constraints"][0]["params"]["A1"]["value"] = "dgo"
    (files / "badspec.json").write_text(json.dumps(spec))
    rc, out, err = run(capsys, "verify", files / "badspec.json", files / "good.json")
    assert rc == 2 and out == "" and err.startswith("logicval: error: spec.constraints[0]") and err.count("\n") == 1


def test_scene_of_another_domain_is_one_clear_error(files, capsys):
    clevr = {"image_size": [480, 320], "domain": "clevr", "objects": []}
    (files / "clevr.json").write_text(json.dumps(clevr))
    rc, out, err = run(capsys, "verify", files / "spec.json", files / "clevr.json")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("logicval: error: ") and "'clevr'" in err and "'coco'" in err


def test_verify_jsonl_reads_each_scene_in_its_spec_domain(files, capsys):
    clevr_spec = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "red", "negated": False}}}]}
    clevr_scene = {"image_size": [480, 320], "objects": [
        {"color": c, "shape": "cube", "material": "metal", "bbox": [10 + 100 * i, 10, 50 + 100 * i, 50]}
        for i, c in enumerate(("red", "blue", "gray"))]}
    lines = [{"spec": SPEC, "scene": GOOD}, {"spec": SPEC, "scene": WEAK}, {"spec": SPEC, "scene": clevr_scene},
             {"spec": clevr_spec, "scene": clevr_scene}, {"spec": clevr_spec, "scene": GOOD}]
    (files / "pairs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    rc, out, err = run(capsys, "verify", "--jsonl", files / "pairs.jsonl")
    rows = [json.loads(x) for x in out.splitlines()]
    assert [r.get("ok") for r in rows[:2]] == [True, False]
    assert rows[2]["line"] == 3 and "scene.objects[0]" in rows[2]["error"]  # CLEVR attributes in a COCO scene
    assert rows[3]["ok"] is True
    assert rows[4]["line"] == 5 and "'coco'" in rows[4]["error"] and "'clevr'" in rows[4]["error"]
    assert rc == 2 and "2 line(s)" in err  # bad input: status 2


def test_solve_and_asp_take_coco_specs(files, capsys):
    rc, out, _ = run(capsys, "solve", files / "spec.json")
    res = json.loads(out)
    assert rc == 0 and res["label"] == "SAT"
    w = res["witness"]
    assert w["domain"] == "coco" and w["image_size"] == [512, 512]  # the domain's size by default
    (files / "witness.json").write_text(json.dumps(w))
    rc, out, _ = run(capsys, "verify", files / "spec.json", files / "witness.json")
    assert rc == 0 and json.loads(out)["ok"] is True
    rc, out, _ = run(capsys, "asp", files / "spec.json")
    assert rc == 0 and "(coco)" in out


def test_check_perceives_in_the_spec_domain(files, capsys):
    """The clevr backend perceives CLEVR only: a COCO spec is a one-line error before any perception."""
    from PIL import Image

    Image.new("RGB", (64, 48), (90, 90, 90)).save(files / "im.png")
    rc, out, err = run(capsys, "check", files / "spec.json", files / "im.png")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("logicval: error: ") and "'coco'" in err and "neural" in err
