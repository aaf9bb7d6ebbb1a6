"""Refitting an exported scene parser's expert weights and confidence power on held-out renders
(``logicval_hf.training.refit_parser``, ``parser_fit.fit_expert_weights``, ``parser_decoding.combine_experts``)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from helpers import render_folder
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("onnxruntime")

from logicval_hf.perception import load_image
from logicval_hf.perception import scene_parser as SP
from logicval_hf.perception.parser_decoding import combine_experts
from logicval_hf.perception.parser_models import AttributeClassifier
from logicval_hf.training import parser_fit as PF

distributions = st.lists(st.floats(0.001, 1.0), min_size=2, max_size=8).map(lambda v: np.array(v) / sum(v))


@given(distributions, st.data(), st.floats(0.0, 3.0), st.floats(0.0, 3.0))
@settings(max_examples=80, deadline=None)
def test_combined_experts_are_a_distribution_and_the_plain_product_at_one_one(p, data, wd, wc):
    q = data.draw(st.lists(st.floats(0.001, 1.0), min_size=len(p), max_size=len(p)).map(lambda v: np.array(v) / sum(v)))
    out = combine_experts(p, q, (wd, wc))
    assert out.sum() == pytest.approx(1) and (out >= 0).all()
    plain = combine_experts(p, q)
    assert plain == pytest.approx(p * q / (p * q).sum())


def test_a_zero_power_silences_an_expert_and_a_power_below_one_tempers_it():
    det, cls = np.array([0.9, 0.1]), np.array([0.01, 0.99])
    assert combine_experts(det, cls, (1.0, 0.0)) == pytest.approx(det)
    assert combine_experts(det, cls, (0.0, 1.0)) == pytest.approx(cls)
    assert combine_experts(det, cls)[1] > 0.9  # the surer expert wins the plain product
    assert combine_experts(det, cls, (1.0, 0.25))[0] > 0.5  # tempered, it no longer does


def _sure_and_wrong(n: int, wrong: int, seed: int = 0):
    """Held-out objects of a 3-class attribute: the detector right and moderately sure on all; the classifier
    right and very sure on most, sure and wrong on ``wrong`` of them."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    det = np.full((n, 3), 0.15)
    det[np.arange(n), y] = 0.7
    cls = np.full((n, 3), 0.005)
    cls[np.arange(n), y] = 0.99
    for k in range(wrong):
        cls[k] = 0.005
        cls[k, (y[k] + 1) % 3] = 0.99
    return det, cls, y


def test_a_pair_too_sure_together_gets_a_power_below_one():
    det, cls, y = _sure_and_wrong(200, 20)
    (wd, wc), fig = PF.fit_expert_weights(det, cls, y)
    assert fig["fitted"] and fig["disagreements"] == 20
    assert wd == wc < 1 and wd in PF.EXPERT_POWERS
    assert fig["nll_fitted"] < fig["nll_plain"] and fig["errors_fitted"] == fig["errors_plain"] == 20


def test_no_objects_keep_the_plain_product():
    w, fig = PF.fit_expert_weights(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, int))
    assert w == (1.0, 1.0) and fig["objects"] == 0 and not fig["fitted"]


@given(st.integers(0, 60), st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_tied_powers_keep_every_class_of_the_plain_product_and_lower_its_nll(wrong, seed):
    det, cls, y = _sure_and_wrong(120, wrong, seed)
    rng = np.random.default_rng(seed)
    det = det * rng.uniform(0.5, 1.5, det.shape)
    det /= det.sum(1, keepdims=True)
    (wd, wc), fig = PF.fit_expert_weights(det, cls, y)
    assert wd == wc and fig["fitted"]
    before = np.array([combine_experts(a, b) for a, b in zip(det, cls, strict=True)])
    after = np.array([combine_experts(a, b, (wd, wc)) for a, b in zip(det, cls, strict=True)])
    assert (before.argmax(1) == after.argmax(1)).all()
    assert fig["errors_fitted"] == fig["errors_plain"] and fig["nll_fitted"] <= fig["nll_plain"] + 1e-9


def test_a_file_without_expert_weights_combines_as_the_plain_product(tmp_path):
    pytest.importorskip("onnx")
    from logicval_hf.training.refit_parser import write_metadata

    meta = {k: v for k, v in SP.SceneParser().meta.items() if k != "expert_weights"}
    bare = tmp_path / "plain.onnx"
    write_metadata(SP.DEFAULT_MODEL, meta, bare)
    model = SP.SceneParser(bare, attribute_model=SP.attribute_model_beside(SP.DEFAULT_MODEL))
    assert model.settings.expert_weights == {}
    rgb = load_image(SP.DEFAULT_MODEL.parents[2] / "tests" / "data" / "clevr"
                     / "clevr_v1_train__CLEVR_train_000514.png")
    dets = model.detect([rgb])[0][0]
    alone = SP.SceneParser(bare, attribute_model=False).detect([rgb])[0][0]
    cls = model.attributes.read([rgb], [alone])
    assert len(dets) == len(alone) > 0
    for k, (d, a) in enumerate(zip(dets, alone, strict=True)):
        for attr, p in d.probs.items():
            q = a.probs[attr] * cls[attr][k]
            assert p == pytest.approx(q / q.sum(), abs=1e-6)


def test_the_shipped_pair_carries_tied_powers_fitted_on_renders_it_never_trained_on():
    model = SP.SceneParser()
    weights = model.settings.expert_weights
    assert set(weights) == {"color", "shape", "material"}
    assert all(wd == wc and 0 < wd < 1 for wd, wc in weights.values())  # both experts were too sure
    refit = model.meta["provenance"]["refit"]
    assert refit["attribute_model"] == "scene_parser_attributes.onnx"
    assert refit["attribute_model_sha256"] == hashlib.sha256(
        SP.attribute_model_beside(SP.DEFAULT_MODEL).read_bytes()).hexdigest()[:16]
    assert model.meta["confidence"]["power"] == refit["confidence_after"]["power"]


# ---- the command ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    return render_folder(tmp_path_factory.mktemp("refit") / "renders", 4, masks=True)


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_refit_writes_a_copy_with_the_weights_power_and_provenance(held_out, tmp_path, capsys):
    pytest.importorskip("onnx")
    from logicval_hf.training import refit_parser as R

    before = _sha(SP.DEFAULT_MODEL)
    shipped = SP.SceneParser().meta
    out = tmp_path / "refit.onnx"
    assert R.main(["--data", str(held_out), "--data", f"{held_out}:0.5", "--out", str(out)]) == 0
    assert _sha(SP.DEFAULT_MODEL) == before  # the input file is untouched
    printed = json.loads(capsys.readouterr().out)
    model = SP.SceneParser(out, attribute_model=SP.attribute_model_beside(SP.DEFAULT_MODEL))
    assert set(model.meta["expert_weights"]) == {"color", "shape", "material"}
    refit = model.meta["provenance"]["refit"]
    assert [d["images"] for d in refit["data"]] == [4, 2]  # the whole folder, then its last half by name
    assert refit["data"][1]["first"] == "R_002.png"
    assert refit["attribute_model"] == "scene_parser_attributes.onnx" and len(refit["attribute_model_sha256"]) == 16
    power = model.meta["confidence"]["power"]
    assert power == refit["confidence_after"]["power"] == printed["confidence_after"]["power"]
    assert refit["confidence_before"]["power"] == shipped["confidence"]["power"]
    # one power per attribute for both experts
    assert all(f["fitted"] for f in refit["attributes"].values())
    assert all(wd == wc for wd, wc in model.settings.expert_weights.values())
    # provenance names the data relative to a stated root
    assert {d["folder"] for d in refit["data"]} == {"$RENDERS/renders"}
    # everything else in the file is as it was, and it parses to the same classes
    assert {k: v for k, v in model.meta.items() if k not in ("expert_weights", "confidence", "provenance")} == \
        {k: v for k, v in shipped.items() if k not in ("expert_weights", "confidence", "provenance")}
    assert model.meta["confidence"]["peak_calibration"] == shipped["confidence"]["peak_calibration"]
    rgb = load_image(held_out / "images" / "R_000.png")
    assert [o.attributes for o in model.parse_batch([rgb])[0].objects] == \
        [o.attributes for o in SP.SceneParser().parse_batch([rgb])[0].objects]


def test_fitted_weights_change_what_the_parser_reads(held_out, tmp_path):
    pytest.importorskip("onnx")
    from logicval_hf.training.refit_parser import write_metadata

    meta = SP.SceneParser().meta
    silent = dict(meta, expert_weights={a: [1.0, 0.0] for a in ("color", "shape", "material")})
    out = tmp_path / "detector_only.onnx"
    write_metadata(SP.DEFAULT_MODEL, silent, out)
    amodel = SP.attribute_model_beside(SP.DEFAULT_MODEL)
    rgb = load_image(held_out / "images" / "R_001.png")
    with_zero = SP.SceneParser(out, attribute_model=amodel).parse_batch([rgb])[0]
    alone = SP.SceneParser(SP.DEFAULT_MODEL, attribute_model=False).parse_batch([rgb])[0]
    # a classifier at power 0 leaves the detector's own probabilities
    for a, b in zip(with_zero.objects, alone.objects, strict=True):
        for attr, probs in a.probs.items():
            assert probs == pytest.approx(b.probs[attr], abs=1e-6)


@pytest.mark.parametrize("argv,says", [
    (["--data", "/no/such/folder", "--out", "x.onnx"], "no such folder"),
    (["--data", "{folder}:1.5", "--out", "x.onnx"], "FRACTION must lie in (0, 1]"),
    (["--data", "{folder}", "--model", "/no/model.onnx", "--out", "x.onnx"], "--model: '/no/model.onnx' not found"),
    (["--data", "{folder}"], "--out"),
    (["--data", "{folder}", "--out", "x.onnx", "--powers", "free"],
     "unsupported argument --powers free (supported: --attribute-model, --data, --model, --out)"),
    (["--data", "{folder}", "--out", "x.onnx", "--classifier-flip", "on"], "unsupported argument --classifier-flip"),
    (["--data", "{folder}", "--out", "x.onnx", "--visible-peaks", "fit"], "unsupported argument --visible-peaks"),
])
def test_bad_arguments_are_one_clear_line(held_out, argv, says, capsys):
    pytest.importorskip("onnx")
    from logicval_hf.training import refit_parser as R

    with pytest.raises(SystemExit) as e:
        R.main([a.format(folder=held_out) for a in argv])
    assert e.value.code == 2
    assert says in capsys.readouterr().err


def test_a_file_that_is_not_a_parser_is_refused_by_name(tmp_path):
    onnx = pytest.importorskip("onnx")
    from logicval_hf.training.refit_parser import write_metadata

    graph = onnx.load(str(SP.DEFAULT_MODEL))
    del graph.metadata_props[:]
    bare = tmp_path / "bare.onnx"
    onnx.save(graph, str(bare))
    with pytest.raises(ValueError, match=r"bare\.onnx: not a LogicVal scene-parser model"):
        write_metadata(bare, {}, tmp_path / "out.onnx")
    assert not (tmp_path / "out.onnx").exists()


def test_reading_the_experts_needs_the_detector_alone(held_out):
    from logicval_hf.training.parser_data import load_folder

    amodel = SP.attribute_model_beside(SP.DEFAULT_MODEL)
    recs = load_folder(held_out)[:1]
    with pytest.raises(ValueError, match="attribute_model=False"):
        PF.read_experts(SP.SceneParser(), AttributeClassifier(amodel), recs)
    readings = PF.read_experts(SP.SceneParser(attribute_model=False), AttributeClassifier(amodel), recs)
    n = sum(len(d) for _, d, _ in readings.per_image)
    assert n > 0 and all(len(v) == n for v in readings.classifier.values())
    for pd, pc, y in readings.samples.values():
        assert len(pd) == len(pc) == len(y) <= n
