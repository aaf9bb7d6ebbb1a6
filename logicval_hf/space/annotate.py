"""Human annotation (paper Appendix G): image folders, the closed box vocabulary, the SQLite store, export.

**Folders.** ``root/<model>/<benchmark id>.<png|jpg|jpeg|webp>``: one folder per text-to-image model, images
named by benchmark id (``3SAT-0007.png``). Folders starting with ``_`` or ``.`` are not models (the default
export folder is ``root/_export``).

**Boxes.** One box per object; its label is ``"<colour> <material> <shape>"`` from the closed vocabulary of
the catalog's domain (e.g. ``red metal cube``), its frame colour the object's CLEVR colour. Boxes are checked
when saved (`check_boxes`): finite pixel coordinates, at least 1 pixel wide and high, inside the image (up to
`CLIP_TOLERANCE` pixels outside is clipped and reported; further out is refused, not clipped), label words from
the domain's vocabulary (at most one per attribute, `MAX_LABEL_CHARS` characters). A box whose label is still
incomplete (no colour yet, say) is saved in the *incomplete* state: white frame (`INCOMPLETE_RGB`, not a CLEVR
colour), named in the status line, skipped by the export until completed. The frame colour is always derived
from the label; a malformed one sent by a client is refused. A refusal names the box (counted from 1) and the
field, and nothing is written.

**Store.** One SQLite file in WAL mode. Every edit of one field of one image (``boxes``, ``rendering_error``,
``deformed``, ``empty_scene``, ``notes``) is one ``BEGIN IMMEDIATE`` transaction that appends the edit to
``edit_log`` (who, when, value) and upserts the current value in ``annotation``; ``synchronous=FULL``. A
crash loses at most the edit in flight; two annotators (or two server processes) never lose each other's
edits: transactions are serialised, the last committed write of a field wins and every write is logged. A
save that would not change the stored value is not an edit (nothing is written).

**Export.** `export_model` writes ``<out>/<model>/<id>.json`` in the format of `logicval_hf.Scene.to_dict`
(what ``logicval verify`` and the metric's ``given`` backend read), ``<out>/<model>/annotations.jsonl`` (one
``{"id", "model", "annotated_scene", flags}`` record per exported image: the ``--annotations`` input of
``logicval meta``) and ``<out>/<model>/flags.jsonl`` (one line per annotated image: the scene flags, notes, who
and when).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import itertools
import json
import math
import re
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from logicval_hf import perception
from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.common.atomic import atomic_write_text
from logicval_hf.contract.catalog import Domain, load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.space import images
from logicval_hf.space.common import ROW_ID_RE, attribute_order, quote

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")
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
_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")  # fullmatch
_RGB_RE = re.compile(r"rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)")  # fullmatch
_HEX_RE = re.compile(r"#[0-9a-fA-F]{6}")  # fullmatch


class AnnotationError(ValueError):
    """A request the annotation tool refuses (unknown folder or image, malformed value); says why."""


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


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


# ---- folders -------------------------------------------------------------------------------------------------
def list_models(root: str | Path) -> list[str]:
    """Model folders under ``root`` (sorted; hidden and ``_``-prefixed folders are not models)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(d.name for d in root.iterdir()
                  if d.is_dir() and _MODEL_RE.match(d.name) and not d.name.startswith(("_", ".")))


def _model_dir(root: str | Path, model: Any) -> Path:
    if not isinstance(model, str) or model not in list_models(root):
        raise AnnotationError(f"unknown model folder {quote(model)}; folders: {list_models(root)}")
    return Path(root) / model


def list_images(root: str | Path, model: str, package: str | None = None) -> list[str]:
    """Benchmark ids with an image in the model's folder, optionally of one package, in id order."""
    d = _model_dir(root, model)
    if package and package not in PACKAGE_NAMES:
        raise AnnotationError(f"unknown package {package!r}; expected one of {list(PACKAGE_NAMES)}")
    ids = set()
    for p in d.iterdir():
        if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file():
            m = ROW_ID_RE.fullmatch(p.stem)
            if m and (not package or m.group("package") == package):
                ids.add(p.stem)
    order = {name: k for k, name in enumerate(PACKAGE_NAMES)}
    return sorted(ids, key=lambda i: (order.get(i.split("-")[0], 99), i))


def image_path(root: str | Path, model: str, image_id: Any) -> Path:
    """The image file of ``image_id`` in the model's folder (ids are validated: no path tricks)."""
    d = _model_dir(root, model)
    if not isinstance(image_id, str) or not ROW_ID_RE.fullmatch(image_id):
        raise AnnotationError(f"{quote(image_id)} is not a benchmark id (like 3SAT-0007)")
    for ext in IMAGE_EXTENSIONS:
        for cand in (d / f"{image_id}{ext}", d / f"{image_id}{ext.upper()}"):
            if cand.is_file():
                return cand
    raise AnnotationError(f"no image {image_id} in folder {model!r}")


def image_size(path: str | Path, max_bytes: int | None = None) -> tuple[int, int]:
    """(width, height) of an image from its header, after the Space's checks (`images.image_size`:
    file-size cap ``max_bytes``, pixel cap); `AnnotationError` naming the file otherwise."""
    try:
        return images.image_size(path, max_bytes, Path(path).name)
    except images.ImageInputError as e:
        raise AnnotationError(str(e)) from None


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


# ---- store ---------------------------------------------------------------------------------------------------
_SCHEMA = """
CREATE TABLE IF NOT EXISTS annotation (
    model TEXT NOT NULL, image_id TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL,
    updated_by TEXT NOT NULL, updated_at TEXT NOT NULL, edit_id INTEGER NOT NULL,
    PRIMARY KEY (model, image_id, field));
CREATE TABLE IF NOT EXISTS edit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, model TEXT NOT NULL, image_id TEXT NOT NULL, field TEXT NOT NULL,
    value TEXT NOT NULL, user TEXT NOT NULL, at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS edit_log_image ON edit_log (model, image_id);
"""


class AnnotationStore:
    """The annotation database (see the module docstring). Safe to share between threads and processes."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = self._connect()
        try:
            mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise RuntimeError(f"{self.path}: SQLite refused WAL mode (got {mode!r}); use a local disk")
            con.executescript(_SCHEMA)
        finally:
            con.close()

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA busy_timeout=30000")
        con.execute("PRAGMA synchronous=FULL")
        return con

    def save(self, model: str, image_id: str, field: str, value: Any, user: str,
             image_size: tuple[float, float] | None = None) -> dict[str, Any]:
        """Store one field of one image in one transaction; returns ``changed`` (False: the stored value, or the
        default of a never-edited field; nothing is written), ``edit_id`` and ``at``. The value is checked first
        (`normalise`, boxes against ``image_size``): a refused value writes nothing."""
        if not user:
            raise AnnotationError("who is editing? (no user name; log in first)")
        value = normalise(field, value, image_size)
        text = canonical(value)
        at = now()
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute("SELECT value FROM annotation WHERE model=? AND image_id=? AND field=?",
                                  (model, image_id, field)).fetchone()
                if (row[0] if row is not None else canonical(DEFAULTS[field])) == text:
                    con.execute("ROLLBACK")
                    return {"changed": False, "edit_id": None, "at": None}
                cur = con.execute("INSERT INTO edit_log (model, image_id, field, value, user, at) VALUES (?,?,?,?,?,?)",
                                  (model, image_id, field, text, user, at))
                edit_id = cur.lastrowid
                con.execute(
                    "INSERT INTO annotation (model, image_id, field, value, updated_by, updated_at, edit_id) "
                    "VALUES (?,?,?,?,?,?,?) ON CONFLICT (model, image_id, field) DO UPDATE SET "
                    "value=excluded.value, updated_by=excluded.updated_by, updated_at=excluded.updated_at, "
                    "edit_id=excluded.edit_id",
                    (model, image_id, field, text, user, at, edit_id))
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        finally:
            con.close()
        return {"changed": True, "edit_id": edit_id, "at": at}

    def load(self, model: str, image_id: str) -> dict[str, Any]:
        """Current values of an image (missing fields: empty boxes, false flags, empty notes) and ``_meta``
        (who changed which field when)."""
        con = self._connect()
        try:
            rows = con.execute("SELECT field, value, updated_by, updated_at FROM annotation "
                               "WHERE model=? AND image_id=?", (model, image_id)).fetchall()
        finally:
            con.close()
        out: dict[str, Any] = {"boxes": [], **dict.fromkeys(FLAGS, False), "notes": ""}
        meta = {}
        for field, value, by, at in rows:
            out[field] = json.loads(value)
            meta[field] = {"by": by, "at": at}
        out["_meta"] = meta
        return out

    def records(self, model: str) -> dict[str, dict[str, Any]]:
        """Every annotated image of a model: image id -> current values with ``_meta``."""
        con = self._connect()
        try:
            rows = con.execute("SELECT image_id, field, value, updated_by, updated_at FROM annotation "
                               "WHERE model=? ORDER BY image_id", (model,)).fetchall()
        finally:
            con.close()
        out: dict[str, dict[str, Any]] = {}
        for image_id, field, value, by, at in rows:
            rec = out.setdefault(image_id, {"boxes": [], **dict.fromkeys(FLAGS, False), "notes": "", "_meta": {}})
            rec[field] = json.loads(value)
            rec["_meta"][field] = {"by": by, "at": at}
        return out

    def history(self, model: str | None = None, image_id: str | None = None) -> list[dict[str, Any]]:
        """The edit log (oldest first), optionally of one model / image."""
        q = "SELECT id, model, image_id, field, value, user, at FROM edit_log"
        cond, args = [], []
        if model is not None:
            cond.append("model=?")
            args.append(model)
        if image_id is not None:
            cond.append("image_id=?")
            args.append(image_id)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        con = self._connect()
        try:
            rows = con.execute(q + " ORDER BY id", args).fetchall()
        finally:
            con.close()
        return [{"id": r[0], "model": r[1], "image_id": r[2], "field": r[3], "value": json.loads(r[4]),
                 "user": r[5], "at": r[6]} for r in rows]

    def integrity(self) -> str:
        con = self._connect()
        try:
            return con.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            con.close()


# ---- export --------------------------------------------------------------------------------------------------
def is_annotated(record: Mapping[str, Any] | None) -> bool:
    """The "annotated" rule, the one place it is written: an image counts as annotated when its record has at
    least one box or is marked as an empty scene (flags or notes alone do not count). `export_model` exports
    exactly these, `progress` counts them, the Space marks them ✓ and skips them in "Next unannotated"."""
    return record is not None and bool(record.get("boxes") or record.get("empty_scene"))


#: why `export_model` skips a record that is not `is_annotated`
NOT_ANNOTATED = "no boxes and not marked as an empty scene"


def record_scene(record: Mapping[str, Any], size: tuple[int, int], domain: Domain | None = None) -> Scene:
    """The scene graph of an annotation record (boxes with complete labels, clipped to the image), validated."""
    domain = domain or load_catalog().domain
    boxes = record.get("boxes") or []
    if boxes and record.get("empty_scene"):
        raise AnnotationError(f"marked as empty scene but has {len(boxes)} box(es)")
    W, H = float(size[0]), float(size[1])
    objects = []
    for k, b in enumerate(boxes):
        try:
            attrs = parse_label(b.get("label"), domain)
        except AnnotationError as e:
            raise AnnotationError(f"box {k + 1}: {e}") from None
        x0, x1 = (min(max(float(b[key]), 0.0), W) for key in ("xmin", "xmax"))
        y0, y1 = (min(max(float(b[key]), 0.0), H) for key in ("ymin", "ymax"))
        if x1 - x0 < 1 or y1 - y0 < 1:
            raise AnnotationError(f"box {k + 1} ({quote(b.get('label'))}) lies outside the image or is empty")
        objects.append({**attrs, "bbox": [x0, y0, x1, y1]})
    try:
        return Scene.from_dict({"image_size": [float(size[0]), float(size[1])], "objects": objects}, domain)
    except ValueError as e:
        raise AnnotationError(str(e)) from None


def _write_atomic(path: Path, text: str) -> None:
    atomic_write_text(path, text, fsync=True)  # annotators' work: on disk before it replaces the old export


def export_model(store: AnnotationStore, root: str | Path, model: str, out_dir: str | Path) -> dict[str, Any]:
    """Write one scene-graph JSON per annotated image of ``model`` plus ``flags.jsonl``; report what was skipped.

    An image is exported when it `is_annotated` (at least one box, or marked as an empty scene); boxes need
    complete labels. Images with no annotation are counted as ``unannotated``.
    """
    ids = list_images(root, model)
    records = store.records(model)
    dest = Path(out_dir) / model
    dest.mkdir(parents=True, exist_ok=True)
    written, skipped, flags_lines, records_lines = [], {}, [], []
    domain = load_catalog().domain
    for image_id in ids:
        rec = records.get(image_id)
        if rec is None:
            continue
        meta = rec.get("_meta", {})
        last = max(meta.values(), key=lambda m: m["at"]) if meta else {"by": None, "at": None}
        flags_lines.append(json.dumps({"id": image_id, **{f: bool(rec.get(f)) for f in FLAGS},
                                       "n_boxes": len(rec.get("boxes") or []), "notes": rec.get("notes", ""),
                                       "updated_by": last["by"], "updated_at": last["at"]}, sort_keys=True))
        if not is_annotated(rec):
            skipped[image_id] = NOT_ANNOTATED
            continue
        try:
            scene = record_scene(rec, image_size(image_path(root, model, image_id)), domain)
        except AnnotationError as e:
            skipped[image_id] = str(e)
            continue
        _write_atomic(dest / f"{image_id}.json", json.dumps(scene.to_dict(), indent=1) + "\n")
        records_lines.append(json.dumps({"id": image_id, "model": model, "annotated_scene": scene.to_dict(),
                                         **{f: bool(rec.get(f)) for f in FLAGS}}, sort_keys=True))
        written.append(image_id)
    _write_atomic(dest / "flags.jsonl", "\n".join(flags_lines) + ("\n" if flags_lines else ""))
    _write_atomic(dest / "annotations.jsonl", "\n".join(records_lines) + ("\n" if records_lines else ""))
    return {"model": model, "dir": str(dest), "written": written, "skipped": skipped,
            "unannotated": [i for i in ids if i not in records], "flags_file": str(dest / "flags.jsonl"),
            "annotations_file": str(dest / "annotations.jsonl")}


def image_choices(store: AnnotationStore, root: str | Path, model: str,
                  package: str | None = None) -> list[tuple[str, str]]:
    """The image menu of a model (optionally one package): (``"3SAT-0001 ✓"`` when `is_annotated`, id)."""
    recs = store.records(model)
    return [(f"{i} ✓" if is_annotated(recs.get(i)) else i, i) for i in list_images(root, model, package)]


def unannotated(store: AnnotationStore, root: str | Path, model: str, package: str | None = None) -> list[str]:
    """Ids of the model's images (optionally one package) that are not `is_annotated`, in id order."""
    recs = store.records(model)
    return [i for i in list_images(root, model, package) if not is_annotated(recs.get(i))]


def progress(store: AnnotationStore, root: str | Path, model: str, package: str | None = None) -> tuple[int, int]:
    """(annotated, total) images of a model (optionally one package); annotated: `is_annotated`."""
    ids = list_images(root, model, package)
    recs = store.records(model)
    done = sum(1 for i in ids if is_annotated(recs.get(i)))
    return done, len(ids)
