"""Drawing valid template parameters: uniform over the instances the catalog allows at a scene size.

Each slot is drawn uniformly from its own allowed values (attribute literals over the slot's ``props``,
relations, comparators, counts with their overflow range), and whole parameter sets that break a slot rule
are rejected and redrawn, which is uniform over the valid parameter sets.
"""

from __future__ import annotations

import random
from typing import Any

from logicval_hf.contract.catalog import Catalog, Slot, Template, load_catalog
from logicval_hf.contract.spec import Constraint
from logicval_hf.errors import SpecError

_MAX_TRIES = 10_000


def slot_choices(slot: Slot, n: int, catalog: Catalog) -> list[Any]:
    """Every JSON value the slot may take at scene size n (before the template's slot rules)."""
    dom = catalog.domain
    if slot.type == "attr":
        neg = bool(slot.negated)
        return [{"prop": p, "value": v, "negated": neg} for p in slot.props for v in dom.attributes[p]]
    if slot.type == "rel":
        return [{"rel": r, "negated": bool(slot.negated)} for r in slot.values]
    if slot.type == "count":
        lo, hi = slot.count_range(n, dom.n_max)
        return list(range(lo, hi + 1))
    if slot.type == "theta":
        return list(slot.values)
    raise ValueError(f"unknown slot type {slot.type!r}")


def random_constraint(
    template: Template | str, n: int, rng: random.Random, catalog: Catalog | None = None
) -> Constraint:
    """A uniformly drawn valid instance of ``template`` at scene size ``n``."""
    catalog = catalog or load_catalog()
    if isinstance(template, str):
        template = catalog.template(template)
    choices = {s.name: slot_choices(s, n, catalog) for s in template.slots}
    for _ in range(_MAX_TRIES):
        params = {name: rng.choice(vals) for name, vals in choices.items()}
        try:
            return Constraint.from_dict({"template": template.id, "params": params}, n=n, catalog=catalog)
        except SpecError:
            continue
    raise RuntimeError(f"no valid parameters found for {template.id} at n={n}")
