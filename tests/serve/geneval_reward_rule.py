"""The GenEval reward server's partial score and strict verdict over detections, re-implemented from the public
description of its ``evaluate_reward`` (github.com/yifan123/reward-server, ``reward_server/gen_eval.py``),
independently of logicval_hf (nothing here imports it). Detections as in ``tests/benchmark/geneval_rule.py``,
whose `kept` and `relative_position` (GenEval's own rules) this builds on.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmark"))

from geneval_rule import kept, relative_position


def reward_server_score(metadata: Mapping[str, Any], detections: Sequence[Mapping[str, Any]]) -> tuple[float, bool]:
    """``(partial score, strict verdict)`` as the reference server computes them."""
    objects = kept(metadata, detections)
    terms: list[float] = []
    matched_groups: list[list[Mapping[str, Any]] | None] = []
    strict = True
    for req in metadata.get("include", []):
        count = req["count"]
        found = objects.get(req["class"], [])
        terms.append(1 - abs(count - len(found)) / count)
        ok = True
        if len(found) != count:
            ok = False
            if "color" in req or "position" in req:
                terms.append(0.0)
        else:
            if "color" in req:
                right = [d["color"] for d in found].count(req["color"])
                terms.append(1 - abs(count - right) / count)
                if right != count:
                    ok = False
            if "position" in req and ok:
                relation, j = req["position"]
                if matched_groups[j] is None:
                    ok = False
                    terms.append(0.0)
                else:
                    for d in found:
                        for t in matched_groups[j]:
                            if relation not in relative_position(d["bbox"], t["bbox"]):
                                ok = False
                                terms.append(0.0)
                                break
                        if not ok:
                            break
                    terms.append(1.0)
        matched_groups.append(found if ok else None)
        if not ok:
            strict = False
    return (sum(terms) / len(terms) if terms else 0.0), strict
