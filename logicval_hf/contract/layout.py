"""Bounding boxes for an abstract scene (regions + two orders), so that docs/regions.md §6 gives them back.

Objects in the left column get centres in (0, W/2), those in the right column in (W/2, W), spaced evenly in
x-order within their column; the same for rows on y. No centre lies on a midline and no two share a
coordinate, so regions and both orders come back exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spatial import region_cell


def _positions(order: Sequence[int], halves: Mapping[int, int], extent: float) -> dict[int, float]:
    """Coordinates along one axis: objects listed in order, each half (0 / 1) filled evenly."""
    out: dict[int, float] = {}
    for half in (0, 1):
        members = [i for i in order if halves[i] == half]
        for k, i in enumerate(members):
            out[i] = (half + (k + 1) / (len(members) + 1)) * extent / 2
    return out


def layout_scene(
    attributes: Sequence[Mapping[str, str]],
    regions: Sequence[str],
    x_order: Sequence[int],
    y_order: Sequence[int],
    image_size: tuple[float, float] = (480, 320),
) -> Scene:
    """A `Scene` whose boxes realise the given regions, x-order (left to right) and y-order (back to front).

    Raises:
        ValueError: if the orders contradict the regions (a right-column object before a left-column one).
    """
    w, h = image_size
    n = len(attributes)
    cols = {i: region_cell(regions[i])[0] for i in range(n)}
    rows = {i: region_cell(regions[i])[1] for i in range(n)}
    for order, cells, axis in ((x_order, cols, "x"), (y_order, rows, "y")):
        seen_second = False
        for i in order:
            if cells[i] == 1:
                seen_second = True
            elif seen_second:
                raise ValueError(f"{axis}-order contradicts the regions at object {i}")
    xs, ys = _positions(x_order, cols, w), _positions(y_order, rows, h)
    # Half-size: small against the spacing on either axis, so boxes stay readable.
    hx = min(w / 2 / (max(sum(1 for c in cols.values() if c == k) for k in (0, 1)) + 1) / 2.5, w / 16)
    hy = min(h / 2 / (max(sum(1 for r in rows.values() if r == k) for k in (0, 1)) + 1) / 2.5, h / 16)
    objs = tuple(
        SceneObject(dict(attributes[i]), (xs[i] - hx, ys[i] - hy, xs[i] + hx, ys[i] + hy)) for i in range(n)
    )
    return Scene((w, h), objs)
