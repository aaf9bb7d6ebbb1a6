"""An image's rewards from its judgement (`logicval_hf.scoring.judge.Judgement`: the perceived scene and its
verdicts): GenEval's partial and strict rules, LogicVal's verdicts and dense rewards.

**GenEval items** reproduce the reference reward server's three numbers on the same detections:

* ``rewards``: GenEval's verdict, decided by the solver on the importer's spec (0 for every image when the
  request says ``only_strict``, as the reference server skips it then).
* ``strict_rewards`` and ``scores``: the reference server's stricter rule and its partial score, over the
  detections GenEval keeps (score above the tag's threshold, at most 16 per class, most confident first). Each
  include adds ``1 - |count - found| / count``; when exactly ``count`` were found, a colour adds
  ``1 - |count - found in that colour| / count``, and a position adds 1 when every found object stands in the
  relation to every object of the target include (GenEval's box rule, the coco domain's relations), 0 when the
  target include failed. When the count is wrong, a colour or position adds a single 0. A failed position adds 0
  *and* 1, and a position after a failed colour adds nothing: that is what the reference server computes, kept
  so that the numbers a run logs do not change when it switches servers. ``scores`` is the mean (0 without
  components; excludes never enter it); ``strict_rewards`` is 1 when every include matched exactly. Counts above
  twice the asked number make a negative term, as in the reference.

**LogicVal items** (``clevr`` backend, or any backend perceiving the spec's domain): ``strict_rewards`` is the
strict verdict (exactly n objects and every constraint; for an UNSAT spec, the empty scene); ``rewards`` the
count-relaxed verdict; ``scores`` the item's dense reward, one of the modes of
`logicval_hf.serve.reward_modes` (the fraction of constraints the scene satisfies, count relaxed, by default; or
the probability that the scene satisfies them under the perceived attribute distributions, a dense reward that
exact verdicts cannot give), the strict verdict for an UNSAT spec.

**Unread images** (a scene confidence below the server's minimum, `logicval_hf.scoring.judge.JudgeOptions`) get
no verdict: `SampleResult.set_apart` (the reason, the answer's floor values, no group).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from logicval_hf.contract.scene import Scene
from logicval_hf.serve.items import Task
from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.reward_modes import RewardInput, dense_score

if TYPE_CHECKING:
    from logicval_hf.asp.solver import Verdict
    from logicval_hf.scoring.judge import Judgement

__all__ = ["GENEVAL_RELATIONS", "MAX_PER_CLASS", "geneval_kept", "geneval_partial", "judged_rewards", "score_task"]

#: GenEval keeps at most this many detections per class
MAX_PER_CLASS = 16
#: GenEval's relation strings -> the coco domain's relations (decided by GenEval's box rule)
GENEVAL_RELATIONS = {"left of": "left", "right of": "right", "above": "above", "below": "below"}


def geneval_kept(scene: Scene, threshold: float | None) -> dict[str, list[int]]:
    """Per class, the indices of the detections GenEval keeps: score above ``threshold`` (None: every one, as a
    spec without ``score_threshold`` counts every object), most confident first (equal scores in input order),
    at most 16."""
    by_class: dict[str, list[int]] = {}
    for i, o in enumerate(scene.objects):
        if o.score is None or threshold is None or o.score > threshold:
            by_class.setdefault(o.attributes["class"], []).append(i)
    return {c: sorted(ix, key=lambda i: -(scene.objects[i].score or 0.0))[:MAX_PER_CLASS]
            for c, ix in by_class.items()}


def geneval_partial(metadata: Mapping[str, Any], scene: Scene, threshold: float | None) -> tuple[float, bool]:
    """The reference server's ``(partial score, strict verdict)`` for one image's detections (module docstring)."""
    kept = geneval_kept(scene, threshold)
    parts: list[float] = []
    groups: list[list[int] | None] = []
    strict = True
    for req in metadata.get("include", []):
        k = req["count"]
        found = kept.get(req["class"], [])
        parts.append(1 - abs(k - len(found)) / k)
        matched = len(found) == k
        if not matched:
            if "color" in req or "position" in req:
                parts.append(0.0)
        else:
            if "color" in req:
                coloured = sum(scene.objects[i].attributes["color"] == req["color"] for i in found)
                parts.append(1 - abs(k - coloured) / k)
                matched = coloured == k
            if "position" in req and matched:
                rel, j = req["position"]
                targets = groups[j]
                if targets is None:
                    matched = False
                    parts.append(0.0)
                else:
                    relation = GENEVAL_RELATIONS[rel]
                    if not all(scene.holds(relation, a, b) for a in found for b in targets):
                        matched = False
                        parts.append(0.0)
                    parts.append(1.0)
        groups.append(found if matched else None)
        strict = strict and matched
    return (sum(parts) / len(parts) if parts else 0.0), strict


def _logicval(task: Task, scene: Scene, label: str, verdict: Verdict, relaxed_verdict: Verdict, only_strict: bool,
              solver: Any) -> SampleResult:
    strict = float(verdict.ok)
    relaxed = float(relaxed_verdict.ok)
    reward = 0.0 if only_strict else relaxed
    score = dense_score(task.reward, RewardInput(task.spec, scene, label, verdict, solver))
    return SampleResult(score, reward, strict, dict.fromkeys(task.groups, (relaxed, strict)))


def _geneval(task: Task, scene: Scene, relaxed: Verdict, only_strict: bool) -> SampleResult:
    assert task.metadata is not None
    partial, strict_ok = geneval_partial(task.metadata, scene, task.spec.score_threshold)
    # GenEval's verdict is whether the detections satisfy every constraint, whatever the spec's label (an UNSAT
    # line is never correct); the importer's docstring shows that GenEval's 16-per-class cap never changes it
    correct = 0.0 if only_strict else float(relaxed.constraints_ok)
    strict = float(strict_ok)
    return SampleResult(partial, correct, strict, dict.fromkeys(task.groups, (correct, strict)))


def judged_rewards(task: Task, judgement: Judgement, only_strict: bool = False, solver: Any = None) -> SampleResult:
    """The rewards of one image from its judgement (the judge was given ``task.spec`` and, for a GenEval item, the
    label ``SAT``).

    Args:
        task: what the image is asked to show (`logicval_hf.serve.items.read_item`).
        judgement: the image's `logicval_hf.scoring.judge.Judgement`.
        only_strict: the request's flag: ``rewards`` (the lenient verdict) is 0 then, as in the reference server.
        solver: the `logicval_hf.asp.solver.Solver` the judge used (a dense reward may call it again; default:
            the process's shared one).
    Returns:
        A `SampleResult`: ``score``, ``reward``, ``strict`` and the image's groups; the judgement's error as the
        sample's error entry; an unread image set apart with its reason.
    """
    if judgement.error is not None:
        return SampleResult.failed(judgement.error)
    if judgement.unread is not None:
        return SampleResult.set_apart(judgement.unread)
    scene, strict, relaxed, label = judgement.scene, judgement.strict, judgement.relaxed, judgement.label
    assert scene is not None and strict is not None and relaxed is not None and label is not None  # judged
    if task.kind == "geneval":
        return _geneval(task, scene, relaxed, only_strict)
    if solver is None:
        from logicval_hf.asp.solver import default_solver

        solver = default_solver()
    return _logicval(task, scene, label, strict, relaxed, only_strict, solver)


def score_task(task: Task, scene: Scene, only_strict: bool = False, solver: Any = None) -> SampleResult:
    """The rewards of one image (its perceived ``scene``) for its ``task``, judged here (`judged_rewards`).

    Args:
        task: what the image is asked to show (`logicval_hf.serve.items.read_item`).
        scene: the perceived scene, in the task's domain.
        only_strict: the request's flag: ``rewards`` (the lenient verdict) is 0 then, as in the reference server.
        solver: a `logicval_hf.asp.solver.Solver` (default: the process's shared one, whose groundings are reused).
    Returns:
        A `SampleResult` with ``score``, ``reward``, ``strict`` and the image's groups.
    Raises:
        ValueError: the scene does not fit the spec (another domain, an unknown attribute value), or the spec
            cannot be labelled within the default time budget (`SolverTimeout`).
    """
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.scoring.judge import JudgeOptions, judge_one

    solver = solver or default_solver()
    judged = judge_one(task.spec, scene, JudgeOptions(errors="raise"), solver=solver, label=task.judge_label,
                       name="scene")
    return judged_rewards(task, judged, only_strict, solver)
