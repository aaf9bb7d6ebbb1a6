"""Minimal repair by brute force, without clingo: the independent reference for `logicval_hf.repair`.

Written from the issue's cost model and docs/regions.md alone (no code of the repair package, no ASP): a scene is a list
of objects with box centres and sizes; relations are strict centre orders, regions the quadrant of the centre (a
centre on a midline goes right / front); the spec is evaluated by the clingo-free interpreter
(`logicval_hf.contract.reference.spec_holds`). Every set of at most two edits is tried, moves and additions on a
lattice of centres (two moves or additions together on every other point of it); an edit set is legal when every
moved or added object's box lies inside the image and covers no other object's centre (edges included), a moved
object keeps its size and an added one takes the input's median size (a share of the shorter side for an empty
scene). New values are the ones the spec names and one other (the others look alike to it); scenes that look alike
to the spec (the same values it names, regions if it reads them, orders on the axes of its relations) are
evaluated once.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from logicval_hf.contract.reference import spec_holds
from logicval_hf.contract.spec import AttrLit, RelLit, Spec

W, H = 480, 320
#: centres a moved or added object may take (the input scenes of the tests sit on every other point)
LATTICE_X = tuple(range(40, 480, 40))
LATTICE_Y = tuple(range(40, 320, 40))
#: the centres two moves or additions take together (a coarser lattice keeps the pairs few)
COARSE = {(x, y) for x in LATTICE_X[::2] for y in LATTICE_Y[::2]}
ATTRIBUTES = {"color": ("gray", "red", "blue", "green", "brown", "cyan", "purple", "yellow"),
              "shape": ("cube", "sphere", "cylinder"), "material": ("rubber", "metal")}
REL = {"left": (0, -1), "right": (0, 1), "behind": (1, -1), "front": (1, 1)}


@dataclass(frozen=True)
class Obj:
    attrs: tuple[tuple[str, str], ...]
    cx: float
    cy: float
    w: float
    h: float

    def value(self, a: str) -> str:
        return dict(self.attrs)[a]

    def region(self) -> str:
        return f"r{2 * int(self.cy >= H / 2) + int(self.cx >= W / 2)}"


class World:
    """The interpreter's view of a list of objects."""

    def __init__(self, objs: Sequence[Obj]):
        self.objs = objs

    def __len__(self) -> int:
        return len(self.objs)

    def attribute(self, i: int, prop: str) -> str:
        return self.objs[i].region() if prop == "region" else self.objs[i].value(prop)

    def holds(self, rel: str, a: int, b: int) -> bool:
        k, sign = REL[rel]
        pa, pb = (self.objs[a].cx, self.objs[a].cy), (self.objs[b].cx, self.objs[b].cy)
        return a != b and sign * (pa[k] - pb[k]) > 0


def objects_of(scene: Mapping[str, Any]) -> list[Obj]:
    out = []
    for o in scene["objects"]:
        x0, y0, x1, y1 = o["bbox"]
        out.append(Obj(tuple((a, o[a]) for a in ATTRIBUTES), (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0))
    return out


def legal(objs: Sequence[Obj], placed: Sequence[int]) -> bool:
    """Every placed object's box inside the image, covering no other object's centre."""
    for i in placed:
        o = objs[i]
        if o.cx - o.w / 2 < 0 or o.cx + o.w / 2 > W or o.cy - o.h / 2 < 0 or o.cy + o.h / 2 > H:
            return False
        for j, p in enumerate(objs):
            if j != i and abs(p.cx - o.cx) <= o.w / 2 and abs(p.cy - o.cy) <= o.h / 2:
                return False
    return True


def _values(spec: Spec, attribute: str) -> list[str]:
    """The values a repair may need: the ones the spec names and one other (all others look alike to it)."""
    named = {v.value for c in spec.constraints for v in c.params.values()
             if isinstance(v, AttrLit) and v.prop == attribute}
    others = [v for v in ATTRIBUTES[attribute] if v not in named]
    return [v for v in ATTRIBUTES[attribute] if v in named] + others[:1]


def _reads(spec: Spec) -> tuple[dict[str, set[str]], set[int], bool]:
    """What the spec's literals read: values by attribute, the axes of its relations, whether regions."""
    values: dict[str, set[str]] = {}
    axes: set[int] = set()
    for c in spec.constraints:
        for v in c.params.values():
            if isinstance(v, AttrLit):
                values.setdefault(v.prop, set()).add(v.value)
            elif isinstance(v, RelLit):
                axes.add(REL[v.rel][0])
    return values, axes, "region" in values


def _look(objs: Sequence[Obj], reads: tuple[dict[str, set[str]], set[int], bool]) -> tuple:
    """What the spec can read of a scene: the values it names (any other value alike), the regions if it reads
    them, the orders on the axes of its relations."""
    values, axes, regions = reads
    named = [dict(o.attrs) for o in objs]
    out: list[tuple] = [tuple(tuple(d[a] if d[a] in vals else "*" for a, vals in values.items() if a != "region")
                              + ((o.region(),) if regions else ()) for o, d in zip(objs, named, strict=True))]
    for k in sorted(axes):
        out.append(tuple(((o.cx, o.cy)[k] > (p.cx, p.cy)[k]) - ((o.cx, o.cy)[k] < (p.cx, p.cy)[k])
                         for o in objs for p in objs))
    return tuple(out)


Edit = tuple  # ("set", i, attribute, value) | ("remove", i) | ("move", i, cx, cy) | ("add", attrs, cx, cy)


def single_edits(spec: Spec, objs: Sequence[Obj]) -> Iterator[Edit]:
    for i, o in enumerate(objs):
        for a in ATTRIBUTES:
            for v in _values(spec, a):
                if v != o.value(a):
                    yield ("set", i, a, v)
        yield ("remove", i)
        for cx, cy in itertools.product(LATTICE_X, LATTICE_Y):
            if (cx, cy) != (o.cx, o.cy):
                yield ("move", i, cx, cy)
    for combo in itertools.product(*(_values(spec, a) for a in ATTRIBUTES)):
        for cx, cy in itertools.product(LATTICE_X, LATTICE_Y):
            yield ("add", tuple(zip(ATTRIBUTES, combo, strict=True)), cx, cy)


def new_size(objs: Sequence[Obj]) -> tuple[float, float]:
    if not objs:
        return min(W, H) / 8, min(W, H) / 8
    return statistics.median(o.w for o in objs), statistics.median(o.h for o in objs)


def _delta(e: Edit) -> int:
    return {"add": 1, "remove": -1}.get(e[0], 0)


def _geometric(e: Edit) -> bool:
    return e[0] in ("move", "add")


def apply(objs: Sequence[Obj], edits: Sequence[Edit], size: tuple[float, float]) -> tuple[list[Obj], list[int]]:
    """The edited scene (removed objects dropped, added ones last) and the indices of placed objects in it."""
    out: list[Obj | None] = list(objs)
    placed: set[int] = set()
    added: list[Obj] = []
    for e in edits:
        if e[0] == "set":
            o = out[e[1]]
            assert o is not None
            out[e[1]] = replace(o, attrs=tuple((a, e[3] if a == e[2] else v) for a, v in o.attrs))
        elif e[0] == "remove":
            out[e[1]] = None
        elif e[0] == "move":
            o = out[e[1]]
            assert o is not None
            out[e[1]] = replace(o, cx=e[2], cy=e[3])
            placed.add(e[1])
        else:
            added.append(Obj(e[1], e[2], e[3], *size))
    kept = [(i, o) for i, o in enumerate(out) if o is not None]
    index = {i: k for k, (i, _) in enumerate(kept)}
    final = [o for _, o in kept] + added
    return final, [index[i] for i in placed if i in index] + list(range(len(kept), len(final)))


def _compatible(a: Edit, b: Edit) -> bool:
    """Two edits that make a repair together (not the same change twice, nothing after a removal)."""
    if a[0] == "add" or b[0] == "add":
        return True
    if a[1] != b[1]:
        return True
    if "remove" in (a[0], b[0]) or a[0] == b[0] == "move":
        return False
    return not (a[0] == b[0] == "set" and a[2] == b[2])


def min_repair(spec: Spec, scene: Mapping[str, Any], label: str, count: str = "strict",
               costs: Mapping[str, int] | None = None, max_cost: int = 2) -> tuple[int | None, list[Edit]]:
    """The least cost of a legal edit set of at most two edits that makes the scene satisfy the spec (None when
    none costs at most ``max_cost``), and one such set."""
    weight = {"set": 1, "move": 1, "add": 1, "remove": 1, **(costs or {})}
    objs = objects_of(scene)
    if label == "UNSAT":
        return weight["remove"] * len(objs), [("remove", i) for i in range(len(objs))]
    size = new_size(objs)
    reads = _reads(spec)
    seen: dict[tuple, bool] = {}

    def good(edits: Sequence[Edit]) -> bool:
        if count == "strict" and len(objs) + sum(_delta(e) for e in edits) != spec.n:
            return False
        final, placed = apply(objs, edits, size)
        if not legal(final, placed):
            return False
        if count == "strict" and len(final) != spec.n:
            return False
        key = _look(final, reads)
        if key not in seen:
            seen[key] = spec_holds(spec, World(final), count)
        return seen[key]

    if good([]):
        return 0, []
    singles = list(single_edits(spec, objs))
    best: tuple[int, list[Edit]] | None = None
    for e in singles:
        c = weight[e[0]]
        if c <= max_cost and (best is None or c < best[0]) and good([e]):
            best = (c, [e])
    if best is not None and best[0] <= 2 * min(weight.values()):
        return best
    plain = [e for e in singles if not _geometric(e)]
    placed = [e for e in singles if _geometric(e)]
    coarse = [e for e in placed if (e[-2], e[-1]) in COARSE]
    pairs = itertools.chain(itertools.combinations(plain, 2), itertools.product(plain, placed),
                            itertools.combinations(coarse, 2))
    for a, b in pairs:
        c = weight[a[0]] + weight[b[0]]
        if c > max_cost or (best is not None and c >= best[0]) or not _compatible(a, b):
            continue
        if count == "strict" and len(objs) + _delta(a) + _delta(b) != spec.n:
            continue
        if good([a, b]):
            best = (c, [a, b])
    return (best[0], best[1]) if best is not None else (None, [])
