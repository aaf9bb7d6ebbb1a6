"""Baseline alignment metrics of the paper (§4.3, Appendix E), behind one interface.

    from logicval_hf.scoring.baselines import CLIPScore, VLMJudge, SoftTIFA, OpenAIChatVLM, TransformersVLM

    clip = CLIPScore.from_transformers("zer0int/LongCLIP-GmP-ViT-L-14")     # or .from_open_clip(...)
    gpt = OpenAIChatVLM("gpt-4o")                                          # key from $OPENAI_API_KEY
    judge, tifa = VLMJudge(gpt), SoftTIFA(gpt, aggregate="gm")
    scores = tifa.score(images, rows)              # rows of logicval_hf.benchmark.sampler (or specs / prompts)
    results = tifa.evaluate(images, rows)          # BaselineResult(score, details) per image
    BASELINES.get("soft-tifa")                     # the classes by name: clipscore, vlm-judge, soft-tifa
    BASELINE_INFO.get("clipscore").settings        # what each needs (extra, weights) and its settings
    build_baseline("vlm-judge", {"model": "gpt-4o"})   # built from a name and settings, checked in one line

From the command line: ``logicval baselines`` lists them; ``logicval run --baselines clipscore,vlm-judge`` scores
every image with them beside LogicVal; ``logicval meta RUN_DIR`` compares them all with the known truth (or human
verdicts). In the metric: ``compute(..., baselines=["clipscore"], baseline_settings={...})``.

Each metric is a `BaselineMetric`: ``score(images, items) -> list[float | None]`` and ``evaluate(images,
items) -> list[BaselineResult]``. Heavy dependencies (torch, open_clip, transformers) are imported when a
model is built, not on import.
"""

from logicval_hf.scoring.baselines.base import (
    BaselineError,
    BaselineMetric,
    BaselineResult,
    BaselineSetupError,
    prompt_text,
)
from logicval_hf.scoring.baselines.clipscore import CLIPScore, convert_longclip_state_dict
from logicval_hf.scoring.baselines.factory import build_baseline, resolve_baselines
from logicval_hf.scoring.baselines.registry import BASELINE_INFO, BASELINES, BaselineInfo
from logicval_hf.scoring.baselines.soft_tifa import QUESTION_TEMPLATE, SoftTIFA, candidate_probs, score_subquestions
from logicval_hf.scoring.baselines.vlm import (
    OpenAIChatVLM,
    TransformersVLM,
    VLMBackend,
    VLMRequestError,
    VLMResponseError,
)
from logicval_hf.scoring.baselines.vlm_judge import JUDGE_PROMPT, VLMJudge, parse_judge_answer

__all__ = [
    "BASELINES", "BASELINE_INFO", "BaselineError", "BaselineInfo", "BaselineMetric", "BaselineResult",
    "BaselineSetupError", "CLIPScore", "build_baseline", "resolve_baselines", "JUDGE_PROMPT", "OpenAIChatVLM",
    "QUESTION_TEMPLATE", "SoftTIFA", "TransformersVLM", "VLMBackend", "VLMJudge", "VLMRequestError",
    "VLMResponseError", "candidate_probs", "convert_longclip_state_dict", "parse_judge_answer", "prompt_text",
    "score_subquestions",
]
