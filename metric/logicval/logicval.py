# Copyright 2026 The LogicVal-HF Authors.
#
# Licensed under the MIT License.
"""LogicVal: text-to-image evaluation as logical constraint satisfaction over CLEVR scenes.

A thin `evaluate` wrapper: the work is done by `logicval_hf.scoring.evaluation.compute` (input checks, then
the judge, `logicval_hf.scoring.judge`: perception, clingo verification, the probabilistic score); the input format is
`logicval_hf.scoring.features`.
"""

import evaluate

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.common.hub import default_repo_id
from logicval_hf.perception import get_backend
from logicval_hf.scoring.evaluation import compute
from logicval_hf.scoring.features import metric_features

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
attributes and boxes; the CLEVR scene parser shipped in the package by default) or taken as given, and
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
        A scene graph is read in the domain of its reference's spec: a COCO scene graph has objects
        `{"class", "color", "bbox", "score"}` (and may say `"domain": "coco"`); one in another domain than
        its spec's is refused, naming the item.
        Images and scene graphs cannot be mixed in one `compute()` call: the call is refused with a
        `ValueError` naming the first item of the other kind (an image path among scene-graph JSON strings,
        or the reverse).
    references (`list`): one per prediction. A specification (JSON string or dict,
        `{"n": 5, "constraints": [{"template": "C1/1prop", "params": {...}}]}`; a COCO one says
        `"domain": "coco"` and may set a `score_threshold`) or a benchmark row (JSON string or dict with
        `spec_json` and optionally `id`, `package`, `label`).
    backend (`str`, optional): perception backend for images: `"clevr"` (default, the module's
        `config_name` otherwise), `"neural"` when installed, or `"given"` (scene graphs only).
    count (`str`, optional): count mode of the probabilistic score, `"strict"` (default: exactly n
        objects) or `"relaxed"`. Both deterministic scores are always reported.
    per_sample (`bool`, optional): include every sample's verdict, violated constraints and scene graph
        (default `True`).
    probs (`bool`, optional): keep the objects' attribute probability tables (`probs`) in the per-sample
        scene graphs (default `False`: they are long).
    probabilistic (`bool` or `dict`, optional): also compute the probability that each scene satisfies
        its specification under the perceived attribute probabilities (default `False`); a dict passes
        settings to `logicval_hf.scoring.probabilistic.probability` (`max_exact`, `samples`, `seed`, `epsilon`).
    backend_settings (`dict`, optional): keyword settings for the perception backend.
    timeout (`float`, optional): time budget in seconds for labelling each specification given without its
        label (default 20; `None`: no budget). Past it the call raises `SolverTimeout` (a `ValueError`) naming
        the reference, never a label the solver has not proved.
    repair (`bool`, optional): also compute each sample's cheapest repair, the fewest edits (set an attribute,
        move, remove or add an object) after which its scene satisfies its specification (default `False`).
    min_confidence (`float` in [0, 1], optional): set apart as *unread* every sample whose scene graph's
        `confidence` is below it (or that has none): scored neither as a pass nor as a failure; every score is
        then over the samples read with at least that confidence (default `None`: every sample is scored).
    baselines (`str` or `list`, optional): also score every image with these baseline metrics, beside LogicVal:
        `"clipscore"`, `"vlm-judge"`, `"soft-tifa"` (comma-separated or a list; `logicval baselines` lists what
        each needs) or built `logicval_hf.scoring.baselines` metrics. Images only.
    baseline_settings (`dict`, optional): `{name: {setting: value}}` for the baselines, e.g.
        `{"clipscore": {"model": "path/to/clip"}, "vlm-judge": {"model": "gpt-4o"}}`.

Returns:
    logicval_score (`float` in [0, 1]): fraction of samples whose verdict is ok (strict count).
    relaxed_score (`float` in [0, 1]): the same ignoring the object count.
    sat_score, sat_relaxed_score, count_accuracy (`float` in [0, 1] or `None`): on satisfiable specs.
    abstention_rate (`float` in [0, 1] or `None`): on unsatisfiable specs, the fraction of empty scenes.
    false_abstention_rate (`float` in [0, 1] or `None`): on satisfiable specs, the fraction of empty scenes.
    n_samples (`int`), by_package, by_class, by_template, constraint_success_by_class,
    constraint_success_by_operator (`dict`): breakdowns (`n` and rates in [0, 1]).
    by_load (`dict`): success on SAT specs per compositional load, the number of objects plus the number of
        constraints (`n + m`, keys as strings: `"4"` ... `"15"`), with `n`, `score` and `relaxed_score`.
    probabilistic_score (`float` in [0, 1]): mean probability of satisfaction (only with `probabilistic`).
    mean_repair_cost (`float`): mean number of edits to satisfaction (only with `repair`; also per package in
        `by_package`).
    min_confidence, n_read, n_unread (only with `min_confidence`): the threshold, the samples read with at least
        that confidence (the scores are theirs) and those set apart; `n_samples` counts both.
    per_sample (`list` of `dict`): `id`, `package`, `label`, `ok`, `relaxed_ok`, `count_ok`, `violated`
        (0-based indices of the failing constraints), `n_objects`, `load`, `confidence` (the perception
        backend's probability in [0, 1] that the scene graph is right, e.g. the `clevr` parser's; `None` when
        the backend or the given scene graph has none: look at the least confident images first), `scene` (and
        `probability`, `probability_exact`, `probability_stderr` with `probabilistic`; `repair_cost`,
        `repair_optimal`, `edits` and `instructions` with `repair`; `unread`, None or why the sample was set
        apart, with `min_confidence`: an unread sample's `ok`, `relaxed_ok` and `count_ok` are None; `baselines`,
        `{name: {"score", ...}}`, with `baselines`).
    baselines (`dict`, only with `baselines`): per baseline, `mean` (over the images it scored), `n_scored` and
        `n_unscored` (no honest score: an unparseable judge answer, a failed request; the sample says why).

Raises:
    ValueError: no samples, unequal lengths, images mixed with scene graphs, a `min_confidence` outside [0, 1],
        or a malformed item (the message names it, e.g. `predictions[3]: ...`); `SolverTimeout` (a `ValueError`):
        a reference's label took longer than `timeout`.

Examples:

    >>> import json
    >>> import evaluate
    >>> logicval = evaluate.load("metric/logicval")  # the Hub: evaluate.load("logicval/logicval")
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
    >>> results["by_load"]  # 3 objects + 1 constraint
    {'4': {'n': 2, 'score': 0.5, 'relaxed_score': 0.5}}
    >>> logicval.compute(predictions=[], references=[])
    Traceback (most recent call last):
    ...
    ValueError: no predictions to score: predictions and references are empty (pass one prediction per reference)

    Attribute probabilities give a probabilistic score:

    >>> scene["objects"][0]["probs"] = {"color": {"red": 0.75, "purple": 0.25}}
    >>> results = logicval.compute(predictions=[json.dumps(scene)], references=[json.dumps(spec)],
    ...                            probabilistic=True, per_sample=False)
    >>> results["logicval_score"], results["probabilistic_score"]
    (1.0, 0.75)

    COCO scene graphs (a detector's classes, GenEval's colours, detection scores) against a COCO spec; a scene
    graph is read in its spec's domain, and objects scoring under the spec's `score_threshold` do not count:

    >>> dog = {"prop": "class", "value": "dog", "negated": False}
    >>> coco_spec = {"domain": "coco", "n": 2, "score_threshold": 0.3, "constraints": [
    ...     {"template": "X1/count_cmp", "params": {"A1": dog, "T": ">=", "K": 2}}]}
    >>> dogs = {"image_size": [512, 512], "domain": "coco", "objects": [
    ...     {"class": "dog", "color": "brown", "bbox": [20, 200, 80, 260], "score": 0.9},
    ...     {"class": "dog", "color": "black", "bbox": [300, 200, 360, 260], "score": 0.8}]}
    >>> unsure = json.loads(json.dumps(dogs))
    >>> unsure["objects"][1]["score"] = 0.2
    >>> results = logicval.compute(predictions=[json.dumps(dogs), json.dumps(unsure)],
    ...                            references=[json.dumps(coco_spec), json.dumps(coco_spec)])
    >>> [(s["ok"], s["n_objects"]) for s in results["per_sample"]]
    [(True, 2), (False, 1)]
"""

# the benchmark dataset, in the Hub namespace of `logicval_hf.common.hub` (LOGICVAL_HUB_NAMESPACE, default logicval)
_HOMEPAGE = f"https://huggingface.co/datasets/{default_repo_id()}"
_LICENSE = "MIT"


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Logicval(evaluate.Metric):
    """LogicVal metric: images or scene graphs against logical specifications.

    Named ``Logicval`` because evaluate names a module after its class (``camelcase_to_snakecase``): the
    metric is ``logicval``, as its folder, script and Space are (``LogicVal`` would read ``logic_val``).
    """

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            homepage=_HOMEPAGE,
            license=_LICENSE,
            inputs_description=_KWARGS_DESCRIPTION,
            features=metric_features(),
            codebase_urls=["https://pypi.org/project/logicval-hf/"],
            reference_urls=[_HOMEPAGE, "https://potassco.org/clingo/", "https://cs.stanford.edu/people/jcjohns/clevr/"],
        )

    def _download_and_prepare(self, dl_manager):
        """The perception backend named by `config_name` (`"default"` means `"clevr"`): any backend registered
        in `logicval_hf.perception.BACKENDS` (an unknown name fails here, listing the known ones); the `clevr`
        backend ships its weights inside `logicval_hf`, a model-based one resolves its models on first use."""
        self.backend = "clevr" if self.config_name in (None, "default") else self.config_name
        get_backend(self.backend)

    def _compute(self, predictions, references, backend=None, count="strict", per_sample=True,
                 probabilistic=False, backend_settings=None, probs=False, timeout=DEFAULT_TIMEOUT, repair=False,
                 min_confidence=None, baselines=None, baseline_settings=None):
        return compute(predictions, references, backend=backend or self.backend, per_sample=per_sample,
                       backend_settings=backend_settings, count=count, probabilistic=probabilistic, probs=probs,
                       timeout=timeout, repair=repair, min_confidence=min_confidence, baselines=baselines,
                       baseline_settings=baseline_settings)
