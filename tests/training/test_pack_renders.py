"""`python -m logicval_hf.training.pack_renders`: a compact copy of a render folder that trains as the original."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import render_folder
from logicval_hf.training import pack_renders
from logicval_hf.training.parser_data import load_folder, split_holdout


def test_the_copy_loads_as_the_original_up_to_jpeg_loss(tmp_path, capsys):
    src = render_folder(tmp_path / "renders", 6, masks=True)
    assert pack_renders.main([str(src), "--out", str(tmp_path / "pool")]) == 0
    out, err = capsys.readouterr()
    assert "6 scenes" in out  # the corrupt image is reported by name, skipped
    assert "R_bad.png" in err and "R_broken.json" in err
    original, copy = load_folder(src), load_folder(tmp_path / "pool" / "renders")
    assert [r.name.rsplit(".", 1)[0] for r in copy] == [r.name.rsplit(".", 1)[0] for r in original]
    for a, b in zip(original, copy, strict=True):
        assert np.array_equal(a.labels, b.labels) and np.allclose(a.centres, b.centres)
        assert np.allclose(a.sizes, b.sizes)
        assert np.array_equal(a.mask, b.mask)  # lossless: the visible points come from it
        assert np.abs(a.rgb.astype(int) - b.rgb.astype(int)).mean() < 4  # JPEG q90
    # the same scenes are held out of the copy as of the original
    held = [r.name.rsplit(".", 1)[0] for r in split_holdout(original, 0.34)[1]]
    assert [r.name.rsplit(".", 1)[0] for r in split_holdout(copy, 0.34)[1]] == held
    assert (tmp_path / "pool" / "renders" / "images" / "R_000.jpg").is_file()


def test_the_copy_is_smaller_and_keeps_only_what_training_reads(tmp_path):
    import json

    src = render_folder(tmp_path / "renders", 3, masks=True)
    pack_renders.main([str(src), "--out", str(tmp_path / "pool")])
    scenes = json.loads((tmp_path / "pool" / "renders" / "scenes.json").read_text())["scenes"]
    assert {k for s in scenes for k in s} == {"image_filename", "mask_filename", "objects"}
    assert {k for s in scenes for o in s["objects"] for k in o} <= set(pack_renders.OBJECT_FIELDS)


def test_bad_arguments_are_one_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        pack_renders.main([str(tmp_path), "--out", str(tmp_path / "o"), "--quality", "0"])
    assert "--quality must lie in 1-100, got 0" in capsys.readouterr().err
    (tmp_path / "a" / "x").mkdir(parents=True)
    (tmp_path / "b" / "x").mkdir(parents=True)
    with pytest.raises(SystemExit):
        pack_renders.main([str(tmp_path / "a" / "x"), str(tmp_path / "b" / "x"), "--out", str(tmp_path / "o")])
    assert "two folders share a name" in capsys.readouterr().err
    assert pack_renders.main([str(tmp_path / "a" / "x"), "--out", str(tmp_path / "o")]) == 1
    assert "no scenes to pack" in capsys.readouterr().err
