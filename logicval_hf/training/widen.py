"""Grow a trained network wider without changing what it computes (Net2WiderNet, Chen et al. 2016).

Why: a wider network trained from scratch needs far more steps than a CPU session gives, while the narrow one it
would replace is already trained on every render set. Widening copies the narrow network's function into the
wide one exactly, so training starts from the narrow model's figures and only the added capacity has to learn.

How, for convolutions (each with an optional BatchNorm after it) wired as a graph of *channel groups*: a group
is a tensor's channel layout, produced by one or more convolutions (more than one where their outputs are
summed, as in a feature pyramid's lateral connections) and read by others. Each widened group's channels are
the narrow group's followed by copies of randomly chosen ones; every convolution producing it gets its rows
(weights, bias and BatchNorm parameters) copied by that map, and every convolution reading it has the input
weights of a channel copied k times split among its k copies with random positive shares that sum to one. The
sum every next unit sees is then unchanged (a sum of two tensors of one group stays a sum of copies), and
unequal shares give the copies different gradients, so they learn apart (an equal split would keep them
identical for ever). A chain of blocks ending in a fully connected layer (`widen_chain`) is the simplest such
graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Layer", "channel_map", "widen_chain", "widen_graph"]


def channel_map(narrow: int, wide: int, rng: np.random.Generator) -> np.ndarray:
    """For each of ``wide`` channels, the narrow channel it copies: the first ``narrow`` are themselves, the rest
    drawn at random (each narrow channel at most once more before any is drawn a third time).

    Raises:
        ValueError: ``wide`` is smaller than ``narrow``.
    """
    if wide < narrow:
        raise ValueError(f"cannot widen {narrow} channels to fewer ({wide})")
    extra: list[int] = []
    while len(extra) < wide - narrow:
        extra.extend(rng.permutation(narrow).tolist())
    return np.array(list(range(narrow)) + extra[:wide - narrow], dtype=np.int64)


def _shares(mapping: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per wide channel, its share of its narrow channel's outgoing weights: positive, summing to one over the
    copies of each narrow channel, unequal (uniform in [0.5, 1.5] before normalising)."""
    raw = rng.uniform(0.5, 1.5, size=len(mapping))
    totals = np.bincount(mapping, weights=raw)
    return raw / totals[mapping]


@dataclass(frozen=True)
class Layer:
    """One convolution of a graph to widen: its modules in the narrow and the wide network, and the channel
    groups it reads (``source``; None for the network's input, which is never widened) and writes (``target``)."""

    narrow_conv: Any
    narrow_norm: Any
    wide_conv: Any
    wide_norm: Any
    source: str | None
    target: str


def widen_graph(layers: list[Layer], seed: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Copy a narrow graph's function into a wide one of the same structure, in place.

    Args:
        layers: every convolution, each after the layers producing its ``source``; a group's size is read from
            the convolutions that produce it (all of them must agree).
        seed: draws which channels are copied and how their weights are split (per group, when first
            produced: its map, then its shares).

    Returns:
        per group, (its channel map, its shares), for the layers that read the last groups beyond the graph.

    Raises:
        ValueError: a layer reads a group no earlier layer produced, a group is produced at two sizes, a wide
            group is narrower than its narrow one, or the network's input differs.
    """
    import torch

    rng = np.random.default_rng(seed)
    groups: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    with torch.no_grad():
        for layer in layers:
            w = layer.narrow_conv.weight.detach()
            if layer.source is None:
                if layer.wide_conv.weight.shape[1] != w.shape[1]:
                    raise ValueError(f"the first convolution reads {w.shape[1]} channels in the narrow network, "
                                     f"{layer.wide_conv.weight.shape[1]} in the wide one")
            else:
                if layer.source not in groups:
                    raise ValueError(f"a layer reads the channel group {layer.source!r} before any layer made it")
                mapping, share = groups[layer.source]
                w = w[:, torch.from_numpy(mapping)] * torch.from_numpy(share).to(w.dtype)[None, :, None, None]
            n, m = int(layer.narrow_conv.weight.shape[0]), int(layer.wide_conv.weight.shape[0])
            if layer.target not in groups:
                mapping = channel_map(n, m, rng)
                groups[layer.target] = (mapping, _shares(mapping, rng))
            mapping = groups[layer.target][0]
            if (n, m) != (int(mapping.max()) + 1, len(mapping)):
                raise ValueError(f"the channel group {layer.target!r} is made at two sizes ({n} -> {m} and "
                                 f"{int(mapping.max()) + 1} -> {len(mapping)})")
            idx = torch.from_numpy(mapping)
            layer.wide_conv.weight.copy_(w[idx])
            if layer.narrow_conv.bias is not None and layer.wide_conv.bias is not None:
                layer.wide_conv.bias.copy_(layer.narrow_conv.bias[idx])
            if layer.narrow_norm is not None:
                for name in ("weight", "bias", "running_mean", "running_var"):
                    getattr(layer.wide_norm, name).copy_(getattr(layer.narrow_norm, name)[idx])
                layer.wide_norm.num_batches_tracked.copy_(layer.narrow_norm.num_batches_tracked)
    return groups


def widen_chain(narrow_blocks: list[tuple[Any, Any]], wide_blocks: list[tuple[Any, Any]], narrow_fc: Any,
                wide_fc: Any, spatial: int, seed: int = 0) -> dict[str, Any]:
    """Copy a narrow chain's function into a wide one of the same depth, in place.

    Args:
        narrow_blocks, wide_blocks: the (Conv2d, BatchNorm2d) pairs of each chain, in forward order; each
            conv's input channels are the previous block's output channels (the first block's inputs must
            match: the network's input is not widened).
        narrow_fc, wide_fc: the Linear layers reading the last block's flattened output (channel-major, as
            ``nn.Flatten`` lays out ``C x H x W``); their output size must match.
        spatial: H x W of the last feature map (each channel's run of inputs to the fully connected layer).
        seed: draws which channels are copied and how their weights are split.

    Returns:
        {"channels": [(narrow, wide) per block]}.

    Raises:
        ValueError: the chains differ in depth, a wide block is narrower than its narrow one, or the first
            inputs or the fully connected outputs differ.
    """
    import torch

    if len(narrow_blocks) != len(wide_blocks):
        raise ValueError(f"chains of {len(narrow_blocks)} and {len(wide_blocks)} blocks cannot be widened into "
                         "each other")
    layers = [Layer(nc, nb, wc, wb, None if k == 0 else str(k - 1), str(k))
              for k, ((nc, nb), (wc, wb)) in enumerate(zip(narrow_blocks, wide_blocks, strict=True))]
    groups = widen_graph(layers, seed)
    if wide_fc.weight.shape[0] != narrow_fc.weight.shape[0]:
        raise ValueError(f"the fully connected layers have {narrow_fc.weight.shape[0]} and "
                         f"{wide_fc.weight.shape[0]} outputs")
    last_map, last_share = groups[str(len(layers) - 1)]
    with torch.no_grad():
        out = narrow_fc.weight.shape[0]
        w = narrow_fc.weight.detach().reshape(out, -1, spatial)
        w = w[:, torch.from_numpy(last_map)] * torch.from_numpy(last_share).to(w.dtype)[None, :, None]
        wide_fc.weight.copy_(w.reshape(out, -1))
        wide_fc.bias.copy_(narrow_fc.bias)
    return {"channels": [(int(nc.weight.shape[0]), int(wc.weight.shape[0]))
                         for (nc, _), (wc, _) in zip(narrow_blocks, wide_blocks, strict=True)]}
