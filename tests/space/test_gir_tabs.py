"""The Space's Text and Sudoku tabs (`logicval_hf.space.text`, `logicval_hf.space.sudoku`, wired in space/app.py):
uploads read by the real OCR, verdicts, drawings, and refusals in one sentence."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import load_script, requires
from PIL import Image
from text_images import render_lines

from logicval_hf.space import sudoku as sdk
from logicval_hf.space import text as txt

pytestmark = requires("rapidocr")

SPEC = {"domain": "text", "constraints": [{"template": "C4/pair_rel", "params": {
    "A1": {"prop": "text", "value": "SALE", "negated": False}, "B1": {"prop": "text", "value": "TODAY",
                                                                      "negated": False},
    "R1": {"rel": "above", "negated": False}}}]}


def test_the_text_tab_scores_verifies_repairs_and_draws(tmp_path):
    path = tmp_path / "sign.png"
    Image.fromarray(render_lines(["TODAY", "SAEL"], size=44, width=360)[0]).save(path)
    res = txt.read_upload(str(path), "Sale today", json.dumps(SPEC))
    assert [ln["text"] for ln in res["lines"]] == ["TODAY", "SAEL"] and res["score"] == 0.5
    assert res["label"] == "SAT" and not res["verdict"]["ok"]
    assert res["repair"]["cost"] == 2 and res["repair"]["instructions"][0].startswith("Change the line reading")
    drawn = txt.draw_lines(np.asarray(Image.open(path).convert("RGB")), res)
    assert drawn.width >= 640
    md = txt.result_markdown(res)
    assert "Score 0.500" in md and "not satisfied" in md and "Repair:" in md


def test_the_text_tab_refuses_in_one_sentence(tmp_path):
    junk = tmp_path / "x.png"
    junk.write_text("no image")
    for args, message in (((str(junk), "", ""), "give a target text"),
                          ((str(junk), "?!", ""), "has no letter or digit"),
                          ((str(junk), "", "{bad"), "not valid JSON"),
                          ((str(junk), "", json.dumps({"n": 3, "constraints": [{"template": "C1/1prop", "params": {
                              "A1": {"prop": "color", "value": "red", "negated": False}}}]})), "domain 'clevr'"),
                          ((str(junk), "hello", ""), "not an image")):
        with pytest.raises(ValueError, match=message):
            txt.read_upload(*args)


def test_the_sudoku_tab_makes_checks_and_tints_the_cells_that_break(tmp_path):
    from logicval_hf.tasks.sudoku.draw import draw_grid

    puzzle_text, puzzle_img, answer_img = sdk.make_puzzle(5)
    puzzle = json.loads(puzzle_text)
    assert puzzle["id"] == "5" and puzzle_img.size == answer_img.size
    good = tmp_path / "answer.jpg"
    answer_img.save(good, quality=85)
    res = sdk.check_upload(puzzle_text, str(good))
    assert res["valid"] and res["accuracy"] == 1.0 and len(res["reading"]["cells"]) == 9
    grid = [list(r) for r in puzzle["solution"]]
    empty = [(r, c) for r in range(9) for c in range(9) if not puzzle["grid"][r][c]]
    (r1, c1) = empty[0]
    (r2, c2) = next((r, c) for r, c in empty if r == r1 and grid[r][c] != grid[r1][c1])
    grid[r1][c1], grid[r2][c2] = grid[r2][c2], grid[r1][c1]
    given = next((r, c) for r in range(9) for c in range(9) if puzzle["grid"][r][c])
    grid[given[0]][given[1]] = 0
    bad = tmp_path / "bad.png"
    draw_grid(tuple(map(tuple, grid)), tuple(map(tuple, puzzle["grid"]))).save(bad)
    res = sdk.check_upload(puzzle_text, str(bad))
    assert not res["valid"] and [given[0] + 1, given[1] + 1] in res["violations"]["givens"]
    assert res["violations"]["unread"] == [[given[0] + 1, given[1] + 1]]
    assert sdk.conflicts(res["cells"]) >= {(r1, c1), (r2, c2)} or res["violations"]["columns"]
    shown = sdk.draw_check(np.asarray(Image.open(bad).convert("RGB")), res)
    assert shown.size[0] >= 640
    md = sdk.result_markdown(res)
    assert "Not valid" in md and "Givens not kept" in md
    for text, message in (("", "make a puzzle first"), ("{", "not valid JSON"), ('{"grid": [[1]]}', "9 lists")):
        with pytest.raises(ValueError, match=message):
            sdk.check_upload(text, str(bad))
    with pytest.raises(ValueError, match="whole number"):
        sdk.make_puzzle(1.5)


@pytest.mark.slow  # imports gradio (seconds) in a worker of its own
@requires("gradio")
def test_the_app_has_the_text_and_sudoku_endpoints():
    from pathlib import Path

    app = load_script(Path(__file__).resolve().parents[2] / "space" / "app.py", "space_app_gir")
    names = {d.api_name for d in app.build_demo(app.config_from_env()).fns.values()}
    assert {"text_read", "text_view", "sudoku_make", "sudoku_check", "sudoku_view"} <= names
