"""Box placement for box-geometry domains: relations decided as orders, witness boxes built with exact arithmetic.

A box-geometry domain (COCO) decides its relations from boxes: GenEval's offset rule per axis (``left``/``right``,
``above``/``below``), box areas (``smaller``/``larger``) and containment (``inside``/``contains``). Each kind of
geometry is a *family* (``x``, ``y``, ``area``, ``nest``) with one canonical relation (the one from the earlier object
to the later one). Solving a spec that reads relations takes two programs over the order atoms
``before(F,A,B)``:

* ``asp/box_orders.lp``: what every set of boxes obeys (each family transitive; offsets and areas strict; areas a
  weak order; containment both ways is one box twice; a box strictly inside another is smaller). No atoms that obey
  it satisfy the spec: the spec is UNSAT, for real boxes, not for a lattice.
* ``asp/box_placement.lp``: placements whose relations are known exactly (grid ranks in frames, a containment forest,
  nine zones per container). Atoms that one of them gives satisfy the spec: `realise` builds its boxes with
  `fractions.Fraction` arithmetic, checks every relation exactly and in floating point, and the spec is SAT with
  those boxes as its witness.

The two can differ: atoms that obey every order rule but that no placement of ``box_placement.lp`` gives (a
containment that is not a forest, an arrangement the rank grid of `MAX_RANKS` ranks per axis cannot draw). Then
the spec is neither: `undecided` names the limit and the solver raises `SolverLimit`, never a label.
`logicval_hf.asp.box_layout.place_boxes` answers the same question for given relations (what a repair needs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from logicval_hf.contract.domain import Domain, Relation
from logicval_hf.errors import SolverLimit

__all__ = ["MAX_RANKS", "Placement", "check_directional", "exact_holds", "families", "non_positive_relations",
           "placement_facts", "realise", "undecided"]

Box = tuple[Fraction, Fraction, Fraction, Fraction]
FloatBox = tuple[float, float, float, float]

#: ranks per axis of the placement grid (a frame holds at most this many distinct columns and rows)
MAX_RANKS = 12
#: family of each relation kind (an offset's family is its axis)
_KIND_FAMILY = {"box_area": "area", "box_inside": "nest"}
#: zones by the steps from the middle (0 the middle, 1 an axis, 2 a diagonal): (centre offset as a fraction of the
#: container's width or height, extent: the zone's contents fit in a square of that fraction of its shorter side).
#: Small enough that boxes anywhere in two zones relate as the zones do, margins included (axis and diagonal zones
#: at one offset, so that zones two apart on one axis and one on the other stay clear of the rule's 60-degree line)
ZONES = {0: (Fraction(0), Fraction(12, 100)), 1: (Fraction(46, 100), Fraction(4, 100)),
         2: (Fraction(46, 100), Fraction(2, 100))}
#: the same for a container whose contents sit in one zone only: only the container itself must relate to them as
#: the zone says, so the zone can be larger (tests/asp/test_box_geometry.py checks both)
ALONE = {0: (Fraction(0), Fraction(20, 100)), 1: (Fraction(44, 100), Fraction(12, 100)),
         2: (Fraction(48, 100), Fraction(4, 100))}
#: a box's half-size against the spacing of its frame's grid, at the first attempt (halved at every retry)
_BETA = Fraction(1, 5)
_ATTEMPTS = 10
#: areas of successive area ranks shrink at least by this factor (strict, and far above float noise)
_AREA_STEP = Fraction(9, 10)


def families(domain: Domain, relations: Iterable[str]) -> dict[str, str]:
    """Family -> canonical relation, for the families the named relations belong to.

    Raises:
        SolverLimit: the domain declares two relation pairs of one family (placement knows one per family).
    """
    canonical = dict(domain.canonical_relations())
    inverse = {inv: r for r, inv in canonical.items()}
    out: dict[str, str] = {}
    for name in relations:
        first = name if name in canonical else inverse[name]
        rule = domain.rules[first]
        family = rule.axis if rule.kind == "box_offset" else _KIND_FAMILY.get(rule.kind)
        if family is None:
            raise SolverLimit(f"domain {domain.name!r}: relation {first!r} ({rule.kind}) is not a box relation")
        if out.get(family, first) != first:
            raise SolverLimit(f"domain {domain.name!r}: relation {first!r} ({rule.kind}) shares the placement family "
                              f"{family!r} with {out[family]!r}; box placement decides one relation pair per axis, "
                              "area and containment")
        out[family] = first
    return dict(sorted(out.items()))


def non_positive_relations(constraints: Iterable[Any]) -> set[str]:
    """Relations the constraints test anywhere but as plain positive literals outside counts: negated, under a
    negation, or inside a count or sum (whose comparison may ask for fewer pairs)."""
    from logicval_hf.asp.encoding import nnf

    found: set[str] = set()

    def lit_of(ref: Any, params: Mapping[str, Any]) -> Any:
        return params[ref[1:]] if isinstance(ref, str) and ref.startswith("$") else ref

    def walk(node: Any, params: Mapping[str, Any], positive: bool) -> None:
        if not isinstance(node, Mapping):
            if isinstance(node, list):
                for v in node:
                    walk(v, params, positive)
            return
        op = node.get("op")
        if op == "rel":
            lit = lit_of(node["lit"], params)
            negated = lit.get("negated", False) if isinstance(lit, Mapping) else lit.negated
            if negated or not positive:
                found.add(lit["rel"] if isinstance(lit, Mapping) else lit.rel)
            return
        if op == "not" or op in ("count", "sum"):
            positive = False
        for key, v in node.items():
            if key != "lit":
                walk(v, params, positive)

    for c in constraints:
        walk(nnf(c.template.formula), c.params, True)
        if c.template.anti_vacuity is not None:
            walk(nnf(c.template.anti_vacuity), c.params, True)
    return found


def check_directional(domain: Domain, fams: Mapping[str, str], constraints: Iterable[Any]) -> None:
    """Refuse what the order rules cannot decide for GIR-Bench's relation rule (``measure="centre"``): its gate (no
    relation while the centres are closer than a quarter of the two boxes' sizes) makes it intransitive (a small box
    between two wide ones is right of one and left of the other, which are not related), while ``box_orders.lp``
    makes each family transitive. For relations used only positively that never changes a label (spreading the
    centres apart passes every gate and keeps every direction); a spec that tests one otherwise gets no label.

    Raises:
        SolverLimit: naming the relation and the rule.
    """
    gated = {r for f, r in fams.items() if domain.rules[r].measure == "centre"}
    gated |= {domain.rules[r].inverse for r in gated}
    bad = sorted(gated & non_positive_relations(constraints))
    if bad:
        raise SolverLimit(f"spec: it tests {', '.join(bad)} negated or inside a count, but domain {domain.name!r} "
                          "decides it by GIR-Bench's rule, which is not transitive; the solver labels specs that ask "
                          "for such relations to hold, so no label is given")


def _threshold(rule: Relation) -> tuple[int, int]:
    t = Fraction(str(rule.threshold))
    return t.numerator, t.denominator


def placement_facts(domain: Domain, fams: Mapping[str, str], grid: tuple[int, int, bool] | None = None) -> str:
    """Facts for ``box_orders.lp`` and ``box_placement.lp``: the families, their canonical relations, the offset
    thresholds, and for a placement ``grid = (ranks, depth, uniform)`` its grid size, its deepest nesting and whether
    objects of one kind take one place."""
    lines = [" ".join(f"family({f}). canonical({r},{f})." for f, r in fams.items())]
    for f, r in fams.items():
        if f in ("x", "y"):
            p, q = _threshold(domain.rules[r])
            lines.append(f"offset_threshold({f},{p},{q}).")
    if grid is not None:
        lines.append(f"grid_size({grid[0]}). max_depth({grid[1]}).{' uniform.' if grid[2] else ''}")
    return "\n".join(lines) + "\n"


def undecided(spec_families: Mapping[str, str]) -> SolverLimit:
    """The error for a spec whose relations obey every order rule but that no placement of ``box_placement.lp``
    draws: its realisability is not decided exactly."""
    names = ", ".join(f"{r} ({f})" for f, r in spec_families.items())
    return SolverLimit(
        f"spec: the box relations it asks for ({names}) obey every rule of box geometry, but no placement the solver "
        f"builds realises them (containment as a forest, at most {MAX_RANKS} grid ranks per axis and frame); whether "
        "boxes exist is not decided, so no label is given")


# ---------------------------------------------------------------------------------------------------------------
# A placement as the solver chose it
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Placement:
    """The placement atoms of one model: order atoms, copies, containment forest, zones and grid ranks."""

    objects: list[int]
    before: set[tuple[str, int, int]] = field(default_factory=set)
    copy: dict[int, int] = field(default_factory=dict)
    parent: dict[int, int] = field(default_factory=dict)
    zone: dict[int, tuple[int, int]] = field(default_factory=dict)
    at: dict[tuple[str, int], int] = field(default_factory=dict)

    @classmethod
    def from_atoms(cls, objects: Sequence[int], atoms: Iterable[tuple[str, tuple[Any, ...]]]) -> Placement:
        """From ``(name, arguments)`` pairs of a model (numbers as ints, constants as strings)."""
        p = cls(sorted(objects))
        for name, args in atoms:
            if name == "before":
                p.before.add((str(args[0]), int(args[1]), int(args[2])))
            elif name == "copy":
                p.copy[int(args[0])] = int(args[1])
            elif name == "parent":
                p.parent[int(args[0])] = int(args[1])
            elif name == "zone":
                p.zone[int(args[0])] = (int(args[1]), int(args[2]))
            elif name == "at":
                p.at[(str(args[0]), int(args[1]))] = int(args[2])
        return p


# ---------------------------------------------------------------------------------------------------------------
# Exact geometry (the domain's rules in rational arithmetic)
# ---------------------------------------------------------------------------------------------------------------
def _frac(v: float | Fraction | int) -> Fraction:
    return v if isinstance(v, Fraction) else Fraction(str(v)) if isinstance(v, float) else Fraction(v)


def exact_holds(rule: Relation, a: Sequence[Fraction], b: Sequence[Fraction]) -> bool:
    """``rule(a, b)`` decided exactly (no rounding): GenEval's offset rule (or GIR-Bench's, ``measure="centre"``)
    with its margin, its threshold and its 1e-3 floor; a strict order of areas; containment with touching edges."""
    if rule.kind == "box_inside":
        inner, outer = (a, b) if rule.sign < 0 else (b, a)
        return inner[0] >= outer[0] and inner[1] >= outer[1] and inner[2] <= outer[2] and inner[3] <= outer[3]
    if rule.kind == "box_area":
        return rule.sign * ((a[2] - a[0]) * (a[3] - a[1]) - (b[2] - b[0]) * (b[3] - b[1])) > 0
    if rule.kind != "box_offset":
        raise SolverLimit(f"relation {rule.name!r}: kind {rule.kind!r} is not a box geometry")
    margin, t = _frac(rule.margin), _frac(rule.threshold)
    dx = (a[0] + a[2] - b[0] - b[2]) / 2
    dy = (a[1] + a[3] - b[1] - b[3]) / 2
    revised = []
    for d, size in ((dx, a[2] - a[0] + b[2] - b[0]), (dy, a[3] - a[1] + b[3] - b[1])):
        r = max(abs(d) - margin * size, Fraction(0))
        revised.append(r if d > 0 else -r)
    if all(abs(r) < Fraction(1, 1000) for r in revised):
        return False
    k = 0 if rule.axis == "x" else 1
    r = rule.sign * (revised[k] if rule.measure == "shrunk" else (dx, dy)[k])  # GIR-Bench: the raw direction
    return r > 0 and r * r > t * t * (dx * dx + dy * dy)


# ---------------------------------------------------------------------------------------------------------------
# Realisation
# ---------------------------------------------------------------------------------------------------------------
#: significant bits kept by `_round` (boxes are built to this precision and then checked exactly)
_BITS = 64


def _round(v: Fraction) -> Fraction:
    """v rounded to `_BITS` significant bits (a dyadic rational), so that numbers stay short through nestings."""
    if v == 0:
        return v
    shift = _BITS - (abs(v.numerator).bit_length() - v.denominator.bit_length())
    scaled = v * (1 << shift) if shift >= 0 else v / (1 << -shift)
    rounded = Fraction(round(scaled))
    return rounded / (1 << shift) if shift >= 0 else rounded * (1 << -shift)


def _sqrt(v: Fraction) -> Fraction:
    """A dyadic rational close to the square root of v > 0 (a side whose square is near an area)."""
    shift = max(0, 2 * _BITS - (v.numerator.bit_length() - v.denominator.bit_length()))
    shift += shift % 2
    side = Fraction(math.isqrt(v.numerator * (1 << shift) // v.denominator), 1 << (shift // 2))
    if side <= 0:
        raise SolverLimit("spec: its witness boxes would be too small for floating point; no label is given")
    return side


class _Builder:
    """Boxes of one placement for one attempt (``shrink`` scales every box against its frame's grid spacing)."""

    def __init__(self, domain: Domain, fams: Mapping[str, str], p: Placement, shrink: Fraction):
        self.domain, self.fams, self.p, self.shrink = domain, fams, p, shrink
        self.offsets = "x" in fams or "y" in fams
        self.originals = [o for o in p.objects if o not in p.copy]  # a copy takes its original's box
        self.zones: dict[int, set[tuple[int, int]]] = {}  # container -> the zones its contents occupy
        for o in self.originals:
            if o in p.parent:
                self.zones.setdefault(p.parent[o], set()).add(p.zone.get(o, (0, 0)))
        self.centre: dict[int, tuple[Fraction, Fraction]] = {}
        self.bound: dict[int, Fraction] = {}
        self.group: dict[int, tuple[Any, ...]] = {}  # coincident objects share a key
        self.size: dict[int, tuple[Fraction, Fraction]] = {}

    def _ranks(self, members: Sequence[int]) -> dict[int, tuple[int, int]]:
        if self.offsets:
            return {o: (self.p.at.get(("x", o), 0), self.p.at.get(("y", o), 0)) for o in members}
        return {o: (k, 0) for k, o in enumerate(members)}  # nothing reads offsets: side by side

    def frame(self, container: int | None, members: Sequence[int], zone: tuple[int, int]) -> None:
        """Centres and half-size bounds of the members of one frame (the image, or a zone of a container)."""
        ranks = self._ranks(members)
        xs, ys = [r[0] for r in ranks.values()], [r[1] for r in ranks.values()]
        span = max(max(xs) - min(xs), max(ys) - min(ys))
        mid = (Fraction(max(xs) + min(xs), 2), Fraction(max(ys) + min(ys), 2))
        if container is None:
            origin, extent = (Fraction(0), Fraction(0)), Fraction(max(span, 1))
        else:
            (cx, cy), (w, h) = self.centre[container], self.size[container]
            alone = len(self.zones.get(container, ())) == 1
            tau, share = (ALONE if alone else ZONES)[abs(zone[0]) + abs(zone[1])]
            origin = (_round(cx + zone[0] * tau * w), _round(cy + zone[1] * tau * h))
            extent = _round((share if self.offsets else Fraction(9, 10)) * min(w, h))
        if container is None:
            spacing = Fraction(1)
            bound = _BETA * self.shrink if span else Fraction(1, 2)
        else:  # within the zone's square, boxes included
            spacing = extent / (span + 1)
            bound = (_BETA * self.shrink if self.offsets else Fraction(45, 100)) * spacing if span else extent / 2
        for o, (i, j) in ranks.items():
            self.centre[o] = (_round(origin[0] + (i - mid[0]) * spacing), _round(origin[1] + (j - mid[1]) * spacing))
            self.bound[o] = _round(bound)
            self.group[o] = (container, zone, i, j)

    def _levels(self) -> list[list[int]]:
        """Objects in the order their boxes are sized, a container before its contents: by falling area rank when
        areas are read (equal ranks get equal areas), else by depth in the containment forest."""
        p = self.p
        if "area" in self.fams:
            key = _area_ranks(p)
            order = sorted({key[o] for o in self.originals}, reverse=True)
        else:
            key = {}
            for o in self.originals:
                d, q = 0, o
                while q in p.parent:
                    d, q = d + 1, p.parent[q]
                key[o] = d
            order = sorted(set(key.values()))
        return [[o for o in self.originals if key[o] == k] for k in order]

    def build(self) -> dict[int, Box]:
        p = self.p
        frames: dict[tuple[int | None, tuple[int, int]], list[int]] = {}
        for o in self.originals:
            frames.setdefault((p.parent.get(o), p.zone.get(o, (0, 0)) if self.offsets else (0, 0)), []).append(o)
        frame_of = {o: key for key, members in frames.items() for o in members}
        areas: dict[int, Fraction] = {}
        above: Fraction | None = None
        for members in self._levels():
            for o in members:
                key = frame_of[o]
                if o not in self.bound:
                    if key[0] is not None and key[0] not in self.size:
                        raise SolverLimit(f"placement: object {o} is laid out before its container")
                    self.frame(key[0], frames[key], key[1])
            if "area" in self.fams:
                area = min(self.bound[o] ** 2 for o in members)
                above = area = _round(area if above is None else min(area, above * _AREA_STEP))
            for o in members:
                areas[o] = area if "area" in self.fams else self.bound[o] ** 2
                if not self._shared(o):
                    side = _sqrt(areas[o])
                    self.size[o] = (side, areas[o] / side)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for o in self.originals:
            groups.setdefault(self.group[o], []).append(o)
        for members in groups.values():
            if len(members) > 1:
                self._antichain(members, areas)
        out = {}
        for o in self.originals:
            (cx, cy), (w, h) = self.centre[o], self.size[o]
            out[o] = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
        for o, original in p.copy.items():
            out[o] = out[original]
        return out

    def _shared(self, o: int) -> bool:
        """Whether another object sits at o's frame point (then its shape is set with theirs, `_antichain`)."""
        return sum(1 for q in self.originals if self.group.get(q) == self.group[o]) > 1

    def _antichain(self, members: list[int], areas: Mapping[int, Fraction]) -> None:
        """Shapes for objects at one point: areas as ranked, none inside another (each wider and flatter than the
        next larger one)."""
        members = sorted(members, key=lambda o: areas[o])
        largest = members[-1]
        side = _sqrt(areas[largest])
        g = len(members)
        for k, o in enumerate(members):
            w = _round(side * (1 + Fraction(g - 1 - k, g)))
            self.size[o] = (w, areas[o] / w)


def _area_ranks(p: Placement) -> dict[int, int]:
    """Each object's area rank: the number of objects with a smaller area (equal areas, equal ranks)."""
    smaller = dict.fromkeys(p.objects, 0)
    for f, _, b in p.before:
        if f == "area":
            smaller[b] += 1
    return smaller


def _fit(boxes: Mapping[int, Box], image_size: Sequence[float]) -> dict[int, Box]:
    """The boxes scaled and moved (relations are unchanged) to fill 90 % of the image around its centre."""
    w, h = (_frac(v) for v in image_size)
    if not boxes:
        return {}
    x0 = min(b[0] for b in boxes.values())
    y0 = min(b[1] for b in boxes.values())
    x1 = max(b[2] for b in boxes.values())
    y1 = max(b[3] for b in boxes.values())
    s = Fraction(9, 10) * min(w / (x1 - x0), h / (y1 - y0))
    ox, oy = (w - s * (x1 - x0)) / 2 - s * x0, (h - s * (y1 - y0)) / 2 - s * y0
    return {o: (ox + s * b[0], oy + s * b[1], ox + s * b[2], oy + s * b[3]) for o, b in boxes.items()}


def _mismatch(domain: Domain, fams: Mapping[str, str], p: Placement, boxes: Mapping[int, Box]) -> str | None:
    """The first relation of the placement the boxes do not give back (exactly or in floating point), else None."""
    floats = {o: tuple(float(v) for v in box) for o, box in boxes.items()}
    for o, box in floats.items():
        if not (box[2] > box[0] and box[3] > box[1]):
            return f"object {o}'s box is too small for floating point"
    for f, r in fams.items():
        rule = domain.rules[r]
        for a in p.objects:
            for b in p.objects:
                if a == b:
                    continue
                want = (f, a, b) in p.before
                if exact_holds(rule, boxes[a], boxes[b]) != want or rule.holds(floats[a], floats[b]) != want:
                    return f"{r}({a}, {b}) should be {want}"
    return None


def realise(domain: Domain, fams: Mapping[str, str], placement: Placement,
            image_size: Sequence[float]) -> dict[int, FloatBox]:
    """Boxes (in the image, as floats) whose relations of the given families are exactly the placement's order
    atoms, each checked in exact arithmetic and in floating point.

    Raises:
        SolverLimit: no attempt gives every relation back (the boxes a deep nesting needs would be finer than the
            offset rule's 1e-3 floor, or than floating point).
    """
    problem = "no attempt"
    for attempt in range(_ATTEMPTS):
        boxes = _fit(_Builder(domain, fams, placement, Fraction(1, 2 ** attempt)).build(), image_size)
        problem = _mismatch(domain, fams, placement, boxes) or ""
        if not problem:
            return {o: (float(b[0]), float(b[1]), float(b[2]), float(b[3])) for o, b in boxes.items()}
    raise SolverLimit(f"spec: its witness boxes could not be drawn within the image at the rules' resolution "
                      f"({problem} after {_ATTEMPTS} attempts); no label is given")
