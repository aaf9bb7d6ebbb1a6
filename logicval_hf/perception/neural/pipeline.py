"""`NeuralPipeline`: the detector half and the CLIP half over already constructed models, and the scenes they
make together (see `logicval_hf.perception.neural`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from logicval_hf.contract.catalog import Domain, load_catalog
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.perception.neural.clip import ClipAttributes, clip_preprocess_cfg
from logicval_hf.perception.neural.detector import GroundingDetection
from logicval_hf.perception.neural.prompts import noun_of
from logicval_hf.perception.neural.settings import DEFAULTS, default_device, merge_settings
from logicval_hf.perception.neural.views import check_rgb

__all__ = ["NeuralPipeline", "build_pipeline"]


class NeuralPipeline(GroundingDetection, ClipAttributes):
    """Grounding DINO + zero-shot CLIP over already constructed models (see `logicval_hf.perception.neural`).

    ``detector`` is a Grounding-DINO-like ``transformers`` model (``model(**processor(images=..., text=...))``
    returns ``logits`` and ``pred_boxes``) and ``detector_processor`` its processor (with
    ``post_process_grounded_object_detection``); ``clip`` has ``encode_image`` / ``encode_text`` (open_clip)
    and ``clip_tokenizer(list_of_str) -> LongTensor``. ``clip_preprocess`` may give ``{"size", "mean",
    "std"}``; by default they are read from the open_clip model. ``domain`` (a name or a `Domain`; default the
    catalog's CLEVR) is the domain perceived unless a call's ``domain`` setting names another. Run settings
    (`DEFAULTS`) are set here and can be overridden per call.
    """

    def __init__(self, detector: Any, detector_processor: Any, clip: Any, clip_tokenizer: Callable[..., Any], *,
                 clip_preprocess: Mapping[str, Any] | None = None, device: str | None = None,
                 domain: Domain | str | None = None, **settings: Any) -> None:
        import torch

        self.device = torch.device(device or default_device())
        self.detector = detector.to(self.device).eval()
        self.detector_processor = detector_processor
        self.clip = clip.to(self.device).eval()
        self.clip_tokenizer = clip_tokenizer
        self.domain = load_catalog().domain if domain is None else load_domain(domain)
        pre = clip_preprocess_cfg(clip)
        pre.update(dict(clip_preprocess or {}))
        if isinstance(pre["size"], int):
            pre["size"] = (pre["size"], pre["size"])
        self.clip_preprocess = pre
        self.settings = self._merge(settings)
        self._text_cache: dict[tuple, Any] = {}
        self._prompt_cache: dict[tuple, Any] = {}
        self._lock = threading.Lock()


    # ---- settings ------------------------------------------------------------------------------
    def _merge(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        return merge_settings(getattr(self, "settings", DEFAULTS), overrides, self.domain)

    # ---- scenes --------------------------------------------------------------------------------
    def extract_batch(self, images: Sequence[Any], **overrides: Any) -> list[Scene]:
        """Scenes of several images (uint8 RGB arrays, PIL images or paths), ``image_chunk`` images at a time
        (detector forwards of ``detector_batch_size`` images, CLIP forwards of ``clip_batch_size`` crops), in the
        domain of the ``domain`` setting."""
        s = self._merge(overrides)
        dom, sources = s["domain"], s["_sources"]
        noun = noun_of(dom)
        images = list(images)
        scenes = []
        for start in range(0, len(images), s["image_chunk"]):
            rgbs = [check_rgb(im, f"images[{start + i}]")
                    for i, im in enumerate(images[start:start + s["image_chunk"]])]
            dets = self.detect_batch(rgbs, **overrides)
            boxes = [[d.bbox for d in ds] for ds in dets]
            probs = self.classify_batch(rgbs, boxes, **overrides)
            if sources.get(noun) == "detector":
                for ds, ps in zip(dets, probs, strict=True):
                    for d, p in zip(ds, ps, strict=True):
                        p[noun] = dict(d.probs) if d.probs else {d.label: 1.0}
            if "geneval" in sources.values():
                classes = [[max(p[noun], key=p[noun].__getitem__) for p in ps] for ps in probs]
                extra = self.classify_geneval(rgbs, boxes, classes, **overrides)
                for ps, es in zip(probs, extra, strict=True):
                    for p, e in zip(ps, es, strict=True):
                        p.update(e)
            for rgb, ds, ps in zip(rgbs, dets, probs, strict=True):
                objs = []
                for d, all_probs in zip(ds, ps, strict=True):
                    p = {a: all_probs[a] for a in dom.perceived_attributes if a in all_probs}
                    attrs = {a: max(dist, key=dist.__getitem__) for a, dist in p.items()}
                    if sources.get(noun) == "detector":
                        attrs[noun] = d.label
                        attrs = {a: attrs[a] for a in dom.perceived_attributes}
                    objs.append(SceneObject(attrs, d.bbox, d.score, p))
                scenes.append(Scene((rgb.shape[1], rgb.shape[0]), tuple(objs), dom))
        return scenes

    def extract(self, image: Any, **overrides: Any) -> Scene:
        """The scene of one image."""
        return self.extract_batch([image], **overrides)[0]

    __call__ = extract


def build_pipeline(detector: Any, detector_processor: Any, clip: Any, clip_tokenizer: Callable[..., Any], *,
                   clip_preprocess: Mapping[str, Any] | None = None, device: str | None = None,
                   domain: Domain | str | None = None, **settings: Any) -> NeuralPipeline:
    """A pipeline over models you constructed (custom or tiny test models); see `NeuralPipeline`."""
    return NeuralPipeline(detector, detector_processor, clip, clip_tokenizer, clip_preprocess=clip_preprocess,
                          device=device, domain=domain, **settings)
