"""Training and fitting the visible-peak read (``--visible-peaks``): its targets, its loss, a two-step run whose
export carries the outputs, and the refit's choice of its threshold."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import occluded_map, render_folder, two_step_detector

pytest.importorskip("onnxruntime")

from logicval_hf.perception import load_image  # noqa: E402
from logicval_hf.perception import scene_parser as SP  # noqa: E402
from logicval_hf.training.parser_data import Record  # noqa: E402




def test_the_object_behind_gets_its_peak_on_the_strip_it_shows_and_the_way_back_to_its_centre():
    from logicval_hf.training.parser_model import visible_peak_targets

    centres = np.array([[20.0, 20.0], [15.0, 20.0]])
    sizes = np.array([[40.0, 40.0], [30.0, 40.0]])
    heat, idx, reg = visible_peak_targets(centres, sizes, (6, 8), 8, occluded_map(), np.arange(2), 2)
    peaks = list(zip(*np.nonzero(heat == 1)))
    assert len(peaks) == 2
    (y0, x0) = next((y, x) for y, x in peaks if x * 8 >= 30)  # object 0's peak lies on its strip
    assert 30 <= (x0 + 0.5) * 8 < 40 + 8
    row = reg[(idx == y0 * 8 + x0).nonzero()[0][0]]
    assert (x0 + row[0], y0 + row[1]) == pytest.approx((20 / 8, 20 / 8))  # back to its hidden centre
    assert np.exp(row[2:4]) * 8 == pytest.approx((40.0, 40.0)) and row[4] == 1.0
    # an object with no pixel on the canvas gets no peak; without a map the peak sits at the centre
    h2, i2, _ = visible_peak_targets(np.array([[20.0, 20.0]]), np.array([[8.0, 8.0]]), (6, 8), 8,
                                     np.full((48, 64), -1, np.int16), np.arange(1), 1)
    assert (h2 == 0).all() and len(i2) == 0
    h3, _, _ = visible_peak_targets(np.array([[20.0, 20.0]]), np.array([[8.0, 8.0]]), (6, 8), 8)
    assert h3[2, 2] == 1.0


def test_the_loss_adds_the_visible_peak_terms_only_when_asked():
    import torch

    from logicval_hf.training.parser_data import classes
    from logicval_hf.training.parser_model import VISIBLE_PEAK_CHANNELS, loss_fn, targets, visible_peak_targets

    cls = classes()
    m, labels = occluded_map(), np.array([[1, 0, 0, 0], [2, 1, 1, 1]])
    centres, sizes = np.array([[20.0, 20.0], [15.0, 20.0]]), np.array([[40.0, 40.0], [30.0, 40.0]])
    heat, idx, reg, attr, aw, hw = targets(centres, sizes, labels, (6, 8), 8, m, np.arange(2), labels)
    vh, vi, vr = visible_peak_targets(centres, sizes, (6, 8), 8, m, np.arange(2), 2)
    out = torch.zeros(1, 1 + 4 + sum(len(v) for v in cls.values()) + 2 + VISIBLE_PEAK_CHANNELS, 6, 8)
    args = (torch.from_numpy(heat)[None], [torch.from_numpy(idx)], [torch.from_numpy(reg)],
            torch.from_numpy(attr)[None], torch.from_numpy(aw)[None], cls)
    plain_total, plain = loss_fn(out, *args)
    total, parts = loss_fn(out, *args, vp=(torch.from_numpy(vh)[None], [torch.from_numpy(vi)], [torch.from_numpy(vr)]))
    assert "vheat" not in plain and parts["vheat"] > 0 and parts["vreg"] > 0
    assert float(total) == pytest.approx(float(plain_total) + parts["vheat"] + parts["vreg"], rel=1e-5)
    assert {k: v for k, v in parts.items() if k not in ("vheat", "vreg")} == pytest.approx(plain)


def test_a_checkpoint_without_the_head_starts_its_channels_at_zero_and_its_heat_at_the_prior():
    torch = pytest.importorskip("torch")
    from logicval_hf.training.parser_model import VISIBLE_PEAK_CHANNELS, build_model, load_init

    old = build_model()
    new = build_model(visible_peaks=True)
    load_init(new, old.state_dict())
    w_old, w_new = old.state_dict()["head.1.weight"], new.state_dict()["head.1.weight"]
    b_new = new.state_dict()["head.1.bias"]
    k = w_old.shape[0]
    assert torch.equal(w_new[:k], w_old) and (w_new[k:] == 0).all()
    assert b_new[k] == pytest.approx(-2.19) and (b_new[k + 1:] == 0).all()
    assert w_new.shape[0] == k + VISIBLE_PEAK_CHANNELS


@pytest.mark.slow
def test_two_steps_with_visible_peaks_export_the_outputs_and_parse(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from logicval_hf.training import train_scene_parser as T

    folder, out, export, _ = two_step_detector(tmp_path, "--visible-peaks")
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck["model"]["head.1.weight"].shape[0] == T.build_model(visible_peaks=True).state_dict()[
        "head.1.weight"].shape[0]
    model = SP.SceneParser(export)
    assert {"vpeak", "vreg"} <= model.outputs
    assert model.visible_peaks is None  # the export does not turn it on: the refit chooses its threshold
    rgb = load_image(folder / "images" / "R_000.png")
    off = model.parse_batch([rgb])[0]
    on = model.parse_batch([rgb], visible_peaks=True)[0]
    assert len(on.objects) >= len(off.objects) and 0 <= on.confidence <= 1
    # the refit fits the threshold (or leaves the read off) and records what it saw
    from logicval_hf.training import refit_parser as R

    refitted = tmp_path / "refit.onnx"
    assert R.main(["--data", str(folder), "--model", str(export), "--attribute-model",
                   str(SP.attribute_model_beside(SP.DEFAULT_MODEL)), "--visible-peaks", "fit",
                   "--out", str(refitted)]) == 0
    fig = SP.SceneParser(refitted).meta["provenance"]["refit"]["visible_peaks"]
    assert fig["images"] == 4 and set(fig["exact_by_threshold"]) == {str(t) for t in R.VISIBLE_PEAK_GRID}
    chosen = SP.SceneParser(refitted).visible_peaks
    assert (chosen is None) == (fig["chosen"] is None)


# ---- the refit's choice of a threshold --------------------------------------------------------------------
def _record(centres) -> Record:
    c = np.array(centres, float)
    return Record("r", np.zeros((100, 100, 3), np.uint8), c, np.full((len(c), 2), 10.0),
                  np.zeros((len(c), 4), int))


def _found(x: float, y: float, score: float = 0.9, source: str = "centre") -> SP.Detection:
    probs = {a: np.array([1.0] + [0.0] * 7) for a in ("color", "shape", "material")}
    return SP.Detection(x, y, 10.0, 10.0, score, probs, source=source)


def test_the_threshold_chosen_reads_most_images_exactly_and_stays_off_when_nothing_gains():
    from logicval_hf.training.refit_parser import choose_visible_threshold

    records = [_record([[20, 20], [70, 70]]), _record([[20, 20]]), _record([[30, 30], [80, 20]])]
    found = [[_found(20, 20), _found(70, 70, 0.62, "visible")],  # a hidden object found at 0.62: right
             [_found(20, 20), _found(75, 25, 0.41, "visible")],  # a spurious one at 0.41: wrong
             [_found(30, 30)]]  # a miss no threshold brings back
    entry, fig = choose_visible_threshold(records, found, 2.0, (0.3, 0.5, 0.7))
    assert fig["exact_without"] == 1 and fig["exact_by_threshold"] == {"0.3": 1, "0.5": 2, "0.7": 1}
    assert entry == {"threshold": 0.5, "radius": 2.0} and fig["objects_added_by_threshold"]["0.5"] == 1
    entry, fig = choose_visible_threshold(records[1:], found[1:], 2.0, (0.3, 0.5))
    assert entry is None and fig["chosen"] is None


def test_the_refit_refuses_visible_peaks_for_a_detector_without_them(tmp_path, capsys):
    pytest.importorskip("onnx")
    from logicval_hf.training import refit_parser as R

    folder = render_folder(tmp_path / "renders", 2, masks=True)
    with pytest.raises(SystemExit):
        R.main(["--data", str(folder), "--visible-peaks", "fit", "--out", str(tmp_path / "x.onnx")])
    assert "no visible-peak outputs" in capsys.readouterr().err
