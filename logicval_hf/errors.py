"""Exceptions raised on bad input. All are `ValueError`s so callers can catch one thing."""


class SpecError(ValueError):
    """A constraint or spec breaks the contract (unknown template, bad slot value, n out of range, ...)."""


class SceneError(ValueError):
    """A scene graph is malformed (unknown attribute value, bad box, wrong type, ...)."""


class UnsafeProgramError(ValueError):
    """Untrusted ASP text tries to read files or run code (``#include``, ``#script``, ``@`` terms)."""


class SolverTimeout(RuntimeError):
    """Grounding or solving an untrusted program exceeded its time budget."""
