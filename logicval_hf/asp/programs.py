"""Assemble complete ASP programs for a spec from the checked-in ``asp/`` files and the compiled constraints.

* `solve_program(spec)`: the generative program whose answer sets are the admissible scenes of exactly n
  objects that satisfy every *active* constraint (``#external active(i)``), used for labels, witnesses and cores.
* `verify_program(spec, universe)`: constraint rules over a perceived scene given as ``#external`` atoms, so one
  grounding checks many scenes.
* `spec_program(spec)`: a standalone, readable program (what a dataset row stores): SAT iff the spec is.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Sequence

from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.asp.encoding import compile_constraint, compile_template, vocabulary_program
from logicval_hf.contract.spatial import RELATION_GEOMETRY
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import AttrLit, RelLit, Spec


@functools.lru_cache(maxsize=None)
def read_program(name: str) -> str:
    """Text of a checked-in program, e.g. ``"background.lp"`` or ``"templates/C3.lp"``."""
    return resources.files("logicval_hf.asp").joinpath("lp").joinpath(name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=8)
def vocabulary(domain: Domain) -> str:
    return vocabulary_program(domain)


def constraint_rules(spec: Spec) -> str:
    return "".join(compile_constraint(c, i) for i, c in enumerate(spec.constraints))


def solve_program(spec: Spec, catalog: Catalog | None = None, symmetry: bool = True) -> str:
    catalog = catalog or load_catalog()
    idx = " ".join(f"#external active({i}). [free]" for i in range(spec.m))
    parts = [
        vocabulary(catalog.domain),
        read_program("domain.lp"),
        read_program("background.lp"),
        read_program("symmetry.lp") if symmetry else "",
        f"object(0..{spec.n - 1}).\n",
        constraint_rules(spec),
        "% A constraint is enforced while its `active` assumption holds (for unsat cores).\n",
        idx + "\n",
        ":- violated(I), active(I).\n",
        "#defined violated/1.\n#show hasProperty/3.\n#show precedes/3.\n",
    ]
    return "\n".join(p for p in parts if p)


def scene_externals_program(universe: int, catalog: Catalog | None = None) -> str:
    """The perceived scene as external atoms over object slots 0..universe-1 (grounded before any spec rules).

    ``scene_rel`` carries only the first relation of each axis (``left``, ``behind``); the inverses are derived,
    so ties give neither direction, as in regions.md §6.
    """
    catalog = catalog or load_catalog()
    return "\n".join([
        vocabulary(catalog.domain),
        f"index(0..{universe - 1}).",
        "#external scene_object(I) : index(I). [free]",
        "#external scene_has(I,P,V) : index(I), property(P,V). [free]",
        "#external scene_rel(I,R,J) : index(I), index(J), I != J, axis_relation(_,R,_). [free]",
        "",
    ])


def verify_program(spec: Spec) -> str:
    """Constraint rules of a spec over the scene externals of `scene_externals_program`."""
    return "\n".join([
        "object(I) :- scene_object(I).",
        "hasProperty(I,P,V) :- scene_has(I,P,V).",
        "hasRelationship(I,R,J) :- scene_rel(I,R,J).",
        "hasRelationship(J,S,I) :- scene_rel(I,R,J), axis_relation(_,R,S).",
        constraint_rules(spec),
        f"count_ok :- #count{{ X : object(X) }} = {spec.n}.",
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


def batch_verify_program(spec: Spec, catalog: Catalog | None = None) -> str:
    """Constraint rules over many scenes at once.

    Scenes ``0..k-1`` arrive as ``scenes(k)`` and one fact per object, ``o(S,I,<attribute values>,Region,XR,YR)``
    (attributes in the domain's order; XR/YR are the dense ranks of the box centre's coordinates). Relations
    follow from the ranks, so equal ranks (ties) give no relation, as in regions.md §6.
    """
    catalog = catalog or load_catalog()
    attrs = catalog.domain.perceived_attributes
    k = len(attrs)
    # Only what the spec's literals test can change a verdict: derive nothing else (grounding dominates).
    used_attrs, used_rels = _mentioned(spec)
    lines = ["scene(S) :- scenes(K), S = 0..K-1.", f"object(S,I) :- o(S,I{',_' * (k + 3)})."]
    for pos, a in enumerate([*attrs, "region"]):
        if a not in used_attrs:
            continue
        args = ["_"] * (k + 3)
        args[pos] = "V"
        lines.append(f"hasProperty(S,I,{a},V) :- o(S,I,{','.join(args)}).")
    skip = ",".join(["_"] * (k + 1))
    lines.append(f"pos(S,I,X,Y) :- o(S,I,{skip},X,Y).")
    for rel, (axis, sign) in RELATION_GEOMETRY.items():
        if rel not in used_rels:
            continue
        a, b = ("A", "B") if sign < 0 else ("B", "A")
        ci, cj = ("A,_", "B,_") if axis == "x" else ("_,A", "_,B")
        lines.append(f"hasRelationship(S,I,{rel},J) :- pos(S,I,{ci}), pos(S,J,{cj}), {a} < {b}.")
    rules = "".join(compile_constraint(c, i, batched=True) for i, c in enumerate(spec.constraints))
    return "\n".join([
        *lines,
        rules,
        f"count_ok(S) :- scene(S), #count{{ X : object(S,X) }} = {spec.n}.",
        f"#defined violated/2. #defined hasProperty/4. #defined hasRelationship/4. #defined object/2. #defined o/{k + 5}.",
        "#defined pos/4.",
        "#show violated/2.",
        "#show count_ok/1.",
        "",
    ])


def batch_scene_facts(scenes: Sequence[Scene]) -> str:
    """Facts of scenes ``0..k-1`` for `batch_verify_program`: one ``o/…`` fact per object."""
    out = [f"scenes({len(scenes)})."]
    for sid, scene in enumerate(scenes):
        objs = scene.objects
        if not objs:
            continue
        attrs = scene.domain.perceived_attributes
        centres = [o.center for o in objs]
        xr = {v: r for r, v in enumerate(sorted({c[0] for c in centres}))}
        yr = {v: r for r, v in enumerate(sorted({c[1] for c in centres}))}
        regions = scene.regions()
        for i, o in enumerate(objs):
            vals = ",".join(o.attributes[a] for a in attrs)
            out.append(f"o({sid},{i},{vals},{regions[i]},{xr[centres[i][0]]},{yr[centres[i][1]]}).")
    return "\n".join(out) + "\n"


def spec_program(spec: Spec, catalog: Catalog | None = None) -> str:
    """A standalone program for the spec: it has an answer set iff the spec is satisfiable."""
    catalog = catalog or load_catalog()
    header = (
        f"% LogicVal specification: n = {spec.n}, {spec.m} constraint(s): "
        + ", ".join(c.template_id for c in spec.constraints)
        + "\n% An answer set is a scene of n objects satisfying every constraint; none means UNSAT.\n"
    )
    parts = [
        header,
        vocabulary(catalog.domain),
        read_program("domain.lp"),
        read_program("background.lp"),
        read_program("symmetry.lp"),
        f"object(0..{spec.n - 1}).\n",
        constraint_rules(spec),
        ":- violated(I).\n",
        "#defined violated/1.\n#show hasProperty/3.\n#show hasRelationship/3.\n",
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


#: Where the checked-in programs live (package data, read by `program_text`).
PROGRAM_DIR = Path(__file__).resolve().parent / "lp"


def write_generated(root: str | Path | None = None, catalog: Catalog | None = None) -> list[Path]:
    """(Re)write the generated program files under ``root`` (default: the package's `PROGRAM_DIR`)."""
    catalog = catalog or load_catalog()
    root = Path(root) if root is not None else PROGRAM_DIR
    (root / "templates").mkdir(parents=True, exist_ok=True)
    out = []
    files = {root / "clevr_vocabulary.lp": vocabulary_program(catalog.domain)}
    for cls in catalog.classes:
        files[root / "templates" / f"{cls}.lp"] = template_file(cls, catalog)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out
