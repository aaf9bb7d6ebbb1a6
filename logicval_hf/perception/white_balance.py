"""White balance of the attribute classifier's crops: the image's colour cast, estimated and partly removed.

Why: the classifier (`logicval_hf.perception.parser_models.AttributeClassifier`) was trained with white-balance
gains drawn within a range per channel (``train_attribute_classifier --white-balance``), so it reads colours
right under light whose cast stays in that range. Text-to-image models light their scenes in every colour
temperature (under warm light grey reads as brown). Here the illuminant is estimated from the whole image with the
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

__all__ = ["WHITE_BALANCE_DEFAULTS", "illuminant_cast", "gains_for", "illuminant_gains", "balance_crops"]

#: ``norm``: the Minkowski norm of the shades-of-grey estimate; ``limit``: the largest correction per channel,
#: as |log gain| (the classifier's training augmentation range); ``pixels``: about how many pixels the
#: estimate reads (a regular subsample of a larger image).
WHITE_BALANCE_DEFAULTS = {"norm": 6.0, "limit": 0.15, "pixels": 65536}
_GAMMA = 2.2


def illuminant_cast(rgb: np.ndarray, norm: float = WHITE_BALANCE_DEFAULTS["norm"],
                    pixels: int = int(WHITE_BALANCE_DEFAULTS["pixels"])) -> np.ndarray:
    """(3,) float64 logs of ``rgb``'s estimated illuminant per channel in linear light, centred (their mean
    is 0: the cast, not the brightness); ``rgb`` is uint8 H x W x 3. A per-channel gain ``g`` in linear light
    adds ``log g`` (centred) to it, up to clipping at white.

    Raises:
        ValueError: ``rgb`` is not an H x W x 3 image or ``norm`` is not positive.
    """
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[0] == 0 or rgb.shape[1] == 0:
        raise ValueError(f"white balance: expected an H x W x 3 image, got shape {rgb.shape}")
    if not norm > 0:
        raise ValueError(f"white balance: norm must be > 0, not {norm!r}")
    step = max(1, int(np.sqrt(rgb.shape[0] * rgb.shape[1] / max(pixels, 1))))
    sample = np.ascontiguousarray(rgb[::step, ::step]).reshape(-1, 3)
    # each channel's histogram against a table of (v / 255) ** (gamma * norm): a tenth of the cost of
    # raising every pixel to that power, the same sum
    table = (np.arange(256) / 255.0) ** (_GAMMA * norm)
    moments = np.array([np.bincount(sample[:, c], minlength=256) @ table for c in range(3)]) / len(sample)
    estimate = np.maximum(moments ** (1 / norm), 1e-6)
    if float(estimate.max()) <= 1e-6:  # a black image has no cast to remove
        return np.zeros(3)
    log_estimate = np.log(estimate)
    return log_estimate - log_estimate.mean()


def gains_for(cast: np.ndarray, limit: float = WHITE_BALANCE_DEFAULTS["limit"]) -> np.ndarray:
    """(3,) float32 gains in linear light that undo a centred log ``cast`` (`illuminant_cast`), each at most
    ``limit`` in log.

    Raises:
        ValueError: ``limit`` is negative.
    """
    if not limit >= 0:
        raise ValueError(f"white balance: limit must be >= 0, not {limit!r}")
    return np.exp(np.clip(-np.asarray(cast, np.float64), -limit, limit)).astype(np.float32)


def illuminant_gains(rgb: np.ndarray, norm: float = WHITE_BALANCE_DEFAULTS["norm"],
                     limit: float = WHITE_BALANCE_DEFAULTS["limit"],
                     pixels: int = int(WHITE_BALANCE_DEFAULTS["pixels"])) -> np.ndarray:
    """(3,) float32 per-channel gains in linear light that neutralise ``rgb``'s estimated cast (uint8
    H x W x 3), their logs centred (the overall brightness is kept) and clipped to +-``limit``.

    Raises:
        ValueError: ``rgb`` is not an H x W x 3 image, ``norm`` is not positive or ``limit`` is negative.
    """
    return gains_for(illuminant_cast(rgb, norm, pixels), limit)


def balance_crops(crops: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """The classifier inputs ``crops`` ((K, 4, S, S) float32, RGB in [0, 1] and the mark channel, from
    `logicval_hf.perception.parser_decoding.object_crops`; or (K, 3, S, S), colour only)
    with ``gains`` applied to their colour in linear light, in place; the mark channel is left alone. Returns
    ``crops``."""
    lin = crops[:, :3] ** np.float32(_GAMMA)
    lin *= gains.astype(np.float32)[None, :, None, None]
    np.clip(lin, 0, 1, out=lin)
    crops[:, :3] = lin ** np.float32(1 / _GAMMA)
    return crops
