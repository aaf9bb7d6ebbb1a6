"""The real text-to-image development set's manifest: one JSON object a line (``manifest.jsonl`` beside this file),
each an image a public text-to-image model drew, where it comes from and what it shows, labelled by eye.

Read by `rebuild.py` (which brings the images back from their sources) and by ``benchmarks/real_t2i_perception.py``
(which measures a perception backend on them); `validate` is what the tests hold the committed manifest to.

An entry (every key required unless marked optional):

* ``id``: unique, lowercase letters, digits and dashes; the rebuilt file is ``<id>.png`` (a crop) or ``<id><source
  extension>`` (the source file as it is).
* ``repository`` (``owner/name`` on GitHub), ``path`` (inside it), ``commit`` (40 hex digits): the source file.
* ``licence``: the repository's licence as an SPDX identifier, ``NOASSERTION`` where it states none.
* ``model``: the text-to-image model that drew it, as its source names it; ``prompt``: the text it was given (the
  instructions so far, for a model that draws in turns), or null where the source does not record it (then
  ``notes`` says why).
* ``crop``: ``[x0, y0, x1, y1]`` in the source's pixels (one sample cut out of a grid or a figure), or null.
* ``sha256``: of the source file's bytes; ``crop_sha256``: of the crop's pixels (`pixels_sha256`), null without a
  crop. ``size``: ``[width, height]`` of the rebuilt image.
* ``split``: ``dev`` (the part choices may look at) or ``heldout`` (only ever measured); whole repositories, and
  repositories of one source group, sit in one part. ``source_group``: the name that groups them.
* ``kinds``: what makes it hard (`KINDS`); ``plain`` stands alone.
* ``objects``: every object the image shows, reflections never: ``{"color", "shape", "material"}`` with the
  domain's values, ``material`` null where it cannot be told (glass, translucent plastic, too small or soft),
  ``color`` or ``shape`` null only where they cannot be decided (``undecided`` then says so); an object outside
  the vocabulary has ``"in_vocabulary": false`` and a ``description`` (a cone, a black ball, a die), its
  ``color``/``shape`` set only where they are the domain's values. An optional ``note`` per object.
* ``undecided``: what could not be decided (empty string when nothing); ``notes`` (optional): anything else.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.jsonl"

SPLITS = ("dev", "heldout")
#: the kinds of difficulty an image is tagged with (issue 56's list); ``plain`` only where none applies
KINDS = ("glossy_floor", "coloured_light", "glass", "stacked", "cut_by_frame", "pips_decals", "small_soft", "room",
         "out_of_vocabulary", "plain")
REQUIRED = ("id", "repository", "path", "commit", "licence", "model", "prompt", "crop", "sha256", "crop_sha256",
            "size", "split", "source_group", "kinds", "objects", "undecided")
OPTIONAL = ("notes",)
OBJECT_KEYS = ("color", "shape", "material", "in_vocabulary", "description", "note")
ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
HEX40 = re.compile(r"^[0-9a-f]{40}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")
REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
SPDX = re.compile(r"^[A-Za-z0-9.+-]+$")


def vocabulary() -> dict[str, tuple[str, ...]]:
    """The domain's perceived values: colour, shape and material (the shipped catalog's CLEVR domain)."""
    from logicval_hf.contract.catalog import load_catalog

    dom = load_catalog().domain
    return {a: tuple(dom.attributes[a]) for a in dom.perceived_attributes}


def load(path: str | Path = MANIFEST) -> list[dict[str, Any]]:
    """The entries of a manifest file, in file order.

    Raises:
        ValueError: a line is not a JSON object (named by its line number).
    """
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e})") from None
        if not isinstance(entry, dict):
            raise ValueError(f"{path}:{n}: not a JSON object")
        out.append(entry)
    return out


def load_valid(path: str | Path = MANIFEST) -> list[dict[str, Any]]:
    """The entries of a manifest file that `validate` accepts.

    Raises:
        ValueError: the file cannot be read, a line is not a JSON object, or the manifest is not valid (one line
            naming the first problem and how many more there are).
    """
    try:
        entries = load(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the manifest: {e}") from None
    problems = validate(entries)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValueError(f"the manifest is not valid: {problems[0]}{more}")
    return entries


def pixels_sha256(rgb: Any) -> str:
    """sha256 of an image's pixels: its height and width (big-endian 32 bits each), then its RGB bytes in row order
    (``rgb``: uint8 H x W x 3). Independent of how the pixels were stored, so a crop saved by any PNG encoder has
    the same digest."""
    import numpy as np

    a = np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8))
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"expected H x W x 3 pixels, got shape {a.shape}")
    h = hashlib.sha256(a.shape[0].to_bytes(4, "big") + a.shape[1].to_bytes(4, "big"))
    h.update(a.tobytes())
    return h.hexdigest()


def file_name(entry: dict[str, Any]) -> str:
    """The rebuilt image's file name: ``<id>.png`` for a crop, else the id with the source's extension."""
    return entry["id"] + (".png" if entry["crop"] is not None else Path(entry["path"]).suffix.lower())


def in_vocabulary(obj: dict[str, Any]) -> bool:
    return bool(obj.get("in_vocabulary", True))


def _check_object(obj: Any, where: str, vocab: dict[str, tuple[str, ...]]) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: not an object"]
    problems = [f"{where}: unknown key {k!r}" for k in obj if k not in OBJECT_KEYS]
    missing = [k for k in ("color", "shape", "material") if k not in obj]
    if missing:
        problems.append(f"{where}: missing {', '.join(missing)}")
    inside = in_vocabulary(obj)
    if not isinstance(obj.get("in_vocabulary", True), bool):
        problems.append(f"{where}: in_vocabulary must be true or false")
    if not inside and not (isinstance(obj.get("description"), str) and obj["description"].strip()):
        problems.append(f"{where}: an object outside the vocabulary needs a description")
    for attr in ("color", "shape", "material"):
        value = obj.get(attr)
        if value is not None and value not in vocab[attr]:
            problems.append(f"{where}: {attr} {value!r} is not one of {', '.join(vocab[attr])}")
    return problems


def validate(entries: Sequence[dict[str, Any]], vocab: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Every problem of a manifest, one line each (empty: valid): keys, source fields, digests, crop, split,
    kinds, labels against the domain's vocabulary, unique ids, and one part per source group and repository."""
    vocab = vocab or vocabulary()
    problems: list[str] = []
    seen: set[str] = set()
    part_of: dict[str, dict[str, str]] = {"repository": {}, "source_group": {}}
    for n, e in enumerate(entries, 1):
        where = f"entry {n} ({e.get('id', '?')})"
        problems += [f"{where}: missing {k}" for k in REQUIRED if k not in e]
        problems += [f"{where}: unknown key {k!r}" for k in e if k not in REQUIRED + OPTIONAL]
        if any(k not in e for k in REQUIRED):
            continue
        if not (isinstance(e["id"], str) and ID.match(e["id"])):
            problems.append(f"{where}: id must be lowercase letters, digits and dashes")
        elif e["id"] in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(str(e["id"]))
        if not (isinstance(e["repository"], str) and REPO.match(e["repository"])):
            problems.append(f"{where}: repository must be owner/name")
        if not (isinstance(e["path"], str) and e["path"] and not e["path"].startswith("/") and ".." not in
                e["path"].split("/")):
            problems.append(f"{where}: path must be a relative path inside the repository")
        if not (isinstance(e["commit"], str) and HEX40.match(e["commit"])):
            problems.append(f"{where}: commit must be 40 lowercase hex digits")
        if not (isinstance(e["licence"], str) and SPDX.match(e["licence"])):
            problems.append(f"{where}: licence must be an SPDX identifier or NOASSERTION")
        for key in ("model", "source_group"):
            if not (isinstance(e[key], str) and e[key].strip()):
                problems.append(f"{where}: {key} must be a non-empty string")
        if e["prompt"] is None:
            if not (isinstance(e.get("notes"), str) and e["notes"].strip()):
                problems.append(f"{where}: a missing prompt needs notes saying why")
        elif not (isinstance(e["prompt"], str) and e["prompt"].strip()):
            problems.append(f"{where}: prompt must be a non-empty string or null")
        if not (isinstance(e["sha256"], str) and HEX64.match(e["sha256"])):
            problems.append(f"{where}: sha256 must be 64 lowercase hex digits")
        crop = e["crop"]
        if crop is None:
            if e["crop_sha256"] is not None:
                problems.append(f"{where}: crop_sha256 without a crop")
        else:
            if not (isinstance(crop, list) and len(crop) == 4 and all(type(v) is int and v >= 0 for v in crop)
                    and crop[2] > crop[0] and crop[3] > crop[1]):
                problems.append(f"{where}: crop must be [x0, y0, x1, y1] whole pixels with x1 > x0, y1 > y0")
            if not (isinstance(e["crop_sha256"], str) and HEX64.match(e["crop_sha256"])):
                problems.append(f"{where}: a crop needs crop_sha256 (64 lowercase hex digits)")
        size = e["size"]
        if not (isinstance(size, list) and len(size) == 2 and all(type(v) is int and v > 0 for v in size)):
            problems.append(f"{where}: size must be [width, height]")
        elif (isinstance(crop, list) and len(crop) == 4 and all(type(v) is int for v in crop)
              and size != [crop[2] - crop[0], crop[3] - crop[1]]):
            problems.append(f"{where}: size {size} is not the crop's {[crop[2] - crop[0], crop[3] - crop[1]]}")
        if e["split"] not in SPLITS:
            problems.append(f"{where}: split must be one of {', '.join(SPLITS)}")
        kinds = e["kinds"]
        if not (isinstance(kinds, list) and kinds and all(k in KINDS for k in kinds) and len(set(kinds)) == len(kinds)):
            problems.append(f"{where}: kinds must be a non-empty list of distinct values of {', '.join(KINDS)}")
        elif "plain" in kinds and len(kinds) > 1:
            problems.append(f"{where}: plain stands alone")
        objects = e["objects"]
        if not isinstance(objects, list):
            problems.append(f"{where}: objects must be a list")
        else:
            for k, obj in enumerate(objects):
                problems += _check_object(obj, f"{where} object {k}", vocab)
            oov = any(isinstance(o, dict) and not in_vocabulary(o) for o in objects)
            if isinstance(kinds, list) and oov != ("out_of_vocabulary" in kinds):
                problems.append(f"{where}: out_of_vocabulary is in kinds exactly when an object is outside "
                                "the vocabulary")
            undecided_attr = any(isinstance(o, dict) and in_vocabulary(o)
                                 and (o.get("color") is None or o.get("shape") is None) for o in objects)
            if undecided_attr and not (isinstance(e["undecided"], str) and e["undecided"].strip()):
                problems.append(f"{where}: an undecided colour or shape needs the undecided note")
        if not isinstance(e["undecided"], str):
            problems.append(f"{where}: undecided must be a string")
        if e["split"] in SPLITS:
            for key in ("repository", "source_group"):
                first = part_of[key].setdefault(str(e[key]), e["split"])
                if first != e["split"]:
                    problems.append(f"{where}: {key} {e[key]!r} has images in both parts")
    return problems


def select(entries: Iterable[dict[str, Any]], split: str | None = None) -> list[dict[str, Any]]:
    """The entries of ``split`` (``dev``, ``heldout``; None or ``all``: every entry)."""
    return [e for e in entries if split in (None, "all") or e["split"] == split]
