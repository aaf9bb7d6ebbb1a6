"""The Sudoku tab: make a puzzle (clingo, its solution proved unique), upload an image of a filled grid, see the grid
read back and the cells that break a rule (`logicval_hf.tasks.sudoku`).

Uploads go through `logicval_hf.space.images` before the reader decodes anything; errors are `ValueError`s with a
sentence a user can act on.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from logicval_hf.space import images

__all__ = ["check_upload", "conflicts", "draw_check", "make_puzzle", "result_markdown"]

#: cell tints: a given changed, a digit repeated in its row, column or box, a cell with no digit read
_CHANGED, _CONFLICT, _UNREAD = (220, 30, 30), (240, 140, 0), (240, 210, 0)


def make_puzzle(seed: int) -> tuple[str, Image.Image, Image.Image]:
    """A puzzle made from ``seed``: its JSON (as ``logicval sudoku make`` writes it), its image and its answer's."""
    from logicval_hf.tasks.sudoku.api import solver
    from logicval_hf.tasks.sudoku.draw import draw_grid
    from logicval_hf.tasks.sudoku.puzzle import Puzzle

    if isinstance(seed, bool) or not isinstance(seed, (int, float)) or not float(seed).is_integer():
        raise ValueError(f"the seed must be a whole number, got {seed!r}")
    m = solver().make(random.Random(int(seed)))
    puzzle = Puzzle(f"{int(seed)}", m.grid, m.solution)
    return json.dumps(puzzle.to_dict()), draw_grid(puzzle.grid), draw_grid(puzzle.solution, puzzle.grid)


def check_upload(puzzle_text: str, path: Any, max_bytes: int | None = images.DEFAULT_MAX_FILE_BYTES
                 ) -> dict[str, Any]:
    """The puzzle (JSON text) checked against the uploaded image: `check_reading`'s answer plus ``reading`` (the
    grid's corners and each cell's corners in the image, for drawing).

    Raises:
        ValueError: a puzzle that is not one, an image the gate refuses, or no grid found in it.
    """
    from logicval_hf.tasks.sudoku.api import check_reading, puzzle_from
    from logicval_hf.tasks.sudoku.read import read_grid

    text = (puzzle_text or "").strip()
    if not text:
        raise ValueError("make a puzzle first, or paste a puzzle's JSON")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"the puzzle is not valid JSON ({e.msg} at column {e.colno})") from None
    puzzle = puzzle_from(data, "puzzle")
    rgb = images.decode(path, max_bytes)
    reading = read_grid(rgb, "the uploaded image")
    out = check_reading(puzzle, reading.grid)
    out["reading"] = {"corners": [list(p) for p in reading.corners],
                      "cells": [[[list(p) for p in quad] for quad in row] for row in reading.cells],
                      "givens": [list(r) for r in puzzle.grid], "image_size": [int(rgb.shape[1]), int(rgb.shape[0])]}
    return out


def conflicts(cells: list[list[int]]) -> set[tuple[int, int]]:
    """Cells whose digit appears again in their row, column or box (0-based)."""
    out = set()
    for r in range(9):
        for c in range(9):
            v = cells[r][c]
            if not v:
                continue
            peers = {(r, k) for k in range(9)} | {(k, c) for k in range(9)}
            peers |= {(r // 3 * 3 + i, c // 3 * 3 + j) for i in range(3) for j in range(3)}
            if any(cells[a][b] == v for a, b in peers - {(r, c)}):
                out.add((r, c))
    return out


def draw_check(rgb: np.ndarray, result: dict[str, Any]) -> Image.Image:
    """The image with the grid found outlined, each cell's read digit in its corner, and the cells that break a
    rule tinted: red a given changed, orange a digit repeated in its row, column or box, yellow nothing read."""
    reading = result["reading"]
    im, _, sx, sy, font = images.drawing_canvas(rgb, tuple(reading["image_size"]), 640)
    overlay = Image.new("RGBA", im.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    cells, givens = result["cells"], reading["givens"]
    bad = conflicts(cells)
    for r in range(9):
        for c in range(9):
            quad = [(x * sx, y * sy) for x, y in reading["cells"][r][c]]
            v = cells[r][c]
            tint = (_CHANGED if givens[r][c] and v and v != givens[r][c] else _UNREAD if not v
                    else _CONFLICT if (r, c) in bad else None)
            if tint is not None:
                draw.polygon(quad, fill=(*tint, 90))
            if v:
                draw.text((quad[0][0] + 3, quad[0][1] + 1), str(v), fill=(200, 0, 120, 255), font=font)
    corners = [(x * sx, y * sy) for x, y in reading["corners"]]
    draw.line([*corners, corners[0]], fill=(0, 160, 60, 255), width=max(2, round(min(im.size) / 200)))
    return Image.alpha_composite(im.convert("RGBA"), overlay).convert("RGB")


def result_markdown(result: dict[str, Any]) -> str:
    """The verdict, GIR-Bench's position accuracy and what breaks."""
    v = result["violations"]
    head = "**Valid**: every row, column and box holds 1-9 once and every given is kept." if result["valid"] else \
        "**Not valid.**"
    parts = [head, f"Position accuracy (GIR-Bench): {result['accuracy']:.3f}."]
    for key, what in (("rows", "rows"), ("columns", "columns"), ("boxes", "boxes")):
        if v[key]:
            parts.append(f"Broken {what}: {', '.join(map(str, v[key]))}.")
    if v["givens"]:
        parts.append("Givens not kept (row, column): " + ", ".join(f"({r}, {c})" for r, c in v["givens"]) + ".")
    if v["unread"]:
        parts.append(f"{len(v['unread'])} cells with no digit read.")
    return "  \n".join(parts)
