"""Sudoku decided by clingo: made puzzles with uniqueness proofs checked independently, every given needed, and the
rule check on filled grids (swapped digits, changed givens, unread cells). No OCR here."""

from __future__ import annotations

import json
import random

import pytest

from logicval_hf.tasks.sudoku.api import check_reading, load_puzzle, make_puzzles, puzzle_from, solver
from logicval_hf.tasks.sudoku.puzzle import Puzzle, PuzzleError
from logicval_hf.tasks.sudoku.solver import broken_rules


def brute_force_solutions(grid, limit=2):
    """Completions of a grid by plain backtracking (an independent check of the solver), up to ``limit``."""
    g = [list(r) for r in grid]
    out = []

    def ok(r, c, v):
        if any(g[r][k] == v for k in range(9)) or any(g[k][c] == v for k in range(9)):
            return False
        br, bc = r // 3 * 3, c // 3 * 3
        return all(g[br + i][bc + j] != v for i in range(3) for j in range(3))

    def fill():
        best = None
        for r in range(9):
            for c in range(9):
                if not g[r][c]:
                    options = [v for v in range(1, 10) if ok(r, c, v)]
                    if best is None or len(options) < len(best[2]):
                        best = (r, c, options)
        if best is None:
            out.append(tuple(tuple(row) for row in g))
            return
        r, c, options = best
        for v in options:
            g[r][c] = v
            fill()
            g[r][c] = 0
            if len(out) >= limit:
                return

    fill()
    return out


@pytest.fixture(scope="module")
def made():
    s = solver()
    return [s.make(random.Random(k)) for k in range(3)]


def test_made_puzzles_have_one_solution_and_need_every_given(made):
    for m in made:
        assert m.unique_proof == "UNSAT"
        assert brute_force_solutions(m.grid) == [m.solution]
        assert broken_rules(m.solution, m.grid)["valid"]
        givens = [(r, c) for r in range(9) for c in range(9) if m.grid[r][c]]
        assert 17 <= len(givens) <= 40
        r, c = random.Random(0).choice(givens)  # any given removed: a second solution appears
        fewer = [list(row) for row in m.grid]
        fewer[r][c] = 0
        assert len(brute_force_solutions(fewer)) == 2
        assert solver().other_solution(tuple(map(tuple, fewer)), m.solution) is not None


def test_the_same_seed_makes_the_same_puzzles(tmp_path):
    a = make_puzzles(3, 11, tmp_path / "a")
    b = make_puzzles(3, 11, tmp_path / "b")
    assert a["ids"] == b["ids"] == ["11-0000", "11-0001", "11-0002"] and a["unique"] == 3
    for pid in a["ids"]:
        name = f"puzzles/{pid}.json"
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
        assert (tmp_path / "a/images" / f"{pid}.png").stat().st_size > 1000
        assert (tmp_path / "a/answers" / f"{pid}.png").stat().st_size > 1000
    d = json.loads((tmp_path / "a/puzzles/11-0000.json").read_text())
    assert set(d) == {"id", "grid", "solution", "givens"} and d["givens"] == sum(v != 0 for r in d["grid"] for v in r)
    assert load_puzzle(tmp_path / "a/puzzles/11-0000.json").solution == tuple(map(tuple, d["solution"]))


def test_make_keeps_other_files_and_writes_nothing_when_it_fails(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "puzzles").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    make_puzzles(1, 0, out)
    assert (out / "notes.txt").read_text() == "mine" and (out / "puzzles/0-0000.json").is_file()

    from logicval_hf.tasks.sudoku import api

    def broken(image, path):
        raise OSError("disk full")

    monkeypatch.setattr(api, "_save_png", broken)
    with pytest.raises(OSError, match="disk full"):
        make_puzzles(2, 5, tmp_path / "new")
    assert not (tmp_path / "new").exists() and [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_correct_grid_is_valid_and_any_swap_of_two_digits_is_not(made):
    m = made[0]
    p = Puzzle("p", m.grid, m.solution)
    good = check_reading(p, m.solution)
    assert good["valid"] and good["givens_kept"] and good["filled"] and good["accuracy"] == 1.0
    rng = random.Random(1)
    for _ in range(20):
        (r1, c1), (r2, c2) = rng.sample([(r, c) for r in range(9) for c in range(9)], 2)
        if m.solution[r1][c1] == m.solution[r2][c2]:
            continue
        g = [list(row) for row in m.solution]
        g[r1][c1], g[r2][c2] = g[r2][c2], g[r1][c1]
        res = check_reading(p, g)
        assert not res["valid"]
        v = res["violations"]
        assert v["rows"] or v["columns"] or v["boxes"] or v["givens"]


def test_a_changed_given_is_named_even_in_another_valid_grid(made):
    m = made[1]
    p = Puzzle("p", m.grid, m.solution)
    # relabel two digits everywhere: the grid still obeys every rule, but the givens are not kept
    relabel = {1: 2, 2: 1}
    other = [[relabel.get(v, v) for v in row] for row in m.solution]
    res = check_reading(p, other)
    changed = sorted([r + 1, c + 1] for r, c, v in p.given_cells() if v in relabel)
    assert not res["valid"] and not res["givens_kept"] and res["violations"]["givens"] == changed
    assert res["violations"]["rows"] == res["violations"]["columns"] == res["violations"]["boxes"] == []
    empty = sum(v == 0 for row in m.grid for v in row)
    right = sum(other[r][c] == m.solution[r][c] for r in range(9) for c in range(9) if not m.grid[r][c])
    assert res["accuracy"] == pytest.approx(right / (empty + len(changed)))


def test_unread_cells_break_their_rules_and_are_listed(made):
    m = made[0]
    p = Puzzle("p", m.grid, m.solution)
    g = [list(row) for row in m.solution]
    empty = [(r, c) for r in range(9) for c in range(9) if not m.grid[r][c]]
    r, c = empty[0]
    g[r][c] = 0
    res = check_reading(p, g)
    assert not res["valid"] and not res["filled"] and res["givens_kept"]
    assert res["violations"]["unread"] == [[r + 1, c + 1]]
    assert res["violations"]["rows"] == [r + 1] and res["violations"]["columns"] == [c + 1]
    assert res["accuracy"] == pytest.approx((len(empty) - 1) / len(empty))


def test_bad_puzzles_are_one_line_each(tmp_path):
    grid = [[0] * 9 for _ in range(9)]
    cases = {
        "shape": ({"grid": [[0] * 9] * 8}, r"\.grid: must be 9 lists of 9 digits, got 8 rows"),
        "row": ({"grid": [[0] * 9] * 8 + [[0] * 8]}, r"row 9 must be a list of 9 digits, got 8 entries"),
        "digit": ({"grid": [[10] + [0] * 8] + [[0] * 9] * 8}, r"row 1, column 1 is 10; expected a digit 0-9"),
        "bool": ({"grid": [[True] + [0] * 8] + [[0] * 9] * 8}, r"row 1, column 1 is True"),
        "keys": ({"grid": grid, "size": 9}, r"unknown keys \['size'\]"),
        "givens": ({"grid": grid, "givens": 3}, r"\.givens: is 3, but the grid gives 0 digits"),
        "no solution": ({"grid": [[5, 5] + [0] * 7] + [[0] * 9] * 8}, r"the puzzle has no solution"),
    }
    for name, (d, message) in cases.items():
        with pytest.raises(PuzzleError, match=message):
            puzzle_from(d, "puzzle 'x.json'")
        assert "\n" not in name
    bad = tmp_path / "p.json"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(PuzzleError, match="not JSON text"):
        load_puzzle(bad)
    bad.write_text("")
    with pytest.raises(PuzzleError, match="the file is empty"):
        load_puzzle(bad)
    m = solver().make(random.Random(9))
    wrong = [list(r) for r in m.solution]
    wrong[0][0], wrong[0][1] = wrong[0][1], wrong[0][0]
    with pytest.raises(PuzzleError, match=r"\.solution: "):
        puzzle_from({"grid": [list(r) for r in m.grid], "solution": wrong}, "p")
