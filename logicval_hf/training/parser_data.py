"""Scene-parser training data: render folders in the CLEVR layout read into `Record`s, held-out splits, and the
project's numpy renderer drawn on the fly.

A folder holds ``images/``, ``scenes/*.json`` (one scene each) or ``scenes.json``, and optionally ``masks/``
(8-bit instance masks, value i+1 = object i; values past the objects' mark things that are not objects of the
truth, the scene's ``uncounted``: no target, never floor). Targets: centre = ``pixel_coords`` (the projected 3D
centre, on which CLEVR's regions hang), box size = ``bbox_xyxy`` (or the mask's box), attributes from the JSON.
Bad input (an unreadable or inconsistent image, mask or scene file) is reported by name and skipped, never used.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ATTRIBUTES", "DEFAULT_DATA", "SIZES", "VAL_FRACTION", "DataFolder", "FolderSplit", "Record", "classes",
           "dataset_name", "load_folder", "numpy_render", "parse_data_folder", "parse_held_out_folder", "random_layout",
           "record_weights", "split_folders", "split_holdout"]

ATTRIBUTES = ("color", "shape", "material", "size")
SIZES = ("large", "small")
#: the default --data: the Blender renders with instance masks under the data root (docs/data.md), which is
#: $LOGICVAL_SHARED_DATA, else the folder "shared" beside the checkout
DEFAULT_DATA = Path(os.environ.get("LOGICVAL_SHARED_DATA") or Path(__file__).resolve().parents[3] / "shared") / "data" \
    / "clevr_blender"
#: the last share of every --data folder (by file name) held out for validation and calibration; `refit_parser`
#: reads the same share of a training folder as ``DIR:0.05``
VAL_FRACTION = 0.05


def classes() -> dict[str, tuple[str, ...]]:
    from logicval_hf.contract.catalog import load_catalog

    dom = load_catalog().domain
    out = {a: tuple(dom.attributes[a]) for a in ("color", "shape", "material")}
    out["size"] = SIZES
    return out


@dataclass
class Record:
    """One training image with its objects: centres and box sizes in the image's pixels, class indices per
    attribute (-1: unknown, e.g. size for numpy renders)."""

    name: str
    rgb: np.ndarray
    centres: np.ndarray  # (K, 2) float
    sizes: np.ndarray  # (K, 2) float: box width, height
    labels: np.ndarray  # (K, 4) int
    #: (H, W) int16 object index per pixel (-1: floor and background, -2: something drawn that is not an object of
    #: the truth, a scene's ``uncounted`` distractor or sliver cut by the frame), from the instance mask; None when
    #: the folder has none (numpy renders). With it, attributes are supervised on the pixels each object shows.
    mask: np.ndarray | None = None
    #: the world kind the render drew (``render_settings.world.kind``, profile ``t2i_world``); None: no such draw
    world: str | None = None


def _bbox_from_mask(mask: np.ndarray, index: int) -> list[int] | None:
    ys, xs = np.nonzero(mask == index)
    if len(xs) == 0:
        return None
    return [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())]


def _scene_entries(folder: Path, report: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(source name, scene dict) of a folder: ``scenes/*.json`` one scene each, else ``scenes.json``."""
    entries = []
    per_file = sorted((folder / "scenes").glob("*.json")) if (folder / "scenes").is_dir() else []
    if per_file:
        for p in per_file:
            try:
                d = json.loads(p.read_text())
                if not isinstance(d, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError, UnicodeDecodeError) as e:
                report.append(f"{p}: unreadable scene file ({e}); skipped")
                continue
            entries.append((str(p), d))
        return entries
    p = folder / "scenes.json"
    if not p.is_file():
        report.append(f"{folder}: no scenes/*.json and no scenes.json; folder skipped")
        return []
    try:
        d = json.loads(p.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as e:
        report.append(f"{p}: unreadable scene file ({e}); folder skipped")
        return []
    scenes = d.get("scenes", d) if isinstance(d, dict) else d
    if not isinstance(scenes, list):
        report.append(f"{p}: expected a list of scenes; folder skipped")
        return []
    for i, s in enumerate(scenes):
        if isinstance(s, dict):
            entries.append((f"{p}[{i}]", s))
        else:
            report.append(f"{p}[{i}]: not a JSON object; skipped")
    return entries


def mask_path(folder: Path, scene: dict[str, Any], image_name: str) -> Path:
    """Where a scene's instance mask lies: its ``mask_filename``, else ``masks/`` + the image's name."""
    return Path(folder) / (scene.get("mask_filename") or f"masks/{image_name}")


def _record(folder: Path, source: str, s: dict[str, Any], cls: dict[str, tuple[str, ...]]) -> Record:
    """A `Record` from one scene dict, or ValueError naming what is wrong."""
    from logicval_hf.perception import load_image

    name = s.get("image_filename")
    if not isinstance(name, str) or not name:
        raise ValueError("no image_filename")
    objs = s.get("objects")
    if not isinstance(objs, list):
        raise ValueError("no objects list")
    path = folder / "images" / name
    rgb = load_image(path)  # PerceptionError (a ValueError) names the file
    H, W = rgb.shape[:2]
    mask = None
    mpath = mask_path(folder, s, name)
    if mpath.is_file():
        from PIL import Image

        try:
            with Image.open(mpath) as m:
                mask = np.asarray(m)
        except (OSError, ValueError) as e:
            raise ValueError(f"unreadable mask {mpath} ({e})") from None
        if mask.ndim != 2 or mask.shape != (H, W):
            raise ValueError(f"mask {mpath} is {mask.shape[1::-1]}, image {W}x{H} (expected one 8-bit channel)")
    centres, sizes, labels = [], [], []
    for i, o in enumerate(objs):
        lab = []
        for a in ATTRIBUTES:
            v = o.get(a)
            if a == "size" and v is None:
                lab.append(-1)
                continue
            if v not in cls[a]:
                raise ValueError(f"object {i}: {a} {v!r} is not one of {list(cls[a])}")
            lab.append(cls[a].index(v))
        pc = o.get("pixel_coords")
        if not (isinstance(pc, list) and len(pc) >= 2 and all(isinstance(x, (int, float)) for x in pc[:2])):
            raise ValueError(f"object {i}: no pixel_coords")
        cx, cy = float(pc[0]), float(pc[1])
        if not (0 <= cx < W and 0 <= cy < H):
            raise ValueError(f"object {i}: pixel_coords {pc[:2]} outside the {W}x{H} image")
        box = o.get("bbox_xyxy")
        if box is None:
            if mask is None:
                raise ValueError(f"object {i}: no bbox_xyxy and no mask {mpath}")
            box = _bbox_from_mask(mask, int(o.get("mask_index", i + 1)))
            if box is None:
                raise ValueError(f"object {i}: empty in the mask")
        if not (isinstance(box, list) and len(box) == 4 and box[2] >= box[0] and box[3] >= box[1]):
            raise ValueError(f"object {i}: bad bbox_xyxy {box!r}")
        centres.append((cx, cy))
        sizes.append((box[2] - box[0] + 1.0, box[3] - box[1] + 1.0))  # inclusive pixel bounds
        labels.append(lab)
    objmap = None
    if mask is not None:
        objmap = np.full(mask.shape, -1, np.int16)
        objmap[mask > 0] = -2  # values no object claims: uncounted things (the objects' own are set below)
        for i, o in enumerate(objs):
            objmap[mask == int(o.get("mask_index", i + 1))] = i
    world = (s.get("render_settings") or {}).get("world") or {}
    return Record(name, rgb, np.array(centres, float).reshape(-1, 2), np.array(sizes, float).reshape(-1, 2),
                  np.array(labels, int).reshape(-1, 4), objmap, world.get("kind") if isinstance(world, dict) else None)


def load_folder(folder: Path, report: list[str] | None = None, first: int | None = None,
                who: str = "train_scene_parser") -> list[Record]:
    """Every usable scene of a CLEVR-layout folder, sorted by image name (only the ``first`` scenes by name when
    given). Problems go to ``report`` (one line naming the file) and to stderr, prefixed with ``who`` (the
    program reading); the scene is skipped."""
    folder = Path(folder)
    report = [] if report is None else report
    cls = classes()
    out = []
    entries = sorted(_scene_entries(folder, report), key=lambda e: str(e[1].get("image_filename", "")))
    for source, s in entries[:first] if first else entries:
        try:
            out.append(_record(folder, source, s, cls))
        except ValueError as e:
            report.append(f"{source} ({s.get('image_filename', '?')}): {e}; skipped")
    for line in report:
        print(f"{who}: {line}", file=sys.stderr)
    return sorted(out, key=lambda r: r.name)


def dataset_name(path: Path) -> str:
    """How provenance names a data folder: relative to a stated root, never as an absolute path of the machine
    it was trained on (``$SHARED/...`` under the data root of docs/data.md, e.g. ``$SHARED/data/clevr_blender``,
    else ``$RENDERS/<name>``: the folder `logicval render-clevr` wrote the renders to)."""
    resolved = Path(path).resolve()
    shared = DEFAULT_DATA.parents[1].resolve()
    if resolved.is_relative_to(shared):
        return "$SHARED/" + resolved.relative_to(shared).as_posix()
    return "$RENDERS/" + resolved.name


def parse_held_out_folder(text: str) -> tuple[Path, float]:
    """``DIR[:FRACTION]``: a CLEVR-layout folder and the last share of it by name to read (default 1: all of it),
    as `split_holdout` splits it. A colon belongs to the folder's name when what follows it is not a number and
    the whole text names a folder.

    Raises:
        ValueError: the folder does not exist, FRACTION is not a number or lies outside (0, 1].
    """
    text = str(text)
    folder, colon, tail = text.rpartition(":")
    if not colon:
        folder, fraction = text, 1.0
    else:
        try:
            fraction = float(tail)
        except ValueError:
            if not Path(text).is_dir():
                raise ValueError(f"{text!r}: FRACTION must be a number, got {tail!r}") from None
            folder, fraction = text, 1.0
    if not Path(folder).is_dir():
        raise ValueError(f"{folder!r}: no such folder")
    if not 0 < fraction <= 1:
        raise ValueError(f"{text!r}: FRACTION must lie in (0, 1], got {fraction:g}")
    return Path(folder), fraction


def split_holdout(records: list[Record], fraction: float) -> tuple[list[Record], list[Record]]:
    """The last ``fraction`` of a folder's records (by name) are held out; at least one when there are two."""
    k = round(len(records) * fraction)
    if fraction > 0 and k == 0 and len(records) >= 2:
        k = 1
    return (records[:len(records) - k], records[len(records) - k:]) if k else (records, [])


def random_layout(rng: np.random.Generator, k: int, size: tuple[int, int], cls: dict[str, tuple[str, ...]]):
    """A layout request for the numpy renderer: ``k`` objects, random attributes, centres anywhere (the
    renderer spaces them and returns the boxes it drew)."""
    from logicval_hf.contract.scene import Scene, SceneObject

    W, H = size
    objs = []
    for _ in range(k):
        cx, cy = rng.uniform(0.04 * W, 0.96 * W), rng.uniform(0.06 * H, 0.94 * H)
        attrs = {a: cls[a][rng.integers(len(cls[a]))] for a in ("color", "shape", "material")}
        objs.append(SceneObject(attrs, (cx - 10, cy - 10, cx + 10, cy + 10)))
    return Scene((W, H), tuple(objs))


def numpy_render(seed: Sequence[int], min_objects: int = 1, max_objects: int = 9) -> Record:
    """One scene of the project's numpy renderer; truth = the drawn scene (box centres, as the main job scores
    them). About one in four is 320x240 (drawn at random), the rest 480x320 (the main job's size)."""
    from logicval_hf.generation.render import render_scene

    cls = classes()
    rng = np.random.default_rng(list(seed))
    size = (320, 240) if rng.random() < 0.25 else (480, 320)
    spec = random_layout(rng, int(rng.integers(min_objects, max_objects + 1)), size, cls)
    img, drawn = render_scene(spec, size, seed=int(rng.integers(2**31)))
    centres, sizes, labels = [], [], []
    for o in drawn.objects:
        x0, y0, x1, y1 = o.bbox
        centres.append(((x0 + x1) / 2, (y0 + y1) / 2))
        sizes.append((x1 - x0, y1 - y0))
        labels.append([cls[a].index(o.attributes[a]) for a in ("color", "shape", "material")] + [-1])
    return Record(f"numpy-{'-'.join(map(str, seed))}", np.asarray(img.convert("RGB")),
                  np.array(centres, float).reshape(-1, 2), np.array(sizes, float).reshape(-1, 2),
                  np.array(labels, int).reshape(-1, 4))


@dataclass(frozen=True)
class DataFolder:
    """A ``--data`` argument: a render folder, optionally only its first ``first`` scenes by file name (a folder
    still being rendered is then read the same way by every rerun) and a sampling ``weight`` (its share of the
    batches' rendered images, relative to the other folders'; default: in proportion to its size)."""

    path: Path
    first: int | None = None
    weight: float | None = None

    def __str__(self) -> str:
        return str(self.path)


def parse_data_folder(text: str) -> DataFolder:
    """``PATH``, or ``PATH#first=N,weight=W`` (either key optional).

    Raises:
        ValueError: an unknown key or a value that is not a positive number.
    """
    path, _, opts = str(text).partition("#")
    first: int | None = None
    weight: float | None = None
    for part in filter(None, opts.split(",")):
        key, _, value = part.partition("=")
        try:
            if key == "first":
                first = int(value)
                ok = first >= 1
            elif key == "weight":
                weight = float(value)
                ok = weight > 0
            else:
                raise ValueError(f"--data {text!r}: unknown option {key!r} (known: first, weight)")
        except ValueError as e:
            if "unknown option" in str(e):
                raise
            ok = False
        if not ok:
            raise ValueError(f"--data {text!r}: {key} must be a positive number, got {value!r}")
    return DataFolder(Path(path), first, weight)


@dataclass
class FolderSplit:
    """One --data folder read and split: its usable scenes, the training part and the held-out part (the last
    `VAL_FRACTION` by name)."""

    folder: DataFolder
    scenes: list[Record]
    train: list[Record]
    held_out: list[Record]

    def provenance(self) -> dict[str, Any]:
        """What a model file records about the folder (its name relative to a stated root, `dataset_name`), and
        where its scenes record a world kind, the training scenes per kind (``worlds``)."""
        out = {"folder": dataset_name(self.folder.path), "first": self.folder.first, "weight": self.folder.weight,
               "scenes": len(self.scenes), "train": len(self.train), "held_out": len(self.held_out)}
        worlds = Counter(r.world for r in self.train if r.world is not None)
        return {**out, "worlds": dict(sorted(worlds.items()))} if worlds else out


def split_folders(folders: Sequence[DataFolder] | None, who: str, report: list[str] | None = None
                  ) -> list[FolderSplit]:
    """Every --data folder (None: `DEFAULT_DATA`) read (`load_folder`, problems to ``report`` and stderr under
    ``who``) and split."""
    out = []
    for f in folders or [DataFolder(DEFAULT_DATA)]:
        scenes = load_folder(f.path, report, f.first, who)
        out.append(FolderSplit(f, scenes, *split_holdout(scenes, VAL_FRACTION)))
    return out


def record_weights(folders: Sequence[tuple[DataFolder, int]]) -> np.ndarray | None:
    """Per training item (record or object, ``n`` per folder, in folder order), the probability of drawing it:
    each folder's ``weight`` (1 where a folder has none; weights are relative) spread evenly over its items.
    None when no folder has a weight: every item equally likely."""
    if all(f.weight is None for f, _ in folders):
        return None
    parts = [np.full(n, (f.weight if f.weight is not None else 1.0) / n) for f, n in folders if n]
    p = np.concatenate(parts) if parts else np.zeros(0)
    return p / p.sum() if p.sum() > 0 else None
