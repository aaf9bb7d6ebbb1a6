"""The judge (`logicval_hf.scoring.judge`): one typed result per item, one bad item never failing the others,
one perception call per domain in bounded chunks, the domain taken from the spec, and the minimum confidence."""

import json

import numpy as np
import pytest
from helpers import attr, obj

from logicval_hf import Scene
from logicval_hf.asp.solver import solve
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.contract.spec import Spec
from logicval_hf.generation.render import render_scene
from logicval_hf.perception import BACKENDS, PerceptionBackend, register_backend
from logicval_hf.scoring.evaluation import compute
from logicval_hf.scoring.judge import Judgement, JudgeOptions, judge, judge_one

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
UNSAT = {"n": 3, "constraints": [{"template": "C8/1prop_atleast", "params": {"A1": attr("color", "red"), "K": 8}}]}
COCO_SPEC = {"domain": "coco", "n": 1, "constraints": [{"template": "X1/count_cmp", "params": {
    "A1": {"prop": "class", "value": "dog", "negated": False}, "T": ">=", "K": 1}}]}


def scene(*objs, confidence=None):
    d = {"image_size": [480, 320], "objects": list(objs)}
    return d if confidence is None else {**d, "confidence": confidence}


GOOD = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50),
             obj("gray", "sphere", "rubber", 250, 250))


# ---- a fake backend that records what it was asked --------------------------------------------------------------
class Recorder:
    """A backend for any domain: the image's mean grey level decides its answer (dark: an error), and every call
    is recorded with the domain it asked for and how many images it got."""

    def __init__(self):
        self.calls = []

    def batch(self, images, domain=None, **settings):
        self.calls.append((None if domain is None else domain.name, len(images)))
        return [self.one(im, domain) for im in images]

    def one(self, rgb, domain=None, **settings):
        if rgb.mean() < 20:
            raise ValueError("too dark to read")
        if domain is not None and domain.name == "coco":
            return Scene.from_dict({"image_size": [64, 64], "domain": "coco", "objects": [
                {"class": "dog", "color": "brown", "bbox": [5, 5, 30, 30], "score": 0.9}]}, domain)
        red = [obj("red", "cube", "metal", 10, 10), obj("blue", "cube", "metal", 40, 10),
               obj("gray", "sphere", "rubber", 20, 40)]
        return Scene.from_dict({"image_size": [64, 64], "objects": red, "confidence": float(rgb.mean()) / 255})


@pytest.fixture
def recorder():
    rec = Recorder()
    register_backend("recorder-test", PerceptionBackend("recorder-test", rec.one, rec.batch, domains=None,
                                                        takes_domain=True))
    yield rec
    BACKENDS.pop("recorder-test")


def grey(level):
    return np.full((64, 64, 3), level, np.uint8)


# ---- one result per item, one bad item never failing the others ------------------------------------------------
def test_every_item_gets_its_own_result_and_a_bad_one_fails_alone(tmp_path):
    (tmp_path / "text.png").write_text("not an image")
    refs = [SPEC, {"n": 1, "constraints": []}, SPEC, SPEC, UNSAT]
    preds = [GOOD, GOOD, scene(obj("pink", "cube", "metal", 1, 1)), str(tmp_path / "text.png"), scene()]
    results = judge(refs, preds, JudgeOptions(backend="clevr"))
    assert [type(j) for j in results] == [Judgement] * 5 and [j.index for j in results] == list(range(5))
    assert [(j.stage, j.error is not None) for j in results] == [
        (None, False), ("reference", True), ("prediction", True), ("prediction", True), (None, False)]
    assert results[1].error.startswith("references[1]: spec.n")
    assert results[2].error.startswith("predictions[2]: scene.objects[0].color")
    assert results[3].error.startswith("predictions[3] ") and "not an image file" in results[3].error
    # the good items are judged exactly as on their own
    alone = compute([GOOD, scene()], [SPEC, UNSAT], backend="given")["per_sample"]
    assert [results[0].to_sample(), results[4].to_sample()] == alone
    assert results[0].strict.ok and results[0].relaxed.ok and results[4].label == "UNSAT" and results[4].ok
    # the metric keeps its contract: the first failure (the earliest stage) is raised, naming the item
    with pytest.raises(ValueError, match=r"^references\[1\]: spec\.n"):
        judge(refs, preds, JudgeOptions(errors="raise"))


def test_a_spec_that_cannot_be_labelled_in_time_fails_alone():
    from logicval_hf.errors import SolverTimeout

    hard = {"domain": "coco", "constraints": [{"template": "X1/count_cmp", "params": {
        "A1": {"prop": "class", "value": "horse", "negated": False}, "T": ">=", "K": 4}}]}
    empty = {"domain": "coco", "image_size": [512, 512], "objects": []}
    first, second = judge([hard, SPEC], [empty, GOOD], JudgeOptions(timeout=1e-9))
    assert first.stage == "label" and isinstance(first.exception, SolverTimeout)
    assert first.error.startswith("references[0]: labelling the spec exceeded its time budget")
    assert second.ok is True


def test_an_image_the_backend_refuses_costs_only_its_own_entry(recorder):
    """The backend refuses the whole batch for one dark image: the chunk is read again image by image."""
    results = judge([SPEC] * 4, [grey(200), grey(5), grey(150), grey(180)], JudgeOptions(backend="recorder-test"))
    assert [j.error for j in results] == [None, "predictions[1]: too dark to read", None, None]
    assert [j.ok for j in results] == [True, None, True, True]


def test_an_image_the_backend_answers_with_an_error_is_never_sent_again():
    """A batched backend may answer one image with its error (the vlm backend: a request that timed out, an answer
    outside the vocabulary): that image costs one entry and one reading, not a second try on its own."""
    from logicval_hf.perception import PerceptionError

    sent = []

    def batch(images, **settings):
        sent.extend(int(im.mean()) for im in images)
        return [PerceptionError("no answer within the timeout") if im.mean() < 20 else Scene.from_dict(GOOD)
                for im in images]

    def one(image, **settings):
        raise AssertionError("an image was sent again on its own")

    register_backend("answers-errors-test", PerceptionBackend("answers-errors-test", one, batch))
    try:
        results = judge([SPEC] * 3, [grey(200), grey(5), grey(150)], JudgeOptions(backend="answers-errors-test"))
    finally:
        BACKENDS.pop("answers-errors-test")
    assert sent == [200, 5, 150]
    assert [j.error for j in results] == [None, "predictions[1]: no answer within the timeout", None]
    assert [j.ok for j in results] == [True, None, True]


# ---- batching and the domain ---------------------------------------------------------------------------------
def test_one_perception_call_per_domain_in_bounded_chunks(recorder):
    refs = [SPEC, COCO_SPEC, SPEC, COCO_SPEC, SPEC]
    results = judge(refs, [grey(200)] * 5, JudgeOptions(backend="recorder-test"))
    assert recorder.calls == [(None, 3), ("coco", 2)]  # CLEVR is every backend's default: asked as None
    assert [j.scene.domain.name for j in results] == ["clevr", "coco", "clevr", "coco", "clevr"]
    assert all(j.ok for j in results)
    recorder.calls.clear()
    judge([SPEC] * 5, [grey(200)] * 5, JudgeOptions(backend="recorder-test", chunk=2))
    assert recorder.calls == [(None, 2), (None, 2), (None, 1)]


def test_the_domain_always_comes_from_the_spec():
    """The clevr parser perceives CLEVR only: a coco spec's image is its error, the CLEVR one beside it is read."""
    img, _ = render_scene(solve(SPEC).witness)
    coco, clevr = judge([COCO_SPEC, SPEC], [img, img])
    assert coco.stage == "prediction" and "'coco'" in coco.error and "neural" in coco.error
    assert clevr.error is None and clevr.ok


def test_images_are_opened_chunk_by_chunk(monkeypatch, recorder):
    """Encoded images are opened (and decoded) only in their chunk, never all at once: a chunk's images are
    opened, perceived, and only then the next chunk's opened."""
    import io

    from PIL import Image

    from logicval_hf.scoring import inputs

    buf = io.BytesIO()
    Image.fromarray(grey(200)).save(buf, format="PNG")
    events = []
    real_open, real_batch = inputs.normalise_prediction, recorder.batch

    def opening(x, what="prediction", *args, **kwargs):
        events.append("open")
        return real_open(x, what, *args, **kwargs)

    monkeypatch.setattr(inputs, "normalise_prediction", opening)
    monkeypatch.setattr(recorder, "batch", lambda images, **kw: events.append("perceive") or real_batch(images, **kw))
    BACKENDS.pop("recorder-test")
    register_backend("recorder-test", PerceptionBackend("recorder-test", recorder.one, recorder.batch, domains=None,
                                                        takes_domain=True))
    results = judge([SPEC] * 7, [buf.getvalue()] * 7, JudgeOptions(backend="recorder-test", chunk=3))
    assert all(j.ok for j in results)
    assert events == ["open"] * 3 + ["perceive"] + ["open"] * 3 + ["perceive"] + ["open", "perceive"]


# ---- references and options -----------------------------------------------------------------------------------
def test_a_typed_benchmark_row_is_a_reference():
    row = BenchmarkRow.of_spec(Spec.from_dict(SPEC), "1SAT-0001", "1SAT", "SAT")
    j = judge_one(row, GOOD)
    assert (j.id, j.package, j.label, j.ok) == ("1SAT-0001", "1SAT", "SAT", True)
    assert j.record().id == "1SAT-0001" and j.to_sample()["package"] == "1SAT"


@pytest.mark.parametrize("bad, says", [
    ({"min_confidence": 1.5}, "min_confidence must be a number in [0, 1]"),
    ({"min_confidence": -0.1}, "min_confidence must be a number in [0, 1]"),
    ({"min_confidence": True}, "min_confidence must be a number in [0, 1]"),
    ({"count": "loose"}, "count must be"),
    ({"probabilistic": {"samplez": 3}}, "probabilistic: unknown setting"),
    ({"chunk": 0}, "chunk must be a positive number"),
    ({"errors": "ignore"}, "errors must be 'entry' or 'raise'"),
])
def test_options_are_checked_when_built(bad, says):
    with pytest.raises(ValueError, match=says.replace("[", r"\[").replace("]", r"\]")):
        JudgeOptions(**bad)


def test_options_are_frozen_and_keep_their_own_settings():
    settings = {"threshold": 0.4}
    options = JudgeOptions(backend_settings=settings)
    settings["threshold"] = 0.9
    assert options.backend_settings == {"threshold": 0.4}
    with pytest.raises(AttributeError):
        options.backend = "neural"  # type: ignore[misc]


def test_probability_and_repair_per_item():
    sure = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50))
    results = judge([SPEC, SPEC], [GOOD, sure], JudgeOptions(probabilistic=True, repair=True))
    assert [j.probability.p for j in results] == [1.0, 0.0]
    assert results[0].repair.cost == 0 and results[1].repair.cost == 1  # one object to add
    sample = results[1].to_sample()
    assert sample["probability"] == 0.0 and sample["repair_cost"] == 1 and sample["instructions"]


# ---- the minimum confidence -----------------------------------------------------------------------------------
def test_below_the_minimum_confidence_is_unread_never_a_pass_or_a_failure():
    preds = [{**GOOD, "confidence": 0.9}, {**GOOD, "confidence": 0.3}, GOOD, scene(confidence=0.95)]
    refs = [SPEC, SPEC, SPEC, UNSAT]
    results = judge(refs, preds, JudgeOptions(min_confidence=0.5))
    assert [j.unread is None for j in results] == [True, False, False, True]
    assert results[1].unread == "scene confidence 0.300 is below the minimum 0.5"
    assert "no scene confidence" in results[2].unread
    assert [j.ok for j in results] == [True, None, None, True] and not results[1].scored
    out = compute(preds, refs, backend="given", min_confidence=0.5)
    assert (out["n_samples"], out["n_read"], out["n_unread"], out["min_confidence"]) == (4, 2, 2, 0.5)
    assert out["logicval_score"] == 1.0 and out["abstention_rate"] == 1.0  # over the two images read
    unread = out["per_sample"][1]
    assert unread["unread"].startswith("scene confidence 0.300") and unread["ok"] is None
    assert unread["relaxed_ok"] is None and unread["confidence"] == 0.3 and unread["scene"] is not None
    assert out["per_sample"][0]["unread"] is None
    # without the option nothing is set apart and the answer has no new keys
    plain = compute(preds, refs, backend="given")
    assert "n_read" not in plain and "unread" not in plain["per_sample"][0] and plain["n_samples"] == 4
    # at 0 every reading with a confidence counts
    assert compute(preds[:2], refs[:2], backend="given", min_confidence=0.0)["n_read"] == 2


def test_min_confidence_outside_the_unit_interval_is_refused():
    with pytest.raises(ValueError, match=r"min_confidence must be a number in \[0, 1\].*1\.5"):
        compute([GOOD], [SPEC], backend="given", min_confidence=1.5)


def test_every_image_unread_gives_no_score():
    out = compute([{**GOOD, "confidence": 0.1}], [json.dumps(SPEC)], backend="given", min_confidence=0.5,
                  probabilistic=True, repair=True)
    assert out["n_read"] == 0 and out["logicval_score"] is None
    assert out["probabilistic_score"] is None and out["mean_repair_cost"] is None
