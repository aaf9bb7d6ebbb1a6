"""`repair`: the closest scene that satisfies a spec, as the edits that make it (set, move, remove, add)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.solver import Solver, check_mode, default_solver
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.errors import SceneError, SolverLimit
from logicval_hf.repairs.boxes import room_for
from logicval_hf.repairs.facts import Problem
from logicval_hf.repairs.instructions import describe
from logicval_hf.repairs.model import Edit, Repair, apply_edits, check_costs
from logicval_hf.repairs.realise import boxes
from logicval_hf.repairs.solve import Budget, Choice, search

#: the budget of a repair when none is given (the entry points' default budget for labels)
REPAIR_TIMEOUT = DEFAULT_TIMEOUT


def _budget(timeout: Any) -> float | None:
    if timeout is None:
        return REPAIR_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or math.isnan(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a positive number of seconds (math.inf for no budget), got {timeout!r}")
    return None if math.isinf(timeout) else float(timeout)


def scene_limit(spec: Spec) -> int:
    """The largest input scene a repair takes: twice the domain's largest scene (its ``max_objects`` where the
    scene size is open)."""
    dom = spec.domain
    return dom.n_max if dom.open_size else 2 * dom.n_max


def _parse(spec: Any, scene: Any, solver: Solver) -> tuple[Spec, Scene]:
    spec = as_spec(spec, solver.catalog)
    if not isinstance(scene, Scene):
        scene = Scene.from_dict(scene, spec.domain)
    elif scene.domain != spec.domain:
        raise SceneError(f"scene: the scene is in domain {scene.domain.name!r}, the spec in {spec.domain.name!r}")
    limit = scene_limit(spec)
    if len(scene) > limit:
        raise SolverLimit(f"scene: {len(scene)} objects; a repair in domain {spec.domain.name!r} takes at most {limit}")
    return spec, scene


def _edits(problem: Problem, choice: Choice, placed: Mapping[int, tuple[float, float, float, float]],
           index: list[int]) -> list[Edit]:
    """The choice as edits on the input (``index``: input index of each counted object)."""
    dom = problem.scene.domain
    out: list[Edit] = []
    for o, obj in enumerate(problem.scene.objects):
        if o in choice.removed:
            out.append(Edit("remove", index[o]))
            continue
        for a in dom.perceived_attributes:
            if choice.values[o][a] != obj.attributes[a]:
                out.append(Edit("set", index[o], a, obj.attributes[a], choice.values[o][a]))
        if o in choice.moved:
            out.append(Edit("move", index[o], bbox=placed[o]))
    for j in choice.added:
        out.append(Edit("add", None, new={a: choice.values[j][a] for a in dom.perceived_attributes}, bbox=placed[j]))
    return out


def _cost(edits: list[Edit], costs: Mapping[str, int]) -> int:
    return sum(costs[e.kind] for e in edits)


def repair(spec: Any, scene: Any, *, count: str = "strict", costs: Mapping[str, int] | None = None,
           timeout: float | None = None, solver: Solver | None = None) -> Repair:
    """The cheapest edits after which ``scene`` satisfies ``spec``, and the scene they give.

    Args:
        spec: a `Spec`, its dict or its JSON.
        scene: a `Scene`, its dict or its JSON (read in the spec's domain).
        count: ``"strict"`` (the repaired scene has exactly n objects) or ``"relaxed"`` (any number), as `verify`.
        costs: the cost of each edit kind, ``{"set": 1, "move": 1, "add": 1, "remove": 1}`` by default (positive
            integers; a key left out keeps its default).
        timeout: the budget in seconds for labelling the spec and optimising (default `REPAIR_TIMEOUT`; ``math.inf``:
            none). Past it the best repair found so far is returned with ``optimal=False``.
        solver: the `Solver` to label and verify with (default: the shared one).
    Returns:
        A `Repair`; ``verify(spec, repair.scene, count).ok`` always holds.
    Raises:
        SpecError, SceneError: a malformed spec or scene; `SolverLimit` (a SpecError): a scene larger than
            `scene_limit`, or in a box domain relations that no choice of candidate boxes meets (`boxes`).
            ValueError: an unknown cost key, a weight that is not a positive integer, a bad count or timeout.
            SolverTimeout: the budget ended before the spec was labelled or any repair was found.
    """
    solver = solver or default_solver()
    check_mode(count)
    weights = check_costs(costs)
    budget = Budget(_budget(timeout))
    spec, scene = _parse(spec, scene, solver)
    left = budget.left()
    label = solver.solve(spec, timeout=left if left is None else max(left, 1e-9))  # a label known already is free
    threshold = spec.score_threshold
    index = [i for i, o in enumerate(scene.objects) if threshold is None or o.score is None or o.score > threshold]
    counted = Scene(scene.image_size, tuple(scene.objects[i] for i in index), scene.domain)

    read: set[str] = set()  # the relations the spec reads (anchors of the sentences in a box domain)

    def finish(edits: list[Edit], optimal: bool) -> Repair:
        repaired = apply_edits(scene, edits)
        return Repair(label.satisfiable, _cost(edits, weights), optimal, tuple(edits), repaired,
                      tuple(describe(scene, edits, repaired, read)), label.core, count, weights)

    if not label.satisfiable:  # the right image is empty
        return finish([Edit("remove", i) for i in index], True)
    if solver.verify(spec, counted, count=count, label="SAT").ok:
        return finish([], True)
    problem = Problem(spec, counted, count, weights)
    room = room_for(problem, [o.bbox for i, o in enumerate(scene.objects) if i not in set(index)])
    read.update(problem.tested()[1])
    results: dict[int, tuple[Choice, list[Edit]]] = {}  # the choice is kept so that its id stays its own

    def realisable(choice: Choice) -> bool:
        placed = boxes(problem, choice) if room is None else room.realise(choice)
        if placed is None:
            return False
        edits = _edits(problem, choice, placed, index)
        if not solver.verify(spec, apply_edits(scene, edits), count=count, label="SAT").ok:
            return False
        results[id(choice)] = (choice, edits)
        return True

    best = search(problem, budget, realisable, None if room is None else room.checker)
    left = budget.left()
    if best is None and room is not None and (left is None or left > 0):
        raise SolverLimit(f"repair in domain {spec.domain.name!r}: no repair places its moved and added objects "
                          f"among the candidate boxes ({len(room.classes)} classes; docs/repair.md, Domains)")
    if best is None:  # no repair found (the budget ended first): replace every object by the solver's witness
        witness = solver.solve(spec, image_size=scene.image_size).witness
        if witness is None:
            raise RuntimeError("internal error: a satisfiable spec without a witness")
        return finish([Edit("remove", i) for i in index]
                      + [Edit("add", None, new=dict(o.attributes), bbox=o.bbox) for o in witness.objects], False)
    edits = results[id(best)][1]
    if _cost(edits, weights) != best.cost:
        raise RuntimeError(f"internal error: the edits cost {_cost(edits, weights)}, the solver's choice {best.cost}")
    return finish(edits, best.optimal and (room is None or not room.capped))
