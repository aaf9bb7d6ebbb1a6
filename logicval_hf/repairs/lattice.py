"""Where a moved or added object can go in a centre-order domain (CLEVR), exactly.

Relations and regions depend only on where a box centre lies relative to the other centres and to the midlines.
So each axis is cut at the input's centre coordinates and at the midline (the *points*, odd positions) into open
intervals between them (the *gaps*, even positions): wherever in one gap a centre lies, it has the same relations
to every input object and the same region. A moved or added object also needs a box inside the image and covering
no other object's centre; on one axis that rules out the coordinates within half its box of a centre, so each axis
is cut again at every ``centre ± half size`` (*faces*, constant in every respect), and a cell (gap or point on x
times gap or point on y) is free when some face pair in it covers no centre, else *blocked* with the minimal sets
of centres some point covers (those objects must then move or go).

Arithmetic is exact: coordinates are integers in units of ``1 / unit`` pixel (`units`: the floats of a scene are
binary fractions, so one unit fits all of them, with room to halve), or fractions where an object is placed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

Box = tuple[float, float, float, float]
#: an exact coordinate: an integer number of units, or a fraction of one
Num = int | Fraction


def units(values: Iterable[float]) -> int:
    """Units per pixel in which every value (and its half, and the midpoint of two) is an integer."""
    return 4 * max((Fraction(v).denominator for v in values), default=1)


@dataclass(frozen=True)
class Axis:
    """One axis: its extent and its points (sorted distinct input centre coordinates and the midline)."""

    name: str
    extent: int
    points: tuple[int, ...]

    @classmethod
    def of(cls, name: str, extent: int, centres: Sequence[int]) -> Axis:
        return cls(name, extent, tuple(sorted({*centres, extent // 2})))

    @property
    def pieces(self) -> int:
        return 2 * len(self.points) + 1

    def piece_of(self, value: Num, twice: bool = False) -> int:
        """The position of a coordinate (of twice it, with ``twice``): ``2i + 1`` on point i, ``2i`` in the gap just
        before point i."""
        k = 2 if twice else 1
        lo, hi = 0, len(self.points)
        while lo < hi:  # first point >= value
            mid = (lo + hi) // 2
            if k * self.points[mid] < value:
                lo = mid + 1
            else:
                hi = mid
        return 2 * lo + 1 if lo < len(self.points) and k * self.points[lo] == value else 2 * lo

    def interval(self, piece: int) -> tuple[int | None, int | None]:
        """Bounds of a position: ``(v, v)`` for a point, the open gap's ends otherwise (None: unbounded)."""
        i = piece // 2
        if piece % 2:
            return self.points[i], self.points[i]
        return (self.points[i - 1] if i > 0 else None), (self.points[i] if i < len(self.points) else None)

    def side(self, piece: int) -> int:
        """Region column (x) or row (y) of a position: 1 from the midline on (docs/regions.md §6)."""
        lo, _ = self.interval(piece)  # the midline is a point, so a gap lies on one side of it
        return int(lo is not None and 2 * lo >= self.extent)


@dataclass(frozen=True)
class Face:
    """A piece of an axis for one box size: a point (``lo == hi``) or an open interval, where the box lies inside
    the image and covers the same centres (bit u of ``mask``: input object u)."""

    piece: int
    lo: Num
    hi: Num
    mask: int

    def pick(self, ideal: Num) -> Num:
        """A coordinate of the face: the ideal one where it lies well inside (an eighth of the face from either
        end, so that rounding to a float keeps it inside), else the middle."""
        margin = Fraction(self.hi - self.lo, 8)
        return ideal if self.lo + margin < ideal < self.hi - margin else Fraction(self.lo + self.hi, 2)


def faces(axis: Axis, half: Num, obstacles: Sequence[tuple[int, Num, Num]], cuts: Sequence[Num] = ()) -> list[Face]:
    """The faces of an axis for a box of half-size ``half`` (its centre within ``[half, extent - half]``).

    ``obstacles`` ``(bit, coordinate, reach)``: a centre within ``reach`` of the coordinate sets the bit (a centre
    the box covers has ``reach = half``; a box that covers the centre, its own half-size); ``cuts``: more
    coordinates to cut at (other objects' new centres, so that every face lies on one side of each)."""
    lo, hi = half, axis.extent - half
    if lo > hi:
        return []
    marks_set: set[Num] = {lo, hi, *axis.points, *cuts}
    for _, c, reach in obstacles:
        marks_set.update((c - reach, c + reach))
    marks = sorted(v for v in marks_set if lo <= v <= hi)
    spans = [(v, v) for v in marks] + list(itertools.pairwise(marks))
    out = []
    for a, b in spans:
        twice: Num = a + b  # twice the face's middle: integers stay integers
        mask = 0
        for bit, c, reach in obstacles:
            if -2 * reach <= twice - 2 * c <= 2 * reach:
                mask |= 1 << bit
        out.append(Face(axis.piece_of(twice, twice=True), a, b, mask))
    return out


@dataclass(frozen=True)
class BoxClass:
    """A box size and where a box of it can go: the faces on each axis, the pieces it fits, the blocked cells."""

    width: int
    height: int
    xfaces: tuple[Face, ...]
    yfaces: tuple[Face, ...]
    blocked: dict[tuple[int, int], tuple[int, ...]]  # cell -> minimal masks of centres covered

    @property
    def fits(self) -> tuple[set[int], set[int]]:
        return {f.piece for f in self.xfaces}, {f.piece for f in self.yfaces}


def box_class(xaxis: Axis, yaxis: Axis, width: int, height: int, centres: Sequence[tuple[int, int, int]]) -> BoxClass:
    """Where a box of ``width`` x ``height`` can go among ``centres`` ``(u, cx, cy)`` (the ones it must not cover)."""
    xf = faces(xaxis, width // 2, [(u, cx, width // 2) for u, cx, _ in centres])
    yf = faces(yaxis, height // 2, [(u, cy, height // 2) for u, _, cy in centres])
    xmasks: dict[int, set[int]] = {}
    ymasks: dict[int, set[int]] = {}
    for f in xf:
        xmasks.setdefault(f.piece, set()).add(f.mask)
    for f in yf:
        ymasks.setdefault(f.piece, set()).add(f.mask)
    # only cells where neither axis alone has a face covering nothing can be blocked
    tight_x = [(p, m) for p, m in xmasks.items() if 0 not in m]
    tight_y = [(q, m) for q, m in ymasks.items() if 0 not in m]
    blocked: dict[tuple[int, int], tuple[int, ...]] = {}
    for p, am in tight_x:
        for q, bm in tight_y:
            covered = {a & b for a in am for b in bm}
            if 0 in covered:
                continue
            minimal = sorted(m for m in covered if not any(o != m and o & m == o for o in covered))
            blocked[(p, q)] = tuple(minimal)
    return BoxClass(width, height, tuple(xf), tuple(yf), blocked)


def exact_box(box: Box, unit: int) -> tuple[int, int, int, int]:
    """A box's centre and size in units ``(cx, cy, w, h)``; the centre is the one a `Scene` computes (in floating
    point), since that is what decides its relations."""
    x0, y0, x1, y1 = box
    return (int(Fraction((x0 + x1) / 2) * unit), int(Fraction((y0 + y1) / 2) * unit),
            int((Fraction(x1) - Fraction(x0)) * unit), int((Fraction(y1) - Fraction(y0)) * unit))
