"""A Sudoku grid as an image: white cells, thin lines between cells, thick lines around the boxes and the grid, the
givens in black and the digits filled in (an answer's) in blue, in Pillow's bundled font (no system font needed)."""

from __future__ import annotations

from typing import Any

from logicval_hf.tasks.sudoku.puzzle import SIZE, Grid

__all__ = ["CELL", "FILLED_COLOUR", "GIVEN_COLOUR", "MARGIN", "draw_grid"]

#: pixels per cell, and the white margin around the grid
CELL, MARGIN = 56, 24
GIVEN_COLOUR, FILLED_COLOUR = (0, 0, 0), (25, 60, 170)
_THIN, _THICK = 2, 5


def draw_grid(grid: Grid, givens: Grid | None = None, cell: int = CELL) -> Any:
    """The PIL image of ``grid`` (0: empty cell). ``givens``: the puzzle whose digits are drawn black (the others
    blue); None draws every digit black (the puzzle itself)."""
    from PIL import Image, ImageDraw, ImageFont

    margin = round(MARGIN * cell / CELL)
    side = SIZE * cell + 2 * margin
    im = Image.new("RGB", (side, side), "white")
    d = ImageDraw.Draw(im)
    font = ImageFont.load_default(size=round(cell * 0.62))
    for k in range(SIZE + 1):
        width = _THICK if k % 3 == 0 else _THIN
        p = margin + k * cell
        d.line([(margin, p), (margin + SIZE * cell, p)], fill="black", width=width)
        d.line([(p, margin), (p, margin + SIZE * cell)], fill="black", width=width)
    for r in range(SIZE):
        for c in range(SIZE):
            v = grid[r][c]
            if not v:
                continue
            colour = GIVEN_COLOUR if givens is None or givens[r][c] else FILLED_COLOUR
            centre = (margin + c * cell + cell / 2, margin + r * cell + cell / 2)
            d.text(centre, str(v), fill=colour, font=font, anchor="mm")
    return im
