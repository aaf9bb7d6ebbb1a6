"""Sudoku images read back with the real OCR: a made puzzle's answer is valid, also re-saved as JPEG, scaled, rotated
and framed differently; wrong grids drawn as images are caught; bad input is one line. Each read costs an OCR batch
(about half a second on two quiet cores), so the inner loop reads a handful of images; `slow` reads many."""

from __future__ import annotations

import io
import json
import random

import numpy as np
import pytest
from helpers import requires
from PIL import Image

from logicval_hf.perception.images import PerceptionError
from logicval_hf.tasks.sudoku.api import check_image, load_puzzle, make_puzzles, solver
from logicval_hf.tasks.sudoku.draw import draw_grid
from logicval_hf.tasks.sudoku.puzzle import Puzzle
from logicval_hf.tasks.sudoku.read import digit_of, read_grid

pytestmark = requires("rapidocr")


def distort(image, scale, angle, pad=(0, 0, 0, 0), quality=85, frame=False):
    """Scaled, rotated (degrees, counter-clockwise), padded (left, top, right, bottom), optionally framed by a black
    rectangle, then saved as JPEG."""
    im = image.resize((round(image.width * scale), round(image.height * scale)), Image.BICUBIC)
    im = im.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor="white")
    left, top, right, bottom = pad
    canvas = Image.new("RGB", (im.width + left + right, im.height + top + bottom), "white")
    canvas.paste(im, (left, top))
    if frame:
        from PIL import ImageDraw

        ImageDraw.Draw(canvas).rectangle([4, 4, canvas.width - 5, canvas.height - 5], outline="black", width=3)
    buf = io.BytesIO()
    canvas.save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


@pytest.fixture(scope="module")
def puzzle():
    m = solver().make(random.Random(42))
    return Puzzle("42", m.grid, m.solution)


def test_the_answer_image_is_read_exactly_and_valid(puzzle):
    res = check_image(puzzle, draw_grid(puzzle.solution, puzzle.grid))
    assert res["valid"] and res["givens_kept"] and res["filled"] and res["accuracy"] == 1.0
    assert res["cells"] == [list(r) for r in puzzle.solution]


def test_the_puzzle_image_reads_its_givens_and_leaves_the_rest_empty(puzzle):
    reading = read_grid(draw_grid(puzzle.grid))
    assert reading.grid == puzzle.grid
    res = check_image(puzzle, draw_grid(puzzle.grid))
    assert not res["valid"] and res["givens_kept"] and not res["filled"] and res["accuracy"] == 0.0
    assert len(res["violations"]["unread"]) == 81 - puzzle.givens


def test_jpeg_scaled_rotated_and_framed_differently_is_still_valid(puzzle):
    answer = draw_grid(puzzle.solution, puzzle.grid)
    image = distort(answer, 0.78, 1.8, pad=(70, 10, 5, 60), frame=True)
    res = check_image(puzzle, np.asarray(image))
    assert res["valid"] and res["accuracy"] == 1.0


def test_two_swapped_digits_and_a_changed_given_are_caught_from_the_image(puzzle):
    g = [list(r) for r in puzzle.solution]
    (r1, c1), (r2, c2) = next(((a, b), (c, d)) for a in range(9) for b in range(9) for c in range(9)
                              for d in range(9) if (a, b) < (c, d) and not puzzle.grid[a][b] and not puzzle.grid[c][d]
                              and g[a][b] != g[c][d])
    g[r1][c1], g[r2][c2] = g[r2][c2], g[r1][c1]
    relabel = {g[r1][c1]: g[r2][c2], g[r2][c2]: g[r1][c1]}
    other = [[relabel.get(v, v) for v in row] for row in puzzle.solution]  # obeys the rules, changes givens
    for grid in (g, other):
        image = distort(draw_grid(tuple(map(tuple, grid)), puzzle.grid), 1.2, -1.0)
        res = check_image(puzzle, image)
        assert res["cells"] == grid and not res["valid"]
    assert not res["givens_kept"] and res["violations"]["rows"] == []


def test_an_image_without_a_grid_is_one_line():
    blank = Image.new("RGB", (300, 200), "white")
    with pytest.raises(PerceptionError, match="no Sudoku grid found") as e:
        read_grid(blank)
    assert "\n" not in str(e.value)


def test_digits_come_from_lone_characters_only():
    assert [digit_of(t) for t in ("7", " 3 ", "l", "I", "S", "12", "", "a", "0")] == [7, 3, 1, 1, 5, 0, 0, 0, 0]


def test_make_and_check_through_the_command(tmp_path, capsys):
    from logicval_hf.cli.main import main

    assert main(["sudoku", "make", "--count", "2", "--seed", "3", "--out", str(tmp_path / "d"), "--no-progress",
                 "--ids"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["count"] == summary["unique"] == 2
    pid = summary["ids"][0]
    puzzle, answer = tmp_path / f"d/puzzles/{pid}.json", tmp_path / f"d/answers/{pid}.png"
    assert main(["sudoku", "check", str(puzzle), str(answer)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) == {"id", "valid", "givens_kept", "filled", "cells", "accuracy", "violations"} and res["valid"]
    # bad input: one line each, exit 2
    (tmp_path / "shape.json").write_text(json.dumps({"grid": [[0] * 9] * 3}))
    (tmp_path / "digits.json").write_text(json.dumps({"grid": [[0] * 8 + [-1]] + [[0] * 9] * 8}))
    (tmp_path / "nosol.json").write_text(json.dumps({"grid": [[1, 1] + [0] * 7] + [[0] * 9] * 8}))
    (tmp_path / "empty.png").write_bytes(b"")
    good = str(tmp_path / f"d/puzzles/{pid}.json")
    for argv, message in (
        ([str(tmp_path / "shape.json"), good], "must be 9 lists of 9 digits"),
        ([str(tmp_path / "digits.json"), good], "row 1, column 9 is -1"),
        ([str(tmp_path / "nosol.json"), good], "has no solution"),
        ([good, good], "not an image file"),
        ([good, str(tmp_path / "empty.png")], "not an image file"),
    ):
        assert main(["sudoku", "check", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("logicval: error:") and message in err and "\n" not in err, err
    assert load_puzzle(good).id == pid


@pytest.mark.slow
def test_answers_distorted_many_ways_are_read_cell_for_cell(tmp_path):
    """24 answers, each JPEG q85, scaled 0.75-1.5x, rotated up to 2 degrees, padded at random: every cell right."""
    summary = make_puzzles(24, 99, tmp_path / "p")
    rng = random.Random(5)
    wrong = 0
    for pid in summary["ids"]:
        puzzle = load_puzzle(tmp_path / f"p/puzzles/{pid}.json")
        answer = Image.open(tmp_path / f"p/answers/{pid}.png").convert("RGB")
        image = distort(answer, rng.uniform(0.75, 1.5), rng.uniform(-2, 2),
                        tuple(rng.randint(0, 80) for _ in range(4)), frame=rng.random() < 0.3)
        res = check_image(puzzle, image)
        wrong += sum(a != b for ra, rb in zip(res["cells"], puzzle.solution, strict=True)
                     for a, b in zip(ra, rb, strict=True))
        assert res["valid"], (pid, res["violations"])
    assert wrong == 0


@pytest.mark.slow
def test_other_framings_black_corners_and_blur_are_read_cell_for_cell(puzzle):
    """Rotated with black corners, cropped into the outer border, shrunk and blurred, on a large offset canvas."""
    from PIL import ImageFilter

    from logicval_hf.tasks.sudoku.draw import MARGIN

    answer = draw_grid(puzzle.solution, puzzle.grid)
    w, h = answer.size
    canvas = Image.new("RGB", (w + 400, h + 300), "white")
    canvas.paste(answer, (300, 40))
    for image in (answer.rotate(2, resample=Image.BICUBIC, expand=True),
                  answer.crop((MARGIN + 1, MARGIN + 1, w - MARGIN - 1, h - MARGIN - 1)),
                  answer.resize((round(w * 0.75), round(h * 0.75)), Image.BICUBIC)
                  .filter(ImageFilter.GaussianBlur(0.8)),
                  canvas):
        res = check_image(puzzle, distort(image, 1.0, 0.0))
        assert res["valid"] and res["cells"] == [list(r) for r in puzzle.solution]
