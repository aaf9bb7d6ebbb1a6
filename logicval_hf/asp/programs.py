"""Assemble complete ASP programs for a spec from the checked-in ``.lp`` programs and the compiled constraints.

The ``.lp`` programs (domain, vocabulary, background, templates) live once, in the repository's top-level ``asp/``
folder, which plain ``clingo`` runs (asp/README.md); the package reads them as ``logicval_hf/asp/lp/``, a link to
``../../asp`` in a checkout and a copy of it in an installed wheel (`program_dir`).

* `solve_program(spec)`: the generative program whose answer sets are the admissible scenes of exactly n
  objects that satisfy every *active* constraint (``#external active(i)``), used for labels, witnesses and cores.
* `verify_program(spec, universe)`: constraint rules over a perceived scene given as ``#external`` atoms, so one
  grounding checks many scenes.
* `spec_program(spec)`: a standalone, readable program (what a dataset row stores): SAT iff the spec is.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from logicval_hf.asp.encoding import (
    asp_term,
    compile_constraint,
    compile_template,
    constants_program,
    vocabulary_program,
)
from logicval_hf.asp.universe import formula_nodes, solving_values, universe_bound
from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import AttrLit, RelLit, Spec

#: Box placements for solving specs of a domain whose relations come from boxes (not centre orders): centres on a
#: GRID x GRID lattice of cells, square boxes of a few sizes (fractions of the shorter image side; several only
#: when a spec compares sizes or containment). Relations between placements are derived by the same geometry
#: that reads perceived scenes, so a witness's boxes give back exactly the relations solved. A SAT label is proved by
#: its witness; an UNSAT label that rests on geometry is relative to this lattice: three columns and rows and four
#: sizes hold no chain of four objects each left of (or larger than) the next, and boxes of one cell share a centre,
#: so no box is both inside another and above it (known limits, the differential tests' reference shares them).
GRID = 3
SIZES = (0.08,)
SIZES_COMPARED = (0.05, 0.09, 0.13, 0.17)
#: relation kinds that depend on box sizes, so that solving needs several sizes
_SIZE_KINDS = ("box_area", "box_inside")



def program_dir() -> Path:
    """The folder of the ``.lp`` programs: the package's ``lp/`` (in a checkout a link to the repository's ``asp/``,
    in an installed wheel a copy of it), or the repository's ``asp/`` itself where the link is not one (a checkout
    made without symbolic links)."""
    packaged = Path(str(resources.files("logicval_hf.asp").joinpath("lp")))
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "asp"


@functools.cache
def read_program(name: str) -> str:
    """Text of a checked-in program, e.g. ``"background.lp"`` or ``"templates/C3.lp"``."""
    return (program_dir() / name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=8)
def vocabulary(domain: Domain) -> str:
    return vocabulary_program(domain)


def constraint_rules(spec: Spec) -> str:
    """The instantiated rules of every constraint; in a box-geometry domain with counts compared as aggregate
    guards (`compile_constraint`), CLEVR's in the paper's rendering (its labels, cores and witnesses unchanged)."""
    guards = not spec.domain.ordered
    return "".join(compile_constraint(c, i, guards=guards) for i, c in enumerate(spec.constraints))


def sizes_for(spec: Spec) -> tuple[float, ...]:
    """The box sizes a spec is solved over: several when it names a size or containment relation."""
    rels = _mentioned(spec)[1]
    compared = any(spec.domain.rules[r].kind in _SIZE_KINDS for r in rels if r in spec.domain.rules)
    return SIZES_COMPARED if compared else SIZES


def placement_box(domain: Domain, cell: int, size: float) -> tuple[float, float, float, float]:
    """The box of a solved object: grid cell ``cell`` (row-major), side ``size`` x the shorter image side."""
    w, h = domain.image_size
    half = size * min(w, h) / 2
    cx, cy = (cell % GRID + 0.5) * w / GRID, (cell // GRID + 0.5) * h / GRID
    return cx - half, cy - half, cx + half, cy + half


@functools.lru_cache(maxsize=16)  # the same few tables for every spec of a domain: derive them once
def placement_tables(domain: Domain, sizes: tuple[float, ...]) -> dict[str, tuple[str, list[str]]]:
    """Facts of every relation between placements, each keyed by only what decides it on this lattice:
    ``cell_rel(C,R,D)`` when the relation does not depend on the sizes, ``size_rel(S,R,T)`` when it does not
    depend on the cells, ``place_rel(C,S,R,D,T)`` otherwise (what grounding then joins is that much smaller).
    Returns relation -> (``cell`` | ``size`` | ``place``, its facts)."""
    cells = range(GRID * GRID)
    ks = range(len(sizes))
    out: dict[str, tuple[str, list[str]]] = {}
    for r in domain.relations:
        truth = {(c, s, d, t): domain.holds(r, placement_box(domain, c, sizes[s]), placement_box(domain, d, sizes[t]))
                 for c in cells for s in ks for d in cells for t in ks}
        by_cell = all(truth[(c, s, d, t)] == truth[(c, 0, d, 0)] for (c, s, d, t) in truth)
        by_size = all(truth[(c, s, d, t)] == truth[(0, s, 0, t)] for (c, s, d, t) in truth)
        if by_cell:
            out[r] = ("cell", [f"cell_rel({c},{r},{d})." for c in cells for d in cells if truth[(c, 0, d, 0)]])
        elif by_size:
            out[r] = ("size", [f"size_rel({s},{r},{t})." for s in ks for t in ks if truth[(0, s, 0, t)]])
        else:
            out[r] = ("place", [f"place_rel({c * len(sizes) + s},{r},{d * len(sizes) + t})."
                                for (c, s, d, t), ok in truth.items() if ok])
    return out


def grounding_estimate(spec: Spec) -> int:
    """A rough count of the ground rules `solve_program` makes (object tuples each constraint's rules range over,
    object pairs times relation facts), to keep grounding, which cannot be interrupted, bounded: the solver
    labels a spec above `logicval_hf.asp.solver.ISOLATE_ABOVE` in a child process.

    Raises:
        SolverLimit: an open-size spec that may need more objects than its domain allows.
    """
    u = spec.n if spec.n is not None else universe_bound(spec)
    total = 0
    for c in spec.constraints:
        total += u ** max(1, _variables(c.template.formula) + _variables(c.template.anti_vacuity))
    if not spec.domain.ordered:
        tables = placement_tables(spec.domain, sizes_for(spec))
        total += u * (u - 1) * sum(len(tables[r][1]) for r in _mentioned(spec)[1])
    return total


def _variables(node: object) -> int:
    if isinstance(node, dict):
        return len(node.get("vars", ())) + sum(_variables(v) for v in node.values())
    if isinstance(node, list):
        return sum(_variables(v) for v in node)
    return 0


def _objects_program(spec: Spec) -> str:
    if spec.n is not None:
        return f"object(0..{spec.n - 1}).\n"
    u = universe_bound(spec)
    return (f"% open scene size: any number of objects up to {u} (logicval_hf.asp.universe), numbered without gaps\n"
            f"slot(0..{u - 1}).\n{{ object(X) }} :- slot(X).\n:- object(X), X > 0, not object(X-1).\n")


def _rank_program(dom: Domain) -> list[str]:
    out = []
    for a, d in dom.derived.items():
        if d["kind"] == "score_rank":  # objects are numbered by falling score: nothing is lost (no rule names one)
            w = d["within"]
            out.append(f"hasProperty(X,{a},N+1) :- object(X), hasProperty(X,{w},V), "
                       f"N = #count{{ Y : object(Y), Y < X, hasProperty(Y,{w},V) }}.")
    return out


def _ranked(spec: Spec) -> bool:
    """Whether the spec reads a confidence rank (then objects of one class keep their order: it is their rank)."""
    return any(node["op"] == "value" for node, _ in formula_nodes(spec))


def _geometry_program(spec: Spec, symmetry: bool = True) -> str:
    """How relations and derived attributes arise when solving: two total orders (background.lp) for a
    centre-order domain; box placements for the others; confidence ranks in the order of object numbers."""
    dom = spec.domain
    parts = []
    if dom.ordered:
        parts += [read_program("background.lp"), read_program("symmetry.lp") if symmetry else ""]
    return "\n".join(p for p in parts + _rank_program(dom) if p) + "\n"


def _box_program(spec: Spec, symmetry: bool = True) -> str:
    """The generative part for a box-geometry domain: each object takes one of the values `solving_values` keeps
    per attribute and, when the spec tests a relation, a lattice placement (a cell and a size) whose boxes decide
    the relations the spec tests; objects are numbered in a canonical order (box_symmetry.lp)."""
    dom = spec.domain
    values = solving_values(spec)
    rels = sorted(_mentioned(spec)[1])
    parts = ["% values a solve chooses from (logicval_hf.asp.universe.solving_values: the tested ones and spares)"]
    for a, vals in values.items():
        choices = " ".join(f"solving_value({a},{asp_term(v)},{i})." for i, v in enumerate(vals))
        parts.append(f"perceived({a}). {choices}")
    parts.append("1 { hasProperty(X,P,V) : solving_value(P,V,_) } 1 :- object(X), perceived(P).")
    levels = [dom.derived[a]["within"] for a in dom.numeric_attributes] if _ranked(spec) else list(values)
    if rels:
        sizes = sizes_for(spec)
        tables = placement_tables(dom, sizes)
        kinds = {tables[r][0] for r in rels}
        parts += ["% box placements (logicval_hf.asp.programs.placement_box): a grid cell and a size per object, and",
                  "% the relations their boxes give, keyed by what decides each",
                  f"cell(0..{GRID * GRID - 1}). size(0..{len(sizes) - 1}).",
                  " ".join(f for r in rels for f in tables[r][1]),
                  "1 { at(X,C) : cell(C) } 1 :- object(X).",
                  "1 { sized(X,S) : size(S) } 1 :- object(X).",
                  "#show at/2. #show sized/2."]
        if "cell" in kinds:
            parts.append("hasRelationship(X,R,Y) :- at(X,C), at(Y,D), X != Y, cell_rel(C,R,D).")
        if "size" in kinds:
            parts.append("hasRelationship(X,R,Y) :- sized(X,S), sized(Y,T), X != Y, size_rel(S,R,T).")
        if "place" in kinds:
            parts += [f"placed(X,C*{len(sizes)}+S) :- at(X,C), sized(X,S).",
                      "hasRelationship(X,R,Y) :- placed(X,P), placed(Y,Q), X != Y, place_rel(P,R,Q)."]
        if not _ranked(spec):
            levels += ["@cell", "@size"]
    parts += _rank_program(dom)
    if symmetry:
        parts.append(" ".join(f"sb_level({k},{a if not a.startswith('@') else a[1:]})." for k, a in enumerate(levels)))
        parts.append(read_program("box_symmetry.lp"))
    return "\n".join(parts) + "\n"


def _generative_parts(spec: Spec, symmetry: bool = True) -> list[str]:
    if not spec.domain.ordered:
        return [vocabulary(spec.domain), _box_program(spec, symmetry), _objects_program(spec), constraint_rules(spec)]
    return [
        vocabulary(spec.domain),
        read_program("domain.lp"),
        _geometry_program(spec, symmetry),
        _objects_program(spec),
        constraint_rules(spec),
    ]


def solve_program(spec: Spec, catalog: Catalog | None = None, symmetry: bool = True) -> str:
    idx = " ".join(f"#external active({i}). [free]" for i in range(spec.m))
    parts = [
        *_generative_parts(spec, symmetry),
        "% A constraint is enforced while its `active` assumption holds (for unsat cores).\n",
        idx + "\n",
        ":- violated(I), active(I).\n",
        "#defined violated/1.\n#defined hasRelationship/3.\n#show hasProperty/3.\n#show precedes/3.\n#show object/1.\n",
    ]
    return "\n".join(p for p in parts if p)


def scene_externals_program(universe: int, domain: Domain | None = None) -> str:
    """The perceived scene as external atoms over object slots 0..universe-1 (grounded before any spec rules).

    ``scene_rel`` carries only the first relation of each inverse pair (``left``, ``behind``); the inverses are
    derived, so ties give neither direction, as in regions.md §6.
    """
    if isinstance(domain, Catalog):
        domain = domain.domain
    domain = domain or load_catalog().domain
    return "\n".join([
        vocabulary(domain),
        f"index(0..{universe - 1}).",
        "#external scene_object(I) : index(I). [free]",
        "#external scene_has(I,P,V) : index(I), property(P,V). [free]",
        f"#external scene_num(I,A,V) : index(I), numeric_attribute(A), V = 1..{universe}. [free]",
        "#external scene_rel(I,R,J) : index(I), index(J), I != J, relation_pair(R,_). [free]",
        "#defined numeric_attribute/1.",
        "",
    ])


def verify_program(spec: Spec) -> str:
    """Constraint rules of a spec over the scene externals of `scene_externals_program`."""
    count_ok = "count_ok." if spec.n is None else f"count_ok :- #count{{ X : object(X) }} = {spec.n}."
    return "\n".join([
        "object(I) :- scene_object(I).",
        "hasProperty(I,P,V) :- scene_has(I,P,V).",
        "hasProperty(I,A,V) :- scene_num(I,A,V).",
        "hasRelationship(I,R,J) :- scene_rel(I,R,J).",
        "hasRelationship(J,S,I) :- scene_rel(I,R,J), relation_pair(R,S).",
        constraint_rules(spec),
        count_ok,
        "#defined violated/1. #defined hasProperty/3. #defined hasRelationship/3.",
        "#show violated/1.",
        "#show count_ok/0.",
        "",
    ])


def _mentioned(spec: Spec) -> tuple[set[str], set[str]]:
    """Attributes and relations a spec's literals test (slot values and inline literals)."""
    attrs: set[str] = set()
    rels: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            lit = node.get("lit")
            if node.get("op") == "attr" and isinstance(lit, dict):
                attrs.add(lit["prop"])
            if node.get("op") == "rel" and isinstance(lit, dict):
                rels.add(lit["rel"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    for c in spec.constraints:
        walk(c.template.formula)
        walk(c.template.anti_vacuity)
        for v in c.params.values():
            if isinstance(v, AttrLit):
                attrs.add(v.prop)
            elif isinstance(v, RelLit):
                rels.add(v.rel)
    return attrs, rels


def _categorical(domain: Domain) -> list[str]:
    """Attributes carried in a batch's ``o/…`` facts: the perceived ones, then the derived categorical ones."""
    return list(domain.attributes)


def batch_verify_program(spec: Spec, catalog: Catalog | None = None) -> str:
    """Constraint rules over many scenes at once.

    Scenes ``0..k-1`` arrive as ``scenes(k)`` and one fact per object, ``o(S,I,<attribute values>)`` (the
    domain's attributes in order, derived categorical ones such as the region last), plus, for a centre-order
    domain, ``pos(S,I,XR,YR)`` (dense ranks of the box centre's coordinates: relations follow from the ranks,
    so ties give no relation, as in regions.md §6); for a box-geometry domain ``r(S,I,R,J)`` for the first
    relation of each inverse pair; ``num(S,I,A,V)`` for derived integers (confidence ranks).
    """
    dom = spec.domain
    attrs = _categorical(dom)
    k = len(attrs)
    # Only what the spec's literals test can change a verdict: derive nothing else (grounding dominates).
    used_attrs, used_rels = _mentioned(spec)
    if dom.noun is not None and any(node["op"] == "sum" for node, _ in formula_nodes(spec)):
        used_attrs.add(dom.noun)  # weights are looked up by the noun attribute's value, named or not
    lines = ["scene(S) :- scenes(K), S = 0..K-1.", f"object(S,I) :- o(S,I{',_' * k})."]
    for pos, a in enumerate(attrs):
        if a not in used_attrs:
            continue
        args = ["_"] * k
        args[pos] = "V"
        lines.append(f"hasProperty(S,I,{a},V) :- o(S,I,{','.join(args)}).")
    lines.append("hasProperty(S,I,A,V) :- num(S,I,A,V).")
    if dom.ordered:
        for rel in dom.relations:
            if rel not in used_rels:
                continue
            rule = dom.rules[rel]
            a, b = ("A", "B") if rule.sign < 0 else ("B", "A")
            ci, cj = ("A,_", "B,_") if rule.axis == "x" else ("_,A", "_,B")
            lines.append(f"hasRelationship(S,I,{rel},J) :- pos(S,I,{ci}), pos(S,J,{cj}), {a} < {b}.")
    else:
        lines.append(" ".join(f"relation_pair({r},{inv})." for r, inv in dom.canonical_relations()))
        lines.append("hasRelationship(S,I,R,J) :- r(S,I,R,J).")
        lines.append("hasRelationship(S,J,Q,I) :- r(S,I,R,J), relation_pair(R,Q).")
    rules = "".join(compile_constraint(c, i, batched=True, guards=not dom.ordered)
                    for i, c in enumerate(spec.constraints))
    count_ok = ("count_ok(S) :- scene(S)." if spec.n is None
                else f"count_ok(S) :- scene(S), #count{{ X : object(S,X) }} = {spec.n}.")
    return "\n".join([
        *lines,
        constants_program(dom),
        rules,
        count_ok,
        "#defined violated/2. #defined hasProperty/4. #defined hasRelationship/4. #defined object/2. "
        f"#defined o/{k + 2}.",
        "#defined pos/4. #defined num/4. #defined r/4.",
        "#show violated/2.",
        "#show count_ok/1.",
        "",
    ])


def batch_scene_facts(scenes: Sequence[Scene]) -> str:
    """Facts of scenes ``0..k-1`` for `batch_verify_program` (see there)."""
    out = [f"scenes({len(scenes)})."]
    for sid, scene in enumerate(scenes):
        objs = scene.objects
        if not objs:
            continue
        dom = scene.domain
        attrs = _categorical(dom)
        columns = [scene.derived(a) if a in dom.derived else [o.attributes[a] for o in objs] for a in attrs]
        for i in range(len(objs)):
            out.append(f"o({sid},{i},{','.join(asp_term(col[i]) for col in columns)}).")
        for a in dom.numeric_attributes:
            out.extend(f"num({sid},{i},{a},{v})." for i, v in enumerate(scene.derived(a)))
        if dom.ordered:
            centres = [o.center for o in objs]
            xr = {v: r for r, v in enumerate(sorted({c[0] for c in centres}))}
            yr = {v: r for r, v in enumerate(sorted({c[1] for c in centres}))}
            out.extend(f"pos({sid},{i},{xr[c[0]]},{yr[c[1]]})." for i, c in enumerate(centres))
        else:
            n = len(objs)
            out.extend(f"r({sid},{i},{r},{j})." for r, _ in dom.canonical_relations()
                       for i in range(n) for j in range(n) if scene.holds(r, i, j))
    return "\n".join(out) + "\n"


def spec_program(spec: Spec, catalog: Catalog | None = None) -> str:
    """A standalone program for the spec: it has an answer set iff the spec is satisfiable."""
    catalog = catalog or load_catalog()
    header = (
        f"% LogicVal specification{'' if spec.domain.name == 'clevr' else f' ({spec.domain.name})'}: "
        f"n = {'open' if spec.n is None else spec.n}, {spec.m} constraint(s): "
        + ", ".join(c.template_id for c in spec.constraints)
        + "\n% An answer set is a scene of n objects satisfying every constraint; none means UNSAT.\n"
    )
    parts = [
        header,
        *_generative_parts(spec),
        ":- violated(I).\n",
        "#defined violated/1.\n#defined hasRelationship/3.\n#show hasProperty/3.\n#show hasRelationship/3.\n",
    ]
    return "\n".join(parts)


def template_file(cls: str, catalog: Catalog | None = None) -> str:
    """Generated text of ``asp/templates/<cls>.lp``: the parametric program of every template of a class."""
    catalog = catalog or load_catalog()
    head = (
        f"% Class {cls} templates, compiled from catalog.json by logicval_hf.asp.encoding.compile_template.\n"
        "% Regenerate with `logicval asp --write-templates`; tests check these files are up to date.\n"
        "% violated(C) holds iff constraint C (given as parameter facts, see ../params.lp) fails.\n\n"
    )
    return head + "\n".join(compile_template(t) for t in catalog.by_class(cls))


def write_generated(root: str | Path | None = None, catalog: Catalog | None = None) -> list[Path]:
    """(Re)write the generated program files under ``root`` (default: `program_dir`, the repository's ``asp/`` in a
    checkout)."""
    catalog = catalog or load_catalog()
    root = Path(root) if root is not None else program_dir().resolve()
    (root / "templates").mkdir(parents=True, exist_ok=True)
    out = []
    files = {root / "clevr_vocabulary.lp": vocabulary_program(catalog.domain)}
    for cls in catalog.classes:
        files[root / "templates" / f"{cls}.lp"] = template_file(cls, catalog)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out
