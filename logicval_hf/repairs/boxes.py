"""Candidate boxes for the moved and added objects of a repair in a box-geometry domain (COCO) whose spec reads
relations between boxes, as facts for ``asp/repair_boxes.lp``, and the boxes of the solver's choice.

A moved or added object (a *mover*) takes one of a finite set of candidate boxes, all computed here in floating
point exactly as they are written to the repaired scene, their relations decided by the domain's own rules
(`logicval_hf.contract.domain.Relation.holds`, what the verifier reads):

* sizes: a moved object keeps its own; an added object has the input's median size, and where the spec reads areas
  or containment also half and one and a half times it, then every input object's size, half of it and one and a
  half times it (in that order, inputs in their order), so that "larger than", "smaller than", "inside" and
  "containing" can be met;
* positions on each axis: boxes centred on a `GRID` x `GRID` lattice over the image, the boxes against either edge
  of the image, and where the spec reads containment the boxes against either edge of every input box and centred
  on its centre (so that a box fits just inside, or just around, another);
* only boxes inside the image, covering no centre of an object below the spec's score threshold (those are never
  edited), and for a moved object not its own box.

Candidates of one size with the same relations to every input object (the relations of the families the spec reads,
both ways) and covering the same input centres form a *class*; the solver chooses a class per mover (which fixes its
relations to every object that stays) and picks the relations between movers, which `realise` then checks on
concrete boxes of the chosen classes (every combination of them, in the classes' order, until one fits). A choice
that none fits is excluded by a nogood: the optimum is exact over the candidate boxes.

A placed box covers no other object's centre, but where the spec reads containment it may cover the centre of an
object that lies inside it and is smaller (the container of "a cat inside a dog": without it, no placed box could
contain another object, and such specs would have no repair).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import clingo

from logicval_hf.asp.encoding import asp_term
from logicval_hf.contract.domain import Domain, Relation
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spatial import centre
from logicval_hf.repairs.facts import Problem
from logicval_hf.repairs.solve import Choice

Box = tuple[float, float, float, float]
#: a literal of a nogood: (true or false, predicate, arguments; "X" and "Y" stand for any two distinct movers)
Lit = tuple[bool, str, tuple]
Nogood = tuple[Lit, ...]

#: centres per side of the image on which candidate boxes are laid
GRID = 12
#: box pairs `realise` checks for one choice before it gives up (the repair is then not proven optimal)
MAX_CHECKS = 200_000
#: the families whose relations grow with the size of a box (an added object is offered more sizes)
_SIZED = ("box_area", "box_inside")


def _covers(box: Box, point: tuple[float, float]) -> bool:
    """Whether a box covers a point (inside it or on its edge)."""
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def _spans(extent: float, size: float, edges: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Positions of a box of ``size`` on an axis of ``extent``: centred on the lattice, against either end of the
    image and of each of ``edges`` and centred on each (inside the image only)."""
    out = [(c - size / 2, c + size / 2) for c in (extent * (2 * i + 1) / (2 * GRID) for i in range(GRID))]
    out += [(0.0, size), (extent - size, extent)]
    for lo, hi in edges:
        out += [(lo, lo + size), (hi - size, hi), ((lo + hi) / 2 - size / 2, (lo + hi) / 2 + size / 2)]
    return list(dict.fromkeys(s for s in out if s[0] >= 0 and s[1] <= extent))


@dataclass
class BoxClass:
    """Candidate boxes of one size with the same relations to every input object and the same centres covered."""

    ident: int
    kind: int | str  # an input's index (its own size) or "new" (an added object)
    size: int
    relations: frozenset[tuple[str, int, int]]  # (relation, direction 1: box -> input, 0: input -> box, input)
    covered: frozenset[int]
    members: list[Box] = field(default_factory=list)
    distance: int = 0


class BoxRoom:
    """The candidate boxes of every possible mover of one repair problem, their classes and facts, and the
    realisation of a choice (see the module docstring)."""

    def __init__(self, scene: Scene, others: Sequence[Box], relations: set[str], new_size: tuple[float, float]):
        """``scene``: the objects that count (the repair's input); ``others``: the boxes of objects that do not
        count (never edited: no candidate covers their centres); ``relations``: the relations the spec reads;
        ``new_size``: an added object's default size (the input's median box)."""
        dom = scene.domain
        self.domain: Domain = dom
        self.scene = scene
        self.boxes: list[Box] = [tuple(o.bbox) for o in scene.objects]  # type: ignore[misc]
        self.centres = [centre(b) for b in self.boxes]
        self.read = self._family_relations(dom, relations)
        self.canonical = [r for r, _ in dom.canonical_relations() if r in self.read]
        kinds = {dom.rules[r].kind for r in self.read}
        self.nest = "box_inside" in kinds
        inside, smaller = self._rule("box_inside", -1), self._rule("box_area", -1)
        self._inside = inside if self.nest and smaller is not None else None
        self._smaller: Relation = smaller  # type: ignore[assignment]  # read only with _inside
        self.capped = False
        w, h = scene.image_size
        self.image = (float(w), float(h))
        self.sizes: list[tuple[float, float]] = [(b[2] - b[0], b[3] - b[1]) for b in self.boxes]
        added = [new_size]
        if kinds & set(_SIZED):
            added = [(bw * k, bh * k) for bw, bh in [new_size, *self.sizes] for k in (1, 0.5, 1.5)]
        self.new_sizes = [s for s in dict.fromkeys(added) if s[0] <= w and s[1] <= h and s[0] > 0 and s[1] > 0]
        self.classes: list[BoxClass] = []
        self._offered: dict[int | str, list[Box]] = {}
        self._pairs: dict[tuple[int, int], tuple[set[tuple[int, ...]], bool]] = {}
        self._realised: dict[tuple, dict[int, Box]] = {}
        self.nogoods: list[Nogood] = []  # those of the last choice that could not be realised
        blocked = [centre(b) for b in others]
        for o in range(len(self.boxes)):
            self._candidates(o, o, self.sizes[o], blocked)
        for z, size in enumerate(self.new_sizes):
            self._candidates("new", len(self.boxes) + z, size, blocked)

    @staticmethod
    def _family_relations(dom: Domain, relations: set[str]) -> list[str]:
        """The relations read and every relation of their families (the same kind of geometry, the same axis)."""
        keys = {(dom.rules[r].kind, dom.rules[r].axis) for r in relations if r in dom.rules}
        return [r for r in dom.relations if (dom.rules[r].kind, dom.rules[r].axis) in keys]

    def _rule(self, kind: str, sign: int) -> Relation | None:
        return next((r for r in self.domain.rules.values() if r.kind == kind and r.sign == sign), None)

    def excused(self, placed: Box, other: Box) -> bool:
        """Whether a placed box may cover the other's centre: the spec reads containment and the other lies inside
        it and is smaller."""
        return self._inside is not None and self._inside.holds(other, placed) and self._smaller.holds(other, placed)

    def _candidates(self, kind: int | str, size_id: int, size: tuple[float, float], blocked: list) -> None:
        """The candidates of one mover kind and size, grouped into classes."""
        n = len(self.boxes)
        own = kind if isinstance(kind, int) else None
        edges = [b for u, b in enumerate(self.boxes) if u != own] if self.nest else []
        w, h = self.image
        xs = _spans(w, size[0], [(b[0], b[2]) for b in edges])
        ys = _spans(h, size[1], [(b[1], b[3]) for b in edges])
        rules = [(r, self.domain.rules[r]) for r in self.read]
        home = self.boxes[own] if own is not None else None
        found: dict[tuple, BoxClass] = {}
        for y0, y1 in ys:
            for x0, x1 in xs:
                box = (x0, y0, x1, y1)
                if box == home or any(_covers(box, c) for c in blocked):
                    continue
                rel = []
                cov = []
                for u in range(n):
                    if u == own:
                        continue
                    other = self.boxes[u]
                    for name, rule in rules:
                        if rule.holds(box, other):
                            rel.append((name, 1, u))
                        if rule.holds(other, box):
                            rel.append((name, 0, u))
                    if _covers(box, self.centres[u]) and not self.excused(box, other):
                        cov.append(u)
                key = (tuple(rel), tuple(cov))
                cls = found.get(key)
                if cls is None:
                    cls = found[key] = BoxClass(len(self.classes), kind, size_id, frozenset(rel), frozenset(cov))
                    self.classes.append(cls)
                cls.members.append(box)
                self._offered.setdefault(kind, []).append(box)
        for cls in found.values():
            if home is not None:
                hx, hy = centre(home)
                dist = [abs(centre(b)[0] - hx) + abs(centre(b)[1] - hy) for b in cls.members]
                order = sorted(range(len(cls.members)), key=lambda i: (dist[i], centre(cls.members[i])[::-1]))
                cls.members = [cls.members[i] for i in order]
                cls.distance = round(dist[order[0]])
            else:
                cls.members.sort(key=lambda b: centre(b)[::-1])  # row by row, from the top left

    def offered(self, kind: int | str) -> list[Box]:
        """Every candidate box of a mover: ``kind`` an input's index (where it may move) or ``"new"`` (where an added
        object may go, every size)."""
        return list(self._offered.get(kind, []))

    # ---- facts -------------------------------------------------------------------------------------------------
    def _size(self, z: int) -> tuple[float, float]:
        return self.sizes[z] if z < len(self.boxes) else self.new_sizes[z - len(self.boxes)]

    def _extremes(self, z: int) -> tuple[Box, Box]:
        """A smallest and a largest box of one size among the candidates (float widths differ in the last bits)."""
        boxes = [b for c in self.classes if c.size == z for b in c.members] or [(0.0, 0.0, *self._size(z))]
        area = [(b[2] - b[0]) * (b[3] - b[1]) for b in boxes]
        return boxes[area.index(min(area))], boxes[area.index(max(area))]

    def facts(self) -> str:
        dom = self.domain
        n = len(self.boxes)
        out = ["boxes."]
        out += [f"mm_relation({r})." for r in self.read]
        canonical = dict(dom.canonical_relations())
        for r in self.read:
            if r in canonical:
                kind = dom.rules[r].kind
                out.append(f"area_chosen({r})." if kind == "box_area" else f"chosen({r}).")
                if kind == "box_inside":
                    out.append(f"nest_chosen({r}).")
        out += [f"fixed({u},{r},{v})." for r in self.read for u in range(n) for v in range(n)
                if u != v and dom.holds(r, self.boxes[u], self.boxes[v])]
        for cls in self.classes:
            out.append(f"cls({asp_term(cls.kind)},{cls.ident}). size({cls.ident},{cls.size}).")
            out += [f"crel({cls.ident},{r},{u})." if d else f"rrel({u},{r},{cls.ident})."
                    for r, d, u in sorted(cls.relations)]
            out += [f"ccov({cls.ident},{u})." for u in sorted(cls.covered)]
            if isinstance(cls.kind, int):
                out.append(f"dist({cls.ident},{cls.distance}).")
        out += [f"size_rank({n + z},{z})." for z in range(len(self.new_sizes))]
        used = sorted({c.size for c in self.classes})
        area = [(r, rule) for r, rule in ((r, dom.rules[r]) for r in self.read) if rule.kind == "box_area"]
        if area:
            ext = {z: self._extremes(z) for z in used}
            for z1 in used:
                for z2 in used:
                    for r, rule in area:  # a relation that holds (fails) for the extremes holds (fails) for all
                        lo1, hi1 = ext[z1]
                        lo2, hi2 = ext[z2]
                        outcomes = {rule.holds(a, b) for a in (lo1, hi1) for b in (lo2, hi2)}
                        if outcomes == {True}:
                            out.append(f"area_rel({z1},{r},{z2}).")
                        elif len(outcomes) == 2 and r in canonical:
                            out.append(f"area_open({z1},{z2}).")
        if self.nest:
            for z1 in used:
                for z2 in used:
                    (w1, h1), (w2, h2) = self._size(z1), self._size(z2)
                    if w1 <= w2 * (1 + 1e-9) and h1 <= h2 * (1 + 1e-9) and w1 * h1 < w2 * h2:
                        out.append(f"nest_fits({z1},{z2}).")
        return "\n".join(out) + "\n"

    # ---- realisation -------------------------------------------------------------------------------------------
    def _fits(self, a: Box, b: Box) -> bool:
        """Two placed boxes: neither covers the other's centre (unless excused)."""
        return ((not _covers(a, centre(b)) or self.excused(a, b))
                and (not _covers(b, centre(a)) or self.excused(b, a)))

    def _agrees(self, x: int, a: Box, y: int, b: Box, mm: set[tuple[int, str, int]]) -> bool:
        dom = self.domain
        return all(dom.holds(r, a, b) == ((x, r, y) in mm) and dom.holds(r, b, a) == ((y, r, x) in mm)
                   for r in self.read)

    def _search(self, movers: list[int], pools: list[list[Box]], mm: set[tuple[int, str, int]] | None,
                checks: list[int]) -> list[Box] | None:
        """Boxes for the movers in their classes' order (depth first), every two of them fitting and (unless ``mm``
        is None) standing in the relations ``mm``; None when none do or past `MAX_CHECKS`."""
        chosen: list[Box] = []

        def step(i: int) -> bool:
            if i == len(movers):
                return True
            for box in pools[i]:
                checks[0] += 1
                if checks[0] > MAX_CHECKS:
                    return False
                if all(self._fits(box, b) and (mm is None or self._agrees(movers[i], box, movers[k], b, mm))
                       for k, b in enumerate(chosen)):
                    chosen.append(box)
                    if step(i + 1):
                        return True
                    chosen.pop()
                if checks[0] > MAX_CHECKS:
                    return False
            return False

        return chosen if step(0) else None

    def _state(self, a: Box, b: Box) -> tuple[int, ...]:
        """How two boxes relate in each family read: 1 (its canonical relation from a to b), -1 (from b to a), 0."""
        dom = self.domain
        return tuple(1 if dom.holds(r, a, b) else -1 if dom.holds(r, b, a) else 0 for r in self.canonical)

    def _patterns(self, s: int, t: int) -> tuple[set[tuple[int, ...]], bool]:
        """The states of every two boxes of classes ``s`` and ``t`` that fit together, and whether the scan was cut
        short (`MAX_CHECKS`)."""
        key = (s, t)
        if key not in self._pairs:
            seen: set[tuple[int, ...]] = set()
            checks = 0
            for a in self.classes[s].members:
                for b in self.classes[t].members:
                    checks += 1
                    if checks > MAX_CHECKS:
                        break
                    if self._fits(a, b):
                        seen.add(self._state(a, b))
                if checks > MAX_CHECKS:
                    break
            self._pairs[key] = (seen, checks > MAX_CHECKS)
        return self._pairs[key]

    def _chosen_state(self, x: int, y: int, mm: set[tuple[int, str, int]]) -> tuple[int, ...]:
        return tuple(1 if (x, r, y) in mm else -1 if (y, r, x) in mm else 0 for r in self.canonical)

    def _exclude(self, s: int, t: int, seen: set[tuple[int, ...]]) -> list[Nogood]:
        """Nogoods: any two movers in classes ``s`` and ``t`` stand in none of the states their boxes never give
        (when no two boxes of them fit at all, the classes alone)."""
        classes: list[Lit] = [(True, "place", ("X", s)), (True, "place", ("Y", t))]
        if not seen:
            return [tuple(classes)]
        out = []
        for state in itertools.product((1, -1, 0), repeat=len(self.canonical)):
            if state in seen:
                continue
            body = list(classes)
            for r, v in zip(self.canonical, state, strict=True):
                body += ([(True, "mm", ("X", r, "Y"))] if v == 1 else [(True, "mm", ("Y", r, "X"))] if v == -1
                         else [(False, "mm", ("X", r, "Y")), (False, "mm", ("Y", r, "X"))])
            out.append(tuple(body))
        return out

    def checker(self) -> _Checker:
        """A clingo propagator that realises every total assignment's choice and adds the nogoods of a choice it
        cannot realise, so that the solver never reports it (one per grounding)."""
        return _Checker(self)

    def realise(self, choice: Choice) -> dict[int, Box] | None:
        """Boxes for the moved and added objects of ``choice``, or None; then `nogoods` (and ``choice.exclusion``,
        the same as ASP) exclude it: for two movers whose classes' boxes never stand in the relations chosen between
        them, every state those two classes never give (for any two movers: the classes alone decide it); else the
        whole choice."""
        movers = sorted(choice.moved) + list(choice.added)
        place = choice.place
        key = (tuple(sorted(place.items())), frozenset(choice.mm))
        if key in self._realised:
            return self._realised[key]
        for i, x in enumerate(movers):
            for y in movers[i + 1:]:
                seen, capped = self._patterns(place[x], place[y])
                if capped:
                    self.capped = True  # not proven: the repair found is then not proven optimal
                elif self._chosen_state(x, y, choice.mm) not in seen:
                    self._fail(choice, self._exclude(place[x], place[y], seen))
                    return None
        pools = [self.classes[place[x]].members for x in movers]
        checks = [0]
        found = self._search(movers, pools, choice.mm, checks)
        if found is not None:
            self._realised[key] = dict(zip(movers, found, strict=True))
            return self._realised[key]
        self.capped |= checks[0] > MAX_CHECKS
        body: list[Lit] = [(True, "place", (x, place[x])) for x in movers]
        body += [((x, r, y) in choice.mm, "mm", (x, r, y)) for x in movers for y in movers if x != y for r in self.read]
        self._fail(choice, [tuple(body)])
        return None

    def _fail(self, choice: Choice, nogoods: list[Nogood]) -> None:
        """Keeps the nogoods of a choice that cannot be realised (for the propagator), and sets them on the choice as
        ASP constraints (``X``, ``Y``: any two distinct movers)."""
        self.nogoods = nogoods
        rules = []
        for body in nogoods:
            lits = [("" if sign else "not ") + f"{name}({','.join(str(a) for a in args)})" for sign, name, args in body]
            general = any("X" in args for _, _, args in body)
            rules.append(f":- {', '.join(lits + (['X != Y'] if general else []))}.\n")
        choice.exclusion = "".join(rules)


class _Checker:
    """The propagator of `BoxRoom.checker`: on a total assignment, the choice its ``place/2`` and ``mm/3`` atoms
    make is realised; if it cannot be, the realiser's nogoods (ground over every two movers for a pair of classes)
    are added and the assignment is refused."""

    def __init__(self, room: BoxRoom):
        self.room = room
        self.place: list[tuple[int, int, int]] = []  # (literal, object, class)
        self.mm: list[tuple[int, int, str, int]] = []
        self.lits: dict[tuple[str, tuple], int] = {}  # (predicate, arguments) -> solver literal

    def init(self, init: clingo.PropagateInit) -> None:
        for sig, arity in (("place", 2), ("mm", 3)):
            for atom in init.symbolic_atoms.by_signature(sig, arity):
                lit = init.solver_literal(atom.literal)
                a = atom.symbol.arguments
                if sig == "place":
                    self.place.append((lit, a[0].number, a[1].number))
                    self.lits[(sig, (a[0].number, a[1].number))] = lit
                else:
                    self.mm.append((lit, a[0].number, a[1].name, a[2].number))
                    self.lits[(sig, (a[0].number, a[1].name, a[2].number))] = lit
        self.movers = sorted({x for _, x, _ in self.place})

    def _ground(self, nogoods: list[Nogood]) -> list[list[int]]:
        """Nogoods as solver literals (``X``, ``Y``: every two distinct movers); one with an atom that is never true
        is left out, a negated atom that is never true dropped from its nogood."""
        out = []
        for body in nogoods:
            general = any("X" in args for _, _, args in body)
            pairs = [(x, y) for x in self.movers for y in self.movers if x != y] if general else [(0, 0)]
            for x, y in pairs:
                lits: list[int] = []
                for sign, name, args in body:
                    lit = self.lits.get((name, tuple(x if v == "X" else y if v == "Y" else v for v in args)))
                    if lit is None and sign:
                        break
                    if lit is not None:
                        lits.append(lit if sign else -lit)
                else:
                    out.append(lits)
        return out

    def check(self, control: clingo.PropagateControl) -> None:
        a = control.assignment
        n = len(self.room.boxes)
        choice = Choice(0, False)
        for lit, x, s in self.place:
            if a.is_true(lit):
                choice.place[x] = s
                if x < n:
                    choice.moved.add(x)
                else:
                    choice.added.append(x)
        choice.added.sort()
        choice.mm = {(x, r, y) for lit, x, r, y in self.mm if a.is_true(lit)}
        if self.room.realise(choice) is not None or choice.exclusion is None:
            return
        for nogood in self._ground(self.room.nogoods):
            if not control.add_nogood(nogood) or not control.propagate():
                return


def room_for(problem: Problem, others: Sequence[Box]) -> BoxRoom | None:
    """The candidate boxes of a box-domain problem whose spec reads relations, its facts set on the problem
    (``others``: the boxes of the objects that do not count); None in a centre-order domain or for a spec that
    reads no relation (nothing moves there: `logicval_hf.repairs.realise.free_boxes`)."""
    relations = problem.tested()[1]
    if problem.scene.domain.ordered or not relations:
        return None
    size = (float(problem.pixels(problem.new_size[0])), float(problem.pixels(problem.new_size[1])))
    room = BoxRoom(problem.scene, others, relations, size)
    problem.geometry = room.facts()
    return room


__all__ = ["GRID", "MAX_CHECKS", "BoxClass", "BoxRoom", "room_for"]
