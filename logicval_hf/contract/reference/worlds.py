"""Worlds the reference interpreter reads: the `World` protocol, and `AbstractWorld` (explicit attribute dicts and
relation facts) with the CLEVR geometry of docs/regions.md (two strict total orders, four regions).

The vocabulary of docs/regions.md is kept here on purpose: this package must not share code with the encoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from logicval_hf.contract.catalog import Domain, load_catalog

__all__ = ["AbstractWorld", "World"]

#: relation -> (axis, direction): ``rel(a, b)`` iff ``rank_axis(a) < rank_axis(b)`` (direction +1) or ``>`` (-1),
#: where ranks go left-to-right on x and back-to-front on y (docs/regions.md §3).
_REL_AXIS: dict[str, tuple[str, int]] = {"left": ("x", +1), "right": ("x", -1), "behind": ("y", +1), "front": ("y", -1)}
#: region name -> (column, row) (docs/regions.md §2: column 0 = left, row 0 = back).
_REGION_CELL: dict[str, tuple[int, int]] = {"r0": (0, 0), "r1": (1, 0), "r2": (0, 1), "r3": (1, 1)}
_CELL_REGION: dict[tuple[int, int], str] = {v: k for k, v in _REGION_CELL.items()}
#: the attribute derived from geometry (docs/regions.md §6); every other attribute is chosen freely per object.
_REGION = "region"


class World(Protocol):
    """What the evaluator needs from a scene: its size, attribute values (region included) and relation facts."""

    def __len__(self) -> int: ...
    def attribute(self, i: int, prop: str) -> str: ...
    def holds(self, rel: str, a: int, b: int) -> bool: ...


# ---------------------------------------------------------------------------------------------------------------
# Abstract worlds
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AbstractWorld:
    """A world given explicitly: one attribute dict per object and the set of true ``(rel, a, b)`` facts.

    Nothing is derived: a relation holds iff its fact is listed, so ties (no fact either way) and even
    inadmissible worlds can be written. `from_orders` builds the facts of two strict total orders.
    """

    objects: tuple[Mapping[str, str], ...]
    relations: frozenset[tuple[str, int, int]] = field(default_factory=frozenset)

    def __len__(self) -> int:
        return len(self.objects)

    def attribute(self, i: int, prop: str) -> str:
        return self.objects[i][prop]

    def holds(self, rel: str, a: int, b: int) -> bool:
        return (rel, a, b) in self.relations

    @classmethod
    def from_orders(
        cls, objects: Sequence[Mapping[str, str]], x_order: Sequence[int] | None = None,
        y_order: Sequence[int] | None = None,
    ) -> AbstractWorld:
        """Facts of two strict total orders: ``x_order`` lists objects left to right, ``y_order`` back to front
        (default: by index). Regions are not derived; put them in ``objects`` yourself."""
        n = len(objects)
        xs = list(range(n)) if x_order is None else list(x_order)
        ys = list(range(n)) if y_order is None else list(y_order)
        if sorted(xs) != list(range(n)) or sorted(ys) != list(range(n)):
            raise ValueError("x_order and y_order must be permutations of the object indices")
        return cls(tuple(dict(o) for o in objects), _order_facts({"x": _ranks(xs), "y": _ranks(ys)}))

    @classmethod
    def from_world(cls, world: World, attributes: Iterable[str]) -> AbstractWorld:
        """Snapshot any world (e.g. a `Scene`): the listed attributes of every object and all relation facts."""
        n = len(world)
        attrs = list(attributes)
        objs = tuple({a: world.attribute(i, a) for a in attrs} for i in range(n))
        facts = frozenset(
            (r, a, b) for r in _REL_AXIS for a in range(n) for b in range(n) if a != b and world.holds(r, a, b)
        )
        return cls(objs, facts)

    # -- admissibility (docs/regions.md §5) ---------------------------------------------------------------------------
    def axis_ranks(self) -> dict[str, list[int]] | None:
        """Ranks on each axis if both axes are strict total orders with their inverses; else None."""
        n = len(self)
        out: dict[str, list[int]] = {}
        for axis, (fwd, bwd) in (("x", ("left", "right")), ("y", ("behind", "front"))):
            for a in range(n):
                if self.holds(fwd, a, a) or self.holds(bwd, a, a):
                    return None
                for b in range(n):
                    if a != b and (self.holds(fwd, a, b) == self.holds(fwd, b, a)
                                   or self.holds(fwd, a, b) != self.holds(bwd, b, a)):
                        return None  # not total/antisymmetric, or the inverse is wrong
            # a tournament is transitive iff its out-degrees are 0..n-1; the rank is the number of predecessors
            ranks = [sum(self.holds(fwd, b, a) for b in range(n)) for a in range(n)]
            if sorted(ranks) != list(range(n)):
                return None
            out[axis] = ranks
        return out

    def is_admissible(self, domain: Domain | None = None) -> bool:
        """docs/regions.md §5: one value per attribute from the domain, total orders, regions consistent with them."""
        domain = domain or load_catalog().domain
        for o in self.objects:
            for prop, values in domain.attributes.items():
                if o.get(prop) not in values:
                    return False
        ranks = self.axis_ranks()
        if ranks is None:
            return False
        n = len(self)
        for a in range(n):
            for b in range(n):
                ca, ra = _REGION_CELL[self.attribute(a, _REGION)]
                cb, rb = _REGION_CELL[self.attribute(b, _REGION)]
                if ca < cb and not ranks["x"][a] < ranks["x"][b]:
                    return False
                if ra < rb and not ranks["y"][a] < ranks["y"][b]:
                    return False
        return True

    def to_scene(self, image_size: tuple[float, float] = (480, 320)) -> Any:
        """A `Scene` whose box centres realise this admissible world exactly (regions, both orders)."""
        from logicval_hf.contract.scene import Scene, SceneObject  # local: scene.py is only needed for this conversion

        ranks = self.axis_ranks()
        if ranks is None:
            raise ValueError("to_scene needs strict total orders on both axes")
        w, h = image_size
        n = len(self)
        cells = [_REGION_CELL[self.attribute(i, _REGION)] for i in range(n)]
        centre = [[0.0, 0.0] for _ in range(n)]
        for k, (axis, size) in enumerate((("x", w), ("y", h))):
            for half in (0, 1):
                members = sorted((i for i in range(n) if cells[i][k] == half), key=lambda i: ranks[axis][i])
                for j, i in enumerate(members):  # evenly spaced strictly inside that half of the image
                    centre[i][k] = half * size / 2 + (j + 1) * (size / 2) / (len(members) + 1)
        domain = load_catalog().domain
        objs = []
        for i in range(n):
            cx, cy = centre[i]
            attrs = {p: self.attribute(i, p) for p in domain.perceived_attributes}
            objs.append(SceneObject(attrs, (cx - 2.0, cy - 2.0, cx + 2.0, cy + 2.0)))
        return Scene((w, h), tuple(objs), domain)


def _ranks(order: Sequence[int]) -> list[int]:
    ranks = [0] * len(order)
    for pos, obj in enumerate(order):
        ranks[obj] = pos
    return ranks


def _order_facts(ranks: Mapping[str, Sequence[int]]) -> frozenset[tuple[str, int, int]]:
    n = len(next(iter(ranks.values()))) if ranks else 0
    facts = set()
    for rel, (axis, d) in _REL_AXIS.items():
        r = ranks[axis]
        for a in range(n):
            for b in range(n):
                if a != b and (r[a] < r[b] if d > 0 else r[a] > r[b]):
                    facts.add((rel, a, b))
    return frozenset(facts)
