"""LogicVal-HF: text-to-image evaluation as constraint satisfaction (ASP specs, clingo labels, scene graphs)."""

from .catalog import Catalog, Domain, Slot, Template, load_catalog
from .errors import SceneError, SolverTimeout, SpecError, UnsafeProgramError
from .scene import Scene, SceneObject
from .spec import AttrLit, Constraint, RelLit, Spec

__version__ = "0.1.0"

__all__ = [
    "AttrLit", "Catalog", "Constraint", "Domain", "RelLit", "Scene", "SceneError", "SceneObject", "Slot",
    "SolverTimeout", "Spec", "SpecError", "Template", "UnsafeProgramError", "load_catalog", "__version__",
]
