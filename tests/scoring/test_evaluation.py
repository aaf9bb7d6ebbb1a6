import json

import pytest
from helpers import attr, obj

from logicval_hf.asp.solver import solve
from logicval_hf.generation.render import render_scene
from logicval_hf.scoring.evaluation import compute, images_in_folder

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
UNSAT = {"n": 3, "constraints": [{"template": "C8/1prop_atleast", "params": {"A1": attr("color", "red"), "K": 8}}]}


def scene(*objs):
    return {"image_size": [480, 320], "objects": list(objs)}


def test_scene_graph_predictions_with_rows_and_json():
    good = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50),
                 obj("red", "cube", "rubber", 250, 250))
    rows = [{"id": "a", "package": "1SAT", "label": "SAT", "spec_json": json.dumps(SPEC)}, json.dumps(UNSAT), UNSAT]
    out = compute([good, json.dumps(scene()), good], rows, backend="given")
    assert [s["ok"] for s in out["per_sample"]] == [True, True, False]
    assert out["per_sample"][0]["id"] == "a" and out["per_sample"][1]["label"] == "UNSAT"
    assert out["abstention_rate"] == 0.5 and out["logicval_score"] == pytest.approx(2 / 3)
    assert out["by_package"]["1SAT"]["score"] == 1.0


def test_rendered_witness_images_through_the_clevr_backend(tmp_path):
    witness = solve(SPEC).witness
    img, _ = render_scene(witness)
    path = tmp_path / "x.png"
    img.save(path)
    out = compute([img, str(path)], [SPEC, SPEC])
    assert len(out["per_sample"]) == 2
    assert out["per_sample"][0]["scene"] == out["per_sample"][1]["scene"]


def test_bad_inputs():
    with pytest.raises(ValueError, match="got 1 predictions for 2 references"):
        compute([scene()], [SPEC, SPEC], backend="given")
    with pytest.raises(ValueError, match=r"references\[0\]: spec\.n"):
        compute([scene()], [{"n": 1, "constraints": []}], backend="given")
    with pytest.raises(ValueError, match=r"predictions\[0\]: scene\.objects\[0\]\.color"):
        compute([scene(obj("pink", "cube", "metal", 1, 1))], [SPEC], backend="given")
    with pytest.raises(ValueError, match="must be lists"):
        compute("abc", [SPEC])


def test_images_in_folder(tmp_path):
    (tmp_path / "1SAT-0001.png").write_bytes(b"x")
    (tmp_path / "1SAT-0002.jpg").write_bytes(b"x")
    found = images_in_folder(tmp_path, ["1SAT-0001", "1SAT-0002", "1SAT-0003"])
    assert sorted(found) == ["1SAT-0001", "1SAT-0002"]
    with pytest.raises(ValueError, match="does not exist"):
        images_in_folder(tmp_path / "nope", [])


def test_each_pair_is_verified_once_and_the_relaxed_verdict_is_derived(monkeypatch):
    """One `Solver.verify_many` call for all pairs, in one count mode (scenes of one spec then share a grounding,
    the solver's own contract); the count-relaxed verdict is derived from the strict one, not verified again."""
    from logicval_hf.asp.solver import Solver

    calls = []
    real = Solver.verify_many

    def counting(self, pairs, count="strict", **kwargs):
        pairs = list(pairs)
        calls.append((len(pairs), count))
        return real(self, pairs, count=count, **kwargs)

    monkeypatch.setattr(Solver, "verify_many", counting)
    two = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50))
    three = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50),
                  obj("gray", "sphere", "rubber", 250, 250))
    none = scene(obj("blue", "cube", "metal", 50, 50))
    out = compute([two, three, none], [SPEC] * 3)
    assert calls == [(3, "strict")]  # the three scenes of one spec in one call, one count mode
    got = [(s["ok"], s["relaxed_ok"], s["count_ok"], s["violated"]) for s in out["per_sample"]]
    assert got == [(False, True, False, []), (True, True, True, []), (False, False, False, [0])]
    assert out["relaxed_score"] == pytest.approx(2 / 3) and out["logicval_score"] == pytest.approx(1 / 3)


def test_bad_calls_are_clear_value_errors(tmp_path):
    with pytest.raises(ValueError, match="no predictions to score"):
        compute([], [])
    img = tmp_path / "a.png"
    render_scene(solve(SPEC).witness)[0].save(img)
    with pytest.raises(ValueError, match=r"predictions\[0\] is a scene graph \(dict\) but predictions\[1\] is the "
                                         r"image path"):
        compute([scene(), str(img)], [SPEC, SPEC])
    with pytest.raises(ValueError, match="probabilistic: unknown setting"):
        compute([scene()], [SPEC], probabilistic={"samplez": 3})
    with pytest.raises(ValueError, match="count must be"):
        compute([scene()], [SPEC], count="loose")


# ---- the object-level entry: specs and scenes in, records out --------------------------------------------------
def test_verify_scenes_gives_the_records_compute_reports():
    from logicval_hf import Scene, Spec
    from logicval_hf.scoring.evaluation import verify_scenes
    from logicval_hf.scoring.scores import Record

    good = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50),
                 obj("red", "cube", "rubber", 250, 250))
    preds = [good, scene(obj("red", "cube", "metal", 50, 50)), scene()]
    specs = [Spec.from_dict(SPEC), Spec.from_dict(SPEC), Spec.from_dict(UNSAT)]
    records = verify_scenes(specs, [Scene.from_dict(p) for p in preds], ids=["a", "b", "c"],
                            packages=["1SAT", "1SAT", "1UNSAT"])
    assert [(r.strict.ok, r.relaxed.ok, r.label) for r in records] == [(True, True, "SAT"), (False, True, "SAT"),
                                                                        (True, True, "UNSAT")]
    assert records[1].scene == Scene.from_dict(preds[1]) and records[2].abstained
    rows = [{"id": i, "package": p, "spec_json": json.dumps(s)} for i, p, s in
            (("a", "1SAT", SPEC), ("b", "1SAT", SPEC), ("c", "1UNSAT", UNSAT))]
    assert compute(preds, rows, backend="given")["per_sample"] == [r.to_sample() for r in records]
    # a sample read back is the same record, scene included
    for r in records:
        back = Record.from_sample(r.spec, r.to_sample(probs=True))
        assert back == r and back.scene == r.scene
    # labels given are trusted (no solving): the empty scene is right for the UNSAT spec, wrong if it were SAT
    (lied,) = verify_scenes(specs[2:], [Scene.from_dict(scene())], labels=["SAT"])
    assert lied.label == "SAT" and not lied.strict.ok and records[2].strict.ok
    with pytest.raises(ValueError, match="2 scenes for 3 specs"):
        verify_scenes(specs, [Scene.from_dict(good)] * 2)
    with pytest.raises(ValueError, match="domain"):
        coco = Scene.from_dict({"image_size": [64, 64], "domain": "coco", "objects": []})
        verify_scenes(specs[:1], [coco])


def test_a_failed_generation_sample_is_never_an_abstention():
    from logicval_hf import Spec
    from logicval_hf.scoring.scores import Record

    sample = {"id": "x", "package": "1UNSAT", "label": "UNSAT", "ok": False, "relaxed_ok": False, "count_ok": False,
              "violated": [0], "n_objects": None, "scene": None, "failed": "missing"}
    rec = Record.from_sample(Spec.from_dict(UNSAT), sample)
    assert not rec.abstained and rec.scene is None and rec.strict.violated == (0,)


# ---- a third-party backend that takes raw input -----------------------------------------------------------------
def _listed_scene(text, domain=None, **settings):
    """A raw-input backend: 'red cube metal, blue sphere rubber' -> objects in a row."""
    from logicval_hf import Scene

    if not isinstance(text, str) or not text.startswith("objects:"):
        raise ValueError(f"expected 'objects: colour shape material, ...', got {text!r}")
    items = [t.split() for t in text[len("objects:"):].split(",") if t.strip()]
    return Scene.from_dict({"image_size": [480, 320],
                            "objects": [obj(c, s, m, 40 + 60 * k, 160) for k, (c, s, m) in enumerate(items)]})


@pytest.fixture
def listed_backend():
    from logicval_hf.perception import BACKENDS, PerceptionBackend, register_backend

    register_backend("listed-test", PerceptionBackend("listed-test", _listed_scene, raw_input=True))
    yield "listed-test"
    BACKENDS.pop("listed-test")


def test_a_raw_input_backend_gets_its_predictions_untouched(listed_backend):
    three_red = "objects: red cube metal, red sphere rubber, blue cube metal"
    out = compute([three_red, "objects: blue cube metal", scene()], [SPEC, SPEC, UNSAT], backend=listed_backend)
    assert [(s["ok"], s["n_objects"]) for s in out["per_sample"]] == [(True, 3), (False, 1), (True, 0)]
    with pytest.raises(ValueError, match=r"^predictions\[1\]: expected 'objects: "):
        compute([three_red, "three red things"], [SPEC, SPEC], backend=listed_backend)
    # the same strings with a pixel backend are paths that do not exist
    with pytest.raises(ValueError, match=r"predictions\[0\]: .* neither scene-graph JSON nor an existing image"):
        compute([three_red], [SPEC])


def test_per_sample_says_how_sure_perception_was():
    sure = {**scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50),
                    obj("red", "cube", "rubber", 250, 250)), "confidence": 0.42}
    out = compute([sure, scene()], [SPEC, UNSAT], backend="given")
    assert [s["confidence"] for s in out["per_sample"]] == [0.42, None]
    assert out["per_sample"][0]["scene"]["confidence"] == 0.42
    with pytest.raises(ValueError, match=r"predictions\[0\]: scene\.confidence: must be a probability"):
        compute([{**sure, "confidence": 1.5}], [SPEC], backend="given")
