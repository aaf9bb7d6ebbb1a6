"""Label a spec in a child process that is killed at its budget.

Grounding cannot be interrupted in-process, so a spec whose program could take long to ground
(`logicval_hf.asp.programs.grounding_estimate` above `logicval_hf.asp.solver.ISOLATE_ABOVE`) is labelled here:
the parent waits for the child at most the budget left (and a start-up allowance) and kills it past that; the child
solves under the same deadline (so it stops by itself when solving is what takes long) and prints the result as
JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from logicval_hf.asp.budget import Deadline
from logicval_hf.asp.labelling import SolveResult, label_here
from logicval_hf.contract.scene import Scene
from logicval_hf.errors import SolverLimit, SolverTimeout, SpecError

#: seconds the child may take beyond the budget to start (interpreter and imports) before it is killed
START_UP = 0.9
#: the child's address-space cap: a grounding that would outgrow it ends the child, reported as past its budget
MEMORY_MB = 4096


def solve_in_child(spec: Any, image_size: tuple[float, float], deadline: Deadline) -> SolveResult:
    """A `SolveResult` computed in a child process within ``deadline``.

    Raises:
        SolverTimeout: the child did not answer within the budget (it is killed).
        SpecError: the child refused the spec (the same errors as in-process; `SolverLimit` stays one).
    """
    left = deadline.remaining()
    if left is None:
        raise ValueError("solve_in_child needs a budget")
    if left <= 0:
        raise deadline.expired("grounding")
    request = json.dumps({"spec": spec.to_dict(), "image_size": list(image_size), "timeout": deadline.timeout,
                          "end": deadline.end})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    try:
        proc = subprocess.run([sys.executable, "-m", "logicval_hf.asp.isolated"], input=request, capture_output=True,
                              text=True, timeout=left + START_UP, env=env, check=False)
    except subprocess.TimeoutExpired:  # subprocess.run kills the child before raising
        raise deadline.expired("grounding") from None
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        if "MemoryError" in proc.stderr or "bad_alloc" in proc.stderr:
            raise SolverTimeout(f"labelling the spec exceeded its memory budget of {MEMORY_MB} MB (during "
                                "grounding)", deadline.timeout) from None
        tail = (proc.stderr or "no output").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the solver's child process failed: {tail[0]}") from None
    if "timeout" in out:  # the child's own budget was what remained of ours: report ours
        raise deadline.expired("solving")
    if "error" in out:
        raise (SolverLimit if out.get("limit") else SpecError)(out["error"])
    witness = Scene.from_dict(out["witness"], spec.domain) if out["witness"] is not None else None
    return SolveResult(bool(out["satisfiable"]), witness=witness,
                       core=tuple(out["core"]) if out["core"] is not None else None)


def main() -> None:
    try:
        import resource

        cap = MEMORY_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # not available here: the parent's kill at the budget still applies
        pass
    req = json.load(sys.stdin)
    try:
        result = label_here(req["spec"], tuple(req["image_size"]), Deadline(req["timeout"], end=req["end"]))
        json.dump(result.to_dict(), sys.stdout)
    except SolverTimeout as e:
        json.dump({"timeout": str(e)}, sys.stdout)
    except SpecError as e:
        json.dump({"error": str(e), "limit": isinstance(e, SolverLimit)}, sys.stdout)


if __name__ == "__main__":
    main()
