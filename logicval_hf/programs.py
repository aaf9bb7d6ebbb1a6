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

from .catalog import Catalog, Domain, load_catalog
from .encoding import compile_constraint, compile_template, vocabulary_program
from .spec import Spec


@functools.lru_cache(maxsize=None)
def read_program(name: str) -> str:
    """Text of a checked-in program, e.g. ``"background.lp"`` or ``"templates/C3.lp"``."""
    return resources.files("logicval_hf.asp_programs").joinpath(name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=8)
def vocabulary(domain: Domain) -> str:
    return vocabulary_program(domain)


def constraint_rules(spec: Spec) -> str:
    return "".join(compile_constraint(c, i) for i, c in enumerate(spec.constraints))


def solve_program(spec: Spec, catalog: Catalog | None = None, symmetry: bool = True) -> str:
    catalog = catalog or load_catalog()
    idx = " ".join(f"#external active({i})." for i in range(spec.m))
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


def verify_program(spec: Spec, universe: int, catalog: Catalog | None = None) -> str:
    catalog = catalog or load_catalog()
    parts = [
        vocabulary(catalog.domain),
        "% The perceived scene: objects 0..universe-1, given per call as assumptions on external atoms.\n",
        f"index(0..{universe - 1}).\n",
        "#external object(I) : index(I).\n",
        "#external hasProperty(I,P,V) : index(I), property(P,V).\n",
        "#external hasRelationship(I,R,J) : index(I), index(J), I != J, relation(R).\n",
        constraint_rules(spec),
        f"count_ok :- #count{{ X : object(X) }} = {spec.n}.\n",
        "#defined violated/1.\n#show violated/1.\n#show count_ok/0.\n",
    ]
    return "\n".join(parts)


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
        f"% Class {cls} templates, compiled from catalog.json by logicval_hf.encoding.compile_template.\n"
        "% Regenerate with `logicval asp --write-templates`; tests check these files are up to date.\n"
        "% violated(C) holds iff constraint C (given as parameter facts, see ../params.lp) fails.\n\n"
    )
    return head + "\n".join(compile_template(t) for t in catalog.by_class(cls))


def write_generated(root: str | Path, catalog: Catalog | None = None) -> list[Path]:
    """(Re)write the generated program files under ``root`` (the repository's ``asp/``)."""
    catalog = catalog or load_catalog()
    root = Path(root)
    (root / "templates").mkdir(parents=True, exist_ok=True)
    out = []
    files = {root / "clevr_vocabulary.lp": vocabulary_program(catalog.domain)}
    for cls in catalog.classes:
        files[root / "templates" / f"{cls}.lp"] = template_file(cls, catalog)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out
