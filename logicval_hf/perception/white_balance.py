"""White balance of the attribute classifier's crops: the image's colour cast, estimated and partly removed.

Why: the classifier (`logicval_hf.perception.scene_parser.AttributeClassifier`) was trained with white-balance
gains drawn within exp(+-0.15) per channel (``train_attribute_classifier --white-balance``, its default), so it
reads colours right under light whose cast stays in that range. Text-to-image models light their scenes in
every colour temperature; under warm light CLEVR's grey objects were read as brown (real CLEVR with a warm tint:
8 grey objects of 170 images, exact rate 0.906). Here the illuminant is estimated from the whole image with the
shades-of-grey method (Finlayson and Trezzi, 2004: the Minkowski ``norm``-mean of each channel in linear light,
``norm`` 6 as they recommend), and the crops are divided by it, at most ``limit`` per channel (in log): a
strongly coloured floor, which fools any grey-world estimate, then moves the crops no further than the
classifier's own training augmentation did. The detector reads the image as it is (its counts do not depend on
the cast); only the classifier's crops are balanced.

Measured in `benchmarks/clevr_perception.py` (see the model card, ``scene_parser.md``); the setting
``white_balance=False`` turns it off.
"""

from __future__ import annotations

import numpy as np

__all__ = ["WHITE_BALANCE_DEFAULTS", "illuminant_gains", "balance_crops"]

#: ``norm``: the Minkowski norm of the shades-of-grey estimate; ``limit``: the largest correction per channel,
#: as |log gain| (the classifier's training augmentation range); ``pixels``: about how many pixels the
#: estimate reads (a regular subsample of a larger image).
WHITE_BALANCE_DEFAULTS = {"norm": 6.0, "limit": 0.15, "pixels": 65536}
_GAMMA = 2.2


def illuminant_gains(rgb: np.ndarray, norm: float = WHITE_BALANCE_DEFAULTS["norm"],
                     limit: float = WHITE_BALANCE_DEFAULTS["limit"],
                     pixels: int = int(WHITE_BALANCE_DEFAULTS["pixels"])) -> np.ndarray:
    """(3,) float32 per-channel gains in linear light that neutralise ``rgb``'s estimated cast (uint8
    H x W x 3), their logs centred (the overall brightness is kept) and clipped to +-``limit``.

    Raises:
        ValueError: ``rgb`` is not an H x W x 3 image, ``norm`` is not positive or ``limit`` is negative.
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"white balance: expected an H x W x 3 image, got shape {rgb.shape}")
    if not norm > 0 or not limit >= 0:
        raise ValueError(f"white balance: norm must be > 0 and limit >= 0, not {norm!r} and {limit!r}")
    step = max(1, int(np.sqrt(rgb.shape[0] * rgb.shape[1] / max(pixels, 1))))
    sample = np.ascontiguousarray(rgb[::step, ::step]).reshape(-1, 3)
    # each channel's histogram against a table of (v / 255) ** (gamma * norm): a tenth of the cost of
    # raising every pixel to that power, the same sum
    table = (np.arange(256) / 255.0) ** (_GAMMA * norm)
    moments = np.array([np.bincount(sample[:, c], minlength=256) @ table for c in range(3)]) / len(sample)
    estimate = np.maximum(moments ** (1 / norm), 1e-6)
    if float(estimate.max()) <= 1e-6:  # a black image has no cast to remove
        return np.ones(3, np.float32)
    log_gain = -np.log(estimate)
    log_gain = np.clip(log_gain - log_gain.mean(), -limit, limit)
    return np.exp(log_gain).astype(np.float32)


def balance_crops(crops: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """The classifier inputs ``crops`` ((K, 4, S, S) float32, RGB in [0, 1] and the mark channel, from
    `logicval_hf.perception.scene_parser.object_crops`) with ``gains`` applied to their colour in linear light,
    in place; the mark channel is left alone. Returns ``crops``."""
    lin = crops[:, :3] ** np.float32(_GAMMA)
    lin *= gains.astype(np.float32)[None, :, None, None]
    np.clip(lin, 0, 1, out=lin)
    crops[:, :3] = lin ** np.float32(1 / _GAMMA)
    return crops
