"""Grow a trained network wider without changing what it computes (Net2WiderNet, Chen et al. 2016).

Why: a wider attribute classifier trained from scratch needs far more steps than a CPU session gives, while
the narrow one it would replace is already trained on every render set. Widening copies the narrow network's
function into the wide one exactly, so training starts from the narrow model's figures and only the added
capacity has to learn.

How, for a chain of convolution + BatchNorm blocks ending in a fully connected layer over the flattened last
feature map: each wide block's output channels are the narrow block's channels followed by copies of randomly
chosen ones (weights and BatchNorm parameters copied); the next layer's input weights of a channel copied k
times are split among its k copies with random positive shares that sum to one. The sum every next unit sees is
then unchanged, and unequal shares give the copies different gradients, so they learn apart (an equal split
would keep them identical for ever).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["widen_chain", "channel_map"]


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
    rng = np.random.default_rng(seed)
    prev_map: np.ndarray | None = None
    prev_share: np.ndarray | None = None
    sizes = []
    with torch.no_grad():
        for (nc, nb), (wc, wb) in zip(narrow_blocks, wide_blocks, strict=True):
            w = nc.weight.detach()
            if prev_map is None:
                if wc.weight.shape[1] != w.shape[1]:
                    raise ValueError(f"the first convolution reads {w.shape[1]} channels in the narrow network, "
                                     f"{wc.weight.shape[1]} in the wide one")
            else:
                w = w[:, torch.from_numpy(prev_map)] * torch.from_numpy(prev_share).to(w.dtype)[None, :, None, None]
            mapping = channel_map(nc.weight.shape[0], wc.weight.shape[0], rng)
            idx = torch.from_numpy(mapping)
            wc.weight.copy_(w[idx])
            if nc.bias is not None and wc.bias is not None:
                wc.bias.copy_(nc.bias[idx])
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(wb, name).copy_(getattr(nb, name)[idx])
            wb.num_batches_tracked.copy_(nb.num_batches_tracked)
            sizes.append((int(nc.weight.shape[0]), int(wc.weight.shape[0])))
            prev_map, prev_share = mapping, _shares(mapping, rng)
        assert prev_map is not None and prev_share is not None
        if wide_fc.weight.shape[0] != narrow_fc.weight.shape[0]:
            raise ValueError(f"the fully connected layers have {narrow_fc.weight.shape[0]} and "
                             f"{wide_fc.weight.shape[0]} outputs")
        out = narrow_fc.weight.shape[0]
        w = narrow_fc.weight.detach().reshape(out, -1, spatial)
        w = w[:, torch.from_numpy(prev_map)] * torch.from_numpy(prev_share).to(w.dtype)[None, :, None]
        wide_fc.weight.copy_(w.reshape(out, -1))
        wide_fc.bias.copy_(narrow_fc.bias)
    return {"channels": sizes}
