"""Pack CLEVR-layout render folders into a compact copy the training scripts read as they read the originals.

    python -m logicval_hf.training.pack_renders --out pool ../shared/data/clevr_blender renders/t2i_train ...

Why: a training pool has to travel to wherever the training runs (a rented GPU machine, a CI cache), and the
renders are mostly PNG bytes and scene JSON the training never reads. The copy keeps per scene exactly what
`parser_data` reads: the image re-encoded as JPEG (``--quality``, default 90; the parser's augmentation already
includes JPEG loss), the instance mask as PNG (lossless: the visible points are computed from it), and one
``scenes.json`` per folder with the image and mask names and each object's colour, shape, material, size,
``pixel_coords``, ``bbox_xyxy`` and ``mask_index``. Scene names are unchanged, so ``split_holdout`` holds out the
same scenes of the copy as of the original. The pair G15 + a31 (the shipped pair's parents) was trained on such a
copy (3738 scenes, 42.6 MB against about 290 MB).

Scenes whose image or mask cannot be read are reported by name and skipped; a folder that is re-packed is
rewritten whole (its ``scenes.json`` atomically, last).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from logicval_hf.common.atomic import atomic_path
from logicval_hf.training.parser_data import OBJECT_FIELDS, _scene_entries, mask_path


def pack_folder(src: Path, dst: Path, quality: int = 90, report: list[str] | None = None) -> int:
    """Pack one CLEVR-layout folder ``src`` into ``dst`` (see the module's docstring); returns the scenes packed.

    Raises:
        ValueError: ``src`` has no scenes to read, or ``quality`` is outside 1-100.
    """
    from PIL import Image

    if not 1 <= quality <= 100:
        raise ValueError(f"quality must lie in 1-100, got {quality}")
    report = [] if report is None else report
    entries = _scene_entries(src, report)
    if not entries:
        raise ValueError(f"{src}: no scenes to pack ({'; '.join(report) or 'empty'})")
    (dst / "images").mkdir(parents=True, exist_ok=True)
    (dst / "masks").mkdir(exist_ok=True)
    scenes = []
    for source, s in entries:
        name = s.get("image_filename")
        if not isinstance(name, str) or not isinstance(s.get("objects"), list):
            report.append(f"{source}: no image_filename or objects; skipped")
            continue
        stem = Path(name).stem
        mask = mask_path(src, s, name)
        try:
            with Image.open(src / "images" / name) as im:
                im.convert("RGB").save(dst / "images" / f"{stem}.jpg", "JPEG", quality=quality)
            entry: dict[str, Any] = {"image_filename": f"{stem}.jpg"}
            if mask.is_file():
                with Image.open(mask) as m:
                    m.save(dst / "masks" / f"{stem}.png", optimize=True)
                entry["mask_filename"] = f"masks/{stem}.png"
        except (OSError, ValueError) as e:
            report.append(f"{source} ({name}): unreadable image or mask ({e}); skipped")
            continue
        entry["objects"] = [{k: o[k] for k in OBJECT_FIELDS if k in o} for o in s["objects"] if isinstance(o, dict)]
        scenes.append(entry)
    with atomic_path(dst / "scenes.json") as tmp:
        Path(tmp).write_text(json.dumps({"scenes": scenes}, separators=(",", ":")))
    return len(scenes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logicval_hf.training.pack_renders",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="CLEVR-layout render folders (images/, masks/, scenes)")
    ap.add_argument("--out", type=Path, required=True, help="where the copies go, one subfolder per source name")
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality of the images (1-100; default 90)")
    args = ap.parse_args(argv)
    if not 1 <= args.quality <= 100:
        ap.error(f"--quality must lie in 1-100, got {args.quality}")
    names = [f.resolve().name for f in args.folders]
    if len(set(names)) < len(names):
        ap.error(f"two folders share a name, and their copies would share a subfolder: {names}")
    status = 0
    for src, name in zip(args.folders, names, strict=True):
        report: list[str] = []
        try:
            n = pack_folder(src, args.out / name, args.quality, report)
        except ValueError as e:
            print(f"pack_renders: {e}", file=sys.stderr)
            status = 1
            continue
        for line in report:
            print(f"pack_renders: {line}", file=sys.stderr)
        size = sum(p.stat().st_size for p in (args.out / name).rglob("*") if p.is_file())
        print(f"{src} -> {args.out / name}: {n} scenes, {size / 1e6:.1f} MB", flush=True)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
