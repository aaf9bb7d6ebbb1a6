"""A repair problem as ASP facts for ``asp/repair.lp``: the input scene, the pool of added objects, the positions
of `logicval_hf.repairs.lattice`, the cost of each edit kind.

In a box-geometry domain (COCO) no centre-order positions are written: for a spec that reads no relation no object
needs to move and an added object needs only a free place (`logicval_hf.repairs.realise.free_boxes`); for one that
reads relations the candidate boxes of `logicval_hf.repairs.boxes` are the positions (``geometry``). Confidence ranks
the spec reads come from the detection scores (added objects last).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from logicval_hf.asp.encoding import asp_term
from logicval_hf.asp.universe import spare_text
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import AttrLit, RelLit, Spec
from logicval_hf.repairs.lattice import Axis, BoxClass, Num, box_class, exact_box, units

#: the box class of added objects in the facts (input objects' classes are their indices)
NEW = "new"
#: an added object's box, when the scene has no object to take the size of: this share of the shorter image side
NEW_SIZE_SHARE = 8


@dataclass
class Problem:
    """What the solver needs about one (spec, scene) pair, with exact geometry (in units of ``1 / unit`` pixel)."""

    spec: Spec
    scene: Scene
    count: str
    costs: Mapping[str, int]
    #: facts of the candidate boxes of a box domain whose spec reads relations (`logicval_hf.repairs.boxes`)
    geometry: str = ""
    unit: int = field(init=False)
    centres: list[tuple[int, int]] = field(init=False)
    sizes: list[tuple[int, int]] = field(init=False)
    new_size: tuple[int, int] = field(init=False)
    axes: dict[str, Axis] = field(init=False)
    classes: dict[int | str, BoxClass] = field(init=False)

    def __post_init__(self) -> None:
        objs = self.scene.objects
        w, h = self.scene.image_size
        self.unit = units([w, h, *(v for o in objs for v in o.bbox), *(c for o in objs for c in o.center)])
        exact = [exact_box(o.bbox, self.unit) for o in objs]
        self.centres = [(cx, cy) for cx, cy, _, _ in exact]
        self.sizes = [(bw, bh) for _, _, bw, bh in exact]
        if self.sizes:  # an added object as large as the input's median object (even, so that it halves)
            self.new_size = (_median(s[0] for s in self.sizes), _median(s[1] for s in self.sizes))
        else:
            side = int(min(w, h) * self.unit) // NEW_SIZE_SHARE // 2 * 2
            self.new_size = (side, side)
        self.axes, self.classes = {}, {}
        if not self.scene.domain.ordered:  # a box domain: no object moves (see the module docstring)
            return
        self.axes = {"x": Axis.of("x", int(w * self.unit), [c[0] for c in self.centres]),
                     "y": Axis.of("y", int(h * self.unit), [c[1] for c in self.centres])}
        everyone = [(u, cx, cy) for u, (cx, cy) in enumerate(self.centres)]
        for o, (bw, bh) in enumerate(self.sizes):
            self.classes[o] = box_class(self.axes["x"], self.axes["y"], bw, bh, [c for c in everyone if c[0] != o])
        self.classes[NEW] = box_class(self.axes["x"], self.axes["y"], *self.new_size, everyone)

    def pixels(self, value: int | Fraction) -> Fraction:
        """A coordinate in units as an exact number of pixels."""
        return Fraction(value, self.unit)

    @property
    def n_inputs(self) -> int:
        return len(self.scene.objects)

    def deficit(self) -> int:
        """Objects a strict count needs added at the least."""
        n = self.spec.n
        return max(0, n - self.n_inputs) if self.count == "strict" and n is not None else 0

    def tested(self) -> tuple[dict[str, set[str]], set[str]]:
        """The values (by attribute) and the relations the spec's literals test (slot values and literals written in
        formulas); a derived integer attribute the spec reads (a confidence rank) counts as tested, valueless."""
        attrs: dict[str, set[str]] = {}
        rels: set[str] = set()

        def walk(node: object) -> None:
            if isinstance(node, Mapping):
                if node.get("op") == "value":
                    attrs.setdefault(str(node["attr"]), set())
                lit = node.get("lit")
                if isinstance(lit, Mapping) and node.get("op") == "attr":
                    attrs.setdefault(str(lit["prop"]), set()).add(str(lit["value"]))
                elif isinstance(lit, Mapping):
                    rels.add(str(lit["rel"]))
                for v in node.values():
                    walk(v)
            elif isinstance(node, (list, tuple)):
                for v in node:
                    walk(v)

        for c in self.spec.constraints:
            walk(c.template.formula)
            walk(c.template.anti_vacuity)
            for v in c.params.values():
                if isinstance(v, AttrLit):
                    attrs.setdefault(v.prop, set()).add(v.value)
                elif isinstance(v, RelLit):
                    rels.add(v.rel)
        return attrs, rels

    def _ranks(self, attrs: Mapping[str, set[str]], pool: int) -> list[str]:
        """Confidence ranks the spec reads: ``ranked(A,W)`` (A ranks objects within equal values of W) and
        ``outranks(Y,X)`` (Y's score is higher, or equal and Y comes first; an added object has none)."""
        dom = self.scene.domain
        read = [a for a in dom.numeric_attributes if a in attrs]
        if not read:
            return []
        scores = [o.score if o.score is not None else float("-inf") for o in self.scene.objects]
        scores += [float("-inf")] * pool
        out = [f"ranked({a},{dom.derived[a]['within']})." for a in read]
        out += [f"outranks({y},{x})." for x in range(len(scores)) for y in range(len(scores))
                if y != x and (scores[y] > scores[x] or (scores[y] == scores[x] and y < x))]
        return out

    def _values(self, attribute: str, tested: set[str]) -> list[str]:
        """An attribute's values in the domain's order; for free text (an open attribute) the texts the spec tests,
        a text none of them is, then the scene's own texts (an edit names the text to write)."""
        dom = self.scene.domain
        if not dom.is_open(attribute):
            return list(dom.attributes[attribute])
        had = sorted({o.attributes[attribute] for o in self.scene.objects} - tested)
        return [*sorted(tested), spare_text(tested | set(had)), *had]

    def facts(self, pool: int) -> str:
        """The facts of this problem with ``pool`` slots for added objects."""
        dom = self.scene.domain
        perceived = dom.perceived_attributes
        n = self.n_inputs
        out = [f"perceived({a})." for a in perceived]
        out += [f"weight({k},{w})." for k, w in self.costs.items()]
        attrs, rels = self.tested()
        values = {a: self._values(a, attrs.get(a, set())) for a in perceived}
        ranked = [(a, v) for a in perceived for v in values[a]]
        out += [f"value_rank({a},{asp_term(v)},{i})." for i, (a, v) in enumerate(ranked)]
        for a in perceived:  # the tested values and the first other one
            spare = [v for v in values[a] if v not in attrs.get(a, ())][:1]
            out.append(" ".join(f"offered({a},{asp_term(v)})." for v in values[a]
                                if v in attrs.get(a, ()) or v in spare))
        if self.count == "strict" and self.spec.n is not None:
            out.append(f"count_target({self.spec.n}).")
        if dom.ordered:
            out += sorted({f"ordered({dom.rules[r].axis})." for r in rels if r in dom.rules})
            if "region" in attrs:
                out.append("regions.")
        out += self._ranks(attrs, pool)
        if n:
            out += [f"input(0..{n - 1}).", f"last_input({n - 1})."]
        for o, obj in enumerate(self.scene.objects):
            out.append(" ".join(f"had({o},{a},{asp_term(obj.attributes[a])})." for a in perceived))
            out.append(f"kind({o},{o}).")
        if pool:
            out += [f"slot({n}..{n + pool - 1}).", f"kind(J,{NEW}) :- slot(J)."]
        for name, axis in self.axes.items():
            out.append(f"piece({name},0..{axis.pieces - 1}).")
            out.append(" ".join(f"point({name},{p})." for p in range(1, axis.pieces, 2)))
            out.append(" ".join(f"side({name},{p},{axis.side(p)})." for p in range(axis.pieces)))
            k = 0 if name == "x" else 1
            out.append(" ".join(f"home({name},{o},{axis.piece_of(c[k])})." for o, c in enumerate(self.centres)))
        for kind, cls in self.classes.items():
            if kind == NEW and not pool:
                continue
            xs, ys = cls.fits
            out.append(" ".join([f"fits(x,{kind},{p})." for p in sorted(xs)] + [f"fits(y,{kind},{q})."
                                                                               for q in sorted(ys)]))
            for name, faces, half in (("x", cls.xfaces, cls.width // 2), ("y", cls.yfaces, cls.height // 2)):
                spans: dict[int, list[Num]] = {}
                for f in faces:
                    lo_hi = spans.setdefault(f.piece, [f.lo, f.hi])
                    lo_hi[0], lo_hi[1] = min(lo_hi[0], f.lo), max(lo_hi[1], f.hi)
                out.append(" ".join(f"narrow({name},{kind},{p})." for p, (lo, hi) in sorted(spans.items())
                                    if hi - lo <= half))
            for (p, q), masks in sorted(cls.blocked.items()):
                out.append(f"blocked({kind},{p},{q}).")
                for i, mask in enumerate(masks):
                    covered = [u for u in range(n) if mask >> u & 1]
                    out.append(f"option({kind},{p},{q},{i}). "
                               + " ".join(f"covers({kind},{p},{q},{i},{u})." for u in covered))
        return "\n".join(out) + "\n"


def _median(values: Iterable[int]) -> int:
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) // 4 * 2
