"""``logicval sudoku make`` and ``logicval sudoku check``: puzzles made and proved unique by clingo, written as files;
an image of a filled grid read back and judged by clingo's rules.

`check_image` returns ``{"id", "valid", "givens_kept", "filled", "cells", "accuracy", "violations"}``:

* ``cells``: the grid read from the image (9 lists of 9 digits, 0 where no digit was read);
* ``valid``: every row, column and box holds 1-9 once and every given is kept, decided by clingo's rules
  (``asp/sudoku_check.lp``), not by comparison with the stored solution (another correct completion would count;
  a puzzle made here has none);
* ``givens_kept``: every given digit is read back unchanged; ``filled``: every cell holds a digit;
* ``accuracy``: GIR-Bench's position accuracy: the puzzle's empty cells read as the solution's digit, over the empty
  cells plus the givens read as another digit (a given read as no digit is not counted, as GIR-Bench counts only
  digits it reads); 0 when that total is 0;
* ``violations``: ``rows``, ``columns``, ``boxes`` (1-9, boxes row by row) that break the rule, ``givens`` not kept
  and ``unread`` cells (``[row, column]``, 1-based).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_path, atomic_write_json, replace_dir
from logicval_hf.tasks.sudoku.draw import draw_grid
from logicval_hf.tasks.sudoku.puzzle import SIZE, Puzzle, PuzzleError
from logicval_hf.tasks.sudoku.read import read_grid
from logicval_hf.tasks.sudoku.solver import SudokuSolver, broken_rules

__all__ = ["MAX_COUNT", "check_image", "check_reading", "load_puzzle", "make_puzzles", "solver"]

#: the most puzzles one `make_puzzles` call writes
MAX_COUNT = 100_000
_SUBDIRS = ("puzzles", "images", "answers")
_solver: SudokuSolver | None = None
_solver_lock = threading.Lock()


def solver() -> SudokuSolver:
    """The process's `SudokuSolver` (grounded once)."""
    global _solver  # noqa: PLW0603  one grounding per process, built on first use under the lock
    with _solver_lock:
        if _solver is None:
            _solver = SudokuSolver()
        return _solver


def puzzle_from(d: Any, where: str, default_id: str = "puzzle") -> Puzzle:
    """A `Puzzle` from its JSON: checked for shape and digits; a missing solution is found by clingo; a grid with
    no solution, or a solution that breaks a rule, is an error.

    Raises:
        PuzzleError: one line naming ``where`` and what is wrong.
    """
    pid, grid, solution = Puzzle.fields(d, where)
    if solution is None:
        solution = solver().solve(grid)
        if solution is None:
            raise PuzzleError(f"{where}: the puzzle has no solution (its givens cannot be completed without "
                              "breaking a row, column or box)")
    else:
        rules = broken_rules(solution, grid)
        if not rules["valid"]:
            named = ", ".join(f"{k} {v}" for k, v in rules.items() if k in ("rows", "columns", "boxes") and v)
            raise PuzzleError(f"{where}.solution: breaks the rules of Sudoku ({named})")
    return Puzzle(pid or default_id, grid, solution)


def load_puzzle(path: str | os.PathLike[str]) -> Puzzle:
    """A puzzle file (see `puzzle_from`).

    Raises:
        PuzzleError: unreadable, not JSON, or not a puzzle (one line naming the file).
    """
    p = Path(path)
    where = f"puzzle {str(p)!r}"
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PuzzleError(f"{where}: not JSON text (a binary file, an image?)") from None
    except OSError as e:
        raise PuzzleError(f"{where}: cannot read it ({e.strerror or e})") from None
    if not text.strip():
        raise PuzzleError(f"{where}: the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise PuzzleError(f"{where}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    return puzzle_from(data, where, default_id=p.stem)


def check_reading(puzzle: Puzzle, cells: Any) -> dict[str, Any]:
    """The verdict on a grid read from an image (see the module docstring); ``cells`` a 9x9 grid, 0 for unread."""
    rules = broken_rules(cells, puzzle.grid)
    empty = [(r, c) for r in range(SIZE) for c in range(SIZE) if not puzzle.grid[r][c]]
    right = sum(cells[r][c] == puzzle.solution[r][c] for r, c in empty)
    changed = sum(1 for r, c, v in puzzle.given_cells() if cells[r][c] and cells[r][c] != v)
    total = len(empty) + changed
    return {
        "id": puzzle.id,
        "valid": rules["valid"],
        "givens_kept": not rules["givens"],
        "filled": not rules["unread"],
        "cells": [list(row) for row in cells],
        "accuracy": right / total if total else 0.0,
        "violations": {k: rules[k] for k in ("rows", "columns", "boxes", "givens", "unread")},
    }


def check_image(puzzle: Puzzle, image: Any, what: str = "image") -> dict[str, Any]:
    """Read the grid in ``image`` and judge it against ``puzzle`` (see the module docstring).

    Raises:
        PerceptionError: not an image, or no grid found in it.
        MissingExtraError: the OCR (the ``ocr`` extra) is not installed.
    """
    return check_reading(puzzle, read_grid(image, what).grid)


def _save_png(image: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        image.save(tmp, format="PNG")


def make_puzzles(count: int, seed: int, out: str | os.PathLike[str], progress: bool = False) -> dict[str, Any]:
    """Make ``count`` puzzles from ``seed`` and write ``out/puzzles/<id>.json``, ``out/images/<id>.png`` (the
    puzzle) and ``out/answers/<id>.png`` (its solution, drawn the same way, filled digits in blue).

    Every puzzle's solution is proved unique (the solve that excludes it is UNSAT) and every given is needed. The
    files are made in a folder beside ``out`` and moved in only when all are complete: a failure writes nothing,
    and files already in ``out`` other than these are kept.

    Returns:
        A summary: ``out``, ``count``, ``seed``, ``ids``, ``givens`` (min, mean, max), ``unique`` (puzzles proved
        unique), ``solves`` and ``seconds``.
    Raises:
        ValueError: ``count`` not in 1..`MAX_COUNT`, or ``seed`` not a whole number.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be a whole number in 1..{MAX_COUNT}, got {count!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    from tqdm import tqdm

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rng = random.Random(seed)
    made = []
    sol = solver()
    solves = 0
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; the folder gets the mode a plain mkdir would give
    try:
        for sub in _SUBDIRS:
            (tmp / sub).mkdir()
        for k in tqdm(range(count), desc="sudoku", unit="puzzle", disable=not progress):
            m = sol.make(rng)
            if m.unique_proof != "UNSAT":  # cannot happen: make keeps only digits whose removal leaves it unique
                raise RuntimeError(f"puzzle {k}: the uniqueness proof failed ({m.unique_proof})")
            solves += m.solves
            puzzle = Puzzle(f"{seed}-{k:04d}", m.grid, m.solution)
            atomic_write_json(tmp / "puzzles" / f"{puzzle.id}.json", puzzle.to_dict())
            _save_png(draw_grid(puzzle.grid), tmp / "images" / f"{puzzle.id}.png")
            _save_png(draw_grid(puzzle.solution, puzzle.grid), tmp / "answers" / f"{puzzle.id}.png")
            made.append(puzzle)
        _move_in(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    givens = [p.givens for p in made]
    return {"out": str(out), "count": len(made), "seed": seed, "ids": [p.id for p in made],
            "givens": {"min": min(givens), "mean": round(sum(givens) / len(givens), 2), "max": max(givens)},
            "unique": len(made), "solves": solves, "seconds": round(time.perf_counter() - start, 2)}


def _move_in(tmp: Path, out: Path) -> None:
    """The finished files into ``out``: the whole folder at once when ``out`` is new or empty, else file by file
    (each rename atomic), keeping whatever else ``out`` holds."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        if out.exists():
            out.rmdir()
        replace_dir(tmp, out)
        return
    for sub in _SUBDIRS:
        (out / sub).mkdir(parents=True, exist_ok=True)
        for f in sorted((tmp / sub).iterdir()):
            os.replace(f, out / sub / f.name)
