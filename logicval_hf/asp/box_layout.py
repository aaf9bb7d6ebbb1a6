"""Boxes for given relations: decide whether n objects can stand in exactly these box relations, and draw them.

The same two steps as solving a spec (`logicval_hf.asp.labelling`), for callers that choose the relations themselves
(a repair that moves or adds objects in a box-geometry domain): the relations are order atoms that must obey what
every set of boxes obeys (``box_orders.lp``), then a placement (``box_placement.lp``) gives them and
`logicval_hf.asp.placement.realise` draws its boxes with exact arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import clingo

from logicval_hf.asp.budget import Deadline
from logicval_hf.asp.labelling import CLINGO_ARGS, PLACING_ARGS, Atom, control, parse_atoms, placement_steps
from logicval_hf.asp.placement import FloatBox, Placement, families, placement_facts, realise, undecided
from logicval_hf.asp.programs import read_program, vocabulary
from logicval_hf.contract.domain import Domain
from logicval_hf.errors import SolverLimit

__all__ = ["place_boxes"]


def _order_atoms(domain: Domain, fams: dict[str, str], relations: Iterable[tuple[int, str, int]]) -> list[str]:
    """``want(F,A,B)`` facts: each relation as its family's canonical order atom."""
    canonical = {r: f for f, r in fams.items()}
    facts = []
    for i, rel, j in relations:
        if rel in canonical:
            facts.append(f"want({canonical[rel]},{i},{j}).")
        else:
            facts.append(f"want({canonical[domain.rules[rel].inverse]},{j},{i}).")
    return facts


def place_boxes(domain: Domain, n: int, relations: Iterable[tuple[int, str, int]],
                image_size: Sequence[float] | None = None, families_read: Iterable[str] = (),
                timeout: float | None = None) -> list[FloatBox] | None:
    """Boxes (in the image) for objects ``0..n-1`` whose relations of the families read are exactly ``relations``:
    every triple ``(i, relation, j)`` holds and every other relation of those families does not.

    Args:
        domain: a box-geometry domain (COCO).
        relations: the triples that must hold (relation names of the domain, either of an inverse pair).
        families_read: relation names whose families are decided besides those of ``relations`` (a family with no
            triple has none of its relations); the relations of every other family come out as they fall.
        timeout: a budget in seconds (None: none).
    Returns:
        One box per object, or None when no boxes have these relations (they break a rule of box geometry).
    Raises:
        SolverLimit: the relations obey every rule, but no placement the solver builds realises them (or the boxes
            would be finer than the offset rule's resolution).
        SolverTimeout: past the budget.
    """
    triples = list(relations)
    fams = families(domain, [r for _, r, _ in triples] + list(families_read))
    deadline = Deadline(timeout)
    base = "\n".join([vocabulary(domain), f"object(0..{n - 1}).", placement_facts(domain, fams),
                      " ".join(_order_atoms(domain, fams, triples)), read_program("box_orders.lp"),
                      read_program("box_layout.lp")])
    if not control(base, CLINGO_ARGS).solve().satisfiable:
        return None
    failure: SolverLimit = undecided(fams)
    for _, grid in placement_steps(n, set(fams), fixed=True):
        ctl = control(base + placement_facts(domain, {}, grid) + read_program("box_placement.lp"), PLACING_ARGS)
        model: list[Atom] = []

        def first(m: clingo.Model, found: list[Atom] = model) -> bool:
            found.extend(parse_atoms(str(m)))
            return False

        if deadline.solve(ctl, [], first, lambda core: None).satisfiable:
            try:
                boxes = realise(domain, fams, Placement.from_atoms(range(n), model),
                                image_size or domain.image_size)
                return [boxes[i] for i in range(n)]
            except SolverLimit as e:
                failure = e
    raise failure
