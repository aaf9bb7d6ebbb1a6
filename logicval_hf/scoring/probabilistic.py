"""Probabilistic LogicVal score: the probability that a scene satisfies a spec when perception is uncertain.

The paper's verdict ``v(I)`` is binary: the perceived scene graph satisfies the spec or not (§3.3). Its
stated future work (§7) is a probabilistic formulation that accounts for uncertain attribute predictions.
With per-object attribute distributions (`SceneObject.probs`, ``{attribute: {value: p}}``) and objects,
boxes, regions and relations taken as perceived, the score is

    P(scene |= spec) = sum over attribute assignments w of  prod_(object, attribute) p(value)  *  verdict(w)

where the product runs over the *uncertain* choices; an object without ``probs`` (or an attribute without a
distribution) is certain. Only attributes that some literal of the spec names can change a verdict, and
values of an attribute that no literal names are interchangeable, so each choice is first reduced to the
classes that matter (e.g. colour over ``{red, blue, other}`` when the spec names red and blue). Values below
``epsilon`` are pruned and each distribution renormalised.

If the reduced space has at most ``max_exact`` worlds, every world is enumerated and verified in batches
(`Solver.verify_many`): the result is exact. Otherwise ``samples`` worlds are drawn (seeded) and the
result is a Monte Carlo estimate with its standard error. UNSAT specs need no enumeration: the right
answer is the empty scene, certain by construction, so the probability is 1 for an empty scene and 0
otherwise.

Usage::

    from logicval_hf.scoring.probabilistic import probability
    r = probability(spec, scene)            # ProbResult(p=0.82, exact=True, stderr=0.0, n_worlds=4)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from logicval_hf.asp.solver import Solver, check_mode, default_solver
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import AttrLit, Spec

__all__ = ["ProbResult", "probability", "relevant_values", "choices"]

#: default largest number of worlds enumerated exactly
MAX_EXACT = 4096
#: default number of Monte Carlo samples
SAMPLES = 2000
#: default pruning threshold for attribute probabilities
EPSILON = 1e-6


@dataclass(frozen=True)
class ProbResult:
    """``p``: probability that the scene satisfies the spec; ``exact``: whether every world was enumerated;
    ``stderr``: standard error of ``p`` (0 when exact); ``n_worlds``: worlds enumerated (exact) or sampled."""

    p: float
    exact: bool
    stderr: float
    n_worlds: int

    def to_dict(self) -> dict[str, Any]:
        return {"p": self.p, "exact": self.exact, "stderr": self.stderr, "n_worlds": self.n_worlds}


def relevant_values(spec: Spec, attributes: Sequence[str]) -> dict[str, set[str]]:
    """For each perceived attribute that a literal of the spec names: the values named.

    Attributes absent from the result cannot affect any verdict of ``spec``.
    """
    out: dict[str, set[str]] = {}
    for c in spec.constraints:
        for v in c.params.values():
            if isinstance(v, AttrLit) and v.prop in attributes:
                out.setdefault(v.prop, set()).add(v.value)
    return out


class _Choice(NamedTuple):
    """One uncertain (object, attribute): representative values and their probabilities."""

    obj: int
    attribute: str
    values: tuple[str, ...]
    probs: tuple[float, ...]


def _normalise(dist: Mapping[str, float], epsilon: float, where: str) -> dict[str, float]:
    total = float(sum(dist.values()))
    if not total > 0:
        raise ValueError(f"{where}: the probabilities sum to 0")
    kept = {v: p / total for v, p in dist.items() if p / total >= epsilon}
    if not kept:  # every value below epsilon: keep the most likely one
        best = max(dist, key=dist.__getitem__)
        kept = {best: 1.0}
    s = sum(kept.values())
    return {v: p / s for v, p in kept.items()}


def choices(spec: Spec, scene: Scene, epsilon: float = EPSILON) -> tuple[list[_Choice], dict[tuple[int, str], str]]:
    """The uncertain choices of a scene that matter for ``spec``, and the fixed value of every other
    (object, attribute) that matters.

    Values the spec never names are lumped into one class (represented by the most likely of them); a
    choice left with a single class is fixed.
    """
    domain = scene.domain
    relevant = relevant_values(spec, domain.perceived_attributes)
    out: list[_Choice] = []
    fixed: dict[tuple[int, str], str] = {}
    for i, o in enumerate(scene.objects):
        for a, named in relevant.items():
            dist = (o.probs or {}).get(a)
            if not dist:
                continue
            dist = _normalise(dist, epsilon, f"objects[{i}].probs.{a}")
            classes: dict[str, tuple[str, float]] = {}  # class key -> (representative, mass)
            for v, p in sorted(dist.items(), key=lambda kv: -kv[1]):
                k = v if v in named else "\0other"
                rep, mass = classes.get(k, (v, 0.0))
                classes[k] = (rep, mass + p)
            if len(classes) == 1:
                fixed[(i, a)] = next(iter(classes.values()))[0]
                continue
            reps = tuple(r for r, _ in classes.values())
            ps = tuple(m for _, m in classes.values())
            out.append(_Choice(i, a, reps, ps))
    return out, fixed


def _world(scene: Scene, fixed: Mapping[tuple[int, str], str], cs: Sequence[_Choice], pick: Sequence[int]) -> Scene:
    attrs = [dict(o.attributes) for o in scene.objects]
    for (i, a), v in fixed.items():
        attrs[i][a] = v
    for c, k in zip(cs, pick, strict=True):
        attrs[c.obj][c.attribute] = c.values[k]
    objs = tuple(SceneObject(at, o.bbox, o.score, None) for at, o in zip(attrs, scene.objects, strict=True))
    return Scene(scene.image_size, objs, scene.domain)


def _verdicts(solver: Solver, spec: Spec, worlds: Sequence[Scene], count: str, label: str) -> np.ndarray:
    verdicts = solver.verify_many([(spec, w) for w in worlds], count=count, labels=[label] * len(worlds))
    return np.array([v.ok for v in verdicts], dtype=float)


def probability(
    spec: Any,
    scene: Any,
    count: str = "strict",
    label: str | None = None,
    max_exact: int = MAX_EXACT,
    samples: int = SAMPLES,
    seed: int = 0,
    epsilon: float = EPSILON,
    solver: Solver | None = None,
) -> ProbResult:
    """Probability that ``scene`` satisfies ``spec`` under its objects' attribute distributions.

    Args:
        spec: a `Spec`, its dict or JSON.
        scene: a `Scene`, its dict or JSON; objects may carry ``probs`` (``{attribute: {value: p}}``).
        count: ``"strict"`` (exactly n objects) or ``"relaxed"`` (object count ignored).
        label: the spec's ``"SAT"``/``"UNSAT"`` label if known (computed otherwise).
        max_exact: enumerate exactly when the (reduced) number of worlds is at most this.
        samples: Monte Carlo samples otherwise.
        seed: seed of the sampler.
        epsilon: probabilities below this are pruned (each distribution is then renormalised).
        solver: a `Solver` to reuse (default: the shared one).
    Returns:
        A `ProbResult`. Certain scenes (no ``probs``) give 0 or 1, equal to `Solver.verify`.
    Raises:
        ValueError: malformed spec/scene, bad ``count``/``label``, or a distribution summing to 0.
    """
    solver = solver or default_solver()
    spec, scene = solver.parse_pair(spec, scene)
    check_mode(count, label)
    if label is None:
        label = solver.solve(spec).label
    if not isinstance(max_exact, int) or max_exact < 0:
        raise ValueError(f"max_exact must be a non-negative integer, got {max_exact!r}")
    if not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    if not 0 <= epsilon < 1:
        raise ValueError(f"epsilon must lie in [0, 1), got {epsilon!r}")
    if label == "UNSAT":  # ok iff the scene is empty: attributes cannot change that
        return ProbResult(1.0 if len(scene) == 0 else 0.0, True, 0.0, 1)

    cs, fixed = choices(spec, scene, epsilon)
    n_worlds = math.prod(len(c.values) for c in cs)
    if n_worlds <= max(max_exact, 1):
        picks = list(itertools.product(*(range(len(c.values)) for c in cs)))
        weights = np.array([math.prod(c.probs[k] for c, k in zip(cs, pick, strict=True)) for pick in picks])
        ok = _verdicts(solver, spec, [_world(scene, fixed, cs, pick) for pick in picks], count, label)
        p = float(np.dot(weights, ok) / weights.sum())
        return ProbResult(min(1.0, max(0.0, p)), True, 0.0, len(picks))

    rng = np.random.default_rng(seed)
    draws = np.stack([rng.choice(len(c.values), size=samples, p=np.asarray(c.probs)) for c in cs], axis=1)
    unique, inverse = np.unique(draws, axis=0, return_inverse=True)
    ok = _verdicts(solver, spec, [_world(scene, fixed, cs, tuple(row)) for row in unique], count, label)
    hits = ok[np.asarray(inverse).reshape(-1)]
    p = float(hits.mean())
    stderr = float(math.sqrt(p * (1 - p) / samples))
    return ProbResult(p, False, stderr, samples)
