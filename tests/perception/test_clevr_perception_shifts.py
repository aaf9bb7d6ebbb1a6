"""The perception suite's shifts of real CLEVR (benchmarks/clevr_perception.py): what each does to an image and
to the objects' centres."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import load_script

BENCH = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py",
                    "clevr_perception_shifts")
SHIFTS, ShiftRefused, apply_shift, object_extent = (BENCH.SHIFTS, BENCH.ShiftRefused, BENCH.apply_shift,
                                                     BENCH.object_extent)
RGB = np.random.default_rng(1).integers(30, 220, (320, 480, 3), dtype=np.uint8)


def test_the_issue_s_shifts_are_all_there():
    assert {"square", "exposure_0.7", "exposure_1.3", "saturation_0.6", "tint_warm", "blur_1.5", "noise_8",
            "jpeg_50"} <= set(SHIFTS)
    with pytest.raises(KeyError):
        apply_shift("sqaure", RGB, [])


def test_square_frame_cuts_no_object_and_moves_the_centres():
    centres = [[300.0, 160.0, 12.0], [360.0, 200.0, 10.0]]
    out, moved = apply_shift("square", RGB, centres)
    assert out.shape == (320, 320, 3)
    dx = centres[0][0] - moved[0][0]
    assert (out == RGB[:, int(dx):int(dx) + 320]).all()
    for c, before in zip(moved, centres, strict=True):
        e = object_extent(before, 480)
        assert e <= c[0] <= 320 - e  # the whole object stays inside the square
        assert c[0] == before[0] - dx and c[1:] == before[1:]
    with pytest.raises(ShiftRefused):  # objects at both ends: every square cuts one
        apply_shift("square", RGB, [[15.0, 160.0, 12.0], [465.0, 160.0, 12.0]])


def test_pixel_shifts_keep_geometry_and_are_deterministic():
    centres = [[10.0, 20.0, 5.0]]
    for name in SHIFTS:
        if name == "square":
            continue
        a, ca = apply_shift(name, RGB, centres)
        b, _ = apply_shift(name, RGB, centres)
        assert a.shape == RGB.shape and a.dtype == np.uint8 and (a == b).all() and ca == centres
    dark, _ = apply_shift("exposure_0.7", RGB, [])
    bright, _ = apply_shift("exposure_1.3", RGB, [])
    assert dark.mean() < RGB.mean() < bright.mean()
    warm, _ = apply_shift("tint_warm", RGB, [])
    assert warm[..., 0].mean() > RGB[..., 0].mean() and warm[..., 2].mean() < RGB[..., 2].mean()
    grey, _ = apply_shift("saturation_0.6", RGB, [])
    assert np.std(grey.astype(float), axis=2).mean() < np.std(RGB.astype(float), axis=2).mean()
