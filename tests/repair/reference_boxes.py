"""Minimal repair by brute force in a box-geometry domain (COCO), without clingo: the reference for the box repairs
of `logicval_hf.repair` over the same candidate boxes (`BoxRoom.offered`: where each object may move, where an
added object may go).

Written from the cost model of docs/repair.md alone: every set of at most two edits is tried (new values: the ones
the spec names and one other; removals; moves and additions to every candidate box), except that two moves or
additions together take every other one of the moves and of the additions of the first size only; an edit set is
legal when every moved or added box covers no other object's centre, but where the spec reads containment the
centre of an object inside it and smaller. The edited scene is a `Scene` evaluated by the clingo-free interpreter
(`logicval_hf.contract.reference.spec_holds`); scenes that look alike to the spec (the values it names, the
relations it reads between every two objects, the confidence ranks) are evaluated once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from logicval_hf.contract.reference import spec_holds
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import AttrLit, RelLit, Spec

Box = tuple[float, float, float, float]
Edit = tuple  # ("set", i, attribute, value) | ("remove", i) | ("move", i, box) | ("add", values, box)


def reads(spec: Spec) -> tuple[dict[str, set[str]], set[str]]:
    """The values (by attribute) and the relations the spec's parameters name."""
    values: dict[str, set[str]] = {}
    rels: set[str] = set()
    for c in spec.constraints:
        for v in c.params.values():
            if isinstance(v, AttrLit):
                values.setdefault(v.prop, set()).add(v.value)
            elif isinstance(v, RelLit):
                rels.add(v.rel)
    return values, rels


def values_offered(spec: Spec, scene: Scene, attribute: str) -> list[str]:
    named = reads(spec)[0].get(attribute, set())
    domain = scene.domain.attributes[attribute]
    return [v for v in domain if v in named] + [v for v in domain if v not in named][:1]


def _centre(b: Sequence[float]) -> tuple[float, float]:
    return (b[0] + b[2]) / 2, (b[1] + b[3]) / 2


def _size(b: Sequence[float] | None) -> tuple[float, float] | None:
    return None if b is None else (round(b[2] - b[0], 6), round(b[3] - b[1], 6))


def legal(scene: Scene, placed: Sequence[int], nest: bool) -> bool:
    """Every placed box covers no other object's centre (edges included), but with ``nest`` the centre of an object
    that lies inside it and is smaller."""
    objs = scene.objects
    for i in placed:
        a = objs[i].bbox
        for j, o in enumerate(objs):
            if j == i:
                continue
            cx, cy = _centre(o.bbox)
            covered = a[0] <= cx <= a[2] and a[1] <= cy <= a[3]
            inside = scene.domain.holds("inside", o.bbox, a) and scene.domain.holds("smaller", o.bbox, a)
            if covered and not (nest and inside):
                return False
    return True


class BoxReference:
    """The brute force for one (spec, scene) pair; ``offered(kind)`` gives the candidate boxes."""

    def __init__(self, spec: Spec, scene: Scene, offered, count: str = "relaxed"):
        self.spec, self.scene, self.count = spec, scene, count
        self.offered = offered
        values, rels = reads(spec)
        self.nest = bool(rels & {"inside", "contains"})
        dom = scene.domain
        self.rels = sorted(set(rels) | {dom.rules[r].inverse for r in rels})
        self.values = values
        self.attrs = scene.domain.perceived_attributes
        self.seen: dict[tuple, bool] = {}
        # box pair -> which of the relations read hold: the same few candidate boxes meet again in every edit set
        self._pairs: dict[tuple, tuple[bool, ...]] = {}

    def _between(self, a: Box, b: Box) -> tuple[bool, ...]:
        got = self._pairs.get((a, b))
        if got is None:
            got = self._pairs[(a, b)] = tuple(self.scene.domain.holds(r, a, b) for r in self.rels)
        return got

    def _look(self, scene: Scene) -> tuple:
        n = len(scene)
        vals = tuple(tuple(o.attributes[a] if o.attributes[a] in self.values.get(a, ()) else "*" for a in self.attrs)
                     for o in scene.objects)
        boxes = [tuple(o.bbox) for o in scene.objects]
        rels = tuple(self._between(boxes[a], boxes[b]) for a in range(n) for b in range(n) if a != b)
        return vals, rels, tuple(scene.derived("rank"))

    def holds(self, scene: Scene) -> bool:
        key = self._look(scene)
        if key not in self.seen:
            self.seen[key] = spec_holds(self.spec, scene, self.count)
        return self.seen[key]

    def apply(self, edits: Sequence[Edit]) -> tuple[Scene, list[int]] | None:
        """The edited scene and the indices of its placed objects; None for edits that do not make a repair."""
        objs: list[SceneObject | None] = list(self.scene.objects)
        placed: set[int] = set()
        added: list[SceneObject] = []
        for e in edits:
            if e[0] == "add":
                added.append(SceneObject(dict(e[1]), e[2]))
                continue
            o = objs[e[1]]
            if o is None:
                return None
            if e[0] == "remove":
                objs[e[1]] = None
            elif e[0] == "set":
                objs[e[1]] = SceneObject({**o.attributes, e[2]: e[3]}, o.bbox, o.score)
            else:
                objs[e[1]] = SceneObject(o.attributes, e[2], o.score)
                placed.add(e[1])
        kept = [(i, o) for i, o in enumerate(objs) if o is not None]
        index = {i: k for k, (i, _) in enumerate(kept)}
        out = Scene(self.scene.image_size, tuple(o for _, o in kept) + tuple(added), self.scene.domain)
        return out, sorted(index[i] for i in placed) + list(range(len(kept), len(out)))

    def good(self, edits: Sequence[Edit]) -> bool:
        made = self.apply(edits)
        if made is None:
            return False
        scene, placed = made
        if self.count == "strict" and self.spec.n is not None and len(scene) != self.spec.n:
            return False
        return legal(scene, placed, self.nest) and self.holds(scene)

    def singles(self) -> Iterator[Edit]:
        for i, o in enumerate(self.scene.objects):
            for a in self.attrs:
                for v in values_offered(self.spec, self.scene, a):
                    if v != o.attributes[a]:
                        yield ("set", i, a, v)
            yield ("remove", i)
            for box in self.offered(i):
                yield ("move", i, box)
        combos = itertools.product(*(values_offered(self.spec, self.scene, a) for a in self.attrs))
        for combo in combos:
            for box in self.offered("new"):
                yield ("add", tuple(zip(self.attrs, combo, strict=True)), box)

    @staticmethod
    def compatible(a: Edit, b: Edit) -> bool:
        """Two edits that make a repair together: not one change twice, nothing after a removal, one move each."""
        if a[0] == "add" or b[0] == "add" or a[1] != b[1]:
            return True
        if "remove" in (a[0], b[0]) or a[0] == b[0] == "move":
            return False
        return not (a[0] == b[0] == "set" and a[2] == b[2])

    def least(self, max_cost: int = 2) -> int | None:
        """The fewest edits (at most ``max_cost``) that make the scene satisfy the spec, None if none do."""
        if self.good([]):
            return 0
        singles = list(self.singles())
        if any(self.good([e]) for e in singles):
            return 1
        if max_cost < 2:
            return None
        plain = [e for e in singles if e[0] in ("set", "remove")]
        placed = [e for e in singles if e[0] in ("move", "add")]
        size = self.offered("new")[0] if self.offered("new") else None
        coarse = [e for e in placed if e[0] == "move" or _size(e[2]) == _size(size)][::2]
        pairs = itertools.chain(itertools.combinations(plain, 2), itertools.product(plain, placed),
                                itertools.combinations_with_replacement(coarse, 2))
        for a, b in pairs:
            if self.compatible(a, b) and self.good([a, b]):
                return 2
        return None
