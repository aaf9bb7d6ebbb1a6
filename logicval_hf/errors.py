"""Exceptions raised on bad input. All are `ValueError`s so callers can catch one thing."""


class SpecError(ValueError):
    """A constraint or spec breaks the contract (unknown template, bad slot value, n out of range, ...)."""


class SceneError(ValueError):
    """A scene graph is malformed (unknown attribute value, bad box, wrong type, ...)."""


class UnsafeProgramError(ValueError):
    """Untrusted ASP text tries to read files or run code (``#include``, ``#script``, ``@`` terms)."""


class SolverLimit(SpecError):
    """A spec with an open scene size may need more objects than its domain's ``max_objects`` (the hard limit on
    the universe the solver searches), or asks for box relations whose realisability the solver's placements do not
    decide (`logicval_hf.asp.placement`): no label is given, rather than one that is the limit's, not the spec's."""


class SolverTimeout(ValueError, RuntimeError):
    """Labelling a spec, or grounding and solving an untrusted program, exceeded its time budget.

    A `ValueError` like every error here (the input was too hard for its budget), and a `RuntimeError` as before.
    ``budget`` is the budget in seconds."""

    def __init__(self, message: str, budget: float | None = None):
        super().__init__(message)
        self.budget = budget
