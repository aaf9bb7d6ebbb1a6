"""The scene parser's settings: what a model file says about itself, read once, and what a caller may set.

A model file carries its own description as JSON under the ONNX metadata key `META_KEY` (class order, stride,
calibrated temperatures, default threshold, how to scale the input, the scene confidence's calibration, the
second look and how the two networks' attribute probabilities combine), so a newer file needs no code change.
`DetectorSettings` and `ClassifierSettings` are those descriptions read into frozen objects when a file is
opened; nothing reads the raw JSON after that. `ReadSettings` holds what a caller may change per parse
(``threshold``, ``max_objects``, ``batch_size``, ``second_look``, ``white_balance``); `split_settings` sorts a
caller's keyword settings into those and the ones that pick the files, and refuses anything else in one line
that names it and lists the supported ones.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CONFIDENCE_FEATURES", "META_KEY", "READ_SETTINGS", "SUPPORTED_SETTINGS", "ClassifierSettings",
           "ConfidenceSettings", "DetectorSettings", "ReadSettings", "ScaleSettings", "SecondLookSettings",
           "split_settings"]

#: ONNX metadata key holding a model's JSON description.
META_KEY = "logicval_scene_parser"

#: settings that pick the files and how they run (`logicval_hf.perception.scene_parser.load_model`)
FILE_SETTINGS = ("model_path", "attribute_model", "precision", "threads")
#: settings of one parse (`ReadSettings`)
READ_SETTINGS = ("threshold", "max_objects", "batch_size", "second_look", "white_balance")
#: every setting the clevr scene parser takes
SUPPORTED_SETTINGS = READ_SETTINGS + FILE_SETTINGS


#: the features of a reading the scene confidence's terms may weigh, each in [0, 1] or a small count
#: (`logicval_hf.perception.parser_decoding.reading_features` computes them)
CONFIDENCE_FEATURES = ("candidates", "max_candidate", "touching_frame", "overlap", "border_cast", "saturation",
                       "objects")


def _pairs(rows: Any) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in rows)


@dataclass(frozen=True)
class ScaleSettings:
    """How a scale-adaptive detector picks the scale it reads an image at: a first look with the longer side at
    ``probe_side`` measures the objects; the image is then scaled so that their median size (the longer side of
    each box) is ``object_size`` pixels, its longer side kept within ``long_side_range``; without any object in
    the first look the longer side becomes ``long_side``. Why: images users score frame objects at any size (a
    T2I model's single cube may fill a 1024 px square), and a small network reads objects best at the sizes it
    was trained on."""

    probe_side: int = 224
    object_size: float = 58.0
    long_side: int = 480
    long_side_range: tuple[int, int] = (192, 960)

    @classmethod
    def from_metadata(cls, raw: Mapping[str, Any]) -> ScaleSettings:
        d = cls()
        lo, hi = raw.get("long_side_range", d.long_side_range)
        return cls(int(raw.get("probe_side", d.probe_side)), float(raw.get("object_size", d.object_size)),
                   int(raw.get("long_side", d.long_side)), (int(lo), int(hi)))

    def to_metadata(self) -> dict[str, Any]:
        return {"mode": "adaptive", "probe_side": self.probe_side, "object_size": self.object_size,
                "long_side": self.long_side, "long_side_range": list(self.long_side_range)}


@dataclass(frozen=True)
class ConfidenceSettings:
    """The scene confidence's calibration (`logicval_hf.perception.parser_decoding.scene_confidence`): a map from
    a peak's heat to the probability that it is an object, the centre error in input pixels, and the power that
    corrects the product of the parts. The defaults (until a file carries fitted values): the heat itself, one
    pixel, no correction.

    ``terms`` (feature name -> weight), ``scale`` and ``bias``: a logistic correction fitted on held-out renders
    for what the product's parts cannot see, the reading's and the image's signs of a look the networks were not
    trained on (`parser_decoding.READING_FEATURES`): the confidence is then sigmoid(``scale`` * logit(product **
    ``power``) + ``bias`` + sum of weight * feature). Without terms it is the product at its power."""

    peak_calibration: tuple[tuple[float, float], ...] = ((0.0, 0.0), (1.0, 1.0))
    centre_sigma: float = 1.0
    power: float = 1.0
    terms: tuple[tuple[str, float], ...] = ()
    scale: float = 1.0
    bias: float = 0.0

    @classmethod
    def from_metadata(cls, raw: Mapping[str, Any]) -> ConfidenceSettings:
        d = cls()
        terms = tuple((str(k), float(v)) for k, v in (raw.get("terms") or {}).items())
        unknown = [k for k, _ in terms if k not in CONFIDENCE_FEATURES]
        if unknown:
            raise ValueError(f"unknown confidence term {unknown[0]!r} (known: {', '.join(CONFIDENCE_FEATURES)})")
        return cls(_pairs(raw.get("peak_calibration", d.peak_calibration)),
                   float(raw.get("centre_sigma", d.centre_sigma)), float(raw.get("power", d.power)), terms,
                   float(raw.get("scale", d.scale)), float(raw.get("bias", d.bias)))


@dataclass(frozen=True)
class SecondLookSettings:
    """The second look at uncertain peaks (`logicval_hf.perception.second_look`). ``band``: first-read heats read
    again; ``zoom``: the second read's scale over the first's; ``context``: the window's side over the box's
    longer side; ``radius``: how far (x the box's longer side) the second read's peak may lie from the first's
    centre; ``weight``: of the second heat in the average; ``floor``: the lowest second-read heat looked at;
    ``threshold``: keep an object whose average reaches it (fitted on held-out renders by the recipe)."""

    band: tuple[float, float] = (0.25, 0.65)
    zoom: float = 1.6
    context: float = 3.0
    radius: float = 0.35
    weight: float = 0.5
    floor: float = 0.05
    threshold: float = 0.45

    @classmethod
    def from_metadata(cls, raw: Mapping[str, Any]) -> SecondLookSettings:
        d = cls()
        lo, hi = raw.get("band", d.band)
        return cls((float(lo), float(hi)), *(float(raw.get(k, getattr(d, k)))
                                             for k in ("zoom", "context", "radius", "weight", "floor", "threshold")))

    def to_metadata(self) -> dict[str, Any]:
        return {"band": list(self.band), "zoom": self.zoom, "context": self.context, "radius": self.radius,
                "weight": self.weight, "floor": self.floor, "threshold": self.threshold}


def _classes(meta: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {a: tuple(meta["classes"][a]) for a in meta["attributes"]}


def _slices(classes: Mapping[str, tuple[str, ...]]) -> dict[str, slice]:
    out, start = {}, 0
    for a, names in classes.items():
        out[a] = slice(start, start + len(names))
        start += len(names)
    return out


def _read(path: Path, what: str, read: Any, meta: Mapping[str, Any]) -> Any:
    try:
        return read(meta)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: the {what}'s {META_KEY!r} metadata is incomplete or malformed "
                         f"({type(e).__name__}: {e})") from None


@dataclass(frozen=True)
class DetectorSettings:
    """What a detector file says about itself (see the module docstring); the logits of the attributes are
    stacked in ``classes`` order, one per class."""

    classes: Mapping[str, tuple[str, ...]]
    stride: int
    multiple: int
    threshold: float
    temperatures: Mapping[str, float]
    #: the offset head's median error on held-out renders, in cells (subtracted from every centre)
    offset_bias: tuple[float, float]
    scale: ScaleSettings
    confidence: ConfidenceSettings
    second_look: SecondLookSettings | None
    #: per attribute, the powers (detector, classifier) of the two networks' product of experts
    #: (`logicval_hf.perception.parser_decoding.combine_experts`); (1, 1) where absent
    expert_weights: Mapping[str, tuple[float, float]]

    @classmethod
    def from_metadata(cls, meta: Mapping[str, Any], path: Path) -> DetectorSettings:
        def read(m: Mapping[str, Any]) -> DetectorSettings:
            look = m.get("second_look")
            bx, by = m.get("offset_bias", (0.0, 0.0))
            return cls(_classes(m), int(m["stride"]), int(m.get("multiple", 32)), float(m.get("threshold", 0.35)),
                       {a: float(t) for a, t in (m.get("temperatures") or {}).items()}, (float(bx), float(by)),
                       ScaleSettings.from_metadata(m.get("scale") or {}),
                       ConfidenceSettings.from_metadata(m.get("confidence") or {}),
                       SecondLookSettings.from_metadata(look) if isinstance(look, dict) else None,
                       {a: (float(w[0]), float(w[1])) for a, w in (m.get("expert_weights") or {}).items()})
        return _read(path, "detector", read, meta)

    @property
    def slices(self) -> dict[str, slice]:
        """Where each attribute's logits lie in the stacked logits."""
        return _slices(self.classes)

    def decision_threshold(self, second_look: bool | None = None) -> float:
        """The threshold objects are kept at by default: the second look's (on averaged heats) where it is on,
        else the first read's."""
        look = self.look(second_look)
        return look.threshold if look is not None else self.threshold

    def look(self, second_look: bool | None = None) -> SecondLookSettings | None:
        """The second look a parse uses: None as the file says, True on (the file's settings, else the
        defaults), False off (None)."""
        if second_look is None:
            return self.second_look
        return (self.second_look or SecondLookSettings()) if second_look else None


@dataclass(frozen=True)
class ClassifierSettings:
    """What an attribute-classifier file says about itself: class order and calibrated temperatures."""

    classes: Mapping[str, tuple[str, ...]]
    temperatures: Mapping[str, float]

    @classmethod
    def from_metadata(cls, meta: Mapping[str, Any], path: Path) -> ClassifierSettings:
        def read(m: Mapping[str, Any]) -> ClassifierSettings:
            return cls(_classes(m), {a: float(t) for a, t in m["temperatures"].items()})
        return _read(path, "attribute classifier", read, meta)

    @property
    def slices(self) -> dict[str, slice]:
        return _slices(self.classes)


@dataclass(frozen=True)
class ReadSettings:
    """What a caller may change per parse. ``threshold``: the heat an object must reach (None: the file's
    decision threshold); ``second_look``: None as the file says, True on, False off; ``white_balance``: balance
    the classifier's crops against the image's colour cast (`logicval_hf.perception.white_balance`)."""

    threshold: float | None = None
    max_objects: int = 32
    batch_size: int = 8
    second_look: bool | None = None
    white_balance: bool = True

    @classmethod
    def checked(cls, settings: Mapping[str, Any]) -> ReadSettings:
        """The settings of one parse from a caller's values, each refused by name when it would otherwise be
        coerced into something else (``second_look="false"`` is truthy; a threshold of 2 finds nothing)."""
        for name in ("second_look", "white_balance"):
            v = settings.get(name)
            if v is not None and not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"clevr scene parser: {name} must be true or false, not {v!r}")
        thr = settings.get("threshold")
        if thr is not None and (isinstance(thr, bool) or not isinstance(thr, (int, float, np.floating))
                                or not 0 < float(thr) <= 1):
            raise ValueError(f"clevr scene parser: threshold must be a number in (0, 1], not {thr!r}")
        for name in ("max_objects", "batch_size"):
            v = settings.get(name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise ValueError(f"clevr scene parser: {name} must be a whole number >= 1, not {v!r}")
        d = cls()
        look, balance = settings.get("second_look"), settings.get("white_balance")
        return cls(None if thr is None else float(thr), int(settings.get("max_objects") or d.max_objects),
                   int(settings.get("batch_size") or d.batch_size), None if look is None else bool(look),
                   True if balance is None else bool(balance))


def split_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], ReadSettings]:
    """(the settings that pick the files, `ReadSettings`) of a caller's keyword settings.

    Raises:
        ValueError: a setting the clevr scene parser does not take (one line naming it, with the supported ones
            and the closest name), or a value of the wrong kind.
    """
    unknown = sorted(set(settings) - set(SUPPORTED_SETTINGS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], SUPPORTED_SETTINGS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"clevr scene parser: unsupported setting{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}{hint} (supported: {', '.join(SUPPORTED_SETTINGS)})")
    files = {k: settings[k] for k in FILE_SETTINGS if k in settings}
    return files, ReadSettings.checked({k: settings[k] for k in READ_SETTINGS if k in settings})
