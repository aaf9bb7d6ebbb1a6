# Copyright 2026 The LogicVal-HF Authors.
#
# Licensed under the MIT License.
"""LogicVal: text-to-image evaluation as logical constraint satisfaction over CLEVR scenes.

A thin `evaluate` wrapper: the work is done by `logicval_hf.scoring.evaluation.compute` (perception + clingo
verification + scoring) and `logicval_hf.scoring.probabilistic` (uncertainty-aware scores).
"""

import io
import json
import os
from pathlib import Path

import datasets
import evaluate
import numpy as np

from logicval_hf.errors import SpecError
from logicval_hf.scoring.evaluation import compute as logicval_compute
from logicval_hf.scoring.evaluation import parse_reference
from logicval_hf.perception import BACKENDS
from logicval_hf.perception import MAX_PIXELS
from logicval_hf.perception import PerceptionError
from logicval_hf.perception import load_image
from logicval_hf.scoring.probabilistic import probability
from logicval_hf.contract.scene import Scene
from logicval_hf.asp.solver import default_solver
from logicval_hf.contract.spec import Spec


logger = evaluate.logging.get_logger(__name__)


_CITATION = """\
@misc{logicval2026,
  title = {{LogicVal}: A Logic-Formalized Benchmark for Constraint Satisfaction in Text-to-Image Generation},
  year  = {2026}
}
"""

_DESCRIPTION = """\
LogicVal scores a text-to-image model by checking its images against the logical specification its prompt
was generated from. A specification fixes the number of objects n and one or more first-order constraints
(existence, universal, conditional, relational and counting constraints over colour, shape, material, one of
four image regions, and left/right/front/behind). For every image a scene graph is extracted (objects with
attributes and boxes; a CLEVR-specific, weight-free perception backend by default) or taken as given, and
the answer-set solver clingo decides whether it satisfies the specification. The LogicVal score is the
fraction of images that do (exactly n objects and every constraint). For unsatisfiable specifications the
right answer is an empty scene: the abstention rate reports how often a model draws one. A count-relaxed
score ignores the number of objects; breakdowns are given per package, constraint class, template and
logical operator. Optionally, a probabilistic score propagates the perception's attribute probabilities into
the probability that the image satisfies the specification.
"""

_KWARGS_DESCRIPTION = """
Checks images (or their scene graphs) against the logical specifications of their prompts.

Args:
    predictions (`list`): one per reference. Either images (`PIL.Image.Image`, `uint8` numpy arrays
        `H x W x 3`, paths to image files, or encoded image bytes) or scene graphs (JSON strings, dicts or
        `logicval_hf.Scene`: `{"image_size": [W, H], "objects": [{"color", "shape", "material",
        "bbox": [x0, y0, x1, y1], optional "probs": {attribute: {value: p}}}]}`), e.g. human annotations.
        Images and scene graphs cannot be mixed within one module instance.
    references (`list`): one per prediction. A specification (JSON string or dict,
        `{"n": 5, "constraints": [{"template": "C1/1prop", "params": {...}}]}`) or a benchmark row (JSON
        string or dict with `spec_json` and optionally `id`, `package`, `label`).
    backend (`str`, optional): perception backend for images: `"clevr"` (default, the module's
        `config_name` otherwise), `"neural"` when installed, or `"given"` (scene graphs only).
    count (`str`, optional): count mode of the probabilistic score, `"strict"` (default: exactly n
        objects) or `"relaxed"`. Both deterministic scores are always reported.
    per_sample (`bool`, optional): include every sample's verdicts and scene graph (default `True`).
    probabilistic (`bool` or `dict`, optional): also compute the probability that each scene satisfies
        its specification under the perceived attribute probabilities (default `False`); a dict passes
        settings to `logicval_hf.scoring.probabilistic.probability` (`max_exact`, `samples`, `seed`, `epsilon`).
    backend_settings (`dict`, optional): keyword settings for the perception backend.

Returns:
    logicval_score (`float` in [0, 1]): fraction of samples whose verdict is ok (strict count).
    relaxed_score (`float` in [0, 1]): the same ignoring the object count.
    sat_score, sat_relaxed_score, count_accuracy (`float` in [0, 1] or `None`): on satisfiable specs.
    abstention_rate (`float` in [0, 1] or `None`): on unsatisfiable specs, the fraction of empty scenes.
    false_abstention_rate (`float` in [0, 1] or `None`): on satisfiable specs, the fraction of empty scenes.
    n_samples (`int`), by_package, by_class, by_template, constraint_success_by_class,
    constraint_success_by_operator (`dict`): breakdowns (`n` and rates in [0, 1]).
    probabilistic_score (`float` in [0, 1]): mean probability of satisfaction (only with `probabilistic`).
    per_sample (`list` of `dict`): `id`, `package`, `label`, `ok`, `relaxed_ok`, `count_ok`, `violated`,
        `n_objects`, `scene` (and `probability`, `probability_exact`, `probability_stderr` with
        `probabilistic`).

Examples:

    >>> import json
    >>> import evaluate
    >>> logicval = evaluate.load("metric/logicval")  # the Hub: evaluate.load("owner/logicval")
    >>> spec = {"n": 3, "constraints": [{"template": "C1/1prop",
    ...         "params": {"A1": {"prop": "color", "value": "red", "negated": False}}}]}
    >>> def box(cx, cy):
    ...     return [cx - 20, cy - 20, cx + 20, cy + 20]
    >>> scene = {"image_size": [480, 320], "objects": [
    ...     {"color": "red", "shape": "cube", "material": "metal", "bbox": box(100, 80)},
    ...     {"color": "blue", "shape": "sphere", "material": "rubber", "bbox": box(300, 80)},
    ...     {"color": "gray", "shape": "cylinder", "material": "rubber", "bbox": box(200, 250)}]}
    >>> no_red = json.loads(json.dumps(scene))
    >>> no_red["objects"][0]["color"] = "green"
    >>> results = logicval.compute(predictions=[json.dumps(scene), json.dumps(no_red)],
    ...                            references=[json.dumps(spec), json.dumps(spec)])
    >>> results["logicval_score"], [s["ok"] for s in results["per_sample"]]
    (0.5, [True, False])

    Attribute probabilities give a probabilistic score:

    >>> scene["objects"][0]["probs"] = {"color": {"red": 0.75, "purple": 0.25}}
    >>> results = logicval.compute(predictions=[json.dumps(scene)], references=[json.dumps(spec)],
    ...                            probabilistic=True, per_sample=False)
    >>> results["logicval_score"], results["probabilistic_score"]
    (1.0, 0.75)
"""

_HOMEPAGE = "https://huggingface.co/datasets/owner/logicval"

_FEATURES = [
    # scene graphs (JSON) or image file paths, with specs / benchmark rows as JSON
    datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
    # images (PIL, uint8 arrays), PNG-encoded into Arrow and decoded back to PIL in `_compute`
    datasets.Features({"predictions": datasets.Image(), "references": datasets.Value("string")}),
]

_ROW_KEYS = ("id", "package", "label", "spec_json")


def _check_image_file(path, what):
    """Refuse a non-image or oversized file (a path or raw bytes) from its header, before anything decodes it."""
    from PIL import Image
    from PIL import UnidentifiedImageError

    if isinstance(path, (bytes, bytearray)):
        source, what = io.BytesIO(path), f"{what} (image bytes)"
    else:
        if not os.path.isfile(path):
            raise PerceptionError(f"{what}: {str(path)[:200]!r} is neither scene-graph JSON nor an existing image file")
        source, what = path, f"{what} {str(path)!r}"
    try:
        with Image.open(source) as im:
            w, h = im.size
    except UnidentifiedImageError:
        raise PerceptionError(f"{what}: not an image file PIL can read") from None
    except (OSError, ValueError, SyntaxError) as e:
        raise PerceptionError(f"{what}: corrupt image ({e})") from None
    if w * h > MAX_PIXELS:
        raise PerceptionError(
            f"{what}: image of {w}x{h} = {w * h / 1e6:.1f} megapixels exceeds the limit of "
            f"{MAX_PIXELS / 1e6:.0f} megapixels"
        )


def _prediction(x, i):
    """A prediction as a JSON string, a path string, or an image the `datasets.Image` feature encodes."""
    what = f"predictions[{i}]"
    if isinstance(x, Scene):
        return x.to_json()
    if isinstance(x, dict) and "objects" in x:
        return _validated(x, what).to_json()
    if isinstance(x, os.PathLike):
        x = os.fspath(x)
    if isinstance(x, str):
        if x.lstrip().startswith("{"):
            _validated(x, what)
        else:
            _check_image_file(x, what)
        return x
    if isinstance(x, np.ndarray):
        load_image(x, what)  # dtype, shape and size checks (cheap: no decoding)
        return x
    if type(x).__module__.startswith("PIL."):
        w, h = x.size
        if w * h > MAX_PIXELS:
            raise PerceptionError(
                f"{what}: image of {w}x{h} = {w * h / 1e6:.1f} megapixels exceeds the limit of "
                f"{MAX_PIXELS / 1e6:.0f} megapixels"
            )
        return x
    if isinstance(x, (bytes, bytearray)):  # encoded image bytes (PNG, JPEG, ...)
        _check_image_file(bytes(x), what)
        return {"bytes": bytes(x), "path": None}
    if isinstance(x, dict) and ("bytes" in x or "path" in x):  # a `datasets.Image` cell
        if x.get("bytes") is not None:
            _check_image_file(x["bytes"], what)
        elif x.get("path") is not None:
            _check_image_file(x["path"], what)
        else:
            raise ValueError(f"{what}: an image cell needs 'bytes' or 'path'")
        return x
    raise ValueError(
        f"{what}: expected an image (PIL image, uint8 array, path) or a scene graph (JSON string, dict, Scene), "
        f"got {type(x).__name__}"
    )


def _validated(x, what):
    try:
        return Scene.from_dict(x)
    except ValueError as e:
        raise type(e)(f"{what}: {e}") from None


def _reference(x, i):
    """A reference as a JSON string (a spec, or a benchmark row reduced to id / package / label / spec_json)."""
    what = f"references[{i}]"
    if isinstance(x, Spec):
        return x.to_json()
    if isinstance(x, bytes):
        x = x.decode("utf-8")
    if isinstance(x, str):
        try:
            x = json.loads(x)
        except json.JSONDecodeError as e:
            raise SpecError(f"{what}: reference is not valid spec JSON ({e})") from None
    if not isinstance(x, dict):
        raise SpecError(f"{what}: expected a spec or a benchmark row (JSON or dict), got {type(x).__name__}")
    if "spec_json" in x:
        x = {k: x[k] for k in _ROW_KEYS if x.get(k) is not None}
    try:
        parse_reference(x, default_solver())
    except ValueError as e:
        raise type(e)(f"{what}: {e}") from None
    return json.dumps(x, separators=(",", ":"))


def _prepare(predictions, references):
    if isinstance(predictions, (str, bytes)) or isinstance(references, (str, bytes)):
        raise ValueError("predictions and references must be lists (one item per sample)")
    predictions = list(predictions) if predictions is not None else []
    references = list(references) if references is not None else []
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions for {len(references)} references")
    preds = [_prediction(p, i) for i, p in enumerate(predictions)]
    refs = [_reference(r, i) for i, r in enumerate(references)]
    kinds = {"text" if isinstance(p, str) else "image" for p in preds}
    if kinds == {"image", "text"}:
        if any(isinstance(p, str) and p.lstrip().startswith("{") for p in preds):
            raise ValueError("predictions mix images and scene graphs; score them in separate compute() calls")
        preds = [Path(p) if isinstance(p, str) else p for p in preds]  # image paths ride the Image feature
    return preds, refs


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class LogicVal(evaluate.Metric):
    """LogicVal metric: images or scene graphs against logical specifications."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            homepage=_HOMEPAGE,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_FEATURES,
            codebase_urls=["https://pypi.org/project/logicval-hf/"],
            reference_urls=[_HOMEPAGE, "https://potassco.org/clingo/", "https://cs.stanford.edu/people/jcjohns/clevr/"],
        )

    def _download_and_prepare(self, dl_manager):
        """Resolve the perception backend named by `config_name` (`"default"` means `"clevr"`).

        The `clevr` backend ships its weights inside `logicval_hf`; a model-based backend resolves its
        models (hub ids or local paths from `backend_settings`) on first use.
        """
        backend = "clevr" if self.config_name in (None, "default") else self.config_name
        if backend != "given" and backend not in BACKENDS:
            raise ValueError(f"unknown perception backend {backend!r}; known backends: {sorted({*BACKENDS, 'given'})}")
        self.backend = backend

    # -- input normalisation: scene graphs and rows become JSON strings, images are checked before encoding --
    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of predictions and references (see the module's inputs description)."""
        if predictions is not None or references is not None:
            predictions, references = _prepare(predictions, references)
            if self.selected_feature_format is not None and predictions:
                wants_image = isinstance(self.selected_feature_format["predictions"], datasets.Image)
                if wants_image:
                    if any(isinstance(p, str) and p.lstrip().startswith("{") for p in predictions):
                        raise ValueError("this module already holds images; scene graphs must go to a separate "
                                         "compute() call")
                    predictions = [Path(p) if isinstance(p, str) else p for p in predictions]
                elif any(not isinstance(p, str) for p in predictions):
                    raise ValueError("this module already holds scene graphs or image paths; add images as file "
                                     "paths, or score them in a separate compute() call")
        return evaluate.Metric.add_batch(self, predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one prediction and reference (see the module's inputs description)."""
        if prediction is None and reference is None:
            return evaluate.Metric.add(self, prediction=prediction, reference=reference, **kwargs)
        return self.add_batch(predictions=[prediction], references=[reference], **kwargs)

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score the predictions against the references (see the module's inputs description)."""
        if predictions is not None or references is not None:
            predictions, references = _prepare(predictions, references)
        return evaluate.Metric.compute(self, predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, backend=None, count="strict", per_sample=True,
                 probabilistic=False, backend_settings=None):
        if count not in ("strict", "relaxed"):
            raise ValueError(f"count must be 'strict' or 'relaxed', got {count!r}")
        refs = [json.loads(r) for r in references]
        out = logicval_compute(predictions, refs, backend=backend or getattr(self, "backend", "clevr"),
                               per_sample=True, backend_settings=backend_settings)
        if probabilistic:
            settings = dict(probabilistic) if isinstance(probabilistic, dict) else {}
            specs = [parse_reference(r, default_solver())[0] for r in refs]
            results = [
                probability(spec, s["scene"], count=count, label=s["label"], **settings)
                for spec, s in zip(specs, out["per_sample"])
            ]
            for s, r in zip(out["per_sample"], results):
                s.update(probability=r.p, probability_exact=r.exact, probability_stderr=r.stderr)
            out["probabilistic_score"] = float(np.mean([r.p for r in results])) if results else None
        if not per_sample:
            out.pop("per_sample")
        return out
