"""An independent, plain-Python reference semantics of the contract's JSON logic language (no solver).

Written from docs/spec_language.md, docs/regions.md and catalog.json only, to serve as the second implementation in
differential tests against the ASP encoding. One job per module:

* `interpreter`: `formula_holds` / `constraint_holds` / `violated` / `spec_holds`, a direct Tarskian interpreter
  of docs/spec_language.md §4 over any *world* (an object with ``__len__``, ``attribute(i, prop)`` and
  ``holds(rel, a, b)``; a `Scene` of any domain is one, so is `AbstractWorld`).
* `worlds`: the `World` protocol and `AbstractWorld`, a world given by explicit attribute dicts and relation facts
  (orders, ties, anything), with CLEVR's admissibility (docs/regions.md §5).

The exhaustive SAT/UNSAT search over CLEVR scenes built on it is a test helper (`tests/clevr_brute_force.py`).
"""

from logicval_hf.contract.reference.interpreter import (
                                                        FormulaError,
                                                        constraint_holds,
                                                        formula_holds,
                                                        spec_holds,
                                                        violated,
)
from logicval_hf.contract.reference.worlds import AbstractWorld, World

__all__ = [
    "AbstractWorld", "FormulaError", "World", "constraint_holds", "formula_holds", "spec_holds", "violated",
]
