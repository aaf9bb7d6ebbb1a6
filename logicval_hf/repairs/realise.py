"""Concrete boxes for the solver's choice: each moved or added object gets a centre in the cell it was given, in the
order the solver chose among objects sharing a gap, its box inside the image and covering no other object's centre
(nor covered by the box of another moved or added object), computed with exact fractions and written as floats
whose centres compare exactly as the fractions do.

One moved or added object always fits where the solver put it (the solver knows its blocked cells). Several are
placed one after another, each at the point of its free faces nearest an even spread over its gap, with
backtracking over the nearest few; when none fits, the choice is refused and the solver excludes it.
"""

from __future__ import annotations

import math
from fractions import Fraction

from logicval_hf.repairs.facts import Problem
from logicval_hf.repairs.lattice import Box, Num, faces
from logicval_hf.repairs.solve import Choice

#: placements tried per object when backtracking
ALTERNATIVES = 6


def _ideal(problem: Problem, choice: Choice, movers: list[int], x: int, axis: str, half: int) -> Num:
    """Where ``x`` would sit with the movers of its gap spread evenly over the part of the gap its box fits."""
    ax = problem.axes[axis]
    piece = choice.at[(axis, x)]
    lo, hi = ax.interval(piece)
    if piece % 2:
        return lo  # type: ignore[return-value]  # a point: its coordinate
    a = max(lo, half) if lo is not None else half
    b = min(hi, ax.extent - half) if hi is not None else ax.extent - half
    mates = [y for y in movers if choice.at[(axis, y)] == piece]
    rank = sum(1 for y in mates if (axis, y, x) in choice.before)
    return a + Fraction((b - a) * (rank + 1), len(mates) + 1)


def _size(problem: Problem, x: int) -> tuple[int, int]:
    return problem.sizes[x] if x < problem.n_inputs else problem.new_size


def place(problem: Problem, choice: Choice) -> dict[int, tuple[Num, Num]] | None:
    """Centres for the moved and added objects of ``choice``, or None when they cannot all be placed."""
    movers = sorted(choice.moved) + list(choice.added)
    staying = [u for u in range(problem.n_inputs) if u not in choice.removed and u not in choice.moved]
    placed: dict[int, tuple[Num, Num]] = {}
    n = problem.n_inputs

    def candidates(x: int) -> list[tuple[Num, Num]]:
        w, h = _size(problem, x)
        obstacles: dict[str, list[tuple[int, Num, Num]]] = {"x": [], "y": []}
        for u in staying:
            cx, cy = problem.centres[u]
            obstacles["x"].append((u, cx, w // 2))
            obstacles["y"].append((u, cy, h // 2))
        for k, (v, (vx, vy)) in enumerate(placed.items()):
            vw, vh = _size(problem, v)
            for bit, rx, ry in ((n + 2 * k, w // 2, h // 2), (n + 2 * k + 1, vw // 2, vh // 2)):
                obstacles["x"].append((bit, vx, rx))
                obstacles["y"].append((bit, vy, ry))
        picks: dict[str, list[tuple[Num, Num, int]]] = {}
        for axis, half, k in (("x", w // 2, 0), ("y", h // 2, 1)):
            piece = choice.at[(axis, x)]
            ideal = _ideal(problem, choice, movers, x, axis, half)
            # objects placed in the same gap: this one goes on the side of each that the solver chose
            sides = [(c[k], (axis, x, v) in choice.before) for v, c in placed.items()
                     if choice.at[(axis, v)] == piece and piece % 2 == 0]
            options: list[tuple[Num, Num, int]] = []
            for f in faces(problem.axes[axis], half, obstacles[axis], [c for c, _ in sides]):
                probe = Fraction(f.lo + f.hi, 2)
                if f.piece == piece and all(probe != c and (probe < c) == earlier for c, earlier in sides):
                    value = f.pick(ideal)
                    options.append((abs(Fraction(value) - Fraction(ideal)), value, f.mask))
            picks[axis] = sorted(options)
        pairs = sorted((dx + dy, vx, vy) for dx, vx, mx in picks["x"] for dy, vy, my in picks["y"] if not mx & my)
        return [(vx, vy) for _, vx, vy in pairs[:ALTERNATIVES]]

    def solve(i: int) -> bool:
        if i == len(movers):
            return True
        x = movers[i]
        for centre in candidates(x):
            placed[x] = centre
            if solve(i + 1):
                return True
            del placed[x]
        return False

    return dict(placed) if solve(0) else None


def _ulps(v: float, k: int) -> list[float]:
    """``v`` and the floats up to ``k`` steps either side of it."""
    out, lo, hi = [v], v, v
    for _ in range(k):
        lo, hi = math.nextafter(lo, -math.inf), math.nextafter(hi, math.inf)
        out += [lo, hi]
    return out


def float_box(cx: Fraction, cy: Fraction, w: Fraction, h: Fraction) -> Box:
    """The box of centre ``(cx, cy)`` and size ``w`` x ``h`` in floats: its ends moved by the last bits where needed
    so that the centre a `Scene` computes from it is exactly ``float(cx), float(cy)`` (the size closest to the
    asked one among those)."""
    out = []
    for c, half, size in ((float(cx), float(w / 2), w), (float(cy), float(h / 2), h)):
        lo, hi = c - half, c + half
        if (lo + hi) / 2 != c:
            exact = [(abs(Fraction(b) - Fraction(a) - size), a, b) for a in _ulps(lo, 4) for b in _ulps(hi, 4)
                     if (a + b) / 2 == c]
            if exact:
                _, lo, hi = min(exact)
        out.append((lo, hi))
    (x0, x1), (y0, y1) = out
    return x0, y0, x1, y1


#: candidate centres per side of the image for an added object in a box domain
FREE_GRID = 16


def free_boxes(problem: Problem, choice: Choice) -> dict[int, tuple[Num, Num]] | None:
    """Centres for the added objects of a box domain (nothing there moves, relations are not read): the first
    centre of a `FREE_GRID` lattice, row by row, where the box lies inside the image and covers no other object's
    centre (added boxes, all of one size, then cover no added centre either)."""
    w, h = (int(v * problem.unit) for v in problem.scene.image_size)
    hw, hh = Fraction(problem.new_size[0], 2), Fraction(problem.new_size[1], 2)
    taken: list[tuple[Num, Num]] = [c for u, c in enumerate(problem.centres) if u not in choice.removed]
    out: dict[int, tuple[Num, Num]] = {}
    spots = [(Fraction(w * (2 * i + 1), 2 * FREE_GRID), Fraction(h * (2 * j + 1), 2 * FREE_GRID))
             for j in range(FREE_GRID) for i in range(FREE_GRID)]
    for x in choice.added:
        free = (c for c in spots if hw <= c[0] <= w - hw and hh <= c[1] <= h - hh
                and all(abs(c[0] - ox) > hw or abs(c[1] - oy) > hh for ox, oy in taken))
        spot = next(free, None)
        if spot is None:
            return None
        out[x] = spot
        taken.append(spot)
    return out


def boxes(problem: Problem, choice: Choice) -> dict[int, Box] | None:
    """Float boxes of the moved and added objects, or None when they cannot all be placed."""
    centres = place(problem, choice) if problem.scene.domain.ordered else free_boxes(problem, choice)
    if centres is None:
        return None
    return {x: float_box(*(problem.pixels(v) for v in (cx, cy, *_size(problem, x)))) for x, (cx, cy) in centres.items()}


__all__ = ["ALTERNATIVES", "FREE_GRID", "boxes", "float_box", "free_boxes", "place"]
