"""Training from a shipped ONNX model (logicval_hf/training/onnx_init.py): the rebuilt torch network computes what
the ONNX graph computes."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import lazy, requires

torch = lazy("torch")
ort = lazy("onnxruntime")

pytestmark = [requires("torch"), requires("onnx"), requires("onnxruntime")]


def test_the_shipped_detector_loads_into_the_training_network():
    from logicval_hf.perception.scene_parser import DEFAULT_MODEL
    from logicval_hf.training.onnx_init import load_onnx_weights
    from logicval_hf.training.parser_model import build_model, make_batch

    torch.set_num_threads(1)
    net = build_model()
    batches = [make_batch([], s, 1, 2, 1.0, (160, 128))[0] for s in range(2)]
    info = load_onnx_weights(net, DEFAULT_MODEL, batches)
    assert info["convolutions"] == 18 and info["batchnorms"] == 15
    net.eval()
    x = batches[0]
    with torch.no_grad():
        heat = torch.sigmoid(net(x)[:, :1]).numpy()
    want = ort.InferenceSession(str(DEFAULT_MODEL)).run(["heat"], {"image": x.numpy()})[0]
    assert np.abs(heat - want).max() < 1e-4


def test_the_shipped_classifier_loads_and_a_mismatched_graph_is_refused():
    from logicval_hf.perception.scene_parser import DEFAULT_MODEL, attribute_model_beside
    from logicval_hf.training.onnx_init import load_onnx_weights
    from logicval_hf.training.parser_model import build_model
    from logicval_hf.training.train_attribute_classifier import build_model as classifier
    from logicval_hf.training.train_attribute_classifier import make_batch

    torch.set_num_threads(1)
    net = classifier()
    crops = make_batch([], [], 0, 1, 4, 1.0)[0]
    path = attribute_model_beside(DEFAULT_MODEL)
    load_onnx_weights(net, path, [crops])
    net.eval()
    with torch.no_grad():
        logits = net(crops)[0].numpy()
    want = ort.InferenceSession(str(path)).run(["logits"], {"crops": crops.numpy()})[0]
    assert np.abs(logits - want).max() < 1e-4
    with pytest.raises(ValueError, match="convolutions"):
        load_onnx_weights(build_model(), path, [torch.zeros(1, 3, 64, 64)])
