"""The CLIP half of the neural pipeline: zero-shot attributes of detected objects, from views of each object
(the paper's prompt-template and image-view aggregation) or from GenEval's colour crops, with the text
embeddings cached per pipeline."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from logicval_hf.perception.neural.prompts import GENEVAL_LOGIT_SCALE, GENEVAL_TEMPLATES, TEMPLATES, noun_of
from logicval_hf.perception.neural.views import VIEW_SCALES, VIEW_SPECS, check_rgb, geneval_crop, render_view

__all__ = ["ClipAttributes", "clip_preprocess_cfg"]

_OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
_OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def clip_preprocess_cfg(clip: Any) -> dict[str, Any]:
    try:
        import open_clip

        cfg = dict(open_clip.get_model_preprocess_cfg(clip))
    except Exception:  # noqa: BLE001  not an open_clip model, or an old open_clip: CLIP's defaults below
        cfg = {}
    size: Any = cfg.get("size")
    if size is None:
        size = getattr(getattr(clip, "visual", None), "image_size", 224)
    return {
        "size": tuple(int(s) for s in size) if isinstance(size, (tuple, list)) else (int(size), int(size)),
        "mean": tuple(cfg.get("mean") or _OPENAI_MEAN),
        "std": tuple(cfg.get("std") or _OPENAI_STD),
    }


class ClipAttributes:
    """`NeuralPipeline`'s attribute methods. They use the pipeline's ``clip`` (``encode_image`` /
    ``encode_text``), ``clip_tokenizer``, ``clip_preprocess``, ``device``, ``_merge`` (run settings), ``_lock``
    and ``_text_cache``."""

    clip: Any
    clip_tokenizer: Any
    clip_preprocess: dict[str, Any]
    device: Any
    _lock: Any
    _text_cache: dict[tuple, Any]
    _merge: Callable[[Mapping[str, Any]], dict[str, Any]]  # the pipeline's run settings with overrides

    def _views(self, s: Mapping[str, Any], attributes: Sequence[str] | None = None
               ) -> dict[str, tuple[tuple[str, str], ...]]:
        spec = dict(VIEW_SPECS)
        spec.update(s["views"] or {})
        scales = {**VIEW_SCALES, **(s["view_scales"] or {})}
        dom = s["domain"]
        if attributes is None:
            attributes = [a for a in dom.perceived_attributes if s["_sources"][a] == "views"]
        unknown = [a for a in attributes if a not in dom.perceived_attributes]
        if unknown:
            raise ValueError(f"{unknown} are not perceived attributes of domain {dom.name!r}")
        out = {}
        for a in [a for a in dom.perceived_attributes if a in attributes]:
            views = tuple((str(v), str(b)) for v, b in spec.get(a, spec["default"]))
            if not views:
                raise ValueError(f"attribute {a!r} has no views")
            for v, b in views:
                if v not in scales:
                    raise ValueError(f"view size {v!r} of attribute {a!r} is not one of {sorted(scales)}")
                if b not in ("grey", "original"):
                    raise ValueError(f"view background {b!r} of attribute {a!r} must be 'grey' or 'original'")
            out[a] = views
        return out

    def _templates(self, s: Mapping[str, Any], attribute: str) -> tuple[str, ...]:
        spec = dict(TEMPLATES)
        spec.update(s["templates"] or {})
        t = tuple(spec.get(attribute, spec["default"]))
        if not t or any("{}" not in x for x in t):
            raise ValueError(f"templates of {attribute!r} must be a non-empty list of strings with one '{{}}'")
        return t

    # ---- text side -----------------------------------------------------------------------------
    def text_embeddings(self, attribute: str, **overrides: Any) -> Any:
        """``[templates, values, dim]`` L2-normalised text embeddings of one attribute (cached)."""
        import torch

        s = self._merge(overrides)
        values = tuple(s["domain"].attributes[attribute])
        names = dict((s["class_names"] or {}).get(attribute, {}))
        phrases = tuple(str(names.get(v, v)) for v in values)
        templates = self._templates(s, attribute)
        key = (attribute, phrases, templates)
        with self._lock:
            hit = self._text_cache.get(key)
        if hit is not None:
            return hit
        texts = [t.format(p) for t in templates for p in phrases]
        tokens = self.clip_tokenizer(texts).to(self.device)
        with torch.inference_mode():
            emb = self.clip.encode_text(tokens).float()
        emb = torch.nn.functional.normalize(emb, dim=-1).reshape(len(templates), len(phrases), -1)
        with self._lock:
            self._text_cache[key] = emb
        return emb

    def geneval_classifier(self, attribute: str, classname: str, **overrides: Any) -> Any:
        """``[values, dim]`` GenEval zero-shot classifier of one attribute for objects of one class (cached): per
        value, the L2-normalised text embeddings of the prompts (`GENEVAL_TEMPLATES`, ``{c}`` the value's phrase,
        ``{classname}`` the class's) averaged and normalised again."""
        import torch

        s = self._merge(overrides)
        values = tuple(s["domain"].attributes[attribute])
        names = dict((s["class_names"] or {}).get(attribute, {}))
        phrases = tuple(str(names.get(v, v)) for v in values)
        templates = tuple(s["geneval_templates"] or GENEVAL_TEMPLATES)
        key = ("geneval", attribute, classname, phrases, templates)
        with self._lock:
            hit = self._text_cache.get(key)
        if hit is not None:
            return hit
        texts = [t.format(c=p, classname=classname) for p in phrases for t in templates]
        tokens = self.clip_tokenizer(texts).to(self.device)
        with torch.inference_mode():
            emb = self.clip.encode_text(tokens).float()
        emb = torch.nn.functional.normalize(emb, dim=-1).reshape(len(phrases), len(templates), -1).mean(1)
        emb = torch.nn.functional.normalize(emb, dim=-1)
        with self._lock:
            self._text_cache[key] = emb
        return emb

    def _logit_scale(self, s: Mapping[str, Any]) -> float:
        if s["logit_scale"] is not None:
            return float(s["logit_scale"])
        ls = getattr(self.clip, "logit_scale", None)
        if ls is None:
            return 100.0
        import torch

        return float(torch.as_tensor(ls).detach().float().exp().reshape(-1)[0])

    # ---- attributes ----------------------------------------------------------------------------
    def _crop_tensor(self, canvases: list[np.ndarray]) -> Any:
        import torch
        from PIL import Image

        w, h = self.clip_preprocess["size"][1], self.clip_preprocess["size"][0]
        arr = np.stack([np.asarray(Image.fromarray(c).resize((w, h), Image.Resampling.BICUBIC)) for c in canvases])
        x = torch.from_numpy(arr).to(self.device).permute(0, 3, 1, 2).float().div_(255.0)
        mean = torch.tensor(self.clip_preprocess["mean"], device=self.device).view(1, 3, 1, 1)
        std = torch.tensor(self.clip_preprocess["std"], device=self.device).view(1, 3, 1, 1)
        return (x - mean) / std

    def encode_views(self, canvases: Iterable[np.ndarray], batch_size: int) -> Any:
        """L2-normalised image embeddings of the canvases, ``batch_size`` crops per CLIP forward (the
        canvases may be a generator: only one chunk of them is held at a time)."""
        import torch

        feats = []
        it = iter(canvases)
        while True:
            chunk = list(itertools.islice(it, batch_size))
            if not chunk:
                break
            x = self._crop_tensor(chunk)
            with torch.inference_mode():
                feats.append(torch.nn.functional.normalize(self.clip.encode_image(x).float(), dim=-1))
        return torch.cat(feats) if feats else None

    def classify_batch(self, images: Sequence[np.ndarray], boxes: Sequence[Sequence[Sequence[float]]],
                       attributes: Sequence[str] | None = None, **overrides: Any
                       ) -> list[list[dict[str, dict[str, float]]]]:
        """Attribute distributions ``{attribute: {value: p}}`` of every box of every image, by zero-shot CLIP over
        views: of ``attributes`` (default: those whose source is ``"views"``; CLEVR: all of them)."""
        import torch

        s = self._merge(overrides)
        dom = s["domain"]
        images = [check_rgb(im, f"images[{i}]") for i, im in enumerate(images)]
        if len(images) != len(boxes):
            raise ValueError(f"{len(images)} images but {len(boxes)} box lists")
        views = self._views(s, attributes)
        scales = {**VIEW_SCALES, **(s["view_scales"] or {})}
        needed = sorted({v for vs in views.values() for v in vs})
        slot = {v: i for i, v in enumerate(needed)}
        jobs = [(rgb, b) for rgb, bxs in zip(images, boxes, strict=True) for b in bxs]
        canvases = (render_view(rgb, b, scales[size], bg, s["grey"]) for rgb, b in jobs for size, bg in needed)
        n_obj = len(jobs)
        result: list[list[dict[str, dict[str, float]]]] = [[] for _ in images]
        if n_obj == 0:
            return result
        if not views:
            return [[{} for _ in bxs] for bxs in boxes]
        feats = self.encode_views(canvases, s["clip_batch_size"]).reshape(n_obj, len(needed), -1)
        scale = self._logit_scale(s)
        per_attr = {}
        for a, vs in views.items():
            text = self.text_embeddings(a, **overrides)  # [T, V, D]
            f = feats[:, [slot[v] for v in vs]]  # [N, views, D]
            logits = scale * torch.einsum("nkd,tvd->nktv", f, text)
            logits = logits.mean(2).mean(1)  # templates, then views
            per_attr[a] = torch.softmax(logits.double(), -1).cpu().numpy()
        k = 0
        for i, bxs in enumerate(boxes):
            for _ in bxs:
                result[i].append({a: {v: float(p) for v, p in zip(dom.attributes[a], per_attr[a][k], strict=True)}
                                  for a in views})
                k += 1
        return result

    def classify_geneval(self, images: Sequence[np.ndarray], boxes: Sequence[Sequence[Sequence[float]]],
                         classnames: Sequence[Sequence[str]], attributes: Sequence[str] | None = None,
                         **overrides: Any) -> list[list[dict[str, dict[str, float]]]]:
        """GenEval's zero-shot classification of every box of every image: its crop (`geneval_crop`) against the
        classifier of its class (`geneval_classifier`; ``classnames[i][j]`` is box j's noun value), logits
        ``100 * cos`` (or ``logit_scale``), softmax. ``attributes``: default those whose source is
        ``"geneval"``."""
        import torch

        s = self._merge(overrides)
        dom = s["domain"]
        noun = noun_of(dom)
        if attributes is None:
            attributes = [a for a in dom.perceived_attributes if s["_sources"][a] == "geneval"]
        images = [check_rgb(im, f"images[{i}]") for i, im in enumerate(images)]
        if not (len(images) == len(boxes) == len(classnames)):
            raise ValueError(f"{len(images)} images, {len(boxes)} box lists and {len(classnames)} class lists")
        names = dict((s["class_names"] or {}).get(noun, {}))
        jobs: list[tuple[np.ndarray, Sequence[float], str]] = []
        for rgb, bxs, cls in zip(images, boxes, classnames, strict=True):
            if len(bxs) != len(cls):
                raise ValueError(f"{len(bxs)} boxes but {len(cls)} class names")
            jobs.extend((rgb, b, str(names.get(c, c))) for b, c in zip(bxs, cls, strict=True))
        result: list[list[dict[str, dict[str, float]]]] = [[{} for _ in bxs] for bxs in boxes]
        if not jobs or not attributes:
            return result
        size = tuple(self.clip_preprocess["size"])
        feats = self.encode_views((geneval_crop(rgb, b, size) for rgb, b, _ in jobs), s["clip_batch_size"])
        scale = GENEVAL_LOGIT_SCALE if s["logit_scale"] is None else float(s["logit_scale"])
        flat: list[dict[str, dict[str, float]]] = [{} for _ in jobs]
        for a in attributes:
            by_class: dict[str, list[int]] = {}
            for k, (_, _, c) in enumerate(jobs):
                by_class.setdefault(c, []).append(k)
            for c, ks in by_class.items():
                clf = self.geneval_classifier(a, c, **overrides)  # [V, D]
                p = torch.softmax((scale * feats[ks] @ clf.T).double(), -1).cpu().numpy()
                for k, row in zip(ks, p, strict=True):
                    flat[k][a] = {v: float(x) for v, x in zip(dom.attributes[a], row, strict=True)}
        k = 0
        for i, bxs in enumerate(boxes):
            for j in range(len(bxs)):
                result[i][j] = flat[k]
                k += 1
        return result
