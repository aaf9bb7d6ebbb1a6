"""The report's gallery: a few small thumbnails per generator, failures first, each with the boxes the perception
backend found and what the verdict says (the constraint an image violates, in the prompt's words), and the
``--keep-images`` policy that may delete the full-size images afterwards.

Thumbnails are ``gallery/<generator>/<id>.jpg`` (`THUMB_WIDTH` px wide, JPEG): a few hundred kB for a whole run,
so the report keeps its pictures whatever ``images/`` keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.common.atomic import atomic_write_bytes
from logicval_hf.scoring.scores import Record

__all__ = ["GALLERY_SIZE", "KEEP_IMAGES", "THUMB_WIDTH", "caption", "pick_examples", "prune_images", "write_gallery"]

#: examples per generator
GALLERY_SIZE = 8
#: thumbnail width in pixels (the height keeps the image's aspect)
THUMB_WIDTH = 200
#: what ``--keep-images`` may keep of the generated images: every one, the failures, none
KEEP_IMAGES = ("all", "failures", "none")
_BOX = (255, 214, 0)  # boxes in yellow: visible on CLEVR's grey floor and on most T2I backgrounds
_CAPTION_CHARS = 90


def _failed(rec: Record, truth_ok: bool | None) -> bool:
    """An image worth looking at: the metric says it fails its spec, or it disagrees with the known truth."""
    return not rec.strict.ok or (truth_ok is not None and truth_ok != rec.strict.ok)


def pick_examples(rows: Sequence[BenchmarkRow], records: Mapping[str, Record], truth: Mapping[str, bool] | None = None,
                  size: int = GALLERY_SIZE) -> list[str]:
    """Ids of up to ``size`` images worth showing: failures first (disagreements with the known truth before
    them), then the rest; within each group one package after the other, so that the examples cover the
    packages. Ids without a perceived image (failed generations) are left to the report's table of them."""
    truth = truth or {}
    rank: dict[str, int] = {}
    per_package: dict[str, int] = {}
    for r in rows:
        rank[r.id] = per_package.get(r.package, 0)
        per_package[r.package] = rank[r.id] + 1
    order = {p: k for k, p in enumerate(per_package)}

    def key(r: BenchmarkRow) -> tuple:
        rec, t = records[r.id], truth.get(r.id)
        disagrees = t is not None and t != rec.strict.ok
        return (not _failed(rec, t), not disagrees, rank[r.id], order[r.package])

    shown = [r for r in rows if records[r.id].scene is not None]
    return [r.id for r in sorted(shown, key=key)[:size]]


def caption(rec: Record, truth_ok: bool | None = None) -> str:
    """What the verdict says about one image, in words: the first violated constraint (as the prompt words it),
    a wrong count, or a drawing where an UNSAT spec asks for none."""
    from logicval_hf.contract.verbalise import constraint_names, constraint_text

    verdict = "ok" if rec.strict.ok else "not ok"
    if truth_ok is not None and truth_ok != rec.strict.ok:
        verdict += f" (known truth: {'ok' if truth_ok else 'not ok'})"
    if rec.scene is None:
        return f"{verdict}: no image"
    n = rec.strict.n_objects
    objects = f"{n} object" + ("" if n == 1 else "s")
    if rec.label == "UNSAT":
        why = "empty scene: abstained" if rec.strict.ok else f"{objects} drawn for an unsatisfiable prompt"
    elif rec.strict.violated:
        first = rec.strict.violated[0]
        text = constraint_text(rec.spec.constraints[first], rec.spec.n)
        why = f"violates {constraint_names(rec.strict.violated)}: {text}"
    elif not rec.strict.count_ok:
        why = f"{objects}, the prompt asks for {rec.spec.n}"
    else:
        why = f"{objects}, every constraint holds"
    text = f"{verdict}: {why}"
    return text if len(text) <= _CAPTION_CHARS else text[:_CAPTION_CHARS - 1].rstrip() + "…"


def _thumbnail(image_path: Path, rec: Record) -> bytes:
    """A JPEG thumbnail with the perceived boxes drawn."""
    import io

    from PIL import Image, ImageDraw

    with Image.open(image_path) as opened:
        im = opened.convert("RGB")
    scale = THUMB_WIDTH / im.width
    thumb = im.resize((THUMB_WIDTH, max(1, round(im.height * scale))), Image.Resampling.BILINEAR)
    if rec.scene is not None:
        sx = THUMB_WIDTH / (rec.scene.image_size[0] or im.width)
        sy = thumb.height / (rec.scene.image_size[1] or im.height)
        draw = ImageDraw.Draw(thumb)
        for o in rec.scene.objects:
            x0, y0, x1, y1 = o.bbox
            draw.rectangle((x0 * sx, y0 * sy, x1 * sx, y1 * sy), outline=_BOX, width=2)
    buf = io.BytesIO()
    thumb.save(buf, format="JPEG", quality=80)
    return buf.getvalue()


def write_gallery(out: Path, name: str, ids: Sequence[str], images: Mapping[str, Path | None],
                  records: Mapping[str, Record], truth: Mapping[str, bool] | None = None) -> list[dict[str, Any]]:
    """Write the thumbnails of ``ids`` under ``out/gallery/<name>/`` (removing ones of earlier runs) and return
    the summary's ``gallery`` entries: ``{"id", "image" (relative path or None), "ok", "truth", "confidence",
    "caption"}``."""
    folder = out / "gallery" / name
    entries = []
    for i in ids:
        rec, t, path = records[i], (truth or {}).get(i), images.get(i)
        rel = None
        if path is not None and path.is_file():
            try:
                atomic_write_bytes(folder / f"{i}.jpg", _thumbnail(path, rec))
                rel = f"gallery/{name}/{i}.jpg"
            except OSError:  # an unreadable image: the caption still says what the verdict is
                rel = None
        entries.append({"id": i, "image": rel, "ok": rec.strict.ok, "truth": t, "confidence": rec.confidence,
                        "caption": caption(rec, t)})
    keep = {f"{i}.jpg" for i in ids}
    if folder.is_dir():
        for old in folder.glob("*.jpg"):
            if old.name not in keep:
                old.unlink(missing_ok=True)
    return entries


def prune_images(folder: Path, ids: Sequence[str], records: Mapping[str, Record], truth: Mapping[str, bool],
                 keep: str) -> int:
    """Delete generated images per ``keep`` (`KEEP_IMAGES`): ``"failures"`` keeps those the metric rejects or
    that disagree with the known truth, ``"none"`` keeps none. Returns how many were deleted. A later run draws
    the deleted images again (their verdicts are reused when the redrawn bytes are the same)."""
    if keep not in KEEP_IMAGES:
        raise ValueError(f"keep_images must be one of {list(KEEP_IMAGES)}, got {keep!r}")
    if keep == "all":
        return 0
    deleted = 0
    for i in ids:
        if keep == "failures" and _failed(records[i], truth.get(i)):
            continue
        path = folder / f"{i}.png"
        if path.is_file():
            path.unlink()
            deleted += 1
    return deleted
