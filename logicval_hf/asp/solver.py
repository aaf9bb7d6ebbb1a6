"""clingo behind three questions: is a spec satisfiable (with a witness scene or a minimal unsat core), and
does a given scene satisfy it.

Grounded programs are reused: one `clingo.Control` per spec answers the label, the witness and every
core-shrinking step through assumptions on ``active(i)``; one per (spec, universe size) verifies any number
of scenes through assumptions on the scene's external atoms. Both caches are LRU and thread-safe.

Time budgets. ``solve(spec, timeout=...)`` (or ``Solver(timeout=...)``) answers within the budget or raises
`SolverTimeout`, never a label it has not proved. Solving is interrupted at the budget (clingo's asynchronous
solve); grounding cannot be, so it is bounded by design: a spec whose program could take long to ground
(`logicval_hf.asp.programs.grounding_estimate` above `ISOLATE_ABOVE`) is labelled in a child process that is
killed at the budget (`logicval_hf.asp.isolated`); every other grounding takes a fraction of a second. A result
is cached only when it was found within its budget.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from logicval_hf.asp.budget import Deadline, check_timeout
from logicval_hf.asp.isolated import solve_in_child
from logicval_hf.asp.labelling import SolveResult, SpecSolver, pair
from logicval_hf.asp.programs import grounding_estimate, read_program
from logicval_hf.asp.verifier import SceneLayout, ScenesVerifier, Verdict, check_mode, verdict, verify_batch
from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Constraint, Spec, as_spec
from logicval_hf.errors import SceneError

__all__ = ["DEFAULT", "DEFAULT_IMAGE_SIZE", "ISOLATE_ABOVE", "REUSED_GROUNDING_UP_TO", "Default", "SolveResult",
           "Solver", "Verdict", "check_mode", "default_solver", "solve", "verify", "verify_many"]

DEFAULT_IMAGE_SIZE = (480, 320)
#: ground-size estimate above which a spec is labelled in a child process (grounding could outlast a budget);
#: calibrated at about a microsecond of grounding per unit, so in-process grounding stays under half a second
ISOLATE_ABOVE = 500_000
#: scenes of at most this many objects (for a spec of n at most this) are checked against a grounding reused across
#: scenes, whose scene atoms hold every pair of objects (`SceneLayout`: fastest for small scenes, but its grounding
#: grows as a power of the size); larger ones from facts in a grounding of their own (`verify_batch`), whose time
#: grows with the tuples of objects the spec's literals admit
REUSED_GROUNDING_UP_TO = 32


class Default:
    """The type of `DEFAULT`: "the solver's own budget" (None means no budget)."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = Default()


class Solver:
    """Labels specs and verifies scenes, reusing grounded programs (LRU caches keyed by the spec).

    Args:
        catalog: the template catalog (default: the shipped one).
        max_specs, max_verifiers: sizes of the two caches.
        timeout: the default budget in seconds of every label this solver computes (`solve`, and `verify` of a
            spec given without its label); None: no budget. A call's own ``timeout`` overrides it.
    """

    def __init__(self, catalog: Catalog | None = None, max_specs: int = 256, max_verifiers: int = 128,
                 timeout: float | None = None):
        self.catalog = catalog or load_catalog()
        self._results: collections.OrderedDict[str, SolveResult] = collections.OrderedDict()
        self._verifiers: collections.OrderedDict[tuple[str, int], ScenesVerifier] = collections.OrderedDict()
        self._layouts: dict[tuple[Domain, int], SceneLayout] = {}
        self.max_specs = max_specs
        self.max_verifiers = max_verifiers
        self.timeout = check_timeout(timeout)
        self._lock = threading.RLock()

    def solve(self, spec: Any, image_size: tuple[float, float] | None = None,
              timeout: float | Default | None = DEFAULT) -> SolveResult:
        """Label a spec: a witness scene if SAT, a minimal unsat core if UNSAT.

        Args:
            spec: a `Spec`, its dict or its JSON.
            image_size: the witness's image size (default: the domain's).
            timeout: budget in seconds (default: the solver's ``timeout``; None: no budget).
        Raises:
            SpecError: a malformed spec; `SolverLimit` (a SpecError) when an open-size spec may need more objects
                than its domain allows.
            SolverTimeout: no answer within the budget.
        """
        spec = as_spec(spec, self.catalog)
        budget = self.timeout if isinstance(timeout, Default) else check_timeout(timeout)
        deadline = Deadline(budget)
        size = pair(image_size or spec.domain.image_size)
        key = f"{spec.key()}@{size}"
        with self._lock:
            hit = self._results.get(key)
            if hit is not None:
                self._results.move_to_end(key)
                return hit
        # solved outside the lock: each spec has its own Control, and a caller waits for its own budget only
        if budget is not None and grounding_estimate(spec) > ISOLATE_ABOVE:
            result = solve_in_child(spec, size, deadline)
        else:
            result = SpecSolver(spec, self.catalog, deadline).result(size)
        with self._lock:
            self._results[key] = result
            if len(self._results) > self.max_specs:
                self._results.popitem(last=False)
        return result

    def is_satisfiable(self, spec: Any, subset: Iterable[int] | None = None,
                       timeout: float | Default | None = DEFAULT) -> bool:
        """Whether the spec (or only the constraints in ``subset``) has a model at its n."""
        spec = as_spec(spec, self.catalog)
        if subset is None:
            return self.solve(spec, timeout=timeout).satisfiable
        deadline = Deadline(self.timeout if isinstance(timeout, Default) else timeout)
        return SpecSolver(spec, self.catalog, deadline).satisfiable(sorted(set(subset)))

    def is_tautology(self, constraint: Any, n: int) -> bool:
        """Whether a constraint holds in every admissible scene of n objects (its negation is UNSAT at n).

        Such a constraint says nothing at that n and is rejected when sampling (docs/spec_language.md §8.2).
        """
        if not isinstance(constraint, Constraint):
            constraint = Constraint.from_dict(constraint, n=n, catalog=self.catalog)
        spec = Spec(n, (constraint,))
        # its violation required and the constraint itself inactive: no model means it can never fail
        return not SpecSolver(spec, self.catalog, extra=read_program("tautology.lp")).satisfiable([])

    def parse_pair(self, spec: Any, scene: Any) -> tuple[Spec, Scene]:
        """A spec and a scene from their objects, dicts or JSON (the scene validated in the spec's domain).

        The scene comes back with only the objects that count for the spec (score above its threshold)."""
        spec = as_spec(spec, self.catalog)
        if not isinstance(scene, Scene):
            scene = Scene.from_dict(scene, spec.domain)
        elif scene.domain != spec.domain:
            raise SceneError(f"scene: the scene is in domain {scene.domain.name!r}, the spec in {spec.domain.name!r}")
        return spec, scene.above(spec.score_threshold)

    def verify_many(
        self,
        pairs: Iterable[tuple[Any, Any]],
        count: str = "strict",
        labels: Sequence[str | None] | None = None,
        batch_size: int = 512,
        timeout: float | Default | None = DEFAULT,
    ) -> list[Verdict]:
        """Verify many (spec, scene) pairs; scenes of the same spec share one grounding per batch.

        Returns verdicts in input order. Raises `SpecError`/`SceneError` on the first malformed item, naming
        its position; `SolverTimeout` when labelling a spec given without its label exceeds ``timeout`` (per spec;
        default: the solver's).
        """
        check_mode(count)
        items: list[tuple[Spec, Scene]] = []
        for k, (raw_spec, raw_scene) in enumerate(pairs):
            try:
                items.append(self.parse_pair(raw_spec, raw_scene))
            except ValueError as e:
                raise type(e)(f"item {k}: {e}") from None
        if labels is not None and len(labels) != len(items):
            raise ValueError(f"labels has {len(labels)} entries for {len(items)} pairs")
        groups: dict[str, list[int]] = {}
        for k, (spec, _) in enumerate(items):
            groups.setdefault(spec.key(), []).append(k)
        out: list[Verdict | None] = [None] * len(items)
        for idx in groups.values():
            spec = items[idx[0]][0]
            for start in range(0, len(idx), batch_size):
                chunk = idx[start:start + batch_size]
                results = verify_batch(spec, [items[k][1] for k in chunk])
                for k, (count_ok, violated) in zip(chunk, results, strict=True):  # one result per scene
                    given = labels[k] if labels is not None else None
                    label = given if given is not None else self.solve(spec, timeout=timeout).label
                    out[k] = verdict(label, count, len(items[k][1]), count_ok, violated)
        return out  # type: ignore[return-value]

    def verify(self, spec: Any, scene: Any, count: str = "strict", label: str | None = None,
               timeout: float | Default | None = DEFAULT) -> Verdict:
        """Check a scene against a spec (see the module-level `verify`); ``timeout`` bounds labelling the spec when
        no label is given (default: the solver's budget)."""
        spec, scene = self.parse_pair(spec, scene)
        check_mode(count, label)
        if label is None:
            label = self.solve(spec, timeout=timeout).label
        if spec.domain.open_attributes:  # free-text values have no external atoms to assume: facts, one grounding
            count_ok, violated = verify_batch(spec, [scene])[0]
            return verdict(label, count, len(scene), count_ok, violated)
        # The universe only has to hold the scene's objects; n keeps one grounding per spec in the usual case.
        universe = max(spec.n or 0, len(scene), 1)
        if universe > REUSED_GROUNDING_UP_TO:
            count_ok, violated = verify_batch(spec, [scene])[0]
            return verdict(label, count, len(scene), count_ok, violated)
        key = (spec.key(), universe)
        with self._lock:
            verifier = self._verifiers.get(key)
            if verifier is None:
                layout = self._layouts.get((spec.domain, universe))
                if layout is None:
                    layout = self._layouts[(spec.domain, universe)] = SceneLayout(universe, spec.domain)
                verifier = ScenesVerifier(spec, layout)
                self._verifiers[key] = verifier
                if len(self._verifiers) > self.max_verifiers:
                    self._verifiers.popitem(last=False)
            else:
                self._verifiers.move_to_end(key)
            count_ok, violated = verifier.check(scene)
        return verdict(label, count, len(scene), count_ok, sorted(violated))


# ---------------------------------------------------------------------------------------------
# Module-level convenience API
# ---------------------------------------------------------------------------------------------
_default: Solver | None = None
_default_lock = threading.Lock()


def default_solver() -> Solver:
    global _default  # noqa: PLW0603  the process-wide solver, built once on first use under the lock
    with _default_lock:
        if _default is None:
            _default = Solver()
        return _default


def solve(spec: Any, image_size: tuple[float, float] | None = None, timeout: float | None = None) -> SolveResult:
    """Label a spec (a `Spec`, its dict or its JSON): witness scene if SAT, minimal unsat core if UNSAT.

    Args:
        spec: the specification.
        image_size: the witness's image size (default: the domain's).
        timeout: budget in seconds for this label (None: no budget).
    Raises:
        SpecError: a malformed spec, or (`SolverLimit`) an open-size spec that may need more objects than its
            domain's ``max_objects``.
        SolverTimeout: no answer within ``timeout`` (raised within about a second of it).
    """
    return default_solver().solve(spec, image_size, timeout=timeout)


def verify(spec: Any, scene: Any, count: str = "strict", label: str | None = None,
           timeout: float | None = None) -> Verdict:
    """Check a scene (a `Scene`, its dict or its JSON) against a spec.

    Args:
        spec: the specification.
        scene: the perceived (or annotated) scene graph.
        count: ``"strict"`` (exactly n objects and every constraint) or ``"relaxed"`` (object count ignored).
        label: the spec's SAT/UNSAT label if known (saves a solver call); computed otherwise.
        timeout: budget in seconds for computing the label (None: no budget).
    Returns:
        A `Verdict` with ``ok``, ``count_ok`` and ``violated``.
    Raises:
        SpecError / SceneError (both `ValueError`): malformed spec or scene.
        SolverTimeout: the label was not found within ``timeout``.
    """
    return default_solver().verify(spec, scene, count=count, label=label, timeout=timeout)


def verify_many(pairs: Iterable[tuple[Any, Any]], count: str = "strict",
                labels: Sequence[str | None] | None = None, timeout: float | None = None) -> list[Verdict]:
    """Verify many (spec, scene) pairs in batches (one grounding per spec and batch); verdicts in input order.
    ``timeout`` bounds labelling each spec given without its label."""
    return default_solver().verify_many(pairs, count=count, labels=labels, timeout=timeout)
