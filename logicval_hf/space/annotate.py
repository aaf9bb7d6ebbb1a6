"""Human annotation (paper Appendix G): image folders, the closed box vocabulary, the SQLite store, export.

**Folders.** ``root/<model>/<benchmark id>.<png|jpg|jpeg|webp>``: one folder per text-to-image model, images
named by benchmark id (``3SAT-0007.png``). Folders starting with ``_`` or ``.`` are not models (the default
export folder is ``root/_export``).

**Boxes** and every other value are checked before they are saved: `logicval_hf.space.annotation_values`
(the closed vocabulary of box labels, `check_boxes`, `normalise`).

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

import datetime as _dt
import json
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.common.atomic import atomic_write_text
from logicval_hf.contract.catalog import Domain, load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.perception.images import IMAGE_EXTENSIONS
from logicval_hf.space import images
from logicval_hf.space.annotation_values import (
    DEFAULTS,
    FLAGS,
    AnnotationError,
    canonical,
    normalise,
    parse_label,
)
from logicval_hf.space.common import ROW_ID_RE, quote

__all__ = [
    "IMAGE_EXTENSIONS", "AnnotationStore", "NOT_ANNOTATED", "export_model", "image_choices", "image_path",
    "image_size", "is_annotated", "list_images", "list_models", "now", "progress", "record_scene", "unannotated",
]

_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")  # fullmatch


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


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
