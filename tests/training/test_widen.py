"""Widening a trained attribute classifier (logicval_hf/training/widen.py): the wide network computes what the
narrow one did, its copies can learn apart, and the training script widens a narrower --init."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from logicval_hf.training import train_attribute_classifier as A  # noqa: E402
from logicval_hf.training.widen import channel_map, widen_chain  # noqa: E402


def trained_narrow(seed: int = 0):
    """A width-1 classifier with BatchNorm statistics of its own (not the fresh 0 / 1), in evaluation mode."""
    torch.manual_seed(seed)
    net = A.build_model(1.0)
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.rand(8, 4, 64, 64))
    return net.eval()


@pytest.mark.parametrize("width", [1.0, 1.25, 1.5, 2.0])
def test_the_wide_network_computes_what_the_narrow_one_did(width):
    narrow = trained_narrow()
    wide = A.build_model(width)
    info = A.widen_model(narrow, wide, seed=3)
    wide.eval()
    assert [w for _, w in info["channels"]] == [round(c * width) for c in (24, 32, 48, 48, 64, 64, 128, 128)]
    x = torch.rand(6, 4, 64, 64)
    with torch.no_grad():
        (ln, cn), (lw, cw) = narrow(x), wide(x)
    assert torch.allclose(ln, lw, atol=1e-5) and torch.allclose(cn, cw, atol=1e-5)
    if width > 1:
        assert sum(p.numel() for p in wide.parameters()) > sum(p.numel() for p in narrow.parameters())


def test_copies_of_a_channel_get_different_gradients():
    """An equal split would keep a channel and its copy identical for ever; the random shares do not."""
    narrow, wide = trained_narrow(), A.build_model(2.0)
    A.widen_model(narrow, wide, seed=0)
    wide.eval()  # the same normalisation for both copies: only the split of their outgoing weights differs
    logits, _ = wide(torch.rand(4, 4, 64, 64))
    logits.square().sum().backward()
    g = wide.features[0][0].weight.grad  # channel k and its copy at 24 + j read the same inputs
    mapping = channel_map(24, 48, np.random.default_rng(0))
    j = int(np.nonzero(mapping[24:] == mapping[24])[0][0]) + 24
    assert not torch.allclose(g[mapping[24]], g[j])


def test_channel_maps_keep_the_narrow_channels_first_and_copy_evenly():
    m = channel_map(4, 10, np.random.default_rng(1))
    assert m[:4].tolist() == [0, 1, 2, 3]
    counts = np.bincount(m, minlength=4)
    assert counts.min() >= 2 and counts.max() <= 3  # every channel copied once before any twice
    with pytest.raises(ValueError, match="cannot widen 4 channels to fewer"):
        channel_map(4, 3, np.random.default_rng(1))


def test_chains_of_other_depths_or_inputs_are_refused():
    narrow, wide = trained_narrow(), A.build_model(2.0)
    blocks_n = [(b[0], b[1]) for b in narrow.features]
    blocks_w = [(b[0], b[1]) for b in wide.features]
    fc_n, fc_w = narrow.head[2], wide.head[2]
    with pytest.raises(ValueError, match="chains of 7 and 8 blocks"):
        widen_chain(blocks_n[:-1], blocks_w, fc_n, fc_w, spatial=16)
    with pytest.raises(ValueError, match="reads 4 channels in the narrow network, 48 in the wide one"):
        widen_chain(blocks_n[:2], blocks_w[1:3], fc_n, fc_w, spatial=16)


def test_training_widens_a_narrower_init_and_refuses_to_narrow(tmp_path, capsys):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from helpers import render_folder

    from logicval_hf.perception import scene_parser

    folder = render_folder(tmp_path / "renders", 4, masks=True)
    base = ["--data", str(folder), "--batch-size", "8", "--val-fraction", "0.25", "--no-progress", "--threads", "1"]
    narrow = tmp_path / "narrow.onnx"
    assert A.main([*base, "--out", str(tmp_path / "n"), "--steps", "1", "--export", str(narrow)]) == 0
    wide = tmp_path / "wide.onnx"
    assert A.main([*base, "--out", str(tmp_path / "w"), "--steps", "2", "--width", "1.5", "--init", str(narrow),
                   "--export", str(wide)]) == 0
    assert "widened 1 -> 1.5" in capsys.readouterr().out
    ck = torch.load(tmp_path / "w" / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    assert ck["model"]["features.0.0.weight"].shape[0] == 36
    clf = scene_parser.AttributeClassifier(wide)
    assert clf.meta["width"] == 1.5
    probs, _ = clf.classify(np.zeros((2, 4, scene_parser.CROP, scene_parser.CROP), np.float32))
    assert np.allclose(probs["shape"].sum(1), 1)
    assert A.read_init(wide) == (1.5, None)
    width, ck = A.read_init(tmp_path / "w" / "last.pt")
    assert width == 1.5 and ck is not None and ck["step"] == 2

    with pytest.raises(SystemExit, match=r"width 1\.5; it can be widened, not narrowed to --width 1"):
        A.main([*base, "--out", str(tmp_path / "x"), "--steps", "1", "--init", str(wide)])
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(SystemExit, match=r"cannot read a classifier from --init .*junk\.onnx"):
        A.main([*base, "--out", str(tmp_path / "y"), "--steps", "1", "--init", str(tmp_path / "junk.onnx")])
    with pytest.raises(SystemExit) as e:
        A.main([*base, "--out", str(tmp_path / "z"), "--width", "9"])
    assert e.value.code == 2
    assert "--width must lie in [0.25, 4], got 9.0" in capsys.readouterr().err
