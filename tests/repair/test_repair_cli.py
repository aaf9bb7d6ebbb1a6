"""``logicval repair SPEC SCENE_OR_IMAGE``: JSON out, exit 0 for any repair, 2 with one line on bad input."""

from __future__ import annotations

import json

from test_repair import FIVE, README_SPEC

from logicval_hf import Scene
from logicval_hf.cli.main import main
from logicval_hf.generation.render import render_scene


def _run(capsys, *argv: str) -> tuple[int, dict | None, str]:
    rc = main(["repair", *argv])
    out, err = capsys.readouterr()
    return rc, json.loads(out) if out.strip() else None, err


def test_a_scene_file_gets_its_repair_as_json(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps(README_SPEC))
    (tmp_path / "scene.json").write_text(json.dumps(FIVE))
    rc, out, _ = _run(capsys, str(tmp_path / "spec.json"), str(tmp_path / "scene.json"))
    assert rc == 0 and out is not None
    assert (out["cost"], out["optimal"], out["instructions"]) == (1, True, ["Make the red sphere gray."])
    rc, out, _ = _run(capsys, str(tmp_path / "spec.json"), str(tmp_path / "scene.json"), "--costs", "set=3",
                      "--timeout", "none")
    assert rc == 0 and out is not None and out["cost"] == 2 and out["costs"]["set"] == 3


def test_an_image_is_perceived_then_repaired(tmp_path, capsys):
    image, _ = render_scene(Scene.from_dict(FIVE), size=(480, 320), seed=3)
    image.save(tmp_path / "five.png")
    (tmp_path / "spec.json").write_text(json.dumps(README_SPEC))
    rc, out, _ = _run(capsys, str(tmp_path / "spec.json"), str(tmp_path / "five.png"))
    assert rc == 0 and out is not None
    assert out["image"].endswith("five.png") and out["backend"] == "clevr"
    assert len(out["perceived"]["objects"]) == 5 and out["cost"] == 1
    assert out["instructions"] == ["Make the red sphere gray."]


def test_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    (tmp_path / "spec.json").write_text(json.dumps(README_SPEC))
    (tmp_path / "scene.json").write_text(json.dumps(FIVE))
    for argv, says in [
        ((str(tmp_path / "spec.json"), str(tmp_path / "scene.json"), "--costs", "jump=2"),
         "unknown cost key 'jump'; the allowed keys are set, move, add, remove"),
        ((str(tmp_path / "spec.json"), str(tmp_path / "missing.png")), "no such file"),
        ((str(tmp_path / "spec.json"), str(tmp_path)), "a folder"),
        ((str(tmp_path / "scene.json"), str(tmp_path / "scene.json")), "spec"),
    ]:
        rc, out, err = _run(capsys, *argv)
        assert rc == 2 and out is None
        assert err.startswith("logicval: error: ") and says in err and err.count("\n") == 1
