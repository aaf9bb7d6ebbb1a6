"""LogicVal-HF: text-to-image evaluation as constraint satisfaction (ASP specs, clingo labels, scene graphs)."""

from typing import TYPE_CHECKING

from logicval_hf.common.version import __version__
from logicval_hf.contract.catalog import Catalog, Domain, Slot, Template, load_catalog
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import AttrLit, Constraint, RelLit, Spec
from logicval_hf.errors import SceneError, SolverTimeout, SpecError, UnsafeProgramError

if TYPE_CHECKING:  # the lazy entry points below, spelled out for type checkers and editors
    from logicval_hf.asp.solver import Solver, SolveResult, Verdict, solve, verify, verify_many
    from logicval_hf.perception import extract_scene, extract_scenes
    from logicval_hf.repairs import Edit, Repair, repair
    from logicval_hf.scoring.metric_push import metric_path
    from logicval_hf.scoring.probabilistic import probability
    from logicval_hf.training.captions import ground_captions

# Entry points resolved on first use, so `import logicval_hf` stays light.
_LAZY = {
    "solve": ("asp.solver", "solve"),
    "verify": ("asp.solver", "verify"),
    "verify_many": ("asp.solver", "verify_many"),
    "Solver": ("asp.solver", "Solver"),
    "SolveResult": ("asp.solver", "SolveResult"),
    "Verdict": ("asp.solver", "Verdict"),
    "extract_scene": ("perception", "extract_scene"),
    "extract_scenes": ("perception", "extract_scenes"),
    "ground_captions": ("training.captions", "ground_captions"),
    "probability": ("scoring.probabilistic", "probability"),
    "metric_path": ("scoring.metric_push", "metric_path"),
    "repair": ("repairs.api", "repair"),
    "Repair": ("repairs.model", "Repair"),
    "Edit": ("repairs.model", "Edit"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'logicval_hf' has no attribute {name!r}")

__all__ = [
    "AttrLit", "Catalog", "Constraint", "Domain", "RelLit", "Scene", "SceneError", "SceneObject", "Slot",
    "SolverTimeout", "Spec", "SpecError", "Template", "UnsafeProgramError", "load_catalog", "__version__",
    # the keys of _LAZY
    "solve", "verify", "verify_many", "Solver", "SolveResult", "Verdict", "extract_scene", "extract_scenes",
    "ground_captions", "probability", "metric_path", "repair", "Repair", "Edit",
]
