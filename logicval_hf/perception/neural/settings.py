"""The neural pipeline's settings: what selects and loads its models (`MODEL_SETTINGS`), what one run may change
(`DEFAULTS`), and their checking (`merge_settings`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logicval_hf.contract.catalog import Domain
from logicval_hf.contract.domain import load_domain
from logicval_hf.perception.neural.prompts import attribute_sources

__all__ = ["DEFAULTS", "MODEL_SETTINGS", "default_device", "merge_settings"]

#: Settings that select and load models (a pipeline is cached per these).
MODEL_SETTINGS: dict[str, Any] = {
    "detector": "IDEA-Research/grounding-dino-tiny",
    "clip_model": "ViT-L-14",
    "clip_pretrained": "openai",
    "device": None,  # None: "cuda" when available, else "cpu"
}

#: Settings of one run (overridable per call).
DEFAULTS: dict[str, Any] = {
    "domain": None,  # None: the pipeline's (CLEVR unless built with another); a domain name or a Domain
    "sources": None,  # None: attribute_sources(domain); or {attribute: "views" | "detector" | "geneval"}
    "geneval_templates": None,  # None: GENEVAL_TEMPLATES (each with "{c}"; "{classname}" optional)
    "detector_prompt": None,  # None: "a cube. a sphere. a cylinder." built from the domain's noun values
    "box_threshold": 0.15,  # paper, Appendix E
    "text_threshold": 0.15,  # token threshold of the detector's phrase labels (kept in Detection.label only)
    "nms_iou": 0.5,  # drop a lower-scoring box whose IoU with a kept one exceeds this
    "containment": 0.85,  # ... or whose area lies inside a kept one by more than this fraction
    "max_objects": 20,
    "min_box_size": 2.0,  # boxes narrower or lower than this many pixels (after clipping) are dropped
    "detector_batch_size": 4,
    "clip_batch_size": 64,
    "image_chunk": 32,  # extract_batch works through this many images at a time (bounds host memory)
    "grey": 128,  # grey level of the canvas background (0..255)
    "logit_scale": None,  # None: the CLIP model's own (exp of its learnt logit_scale; 100 for OpenAI CLIP)
    "templates": None,  # None: TEMPLATES; or {attribute: [template, ...]}
    "views": None,  # None: VIEW_SPECS; or {attribute: [(size, background), ...]}
    "view_scales": None,  # None: VIEW_SCALES
    "class_names": None,  # optional {attribute: {value: phrase}} used in the prompts instead of the value
}


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def merge_settings(base: Mapping[str, Any], overrides: Mapping[str, Any], domain: Domain) -> dict[str, Any]:
    """``base`` run settings with ``overrides`` applied and checked: the domain resolved (``None``: ``domain``),
    each attribute's source worked out (``"_sources"``), thresholds and sizes in range.

    Raises:
        ValueError: an unknown setting (listing the known ones), an unknown domain or source, a value out of range.
    """
    unknown = [k for k in overrides if k not in DEFAULTS and k != "_sources"]
    if unknown:
        raise ValueError(f"unknown neural perception settings {unknown}; known: {sorted(DEFAULTS)}")
    s = dict(base)
    s.update(overrides)
    if s["domain"] is None:
        s["domain"] = domain
    elif not isinstance(s["domain"], Domain):
        s["domain"] = load_domain(s["domain"])  # unknown: SpecError (a ValueError) naming the known ones
    s["_sources"] = attribute_sources(s["domain"], s["sources"])
    if s["geneval_templates"] is not None:
        gt = tuple(s["geneval_templates"])
        if not gt or any(not isinstance(x, str) or "{c}" not in x for x in gt):
            raise ValueError("geneval_templates must be a non-empty list of strings with '{c}' "
                             "(and optionally '{classname}')")
    for k in ("box_threshold", "text_threshold"):
        if not 0 <= float(s[k]) <= 1:
            raise ValueError(f"{k} must lie in [0, 1], got {s[k]!r}")
    for k in ("detector_batch_size", "clip_batch_size", "max_objects", "image_chunk"):
        if not isinstance(s[k], int) or s[k] < 1:
            raise ValueError(f"{k} must be a positive integer, got {s[k]!r}")
    return s
