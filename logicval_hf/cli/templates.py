"""``logicval templates``: the constraint templates a spec may use, by class, each with a one-line example (drawn
with a fixed seed at n = 6, so the list is the same on every run), or as JSON."""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from typing import Any

from logicval_hf.cli.dispatch import standalone

__all__ = ["CLASS_FORMS", "add_subcommands", "main", "template_table"]

#: each class's logical form, in words (the template contract's abstract forms)
CLASS_FORMS = {
    "C1": "existential: there is an object with these properties",
    "C2": "universal: every object has these properties",
    "C3": "conditional: every object with these properties also has those",
    "C4": "existential subgraph: some objects with these properties stand in these relations",
    "C5": "conditional subgraph: every pair in these relations also has those properties or relations",
    "C6": "exists-forall: one object stands in a relation to every object of a kind",
    "C7": "forall-exists: every object of a kind has another in a relation to it",
    "C8": "count against a constant: exactly / at least / at most K objects of a kind",
    "C9": "count against a count: as many / more / fewer objects of one kind than of another",
    "X1": "count with any comparator (extension: other benchmarks' counts)",
    "X2": "the K most confidently detected objects of a kind have a property (extension)",
    "X3": "the K most confident detections of two kinds stand in a relation (extension)",
    "X4": "every object of one group stands in a relation to every object of another (extension)",
    "X5": "a weighted sum of counts, e.g. legs per class, against a constant (extension)",
    "X6": "an object with two properties stands in a relation to one with one property (extension: GIR-Bench)",
}
#: scene size of the examples
EXAMPLE_N = 6


def template_table(classes: Sequence[str] = (), extensions: bool = False) -> list[dict[str, Any]]:
    """One entry per template: ``{"id", "class", "form", "slots", "example"}`` (the paper's C1-C9, in catalog
    order; with ``extensions`` also X1-X6, whose example is their sentence pattern)."""
    from logicval_hf.contract.catalog import load_catalog
    from logicval_hf.contract.params import random_constraint
    from logicval_hf.contract.verbalise import constraint_text

    catalog = load_catalog()
    known = list(catalog.classes) + (sorted({t.cls for t in catalog.extensions.values()}) if extensions else [])
    unknown = [c for c in classes if c not in known]
    if unknown:
        raise ValueError(f"--class {unknown[0]!r}: no such class; classes are {', '.join(known)}")
    out = []
    for tid, t in [*catalog.templates.items(), *(catalog.extensions.items() if extensions else ())]:
        if classes and t.cls not in classes:
            continue
        if tid in catalog.templates:
            example = constraint_text(random_constraint(t, EXAMPLE_N, random.Random(tid), catalog), EXAMPLE_N)
        else:  # an extension of another domain: its sentence pattern, slots in braces
            example = t.nl.get("short", "")
        out.append({"id": tid, "class": t.cls, "form": CLASS_FORMS.get(t.cls, ""),
                    "slots": [s.name for s in t.slots], "example": example})
    return out


def cmd_templates(args: argparse.Namespace) -> int:
    table = template_table([c.strip().upper() for c in args.cls or ()], args.extensions)
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    width = max(len(r["id"]) for r in table)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in table:
        groups.setdefault(r["class"], []).append(r)
    for k, (cls, rows) in enumerate(groups.items()):
        print(("\n" if k else "") + f"{cls} {rows[0]['form']}".rstrip())
        for r in rows:
            print(f"  {r['id']:<{width}}  {r['example']}")
    print(f"\n{len(table)} templates. Use one in a spec as {{\"template\": \"<id>\", \"params\": {{...}}}}; "
          f"examples at n = {EXAMPLE_N}. `logicval templates --json` lists each template's slots.")
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``templates`` on the ``logicval`` subparsers."""
    t = sub.add_parser("templates", help="list the constraint templates by class, each with a one-line example")
    t.add_argument("--class", dest="cls", action="append", metavar="C",
                   help="only this class (C1..C9; repeat for several)")
    t.add_argument("--extensions", action="store_true",
                   help="also the extension templates X1-X6 (other benchmarks' rules, e.g. the coco domain)")
    t.add_argument("--json", action="store_true", help="one JSON object per template (id, class, slots, example)")
    t.set_defaults(func=cmd_templates)


#: ``python -m logicval_hf.cli.templates``: the command alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "LogicVal templates.")

if __name__ == "__main__":
    sys.exit(main())
