"""Widening a trained detector (parser_model.widen_model over widen.widen_graph): the wide network computes what
the narrow one did, the pyramid's summed tensors share their channel copies, the copies can learn apart, and
the training script widens a narrower --init, checkpoint or shipped .onnx."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers import detector_argv, render_folder  # noqa: E402

from logicval_hf.training.parser_model import (  # noqa: E402
    BASE_CHANNELS,
    WIDENING_PLAN,
    build_model,
    model_width,
    widen_model,
)
from logicval_hf.training.widen import Layer, widen_graph  # noqa: E402


def trained_narrow(seed: int = 0, visible_peaks: bool = False):
    """A width-1 detector with BatchNorm statistics of its own (not the fresh 0 / 1), in evaluation mode."""
    torch.manual_seed(seed)
    net = build_model(1.0, visible_peaks=visible_peaks)
    net.train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.rand(4, 3, 96, 128))
    return net.eval()


@pytest.mark.parametrize(("width", "visible_peaks"), [(1.0, False), (1.25, False), (1.5, True), (2.0, False)])
def test_the_wide_detector_computes_what_the_narrow_one_did(width, visible_peaks):
    narrow = trained_narrow(visible_peaks=visible_peaks)
    wide = build_model(width, visible_peaks=visible_peaks)
    info = widen_model(narrow, wide, seed=3)
    expected = [max(1, round(c * width)) for c in BASE_CHANNELS]
    assert info["channels"]["s4.0"] == [16, expected[0]] and info["channels"]["f32"] == [128, expected[4]]
    assert info["channels"]["f16"] == info["channels"]["fused16"] == [96, expected[3]]
    assert info["channels"]["head"] == [96, 96]  # the head's hidden channels keep their size
    x = torch.rand(2, 3, 96, 128)
    for mode in ("eval", "train"):  # train: BatchNorm's batch statistics of a channel and its copies agree too
        narrow.train(mode == "train")
        wide.train(mode == "train")
        with torch.no_grad():
            assert torch.allclose(narrow(x), wide(x), atol=2e-5)
    if width > 1:
        assert sum(p.numel() for p in wide.parameters()) > 1.4 * sum(p.numel() for p in narrow.parameters())


def test_the_pyramid_sums_need_one_channel_map_for_both_summands():
    """Widening the lateral convolutions with channel maps of their own (not those of the stage outputs they are
    added to) changes what the network computes: the shared groups are what keeps the copy exact."""
    narrow = trained_narrow()
    own_maps = tuple((c, b, src, c if c.startswith("lat") else dst) for c, b, src, dst in WIDENING_PLAN)
    x = torch.rand(1, 3, 96, 128)
    outputs = []
    for plan in (WIDENING_PLAN, own_maps):
        wide = build_model(1.5)
        widen_model(narrow, wide, seed=0, plan=plan)
        with torch.no_grad():
            outputs.append(wide.eval()(x))
    with torch.no_grad():
        reference = narrow(x)
    assert torch.allclose(reference, outputs[0], atol=2e-5)
    assert not torch.allclose(reference, outputs[1], atol=1e-3)


def test_copies_of_a_channel_get_different_gradients():
    narrow, wide = trained_narrow(), build_model(2.0)
    widen_model(narrow, wide, seed=0)
    wide.eval()
    wide(torch.rand(2, 3, 96, 128)).square().sum().backward()
    g = wide.s8[0][0].weight.grad  # channel 0 and its copies read the same inputs
    copies = [k for k in range(64, 128) if torch.equal(wide.s8[0][0].weight[k], wide.s8[0][0].weight[0])]
    assert copies and not torch.allclose(g[0], g[copies[0]])


def test_graphs_that_cannot_be_widened_are_refused():
    narrow, wide = trained_narrow(), build_model(1.5)
    with pytest.raises(ValueError, match="reads the channel group 'f8' before any layer made it"):
        widen_graph([Layer(narrow.lat16, None, wide.lat16, None, "f8", "f16")])
    with pytest.raises(ValueError, match="group 'x' is made at two sizes"):
        widen_graph([Layer(narrow.s4[0][0], narrow.s4[0][1], wide.s4[0][0], wide.s4[0][1], None, "x"),
                     Layer(narrow.s4[1][0], narrow.s4[1][1], wide.s4[1][0], wide.s4[1][1], "x", "x")])
    with pytest.raises(ValueError, match="reads 3 channels in the narrow network, 24 in the wide one"):
        widen_graph([Layer(narrow.s4[0][0], None, wide.s4[1][0], None, None, "y")])
    with pytest.raises(ValueError, match="differ in the visible-peak head"):
        widen_model(narrow, build_model(1.5, visible_peaks=True), seed=0)
    assert model_width(24) == 1.5


def test_training_widens_a_narrower_init_and_refuses_to_narrow(tmp_path, capsys):
    pytest.importorskip("onnx")
    from logicval_hf.perception import scene_parser as SP
    from logicval_hf.training import train_scene_parser as T

    folder = render_folder(tmp_path / "renders", 4, masks=True)
    narrow = tmp_path / "narrow.onnx"
    assert T.main(detector_argv(folder, tmp_path / "n", narrow)) == 0
    for init in (narrow, tmp_path / "n" / "last.pt"):  # a shipped file whose checkpoint is gone, or a checkpoint
        out, wide = tmp_path / f"w_{init.suffix[1:]}", tmp_path / f"wide_{init.suffix[1:]}.onnx"
        assert T.main(detector_argv(folder, out, wide, "--width", "1.25", "--init", str(init))) == 0
        assert "widened 1 -> 1.25" in capsys.readouterr().out
        ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
        assert ck["step"] == 2 and ck["model"]["s4.0.0.weight"].shape[0] == 20
        assert ck["history"][0]["widened"]["channels"]["f8"] == [64, 80]
        model = SP.SceneParser(wide, attribute_model=False)
        assert model.meta["provenance"]["width"] == 1.25
        scene = model.parse_batch([np.zeros((128, 160, 3), np.uint8)])[0]
        assert 0 <= scene.confidence <= 1
    assert T.read_init(wide)[0] == 1.25

    with pytest.raises(SystemExit, match=r"width 1\.25; it can be widened, not narrowed to --width 1"):
        T.main(detector_argv(folder, tmp_path / "x", tmp_path / "x.onnx", "--init", str(wide)))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit, match=r"cannot read a detector from --init .*junk\.pt"):
        T.main(detector_argv(folder, tmp_path / "y", tmp_path / "y.onnx", "--init", str(tmp_path / "junk.pt")))
    with pytest.raises(SystemExit) as e:
        T.main(detector_argv(folder, tmp_path / "z", tmp_path / "z.onnx", "--width", "9"))
    assert e.value.code == 2
    assert "--width must lie in [0.25, 4], got 9" in capsys.readouterr().err
    # a run resumed with another width than it was trained with says so, not a shape error from torch
    with pytest.raises(SystemExit, match="holds a checkpoint of another network than these flags build"):
        T.main(detector_argv(folder, tmp_path / "w_pt", tmp_path / "r.onnx", "--width", "1.5"))


@pytest.mark.slow
def test_the_shipped_detector_widened_reads_the_test_images_as_it_does(tmp_path):
    """The float detector loaded from its ONNX (BatchNorm unfolded, `onnx_init`), widened to 1.5 and exported
    again parses the CLEVR test images to the same scenes: the whole path from a shipped file to a wider
    starting point changes nothing the parser reads."""
    pytest.importorskip("onnx")
    from PIL import Image

    from logicval_hf.perception import scene_parser as SP
    from logicval_hf.training.onnx_init import load_onnx_weights
    from logicval_hf.training.parser_export import export_onnx

    shipped = SP.SceneParser(SP.DEFAULT_MODEL)
    paths = sorted(_clevr_images())
    assert len(paths) >= 5
    images = [np.asarray(Image.open(p).convert("RGB")) for p in paths]
    narrow = build_model(1.0)
    load_onnx_weights(narrow, SP.DEFAULT_MODEL, [torch.rand(2, 3, 128, 160) for _ in range(2)])
    wide = build_model(1.5)
    widen_model(narrow, wide, seed=7)
    path = tmp_path / "wide.onnx"
    export_onnx(wide, path, shipped.meta)
    widened = SP.SceneParser(path, attribute_model=SP.attribute_model_beside(SP.DEFAULT_MODEL))
    for rgb, a, b in zip(images, shipped.parse_batch(images), widened.parse_batch(images), strict=True):
        assert len(a.objects) == len(b.objects) >= 1
        for oa, ob in zip(a.objects, b.objects, strict=True):
            assert oa.attributes == ob.attributes
            assert np.allclose(oa.bbox, ob.bbox, atol=1)
        assert abs(a.confidence - b.confidence) < 1e-3, rgb.shape


def _clevr_images():
    from pathlib import Path

    return list((Path(__file__).resolve().parents[1] / "data" / "clevr").glob("*.png"))
