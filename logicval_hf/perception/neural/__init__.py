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
   go through the image encoder in fixed-size chunks of ``clip_batch_size``, rendered lazily. Per attribute,
   the logits ``logit_scale * cos(view, text)`` are averaged over the prompt templates of every class
   (prompt-template aggregation; the text embeddings are
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

The package is split at its seams: `boxes` (box geometry, duplicate suppression), `views` (object views,
GenEval's crops), `prompts` (attribute sources, the detector's and CLIP's prompts), `settings`, `detector` (the
detector half), `clip` (the CLIP half), `pipeline` (`NeuralPipeline`, both halves together), `loading` (models
from hub ids or paths, the pipeline cache); this module holds the backend's entry points and `BACKEND`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from logicval_hf.common.extras import BACKEND_EXTRAS
from logicval_hf.contract.scene import Scene
from logicval_hf.perception.backend import PerceptionBackend
from logicval_hf.perception.neural.loading import (
    check_settings,
    clear_cache,
    load_clip,
    load_detector,
    load_pipeline,
)
from logicval_hf.perception.neural.pipeline import NeuralPipeline, build_pipeline
from logicval_hf.perception.neural.settings import DEFAULTS, MODEL_SETTINGS

# the backend's entry points and what builds a pipeline; the pieces are imported from their own modules
# (boxes, detector, prompts, views)
__all__ = ["BACKEND", "DEFAULTS", "MODEL_SETTINGS", "NeuralPipeline", "build_pipeline", "check_settings", "clear_cache",
           "extract", "extract_batch", "load_clip", "load_detector", "load_pipeline"]


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
    extra=BACKEND_EXTRAS["neural"][0], description="Grounding DINO boxes + zero-shot CLIP attributes (paper §3.3)",
    check_settings=check_settings)
