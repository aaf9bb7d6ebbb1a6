"""A Sudoku image back to a grid: find the grid, straighten it, read each cell with OCR.

* **Finding the grid.** Dark strokes are found by a local threshold; every large four-sided outline is a candidate
  (the grid's outer border; also any frame around it), straightened by a perspective warp and scored by how well
  dark lines fall where a 9x9 grid has them and how little ink lies between them. The best candidate wins; none
  that looks like a grid is a `PerceptionError`. So the grid is found when the image is scaled, re-saved as JPEG,
  slightly rotated or framed differently (more margin, an offset, a border around it).
* **Reading the cells.** In the straightened grid a cell holds a digit when ink (Otsu's threshold over the grid)
  covers enough of its inner part once line remnants and specks are left out. The ink's bounding box, padded, is
  one crop; all crops of the image go to the OCR recogniser in one batch (`logicval_hf.perception.ocr
  .recognise_crops`: each at its own width, without text detection). A crop read as anything but one digit is read
  again from the whole inner cell; what is still not a digit is 0 (unread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from logicval_hf.perception.images import PerceptionError, load_image
from logicval_hf.perception.ocr import recognise_crops
from logicval_hf.tasks.sudoku.puzzle import SIZE, Grid

__all__ = ["GridReading", "digit_of", "find_grid", "read_grid"]

#: the straightened grid's side in pixels (64 per cell)
SIDE = SIZE * 64
#: a candidate outline must cover at least this share of the image
_MIN_AREA = 0.04
#: the inner part of a cell that is read (this share of the cell is left out on each side)
_INSET = 0.14
#: a cell holds a digit when ink covers at least this share of its inner part
_MIN_INK = 0.015
#: how grid-like the best candidate must be (line darkness minus the darkness between lines, 0..1)
_MIN_GRID_SCORE = 0.3
#: characters the recogniser may return for a lone digit
_CONFUSABLE = {"l": "1", "I": "1", "|": "1", "i": "1", "!": "1", "]": "1", "[": "1", "S": "5", "s": "5",
               "Z": "2", "z": "2", "B": "8", "g": "9", "q": "9", "G": "6", "b": "6"}


@dataclass(frozen=True)
class GridReading:
    """What was read: ``grid`` (0 where no digit was read), each cell's OCR ``confidence`` (0 for an empty cell),
    the grid's four corners in the image (top left, top right, bottom right, bottom left) and each cell's four
    corners (``cells[r][c]``), for drawing."""

    grid: Grid
    confidence: tuple[tuple[float, ...], ...]
    corners: tuple[tuple[float, float], ...]
    cells: tuple[tuple[tuple[tuple[float, float], ...], ...], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"grid": [list(r) for r in self.grid],
                "confidence": [[round(v, 4) for v in r] for r in self.confidence],
                "corners": [[round(x, 1), round(y, 1)] for x, y in self.corners]}


def digit_of(text: str) -> int:
    """The digit 1-9 a recognised text shows, or 0 when it is not exactly one digit."""
    chars = [_CONFUSABLE.get(ch, ch) for ch in text.strip() if not ch.isspace()]
    return int(chars[0]) if len(chars) == 1 and chars[0] in "123456789" else 0


def _order(points: np.ndarray) -> np.ndarray:
    """Four points as top left, top right, bottom right, bottom left."""
    pts = points.reshape(4, 2).astype(np.float32)
    s, d = pts.sum(axis=1), np.diff(pts, axis=1).ravel()
    return np.array([pts[np.argmin(s)], pts[np.argmin(d)], pts[np.argmax(s)], pts[np.argmax(d)]], np.float32)


def _candidates(gray: np.ndarray) -> list[np.ndarray]:
    """Four-cornered outlines large enough to be the grid, largest first."""
    import cv2

    h, w = gray.shape
    block = max(15, (min(h, w) // 24) | 1)
    ink = cv2.adaptiveThreshold(cv2.GaussianBlur(gray, (5, 5), 0), 255, cv2.ADAPTIVE_THRESH_MEAN_C,
                                cv2.THRESH_BINARY_INV, block, 10)
    contours, _ = cv2.findContours(ink, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    big = sorted((c for c in contours if cv2.contourArea(c) >= _MIN_AREA * h * w), key=cv2.contourArea, reverse=True)
    out: list[np.ndarray] = []
    for c in big[:8]:
        hull = cv2.convexHull(c)
        quad = cv2.approxPolyDP(hull, 0.02 * cv2.arcLength(hull, True), True)
        pts = quad if len(quad) == 4 else cv2.boxPoints(cv2.minAreaRect(c))
        ordered = _order(np.asarray(pts))
        if not any(np.abs(ordered - o).max() < 0.01 * max(h, w) for o in out):  # a line's inner and outer edge
            out.append(ordered)
    return out


def _grid_score(warped: np.ndarray) -> float:
    """How grid-like a straightened candidate is: the darkness of the rows and columns where a 9x9 grid has lines,
    minus the darkness halfway between them."""
    import cv2

    _, ink = cv2.threshold(warped, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    cell = SIDE / SIZE
    win = max(2, round(cell / 10))
    scores = []
    for profile in (ink.mean(axis=0), ink.mean(axis=1)):
        lines = [profile[max(0, round(k * cell) - win):round(k * cell) + win + 1].max() for k in range(SIZE + 1)]
        between = [profile[round((k + 0.5) * cell) - win:round((k + 0.5) * cell) + win + 1].mean()
                   for k in range(SIZE)]
        scores.append(float(np.mean(lines) - np.mean(between)))
    return min(scores)


def find_grid(gray: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The straightened grid (``SIDE x SIDE`` grey) and the four corners of the grid in the image.

    Raises:
        PerceptionError: nothing in the image looks like a 9x9 grid.
    """
    import cv2

    dst = np.array([[0, 0], [SIDE - 1, 0], [SIDE - 1, SIDE - 1], [0, SIDE - 1]], np.float32)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for quad in _candidates(gray):
        m = cv2.getPerspectiveTransform(quad, dst)
        warped = cv2.warpPerspective(gray, m, (SIDE, SIDE), flags=cv2.INTER_CUBIC, borderValue=255)
        score = _grid_score(warped)
        if best is None or score > best[0]:
            best = (score, warped, quad)
    if best is None or best[0] < _MIN_GRID_SCORE:
        raise PerceptionError("no Sudoku grid found in the image (no four-sided outline with 9x9 cells inside)")
    return best[1], best[2]


def _ink_box(ink: np.ndarray) -> tuple[int, int, int, int] | None:
    """The bounding box of a cell window's digit ink (line remnants along the window's edges and specks left out),
    or None when there is too little ink for a digit."""
    import cv2

    h, w = ink.shape
    n, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    keep = []
    for i in range(1, n):
        x, y, bw, bh, area = (int(v) for v in stats[i])
        if area < 0.003 * h * w:
            continue
        thin_line = (bw <= 0.12 * w and bh >= 0.6 * h) or (bh <= 0.12 * h and bw >= 0.6 * w)
        touches = x == 0 or y == 0 or x + bw == w or y + bh == h
        if thin_line and touches:
            continue
        keep.append((x, y, x + bw, y + bh, area))
    if not keep or sum(k[4] for k in keep) < _MIN_INK * h * w:
        return None
    return (min(k[0] for k in keep), min(k[1] for k in keep), max(k[2] for k in keep), max(k[3] for k in keep))


def _pad(crop: np.ndarray, share: float) -> np.ndarray:
    import cv2

    p = max(4, round(max(crop.shape) * share))
    return cv2.copyMakeBorder(crop, p, p, p, p, cv2.BORDER_CONSTANT, value=255)


def read_grid(image: Any, what: str = "image") -> GridReading:
    """Read a Sudoku grid from an image (a path, a PIL image or an RGB array).

    Raises:
        PerceptionError: not an image, or no grid found in it (one line naming the image).
        MissingExtraError: the OCR (rapidocr, the ``ocr`` extra) is not installed.
    """
    import cv2

    rgb = load_image(image, what)
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    try:
        warped, corners = find_grid(gray)
    except PerceptionError as e:
        raise PerceptionError(f"{what}: {e}") from None
    _, ink = cv2.threshold(warped, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    cell = SIDE / SIZE
    inset = round(cell * _INSET)
    tight: dict[tuple[int, int], np.ndarray] = {}
    whole: dict[tuple[int, int], np.ndarray] = {}
    for r in range(SIZE):
        for c in range(SIZE):
            y0, x0 = round(r * cell) + inset, round(c * cell) + inset
            y1, x1 = round((r + 1) * cell) - inset, round((c + 1) * cell) - inset
            box = _ink_box(ink[y0:y1, x0:x1])
            if box is None:
                continue
            bx0, by0, bx1, by1 = box
            tight[(r, c)] = _pad(warped[y0 + by0:y0 + by1, x0 + bx0:x0 + bx1], 0.3)
            whole[(r, c)] = _pad(warped[y0:y1, x0:x1], 0.1)
    keys = list(tight)
    digits = {k: (digit_of(t), s) for k, (t, s) in zip(keys, recognise_crops([tight[k] for k in keys]), strict=True)}
    again = [k for k, (d, _) in digits.items() if d == 0]
    for k, (t, s) in zip(again, recognise_crops([whole[k] for k in again]), strict=True):
        digits[k] = (digit_of(t), s)
    grid = tuple(tuple(digits.get((r, c), (0, 0.0))[0] for c in range(SIZE)) for r in range(SIZE))
    conf = tuple(tuple(digits[(r, c)][1] if digits.get((r, c), (0, 0.0))[0] else 0.0 for c in range(SIZE))
                 for r in range(SIZE))
    inverse = cv2.getPerspectiveTransform(
        np.array([[0, 0], [SIDE - 1, 0], [SIDE - 1, SIDE - 1], [0, SIDE - 1]], np.float32), corners)
    pts = np.array([[[c * cell, r * cell]] for r in range(SIZE + 1) for c in range(SIZE + 1)], np.float32)
    lattice = cv2.perspectiveTransform(pts, inverse).reshape(SIZE + 1, SIZE + 1, 2)

    def quad(r: int, c: int) -> tuple[tuple[float, float], ...]:
        return tuple((float(x), float(y)) for x, y in (lattice[r, c], lattice[r, c + 1], lattice[r + 1, c + 1],
                                                         lattice[r + 1, c]))

    cells = tuple(tuple(quad(r, c) for c in range(SIZE)) for r in range(SIZE))
    return GridReading(grid, conf, tuple((float(x), float(y)) for x, y in corners), cells)
