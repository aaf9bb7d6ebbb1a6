"""Scene graphs: objects with attributes and bounding boxes; regions and relations derived from box centres.

JSON form (the same in and out)::

    {"image_size": [W, H],
     "objects": [{"color": "red", "shape": "cube", "material": "metal", "bbox": [x0, y0, x1, y1]}, ...]}

    {"image_size": [W, H], "domain": "coco",
     "objects": [{"class": "dog", "color": "brown", "bbox": [x0, y0, x1, y1], "score": 0.93}, ...]}

``domain`` names the domain (default ``clevr``); an object carries that domain's perceived attributes.

Optional per object: ``"score"`` (detection confidence) and ``"probs"`` (``{attribute: {value: p}}``, from
perception). Optional per scene: ``"confidence"``, the perception backend's probability that the whole scene
graph is right (every object found, none invented, every perceived attribute and region right); ``"provenance"``,
how the backend made it (a JSON object: for the ``vlm`` backend the model, the prompt sent and the answer), carried
along unread. Regions and
relations follow docs/regions.md §6: the centre decides the quadrant (a centre on a midline goes right / front),
``left(a, b)`` iff ``cx(a) < cx(b)``, ``behind(a, b)`` iff ``cy(a) < cy(b)``; equal coordinates give no relation
on that axis. Other domains decide their relations from boxes as their domain file says
(`logicval_hf.contract.domain`), e.g. COCO with GenEval's size-proportional margin.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import DEFAULT_DOMAIN, Domain, load_domain
from logicval_hf.errors import SceneError, SpecError

_OPTIONAL_KEYS = ("score", "probs")

#: The most objects one scene graph may hold, at every front door (`Scene.from_dict`, hence ``logicval verify``,
#: the metric and the reward server; and every `Scene` built in Python): a verdict's time grows with the pairs (and
#: triples) of objects a spec's literals admit, so this bound keeps one verification within about a second in CLEVR
#: (docs/solver.md). CLEVR scenes hold 3 to 10 objects; the neural backend keeps at most 20 detections by default.
MAX_SCENE_OBJECTS = 500


def check_object_count(count: int, what: str = "scene.objects") -> None:
    """Refuse (`SceneError`, one line) a scene graph of more than `MAX_SCENE_OBJECTS` objects."""
    if count > MAX_SCENE_OBJECTS:
        raise SceneError(f"{what}: {count:,} objects; a scene graph holds at most {MAX_SCENE_OBJECTS:,}")


def _number(path: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SceneError(f"{path}: must be a finite number, got {v!r}")
    return v


def _names(named: str, domain: Domain) -> bool:
    """Whether a scene's ``domain`` key names ``domain``: by its name, or by the path of its file."""
    return named == domain.name or (bool(domain.source) and str(Path(named).resolve()) == domain.source)


@dataclass(frozen=True)
class SceneObject:
    """One object: its attribute values (e.g. colour, shape, material) and its box ``[x0, y0, x1, y1]``."""

    attributes: Mapping[str, str]
    bbox: tuple[float, float, float, float]
    score: float | None = None
    probs: Mapping[str, Mapping[str, float]] | None = None

    def __getitem__(self, attribute: str) -> str:
        return self.attributes[attribute]

    @property
    def center(self) -> tuple[float, float]:
        x0, y0, x1, y1 = self.bbox
        return (x0 + x1) / 2, (y0 + y1) / 2

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.attributes)
        d["bbox"] = list(self.bbox)
        if self.score is not None:
            d["score"] = self.score
        if self.probs is not None:
            d["probs"] = {a: dict(p) for a, p in self.probs.items()}
        return d


@dataclass(frozen=True)
class Scene:
    """A scene graph over an image of ``image_size = (W, H)`` pixels."""

    image_size: tuple[float, float]
    objects: tuple[SceneObject, ...] = ()
    domain: Domain = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    #: the perception backend's probability that this scene graph is exactly right (None: not estimated)
    confidence: float | None = field(default=None, compare=False)
    #: how the perception backend made it (JSON-able: the model, the request, the answer), carried along unread
    provenance: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_object_count(len(self.objects))
        if self.domain is None:
            object.__setattr__(self, "domain", load_catalog().domain)

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: Any, domain: Domain | None = None) -> Scene:
        """Parse and validate scene JSON (a dict or a JSON string).

        ``domain``: the domain the caller expects (a spec's); a scene naming another one is an error. Without
        it, the scene's own ``domain`` key decides (default CLEVR).
        """
        if isinstance(d, (str, bytes)):
            try:
                d = json.loads(d)
            except json.JSONDecodeError as e:
                raise SceneError(f"scene: not valid JSON ({e})") from None
            except RecursionError:
                raise SceneError("scene: nested too deeply to be a scene graph") from None
        if not isinstance(d, Mapping):
            raise SceneError(f"scene: must be a JSON object, got {type(d).__name__}")
        extra = [k for k in d if k not in ("image_size", "objects", "domain", "confidence", "provenance")]
        missing = [k for k in ("image_size", "objects") if k not in d]
        if missing or extra:
            raise SceneError(f"scene: expected keys ['image_size', 'objects'] and optionally 'domain', 'confidence', "
                             f"'provenance' (missing {missing}, unknown {extra})")
        provenance = d.get("provenance")
        if provenance is not None and not isinstance(provenance, Mapping):
            raise SceneError(f"scene.provenance: must be a JSON object, got {type(provenance).__name__}")
        confidence = d.get("confidence")
        if confidence is not None:
            confidence = _number("scene.confidence", confidence)
            if not 0 <= confidence <= 1:
                raise SceneError(f"scene.confidence: must be a probability in [0, 1], got {confidence!r}")
        named = d.get("domain")
        if named is not None and not isinstance(named, str):
            raise SceneError(f"scene.domain: must be a domain name, got {named!r}")
        if domain is None:
            try:
                domain = load_catalog().domain if named in (None, DEFAULT_DOMAIN) else load_domain(named)
            except SpecError as e:
                raise SceneError(f"scene.domain: {e}") from None
        elif named is not None and not _names(named, domain):
            raise SceneError(f"scene.domain: the scene is in domain {named!r}, but domain {domain.name!r} is expected "
                             "(the spec's)")
        size = d["image_size"]
        if not isinstance(size, (list, tuple)) or len(size) != 2:
            raise SceneError(f"scene.image_size: must be [W, H], got {size!r}")
        w, h = (_number(f"scene.image_size[{i}]", v) for i, v in enumerate(size))
        if w <= 0 or h <= 0:
            raise SceneError(f"scene.image_size: width and height must be positive, got {list(size)}")
        objs = d["objects"]
        if not isinstance(objs, (list, tuple)):
            raise SceneError(f"scene.objects: must be a list, got {type(objs).__name__}")
        check_object_count(len(objs))  # before any object is read
        parsed = tuple(cls._parse_object(f"scene.objects[{i}]", o, (w, h), domain) for i, o in enumerate(objs))
        return cls((w, h), parsed, domain, confidence, provenance)

    @staticmethod
    def _parse_object(path: str, o: Any, size: tuple[float, float], domain: Domain) -> SceneObject:
        if not isinstance(o, Mapping):
            raise SceneError(f"{path}: must be a JSON object, got {type(o).__name__}")
        names = domain.perceived_attributes
        allowed = (*names, "bbox", *_OPTIONAL_KEYS)
        extra = [k for k in o if k not in allowed]
        if extra:
            raise SceneError(f"{path}: unknown keys {extra}; an object has {list(allowed)}")
        attrs = {}
        for a in names:
            if a not in o:
                raise SceneError(f"{path}: missing {a!r}")
            v = o[a]
            if domain.is_open(a):  # free text, stored folded (the domain file's fold)
                if not isinstance(v, str):
                    raise SceneError(f"{path}.{a}: {v!r} is not a {a}: {a} values are text")
                v = domain.canonical_value(a, v)
            elif v not in domain.attributes[a]:
                raise SceneError(f"{path}.{a}: {v!r} is not a {a}; {domain.expected(a, v)}")
            attrs[a] = v
        if "bbox" not in o:
            raise SceneError(f"{path}: missing 'bbox' ([x0, y0, x1, y1] in pixels)")
        box = o["bbox"]
        if not isinstance(box, (list, tuple)) or len(box) != 4:
            raise SceneError(f"{path}.bbox: must be [x0, y0, x1, y1], got {box!r}")
        x0, y0, x1, y1 = (_number(f"{path}.bbox[{i}]", v) for i, v in enumerate(box))
        if not (x1 > x0 and y1 > y0):
            raise SceneError(f"{path}.bbox: needs x1 > x0 and y1 > y0, got {list(box)}")
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if not (0 <= cx <= size[0] and 0 <= cy <= size[1]):
            raise SceneError(f"{path}.bbox: centre ({cx}, {cy}) lies outside the {size[0]}x{size[1]} image")
        score = o.get("score")
        if score is not None:
            score = _number(f"{path}.score", score)
        probs = o.get("probs")
        if probs is not None:
            probs = Scene._parse_probs(f"{path}.probs", probs, domain)
        return SceneObject(attrs, (x0, y0, x1, y1), score, probs)

    @staticmethod
    def _parse_probs(path: str, probs: Any, domain: Domain) -> dict[str, dict[str, float]]:
        if not isinstance(probs, Mapping):
            raise SceneError(f"{path}: must map attributes to {{value: probability}}")
        out = {}
        for a, dist in probs.items():
            if a not in domain.perceived_attributes:
                raise SceneError(f"{path}: unknown attribute {a!r}")
            if not isinstance(dist, Mapping):
                raise SceneError(f"{path}.{a}: must map values to probabilities")
            clean = {}
            for v, p in dist.items():
                if v not in domain.attributes[a]:
                    raise SceneError(f"{path}.{a}: {v!r} is not a {a}")
                prob = _number(f"{path}.{a}.{v}", p)
                if not 0 <= prob <= 1:
                    raise SceneError(f"{path}.{a}.{v}: probability {prob} is outside [0, 1]")
                clean[v] = float(prob)
            out[a] = clean
        return out

    @classmethod
    def load(cls, path: str | Path) -> Scene:
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))

    @classmethod
    def empty(cls, image_size: tuple[float, float] = (480, 320), domain: Domain | None = None) -> Scene:
        return cls((image_size[0], image_size[1]), (), load_catalog().domain if domain is None else domain)

    def above(self, threshold: float | None) -> Scene:
        """The objects whose score is above ``threshold`` (objects without a score stay); itself if None."""
        if threshold is None or all(o.score is None or o.score > threshold for o in self.objects):
            return self
        kept = tuple(o for o in self.objects if o.score is None or o.score > threshold)
        return Scene(self.image_size, kept, self.domain, provenance=self.provenance)

    # ---- output -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        # image sizes are pixel counts: integral values are written as integers ([480, 320], not [480.0, 320.0])
        size = [int(v) if float(v).is_integer() else v for v in self.image_size]
        out: dict[str, Any] = {"image_size": size}
        if self.domain.name != DEFAULT_DOMAIN:  # a domain of one's own by its file, so that the JSON reads back
            out["domain"] = self.domain.source or self.domain.name
        out["objects"] = [o.to_dict() for o in self.objects]
        if self.confidence is not None:
            out["confidence"] = self.confidence
        if self.provenance is not None:
            out["provenance"] = dict(self.provenance)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    # ---- derived facts (docs/regions.md §6) --------------------------------------------------------
    def __len__(self) -> int:
        return len(self.objects)

    def __iter__(self) -> Iterator[SceneObject]:
        return iter(self.objects)

    def derived(self, attribute: str) -> list[Any]:
        """Values of a derived attribute (CLEVR's region, a confidence rank) for every object, in order."""
        cache = self.__dict__.setdefault("_derived", {})
        if attribute not in cache:
            objs = self.objects
            cache[attribute] = self.domain.derive(attribute, [o.bbox for o in objs], self.image_size,
                                                  [o.attributes for o in objs], [o.score for o in objs])
        return cache[attribute]

    def region(self, i: int) -> str:
        return self.derived("region")[i]

    def regions(self) -> list[str]:
        return self.derived("region")

    def holds(self, rel: str, a: int, b: int) -> bool:
        """``rel(a, b)`` as the domain decides it from the two boxes (CLEVR: strict centre order; irreflexive)."""
        return a != b and self.domain.holds(rel, self.objects[a].bbox, self.objects[b].bbox)

    def relations(self) -> list[tuple[int, str, int]]:
        """All true ``(a, rel, b)`` triples."""
        n = len(self.objects)
        return [(a, r, b) for r in self.domain.relations for a in range(n) for b in range(n) if self.holds(r, a, b)]

    def attribute(self, i: int, attribute: str) -> Any:
        """Attribute value of object i, derived ones (region, rank) included."""
        if attribute in self.domain.derived:
            return self.derived(attribute)[i]
        return self.objects[i].attributes[attribute]
