"""The baseline metrics by name (paper, §4.3 and Appendix E), declared as data in one table.

    from logicval_hf.scoring.baselines import BASELINES, BASELINE_INFO

    BASELINES.names()                     # ['clipscore', 'soft-tifa', 'vlm-judge']
    SoftTIFA = BASELINES.get("soft-tifa")   # the class; build it as usual: SoftTIFA(vlm, aggregate="gm")
    info = BASELINE_INFO.get("clipscore")   # what it measures, needs (extra, weights) and its settings
    info.settings["model"]                  # (default, meaning)

Each `BaselineInfo` says what a user must provide to run the baseline: the extra it needs (which may depend on a
setting: a VLM over HTTP needs none, a local transformers one the ``neural`` extra), where its weights come
from, and every setting with its default and meaning. ``logicval baselines`` prints this table;
`logicval_hf.scoring.baselines.factory.build_baseline` builds a metric from a name and settings. An unknown name
gets the registry's did-you-mean error. The registry names are the command-line spelling (hyphens); each class's
own ``name`` attribute (``clipscore``, ``vlm_judge``, ``soft_tifa``) is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from logicval_hf.common.registry import Registry
from logicval_hf.scoring.baselines.base import DEFAULT_PROMPT_FIELD, BaselineMetric

__all__ = ["BASELINES", "BASELINE_INFO", "DECLARED", "BaselineInfo"]

#: what the neural extra installs that each way of loading a model imports
_TORCH_TRANSFORMERS = ("neural", ("torch", "transformers"))


@dataclass(frozen=True)
class BaselineInfo:
    """One baseline metric, declared.

    Args:
        name: the registry name (command-line spelling).
        metric: the metric class, as a lazy ``"module:Class"`` reference.
        summary: what it measures, one line.
        weights: where its model comes from by default, and how to give another (one line).
        settings: every setting, ``name -> (default, meaning)``; a default of None for ``model`` means the user
            must give one.
        selector: the setting that decides what the baseline imports (``loader`` / ``transport``).
        needs: for each value of ``selector``, ``(extra, modules)`` or None (nothing beyond the default install).
        paper: where the paper describes it.
    """

    name: str
    metric: str
    summary: str
    weights: str
    settings: Mapping[str, tuple[Any, str]]
    selector: str
    needs: Mapping[str, tuple[str, tuple[str, ...]] | None]
    paper: str = "§4.3, Appendix E"

    def requirement(self, settings: Mapping[str, Any] | None = None) -> tuple[str, tuple[str, ...]] | None:
        """``(extra, modules)`` this baseline needs with ``settings`` (None: nothing beyond the default install)."""
        choice = (settings or {}).get(self.selector, self.settings[self.selector][0])
        return self.needs.get(str(choice))

    def extra_text(self) -> str:
        """The extras it may need, per value of its selector (``neural (transformers) / none (http)``)."""
        parts = [f"{need[0] if need else 'none'} ({value})" for value, need in self.needs.items()]
        return " / ".join(parts)


#: settings every VLM baseline takes (the transport to the model, and what a failed request does)
VLM_SETTINGS: dict[str, tuple[Any, str]] = {
    "transport": ("http", "http (an OpenAI-compatible endpoint) or transformers (a local model)"),
    "model": (None, "required: the served model's name (http, e.g. gpt-4o) or a Hub id / local folder "
                    "(transformers)"),
    "url": (None, "http: the endpoint's base URL (none: $OPENAI_BASE_URL, else https://api.openai.com/v1)"),
    "api_key_env": ("OPENAI_API_KEY", "http: the environment variable holding the API key (none: a server that "
                                      "needs no key)"),
    "timeout": (60.0, "http: seconds per request attempt"),
    "max_retries": (3, "http: attempts after the first for timeouts, refused connections and HTTP 429/5xx"),
    "concurrency": (4, "http: requests in flight at once"),
    "device": (None, "transformers: cuda, cpu, ... (none: CUDA when available)"),
    "dtype": (None, "transformers: bfloat16, float16, float32 (none: the checkpoint's)"),
    "batch_size": (8, "transformers: images per forward pass"),
    "on_error": ("record", "record (a failed request gives that image no score, with the reason) or raise"),
}

_VLM_NEEDS = {"http": None, "transformers": _TORCH_TRANSFORMERS}

#: every baseline, in the order ``logicval baselines`` lists them
DECLARED: tuple[BaselineInfo, ...] = (
    BaselineInfo(
        name="clipscore",
        metric="logicval_hf.scoring.baselines.clipscore:CLIPScore",
        summary="raw cosine between the CLIP image and prompt embeddings, in [-1, 1] (Long-CLIP reads 248 tokens)",
        weights="zer0int/LongCLIP-GmP-ViT-L-14 from the Hub (~1.7 GB), or model=DIR: a local transformers CLIP "
                "folder",
        settings={
            "model": ("zer0int/LongCLIP-GmP-ViT-L-14", "a Hub id or local folder of a transformers CLIP model; with "
                                                       "loader=open_clip, an open_clip model name (ViT-L-14)"),
            "loader": ("transformers", "transformers (a CLIP model folder) or open_clip"),
            "pretrained": ("openai", "open_clip: a pretrained tag or a local checkpoint file (an original Long-CLIP "
                                     "one is merged)"),
            "device": (None, "cuda, cpu, ... (none: CUDA when available)"),
            "batch_size": (32, "images per forward pass"),
            "prompt_field": (DEFAULT_PROMPT_FIELD, "the benchmark column scored against the image"),
        },
        selector="loader",
        needs={"transformers": _TORCH_TRANSFORMERS, "open_clip": ("neural", ("torch", "open_clip"))},
    ),
    BaselineInfo(
        name="vlm-judge",
        metric="logicval_hf.scoring.baselines.vlm_judge:VLMJudge",
        summary="a VLM rates prompt-image alignment 1-5 with the paper's rubric, rescaled to [0, 1]",
        weights="model=NAME: a served VLM (key from $OPENAI_API_KEY) or, with transport=transformers, a Hub id / "
                "local folder",
        settings={**VLM_SETTINGS,
                  "max_new_tokens": (128, "the answer's token budget"),
                  "prompt_field": (DEFAULT_PROMPT_FIELD, "the benchmark column the judge reads as the description")},
        selector="transport",
        needs=_VLM_NEEDS,
    ),
    BaselineInfo(
        name="soft-tifa",
        metric="logicval_hf.scoring.baselines.soft_tifa:SoftTIFA",
        summary="the verbaliser's sub-questions answered by a VLM in one token; mean probability of the expected "
                "answers",
        weights="model=NAME: a served VLM with logprobs (key from $OPENAI_API_KEY) or, with transport=transformers, "
                "a Hub id / local folder",
        settings={**VLM_SETTINGS,
                  "aggregate": ("am", "am (atom level: arithmetic mean) or gm (prompt level: geometric mean)"),
                  "top_k": (20, "next-token log-probabilities asked for per sub-question"),
                  "normalize": (False, "renormalise the probabilities over the candidate answers")},
        selector="transport",
        needs=_VLM_NEEDS,
    ),
)

#: the declarations by name
BASELINE_INFO: Registry[BaselineInfo] = Registry("baseline metric", {i.name: i for i in DECLARED})

#: Baseline metric classes by name (lazy ``"module:Class"`` references, from the declarations).
BASELINES: Registry[type[BaselineMetric]] = Registry("baseline metric", {i.name: i.metric for i in DECLARED})
