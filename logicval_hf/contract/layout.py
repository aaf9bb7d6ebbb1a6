"""Bounding boxes for an abstract scene (regions + two orders), so that docs/regions.md §6 gives them back.

Objects in the left column get centres in (0, W/2), those in the right column in (W/2, W), spaced evenly in
x-order within their column; the same for rows on y. No centre lies on a midline and no two share a
coordinate, so regions and both orders come back exactly. A domain without regions has one column and one row:
centres spread over the whole image.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spatial import region_cell


def _positions(order: Sequence[int], halves: Mapping[int, int], extent: float, parts: int) -> dict[int, float]:
    """Coordinates along one axis: objects listed in order, each of the ``parts`` halves (0 / 1) filled evenly."""
    out: dict[int, float] = {}
    for half in range(parts):
        members = [i for i in order if halves[i] == half]
        for k, i in enumerate(members):
            out[i] = (half + (k + 1) / (len(members) + 1)) * extent / parts
    return out


def layout_scene(
    attributes: Sequence[Mapping[str, str]],
    regions: Sequence[str] | None,
    x_order: Sequence[int],
    y_order: Sequence[int],
    image_size: tuple[float, float] = (480, 320),
    domain: Domain | None = None,
) -> Scene:
    """A `Scene` whose boxes realise the given regions, x-order (left to right) and y-order (back to front).

    Args:
        attributes: each object's perceived attribute values.
        regions: each object's region (``r0``..``r3``), or None in a domain without regions.
        x_order, y_order: the objects from left to right and from back to front.
        image_size: (W, H) of the image.
        domain: the scene's domain (default: the catalog's, CLEVR).
    Returns:
        The scene, in ``domain``.
    Raises:
        ValueError: if the orders contradict the regions (a right-column object before a left-column one).
    """
    w, h = image_size
    n = len(attributes)
    parts = 1 if regions is None else 2
    cols = {i: 0 if regions is None else region_cell(regions[i])[0] for i in range(n)}
    rows = {i: 0 if regions is None else region_cell(regions[i])[1] for i in range(n)}
    for order, cells, axis in ((x_order, cols, "x"), (y_order, rows, "y")):
        seen_second = False
        for i in order:
            if cells[i] == 1:
                seen_second = True
            elif seen_second:
                raise ValueError(f"{axis}-order contradicts the regions at object {i}")
    xs, ys = _positions(x_order, cols, w, parts), _positions(y_order, rows, h, parts)
    # Half-size: small against the spacing on either axis, so boxes stay readable.
    hx = min(w / parts / (max(sum(1 for c in cols.values() if c == k) for k in range(parts)) + 1) / 2.5, w / 16)
    hy = min(h / parts / (max(sum(1 for r in rows.values() if r == k) for k in range(parts)) + 1) / 2.5, h / 16)
    objs = tuple(
        SceneObject(dict(attributes[i]), (xs[i] - hx, ys[i] - hy, xs[i] + hx, ys[i] + hy)) for i in range(n)
    )
    return Scene((w, h), objs) if domain is None else Scene((w, h), objs, domain)
