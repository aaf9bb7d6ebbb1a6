"""A Sudoku puzzle as data. Its JSON file reads ``{"id", "grid", "solution", "givens"}``: ``grid`` and ``solution``
are 9 lists of 9 digits (``0`` marks an empty cell of the grid; the solution has none), ``givens`` the number of
digits the grid gives. Rows and columns are numbered 0..8 in the data and 1..9 in messages and reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SIZE", "Grid", "Puzzle", "PuzzleError", "grid_of"]

SIZE = 9
Grid = tuple[tuple[int, ...], ...]
_KEYS = ("id", "grid", "solution", "givens")


class PuzzleError(ValueError):
    """A puzzle (or grid) that is not one: the message is one line naming the file and the field."""


def grid_of(raw: Any, where: str, *, empty_ok: bool = True) -> Grid:
    """``raw`` as a grid: 9 lists of 9 whole numbers 0..9 (1..9 when ``empty_ok`` is False).

    Raises:
        PuzzleError: another shape or a digit out of range, naming the row and column (1-based).
    """
    lo = 0 if empty_ok else 1
    if not isinstance(raw, (list, tuple)) or len(raw) != SIZE:
        got = (f"{len(raw)} row{'' if len(raw) == 1 else 's'}" if isinstance(raw, (list, tuple))
               else type(raw).__name__)
        raise PuzzleError(f"{where}: must be {SIZE} lists of {SIZE} digits, got {got}")
    rows = []
    for r, row in enumerate(raw):
        if not isinstance(row, (list, tuple)) or len(row) != SIZE:
            got = (f"{len(row)} entr{'y' if len(row) == 1 else 'ies'}" if isinstance(row, (list, tuple))
                   else type(row).__name__)
            raise PuzzleError(f"{where}: row {r + 1} must be a list of {SIZE} digits, got {got}")
        for c, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= 9:
                raise PuzzleError(f"{where}: row {r + 1}, column {c + 1} is {v!r}; expected a digit {lo}-9"
                                  + (" (0 for an empty cell)" if empty_ok else ""))
        rows.append(tuple(row))
    return tuple(rows)


@dataclass(frozen=True)
class Puzzle:
    """A puzzle: its ``grid`` (0 for empty cells) and its ``solution`` (every cell filled, the givens kept)."""

    id: str
    grid: Grid
    solution: Grid

    @property
    def givens(self) -> int:
        return sum(v != 0 for row in self.grid for v in row)

    def given_cells(self) -> list[tuple[int, int, int]]:
        """``(row, column, digit)`` of every given."""
        return [(r, c, v) for r, row in enumerate(self.grid) for c, v in enumerate(row) if v]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "grid": [list(r) for r in self.grid], "solution": [list(r) for r in self.solution],
                "givens": self.givens}

    @staticmethod
    def fields(d: Any, where: str) -> tuple[str | None, Grid, Grid | None]:
        """The id, grid and solution (None when absent) of a puzzle's JSON, each checked for shape and digits, the
        solution against the grid's givens and the count of givens against the grid.

        Raises:
            PuzzleError: naming ``where`` and the field.
        """
        if not isinstance(d, Mapping):
            raise PuzzleError(f"{where}: a puzzle is a JSON object with keys {list(_KEYS)}, got {type(d).__name__}")
        unknown = [k for k in d if k not in _KEYS]
        if unknown:
            raise PuzzleError(f"{where}: unknown keys {unknown}; a puzzle has {list(_KEYS)}")
        if "grid" not in d:
            raise PuzzleError(f"{where}: missing 'grid' (9 lists of 9 digits, 0 for an empty cell)")
        pid = d.get("id")
        if pid is not None and (not isinstance(pid, str) or not pid.strip()):
            raise PuzzleError(f"{where}.id: must be a non-empty string, got {pid!r}")
        grid = grid_of(d["grid"], f"{where}.grid")
        solution = grid_of(d["solution"], f"{where}.solution", empty_ok=False) if "solution" in d else None
        if solution is not None:
            for r in range(SIZE):
                for c in range(SIZE):
                    if grid[r][c] and grid[r][c] != solution[r][c]:
                        raise PuzzleError(f"{where}.solution: row {r + 1}, column {c + 1} is {solution[r][c]}, but "
                                          f"the grid gives {grid[r][c]} there")
        givens = d.get("givens")
        count = sum(v != 0 for row in grid for v in row)
        if givens is not None and (isinstance(givens, bool) or givens != count):
            raise PuzzleError(f"{where}.givens: is {givens!r}, but the grid gives {count} digits")
        return pid, grid, solution
