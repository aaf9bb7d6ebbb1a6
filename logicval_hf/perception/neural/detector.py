"""The detector half of the neural pipeline: Grounding DINO boxes for a domain's objects, suppressed to one per
object; when a domain's noun comes from the detector (COCO's classes), the prompt chunks that name every value
and each box's score per value."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from logicval_hf.perception.neural.boxes import suppress_duplicates
from logicval_hf.perception.neural.prompts import PromptChunk, class_prompt_chunks, default_detector_prompt, noun_of
from logicval_hf.perception.neural.views import as_pil, check_rgb

__all__ = ["Detection", "GroundingDetection"]


@dataclass(frozen=True)
class Detection:
    """One detection after suppression: box in pixels, detector score and label (the detector's phrase, or the
    noun value when the noun comes from the detector, with ``probs``: the box's scores over the values it was
    prompted with, normalised)."""

    bbox: tuple[float, float, float, float]
    score: float
    label: str = ""
    probs: Mapping[str, float] | None = None


def _xyxy(row: Sequence[float]) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = (float(v) for v in row)
    return x0, y0, x1, y1


class GroundingDetection:
    """`NeuralPipeline`'s detection methods. They use the pipeline's ``detector`` (a Grounding-DINO-like
    ``transformers`` model), ``detector_processor``, ``device``, ``_merge`` (run settings), ``_lock`` and
    ``_prompt_cache``."""

    detector: Any
    detector_processor: Any
    device: Any
    _lock: Any
    _prompt_cache: dict[tuple, Any]
    _merge: Callable[[Mapping[str, Any]], dict[str, Any]]  # the pipeline's run settings with overrides

    def detect_batch(self, images: Sequence[np.ndarray], **overrides: Any) -> list[list[Detection]]:
        """Boxes of several images: one detector forward per ``detector_batch_size`` images."""
        import torch

        s = self._merge(overrides)
        rgbs = [check_rgb(im, f"images[{i}]") for i, im in enumerate(images)]
        if s["_sources"].get(noun_of(s["domain"])) == "detector":
            return self._detect_classes(rgbs, s)
        prompt = s["detector_prompt"] or default_detector_prompt(s["domain"])
        prompt = prompt.strip().lower()
        if not prompt.endswith("."):
            prompt += "."
        out: list[list[Detection]] = []
        bs = s["detector_batch_size"]
        for start in range(0, len(rgbs), bs):
            chunk = rgbs[start:start + bs]
            inputs = self.detector_processor(images=[as_pil(r) for r in chunk], text=[prompt] * len(chunk),
                                             return_tensors="pt")
            inputs = {k: (v.to(self.device) if hasattr(v, "to") else v) for k, v in inputs.items()}
            with torch.inference_mode():
                outputs = self.detector(**inputs)
            sizes = [(r.shape[0], r.shape[1]) for r in chunk]
            results = self.detector_processor.post_process_grounded_object_detection(
                outputs, inputs["input_ids"], threshold=float(s["box_threshold"]),
                text_threshold=float(s["text_threshold"]), target_sizes=sizes)
            for r, res in zip(chunk, results, strict=True):
                out.append(self._postprocess(r, res, s))
        return out

    def _postprocess(self, rgb: np.ndarray, res: Mapping[str, Any], s: Mapping[str, Any]) -> list[Detection]:
        H, W = rgb.shape[:2]
        boxes = res["boxes"].detach().float().cpu().numpy().reshape(-1, 4) if len(res["boxes"]) else np.zeros((0, 4))
        scores = res["scores"].detach().float().cpu().numpy().reshape(-1)
        labels = list(res["text_labels"] if "text_labels" in res else res.get("labels", [""] * len(scores)))
        labels = [lab if isinstance(lab, str) else "" for lab in labels] + [""] * max(0, len(scores) - len(labels))
        boxes = boxes.copy()
        boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, W)
        boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, H)
        ok = ((boxes[:, 2] - boxes[:, 0]) >= s["min_box_size"]) & ((boxes[:, 3] - boxes[:, 1]) >= s["min_box_size"])
        ok &= np.isfinite(boxes).all(1) & np.isfinite(scores) & (scores >= s["box_threshold"])
        idx = np.flatnonzero(ok)
        keep = suppress_duplicates(boxes[idx], scores[idx], s["nms_iou"], s["containment"])[: s["max_objects"]]
        return [Detection(_xyxy(boxes[idx[k]]), float(scores[idx[k]]), labels[idx[k]]) for k in keep]

    # ---- detection with the noun as the detector's label ----------------------------------------
    def class_prompts(self, **overrides: Any) -> list[tuple[str, tuple[str, ...], tuple[tuple[int, ...], ...]]]:
        """The detector prompts of the domain's noun values, as ``(prompt, values, token positions)`` chunks.

        Each value is prompted as ``"a dog."`` (its ``class_names`` phrase if given); a chunk holds as many as
        fit the detector's text length (``config.max_text_len``, 256 for Grounding DINO, with [CLS] and [SEP]);
        the positions are those of each value's name tokens (not the article, not the dot) in the tokenised
        prompt. Cached per domain and phrases."""
        s = self._merge(overrides)
        return [(prompt, values, spans) for prompt, values, spans, _ in self._class_prompts(s)]

    def _class_prompts(self, s: Mapping[str, Any]) -> list[PromptChunk]:
        dom = s["domain"]
        if s["detector_prompt"]:
            raise ValueError("detector_prompt cannot be set when the noun comes from the detector's label: the "
                             "prompt names the domain's values (rename them with class_names)")
        noun = noun_of(dom)
        names = dict((s["class_names"] or {}).get(noun, {}))
        phrases = tuple(str(names.get(v, v)).strip().lower() for v in dom.attributes[noun])
        tok = getattr(self.detector_processor, "tokenizer", None)
        if tok is None:
            raise ValueError("the detector's processor has no tokenizer: its labels cannot be mapped to the "
                             f"domain's {noun} values")
        max_len = int(getattr(getattr(self.detector, "config", None), "max_text_len", 256) or 256)
        key = (dom.key, phrases, max_len)
        with self._lock:
            hit = self._prompt_cache.get(key)
        if hit is not None:
            return hit
        out = class_prompt_chunks(dom.attributes[noun], phrases, tok, max_len, noun)
        with self._lock:
            self._prompt_cache[key] = out
        return out

    def _detect_classes(self, rgbs: Sequence[np.ndarray], s: Mapping[str, Any]) -> list[list[Detection]]:
        """Detections labelled with the domain's noun values: every chunk of `class_prompts` over every batch of
        images, merged, then suppressed label by label."""
        import torch

        chunks = self._class_prompts(s)
        cands: list[list[tuple[np.ndarray, float, str, dict[str, float] | None]]] = [[] for _ in rgbs]
        bs = s["detector_batch_size"]
        for start in range(0, len(rgbs), bs):
            batch = rgbs[start:start + bs]
            pil = [as_pil(r) for r in batch]
            for prompt, values, spans, full in chunks:
                inputs = self.detector_processor(images=pil, text=[prompt] * len(batch), return_tensors="pt")
                got = inputs["input_ids"][:, :len(full)].tolist()
                if any(row != list(full) for row in got):
                    raise ValueError(f"the detector's processor tokenised the prompt {prompt!r} differently from its "
                                     "tokenizer: its labels cannot be mapped to the domain's values")
                inputs = {k: (v.to(self.device) if hasattr(v, "to") else v) for k, v in inputs.items()}
                with torch.inference_mode():
                    outputs = self.detector(**inputs)
                probs = torch.sigmoid(outputs.logits.float())  # [B, Q, max_text_len]
                per_class = torch.stack([probs[..., list(sp)].mean(-1) for sp in spans], -1)  # [B, Q, C]
                boxes = outputs.pred_boxes.float()  # [B, Q, 4] (cx, cy, w, h) relative
                for b, rgb in enumerate(batch):
                    H, W = rgb.shape[:2]
                    cx, cy, w, h = boxes[b].unbind(-1)
                    xyxy = torch.stack([(cx - w / 2) * W, (cy - h / 2) * H, (cx + w / 2) * W, (cy + h / 2) * H],
                                       -1).cpu().numpy()
                    pc = per_class[b].double().cpu().numpy()
                    best = pc.argmax(-1)
                    for q in range(pc.shape[0]):
                        total = float(pc[q].sum())
                        dist = ({v: float(p) / total for v, p in zip(values, pc[q], strict=True)} if total > 0
                                else None)
                        cands[start + b].append((xyxy[q], float(pc[q, best[q]]), values[best[q]], dist))
        return [self._suppress_labelled(rgb, c, s) for rgb, c in zip(rgbs, cands, strict=True)]

    def _suppress_labelled(self, rgb: np.ndarray, cands: list, s: Mapping[str, Any]) -> list[Detection]:
        H, W = rgb.shape[:2]
        if not cands:
            return []
        boxes = np.array([c[0] for c in cands], float).reshape(-1, 4)
        scores = np.array([c[1] for c in cands], float)
        boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, W)
        boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, H)
        ok = ((boxes[:, 2] - boxes[:, 0]) >= s["min_box_size"]) & ((boxes[:, 3] - boxes[:, 1]) >= s["min_box_size"])
        ok &= np.isfinite(boxes).all(1) & np.isfinite(scores) & (scores >= s["box_threshold"])
        kept: list[int] = []
        labels = [c[2] for c in cands]
        for value in dict.fromkeys(labels[i] for i in np.flatnonzero(ok)):
            idx = np.array([i for i in np.flatnonzero(ok) if labels[i] == value])
            kept.extend(int(idx[k]) for k in suppress_duplicates(boxes[idx], scores[idx], s["nms_iou"],
                                                                 s["containment"]))
        kept.sort(key=lambda i: (-scores[i], i))
        return [Detection(_xyxy(boxes[i]), float(scores[i]), labels[i], cands[i][3])
                for i in kept[: s["max_objects"]]]
