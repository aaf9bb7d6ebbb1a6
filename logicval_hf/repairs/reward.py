"""A dense reward from the repair cost: how far an image is from right, counted in edits.

``reward = 1 / (1 + cost)``, where ``cost`` is the cost of the cheapest repair under the strict count and the
default costs (one per changed value, moved, added or removed object): 1 for an image that satisfies its spec,
1/2 one edit away, 1/3 two edits away. For an unsatisfiable spec the repair removes every object, so the reward
rises as objects go, to 1 for the empty scene. Past the repair's budget the best repair found so far gives the
cost (an upper bound, so the reward never overstates).
"""

from __future__ import annotations

from typing import Any

from logicval_hf.repairs.api import repair


def repair_reward(spec: Any, scene: Any, label: str | None = None, solver: Any = None) -> float:
    """``1 / (1 + cost)`` of the cheapest repair of ``scene`` for ``spec`` (strict count, default costs)."""
    del label  # the repair labels the spec itself (a label the solver has proved is cached)
    return 1.0 / (1.0 + repair(spec, scene, solver=solver).cost)


__all__ = ["repair_reward"]
