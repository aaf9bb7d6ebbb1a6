"""`python -m logicval_hf.training.parser_round`: both networks in one clock budget, flat products, resumable."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from helpers import render_folder  # noqa: E402

from logicval_hf.training import parser_round  # noqa: E402


def tiny(folder, out, *extra: str) -> list[str]:
    return ["--data", f"{folder}#weight=2", "--out", str(out), "--minutes", "5", "--steps", "2",
            "--detector-batch", "2", "--classifier-batch", "8", "--threads", "1", *extra]


@pytest.mark.slow
def test_a_round_trains_both_networks_leaves_flat_products_and_resumes(tmp_path, capsys):
    from logicval_hf.perception import scene_parser as SP

    folder = render_folder(tmp_path / "renders", 4, masks=True)
    out = tmp_path / "out"
    assert parser_round.main(tiny(folder, out, "--width", "1.25")) == 0
    assert sorted(p.name for p in out.iterdir()) == ["classifier.onnx", "classifier_last.pt", "detector.onnx",
                                                     "detector_last.pt", "round.json", "work"]
    report = json.loads((out / "round.json").read_text())
    det, clf = report["networks"]["detector"], report["networks"]["classifier"]
    assert det["minutes"] == 3.5 and clf["minutes"] == 1.5  # the default share: 0.3 for the classifier
    assert det["held_out"]["step"] == 2 and "wall_minutes" in det and "wall_minutes" in clf
    assert f"{folder}#weight=2" in det["argv"] and det["argv"][det["argv"].index("--width") + 1] == "1.25"
    import torch

    for name, key, channels in (("detector", "s4.0.0.weight", 20), ("classifier", "features.0.0.weight", 24)):
        ck = torch.load(out / f"{name}_last.pt", map_location="cpu", weights_only=False)
        assert "opt" not in ck and ck["step"] == 2 and ck["model"][key].shape[0] == channels
    parser = SP.SceneParser(out / "detector.onnx", attribute_model=out / "classifier.onnx")
    assert parser.meta["provenance"]["width"] == 1.25
    scene = parser.parse_batch([np.zeros((128, 160, 3), np.uint8)])[0]
    assert 0 <= scene.confidence <= 1
    # a second call finds both networks done and trains nothing
    capsys.readouterr()
    assert parser_round.main(tiny(folder, out, "--width", "1.25")) == 0
    again = json.loads((out / "round.json").read_text())["networks"]
    assert again["detector"]["skipped"] == "detector.onnx already in --out"
    assert again["classifier"]["skipped"] == "classifier.onnx already in --out"
    assert "for 3.50 minutes" not in capsys.readouterr().out


def test_bad_rounds_are_refused_by_name(tmp_path, capsys):
    for extra, message in ((["--minutes", "0"], "--minutes must be positive, got 0"),
                           (["--classifier-share", "1"], "--classifier-share must lie in [0, 1), got 1"),
                           (["--detector-init", str(tmp_path / "none.onnx")], "--detector-init: no such file")):
        with pytest.raises(SystemExit) as e:
            parser_round.main(["--data", str(tmp_path), "--out", str(tmp_path / "o"), "--minutes", "1", *extra])
        assert e.value.code == 2
        assert message in capsys.readouterr().err
