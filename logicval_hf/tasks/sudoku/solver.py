"""Sudoku with clingo (``asp/sudoku.lp``, ``asp/sudoku_check.lp``): complete grids, uniqueness proofs, puzzles made by
removing givens while the solution stays unique, and which rules a filled grid breaks.

One `SudokuSolver` grounds the rules once and switches the puzzle's digits (external atoms) from one solve to the
next, so a uniqueness check costs one solve, not a grounding. A solution is *proved* unique by a second solve that
must differ from it in some cell: that solve is UNSAT exactly when no other completion exists.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import clingo

from logicval_hf.asp.programs import read_program
from logicval_hf.tasks.sudoku.puzzle import SIZE, Grid

__all__ = ["MadePuzzle", "SudokuSolver", "broken_rules"]

#: random digits placed (besides a random first row) before clingo completes a grid
_SEED_CELLS = 6


def _grid(cells: Iterable[clingo.Symbol]) -> Grid:
    g = [[0] * SIZE for _ in range(SIZE)]
    for s in cells:
        r, c, v = (a.number for a in s.arguments)
        g[r][c] = v
    return tuple(tuple(row) for row in g)


@dataclass(frozen=True)
class MadePuzzle:
    """A puzzle made by `SudokuSolver.make`: its grid and solution, and the proof of uniqueness (the final solve
    that excludes the solution, ``unique_proof``: its result, UNSAT) with the number of solver calls spent."""

    grid: Grid
    solution: Grid
    unique_proof: str
    solves: int


class SudokuSolver:
    """One grounding of the Sudoku rules, reused for every solve (not thread-safe on its own: a lock serialises)."""

    def __init__(self) -> None:
        self._ctl = clingo.Control(["--models=1"], logger=lambda code, msg: None)
        self._ctl.add("base", [], read_program("sudoku.lp"))
        self._ctl.ground([("base", [])])
        # externals by program literal: switching one costs no symbol lookup
        self._lit = {(sa.symbol.name, *(a.number for a in sa.symbol.arguments)): sa.literal
                     for name in ("given", "known") for sa in self._ctl.symbolic_atoms.by_signature(name, 3)}
        self._exclude = self._ctl.symbolic_atoms[clingo.Function("exclude")].literal  # type: ignore[union-attr]
        self._givens: set[tuple[int, int, int]] = set()
        self._known: set[tuple[int, int, int]] = set()
        self._lock = threading.Lock()
        self.solves = 0

    # ---- the externals ---------------------------------------------------------------------------------------
    def _switch(self, name: str, current: set[tuple[int, int, int]], wanted: set[tuple[int, int, int]]) -> None:
        for cell in current - wanted:
            self._ctl.assign_external(self._lit[(name, cell[0], cell[1], cell[2])], False)
        for cell in wanted - current:
            self._ctl.assign_external(self._lit[(name, cell[0], cell[1], cell[2])], True)
        current.clear()
        current.update(wanted)

    def _set(self, givens: Iterable[tuple[int, int, int]], known: Iterable[tuple[int, int, int]] = ()) -> None:
        self._switch("given", self._givens, set(givens))
        self._switch("known", self._known, set(known))
        self._ctl.assign_external(self._exclude, bool(self._known))

    def _solve(self) -> Grid | None:
        self.solves += 1
        with self._ctl.solve(yield_=True) as handle:
            model = handle.model()
            return _grid(model.symbols(shown=True)) if model is not None else None

    def _complete(self, cells: set[tuple[int, int, int]]) -> Grid | None:
        """A completion of the digits ``cells`` by a fresh grounding: the grid found then depends on the digits
        only, not on what this solver learnt before (so one seed always makes the same puzzles)."""
        self.solves += 1
        ctl = clingo.Control(["--models=1"], logger=lambda code, msg: None)
        facts = "".join(f"given({r},{c},{v}).\n" for r, c, v in sorted(cells))
        ctl.add("base", [], read_program("sudoku.lp") + facts)
        ctl.ground([("base", [])])
        with ctl.solve(yield_=True) as handle:
            model = handle.model()
            return _grid(model.symbols(shown=True)) if model is not None else None

    def _satisfiable(self) -> bool:
        self.solves += 1
        return bool(self._ctl.solve().satisfiable)

    # ---- questions -----------------------------------------------------------------------------------------
    def solve(self, grid: Grid) -> Grid | None:
        """A completion of ``grid`` (0: empty), or None when it has none."""
        with self._lock:
            self._set(_cells(grid))
            return self._solve()

    def other_solution(self, grid: Grid, solution: Grid) -> Grid | None:
        """A completion of ``grid`` that differs from ``solution`` somewhere, or None: then ``solution`` is the
        only one (the solve that returned None was UNSAT)."""
        with self._lock:
            self._set(_cells(grid), _cells(solution))
            try:
                return self._solve()
            finally:
                self._set(())

    def make(self, rng: random.Random) -> MadePuzzle:
        """A puzzle drawn with ``rng``: clingo completes a random first row and a few random digits into a grid;
        then each cell, in random order, loses its digit unless the solution would stop being unique. Every given
        left is needed (removing any one admits a second solution), and the last uniqueness solve is the proof."""
        with self._lock:
            start = self.solves
            solution = None
            while solution is None:
                solution = self._complete(_seed_cells(rng))
            known = _cells(solution)
            givens = set(known)
            order = sorted(givens)
            rng.shuffle(order)
            for cell in order:
                givens.discard(cell)
                self._set(givens, known)
                if self._satisfiable():  # another completion exists without this digit: keep it
                    givens.add(cell)
            self._set(givens, known)  # the proof, recorded: the puzzle as it is, its solution excluded
            proof = "SAT" if self._satisfiable() else "UNSAT"
            self._set(())
            grid = tuple(tuple(v if (r, c, v) in givens else 0 for c, v in enumerate(row))
                         for r, row in enumerate(solution))
            return MadePuzzle(grid, solution, proof, self.solves - start)


def _cells(grid: Grid) -> set[tuple[int, int, int]]:
    return {(r, c, v) for r, row in enumerate(grid) for c, v in enumerate(row) if v}


def _seed_cells(rng: random.Random) -> set[tuple[int, int, int]]:
    """A random first row and `_SEED_CELLS` random digits elsewhere that break no rule among themselves."""
    row = list(range(1, 10))
    rng.shuffle(row)
    cells = {(0, c, v) for c, v in enumerate(row)}
    while len(cells) < SIZE + _SEED_CELLS:
        r, c, v = rng.randrange(1, SIZE), rng.randrange(SIZE), rng.randrange(1, 10)
        if all(not (rr == r and cc == c) and not (v == vv and (rr == r or cc == c or
                                                              (rr // 3, cc // 3) == (r // 3, c // 3)))
               for rr, cc, vv in cells):
            cells.add((r, c, v))
    return cells


def broken_rules(read: Grid, givens: Grid) -> dict[str, Any]:
    """Which rules a filled grid breaks, decided by clingo (``asp/sudoku_check.lp``): rows, columns and boxes that
    do not hold every digit once, givens of ``givens`` not kept, cells with no digit (0), and ``valid`` when none.
    Rows, columns and boxes are numbered 1..9 (boxes row by row); cells as ``[row, column]``."""
    facts = [f"read({r},{c},{v})." for r, row in enumerate(read) for c, v in enumerate(row)]
    facts += [f"given({r},{c},{v})." for r, row in enumerate(givens) for c, v in enumerate(row) if v]
    ctl = clingo.Control(["--models=1"], logger=lambda code, msg: None)
    ctl.add("base", [], read_program("sudoku_check.lp") + "\n".join(facts))
    ctl.ground([("base", [])])
    out: dict[str, Any] = {"rows": [], "columns": [], "boxes": [], "givens": [], "unread": [], "valid": False}
    keys = {"bad_row": "rows", "bad_column": "columns", "bad_box": "boxes", "changed": "givens", "unread": "unread"}
    with ctl.solve(yield_=True) as handle:
        model = handle.model()
        assert model is not None  # a stratified program: always one model
        for s in model.symbols(shown=True):
            if s.name == "valid":
                out["valid"] = True
                continue
            args = [a.number + 1 for a in s.arguments]
            out[keys[s.name]].append(args[0] if len(args) == 1 else args)
    for k in keys.values():
        out[k].sort()
    return out
