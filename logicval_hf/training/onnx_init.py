"""Start training from a shipped ONNX model when its torch checkpoint is gone.

The exported graphs fold each BatchNorm into the convolution before it (weight and bias). To train again, each
folded convolution's weight goes back into its convolution, and its BatchNorm is set so that it reproduces the
folded bias in evaluation *and*, approximately, in training mode: running mean and variance are the statistics of
the convolution's output on real batches, and the affine part undoes the normalisation (gamma = sqrt(var + eps),
beta = folded bias + mean). Convolutions are paired by their order in the graph and in the network's forward
pass, and every pair's shape is checked.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load_onnx_weights", "onnx_convs"]


def onnx_convs(path: Path) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """(weight, bias) of every Conv and Gemm (fully connected) node, in graph order."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.op_type in ("Conv", "Gemm"):
            w = init.get(node.input[1])
            b = init.get(node.input[2]) if len(node.input) > 2 else None
            if w is None:
                raise ValueError(f"{path}: a {node.op_type} node's weight is not a constant initializer")
            if node.op_type == "Gemm" and not any(a.name == "transB" and a.i == 1 for a in node.attribute):
                w = w.T  # torch's Linear keeps (out, in)
            out.append((np.array(w), None if b is None else np.array(b)))
    return out


def _running_stats(bn: Any, path: Path) -> tuple[Any, Any]:
    """A BatchNorm2d's running mean and variance (a ValueError for one built without them)."""
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError(f"{path}: a BatchNorm2d without running statistics cannot take a folded bias")
    return bn.running_mean, bn.running_var


def load_onnx_weights(net, path: str | Path, batches: Iterable[Any], forward: Callable[[Any], Any] | None = None
                      ) -> dict[str, Any]:
    """Load the weights of the ONNX model at ``path`` into ``net`` (a torch module whose convolutions are each
    either followed by a BatchNorm2d or carry their own bias; fully connected layers load as they are).
    ``batches`` (network inputs) give the BatchNorm statistics; ``forward(x)`` runs the network (default
    ``net(x)``). Returns a summary.

    Raises:
        ValueError: the graph's convolutions do not match the network's, in number or shape; a BatchNorm2d to
            fold into keeps no running statistics.
    """
    import torch
    from torch import nn

    path = Path(path)
    convs = onnx_convs(path)
    order: list[nn.Conv2d | nn.Linear] = []
    hooks = [m.register_forward_hook(lambda mod, i, o: order.append(mod)) for m in net.modules()
             if isinstance(m, (nn.Conv2d, nn.Linear))]
    forward = forward or net
    batches = list(batches)
    if not batches:
        raise ValueError("load_onnx_weights needs at least one batch for the BatchNorm statistics")
    net.eval()
    with torch.no_grad():
        forward(batches[0])
    for h in hooks:
        h.remove()
    if len(order) != len(convs):
        raise ValueError(f"{path}: {len(convs)} convolutions in the graph, {len(order)} in the network")
    bn_after: dict[nn.Conv2d, nn.BatchNorm2d] = {}
    for seq in net.modules():
        children = list(seq.children())
        for a, b in itertools.pairwise(children):
            if isinstance(a, nn.Conv2d) and isinstance(b, nn.BatchNorm2d):
                bn_after[a] = b
    folded_bias: dict[nn.Conv2d, torch.Tensor] = {}
    with torch.no_grad():
        for conv, (w, b) in zip(order, convs, strict=True):
            if tuple(conv.weight.shape) != w.shape:
                raise ValueError(f"{path}: a convolution of shape {w.shape} where the network has "
                                 f"{tuple(conv.weight.shape)}")
            conv.weight.copy_(torch.from_numpy(w))
            bias = torch.from_numpy(b) if b is not None else torch.zeros(w.shape[0])
            if conv in bn_after:
                folded_bias[conv] = bias
                bn = bn_after[conv]
                running_mean, running_var = _running_stats(bn, path)
                running_mean.zero_(), running_var.fill_(1.0 - bn.eps)
                bn.weight.fill_(1.0), bn.bias.copy_(bias)
            elif conv.bias is not None:
                conv.bias.copy_(bias)
            elif b is not None and np.abs(b).max() > 0:
                raise ValueError(f"{path}: a convolution with a bias where the network has none")
    # statistics of every folded convolution's raw output on real batches (the function is unchanged by them)
    sums: dict[nn.Module, list[Any]] = {c: [0.0, 0.0, 0] for c in folded_bias}  # sum, sum of squares, count

    def stat(mod, inp, out):
        x = out.detach().double()
        s = sums[mod]
        s[0] += x.sum(dim=(0, 2, 3))
        s[1] += (x * x).sum(dim=(0, 2, 3))
        s[2] += x.numel() // x.shape[1]

    hooks = [c.register_forward_hook(stat) for c in folded_bias]
    with torch.no_grad():
        for x in batches:
            forward(x)
    for h in hooks:
        h.remove()
    with torch.no_grad():
        for conv, bias in folded_bias.items():
            total, sq, n = sums[conv]
            mean = total / n
            var = (sq / n - mean * mean).clamp(min=1e-6)
            bn = bn_after[conv]
            running_mean, running_var = _running_stats(bn, path)
            running_mean.copy_(mean.float())
            running_var.copy_(var.float())
            bn.weight.copy_(torch.sqrt(var + bn.eps).float())
            bn.bias.copy_(bias + mean.float())
    net.train()
    return {"onnx": path.name, "convolutions": len(order), "batchnorms": len(folded_bias), "batches": len(batches)}
