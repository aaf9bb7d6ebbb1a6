"""Neural perception (paper §3.3 and Appendix E): Grounding DINO boxes + zero-shot CLIP attributes, in a domain.

The pipeline perceives the objects of a domain (`logicval_hf.contract.domain`; setting ``domain``: a name such as
``"coco"`` or a `Domain`, default the catalog's CLEVR). How each perceived attribute is perceived is its
*source* (`attribute_sources`, setting ``sources``):

* ``"views"``: zero-shot CLIP over views of the object (steps 2-3 below; the paper's pipeline). CLEVR perceives
  every attribute this way, the detector giving boxes only, exactly as in the paper.
* ``"detector"``: the domain's noun (``domain.noun``: COCO's ``class``) is the detector's label. The prompt
  names every noun value (``"a person. a bicycle. ..."``), in as many chunks as the detector's text length
  needs (Grounding DINO reads at most ``config.max_text_len`` tokens); a box's score for a value is the mean
  probability of that value's name tokens (Grounding DINO's COCO evaluation), its label the best value and its
  ``score`` that value's score. Duplicates are suppressed within each label. The default for every domain but
  CLEVR.
* ``"geneval"``: GenEval's colour classifier (the default for the ``color`` attribute of such domains): CLIP
  over the box cropped from the image (resized on its short side and centre-cropped, as open_clip's
  transform), zero-shot over the attribute's values with the prompts ``GENEVAL_TEMPLATES`` ("a photo of a
  {c} {classname}", ...) whose text embeddings are averaged per value; one classifier per class name, cached.

Pipeline, batched end to end:

1. **Detection.** One Grounding DINO forward per batch of images (``detector_batch_size`` images; the
   processor pads mixed sizes) with a text prompt naming the nouns of the domain (``"a cube. a sphere. a
   cylinder."`` for CLEVR, built from ``domain.noun``'s values) or any prompt you set (views-sourced nouns
   only). Boxes scoring at least ``box_threshold`` (0.15, as in the paper) are kept, clipped to the image, and
   de-duplicated: a box is dropped when its IoU with a higher-scoring kept box exceeds ``nms_iou`` or when
   more than ``containment`` of its own area lies inside a higher-scoring kept box (`suppress_duplicates`;
   among boxes of the same label when the noun comes from the detector). At most ``max_objects`` survive.
2. **Views.** Every object is cut out in the views its attributes need (`VIEW_SPECS`): a square canvas
   centred on the box, of side ``scale * max(w, h)`` (``tight`` 1.0, ``medium`` 1.5, ``wide`` 2.5), either
   on a flat grey background (only the pixels inside the object's box are copied: context removed) or on
   the original background (the surroundings, shadows and reflections stay). Per attribute (paper, App. E):
   shape = tight + medium on grey; colour = tight + medium + wide on grey; material = medium on the
   original background. Each distinct view of each object is rendered once and shared by the attributes.
3. **Zero-shot CLIP.** All views of all objects of all images of a call (``image_chunk`` images at a time)
   go through the image encoder in fixed-size chunks of ``clip_batch_size``, rendered lazily. Per attribute, the logits ``logit_scale * cos(view, text)`` are
   averaged over the prompt templates of every class (prompt-template aggregation; the text embeddings are
   computed once per pipeline and cached), then over the attribute's views (image-view aggregation); a
   softmax gives ``probs`` and the argmax the attribute value. The vocabulary comes from the domain
   (``perceived_attributes`` and ``attributes[a]``).

Entry points::

    from logicval_hf.perception.neural import extract, extract_batch, build_pipeline, load_pipeline
    scene = extract(rgb)                               # default models: grounding-dino-tiny + ViT-L-14/openai
    scene = extract(rgb, domain="coco")                # COCO: 80 classes from the detector, GenEval colours
    scenes = extract_batch([rgb1, rgb2], device="cuda", detector_batch_size=8)
    pipe = build_pipeline(detector=my_gdino, detector_processor=my_proc, clip=my_clip, clip_tokenizer=tok)
    scenes = pipe.extract_batch(images)

Model settings (``detector``, ``clip_model``, ``clip_pretrained``, ``device``) take hub ids *or* local paths:
``detector`` is anything ``AutoProcessor`` / ``AutoModelForZeroShotObjectDetection.from_pretrained`` accepts,
``clip_model`` an open_clip model name (or ``hf-hub:`` / ``local-dir:`` reference) and ``clip_pretrained`` an
open_clip weight tag or a local state-dict file. Loaded pipelines are cached per model settings.
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from logicval_hf.contract.catalog import Domain, load_catalog
from logicval_hf.contract.domain import DEFAULT_DOMAIN, load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.common.extras import BACKEND_EXTRAS
from logicval_hf.perception.backend import PerceptionBackend

__all__ = [
    "DEFAULTS", "MODEL_SETTINGS", "VIEW_SCALES", "VIEW_SPECS", "TEMPLATES", "NeuralPipeline", "Detection",
    "build_pipeline", "load_pipeline", "clear_cache", "extract", "extract_batch", "suppress_duplicates",
    "box_iou", "containment", "view_window", "render_view", "default_detector_prompt", "SOURCES",
    "GENEVAL_TEMPLATES", "VIEW_DOMAINS", "attribute_sources", "geneval_crop",
]

#: How an attribute can be perceived (see the module docstring).
SOURCES = ("views", "detector", "geneval")

#: Domains perceived as in the paper (Appendix E): the detector gives boxes, CLIP over views every attribute.
#: Every other domain takes its noun from the detector's label and its ``color`` from GenEval's classifier.
VIEW_DOMAINS = (DEFAULT_DOMAIN,)

#: GenEval's colour prompts (``{c}``: the colour, ``{classname}``: the object's class); per colour, the
#: L2-normalised text embeddings are averaged (and normalised again), as ``clip_benchmark``'s zero-shot classifier.
GENEVAL_TEMPLATES = ("a photo of a {c} {classname}", "a photo of a {c}-colored {classname}",
                     "a photo of a {c} object")

#: GenEval scores crops with this fixed CLIP logit scale (``100 * cos``).
GENEVAL_LOGIT_SCALE = 100.0

#: Canvas side as a multiple of the box's longer side, per view size.
VIEW_SCALES: dict[str, float] = {"tight": 1.0, "medium": 1.5, "wide": 2.5}

#: Views per attribute: (view size, background) with background "grey" (only the box's pixels are copied
#: onto a grey canvas) or "original" (the canvas shows the image around the box). Paper, Appendix E.
#: Attributes not listed use ``"default"``.
VIEW_SPECS: dict[str, tuple[tuple[str, str], ...]] = {
    "shape": (("tight", "grey"), ("medium", "grey")),
    "color": (("tight", "grey"), ("medium", "grey"), ("wide", "grey")),
    "material": (("medium", "original"),),
    "default": (("tight", "grey"), ("medium", "grey")),
}

#: Prompt templates per attribute ("{}" is the class name); logits are averaged over the templates.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "shape": (
        "a photo of a {}.",
        "a 3D render of a {}.",
        "a {} on a grey background.",
        "a rendering of a {} object.",
        "a close-up photo of a {}.",
    ),
    "color": (
        "a photo of a {} object.",
        "a {} object in a 3D render.",
        "a {} thing on a grey background.",
        "a rendering of a {} coloured object.",
        "the colour {}.",
    ),
    "material": (
        "a photo of a {} object.",
        "a {} object in a 3D render.",
        "an object made of {}.",
        "a rendering of a {} thing on a floor.",
        "a close-up photo of something made of {}.",
    ),
    "default": (
        "a photo of a {} object.",
        "a {} object in a 3D render.",
        "a rendering of a {} thing.",
    ),
}

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

_OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
_OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


# ---------------------------------------------------------------------------------------------------
# geometry: duplicate suppression and views
# ---------------------------------------------------------------------------------------------------
def _area(b: np.ndarray) -> np.ndarray:
    return np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)


def _intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise intersection areas of boxes ``a[N, 4]`` and ``b[M, 4]`` (``[N, M]``)."""
    x0 = np.maximum(a[:, None, 0], b[None, :, 0])
    y0 = np.maximum(a[:, None, 1], b[None, :, 1])
    x1 = np.minimum(a[:, None, 2], b[None, :, 2])
    y1 = np.minimum(a[:, None, 3], b[None, :, 3])
    return np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)


def box_iou(a: Any, b: Any) -> np.ndarray:
    """Pairwise IoU of ``[x0, y0, x1, y1]`` boxes (``[N, M]``)."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    inter = _intersection(a, b)
    union = _area(a)[:, None] + _area(b)[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def containment(a: Any, b: Any) -> np.ndarray:
    """``[N, M]``: the fraction of box ``a[i]``'s area that lies inside box ``b[j]``."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    inter = _intersection(a, b)
    area = _area(a)[:, None]
    return np.where(area > 0, inter / np.where(area > 0, area, 1), 0.0)


def suppress_duplicates(boxes: Any, scores: Any, iou_threshold: float = 0.5,
                        containment_threshold: float = 0.85) -> list[int]:
    """Indices of the boxes kept, highest score first (ties: lower index first).

    Boxes are visited by decreasing score; one is dropped when its IoU with an already kept box exceeds
    ``iou_threshold`` or when more than ``containment_threshold`` of its own area lies inside a kept box
    (paper, Appendix E: suppress a lower-confidence detection that overlaps or is mostly contained in a
    higher-confidence one). A threshold of ``None`` (or >= 1 for the IoU) disables that rule.
    """
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    scores = np.asarray(scores, float).reshape(-1)
    if len(boxes) != len(scores):
        raise ValueError(f"{len(boxes)} boxes but {len(scores)} scores")
    order = np.argsort(-scores, kind="stable")
    iou = box_iou(boxes, boxes)
    cont = containment(boxes, boxes)
    kept: list[int] = []
    for i in order:
        i = int(i)
        dup = False
        for j in kept:
            if iou_threshold is not None and iou[i, j] > iou_threshold:
                dup = True
                break
            if containment_threshold is not None and cont[i, j] > containment_threshold:
                dup = True
                break
        if not dup:
            kept.append(i)
    return kept


def view_window(bbox: Sequence[float], scale: float) -> tuple[int, int, int]:
    """The square canvas of a view, in image pixels: ``(x0, y0, side)``.

    The canvas is centred on the box centre and its side is ``scale`` times the box's longer side (at least
    one pixel), rounded to whole pixels. It may reach outside the image (that part is grey).
    """
    x0, y0, x1, y1 = (float(v) for v in bbox)
    side = max(1, int(math.ceil(scale * max(x1 - x0, y1 - y0) - 1e-9)))
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    return int(math.floor(cx - side / 2 + 0.5)), int(math.floor(cy - side / 2 + 0.5)), side


def render_view(rgb: np.ndarray, bbox: Sequence[float], scale: float, background: str,
                grey: int = 128) -> np.ndarray:
    """One view of an object as a ``side x side x 3`` uint8 canvas (see `view_window`).

    ``background="grey"``: the canvas is grey and only the pixels inside the object's box (whole pixels
    touched by the box) are copied; ``"original"``: every canvas pixel that lies in the image is copied.
    """
    if background not in ("grey", "original"):
        raise ValueError(f"view background must be 'grey' or 'original', got {background!r}")
    H, W = rgb.shape[:2]
    ox, oy, side = view_window(bbox, scale)
    canvas = np.full((side, side, 3), int(grey), dtype=np.uint8)
    # source region in the image
    sx0, sy0, sx1, sy1 = ox, oy, ox + side, oy + side
    if background == "grey":
        bx0, by0, bx1, by1 = bbox
        sx0, sy0 = max(sx0, int(math.floor(bx0))), max(sy0, int(math.floor(by0)))
        sx1, sy1 = min(sx1, int(math.ceil(bx1))), min(sy1, int(math.ceil(by1)))
    sx0, sy0, sx1, sy1 = max(sx0, 0), max(sy0, 0), min(sx1, W), min(sy1, H)
    if sx1 > sx0 and sy1 > sy0:
        canvas[sy0 - oy: sy1 - oy, sx0 - ox: sx1 - ox] = rgb[sy0:sy1, sx0:sx1]
    return canvas


def _noun(domain: Domain) -> str:
    from logicval_hf.contract.verbalise import NOUN_ATTRIBUTE

    return domain.noun or NOUN_ATTRIBUTE


def _prompt_piece(phrase: str) -> str:
    from logicval_hf.contract.verbalise import with_article

    return f"{with_article(phrase)}.".lower()


def default_detector_prompt(domain: Domain | None = None) -> str:
    """``"a cube. a sphere. a cylinder."`` from the values of the domain's noun (``domain.noun``: CLEVR's shape,
    COCO's class; ``"an object."`` without one). A noun taken from the detector is prompted in chunks that fit
    the detector's text length (`NeuralPipeline.class_prompts`)."""
    domain = domain or load_catalog().domain
    nouns = domain.attributes.get(_noun(domain), ())
    if not nouns:
        return "an object."
    return " ".join(_prompt_piece(s) for s in nouns)


def attribute_sources(domain: Domain, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{attribute: source}`` for every perceived attribute of ``domain`` (see the module docstring).

    Defaults: in `VIEW_DOMAINS` (CLEVR) every attribute from CLIP over views (the paper's pipeline); elsewhere
    the noun from the detector's label, ``color`` from GenEval's classifier and the rest from CLIP over views.
    ``overrides`` replace single entries. Raises `ValueError` for an unknown attribute or source, a detector
    source on an attribute other than the noun, or a GenEval source on the noun (its prompts name the class).
    """
    noun = _noun(domain)
    perceived = domain.perceived_attributes
    if domain.name in VIEW_DOMAINS:
        out = {a: "views" for a in perceived}
    else:
        out = {a: "detector" if a == noun else "geneval" if a == "color" and noun in perceived else "views"
               for a in perceived}
    for a, src in (overrides or {}).items():
        if a not in perceived:
            raise ValueError(f"sources: {a!r} is not a perceived attribute of domain {domain.name!r}; "
                             f"it has {list(perceived)}")
        if src not in SOURCES:
            raise ValueError(f"sources.{a}: {src!r} is not one of {list(SOURCES)}")
        out[a] = src
    for a, src in out.items():
        if src == "detector" and a != noun:
            raise ValueError(f"sources.{a}: only the domain's noun ({noun!r}) can come from the detector's label")
        if src == "geneval" and (a == noun or noun not in perceived):
            raise ValueError(f"sources.{a}: GenEval's classifier names the object's {noun!r} in its prompts; "
                             f"it cannot classify the noun itself")
    return out


def geneval_crop(rgb: np.ndarray, bbox: Sequence[float], size: tuple[int, int]) -> np.ndarray:
    """GenEval's colour crop as ``size = (H, W)`` uint8 pixels: the box cut from the image (``PIL.Image.crop``,
    which rounds the box), resized so that its short side fits (bicubic) and centre-cropped, as open_clip's
    evaluation transform does."""
    from PIL import Image

    x0, y0, x1, y1 = (int(round(float(v))) for v in bbox)  # PIL's own rounding of a float box
    im = _as_pil(rgb).crop((x0, y0, max(x1, x0 + 1), max(y1, y0 + 1)))
    w, h = im.size
    th, tw = int(size[0]), int(size[1])
    side = max(th, tw)
    if w <= h:  # torchvision's Resize(int): the short side becomes `side`, the long one int(side * long / short)
        nw, nh = side, int(side * h / w)
    else:
        nw, nh = int(side * w / h), side
    if (nw, nh) != (w, h):
        im = im.resize((nw, nh), Image.BICUBIC)
    top, left = int(round((nh - th) / 2.0)), int(round((nw - tw) / 2.0))
    return np.asarray(im.crop((left, top, left + tw, top + th)))


# ---------------------------------------------------------------------------------------------------
# the pipeline
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Detection:
    """One detection after suppression: box in pixels, detector score and label (the detector's phrase, or the
    noun value when the noun comes from the detector, with ``probs``: the box's scores over the values it was
    prompted with, normalised)."""

    bbox: tuple[float, float, float, float]
    score: float
    label: str = ""
    probs: Mapping[str, float] | None = None


def _find(seq: Sequence[int], sub: Sequence[int], start: int = 0) -> int | None:
    """The first index ``>= start`` where ``sub`` runs in ``seq`` (None if nowhere)."""
    n = len(sub)
    for i in range(start, len(seq) - n + 1):
        if list(seq[i:i + n]) == list(sub):
            return i
    return None


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _as_pil(rgb: np.ndarray):
    from PIL import Image

    return Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8), "RGB")


def _check_rgb(rgb: Any, what: str) -> np.ndarray:
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        from logicval_hf.perception import load_image

        return load_image(rgb, what)
    return rgb


def _clip_preprocess_cfg(clip: Any) -> dict[str, Any]:
    try:
        import open_clip

        cfg = dict(open_clip.get_model_preprocess_cfg(clip))
    except Exception:  # not an open_clip model, or an old open_clip
        cfg = {}
    size = cfg.get("size")
    if size is None:
        size = getattr(getattr(clip, "visual", None), "image_size", 224)
    if isinstance(size, (tuple, list)):
        size = tuple(int(s) for s in size)
    else:
        size = (int(size), int(size))
    return {
        "size": size,
        "mean": tuple(cfg.get("mean") or _OPENAI_MEAN),
        "std": tuple(cfg.get("std") or _OPENAI_STD),
    }


class NeuralPipeline:
    """Grounding DINO + zero-shot CLIP over already constructed models (see the module docstring).

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

        self.device = torch.device(device or _default_device())
        self.detector = detector.to(self.device).eval()
        self.detector_processor = detector_processor
        self.clip = clip.to(self.device).eval()
        self.clip_tokenizer = clip_tokenizer
        self.domain = load_catalog().domain if domain is None else load_domain(domain)
        pre = _clip_preprocess_cfg(clip)
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
        unknown = [k for k in overrides if k not in DEFAULTS and k != "_sources"]
        if unknown:
            raise ValueError(f"unknown neural perception settings {unknown}; known: {sorted(DEFAULTS)}")
        base = dict(getattr(self, "settings", DEFAULTS))
        base.update(overrides)
        if base["domain"] is None:
            base["domain"] = self.domain
        elif not isinstance(base["domain"], Domain):
            base["domain"] = load_domain(base["domain"])  # unknown: SpecError (a ValueError) naming the known ones
        base["_sources"] = attribute_sources(base["domain"], base["sources"])
        if base["geneval_templates"] is not None:
            gt = tuple(base["geneval_templates"])
            if not gt or any(not isinstance(x, str) or "{c}" not in x for x in gt):
                raise ValueError("geneval_templates must be a non-empty list of strings with '{c}' "
                                 "(and optionally '{classname}')")
        for k in ("box_threshold", "text_threshold"):
            if not 0 <= float(base[k]) <= 1:
                raise ValueError(f"{k} must lie in [0, 1], got {base[k]!r}")
        for k in ("detector_batch_size", "clip_batch_size", "max_objects", "image_chunk"):
            if not isinstance(base[k], int) or base[k] < 1:
                raise ValueError(f"{k} must be a positive integer, got {base[k]!r}")
        return base

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

    # ---- detection -----------------------------------------------------------------------------
    def detect_batch(self, images: Sequence[np.ndarray], **overrides: Any) -> list[list[Detection]]:
        """Boxes of several images: one detector forward per ``detector_batch_size`` images."""
        import torch

        s = self._merge(overrides)
        rgbs = [_check_rgb(im, f"images[{i}]") for i, im in enumerate(images)]
        if s["_sources"].get(_noun(s["domain"])) == "detector":
            return self._detect_classes(rgbs, s)
        prompt = s["detector_prompt"] or default_detector_prompt(s["domain"])
        prompt = prompt.strip().lower()
        if not prompt.endswith("."):
            prompt += "."
        out: list[list[Detection]] = []
        bs = s["detector_batch_size"]
        for start in range(0, len(rgbs), bs):
            chunk = rgbs[start:start + bs]
            inputs = self.detector_processor(images=[_as_pil(r) for r in chunk], text=[prompt] * len(chunk),
                                             return_tensors="pt")
            inputs = {k: (v.to(self.device) if hasattr(v, "to") else v) for k, v in inputs.items()}
            with torch.inference_mode():
                outputs = self.detector(**inputs)
            sizes = [(r.shape[0], r.shape[1]) for r in chunk]
            results = self.detector_processor.post_process_grounded_object_detection(
                outputs, inputs["input_ids"], threshold=float(s["box_threshold"]),
                text_threshold=float(s["text_threshold"]), target_sizes=sizes)
            for r, res in zip(chunk, results):
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
        return [Detection(tuple(float(v) for v in boxes[idx[k]]), float(scores[idx[k]]), labels[idx[k]])
                for k in keep]

    # ---- detection with the noun as the detector's label ----------------------------------------
    def class_prompts(self, **overrides: Any) -> list[tuple[str, tuple[str, ...], tuple[tuple[int, ...], ...]]]:
        """The detector prompts of the domain's noun values, as ``(prompt, values, token positions)`` chunks.

        Each value is prompted as ``"a dog."`` (its ``class_names`` phrase if given); a chunk holds as many as
        fit the detector's text length (``config.max_text_len``, 256 for Grounding DINO, with [CLS] and [SEP]);
        the positions are those of each value's name tokens (not the article, not the dot) in the tokenised
        prompt. Cached per domain and phrases."""
        s = self._merge(overrides)
        return [(prompt, values, spans) for prompt, values, spans, _ in self._class_prompts(s)]

    def _class_prompts(self, s: Mapping[str, Any]) -> list[tuple[str, tuple[str, ...], tuple[tuple[int, ...], ...],
                                                                  tuple[int, ...]]]:
        dom = s["domain"]
        if s["detector_prompt"]:
            raise ValueError("detector_prompt cannot be set when the noun comes from the detector's label: the "
                             "prompt names the domain's values (rename them with class_names)")
        noun = _noun(dom)
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

        def ids(text: str) -> list[int]:
            return list(tok(text, add_special_tokens=False)["input_ids"])

        budget = max_len - 2  # [CLS] ... [SEP]
        chunks: list[list[int]] = [[]]
        used = 0
        pieces = [ids(_prompt_piece(p)) for p in phrases]
        for k, piece in enumerate(pieces):
            if len(piece) > budget:
                raise ValueError(f"the prompt of {noun} {dom.attributes[noun][k]!r} alone is longer than the "
                                 f"detector's {max_len} text tokens")
            if used + len(piece) > budget and chunks[-1]:
                chunks.append([])
                used = 0
            chunks[-1].append(k)
            used += len(piece)
        out = []
        for chunk in chunks:
            prompt = " ".join(_prompt_piece(phrases[k]) for k in chunk)
            full = list(tok(prompt)["input_ids"])
            cursor, spans = 0, []
            for k in chunk:
                start = _find(full, pieces[k], cursor)
                name = ids(phrases[k])
                off = _find(pieces[k], name, 0) if name else None
                if start is None:
                    raise ValueError(f"the detector's tokenizer does not split the prompt {prompt!r} into its "
                                     f"phrases; cannot locate {phrases[k]!r}")
                if off is None:  # the name is not a token run of its piece: use the piece but its final dot
                    span = tuple(range(start, start + max(1, len(pieces[k]) - 1)))
                else:
                    span = tuple(range(start + off, start + off + len(name)))
                spans.append(span)
                cursor = start + len(pieces[k])
            out.append((prompt, tuple(dom.attributes[noun][k] for k in chunk), tuple(spans), tuple(full)))
        with self._lock:
            self._prompt_cache[key] = out
        return out

    def _detect_classes(self, rgbs: Sequence[np.ndarray], s: Mapping[str, Any]) -> list[list[Detection]]:
        """Detections labelled with the domain's noun values: every chunk of `class_prompts` over every batch of
        images, merged, then suppressed label by label."""
        import torch

        chunks = self._class_prompts(s)
        cands: list[list[tuple[np.ndarray, float, str, dict[str, float]]]] = [[] for _ in rgbs]
        bs = s["detector_batch_size"]
        for start in range(0, len(rgbs), bs):
            batch = rgbs[start:start + bs]
            pil = [_as_pil(r) for r in batch]
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
                    xyxy = torch.stack([(cx - w / 2) * W, (cy - h / 2) * H, (cx + w / 2) * W, (cy + h / 2) * H], -1)
                    xyxy = xyxy.cpu().numpy()
                    pc = per_class[b].double().cpu().numpy()
                    best = pc.argmax(-1)
                    for q in range(pc.shape[0]):
                        total = float(pc[q].sum())
                        dist = {v: float(p) / total for v, p in zip(values, pc[q])} if total > 0 else None
                        cands[start + b].append((xyxy[q], float(pc[q, best[q]]), values[best[q]], dist))
        return [self._suppress_labelled(rgb, c, s) for rgb, c in zip(rgbs, cands)]

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
        return [Detection(tuple(float(v) for v in boxes[i]), float(scores[i]), labels[i], cands[i][3])
                for i in kept[: s["max_objects"]]]

    # ---- attributes ----------------------------------------------------------------------------
    def _crop_tensor(self, canvases: list[np.ndarray]) -> Any:
        import torch
        from PIL import Image

        w, h = self.clip_preprocess["size"][1], self.clip_preprocess["size"][0]
        arr = np.stack([np.asarray(Image.fromarray(c).resize((w, h), Image.BICUBIC)) for c in canvases])
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
        images = [_check_rgb(im, f"images[{i}]") for i, im in enumerate(images)]
        if len(images) != len(boxes):
            raise ValueError(f"{len(images)} images but {len(boxes)} box lists")
        views = self._views(s, attributes)
        scales = {**VIEW_SCALES, **(s["view_scales"] or {})}
        needed = sorted({v for vs in views.values() for v in vs})
        slot = {v: i for i, v in enumerate(needed)}
        jobs = [(rgb, b) for rgb, bxs in zip(images, boxes) for b in bxs]
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
                result[i].append({a: {v: float(p) for v, p in zip(dom.attributes[a], per_attr[a][k])}
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
        noun = _noun(dom)
        if attributes is None:
            attributes = [a for a in dom.perceived_attributes if s["_sources"][a] == "geneval"]
        images = [_check_rgb(im, f"images[{i}]") for i, im in enumerate(images)]
        if not (len(images) == len(boxes) == len(classnames)):
            raise ValueError(f"{len(images)} images, {len(boxes)} box lists and {len(classnames)} class lists")
        names = dict((s["class_names"] or {}).get(noun, {}))
        jobs = []
        for rgb, bxs, cls in zip(images, boxes, classnames):
            if len(bxs) != len(cls):
                raise ValueError(f"{len(bxs)} boxes but {len(cls)} class names")
            jobs.extend((rgb, b, str(names.get(c, c))) for b, c in zip(bxs, cls))
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
                for k, row in zip(ks, p):
                    flat[k][a] = {v: float(x) for v, x in zip(dom.attributes[a], row)}
        k = 0
        for i, bxs in enumerate(boxes):
            for j in range(len(bxs)):
                result[i][j] = flat[k]
                k += 1
        return result

    # ---- scenes --------------------------------------------------------------------------------
    def extract_batch(self, images: Sequence[Any], **overrides: Any) -> list[Scene]:
        """Scenes of several images (uint8 RGB arrays, PIL images or paths), ``image_chunk`` images at a time
        (detector forwards of ``detector_batch_size`` images, CLIP forwards of ``clip_batch_size`` crops), in the
        domain of the ``domain`` setting."""
        s = self._merge(overrides)
        dom, sources = s["domain"], s["_sources"]
        noun = _noun(dom)
        images = list(images)
        scenes = []
        for start in range(0, len(images), s["image_chunk"]):
            rgbs = [_check_rgb(im, f"images[{start + i}]")
                    for i, im in enumerate(images[start:start + s["image_chunk"]])]
            dets = self.detect_batch(rgbs, **overrides)
            boxes = [[d.bbox for d in ds] for ds in dets]
            probs = self.classify_batch(rgbs, boxes, **overrides)
            if sources.get(noun) == "detector":
                for ds, ps in zip(dets, probs):
                    for d, p in zip(ds, ps):
                        p[noun] = dict(d.probs) if d.probs else {d.label: 1.0}
            if "geneval" in sources.values():
                classes = [[max(p[noun], key=p[noun].get) for p in ps] for ps in probs]
                extra = self.classify_geneval(rgbs, boxes, classes, **overrides)
                for ps, es in zip(probs, extra):
                    for p, e in zip(ps, es):
                        p.update(e)
            for rgb, ds, ps in zip(rgbs, dets, probs):
                objs = []
                for d, p in zip(ds, ps):
                    p = {a: p[a] for a in dom.perceived_attributes if a in p}
                    attrs = {a: max(dist, key=dist.get) for a, dist in p.items()}
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


# ---------------------------------------------------------------------------------------------------
# construction and loading
# ---------------------------------------------------------------------------------------------------
def build_pipeline(detector: Any, detector_processor: Any, clip: Any, clip_tokenizer: Callable[..., Any], *,
                   clip_preprocess: Mapping[str, Any] | None = None, device: str | None = None,
                   domain: Domain | str | None = None, **settings: Any) -> NeuralPipeline:
    """A pipeline over models you constructed (custom or tiny test models); see `NeuralPipeline`."""
    return NeuralPipeline(detector, detector_processor, clip, clip_tokenizer, clip_preprocess=clip_preprocess,
                          device=device, domain=domain, **settings)


def load_detector(detector: str, device: str | None = None) -> tuple[Any, Any]:
    """``(model, processor)`` from a hub id or a local directory (``save_pretrained`` layout)."""
    from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

    processor = AutoProcessor.from_pretrained(detector)
    model = AutoModelForZeroShotObjectDetection.from_pretrained(detector)
    return model.to(device or _default_device()).eval(), processor


def load_clip(name: str, pretrained: str | None = None, device: str | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of an open_clip model; ``pretrained`` is a weight tag or a local file."""
    import open_clip

    model, _, _ = open_clip.create_model_and_transforms(name, pretrained=pretrained, device=device or _default_device())
    return model.eval(), open_clip.get_tokenizer(name)


_CACHE: dict[tuple, NeuralPipeline] = {}
_CACHE_LOCK = threading.Lock()


def load_pipeline(**settings: Any) -> NeuralPipeline:
    """The pipeline of the model settings (`MODEL_SETTINGS`), loaded once and cached; other keys are run
    settings (`DEFAULTS`) and become the pipeline's defaults only when it is first built."""
    model = {k: settings.pop(k, v) for k, v in MODEL_SETTINGS.items()}
    model["device"] = model["device"] or _default_device()
    key = tuple(sorted((k, str(v)) for k, v in model.items()))
    with _CACHE_LOCK:
        pipe = _CACHE.get(key)
        if pipe is None:
            det, proc = load_detector(model["detector"], model["device"])
            clip, tok = load_clip(model["clip_model"], model["clip_pretrained"], model["device"])
            pipe = NeuralPipeline(det, proc, clip, tok, device=model["device"])
            _CACHE[key] = pipe
    pipe._merge(settings)  # validate the run settings now
    return pipe


def clear_cache() -> None:
    """Forget every loaded pipeline."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _split(settings: dict[str, Any]) -> tuple[NeuralPipeline, dict[str, Any]]:
    pipe = settings.pop("pipeline", None)
    run = {k: settings.pop(k) for k in list(settings) if k in DEFAULTS}
    if pipe is None:
        from logicval_hf.common.extras import require_backend

        require_backend("neural")  # one line naming the extra, not a traceback from deep inside transformers
        pipe = load_pipeline(**settings)
    elif settings:
        raise ValueError(f"model settings {sorted(settings)} cannot be combined with pipeline=")
    return pipe, run


def extract(rgb: Any, **settings: Any) -> Scene:
    """Backend entry point: the scene of one image. ``settings`` are model settings (`MODEL_SETTINGS`), run
    settings (`DEFAULTS`, ``domain="coco"`` among them) or ``pipeline=`` (a `NeuralPipeline` to use instead of
    loading one)."""
    pipe, run = _split(dict(settings))
    return pipe.extract(rgb, **run)


def extract_batch(images: Sequence[Any], **settings: Any) -> list[Scene]:
    """Batched backend entry point: ``[extract(im, **settings) for im in images]`` in a few forwards."""
    pipe, run = _split(dict(settings))
    return pipe.extract_batch(list(images), **run)


#: the ``neural`` perception backend (`logicval_hf.perception.BACKENDS`): any domain (`extract_scene(...,
#: domain=...)` passes it on), batched; its models are hub ids or local paths given as settings
BACKEND = PerceptionBackend(
    "neural", extract, extract_batch, domains=None, takes_domain=True, requires=BACKEND_EXTRAS["neural"][1],
    extra=BACKEND_EXTRAS["neural"][0], description="Grounding DINO boxes + zero-shot CLIP attributes (paper §3.3)")
