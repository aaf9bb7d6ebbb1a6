"""What an annotation is: the closed vocabulary of box labels and the checks every saved value passes (boxes,
scene flags, notes), with the key of the image the widgets show. `logicval_hf.space.annotate` keeps the values in
the image folders' SQLite store and exports them; it re-exports these names.

**Boxes.** One box per object; its label is ``"<colour> <material> <shape>"`` from the closed vocabulary of
the catalog's domain (e.g. ``red metal cube``), its frame colour the object's CLEVR colour. Boxes are checked
when saved (`check_boxes`): finite pixel coordinates, at least 1 pixel wide and high, inside the image (up to
`CLIP_TOLERANCE` pixels outside is clipped and reported; further out is refused, not clipped), label words from
the domain's vocabulary (at most one per attribute, `MAX_LABEL_CHARS` characters). A box whose label is still
incomplete (no colour yet, say) is saved in the *incomplete* state: white frame (`INCOMPLETE_RGB`, not a CLEVR
colour), named in the status line, skipped by the export until completed. The frame colour is always derived
from the label; a malformed one sent by a client is refused. A refusal names the box (counted from 1) and the
field, and nothing is written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import logicval_hf.perception as perception
from logicval_hf.contract.catalog import Domain, load_catalog
from logicval_hf.space.common import attribute_order, quote

FLAGS = ("rendering_error", "deformed", "empty_scene")
FLAG_LABELS = {
    "rendering_error": "Rendering errors (artefacts, text, broken image)",
    "deformed": "Deformed or unrecognisable objects",
    "empty_scene": "Empty scene (no object at all)",
}
FIELDS = ("boxes", *FLAGS, "notes")
#: the value of a field that was never edited (saving it is not an edit)
DEFAULTS: dict[str, Any] = {"boxes": [], **dict.fromkeys(FLAGS, False), "notes": ""}
MAX_NOTES = 10_000
MAX_BOXES = 100
#: longest box label (the longest vocabulary label has 22 characters)
MAX_LABEL_CHARS = 100
#: longest image key (the hidden JSON field naming the image shown)
MAX_KEY_CHARS = 1_000
#: box coordinates up to this many pixels outside the image are clipped (widget rounding); further out: refused
CLIP_TOLERANCE = 1.0
#: frame colour of a box whose label has no colour yet (white is not a CLEVR colour)
INCOMPLETE_RGB = (255, 255, 255)
COORDS = ("xmin", "ymin", "xmax", "ymax")

#: CLEVR's colours (properties.json), used for the box frames
CLEVR_RGB = {
    "gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215), "green": (29, 105, 20),
    "brown": (129, 74, 25), "purple": (129, 38, 192), "cyan": (41, 208, 208), "yellow": (255, 238, 51),
}
_RGB_RE = re.compile(r"rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)")  # fullmatch
_HEX_RE = re.compile(r"#[0-9a-fA-F]{6}")  # fullmatch


class AnnotationError(ValueError):
    """A request the annotation tool refuses (unknown folder or image, malformed value); says why."""


# ---- vocabulary ----------------------------------------------------------------------------------------------
def box_labels(domain: Domain | None = None) -> list[str]:
    """Every box label: ``"<colour> <material> <shape>"`` over the closed vocabulary (48 for CLEVR)."""
    domain = domain or load_catalog().domain
    order = attribute_order(domain)
    return [" ".join(combo) for combo in itertools.product(*(domain.attributes[a] for a in order))]


def rgb_string(rgb: Iterable[int]) -> str:
    r, g, b = (int(v) for v in rgb)
    return f"rgb({r}, {g}, {b})"


def label_color(label: str, domain: Domain | None = None) -> tuple[int, int, int]:
    """The frame colour of a label: its CLEVR colour, `INCOMPLETE_RGB` when it names no colour."""
    for word in str(label).split():
        if word in CLEVR_RGB:
            return CLEVR_RGB[word]
    return INCOMPLETE_RGB


def label_attributes(label: Any, domain: Domain | None = None) -> dict[str, str]:
    """The attribute values a label names (words in any order, case-insensitive, at most one per attribute;
    possibly incomplete). `AnnotationError` for text that is too long, a word outside the vocabulary, or two
    values of one attribute."""
    domain = domain or load_catalog().domain
    if label is None:
        return {}
    if not isinstance(label, str):
        raise AnnotationError(f"label: must be text, got {type(label).__name__}")
    if len(label) > MAX_LABEL_CHARS:
        raise AnnotationError(f"label: {len(label)} characters is too long (at most {MAX_LABEL_CHARS})")
    attrs: dict[str, str] = {}
    for w in label.lower().split():
        hit = [a for a in domain.perceived_attributes if w in domain.attributes[a]]
        if not hit:
            vocab = "; ".join(f"{a}: {', '.join(domain.attributes[a])}" for a in attribute_order(domain))
            raise AnnotationError(f"label: {quote(w)} is not in the vocabulary ({vocab})")
        a = hit[0]
        if a in attrs:
            raise AnnotationError(f"label: two {a} values ({attrs[a]!r} and {w!r})")
        attrs[a] = w
    return attrs


def parse_label(label: Any, domain: Domain | None = None) -> dict[str, str]:
    """The attributes of a complete box label (one value per perceived attribute)."""
    domain = domain or load_catalog().domain
    try:
        attrs = label_attributes(label, domain)
    except AnnotationError as e:
        raise AnnotationError(f"{e} (label {quote(label)})") from None
    missing = [a for a in domain.perceived_attributes if a not in attrs]
    if missing:
        raise AnnotationError(f"label {quote(label)} is incomplete: missing {', '.join(missing)}")
    return attrs


# ---- values --------------------------------------------------------------------------------------------------
def _num(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AnnotationError(f"{what}: must be a number, got {quote(v)}")
    try:
        f = float(v)
    except OverflowError:  # an integer beyond float range
        raise AnnotationError(f"{what}: must be a finite number, got {quote(v)}") from None
    if not math.isfinite(f):
        raise AnnotationError(f"{what}: must be a finite number, got {v!r}")
    return f


def _rgb_ok(color: Any) -> bool:
    if isinstance(color, (list, tuple)):
        return len(color) == 3 and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255
                                       for c in color)
    if isinstance(color, str):
        if _HEX_RE.fullmatch(color):
            return True
        m = _RGB_RE.fullmatch(color)
        return m is not None and all(int(g) <= 255 for g in m.groups())
    return False


@dataclasses.dataclass
class CheckedBoxes:
    """`check_boxes`' answer: the boxes as stored, which were clipped to the image, which are incomplete."""

    boxes: list[dict[str, Any]]
    clipped: list[int] = dataclasses.field(default_factory=list)  # box numbers, from 1
    incomplete: dict[int, list[str]] = dataclasses.field(default_factory=dict)  # box number -> missing attributes

    def notes(self) -> list[str]:
        out = []
        if self.clipped:
            which = ", ".join(map(str, self.clipped))
            out.append(f"box {which} reached up to {CLIP_TOLERANCE:g} px beyond the image and "
                       f"{'was' if len(self.clipped) == 1 else 'were'} clipped to it")
        for k, missing in self.incomplete.items():
            label = self.boxes[k - 1]["label"]
            what = f"label {label!r} has no {' and no '.join(missing)} yet" if label else "no label yet"
            frame = ", white frame" if "color" in missing else ""
            out.append(f"box {k} is incomplete ({what}{frame}): not exported until its label is complete")
        return out


def check_boxes(boxes: Any, image_size: tuple[float, float] | None = None,
                domain: Domain | None = None) -> CheckedBoxes:
    """Boxes as stored, checked (see the module docstring): ``xmin, ymin, xmax, ymax`` (integer pixels of the
    image, divided by the widget's ``scaleFactor`` when present), ``label`` (canonical order, possibly
    incomplete) and ``color`` (``"rgb(r, g, b)"`` of the label, the form gradio_image_annotation needs).
    With ``image_size`` the boxes must lie inside the image. `AnnotationError` names the box and the field."""
    domain = domain or load_catalog().domain
    order = attribute_order(domain)
    if boxes is None:
        return CheckedBoxes([])
    if not isinstance(boxes, (list, tuple)):
        raise AnnotationError(f"boxes: must be a list, got {type(boxes).__name__}")
    if len(boxes) > MAX_BOXES:
        raise AnnotationError(f"boxes: at most {MAX_BOXES} boxes per image, got {len(boxes)}")
    W, H = (float(image_size[0]), float(image_size[1])) if image_size is not None else (None, None)
    out = CheckedBoxes([])
    for k, b in enumerate(boxes, 1):
        if not isinstance(b, Mapping):
            raise AnnotationError(f"box {k}: must be an object with xmin, ymin, xmax, ymax")
        scale = 1.0
        if b.get("scaleFactor") is not None:
            scale = _num(b["scaleFactor"], f"box {k}, scaleFactor")
            if scale <= 0:
                raise AnnotationError(f"box {k}, scaleFactor: must be positive, got {b['scaleFactor']!r}")
        v: dict[str, float] = {}
        for key in COORDS:
            if key not in b:
                raise AnnotationError(f"box {k}, {key}: missing")
            v[key] = _num(b[key], f"box {k}, {key}") / scale
        clipped = False
        for key in COORDS:
            limit = W if key[0] == "x" else H
            if limit is None:
                if abs(v[key]) > perception.MAX_PIXELS:
                    raise AnnotationError(f"box {k}, {key}: {v[key]:g} is not a pixel coordinate")
                continue
            if v[key] < -CLIP_TOLERANCE or v[key] > limit + CLIP_TOLERANCE:
                axis = "x" if key[0] == "x" else "y"
                raise AnnotationError(
                    f"box {k}, {key}: {v[key]:g} lies outside the {W:g}x{H:g} image ({axis} from 0 to {limit:g}); "
                    "refused, not clipped: draw the box inside the image")
            c = min(max(v[key], 0.0), limit)
            clipped |= c != v[key]
            v[key] = c
        x0, y0, x1, y1 = (round(v[key]) for key in COORDS)
        for lo, hi, a, bname, what in ((x0, x1, "xmin", "xmax", "width"), (y0, y1, "ymin", "ymax", "height")):
            if hi - lo < 1:
                raise AnnotationError(f"box {k}, {bname}: {what} {bname} - {a} = {hi - lo} pixels ({a} {lo}, "
                                      f"{bname} {hi}); a box needs a positive {what} of at least 1 pixel")
        try:
            attrs = label_attributes(b.get("label"), domain)
        except AnnotationError as e:
            raise AnnotationError(f"box {k}, {e}") from None
        color = b.get("color")
        if color not in (None, "") and not _rgb_ok(color):
            raise AnnotationError(f"box {k}, color: {quote(color)} is not a frame colour (rgb(r, g, b) with "
                                  "components 0..255, or #rrggbb)")
        label = " ".join(attrs[a] for a in order if a in attrs)
        missing = [a for a in order if a not in attrs]
        if missing:
            out.incomplete[k] = missing
        if clipped:
            out.clipped.append(k)
        out.boxes.append({"xmin": x0, "ymin": y0, "xmax": x1, "ymax": y1, "label": label,
                          "color": rgb_string(label_color(label))})
    return out


def normalise_boxes(boxes: Any, image_size: tuple[float, float] | None = None) -> list[dict[str, Any]]:
    """The boxes of `check_boxes`."""
    return check_boxes(boxes, image_size).boxes


def box_signature(boxes: Any) -> str | None:
    """A digest of what the annotator sees (labels and rounded coordinates), tolerant of anything: tells the
    widget's echo of a freshly loaded image from an edit. None when the value is not a list of boxes."""
    try:
        sig = []
        for b in boxes or []:
            scale = float(b.get("scaleFactor") or 1.0)
            sig.append([str(b.get("label") or "").strip().lower(),
                        *(round(float(b[key]) / scale) for key in COORDS)])
        return digest(sig)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError, ZeroDivisionError):
        return None


def make_key(model: str, image_id: str, boxes: Any, fresh: bool = True) -> str:
    """The hidden key of the image the widgets show (and, while ``fresh``, the signature of its boxes)."""
    return json.dumps({"model": model, "image_id": image_id, "boxes": box_signature(boxes), "fresh": fresh})


def parse_key(text: Any) -> dict[str, Any]:
    """The image key sent back by the page; `AnnotationError` when it is missing or malformed."""
    if isinstance(text, str) and len(text) > MAX_KEY_CHARS:
        raise AnnotationError(f"image key: {len(text)} characters is too long (at most {MAX_KEY_CHARS})")
    try:
        d = json.loads(text or "")
    except (TypeError, ValueError):
        d = None
    if not (isinstance(d, dict) and isinstance(d.get("model"), str) and isinstance(d.get("image_id"), str)
            and d["model"] and d["image_id"]):
        raise AnnotationError("no image loaded: choose a model and an image first")
    return d


def normalise(field: str, value: Any, image_size: tuple[float, float] | None = None) -> Any:
    """A field's value as stored (`AnnotationError` naming the problem); boxes are checked against
    ``image_size`` when given."""
    if field == "boxes":
        return normalise_boxes(value, image_size)
    if field in FLAGS:
        if not isinstance(value, bool):
            raise AnnotationError(f"{field}: must be true or false, got {value!r}")
        return value
    if field == "notes":
        if value is not None and not isinstance(value, str):
            raise AnnotationError(f"notes: must be text, got {type(value).__name__}")
        value = value or ""
        if len(value) > MAX_NOTES:
            raise AnnotationError(f"notes: {len(value)} characters is too long (at most {MAX_NOTES})")
        return value
    raise AnnotationError(f"unknown field {quote(field)}; fields are {list(FIELDS)}")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def digest(value: Any) -> str:
    return hashlib.sha256(canonical(value).encode()).hexdigest()[:16]
