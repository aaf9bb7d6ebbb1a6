"""What the Annotate tab does, without its widgets: load an image, save its boxes and fields, find the next image
to annotate, export a model's scene graphs as a zip. ``space/app.py`` only turns these answers into gradio
updates; the store, folders and box checks they use are `logicval_hf.space.annotate`.

Every action takes the hidden *image key* (`annotate.make_key`) the page sends back, so it always edits the
image the annotator sees. Errors are `annotate.AnnotationError` / `images.ImageInputError` (``ValueError``s with
a sentence for the annotator).
"""

from __future__ import annotations

import hashlib
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_write_bytes
from logicval_hf.space import annotate as ann
from logicval_hf.space import annotation_values as vals
from logicval_hf.space.common import md_escape
from logicval_hf.space.images import DEFAULT_MAX_FILE_BYTES

#: skipped images listed by name in the export message (the rest are counted)
MAX_SKIPPED_LISTED = 50


@dataclass(frozen=True)
class LoadedImage:
    """An image as the Annotate widgets show it: the file to display, its stored boxes, flags and notes, the
    key that ties later edits to it, and a status line."""

    image: str
    boxes: list[dict[str, Any]]
    flags: dict[str, bool]
    notes: str
    key: str
    status: str


@dataclass(frozen=True)
class BoxesSaved:
    """The answer to a boxes change: ``status`` None when nothing was saved because the change was the widget's
    echo of loading the image (not an edit); ``key`` the image key to keep (no longer waiting for the echo)."""

    status: str | None
    key: str


def cache_copy(path: str | Path, cache_dir: str | Path) -> str:
    """A byte-identical copy of an image under ``cache_dir`` (content-addressed), which gradio may serve: the
    annotation folder itself stays outside what the server hands out."""
    data = Path(path).read_bytes()
    d = Path(cache_dir) / ("logicval-" + hashlib.sha256(data).hexdigest()[:32])
    d.mkdir(parents=True, exist_ok=True)
    dst = d / Path(path).name
    if not dst.exists():
        atomic_write_bytes(dst, data)
    return str(dst)


def saved_status(result: Mapping[str, Any], who: str, what: str, image_id: str, notes: Sequence[str] = ()) -> str:
    """The status line after a save: an edit (number, who, when) or "unchanged", and any warnings."""
    extra = "".join(f"  \n⚠ {md_escape(n)}" for n in notes)
    if not result["changed"]:
        return f"{what} of **{image_id}** unchanged.{extra}"
    return (f"✔ Saved {what} of **{image_id}** (edit #{result['edit_id']}, {md_escape(who)}, "
            f"{result['at']}).{extra}")


class AnnotationDesk:
    """The annotation service of one Space: model folders under ``root``, the store, the export folder.

    Args:
        root: the annotation root (``root/<model>/<benchmark id>.png``); created if missing.
        db_path: the SQLite store (default ``root/annotations.sqlite``).
        export_dir: where exports go (default ``root/_export``).
        max_file_bytes: the image gate's file-size cap.
    """

    def __init__(self, root: str | Path, db_path: str | Path | None = None, export_dir: str | Path | None = None,
                 max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.store = ann.AnnotationStore(db_path or self.root / "annotations.sqlite")
        self.export_dir = Path(export_dir) if export_dir else self.root / "_export"
        self.max_file_bytes = max_file_bytes

    # ---- menus and progress --------------------------------------------------------------------------------
    def models(self) -> list[str]:
        return ann.list_models(self.root)

    def image_choices(self, model: str | None, package: str | None) -> list[tuple[str, str]]:
        return ann.image_choices(self.store, self.root, model, package) if model else []

    def progress_text(self, model: str | None, package: str | None) -> str:
        if not model:
            return "_No model folders under the annotation root yet._"
        done, total = ann.progress(self.store, self.root, model, package)
        return f"**{model} / {package}:** {done} of {total} images annotated."

    def next_unannotated(self, model: str | None, package: str | None, current: str | None) -> str | None:
        """The first image after ``current`` (in id order) that is not annotated yet, wrapping round to the first
        one; None when every image of the package is annotated."""
        todo = ann.unannotated(self.store, self.root, model, package) if model else []
        after = [i for i in todo if current is None or i > current]
        return after[0] if after else (todo[0] if todo else None)

    # ---- one image -----------------------------------------------------------------------------------------
    def load(self, model: str, image_id: str, cache_dir: str | Path) -> LoadedImage:
        """The image (through the image gate, copied into ``cache_dir`` for display) and its annotation."""
        path = ann.image_path(self.root, model, image_id)
        ann.image_size(path, self.max_file_bytes)  # the image gate: size and pixel caps, from the header
        rec = self.store.load(model, image_id)
        meta = rec["_meta"]
        last = max(meta.values(), key=lambda x: x["at"]) if meta else None
        status = (f"Loaded **{image_id}** — last edit by {md_escape(last['by'])} at {last['at']}" if last
                  else f"Loaded **{image_id}** (no annotation yet)")
        return LoadedImage(image=cache_copy(path, cache_dir), boxes=rec["boxes"],
                           flags={f: bool(rec[f]) for f in vals.FLAGS}, notes=rec["notes"],
                           key=vals.make_key(model, image_id, rec["boxes"]), status=status)

    def save_boxes(self, key: str, boxes: Any, user: str) -> BoxesSaved:
        """Save the boxes of the keyed image, unless the change is the widget echoing the boxes it was just
        loaded with (same signature while the key is *fresh*): that is not an annotator's edit."""
        d = vals.parse_key(key)
        settled = vals.make_key(d["model"], d["image_id"], None, fresh=False)
        if d.get("fresh") and vals.box_signature(boxes) == d.get("boxes"):
            return BoxesSaved(None, settled)
        path = ann.image_path(self.root, d["model"], d["image_id"])  # still a valid image of a known folder
        checked = vals.check_boxes(boxes, ann.image_size(path, self.max_file_bytes))  # refusals write nothing
        res = self.store.save(d["model"], d["image_id"], "boxes", checked.boxes, user)
        return BoxesSaved(saved_status(res, user, f"{len(checked.boxes)} box(es)", d["image_id"], checked.notes()),
                          settled)

    def save_field(self, key: str, field: str, value: Any, user: str) -> str:
        """Save a flag or the notes of the keyed image; the status line."""
        d = vals.parse_key(key)
        ann.image_path(self.root, d["model"], d["image_id"])
        res = self.store.save(d["model"], d["image_id"], field, value, user)
        return saved_status(res, user, field.replace("_", " "), d["image_id"])

    # ---- export --------------------------------------------------------------------------------------------
    def export_zip(self, model: str) -> tuple[str, str]:
        """Export ``model`` (`annotate.export_model`) and pack it as ``<model>_scenes.zip`` in a fresh temporary
        folder; returns the message and the zip's path."""
        if not model:
            raise vals.AnnotationError("choose a model folder first")
        res = ann.export_model(self.store, self.root, model, self.export_dir)
        zpath = Path(tempfile.mkdtemp(prefix="logicval-export-")) / f"{model}_scenes.zip"
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
            for i in res["written"]:
                z.write(Path(res["dir"]) / f"{i}.json", f"{model}/{i}.json")
            z.write(res["flags_file"], f"{model}/flags.jsonl")
            z.write(res["annotations_file"], f"{model}/annotations.jsonl")
        skipped = "".join(f"\n- {i}: {md_escape(why)}"
                          for i, why in list(res["skipped"].items())[:MAX_SKIPPED_LISTED])
        md = (f"Exported **{len(res['written'])}** scene graph(s) to `{res['dir']}`; "
              f"{len(res['unannotated'])} image(s) not annotated yet."
              + (f"\n\nSkipped {len(res['skipped'])}:{skipped}" if res["skipped"] else ""))
        return md, str(zpath)
