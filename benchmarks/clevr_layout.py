"""Lay out images of the official CLEVR v1.0 release as the perception benchmark reads them.

    python benchmarks/clevr_layout.py CLEVR_v1.0.zip --out DIR [--split val] [--count N] [--seed S]
    python benchmarks/clevr_layout.py CLEVR_v1.0/ --out DIR --split train --names benchmarks/data/clevr_v1_train_100.txt

SOURCE is the release as downloaded (https://dl.fbaipublicfiles.com/clevr/CLEVR_v1.0.zip, 18 GB; CLEVR by
Johnson et al., CVPR 2017, CC BY 4.0) or the folder it unpacks to (``CLEVR_v1.0/`` with ``images/<split>/`` and
``scenes/CLEVR_<split>_scenes.json``); a zip is read in place, nothing else of it is unpacked. DIR receives what
``python benchmarks/clevr_perception.py DIR`` reads: ``images/`` with the chosen images, unchanged, and
``scenes.json``, their official scene entries in the release's order (the scene format is CLEVR's own; the
benchmark derives regions and relations from each object's ``pixel_coords``, never from CLEVR's 3D
``relationships``).

Which images: ``--names FILE`` (one image file name per line, ``#`` comments allowed), else the first ``--count``
of the split by image index, or with ``--seed`` ``--count`` of them drawn uniformly at random (the same seed, the
same images). The train and val splits carry scenes; the test split has none. DIR must be empty or new; the scene
file is written last and atomically, so a folder with ``scenes.json`` is complete.

``benchmarks/data/clevr_v1_train_100.txt`` names the 100 CLEVR v1.0 train images of the model card's real-CLEVR set
(``logicval_hf/perception/scene_parser.md``).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from logicval_hf.common.atomic import atomic_write_text  # noqa: E402

SPLITS = ("train", "val")
RELEASE = "CLEVR_v1.0"


class LayoutError(ValueError):
    """The source or the request cannot be laid out (a one-line message, exit status 2)."""


class Release:
    """The CLEVR v1.0 release, as its zip or as the folder it unpacks to: scene files and images by split."""

    def __init__(self, source: Path):
        self.zip: zipfile.ZipFile | None = None
        self.root = ""
        if source.is_file():
            try:
                self.zip = zipfile.ZipFile(source)
            except zipfile.BadZipFile:
                raise LayoutError(f"{source}: not a zip file (expected {RELEASE}.zip or its unpacked folder)") from None
            names = self.zip.namelist()
            tops = {n.split("/", 1)[0] for n in names if "/" in n}
            self.root = f"{RELEASE}/" if RELEASE in tops else ""
            self.members = set(names)
        elif source.is_dir():
            self.folder = source / RELEASE if (source / RELEASE / "scenes").is_dir() else source
        else:
            raise LayoutError(f"{source}: no such file or folder")
        self.source = source

    def _exists(self, rel: str) -> bool:
        return self.root + rel in self.members if self.zip else (self.folder / rel).is_file()

    @contextmanager
    def open(self, rel: str) -> Iterator[IO[bytes]]:
        if self.zip:
            with self.zip.open(self.root + rel) as fh:
                yield fh
        else:
            with open(self.folder / rel, "rb") as fh:
                yield fh

    def scenes(self, split: str) -> list[dict[str, Any]]:
        rel = f"scenes/CLEVR_{split}_scenes.json"
        if not self._exists(rel):
            raise LayoutError(f"{self.source}: no {rel} (expected the {RELEASE} release: its zip or unpacked folder)")
        with self.open(rel) as fh:
            data = json.load(fh)
        scenes = data.get("scenes") if isinstance(data, dict) else None
        if not isinstance(scenes, list):
            raise LayoutError(f"{self.source}: {rel} has no 'scenes' list")
        return sorted(scenes, key=lambda s: s.get("image_index", 0))

    def image(self, split: str, name: str) -> str:
        rel = f"images/{split}/{name}"
        if not self._exists(rel):
            raise LayoutError(f"{self.source}: no image {rel}")
        return rel


def read_names(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise LayoutError(f"--names {path}: cannot read it ({e.strerror})") from None
    names = [line.split("#", 1)[0].strip() for line in lines]
    return [n for n in names if n]


def choose(scenes: list[dict[str, Any]], names: list[str] | None, count: int | None,
           seed: int | None) -> list[dict[str, Any]]:
    """The scenes to lay out: those named (in the release's order), else the first ``count`` or a seeded sample."""
    if names is not None:
        by_name = {s.get("image_filename"): s for s in scenes}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise LayoutError(f"--names: {len(missing)} image(s) not in this split, e.g. {missing[0]!r}")
        wanted = set(names)
        return [s for s in scenes if s.get("image_filename") in wanted]
    if count is None:
        return scenes
    if count > len(scenes):
        raise LayoutError(f"--count {count}: the split has only {len(scenes)} scenes")
    if seed is None:
        return scenes[:count]
    picked = set(random.Random(seed).sample(range(len(scenes)), count))
    return [s for i, s in enumerate(scenes) if i in picked]


def lay_out(source: Path, out: Path, split: str = "val", names: list[str] | None = None, count: int | None = None,
            seed: int | None = None) -> list[dict[str, Any]]:
    """Copy the chosen images of ``split`` into ``out/images/`` and write ``out/scenes.json``; returns the scenes.

    Raises:
        LayoutError: the source is not the release, a name or the split is unknown, ``out`` is not empty.
    """
    if split not in SPLITS:
        raise LayoutError(f"--split {split!r}: CLEVR's scenes cover {' and '.join(SPLITS)} (the test split has none)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LayoutError(f"--out {out}: exists and is not an empty folder")
    release = Release(source)
    chosen = choose(release.scenes(split), names, count, seed)
    files = [release.image(split, s["image_filename"]) for s in chosen]  # all checked before anything is written
    (out / "images").mkdir(parents=True, exist_ok=True)
    for s, rel in zip(chosen, files, strict=True):
        with release.open(rel) as src, open(out / "images" / s["image_filename"], "wb") as dst:
            shutil.copyfileobj(src, dst)
    atomic_write_text(out / "scenes.json", json.dumps(chosen))
    return chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path, help=f"{RELEASE}.zip as downloaded, or the folder it unpacks to")
    ap.add_argument("--out", type=Path, required=True, help="folder to write images/ and scenes.json to (new or empty)")
    ap.add_argument("--split", default="val", help="train or val (default val)")
    ap.add_argument("--names", type=Path, help="a file naming the images to take, one file name per line")
    ap.add_argument("--count", type=int, help="take this many images (default: all of the split)")
    ap.add_argument("--seed", type=int, help="with --count: draw the images at random with this seed")
    args = ap.parse_args(argv)
    if args.count is not None and args.count < 1:
        ap.error(f"--count must be at least 1, got {args.count}")
    if args.names and (args.count is not None or args.seed is not None):
        ap.error("--names takes the images it names; leave out --count and --seed")
    try:
        names = read_names(args.names) if args.names else None
        chosen = lay_out(args.source, args.out, args.split, names, args.count, args.seed)
    except LayoutError as e:
        ap.error(str(e))
    print(f"{len(chosen)} images of CLEVR v1.0 {args.split} in {args.out}: "
          f"python benchmarks/clevr_perception.py {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
