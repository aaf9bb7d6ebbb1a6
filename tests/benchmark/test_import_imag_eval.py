"""Imag-Eval's prompt files imported as LogicVal specs (`logicval_hf.benchmark.importers.imag_eval`), on
hand-written fixtures of the same shape (tests/data/imag_eval/)."""

import json
import shutil
from pathlib import Path

import pytest

from logicval_hf.asp.solver import Solver
from logicval_hf.benchmark.imported import SourceError
from logicval_hf.benchmark.importers.imag_eval import import_source, instance_scores
from logicval_hf.cli.main import main
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject

DATA = Path(__file__).parent.parent / "data" / "imag_eval"
COCO = load_domain("coco")


def cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def solver():
    return Solver()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The fixture folder imported through the CLI with --skip-unsupported: (summary, rows by prompt source)."""
    import datasets

    out = tmp_path_factory.mktemp("imag") / "ds"
    rc = main(["import", "imag-eval", str(DATA), "--out", str(out), "--skip-unsupported", "--no-progress"])
    assert rc == 0
    rows = {r["source"].split(":", 1)[1]: r for r in datasets.load_dataset(str(out))["test"]}
    return out, rows


def test_cli_import_loads_with_datasets_and_labels_every_prompt(imported, capsys):
    out, rows = imported
    assert len(rows) == 9 and (out / "README.md").is_file()
    assert [r["id"] for r in rows.values()] == [f"imag-eval-{k:04d}" for k in range(9)]
    assert sum(r["label"] == "UNSAT" for r in rows.values()) == 1
    r = rows["counting+color.json:prompt[0]"]
    assert r["file"] == "counting+color.json" and r["prompt_id"] == "prompt_001_hard_counting+color"
    assert r["level"] == "hard" and json.loads(r["skills"]) == ["counting", "color"]
    assert r["prompt"].startswith("Three white dogs") and json.loads(r["scene"])["objects"][0]["object"] == "dog"
    spec = json.loads(r["spec_json"])
    assert spec["domain"] == "coco" and "n" not in spec
    # exact count, then every instance coloured (count of class-and-colour = the count), per class
    assert [(c["template"], c["params"].get("T"), c["params"].get("K")) for c in spec["constraints"][:2]] == [
        ("X1/count_cmp", "=", 3), ("X1/count2_cmp", "=", 3)]
    assert len(spec["constraints"]) == 8 and json.loads(r["unsupported"]) == []
    card = (out / "README.md").read_text()
    assert "CC BY-NC 4.0" in card and "mouse -> computer mouse" in card and "9 prompts: 8 SAT, 1 UNSAT" in card


def test_inside_and_larger_is_unsat_with_the_whole_prompt_as_core(imported):
    _, rows = imported
    r = rows["counting+spatial+size.json:prompt[0]"]
    assert r["label"] == "UNSAT" and r["core"] == [0, 1, 2, 3] and r["witness"] == ""
    assert "computer keyboard" in r["core_text"] and "inside" in r["core_text"] and "larger" in r["core_text"]
    rels = [c["params"]["R1"]["rel"] for c in json.loads(r["spec_json"])["constraints"][2:]]
    assert rels == ["inside", "larger"]


def test_aliases_and_relation_names_are_mapped(imported):
    _, rows = imported
    spec = json.loads(rows["counting+spatial+size.json:prompt[1]"]["spec_json"])
    names = {c["params"]["A1"]["value"] for c in spec["constraints"]}
    assert names == {"computer mouse", "laptop"}
    assert [c["params"]["R1"]["rel"] for c in spec["constraints"] if c["template"] == "X4/group_rel_all"] == [
        "left", "larger"]
    spec = json.loads(rows["color+emotion+text.json:prompt[0]"]["spec_json"])
    assert [c["params"]["A1"]["value"] for c in spec["constraints"]] == ["cat", "tv remote"]


def test_skip_unsupported_records_what_was_left_out(imported):
    _, rows = imported
    r = rows["counting+spatial+size.json:prompt[2]"]
    left = json.loads(r["unsupported"])
    assert left == [{"kind": "depth", "field": "scene.spatial_relations[0]", "rule": ["cat", "behind", "dog"],
                     "why": "'behind' needs depth"}]
    # the behind rule is gone, 'dog above cat' and 'dog smaller than cat' stay
    assert [c["params"]["R1"]["rel"] for c in json.loads(r["spec_json"])["constraints"]
            if c["template"] == "X4/group_rel_all"] == ["above", "smaller"]
    r = rows["color+emotion+text.json:prompt[0]"]
    assert [u["kind"] for u in json.loads(r["unsupported"])] == ["gray", "emotion", "text"]
    # gray is dropped, not guessed: the cat only has to be there
    cat = json.loads(r["spec_json"])["constraints"][0]
    assert cat == {"template": "X1/count_cmp", "params": {"A1": {"prop": "class", "value": "cat", "negated": False},
                                                          "T": ">=", "K": 1}}
    remote = json.loads(r["spec_json"])["constraints"][1]
    assert remote["template"] == "C3/1prop" and remote["params"]["C1"]["value"] == "black"
    # emotion and text are recorded even in prompts with nothing else unsupported
    assert [u["kind"] for u in json.loads(rows["color+emotion+text.json:prompt[1]"]["unsupported"])] == [
        "emotion", "text"]


def test_witness_scenes_verify_against_their_specs(imported, solver):
    _, rows = imported
    sat = [r for r in rows.values() if r["label"] == "SAT"]
    assert len(sat) == 8
    for r in sat:
        assert solver.verify(r["spec_json"], r["witness"]).ok, r["source"]


def test_without_skip_the_first_unsupported_rule_is_an_error_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "ds"
    rc, stdout, err = cli(capsys, "import", "imag-eval", DATA, "--out", out, "--no-progress")
    assert rc == 2 and stdout == "" and not out.exists()
    assert err.startswith("logicval: error: color+emotion+text.json:prompt[0]: scene.objects[0].color: colour 'gray'")
    assert "--skip-unsupported" in err
    with pytest.raises(SourceError, match=r"^counting\+spatial\+size\.json:prompt\[2\]: scene\.spatial_relations\[0\]: "
                                          r"'behind' needs depth; the coco domain lacks it \(pass --skip-unsupported"):
        import_source(DATA / "counting+spatial+size.json", out)
    assert not out.exists()
    # a file with every rule supported imports without the flag (one file as the path)
    summary = import_source(DATA / "counting+color.json", out)
    assert summary["rows"] == 3 and summary["labels"] == {"SAT": 3} and summary["unsupported"] == {}


def _fixture(name="counting+spatial+size.json"):
    return json.loads((DATA / name).read_text())


def _broken(tmp_path, edit, name="counting+spatial+size.json"):
    folder = tmp_path / "src"
    folder.mkdir(exist_ok=True)
    shutil.copy(DATA / "counting+color.json", folder / "counting+color.json")
    data = _fixture(name)
    edit(data)
    (folder / name).write_text(json.dumps(data, indent=2))
    return folder


def _set(path, value):
    def edit(data):
        *head, last = path
        node = data
        for k in head:
            node = node[k]
        if value is KeyError:
            del node[last]
        else:
            node[last] = value
    return edit


P1 = ("prompts", 1)
BAD = [
    (_set((*P1, "scene"), KeyError), r":prompt\[1\]: scene: missing key 'scene'"),
    (_set((*P1, "scene", "objects", 0, "object"), "dragon"),
     r":prompt\[1\]: scene\.objects\[0\]\.object: unknown object 'dragon'"),
    (_set((*P1, "scene", "objects", 1, "count"), "3"), r":prompt\[1\]: scene\.objects\[1\]\.count: must be an integer"),
    (_set((*P1, "scene", "objects", 1, "color"), "teal"),
     r":prompt\[1\]: scene\.objects\[1\]\.color: unknown colour 'teal'"),
    (_set((*P1, "scene", "spatial_relations", 0, 1), "beside"),
     r":prompt\[1\]: scene\.spatial_relations\[0\]: unknown relation 'beside'"),
    (_set((*P1, "scene", "size_relations", 0, 2), "cat"),
     r":prompt\[1\]: scene\.size_relations\[0\]: B 'cat' is not among scene\.objects"),
    (_set((*P1, "scene", "size_relations", 0), ["laptop", "larger"]),
     r":prompt\[1\]: scene\.size_relations\[0\]: must be \[A, relation, B\]"),
    (_set((*P1, "scene", "size_relations"), KeyError),
     r":prompt\[1\]: scene\.size_relations: missing: the prompt's skills include 'size'"),
    (_set((*P1, "synthetic_prompts"), []), r":prompt\[1\]: synthetic_prompts: must be a non-empty list"),
    (_set(("prompts",), {}), r": prompts: must be a non-empty list"),
]


@pytest.mark.parametrize("edit,message", BAD)
def test_bad_input_names_file_prompt_and_field_and_writes_nothing(tmp_path, edit, message):
    folder = _broken(tmp_path, edit)
    out = tmp_path / "ds"
    out.mkdir()
    (out / "keep.txt").write_text("an earlier import")
    with pytest.raises(SourceError, match=r"^counting\+spatial\+size\.json" + message):
        import_source(folder, out, skip_unsupported=True)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]  # the earlier folder stays as it was


def test_malformed_json_names_the_file_and_line(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "counting.json").write_text('{\n  "prompts": [\n    {"id": }\n')
    with pytest.raises(SourceError, match=r"^counting\.json:3: json: not valid JSON"):
        import_source(folder, tmp_path / "ds")
    assert not (tmp_path / "ds").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match=r"has no <skills>\.json prompt files"):
        import_source(tmp_path / "empty", tmp_path / "ds")


def test_a_hard_prompt_of_twenty_objects_is_admitted_and_labelled(tmp_path):
    """Five classes of four, coloured, in a chain of relations: 20 objects (Imag-Eval's hard prompts ask for 17-20;
    the 16-object cap used to refuse them)."""
    names = ["dog", "cat", "bird", "horse", "sheep"]
    folder = _broken(tmp_path, _set((*P1, "scene"), {
        "objects": [{"object": n, "count": 4, "color": c}
                    for n, c in zip(names, ["black", "white", "red", "brown", "white"], strict=True)],
        "spatial_relations": [["dog", "to the left of", "cat"], ["bird", "above", "horse"]],
        "size_relations": [["horse", "larger", "sheep"]]}))
    summary = import_source(folder, tmp_path / "ds", skip_unsupported=True)
    assert summary["skipped_prompts"] == [] and summary["rows"] == 6
    import pyarrow.parquet as pq

    row = pq.read_table(tmp_path / "ds" / "data" / "test.parquet").to_pylist()[4]
    assert row["source"].endswith("counting+spatial+size.json:prompt[1]") and row["label"] == "SAT"
    witness = Scene.from_dict(json.loads(row["witness"]), COCO)
    assert len(witness) == 20 and Solver().verify(json.loads(row["spec_json"]), witness).ok


def test_a_box_inside_another_and_below_it_is_sat_and_a_reimport_reports_the_changed_label(tmp_path):
    """A chair inside a toothbrush and the toothbrush under the chair: a small box in the upper part of a large one.
    The lattice labelled this UNSAT; a re-import over a folder holding that label reports the change."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = _broken(tmp_path, _set((*P1, "scene"), {
        "objects": [{"object": "chair", "color": "blue"}, {"object": "toothbrush", "color": "white"}],
        "spatial_relations": [["chair", "inside", "toothbrush"], ["toothbrush", "under", "chair"]],
        "size_relations": []}))
    out = tmp_path / "ds"
    first = import_source(folder, out, skip_unsupported=True)
    assert "relabelled" not in first
    table = pq.read_table(out / "data" / "test.parquet").to_pylist()
    row = next(r for r in table if r["source"].endswith("counting+spatial+size.json:prompt[1]"))
    assert row["label"] == "SAT"
    witness = Scene.from_dict(json.loads(row["witness"]), COCO)
    chair = next(i for i, o in enumerate(witness) if o["class"] == "chair")
    brush = next(i for i, o in enumerate(witness) if o["class"] == "toothbrush")
    assert witness.holds("inside", chair, brush) and witness.holds("above", chair, brush)
    for r in table:  # the folder as the lattice left it
        if r is row:
            r.update(label="UNSAT", witness="", core=[0, 1])
    pq.write_table(pa.Table.from_pylist(table), out / "data" / "test.parquet")
    again = import_source(folder, out, skip_unsupported=True)
    assert again["relabelled"] == {"compared": len(table), "changed": {"UNSAT -> SAT": 1},
                                   "sources": [row["source"]]}
    card = (out / "README.md").read_text()
    assert "## Changelog" in card and f"1 of {len(table)} labels changed (UNSAT -> SAT: 1)" in card


def test_a_prompt_past_the_object_limit_or_the_budget_is_an_error_or_left_out(tmp_path):
    """Five classes of ten: 50 objects, more than the coco domain's max_objects (48): never a label."""
    names = ["dog", "cat", "bird", "horse", "sheep"]
    fifty = _set((*P1, "scene"), {"objects": [{"object": n, "count": 10} for n in names],
                                  "spatial_relations": [], "size_relations": []})

    def edit(data):
        fifty(data)
        del data["prompts"][2]  # it asks for 'behind', which would stop the strict import first

    folder = _broken(tmp_path, edit)
    with pytest.raises(ValueError, match=r"json:prompt\[1\]: spec: a model may need up to 50 objects .*"
                                         r"\(max_objects = 48\); no label is given"):
        import_source(folder, tmp_path / "ds")
    assert not (tmp_path / "ds").exists()
    summary = import_source(folder, tmp_path / "ds", skip_unsupported=True)
    assert summary["skipped_prompts"] == ["Imag-Eval:counting+spatial+size.json:prompt[1]"] and summary["rows"] == 4
    assert "prompt(s) left out as a whole" in (tmp_path / "ds" / "README.md").read_text()
    # a budget no label fits in: every prompt is left out, which is an error of its own
    with pytest.raises(SourceError, match="every prompt was left out"):
        import_source(folder, tmp_path / "ds2", skip_unsupported=True, timeout=1e-9)


# ---------------------------------------------------------------------------------------------------------------
# Imag-Eval's averages beside the strict verdict
# ---------------------------------------------------------------------------------------------------------------
def obj(cls, box, color="black", score=None):
    return SceneObject({"class": cls, "color": color}, tuple(box), score)


def scene(*objs):
    return Scene((512, 512), tuple(objs), COCO)


MICE = _fixture()["prompts"][1]["scene"]  # two mice to the left of a laptop, the laptop larger than the mice
LAPTOP = obj("laptop", (200, 150, 400, 300), "white")


def test_instance_scores_give_partial_credit_where_the_verdict_fails(imported, solver):
    _, rows = imported
    spec = rows["counting+spatial+size.json:prompt[1]"]["spec_json"]
    one_wrong = scene(obj("computer mouse", (20, 200, 60, 240)), LAPTOP, obj("computer mouse", (450, 200, 490, 240)))
    assert instance_scores(MICE, one_wrong) == {"counting": 1.0, "color": None, "spatial": 0.5, "size": 1.0,
                                                "unscored": []}
    assert not solver.verify(spec, one_wrong).ok  # strict: every mouse must be left of the laptop
    right = scene(obj("computer mouse", (20, 200, 60, 240)), LAPTOP, obj("computer mouse", (90, 260, 130, 300)))
    assert instance_scores(json.dumps(MICE), right.to_dict()) == {"counting": 1.0, "color": None, "spatial": 1.0,
                                                                  "size": 1.0, "unscored": []}
    assert solver.verify(spec, right).ok
    # a missing mouse: counting is the mean over classes (1 of 2 right); the pairs that remain are all fine
    assert instance_scores(MICE, scene(obj("computer mouse", (20, 200, 60, 240)), LAPTOP))["counting"] == 0.5


def test_instance_scores_colour_is_a_mean_over_instances():
    dogs = _fixture("counting+color.json")["prompts"][0]["scene"]  # 3 white dogs, 2 red frisbees, 4 blue cups, ...
    s = scene(obj("dog", (0, 0, 40, 40), "white"), obj("dog", (50, 0, 90, 40), "white"),
              obj("dog", (100, 0, 140, 40), "brown"), obj("frisbee", (0, 100, 20, 120), "red"),
              obj("cup", (0, 200, 20, 220), "blue"), obj("bench", (0, 300, 200, 350), "red"),
              obj("cat", (300, 300, 340, 340), "red"))  # a class the prompt does not name: ignored
    got = instance_scores(dogs, s)
    # counting: dogs 3 (yes), frisbees 1 of 2 (no), cups 1 of 4 (no), bench 1 (yes)
    assert got["counting"] == 0.5
    # colour: dogs 2 of 3, frisbee 1 of 1, cup 1 of 1, bench 0 of 1 -> 4 of 6
    assert got["color"] == pytest.approx(4 / 6)
    assert got["spatial"] is None and got["size"] is None


def test_instance_scores_leave_out_what_a_scene_graph_cannot_judge():
    gray = _fixture("color+emotion+text.json")["prompts"][0]["scene"]  # gray cat, black remote, a joyful person
    s = scene(obj("cat", (0, 0, 40, 40), "white"), obj("tv remote", (100, 0, 120, 40), "black"))
    got = instance_scores(gray, s)
    # counting as Imag-Eval's scorer: cat 1, remote 1 (a missing count asks for one), person = len(emotion) = 1
    assert got["counting"] == pytest.approx(2 / 3)
    assert instance_scores(gray, s, emotion_persons=False)["counting"] == 1.0
    assert got["color"] == 1.0 and got["unscored"] == [["cat", "gray"]]
    behind = _fixture()["prompts"][2]["scene"]  # cats behind the dog (unscored), dog above the cats, dog smaller
    s = scene(obj("dog", (200, 20, 240, 60)), obj("cat", (180, 300, 280, 400)), obj("cat", (300, 0, 400, 100)))
    got = instance_scores(behind, s)
    assert got["spatial"] == 0.5 and got["size"] == 1.0 and got["unscored"] == [["cat", "behind", "dog"]]
    # a score threshold drops the low-confidence cat: one pair left, and it holds
    s = scene(obj("dog", (200, 20, 240, 60), score=0.9), obj("cat", (180, 300, 280, 400), score=0.9),
              obj("cat", (300, 0, 400, 100), score=0.1))
    got = instance_scores(behind, s, score_threshold=0.5)
    assert got["spatial"] == 1.0 and got["counting"] == 0.5
