"""An independent, plain-Python reference semantics of the contract's JSON logic language (no solver).

Written from dsl.md / regions.md / catalog.json only, to serve as the second implementation in differential
tests against the ASP encoding. One job per module:

* `interpreter`: `formula_holds` / `constraint_holds` / `violated` / `spec_holds`, a direct Tarskian interpreter
  of dsl.md §3 over any *world* (an object with ``__len__``, ``attribute(i, prop)`` and ``holds(rel, a, b)``; a
  `Scene` of any domain is one, so is `AbstractWorld`).
* `worlds`: the `World` protocol and `AbstractWorld`, a world given by explicit attribute dicts and relation facts
  (orders, ties, anything), with CLEVR's admissibility (regions.md §5).
* `compiled`: the same semantics compiled into closures over a flat CLEVR world, exact or three-valued (Kleene).
* `search`: `brute_force_satisfiable` decides SAT/UNSAT of a CLEVR spec by enumerating *all* admissible scenes of
  exactly n objects (regions.md §5), made feasible by exact reductions (symmetry breaking, attribute abstraction),
  with the compiled semantics.
"""

from logicval_hf.contract.reference.interpreter import (
                                                        FormulaError,
                                                        constraint_holds,
                                                        formula_holds,
                                                        spec_holds,
                                                        violated,
)
from logicval_hf.contract.reference.search import (
                                                        DEFAULT_MAX_WORLDS,
                                                        BruteForceLimit,
                                                        brute_force_satisfiable,
                                                        is_tautology,
)
from logicval_hf.contract.reference.worlds import AbstractWorld, World

__all__ = [
    "AbstractWorld", "BruteForceLimit", "DEFAULT_MAX_WORLDS", "FormulaError", "World", "brute_force_satisfiable",
    "constraint_holds", "formula_holds", "is_tautology", "spec_holds", "violated",
]
