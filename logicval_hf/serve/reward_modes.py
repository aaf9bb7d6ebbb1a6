"""The dense reward of a LogicVal item: what ``scores`` (and Flow-Factory's ``rewards``) hold, one registry entry per
mode. The server's default is ``--reward``; a request (``"reward"``) or an item (``"reward"``) may choose another.

| mode | ``scores`` of an image of a satisfiable spec (count relaxed) |
|---|---|
| ``fraction`` | ``1 - violated / m``: the share of the spec's m constraints the scene satisfies |
| ``probability`` | ``P(scene |= C)`` under the perceived attribute distributions (`scoring.probabilistic`) |
| ``repair`` | ``1 / (1 + cost)``, the cost of the cheapest repair (`logicval_hf.repair`: strict count, 1 per edit) |

For an unsatisfiable spec a mode scores the strict verdict (1 only for the empty scene: satisfying part of a
contradiction is no progress) unless its entry says ``scores_unsat`` (``repair`` does: removing objects is progress
towards the empty scene). A new mode is one entry in `REWARD_MODES`
(an object, or a lazy ``"package.module:attribute"`` reference resolved on first use)::

    REWARD_MODES.register("mine", RewardMode(my_score, "what it measures, in one line"))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logicval_hf.common.registry import Registry

__all__ = ["REWARD_MODES", "RewardInput", "RewardMode", "check_reward_mode", "dense_score", "reward_mode"]


@dataclass(frozen=True)
class RewardInput:
    """What a mode scores: the item's spec and label, the perceived scene, the strict verdict already decided, and
    the worker's solver (its groundings are reused)."""

    spec: Any
    scene: Any
    label: str
    verdict: Any
    solver: Any


@dataclass(frozen=True)
class RewardMode:
    """One dense reward.

    Attributes:
        score: ``score(RewardInput) -> float`` in [0, 1], higher is better.
        description: one line for ``--help`` and the docs.
        scores_unsat: the mode scores unsatisfiable specs itself (else they get the strict verdict).
    """

    score: Callable[[RewardInput], float]
    description: str
    scores_unsat: bool = False


def _fraction(x: RewardInput) -> float:
    return 1.0 - len(x.verdict.violated) / max(x.spec.m, 1)


def _probability(x: RewardInput) -> float:
    from logicval_hf.scoring.probabilistic import probability

    return float(probability(x.spec, x.scene, count="relaxed", label=x.label, solver=x.solver).p)


def _repair(x: RewardInput) -> float:
    from logicval_hf.repairs.reward import repair_reward

    return repair_reward(x.spec, x.scene, x.label, x.solver)


def _adapt(name: str, mode: Any) -> RewardMode:
    if not isinstance(mode, RewardMode):
        raise ValueError(f"reward mode {name!r} must be a RewardMode, got {type(mode).__name__}")
    return mode


#: the reward modes by name (`logicval_hf.common.registry.Registry`: ``in``, iteration over the names, did-you-mean)
REWARD_MODES: Registry[RewardMode] = Registry("reward mode", {
    "fraction": RewardMode(_fraction, "the share of the spec's constraints the scene satisfies"),
    "probability": RewardMode(_probability, "the probability that the scene satisfies the spec under the perceived "
                                            "attribute distributions"),
    "repair": RewardMode(_repair, "1 / (1 + the number of edits of the cheapest repair to satisfaction)",
                         scores_unsat=True),
}, adapt=_adapt)


def check_reward_mode(name: Any) -> str:
    """``name`` when it names a mode.

    Raises:
        ValueError: it does not (the message lists the modes).
    """
    if not isinstance(name, str) or name not in REWARD_MODES:
        shown = repr(name) if isinstance(name, (str, int, float, bool, type(None))) else f"a {type(name).__name__}"
        raise ValueError(f"reward must be one of {list(REWARD_MODES)}, got {shown[:80]}")
    return name


def reward_mode(name: Any) -> RewardMode:
    """The mode called ``name``.

    Raises:
        UnknownNameError: no such mode (a ValueError naming the close ones and the known ones).
    """
    return REWARD_MODES.get(name)


def dense_score(mode: str, x: RewardInput) -> float:
    """The dense reward of one image under ``mode`` (module docstring: unsatisfiable specs included)."""
    entry = reward_mode(mode)
    if x.label == "UNSAT" and not entry.scores_unsat:
        return float(x.verdict.ok)
    return entry.score(x)
