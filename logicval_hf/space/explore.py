"""The Explore tab: one benchmark row with its prompts, program, sub-questions, label, witness or core."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from logicval_hf.benchmark.sampler import DEFAULT_SEED
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.verbalise import constraint_names
from logicval_hf.space.common import typed_row

SUBQUESTION_HEADERS = ["constraint", "question", "type", "expect", "bind"]


def explore_row(row_id: str, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Everything the Explore tab shows for a row, JSON-ready (the witness as a scene dict)."""
    row = typed_row(row_id, seed)
    texts = [c.text_short for c in row.constraints]
    return {
        "id": row.id,
        "package": row.package,
        "label": row.label,
        "n": row.n,
        "m": row.m,
        "templates": list(row.templates),
        "spec_json": row.spec_json,
        "prompt_short": row.prompt_short,
        "prompt_long": row.prompt_long,
        "full_prompt_short": row.full_prompt_short,
        "full_prompt_long": row.full_prompt_long,
        "asp_program": row.asp_program,
        "subquestions": [{k: sq.get(k) for k in SUBQUESTION_HEADERS} for sq in row.subquestions],
        "witness": None if row.witness is None else dict(row.witness),
        "core": list(row.core) if row.core is not None else None,
        "core_constraints": [{"index": i, "template": row.templates[i], "text": texts[i]} for i in row.core or ()],
        "constraints": [{"index": i, "template": c.template, "text": c.text_short}
                        for i, c in enumerate(row.constraints)],
        "chance_rate": row.chance_rate,
    }


def header_markdown(view: dict[str, Any]) -> str:
    label = view["label"]
    badge = "**SAT** (satisfiable)" if label == "SAT" else "**UNSAT** (contradictory)"
    chance = view.get("chance_rate")
    ch = f" · chance rate {chance:.3f}" if isinstance(chance, (int, float)) else ""
    return (f"### {view['id']} — {badge}\n"
            f"n = {view['n']} objects · m = {view['m']} constraint(s) · templates: "
            f"{', '.join('`' + t + '`' for t in view['templates'])}{ch}")


def core_markdown(view: dict[str, Any]) -> str:
    """The minimal UNSAT core with the core's constraint texts (or the witness note for SAT rows)."""
    if view["label"] == "SAT":
        return ("**Satisfiable.** The solver's witness scene is rendered below (one scene that satisfies every "
                "constraint; its boxes are listed in the table).")
    lines = [f"**Unsatisfiable.** Minimal unsat core: {core_names(view)} (dropping any one of these makes the rest "
             "satisfiable):", "", *core_lines(view), "", "The correct image for this prompt is an empty scene."]
    return "\n".join(lines)


def core_names(result: Mapping[str, Any]) -> str:
    """The core named as the prompt numbers its constraints: ``Constraints 1 and 3`` (``core`` stays 0-based)."""
    return constraint_names(c["index"] for c in result.get("core_constraints") or ())


def core_lines(result: Mapping[str, Any]) -> list[str]:
    """One Markdown list item per core constraint: ``- **Constraint 2** (`C8/1prop_exact`): text``
    (Explore's and Compose's core)."""
    return [f"- **{constraint_names([c['index']])}** (`{c['template']}`): {c['text']}"
            for c in result.get("core_constraints") or ()]


def subquestion_rows(view: dict[str, Any]) -> list[list[Any]]:
    """The sub-question table (`SUBQUESTION_HEADERS`): the constraint named as in the prompt (``Constraint 1``)."""
    return [[constraint_names([s["constraint"]]), s["question"], s["type"], s["expect"], s["bind"] or ""]
            for s in view["subquestions"]]


def witness_scene(view: dict[str, Any]) -> Scene | None:
    w = view.get("witness")
    return Scene.from_dict(w) if w else None


def spec_pretty(view: dict[str, Any]) -> str:
    return json.dumps(json.loads(view["spec_json"]), indent=1)
