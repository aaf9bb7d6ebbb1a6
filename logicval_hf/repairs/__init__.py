"""Repair: the closest scene that satisfies a spec, as edits a person, an image editor or an RL trainer can use.

`repair` (`api`) labels the spec, and for a SAT spec solves one clingo optimisation (``asp/repair.lp``, facts from
`facts` over the exact positions of `lattice`; `solve`), places the moved and added objects' boxes exactly
(`realise`; in a box-geometry domain whose spec reads relations, candidate boxes and ``asp/repair_boxes.lp``:
`boxes`), checks the repaired scene with `verify` and names every edit in English (`instructions`); `model` holds
`Edit`, `Repair` and the cost model.
"""

from logicval_hf.repairs.api import REPAIR_TIMEOUT, repair
from logicval_hf.repairs.model import DEFAULT_COSTS, EDIT_KINDS, Edit, Repair, apply_edits, check_costs, parse_costs

__all__ = ["DEFAULT_COSTS", "EDIT_KINDS", "Edit", "REPAIR_TIMEOUT", "Repair", "apply_edits", "check_costs",
           "parse_costs", "repair"]

