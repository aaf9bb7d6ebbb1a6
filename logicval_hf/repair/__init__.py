"""Repair: the closest scene that satisfies a spec, as edits a person, an image editor or an RL trainer can use.

`repair` (`api`) labels the spec, and for a SAT spec solves one clingo optimisation (``asp/repair.lp``, facts from
`facts` over the exact positions of `lattice`; `solve`), places the moved and added objects' boxes exactly
(`realise`), checks the repaired scene with `verify` and names every edit in English (`instructions`); `model`
holds `Edit`, `Repair` and the cost model.

This package shares its name with its entry point, and Python makes ``logicval_hf.repair`` this package once it is
imported; so the package is callable too, and ``logicval_hf.repair(spec, scene)`` calls `repair` whichever of the
two the name holds.
"""

import sys
import types
from typing import Any

from logicval_hf.repair.api import REPAIR_TIMEOUT, repair
from logicval_hf.repair.model import DEFAULT_COSTS, EDIT_KINDS, Edit, Repair, apply_edits, check_costs, parse_costs

__all__ = ["DEFAULT_COSTS", "EDIT_KINDS", "Edit", "REPAIR_TIMEOUT", "Repair", "apply_edits", "check_costs",
           "parse_costs", "repair"]


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Repair:
        return repair(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
