"""Hard-example mining in the attribute classifier's training (``--hard-mining``): objects are drawn in
proportion to their running loss, and the losses survive a resume."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import render_folder
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from logicval_hf.training import train_attribute_classifier as A  # noqa: E402
from logicval_hf.training.train_scene_parser import load_folder  # noqa: E402

losses_lists = st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=30)


@given(losses_lists)
@settings(max_examples=60, deadline=None)
def test_probabilities_are_a_distribution_that_favours_higher_losses(values):
    p = A.ObjectLosses(np.array(values)).probabilities()
    assert p.sum() == pytest.approx(1) and (p > 0).all()  # every object keeps a chance
    clipped = np.clip(values, A.ObjectLosses.FLOOR, A.ObjectLosses.CAP)
    order = np.argsort(clipped, kind="stable")
    assert (np.diff(p[order]) >= -1e-12).all()  # never less likely than an object with a lower loss


def test_probabilities_clip_the_losses_and_keep_the_folders_weights():
    losses = A.ObjectLosses(np.array([0.0, 1.0, 100.0, 3.0]))
    p = losses.probabilities()
    assert p[0] == pytest.approx(p[1] * A.ObjectLosses.FLOOR)  # read right: rarely, but still drawn
    assert p[2] == pytest.approx(p[3])  # unreadable objects cannot take over: capped
    w = np.array([0.1, 0.1, 0.4, 0.4])
    assert losses.probabilities(w)[3] / losses.probabilities(w)[1] == pytest.approx(3 * 4)


def test_update_averages_each_drawn_objects_loss_and_skips_numpy_crops():
    losses = A.ObjectLosses.fresh(3)
    losses.update(np.array([0, -1, 2, 2]), np.array([3.0, 9.0, 0.0, 0.0]))
    assert losses.values.tolist() == pytest.approx([2.0, 1.0, 0.25])  # object 2 drawn twice: decayed twice


def test_per_object_loss_sums_the_perceived_attributes_and_ignores_size_and_unknowns():
    cls = A.classes()
    width = sum(len(c) for c in cls.values())
    logits = torch.zeros(2, width)
    labels = torch.tensor([[0, 0, 0, 1], [-1, 1, -1, -1]])
    got = A.per_object_loss(logits, labels, cls)
    expect0 = sum(np.log(len(cls[a])) for a in ("color", "shape", "material"))
    assert got.tolist() == pytest.approx([expect0, np.log(len(cls["shape"]))])


def test_hard_draws_follow_the_given_probabilities(tmp_path):
    recs = load_folder(render_folder(tmp_path / "r", 2, masks=True))
    samples = A.object_samples(recs)
    assert len(samples) >= 2
    only = np.zeros(len(samples))
    only[1] = 1.0
    _, y, _, idx = A.make_batch(recs, samples, 3, 1, 16, 0.25, hard=(only, 1.0), return_indices=True)
    assert (idx[:4] == -1).all()  # the numpy-renderer share comes first and is kept
    assert (idx[4:] == 1).all()  # every rendered crop from the one object the probabilities allow
    assert (y[4:] == torch.from_numpy(samples[1].labels)).all()
    half = A.make_batch(recs, samples, 3, 1, 16, 0.25, hard=(only, 0.5), return_indices=True)[3]
    assert (half[4:10] == 1).all()  # half of the 12 rendered crops are hard draws


def test_without_hard_mining_batches_are_unchanged(tmp_path):
    recs = load_folder(render_folder(tmp_path / "r", 2, masks=True))
    samples = A.object_samples(recs)
    plain = A.make_batch(recs, samples, 5, 2, 8, 0.25)
    x, y, t, idx = A.make_batch(recs, samples, 5, 2, 8, 0.25, return_indices=True)
    assert (plain[0] == x).all() and (plain[1] == y).all() and (plain[2] == t).all()
    assert len(idx) == 8 and (idx[:2] == -1).all() and (idx[2:] >= 0).all()


def test_training_with_hard_mining_carries_the_losses_across_a_resume(tmp_path, capsys):
    folder = render_folder(tmp_path / "renders", 4, masks=True)
    out, export = tmp_path / "ack", tmp_path / "attrs.onnx"
    argv = ["--data", str(folder), "--out", str(out), "--steps", "2", "--batch-size", "8", "--val-fraction",
            "0.25", "--export", str(export), "--export-every", "2", "--no-progress", "--threads", "1",
            "--hard-mining", "0.5"]
    assert A.main(argv) == 0
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    kept = np.asarray(ck["state"]["object_losses"])
    n_train = len(A.object_samples(load_folder(folder)[:3]))  # 4 scenes, the last held out
    assert len(kept) == n_train
    assert (kept != 1.0).any()  # drawn objects' losses moved from the start value
    from logicval_hf.perception.scene_parser import AttributeClassifier

    assert AttributeClassifier(export).meta["provenance"]["hard_mining"] == 0.5
    assert A.main([*argv[:5], "3", *argv[6:]]) == 0  # resuming continues with the same losses
    ck3 = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck3["step"] == 3 and len(ck3["state"]["object_losses"]) == n_train
    other = render_folder(tmp_path / "more", 8, masks=True)
    with pytest.raises(SystemExit, match="resume with the same --data"):
        A.main(["--data", str(other), *argv[2:5], "4", *argv[6:]])


def test_hard_mining_outside_its_range_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        A.main(["--out", str(tmp_path / "o"), "--hard-mining", "1.5", "--steps", "1"])
    assert "--hard-mining must lie in [0, 1]" in capsys.readouterr().err
