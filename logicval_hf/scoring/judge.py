"""The judge: spec(s) + image(s) or scene graph(s) -> one typed `Judgement` per item.

Every front door that turns images or scene graphs into verdicts calls it: the ``evaluate`` metric
(`logicval_hf.scoring.evaluation.compute`), the main job (`logicval_hf.job.score`), the Space's Check tab, the
``check`` / ``verify`` / ``repair`` commands and the reward server's workers (`logicval_hf.serve.worker`).
Nothing else turns an image into a scene graph (``extract_scene(s)``). Options live apart from the call, in one
frozen `JudgeOptions`::

    from logicval_hf.scoring.judge import JudgeOptions, judge
    options = JudgeOptions(backend="clevr", min_confidence=0.5, repair=True)
    for j in judge(specs_or_rows, images_or_scene_graphs, options):
        j.error or j.unread or (j.strict.ok, j.relaxed.ok, j.confidence, j.repair)

What one call does, in stages (each item that fails a stage gets its own error entry and skips the rest; the
other items go on, unless ``errors="raise"``, the metric's contract, raises the first failure instead):

1. **references**: a `Spec`, its dict or JSON, a benchmark row (`BenchmarkRow`, or a dict with ``spec_json``
   and optionally ``id``, ``package``, ``label``). The spec decides the domain of everything below.
2. **predictions**: a scene graph (a `Scene`, a dict with ``objects``, JSON) is read in its spec's domain; an
   image (PIL, uint8 array, path, encoded bytes, a ``datasets.Image`` cell; anything, for a backend that takes
   raw input) is perceived in it: one perception call per domain (`perceived_domain`), `JudgeOptions.chunk`
   images decoded at a time, so that memory stays bounded whatever the number of images. An image the backend
   cannot read (a ``vlm`` answer outside the vocabulary, a request that timed out) is its own entry and is never
   sent again (``extract_scenes(errors="return")``); only a chunk the backend refuses as a whole is read again
   image by image, so that one bad image costs only its own entry, unless the backend says it can read none
   (`logicval_hf.perception.BackendUnavailable`: an endpoint that cannot be reached): then each image gets that
   error at once.
3. **minimum confidence**: with ``min_confidence`` set, a scene graph whose ``confidence`` is below it (or that
   has none) is *unread*: set apart with the reason, scored neither as a pass nor as a failure.
4. **labels**: each spec's SAT / UNSAT label: given, from its row, or solved within ``timeout``.
5. **verification**: every read scene against its spec in one `Solver.verify_many` call (one solver, reused;
   scenes of one spec share a grounding); the count-relaxed verdict is derived from the strict one.
6. **probability** and **repair**, when asked, per read scene.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.solver import Solver, Verdict, check_mode, default_solver
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.scoring import inputs
from logicval_hf.scoring.scores import Record, compositional_load, scene_sample

__all__ = ["DEFAULT_CHUNK", "PROBABILISTIC_SETTINGS", "JudgeOptions", "Judgement", "check_min_confidence", "judge",
           "judge_one", "parse_reference", "perceived_domain", "read_scenes", "unread_reason"]

#: images decoded and perceived at a time (4-megapixel images: about 0.5 GB of pixels per chunk)
DEFAULT_CHUNK = 16
#: settings of the probabilistic score (`logicval_hf.scoring.probabilistic.probability`)
PROBABILISTIC_SETTINGS = ("max_exact", "samples", "seed", "epsilon")


def _probability_settings(probabilistic: Any) -> dict[str, Any] | None:
    if probabilistic is None or probabilistic is False:
        return None
    if probabilistic is True:
        return {}
    if isinstance(probabilistic, Mapping):
        unknown = sorted(set(probabilistic) - set(PROBABILISTIC_SETTINGS))
        if unknown:
            raise ValueError(f"probabilistic: unknown setting(s) {unknown}; known: {list(PROBABILISTIC_SETTINGS)}")
        return dict(probabilistic)
    raise ValueError(f"probabilistic must be True, False or a dict of settings, got {type(probabilistic).__name__}")


def check_min_confidence(value: Any) -> float | None:
    """``value`` as a probability in [0, 1] (None stays None); a one-line `ValueError` otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"min_confidence must be a number in [0, 1] (the scene confidence below which an image is "
                         f"set apart as unread), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class JudgeOptions:
    """How the judge reads and scores; built once, apart from the call (and checked when built).

    Args:
        backend: perception backend for images (``"clevr"``, the shipped CLEVR scene parser; ``"neural"``;
            ``"given"``; any registered one). Scene-graph predictions never reach it.
        backend_settings: keyword settings for the backend (model ids, thresholds, ...); a ``domain`` here is
            used for every image instead of its spec's.
        count: count mode of the probability and the repair, ``"strict"`` or ``"relaxed"`` (both verdicts are
            always given).
        probabilistic: also compute the probability that each scene satisfies its spec under the perceived
            attribute probabilities: True, or a dict of settings (`PROBABILISTIC_SETTINGS`).
        repair: also compute each read scene's cheapest repair (`logicval_hf.repair`).
        repair_costs: the cost of each edit kind for the repair (default 1 each).
        min_confidence: scene graphs whose ``confidence`` is below it, or that carry none, are set apart as
            unread (None: every scene graph is scored).
        timeout: seconds for labelling each spec without a label, and for each repair (None: no budget).
        chunk: images decoded and perceived at a time.
        errors: ``"entry"``: a bad item gets its error entry and the rest are judged; ``"raise"``: the first
            failure is raised (the stage it fails at decides which, then the item's index).
    Raises:
        ValueError: an unknown count mode, probabilistic setting or ``errors``, a ``min_confidence`` outside
            [0, 1], a chunk that is not a positive integer.
    """

    backend: str = "clevr"
    backend_settings: Mapping[str, Any] = field(default_factory=dict)
    count: str = "strict"
    probabilistic: bool | Mapping[str, Any] = False
    repair: bool = False
    repair_costs: Mapping[str, int] | None = None
    min_confidence: float | None = None
    timeout: float | None = DEFAULT_TIMEOUT
    chunk: int = DEFAULT_CHUNK
    errors: Literal["entry", "raise"] = "entry"

    def __post_init__(self) -> None:
        check_mode(self.count)
        _probability_settings(self.probabilistic)
        object.__setattr__(self, "min_confidence", check_min_confidence(self.min_confidence))
        object.__setattr__(self, "backend_settings", dict(self.backend_settings or {}))
        if isinstance(self.chunk, bool) or not isinstance(self.chunk, int) or self.chunk < 1:
            raise ValueError(f"chunk must be a positive number of images, got {self.chunk!r}")
        if self.errors not in ("entry", "raise"):
            raise ValueError(f"errors must be 'entry' or 'raise', got {self.errors!r}")

    @property
    def probability_settings(self) -> dict[str, Any] | None:
        """The probabilistic score's settings, or None when it is not asked for."""
        return _probability_settings(self.probabilistic)


@dataclass(frozen=True)
class Judgement:
    """The judge's answer for one item.

    ``error`` (with ``stage``: ``reference``, ``prediction``, ``label``, ``verification``, ``probability``)
    says why an item could not be judged, naming it (``predictions[3]: ...``); ``unread`` says why a scene graph
    was set apart (its confidence below the minimum). Otherwise ``strict`` and ``relaxed`` hold the verdicts,
    and ``probability`` / ``repair`` (or ``repair_error``) what was asked for.
    """

    index: int
    spec: Spec | None = None
    id: str | None = None
    package: str | None = None
    label: str | None = None
    scene: Scene | None = None
    strict: Verdict | None = None
    relaxed: Verdict | None = None
    probability: Any = None  # a `ProbResult`
    repair: Any = None  # a `Repair`
    repair_error: str | None = None
    unread: str | None = None
    error: str | None = None
    stage: str | None = None
    exception: ValueError | None = field(default=None, compare=False, repr=False)

    @property
    def confidence(self) -> float | None:
        """The perception backend's probability that the scene graph is right (`Scene.confidence`), if any."""
        return None if self.scene is None else self.scene.confidence

    @property
    def scored(self) -> bool:
        """Whether the item has verdicts (neither an error nor unread)."""
        return self.strict is not None

    @property
    def ok(self) -> bool | None:
        """The strict verdict; None when the item was not scored."""
        return None if self.strict is None else self.strict.ok

    def record(self) -> Record:
        """The scored item as a `Record` (`logicval_hf.scoring.scores.aggregate` reads records).

        Raises:
            ValueError: the item was not scored (its error or its reason for being unread).
        """
        if self.spec is None or self.strict is None or self.relaxed is None or self.label is None:
            raise ValueError(f"item {self.index} was not scored: {self.error or self.unread}")
        return Record(self.spec, self.label, self.strict, self.relaxed, self.package, self.id, self.scene)

    def to_sample(self, probs: bool = False, with_unread: bool = False) -> dict[str, Any]:
        """One ``per_sample`` entry (`Record.to_sample`, plus the probability and repair fields when they were
        computed, and ``unread`` when ``with_unread``). An unread item has no verdict: ``ok``, ``relaxed_ok``
        and ``count_ok`` are None.

        Raises:
            ValueError: the item failed (its error says why).
        """
        if self.strict is not None:
            sample = self.record().to_sample(probs)
        elif self.spec is not None and self.scene is not None and self.unread is not None:
            sample = {"id": self.id, "package": self.package, "label": self.label, "ok": None, "relaxed_ok": None,
                      "count_ok": None, "violated": [], "n_objects": len(self.scene),
                      "load": compositional_load(self.spec), "confidence": self.confidence,
                      "scene": scene_sample(self.scene, probs)}
        else:
            raise ValueError(f"item {self.index} failed: {self.error}")
        if self.probability is not None:
            r = self.probability
            sample.update(probability=r.p, probability_exact=r.exact, probability_stderr=r.stderr)
        if self.repair is not None or self.repair_error is not None:
            from logicval_hf.repairs.costs import sample_fields

            sample.update(sample_fields(self.repair if self.repair is not None else self.repair_error))
        if with_unread:
            sample["unread"] = self.unread
        return sample


def perceived_domain(domain: Domain | None) -> Domain | None:
    """The ``domain=`` a perception backend is asked for, for a prediction whose spec is in ``domain``: None for
    CLEVR (every backend's default, so a CLEVR-only backend is never asked), the domain otherwise."""
    return None if domain is None or domain == load_catalog().domain else domain


# ---- the work of one call --------------------------------------------------------------------------------------
class _Failed(Exception):
    """An item's failure at a stage (internal: becomes its entry, or is raised with ``errors="raise"``)."""


@dataclass
class _Item:
    index: int
    prediction: Any
    name: str
    ref_name: str
    spec: Spec | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    scene: Scene | None = None
    label: str | None = None
    strict: Verdict | None = None
    probability: Any = None
    repair: Any = None
    repair_error: str | None = None
    unread: str | None = None
    failure: tuple[str, ValueError] | None = None

    def judgement(self) -> Judgement:
        error, stage, exc = (None, None, None) if self.failure is None else \
            (str(self.failure[1]), self.failure[0], self.failure[1])
        return Judgement(
            self.index, self.spec, self.meta.get("id"), self.meta.get("package"), self.label, self.scene,
            self.strict, None if self.strict is None else self.strict.with_count("relaxed"), self.probability,
            self.repair, self.repair_error, self.unread, error, stage, exc)


class _Run:
    """One `judge` call: the items, the options, the solver; each stage a method over the items still going."""

    def __init__(self, items: list[_Item], options: JudgeOptions, solver: Solver):
        self.items, self.options, self.solver = items, options, solver

    def going(self) -> list[_Item]:
        return [it for it in self.items if it.failure is None and it.unread is None]

    def fail(self, item: _Item, stage: str, error: ValueError) -> None:
        if self.options.errors == "raise":
            raise error
        item.failure = (stage, error)

    def each(self, stage: str, items: Sequence[_Item], step: Callable[..., Any], *args: Any) -> None:
        """``step(item, *args)`` for every item; a `ValueError` becomes that item's failure at ``stage``."""
        for it in items:
            try:
                step(it, *args)
            except ValueError as e:
                self.fail(it, stage, e)

    # 1. references
    def read_reference(self, item: _Item, references: Sequence[Any]) -> None:
        try:
            item.spec, item.meta = parse_reference(references[item.index], self.solver.catalog)
        except ValueError as e:
            raise _renamed(e, f"{item.ref_name}: {e}") from None

    # 2. predictions
    def read_scene_graph(self, item: _Item) -> None:
        assert item.spec is not None
        item.scene = inputs.normalise_prediction(item.prediction, item.name, None, item.spec.domain)

    def perceive(self, items: Sequence[_Item]) -> None:
        groups: dict[Any, list[_Item]] = {}
        for it in items:
            assert it.spec is not None
            domain = None if "domain" in self.options.backend_settings else perceived_domain(it.spec.domain)
            groups.setdefault(domain, []).append(it)
        for domain, members in groups.items():
            scenes = read_scenes([it.prediction for it in members], domain, self.options,
                                 [it.name for it in members])
            for it, got in zip(members, scenes, strict=True):
                if isinstance(got, Scene):
                    it.scene = got
                else:
                    self.fail(it, "prediction", got)

    # 3. minimum confidence
    def gate(self, item: _Item) -> None:
        if item.scene is not None:
            item.unread = unread_reason(item.scene.confidence, self.options.min_confidence, self.options.backend)

    # 4. labels
    def label(self, item: _Item, given: Sequence[str | None], solved: dict[str, str]) -> None:
        assert item.spec is not None
        label = given[item.index] or item.meta.get("label")
        if label is None:
            key = item.spec.key()
            if key not in solved:
                try:
                    solved[key] = self.solver.solve(item.spec, timeout=self.options.timeout).label
                except ValueError as e:  # SolverTimeout among them: say which reference
                    raise _renamed(e, f"{item.ref_name}: {e}") from None
            label = solved[key]
        check_mode("strict", label)
        item.label = label

    # 5. verification
    def verify(self, items: Sequence[_Item]) -> None:
        """Every pair in one `Solver.verify_many` call; when the solver refuses one, each pair on its own, so
        that the others keep their verdicts."""
        try:
            verdicts = self.solver.verify_many([(it.spec, it.scene) for it in items], count="strict",
                                               labels=[it.label for it in items])
        except ValueError:
            self.each("verification", items, self.verify_one)
            return
        for it, v in zip(items, verdicts, strict=True):
            it.strict = v

    def verify_one(self, item: _Item) -> None:
        try:
            (item.strict,) = self.solver.verify_many([(item.spec, item.scene)], count="strict", labels=[item.label])
        except ValueError as e:
            raise _renamed(e, f"{item.name}: {e}") from None

    # 6. probability and repair
    def probability(self, item: _Item) -> None:
        from logicval_hf.scoring.probabilistic import probability

        try:
            item.probability = probability(item.spec, item.scene, count=self.options.count, label=item.label,
                                           solver=self.solver, **(self.options.probability_settings or {}))
        except ValueError as e:
            raise _renamed(e, f"{item.name}: probability: {e}") from None
        except Exception as e:  # noqa: BLE001 - too many worlds and the like: this item's score only
            raise ValueError(f"{item.name}: probability: {type(e).__name__}: {e}") from None

    def repair(self, item: _Item) -> None:
        from logicval_hf.repairs.costs import repair_many
        from logicval_hf.repairs.model import Repair

        assert item.spec is not None
        (r,) = repair_many([(item.spec, item.scene)], count=self.options.count, costs=self.options.repair_costs,
                           timeout=self.options.timeout, solver=self.solver)
        if isinstance(r, Repair):
            item.repair = r
        else:
            item.repair_error = r


def unread_reason(confidence: float | None, min_confidence: float | None, backend: str = "clevr") -> str | None:
    """Why a reading of this scene ``confidence`` is set apart under ``min_confidence`` (None: it is read): below
    the minimum, or no confidence at all (the ``backend``, or the scene graph given, says none)."""
    if min_confidence is None:
        return None
    if confidence is None:
        return f"no scene confidence (the {backend!r} backend or the scene graph gives none)"
    if confidence < min_confidence:
        return f"scene confidence {confidence:.3f} is below the minimum {min_confidence:g}"
    return None


def _renamed(e: ValueError, message: str) -> ValueError:
    """``e`` with another message, its type (and a `SolverTimeout`'s budget) kept."""
    from logicval_hf.errors import SolverTimeout

    if isinstance(e, SolverTimeout):
        return SolverTimeout(message, e.budget)
    return type(e)(message)


def parse_reference(ref: Any, catalog: Any = None) -> tuple[Spec, dict[str, Any]]:
    """A reference as (spec, metadata with id / package / label when it carries them): a `BenchmarkRow`, or
    what `logicval_hf.scoring.inputs.parse_reference` reads."""
    if isinstance(ref, BenchmarkRow):
        return ref.spec, {"id": ref.id, "package": ref.package, "label": ref.label}
    return inputs.parse_reference(ref, catalog)


#: what a perception error's own name of the image looks like (``image: ``, ``images[0]: ``): the judge names it
_IMAGE_NAME = re.compile(r"^images?(\[\d+\])?: ")


def _read_chunk(part: Sequence[tuple[str, Any]], backend: str, raw: bool, settings: Mapping[str, Any],
                domain: Domain | None) -> list[Scene | ValueError]:
    """One chunk's scenes (or errors) by index: checked, decoded and perceived here, so that its pixels are freed
    when this returns. The backend reads the chunk in one call, an image it cannot read getting its own error (the
    ``vlm`` backend keeps its requests in flight meanwhile); a call refused as a whole is read again image by image,
    so that only the images the backend refuses fail."""
    from logicval_hf.perception import BackendUnavailable, extract_scene, extract_scenes

    where = f"its spec is in domain {domain.name!r}: " if domain is not None else ""

    def named(k: int, e: ValueError) -> ValueError:
        return _renamed(e, f"{part[k][0]}: {where}{_IMAGE_NAME.sub('', str(e))}")

    got: dict[int, Scene | ValueError] = {}
    checked: list[tuple[int, Any]] = []
    for k, (name, p) in enumerate(part):
        try:
            checked.append((k, p if raw else inputs.normalise_prediction(p, name, backend)))
        except ValueError as e:
            got[k] = e
    try:  # an image the backend cannot read comes back as its error, so no image is ever sent twice
        scenes = extract_scenes([x for _, x in checked], backend, errors="return", **settings) if checked else []
        got.update((k, s if isinstance(s, Scene) else named(k, s)) for (k, _), s in zip(checked, scenes, strict=True))
    except BackendUnavailable as e:  # no image can be read now: each gets that error, none is sent again
        got.update((k, named(k, e)) for k, _ in checked)
    except ValueError:  # read one by one: only the images the backend refuses fail
        for k, x in checked:
            try:
                got[k] = extract_scene(x, backend, **settings)
            except ValueError as e:
                got[k] = named(k, e)
    return [got[k] for k in range(len(part))]


def read_scenes(predictions: Sequence[Any], domain: Domain | None = None, options: JudgeOptions | None = None,
                names: Sequence[str] | None = None) -> list[Scene | ValueError]:
    """Scene graphs of images (or raw items, for a backend that takes them) perceived in ``domain`` (None: the
    backend's default, CLEVR): `JudgeOptions.chunk` at a time, each checked cheaply first (header, pixel cap)
    and decoded only in its chunk.

    Args:
        predictions: images (or raw items).
        domain: the domain to perceive (None: the backend's default).
        options: the backend, its settings and the chunk size.
        names: how errors name the predictions (default ``predictions[i]``, ``i`` their positions).
    Returns:
        One entry per prediction: its `Scene`, or the `ValueError` that names it.
    Raises:
        MissingExtraError, UnknownNameError: the backend cannot run here at all (not one image's fault).
    """
    from logicval_hf.common.extras import require_backend

    options = options or JudgeOptions()
    names = [f"predictions[{i}]" for i in range(len(predictions))] if names is None else list(names)
    settings = {**options.backend_settings, **({"domain": domain} if domain is not None else {})}
    require_backend(options.backend)  # e.g. "neural" without its extra: one line naming `logicval-hf[neural]`
    raw = inputs.takes_raw_input(options.backend)
    out: list[Scene | ValueError] = []
    for start in range(0, len(predictions), options.chunk):
        part = list(zip(names[start:start + options.chunk], predictions[start:start + options.chunk], strict=True))
        out.extend(_read_chunk(part, options.backend, raw, settings, domain))
    return out


def judge(references: Sequence[Any], predictions: Sequence[Any], options: JudgeOptions | None = None, *,
          solver: Solver | None = None, labels: Sequence[str | None] | None = None,
          names: Sequence[str] | None = None) -> list[Judgement]:
    """Judge each prediction against its reference's spec (module docstring: the stages).

    Args:
        references: specs (`Spec`, dict, JSON) or benchmark rows (`BenchmarkRow`, or dicts with ``spec_json``).
        predictions: one per reference: a scene graph or an image (both kinds may be mixed here).
        options: `JudgeOptions` (default: the ``clevr`` backend, strict count, nothing extra).
        solver: the `Solver` to use for every item (default: the shared one).
        labels: each spec's label where the caller knows it (None entries: from the row, else solved).
        names: how error messages name each item (default ``predictions[i]`` for its prediction and
            ``references[i]`` for its reference; a command: the file or line, for both).
    Returns:
        One `Judgement` per item, in order.
    Raises:
        ValueError: lists of different lengths; with ``errors="raise"``, the first failure.
        MissingExtraError, UnknownNameError: the backend cannot run here.
    """
    options = options or JudgeOptions()
    references, predictions = list(references), list(predictions)
    given = None if names is None else list(names)
    if len({len(references), len(predictions), len(references if given is None else given),
            len(references if labels is None else labels)}) > 1:
        extra = "" if labels is None else f" and {len(labels)} labels"
        raise ValueError(f"got {len(predictions)} predictions for {len(references)} references{extra}")
    items = [_Item(i, p, f"predictions[{i}]" if given is None else given[i],
                   f"references[{i}]" if given is None else given[i]) for i, p in enumerate(predictions)]
    run = _Run(items, options, solver or default_solver())
    run.each("reference", run.items, run.read_reference, references)
    run.each("prediction", [it for it in run.going() if inputs.is_scene_graph(it.prediction)], run.read_scene_graph)
    images = [it for it in run.going() if it.scene is None]
    if images:
        run.perceive(images)
    run.each("prediction", run.going(), run.gate)
    run.each("label", run.going(), run.label, labels or [None] * len(run.items), {})
    if run.going():
        run.verify(run.going())
    if options.probability_settings is not None:
        run.each("probability", run.going(), run.probability)
    if options.repair:
        for it in run.going():
            run.repair(it)
    return [it.judgement() for it in run.items]


def judge_one(reference: Any, prediction: Any, options: JudgeOptions | None = None, *,
              solver: Solver | None = None, label: str | None = None, name: str = "predictions[0]") -> Judgement:
    """`judge` of one item.

    Args:
        reference: a spec or a benchmark row.
        prediction: a scene graph or an image.
        options: `JudgeOptions`.
        solver: the `Solver` to use.
        label: the spec's label when known.
        name: how error messages name the prediction.
    Returns:
        Its `Judgement`.
    """
    return judge([reference], [prediction], options, solver=solver, labels=[label], names=[name])[0]
