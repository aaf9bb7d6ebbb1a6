"""The exact geometry under repairs (`logicval_hf.repairs.lattice`, `realise.float_box`) against checks point by
point."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.repairs.lattice import Axis, box_class, faces
from logicval_hf.repairs.realise import float_box

coords = st.integers(min_value=0, max_value=96)
centres = st.lists(st.tuples(coords, coords), min_size=0, max_size=6)
halves = st.integers(min_value=1, max_value=24)


def _covered(x: Fraction, y: Fraction, hw: int, hh: int, cs: list[tuple[int, int, int]]) -> int:
    return sum(1 << u for u, cx, cy in cs if abs(x - cx) <= hw and abs(y - cy) <= hh)


@settings(max_examples=200, deadline=None)
@given(centres, halves, st.lists(st.fractions(min_value=0, max_value=96), min_size=1, max_size=20))
def test_every_coordinate_lies_in_one_face_with_the_centres_it_covers(cs, half, probes):
    axis = Axis.of("x", 96, [c for c, _ in cs])
    obstacles = [(u, c, half) for u, (c, _) in enumerate(cs)]
    fs = faces(axis, half, obstacles)
    for x in probes:
        inside = [f for f in fs if f.lo == x == f.hi or f.lo < x < f.hi]
        if not half <= x <= 96 - half:
            assert not inside  # the box would leave the image
            continue
        assert len(inside) == 1
        f = inside[0]
        assert f.mask == sum(1 << u for u, c, r in obstacles if abs(x - c) <= r)
        assert f.piece == axis.piece_of(x)


@settings(max_examples=200, deadline=None)
@given(centres, st.fractions(min_value=0, max_value=96))
def test_a_position_is_a_point_exactly_on_a_centre_or_the_midline(cs, x):
    axis = Axis.of("x", 96, [c for c, _ in cs])
    p = axis.piece_of(x)
    lo, hi = axis.interval(p)
    if p % 2:
        assert lo == hi == x and (x in [c for c, _ in cs] or x == 48)
    else:
        assert (lo is None or lo < x) and (hi is None or x < hi)
    assert axis.side(p) == int(x >= 48)


@settings(max_examples=100, deadline=None)
@given(centres, halves, halves, st.lists(st.tuples(st.fractions(0, 96), st.fractions(0, 96)), max_size=30))
def test_a_cell_is_blocked_exactly_when_no_point_of_it_is_free(cs, hw, hh, probes):
    xa, ya = Axis.of("x", 96, [c[0] for c in cs]), Axis.of("y", 96, [c[1] for c in cs])
    indexed = [(u, cx, cy) for u, (cx, cy) in enumerate(cs)]
    cls = box_class(xa, ya, 2 * hw, 2 * hh, indexed)
    xs, ys = cls.fits
    # every point the box fits at: a free one never lies in a blocked cell, a covering one covers an option's superset
    for x, y in probes:
        if not (hw <= x <= 96 - hw and hh <= y <= 96 - hh):
            continue
        cell = (xa.piece_of(x), ya.piece_of(y))
        assert cell[0] in xs and cell[1] in ys
        mask = _covered(x, y, hw, hh, indexed)
        if cell in cls.blocked:
            assert mask and any(opt & mask == opt for opt in cls.blocked[cell])
        # the middles of the faces of a blocked cell cover each option's centres at least
    for (p, q), options in cls.blocked.items():
        for fx in (f for f in cls.xfaces if f.piece == p):
            for fy in (f for f in cls.yfaces if f.piece == q):
                got = _covered(Fraction(fx.lo + fx.hi, 2), Fraction(fy.lo + fy.hi, 2), hw, hh, indexed)
                assert got and any(opt & got == opt for opt in options)


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 1000), st.floats(0, 1000), st.floats(0.5, 200), st.floats(0.5, 200))
def test_a_placed_box_has_exactly_the_centre_asked_for(dx, dy, w, h):
    cx, cy = w / 2 + dx, h / 2 + dy  # a box inside the image: its centre at least half its size from the edge
    x0, y0, x1, y1 = float_box(Fraction(cx), Fraction(cy), Fraction(w), Fraction(h))
    assert ((x0 + x1) / 2, (y0 + y1) / 2) == (cx, cy)
    assert abs((x1 - x0) - w) <= 1e-9 * max(1, w) and abs((y1 - y0) - h) <= 1e-9 * max(1, h)
