"""VLM-Judge (paper §4.3 and Appendix E): a VLM rates prompt-image alignment from 1 to 5 with a fixed rubric;
the score is rescaled to [0, 1] as ``(s - 1) / 4``.

The instruction is the paper's, verbatim (`JUDGE_PROMPT`, with ``{prompt}`` replaced by the prompt). The
answer must contain ``SCORE: <integer 1-5>`` (markdown emphasis, ``<4>`` / ``⟨4⟩`` brackets and ``4/5`` are
tolerated); anything else gives ``score=None`` with ``details["reason"]``, never a guessed score.

    judge = VLMJudge(OpenAIChatVLM("gpt-4o"))
    judge.score([image], [row])        # row["full_prompt_short"] is the description
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from logicval_hf.scoring.baselines.base import (
    DEFAULT_PROMPT_FIELD,
    BaselineMetric,
    BaselineResult,
    check_pairs,
    prompt_text,
)
from logicval_hf.scoring.baselines.vlm import VLMBackend

__all__ = ["JUDGE_PROMPT", "VLMJudge", "judge_prompt", "parse_judge_answer", "rescale"]

#: The rubric of the paper (Appendix E), verbatim; ``{prompt}`` is the description.
JUDGE_PROMPT = (
    "You are judging whether a generated image matches a text description. Description: \u201c{prompt}\u201d. "
    "Rate how well the image satisfies all the logical constraints in the description on a scale of 1 (not at "
    "all) to 5 (perfect match). Respond in exactly this format: SCORE: \u27e81\u20135\u27e9 RATIONALE: "
    "\u27e8one sentence\u27e9"
)

_SCORE = re.compile(
    r"\bSCORE\b[\s*_]*[:\uff1a][\s*_]*[<\u27e8\[(]?\s*"
    r"(?P<num>[-+]?\d+(?:[.,]\d+)?)(?![.,]?\d)(?!\s*[-\u2013\u2014]\s*\d)"  # not a range such as 1-5
    r"\s*[>\u27e9\])]?"
    r"(?:\s*(?:/|out\s+of)\s*(?P<den>\d+))?",
    re.IGNORECASE,
)
_RATIONALE = re.compile(r"\bRATIONALE\b[\s*_]*[:\uff1a][\s*_]*(?P<text>.+)", re.IGNORECASE | re.DOTALL)


def judge_prompt(prompt: str, template: str = JUDGE_PROMPT) -> str:
    """The judge instruction for one description (plain replacement: braces in the prompt are safe)."""
    return template.replace("{prompt}", prompt)


def rescale(score: int) -> float:
    """1..5 -> [0, 1]."""
    return (score - 1) / 4


def parse_judge_answer(text: Any) -> tuple[int | None, str | None, str | None]:
    """``(score 1..5 or None, rationale or None, reason when the score is None)``."""
    if not isinstance(text, str) or not text.strip():
        return None, None, "empty answer"
    matches = list(_SCORE.finditer(text))
    m = _RATIONALE.search(text)
    rationale = m.group("text").strip() or None if m else None
    if not matches:
        return None, rationale, "no 'SCORE: <1-5>' in the answer"
    values = set()
    for mt in matches:
        num, den = mt.group("num").replace(",", "."), mt.group("den")
        if den is not None and int(den) != 5:
            return None, rationale, f"score given out of {den}, not out of 5: {mt.group(0)!r}"
        if not re.fullmatch(r"[-+]?\d+", num):
            return None, rationale, f"score {num} is not an integer from 1 to 5"
        values.add(int(num))
    if len(values) > 1:
        return None, rationale, f"several different scores in the answer: {sorted(values)}"
    (value,) = values
    if not 1 <= value <= 5:
        return None, rationale, f"score {value} is outside 1-5"
    return value, rationale, None


class VLMJudge(BaselineMetric):
    """VLM-Judge over any `VLMBackend` (local transformers model or OpenAI-compatible API).

    ``on_error="raise"`` (default) lets backend failures propagate; ``"record"`` turns a failed request into
    ``score=None`` with the error as the reason.
    """

    name = "vlm_judge"

    def __init__(self, backend: VLMBackend, *, prompt_field: str = DEFAULT_PROMPT_FIELD, max_new_tokens: int = 128,
                 template: str = JUDGE_PROMPT, on_error: str = "raise") -> None:
        if on_error not in ("raise", "record"):
            raise ValueError("on_error must be 'raise' or 'record'")
        if "{prompt}" not in template:
            raise ValueError("the judge template needs a {prompt} placeholder")
        self.backend = backend
        self.prompt_field = prompt_field
        self.max_new_tokens = int(max_new_tokens)
        self.template = template
        self.on_error = on_error

    def evaluate(self, images: Sequence[Any], items: Sequence[Any]) -> list[BaselineResult]:
        images, items = check_pairs(images, items)
        prompts = [prompt_text(it, self.prompt_field) for it in items]
        instructions = [judge_prompt(p, self.template) for p in prompts]
        answers = self.backend.generate(images, instructions, max_new_tokens=self.max_new_tokens,
                                        return_exceptions=self.on_error == "record")
        out = []
        for prompt, answer in zip(prompts, answers, strict=True):
            if isinstance(answer, Exception):
                out.append(BaselineResult(None, {"prompt": prompt, "answer": None, "raw_score": None,
                                                 "rationale": None, "reason": f"request failed: {answer}"}))
                continue
            raw, rationale, reason = parse_judge_answer(answer)
            out.append(BaselineResult(
                rescale(raw) if raw is not None else None,
                {"prompt": prompt, "answer": answer, "raw_score": raw, "rationale": rationale, "reason": reason},
            ))
        return out
