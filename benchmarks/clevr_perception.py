"""Measure a perception backend on real CLEVR images (or on held-out renders) against their official scenes.

    python benchmarks/clevr_perception.py [DATA_DIR] [--backend clevr] [--json out.json]
    python benchmarks/clevr_perception.py --renders $SHARED/data/clevr_blender [--holdout-fraction 0.05]
    python benchmarks/clevr_perception.py --oracle varied [--jpeg 90]

``--suite``: every set in one run (the figures of the model card): real CLEVR; each shift of `SHIFTS` applied to
real CLEVR (square frame with no object cut, exposure and brightness x0.7 / x1.3, saturation x0.6, warm and cool
tints, blur, noise, JPEG q50); held-out renders of each render profile (``--suite-renders NAME=DIR[:FRACTION]``,
repeatable; by default ``$SHARED/data/clevr_blender``'s training hold-out and, of the folders under
``--renders-root`` (default ``$LOGICVAL_RENDERS``), those of `HELD_OUT_SETS` that exist); per set count,
attribute, region and exact rates, verdict agreement (relaxed and strict count), the scene confidence's
calibration (expected calibration error against exact scene graphs, 10 bins) and images/s; plus the speed on
512x512 images (the t2i renders resized), batched and one by one.

    python benchmarks/clevr_perception.py --suite --renders-root $RENDERS [--json suite.json]
    python benchmarks/clevr_perception.py --suite --backend neural --set detector=DIR --set clip_pretrained=FILE

Any registered backend is measured the same way (``--backend``, its settings with ``--set`` or ``--setting``): the
``neural`` backend (Grounding DINO + CLIP) with its weights given by path, batched against one image at a time;
the ``vlm`` backend (a grounding VLM behind an OpenAI-compatible endpoint, docs/vlm.md)::

    python benchmarks/clevr_perception.py --backend vlm --setting url=http://127.0.0.1:8000/v1 \
        --setting model=Qwen/Qwen2.5-VL-7B-Instruct --setting multiple_of=28 --json vlm.json

An image the backend could not read (a VLM's malformed answer, a request that timed out) is scored as an empty
scene and listed under ``unread_images`` with its error; the others are measured as usual.

DATA_DIR is a folder in CLEVR's layout (``scenes.json`` in CLEVR's scene format, ``images/``);
``benchmarks/clevr_layout.py`` lays out images of the official CLEVR v1.0 release that way (docs/data.md).
``$SHARED`` is the data root, ``$LOGICVAL_SHARED_DATA`` (else the folder ``shared`` beside the checkout); DATA_DIR
defaults to its ``data/clevr_dev``, the model card's real-CLEVR set: 170 images (100 CLEVR v1.0 train images at
480x320, 70 images of the official generator at 320x240). No perception model of this project is trained or
tuned on real CLEVR.

``--renders DIR``: a folder of renders in the CLEVR layout (``images/``, ``scenes/*.json`` or
``scenes.json``) instead; by default only its last ``--holdout-fraction`` by file name, which is exactly the
part the scene parser's training holds out (``--holdout-fraction 1`` = the whole folder, e.g. a fresh
``logicval render-clevr --randomise`` folder). ``--oracle varied|raw``: the main job's oracle images of the
default benchmark's SAT specs (truth = the drawn scene); ``--jpeg Q`` re-encodes every image as JPEG at
quality Q first (any mode). With ``--oracle`` the main job's own figure is printed too: the oracle SAT score
(the strict verdict of each row's own spec on the perceived scene).

Matching: predicted box centres are matched to the true centres (``pixel_coords``, the projected 3D centre)
by the Hungarian method; pairs farther apart than 8 % of the image width count as unmatched. Truth regions
come from ``pixel_coords`` (docs/regions.md §6), predicted regions from the predicted box centre.

Printed (and written with ``--json``): count accuracy; detection recall / precision; per-attribute accuracy on
matched objects; region accuracy on matched objects; exact scene-graph rate (right count and every object's
colour, shape, material and region right) overall and by object count; verdict agreement on sampled
constraints (``--constraints`` per image, drawn uniformly over the catalog's templates with
`logicval_hf.contract.params.random_constraint` at ``n`` = the true count clipped to the catalog's range,
seeded: ``verify(spec, truth)`` vs ``verify(spec, predicted)``, relaxed count, and strict count for images whose
true count is inside the range); images/s batched (one ``extract_scenes`` call: the backend's
``extract_batch``) vs a per-image loop (``extract_scene`` per image), images decoded beforehand in both; the
worst images. The exact rate is also split by the images' sorted names into the even half (the only one
model choices were made on: which checkpoint, which option ships) and the odd half (never looked at for a
choice: the untuned figure).

Diagnostics beside the exact rate (never in its place): each wrong image's errors sorted into kinds (an
attribute, region, missed, spurious; on render folders with instance masks marked when the object shows fewer
pixels than CLEVR's generator allows, 200 at 480x320, or its projected centre lies on another object), and the
exact rate had the errors whose truth the pixels cannot settle been forgiven: region slips of centres within
1 px of a midline (CLEVR rounds centres to whole pixels) and slips on objects below that visibility floor.

Per render set, the materials' whole confusion matrix on matched objects (``material_confusion``: true ->
read), and where the scenes record the kinds their profile drew (``render_settings.world.kind`` of profile
``t2i_world``, ``render_settings.floor``, ``render_settings.variations``), per ``world=KIND``, ``floor=KIND``
and ``variation=NAME`` the images with the count right, the exact images and the matched metal objects read as
rubber (``by_group``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from logicval_hf import Scene, SceneObject  # noqa: E402
from logicval_hf.common.matching import match_centres  # noqa: E402
from logicval_hf.perception import PerceptionError, extract_scenes, get_backend, load_image  # noqa: E402
from logicval_hf.perception.scene_parser import attribute_model_beside  # noqa: E402

ATTRS = ("color", "shape", "material")
#: the data root (docs/data.md): $LOGICVAL_SHARED_DATA, else the folder "shared" beside the checkout
SHARED = Path(os.environ.get("LOGICVAL_SHARED_DATA") or REPO.parent / "shared")
DEFAULT_DATA = SHARED / "data" / "clevr_dev"


def region_of(cx: float, cy: float, w: float, h: float) -> str:
    from logicval_hf.contract.spatial import region_of as rg

    return rg(cx, cy, w, h)


def match_radius(width: float) -> float:
    return 0.08 * width


#: CLEVR's own generator keeps a scene only when every object shows at least 200 pixels at 480x320
VISIBILITY_FLOOR = 200 / (480 * 320)
#: the errors the truth itself cannot settle from the pixels (see ``error_kind``): a region slip at a midline,
#: and any error on an object below the visibility floor (the suffix its kind carries)
MIDLINE = "region (centre within 1 px of the midline)"
BELOW_FLOOR = " (below CLEVR's visibility floor)"


def object_note(o: dict[str, Any], j: int, W: int, H: int) -> str:
    """What makes truth object ``j`` hard to read, from its render's instance mask (render folders only):
    fewer pixels showing than CLEVR's generator allows, or its projected centre lying on another object."""
    shown = o.get("_pixels_shown")
    if shown is not None and shown < VISIBILITY_FLOOR * W * H:
        return BELOW_FLOOR
    at_centre = o.get("_centre_shows")
    if at_centre is not None and at_centre >= 0 and at_centre != j:
        return " (centre hidden)"
    return ""


def error_kind(kind: str, o: dict[str, Any], j: int, W: int, H: int, predicted: tuple[float, float] | None = None
               ) -> str:
    """The kind of one error on truth object ``j`` (``kind``: an attribute, "region" or "missed"). A region
    slip is told apart when the truth's centre lies within 1 px of each midline the slip crosses: CLEVR rounds
    centres to whole pixels, so there the truth is a sub-pixel call no reading of the image can settle."""
    if kind == "region" and predicted is not None:
        tx, ty = (float(v) for v in o["pixel_coords"][:2])
        crossed = [abs(t - m) for t, q, m in ((tx, predicted[0], W / 2), (ty, predicted[1], H / 2))
                   if (t < m) != (q < m)]
        if crossed and max(crossed) <= 1.0:
            return MIDLINE
        return "region"
    return kind + object_note(o, j, W, H)


def unsettled(kinds: list[str]) -> bool:
    """Every error of an image is one its truth cannot settle (`MIDLINE`, `BELOW_FLOOR`)."""
    return bool(kinds) and all(k == MIDLINE or k.endswith(BELOW_FLOOR) for k in kinds)


# ---- data -----------------------------------------------------------------------------------------------
def load_clevr(data: Path) -> list[dict[str, Any]]:
    scenes = json.loads((data / "scenes.json").read_text())
    scenes = scenes.get("scenes", scenes) if isinstance(scenes, dict) else scenes
    out = []
    for s in scenes:
        rgb = load_image(data / "images" / s["image_filename"])
        out.append(dict(s, image_height=rgb.shape[0], image_width=rgb.shape[1], _rgb=rgb))
    return out


def centre_owners(objmap: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(K,) per centre (x, y in pixels, clipped into the map) the index of the object its pixel shows (-1: the
    floor). An object whose own index is not there has its projected centre on another object: it is behind it."""
    if len(centres) == 0:
        return np.zeros(0, np.int64)
    h, w = objmap.shape
    xs = np.clip(np.asarray(centres, float)[:, 0].astype(np.int64), 0, w - 1)
    ys = np.clip(np.asarray(centres, float)[:, 1].astype(np.int64), 0, h - 1)
    return objmap[ys, xs].astype(np.int64)


def render_groups(folder: Path) -> dict[str, dict[str, Any]]:
    """Per image file name, the kinds its render drew that the figures are broken down by: the world kind
    (profile t2i_world) and the floor kind (t2i-style profiles, randomise), where the scene records them, and
    the list of variations it got (``variation``; profile t2i_real and ``--variations``) where it records them."""
    def read(path: Path) -> Any:  # an unreadable file is skipped here; `load_renders` reports it
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    scenes = [read(f) for f in sorted((folder / "scenes").glob("*.json"))]
    if not scenes and (folder / "scenes.json").is_file():
        combined = read(folder / "scenes.json")
        scenes = combined.get("scenes", []) if isinstance(combined, dict) else combined or []
    out = {}
    for sc in scenes:
        if not isinstance(sc, dict):
            continue
        rs = sc.get("render_settings") or {}
        floor = rs.get("floor")
        groups = {"world": (rs.get("world") or {}).get("kind"),
                  "floor": floor.get("kind") if isinstance(floor, dict) else floor}
        entry: dict[str, Any] = {k: v for k, v in groups.items() if isinstance(v, str)}
        drawn = rs.get("variations")
        if isinstance(drawn, dict):  # the variations the image got (`logicval render-clevr --variations`)
            entry["variation"] = sorted(k for k, v in drawn.items() if v is not None)
        out[sc.get("image_filename", "")] = entry
    return out


def load_renders(folder: Path, fraction: float) -> list[dict[str, Any]]:
    """The held-out part of a render folder, split as the scene parser's training splits it."""
    from logicval_hf.training.parser_data import classes, load_folder, split_holdout

    recs = load_folder(folder, who="clevr_perception.py")
    _, held = split_holdout(recs, fraction) if fraction < 1 else ([], recs)
    cls = classes()
    groups = render_groups(Path(folder))
    out = []
    for r in held:
        objs = [{"pixel_coords": [float(c[0]), float(c[1]), 0.0],
                 **{a: cls[a][int(lab[k])] for k, a in enumerate(ATTRS)},
                 "size": cls["size"][int(lab[3])] if lab[3] >= 0 else "-"}
                for c, lab in zip(r.centres, r.labels, strict=True)]
        if r.mask is not None:  # what each object shows, for the error kinds (`object_note`)
            shown = np.bincount(r.mask[r.mask >= 0].ravel(), minlength=len(objs))
            for o, n, at in zip(objs, shown, centre_owners(r.mask, r.centres), strict=True):
                o["_pixels_shown"], o["_centre_shows"] = int(n), int(at)
        out.append({"image_filename": r.name, "image_width": r.rgb.shape[1], "image_height": r.rgb.shape[0],
                    "objects": objs, "_rgb": r.rgb, "_groups": groups.get(r.name, {})})
    return out


def load_oracle(witness: str) -> list[dict[str, Any]]:
    from logicval_hf.benchmark.sampler import cached_benchmark
    from logicval_hf.generation.builtin import OracleGenerator

    gen = OracleGenerator(vary_witness=witness == "varied")
    out = []
    for row in cached_benchmark().all_rows():
        if row["label"] != "SAT":
            continue
        image, drawn, _ = gen.generate(row)
        W, H = image.size
        objs = [{"pixel_coords": [*o.center, 0.0], **{a: o.attributes[a] for a in ATTRS}} for o in drawn.objects]
        out.append({"image_filename": f"{row['id']}.png", "image_width": W, "image_height": H, "objects": objs,
                    "_rgb": np.asarray(image.convert("RGB")), "_spec": row["spec_json"]})
    return out


def jpeg(rgb: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG", quality=quality)
    buf.seek(0)
    return np.asarray(Image.open(buf).convert("RGB"))


# ---- shifts of real CLEVR ----------------------------------------------------------------------------------
# The ways text-to-image output differs from CLEVR v1.0, applied to a real image whose scene graph is known. Each
# shift is deterministic (noise from a fixed seed) and returns the shifted image and the objects' centres in it.
# Only "square" moves pixels: it crops the largest square that cuts no object (objects' extents estimated from
# their depth as CLEVR's camera sees them), or refuses the image (`ShiftRefused`) when every square would cut one.

#: CLEVR's camera: 35 mm lens on a 32 mm sensor fitted to the image width
CLEVR_FOCAL_PER_WIDTH = 35.0 / 32.0
#: how far an object reaches from its centre, in object radii (a cube's corners, a little margin)
REACH = 1.6
LARGE_RADIUS = 0.7


class ShiftRefused(ValueError):
    """The shift cannot be applied to this image (every square frame would cut an object)."""


def object_extent(centre: Sequence[float], width: int, radius: float = LARGE_RADIUS) -> float:
    """Half the extent in pixels of an object of world ``radius`` at CLEVR's ``pixel_coords`` ``centre``
    (x, y, depth); without a depth, a tenth of the width."""
    if len(centre) < 3 or not centre[2] or centre[2] <= 0:
        return 0.1 * width
    return CLEVR_FOCAL_PER_WIDTH * width * radius * REACH / float(centre[2])


def square_frame(rgb: np.ndarray, centres: Sequence[Sequence[float]], radii: Sequence[float] | None = None
                 ) -> tuple[np.ndarray, list[list[float]]]:
    h, w = rgb.shape[:2]
    side = min(h, w)
    ext = [object_extent(c, w, radii[i] if radii else LARGE_RADIUS) for i, c in enumerate(centres)]
    horizontal = w >= h
    best, best_margin = 0, -np.inf
    for off in range((w if horizontal else h) - side + 1):  # the offset that keeps every object furthest inside
        margins = [min(v - e - off, off + side - v - e)
                   for v, e in zip((c[0] if horizontal else c[1] for c in centres), ext, strict=True)]
        m = min(margins) if margins else 0.0
        if m > best_margin:
            best, best_margin = off, m
    if best_margin < 0:
        raise ShiftRefused("every square frame cuts an object")
    if horizontal:
        return np.ascontiguousarray(rgb[:, best:best + side]), [[c[0] - best, *c[1:]] for c in centres]
    return np.ascontiguousarray(rgb[best:best + side]), [[c[0], c[1] - best, *c[2:]] for c in centres]


def linear_light(rgb: np.ndarray, gains: Sequence[float]) -> np.ndarray:
    """``rgb`` with each channel scaled by ``gains`` in linear light (exposure, or light of another colour)."""
    x = np.power(rgb.astype(np.float32) / 255.0, 2.2) * np.asarray(gains, np.float32)
    return (np.power(np.clip(x, 0, 1), 1 / 2.2) * 255 + 0.5).astype(np.uint8)


def _scale_values(rgb: np.ndarray, gains: Sequence[float]) -> np.ndarray:
    return np.clip(rgb.astype(np.float32) * np.asarray(gains, np.float32) + 0.5, 0, 255).astype(np.uint8)


def _saturation(rgb: np.ndarray, k: float) -> np.ndarray:
    x = rgb.astype(np.float32)
    grey = (x @ np.array([0.299, 0.587, 0.114], np.float32))[..., None]  # PIL's ImageEnhance.Color
    return np.clip(grey + k * (x - grey) + 0.5, 0, 255).astype(np.uint8)


def _blur(rgb: np.ndarray, sigma: float) -> np.ndarray:
    import cv2

    return cv2.GaussianBlur(rgb, (0, 0), sigma)


def _noise(rgb: np.ndarray, sigma: float) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.clip(rgb.astype(np.float32) + rng.normal(0, sigma, rgb.shape) + 0.5, 0, 255).astype(np.uint8)


#: the pixel-only shifts by name; "square" (`square_frame`) moves the centres too
PIXEL_SHIFTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exposure_0.7": lambda x: linear_light(x, (0.7, 0.7, 0.7)),
    "exposure_1.3": lambda x: linear_light(x, (1.3, 1.3, 1.3)),
    "brightness_0.7": lambda x: _scale_values(x, (0.7, 0.7, 0.7)),
    "brightness_1.3": lambda x: _scale_values(x, (1.3, 1.3, 1.3)),
    "saturation_0.6": lambda x: _saturation(x, 0.6),
    "tint_warm": lambda x: _scale_values(x, (1.08, 1.0, 0.85)),
    "tint_cool": lambda x: _scale_values(x, (0.88, 0.98, 1.1)),
    "blur_1.5": lambda x: _blur(x, 1.5),
    "noise_8": lambda x: _noise(x, 8.0),
    "jpeg_50": lambda x: jpeg(x, 50),
}
SHIFTS = ("square", *PIXEL_SHIFTS)


def apply_shift(name: str, rgb: np.ndarray, centres: Sequence[Sequence[float]], radii: Sequence[float] | None = None
                ) -> tuple[np.ndarray, list[list[float]]]:
    """Shift ``name`` applied to ``rgb`` (uint8 H x W x 3) with its objects' ``centres`` (CLEVR's ``pixel_coords``:
    x, y, depth) and world ``radii`` (CLEVR: 0.7 large, 0.35 small; default large).

    Raises:
        KeyError: an unknown shift.
        ShiftRefused: the shift does not apply to this image.
    """
    rgb = np.ascontiguousarray(rgb)
    if name == "square":
        return square_frame(rgb, centres, radii)
    return PIXEL_SHIFTS[name](rgb), [list(c) for c in centres]


def truth_scene(s: dict[str, Any]) -> Scene:
    """The official scene as a scene graph: boxes centred on ``pixel_coords`` (so regions and relations are
    those of the projected centres)."""
    W, H = s["image_width"], s["image_height"]
    objs = []
    for o in s["objects"]:
        cx, cy = o["pixel_coords"][:2]
        cx, cy = min(max(float(cx), 0.0), W - 1e-3), min(max(float(cy), 0.0), H - 1e-3)
        objs.append(SceneObject({a: o[a] for a in ATTRS}, (cx - 1, cy - 1, cx + 1, cy + 1)))
    return Scene((W, H), tuple(objs))


# ---- scoring --------------------------------------------------------------------------------------------
def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def score(scenes: list[dict[str, Any]], preds: list[Scene]) -> dict[str, Any]:
    n_img = len(scenes)
    count_ok = exact = 0
    n_true = n_pred = n_match = 0
    attr_ok: Counter = Counter()
    region_ok = 0
    confusions = {a: Counter() for a in ATTRS}
    materials: Counter = Counter()  # (true, read) on matched objects: the materials' whole confusion matrix
    per_image = []
    for s, p in zip(scenes, preds, strict=True):
        W, H = s["image_width"], s["image_height"]
        truth = s["objects"]
        tc = np.array([o["pixel_coords"][:2] for o in truth], float).reshape(-1, 2)
        pc = np.array([o.center for o in p.objects], float).reshape(-1, 2)
        pairs = match_centres(pc, tc, match_radius(W), assign_far=True)  # as the parser's validation
        n_true += len(truth)
        n_pred += len(p.objects)
        n_match += len(pairs)
        errors, kinds = [], []
        all_right = len(pairs) == len(truth) == len(p.objects)
        metal = metal_as_rubber = 0
        for i, j in pairs:
            materials[(truth[j]["material"], p.objects[i].attributes["material"])] += 1
            metal += truth[j]["material"] == "metal"
            metal_as_rubber += (truth[j]["material"], p.objects[i].attributes["material"]) == ("metal", "rubber")
            for a in ATTRS:
                pv, tv = p.objects[i].attributes[a], truth[j][a]
                if pv == tv:
                    attr_ok[a] += 1
                else:
                    all_right = False
                    confusions[a][(tv, pv)] += 1
                    errors.append(f"obj@{tuple(truth[j]['pixel_coords'][:2])} {a}: {tv} -> {pv}")
                    kinds.append(error_kind(a, truth[j], j, W, H))
            tr = region_of(*tc[j], W, H)
            pr = region_of(*p.objects[i].center, W, H)
            if tr == pr:
                region_ok += 1
            else:
                all_right = False
                errors.append(f"obj@{tuple(truth[j]['pixel_coords'][:2])} region: {tr} -> {pr}")
                kinds.append(error_kind("region", truth[j], j, W, H, p.objects[i].center))
        if len(p.objects) == len(truth):
            count_ok += 1
        else:
            errors.insert(0, f"count: {len(truth)} true, {len(p.objects)} predicted")
        matched_t = {b for _, b in pairs}
        for j in range(len(truth)):
            if j not in matched_t:
                o = truth[j]
                errors.append(f"missed {o['color']} {o['material']} {o['shape']} ({o.get('size', '-')}) "
                              f"@{tuple(o['pixel_coords'][:2])}")
                kinds.append(error_kind("missed", o, j, W, H))
        matched_p = {a for a, _ in pairs}
        for i in range(len(p.objects)):
            if i not in matched_p:
                errors.append(f"spurious box {[round(v) for v in p.objects[i].bbox]} score={p.objects[i].score}")
                kinds.append("spurious")
        exact += all_right
        per_image.append({"image": s["image_filename"], "size": f"{W}x{H}", "n_true": len(truth),
                          "n_pred": len(p.objects), "n_errors": len(errors), "exact": all_right, "errors": errors,
                          "error_kinds": sorted(set(kinds)), "groups": s.get("_groups", {}),
                          "metal_matched": metal, "metal_read_as_rubber": metal_as_rubber})
    res: dict[str, Any] = {
        "images": n_img, "objects_true": n_true, "objects_pred": n_pred,
        "count_accuracy": count_ok / max(n_img, 1),
        # None where nothing was there to find, predicted or matched (a set of empty scenes), never a 0 that
        # reads as a failure
        "detection_recall": _share(n_match, n_true), "detection_precision": _share(n_match, n_pred),
        "attribute_accuracy_on_matched": {a: _share(attr_ok[a], n_match) for a in ATTRS},
        "region_accuracy_on_matched": _share(region_ok, n_match),
        # on scenes with no objects (the right image for an UNSAT prompt) every object read is a false one
        "empty_scenes": sum(1 for s in scenes if not s["objects"]),
        "empty_scenes_read_empty": sum(1 for s, p in zip(scenes, preds, strict=True)
                                       if not s["objects"] and not p.objects),
        "exact_scene_graph_rate": exact / max(n_img, 1),
        "confusions": {a: {f"{t}->{q}": c for (t, q), c in confusions[a].most_common(8)} for a in ATTRS},
        # diagnostics, never a substitute for the exact rate: which errors the wrong images hold, and the exact
        # rate had the errors the truth cannot settle from the pixels (`unsettled`) been forgiven
        "wrong_images_by_error_kind": dict(Counter(k for r in per_image for k in r["error_kinds"]).most_common()),
        "exact_but_for_unsettled_truth": (exact + sum(unsettled(r["error_kinds"]) for r in per_image))
                                         / max(n_img, 1),
    }
    by_n: dict[int, list[int]] = {}
    by_size: dict[str, list[int]] = {}
    for r in per_image:
        for d, k in ((by_n, r["n_true"]), (by_size, r["size"])):
            b = d.setdefault(k, [0, 0])
            b[0] += 1
            b[1] += r["exact"]
    res["exact_by_object_count"] = {str(k): f"{v[1]}/{v[0]}" for k, v in sorted(by_n.items())}
    res["material_confusion"] = {t: {q: materials[(t, q)] for q in sorted({q for _, q in materials})}
                                 for t in sorted({t for t, _ in materials})}
    res["by_group"] = by_group(per_image)
    res["exact_by_image_size"] = {k: f"{v[1]}/{v[0]}" for k, v in sorted(by_size.items())}
    # choices between trained models were made on the even half only: the odd half is the untuned figure
    ordered = sorted(per_image, key=lambda r: r["image"])
    res["exact_by_half"] = {half: f"{sum(r['exact'] for r in ordered[k::2])}/{len(ordered[k::2])}"
                            for k, half in ((0, "tuning (even)"), (1, "report (odd)"))}
    res["per_image"] = per_image
    return res


def by_group(per_image: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per kind the renders record (``world=KIND``, ``floor=KIND``, ``variation=NAME`` for each variation an
    image got; `render_groups`): images, images with the count right, exact images, matched metal objects and
    those read as rubber."""
    out: dict[str, dict[str, int]] = {}
    for r in per_image:
        for key, kinds in sorted(r["groups"].items()):
            for kind in kinds if isinstance(kinds, list) else [kinds]:
                g = out.setdefault(f"{key}={kind}", {"images": 0, "count": 0, "exact": 0, "metal": 0,
                                                     "metal_read_as_rubber": 0})
                g["images"] += 1
                g["count"] += int(r["n_pred"] == r["n_true"])
                g["exact"] += int(r["exact"])
                g["metal"] += r["metal_matched"]
                g["metal_read_as_rubber"] += r["metal_read_as_rubber"]
    return dict(sorted(out.items()))


def print_groups(name: str, r: dict[str, Any]) -> None:
    """The materials' confusion and the per-kind lines of one set (`by_group`), where the renders record kinds."""
    m = r["material_confusion"]
    print(f"  {name}: materials (true -> read) {m}")
    for key, g in r["by_group"].items():
        print(f"    {key}: count {g['count']}/{g['images']}, exact {g['exact']}/{g['images']}, metal read as rubber "
              f"{g['metal_read_as_rubber']}/{g['metal']}")


def verdict_agreement(scenes: list[dict[str, Any]], preds: list[Scene], per_image: int, seed: int) -> dict[str, Any]:
    """Sampled single-constraint specs, verified on the truth scene and on the perceived scene."""
    import logicval_hf as lv
    from logicval_hf.contract.params import random_constraint

    cat = lv.load_catalog()
    lo, hi = cat.domain.n_range if hasattr(cat.domain, "n_range") else (3, 9)
    templates = sorted(cat.templates)
    rng = random.Random(seed)
    relaxed = strict = n_strict = total = 0
    disagreements = []
    for s, p in zip(scenes, preds, strict=True):
        truth = truth_scene(s)
        k = len(truth.objects)
        n = min(max(k, lo), hi)
        for _ in range(per_image):
            c = random_constraint(rng.choice(templates), n, rng, cat)
            spec = {"n": n, "constraints": [c.to_dict()]}
            label = lv.solve(spec).label
            vt = lv.verify(spec, truth, count="relaxed", label=label)
            vp = lv.verify(spec, p, count="relaxed", label=label)
            total += 1
            relaxed += vt.ok == vp.ok
            if vt.ok != vp.ok and len(disagreements) < 20:
                disagreements.append({"image": s["image_filename"], "constraint": c.to_dict(),
                                      "truth": vt.ok, "perceived": vp.ok})
            if lo <= k <= hi:
                n_strict += 1
                st = lv.verify(spec, truth, count="strict", label=label)
                sp = lv.verify(spec, p, count="strict", label=label)
                strict += st.ok == sp.ok
    return {"constraints": total, "agreement_relaxed": relaxed / max(total, 1),
            "constraints_strict": n_strict, "agreement_strict": strict / max(n_strict, 1),
            "seed": seed, "disagreements": disagreements}


def calibration(scenes: list[dict[str, Any]], preds: list[Scene], per_image: list[dict[str, Any]]) -> dict[str, Any]:
    """Expected calibration error of the scenes' ``confidence`` against exact scene graphs (10 equal bins), the
    mean confidence, the exact rate among the least certain tenth, and how well the confidence ranks
    (``auroc``: the chance that an exact image is more confident than a wrong one, what a user who checks the
    least certain images first relies on); None where the backend gives none. Each row of ``per_image`` gets
    its ``confidence``."""
    conf = [p.confidence for p in preds]
    if any(c is None for c in conf) or not conf:
        return {"ece": None}
    from logicval_hf.scoring.meta.statistics import roc_auc
    from logicval_hf.training.parser_fit import expected_calibration_error

    c = np.array(conf, float)
    ex = np.array([r["exact"] for r in per_image], float)
    for r, v in zip(per_image, conf, strict=True):
        r["confidence"] = v
    k = max(1, len(c) // 10)
    low = np.argsort(c)[:k]
    return {"ece": expected_calibration_error(c, ex), "mean_confidence": float(c.mean()),
            "exact_rate": float(ex.mean()), "exact_rate_least_certain_tenth": float(ex[low].mean()),
            "auroc": roc_auc(c, ex)}


def read(scenes: list[dict[str, Any]], backend: str, settings: dict[str, Any]) -> tuple[list[Scene], list[dict]]:
    """Perceived scenes of the rows' images, an image the backend could not read as an empty scene; and those
    images with their errors (``unread_images``)."""
    got = extract_scenes([s["_rgb"] for s in scenes], backend=backend, errors="return", **settings)
    preds, unread = [], []
    for s, g in zip(scenes, got, strict=True):
        if isinstance(g, PerceptionError):
            unread.append({"image": s.get("image_filename"), "error": str(g)})
        preds.append(Scene((s["_rgb"].shape[1], s["_rgb"].shape[0])) if isinstance(g, PerceptionError) else g)
    return preds, unread


def speed(images: list[np.ndarray], backend: str, settings: dict[str, Any]) -> dict[str, float]:
    from logicval_hf.perception import extract_scene

    extract_scenes(images[:2], backend=backend, errors="return", **settings)  # warm-up: model load
    t0 = time.perf_counter()
    extract_scenes(images, backend=backend, errors="return", **settings)
    batched = len(images) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for im in images:
        with contextlib.suppress(PerceptionError):  # timed like a read: it cost the same
            extract_scene(im, backend=backend, **settings)
    loop = len(images) / (time.perf_counter() - t0)
    return {"batched": batched, "per_image_loop": loop}


def shifted_sets(scenes: list[dict[str, Any]], names: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each shift of real CLEVR as a set of its own (images the shift refuses are left out and counted)."""
    out = {}
    for name in names:
        rows = []
        for s in scenes:
            radii = [0.35 if o.get("size") == "small" else 0.7 for o in s["objects"]]
            try:
                rgb, centres = apply_shift(name, s["_rgb"], [o["pixel_coords"] for o in s["objects"]], radii)
            except ShiftRefused:
                continue
            objs = [dict(o, pixel_coords=c) for o, c in zip(s["objects"], centres, strict=True)]
            rows.append(dict(s, objects=objs, image_width=rgb.shape[1], image_height=rgb.shape[0], _rgb=rgb))
        out[name] = rows
    return out


def suite(args, settings: dict[str, Any]) -> dict[str, Any]:
    """Every set in one run (see the module docstring); prints one table."""
    sets: dict[str, list[dict[str, Any]]] = {}
    if (args.data / "scenes.json").is_file():
        real = load_clevr(args.data)
        sets["real CLEVR"] = real
        for name, rows in shifted_sets(real, list(SHIFTS)).items():
            sets[f"real CLEVR, {name}"] = rows
    chosen = args.suite_renders or default_render_sets(args.renders_root)
    for name, folder, fraction in chosen:
        sets[f"renders {name}"] = loaded_renders(folder, fraction)
    table, out = [], {}
    for name, scenes in sets.items():
        if not scenes:
            continue
        t0 = time.perf_counter()
        preds, unread = read(scenes, args.backend, settings)
        rate = len(scenes) / (time.perf_counter() - t0)
        r = score(scenes, preds)
        r["unread_images"] = unread
        r["calibration"] = calibration(scenes, preds, r["per_image"])
        if args.constraints:
            r["verdicts"] = verdict_agreement(scenes, preds, args.constraints, args.seed)
        r["images_per_s_batched"] = rate
        out[name] = r
        acc = r["attribute_accuracy_on_matched"]
        table.append((name, r["images"], r["count_accuracy"], acc["color"], acc["shape"], acc["material"],
                      r["region_accuracy_on_matched"], r["exact_scene_graph_rate"],
                      r.get("verdicts", {}).get("agreement_relaxed"), r.get("verdicts", {}).get("agreement_strict"),
                      r["calibration"]["ece"], r["calibration"].get("auroc"), rate, r["exact_but_for_unsettled_truth"]))
        print(f"  done: {name} ({len(scenes)} images, exact {r['exact_scene_graph_rate']:.3f})", file=sys.stderr,
              flush=True)
    if not args.no_speed:
        t2i = next((v for k, v in sets.items() if "t2i" in k), None) or next(iter(sets.values()), [])
        import cv2

        images = [cv2.resize(s["_rgb"], (512, 512), interpolation=cv2.INTER_AREA) for s in t2i[:60]]
        if images:
            out["speed_512x512"] = speed(images, args.backend, settings)
    head = ("set", "images", "count", "colour", "shape", "material", "region", "exact", "verdicts", "strict",
            "ECE", "AUROC", "img/s", "exact but for unsettled truth")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in table:
        cells = ([row[0], str(row[1])] + [("-" if v is None else f"{v:.3f}") for v in row[2:12]]
                 + [f"{row[12]:.1f}", f"{row[13]:.3f}"])
        print("| " + " | ".join(cells) + " |")
    for name, r in out.items():
        if name.startswith("renders ") and r.get("by_group"):
            print_groups(name, r)
    if "speed_512x512" in out:
        sp = out["speed_512x512"]
        print(f"speed at 512x512: batched {sp['batched']:.1f} images/s, one by one {sp['per_image_loop']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return out


def render_set(spec: str) -> tuple[str, Path, float]:
    """``NAME=DIR[:FRACTION]`` (``--suite-renders``) as (name, folder, fraction), refused in one line when malformed
    or when the folder does not exist."""
    from logicval_hf.training.parser_data import parse_held_out_folder

    name, eq, rest = spec.partition("=")
    if not eq or not name or not rest:
        raise argparse.ArgumentTypeError(f"expected NAME=DIR[:FRACTION], got {spec!r}")
    try:
        folder, fraction = parse_held_out_folder(rest)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, folder, fraction


def existing_folder(text: str) -> Path:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: no such folder")
    return Path(text)


def loaded_renders(folder: Path, fraction: float) -> list[dict[str, Any]]:
    """`load_renders`, refusing a folder in which no usable scene was found (a measurement of nothing)."""
    scenes = load_renders(folder, fraction)
    if not scenes:
        raise SystemExit(f"clevr_perception.py: error: no usable scene in {str(folder)!r} (held-out share "
                         f"{fraction:g}; expected the CLEVR layout: scenes.json or scenes/, and images/)")
    return scenes


#: the suite's default render sets under ``--renders-root``: (name, folder) of held-out renders no network of the
#: shipped files trained on (the render commands are in docs/training.md)
HELD_OUT_SETS = (
    ("t2i (held out)", "t2i_heldout"),
    ("t2i, T2I frame sizes (held out)", "t2i_report"),
    ("t2i_wide (held out)", "t2i_wide_heldout"),
    ("randomise (held out)", "randomise_heldout"),
)


def default_render_sets(root: Path | None) -> list[tuple[str, Path, float]]:
    """The suite's render sets without ``--suite-renders``: clevr_blender's training hold-out (the last 5 % by
    name) and each of `HELD_OUT_SETS` found under ``root``."""
    sets = [("clevr_blender (training hold-out)", SHARED / "data" / "clevr_blender", 0.05)]
    sets += [(name, root / folder, 1.0) for name, folder in HELD_OUT_SETS if root and (root / folder).is_dir()]
    return [s for s in sets if s[1].is_dir()]


def backend_settings(ap: argparse.ArgumentParser, backend: str, pairs: Sequence[str],
                     settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """``settings`` with each ``KEY=VALUE`` of ``pairs`` added (VALUE read as JSON when it parses), checked by one
    tiny read so that a wrong backend or setting is named now, in one line (``ap.error``), not after the images
    are read."""
    settings = dict(settings or {})
    for kv in pairs:
        k, _, v = kv.partition("=")
        try:
            settings[k] = json.loads(v)
        except ValueError:
            settings[k] = v
    try:
        check = get_backend(backend).check_settings
        if check is not None:  # the vlm backend: is the endpoint up, does it serve the model
            check(settings)
        extract_scenes([np.zeros((32, 32, 3), np.uint8)], backend=backend, **settings)
    except (ValueError, KeyError, FileNotFoundError) as e:
        ap.error(f"backend {backend!r} with settings {settings}: {e}")
    return settings


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA,
                    help="CLEVR-layout folder with scenes.json and images/ (benchmarks/clevr_layout.py lays out "
                         "CLEVR v1.0 so; default $LOGICVAL_SHARED_DATA/data/clevr_dev)")
    ap.add_argument("--backend", default="clevr", help="perception backend (default clevr)")
    ap.add_argument("--renders", type=existing_folder,
                    help="measure on this render folder (its held-out part) instead")
    ap.add_argument("--holdout-fraction", type=float, default=0.05,
                    help="with --renders: the last share of the folder by name (the training hold-out; 1 = all)")
    ap.add_argument("--oracle", choices=["varied", "raw"], help="measure on the main job's oracle images instead")
    ap.add_argument("--jpeg", type=int, metavar="Q", help="re-encode every image as JPEG at quality Q first")
    ap.add_argument("--model", help="model file for the backend (passed as model_path)")
    ap.add_argument("--threshold", type=float, help="detection threshold for the backend")
    ap.add_argument("--set", "--setting", dest="set", action="append", default=[], metavar="KEY=VALUE",
                    help="another backend setting (VALUE read as JSON when it parses), e.g. --set second_look=false, "
                         "--setting url=http://127.0.0.1:8000/v1 (repeatable)")
    ap.add_argument("--constraints", type=int, default=5, help="sampled constraints per image (0 = skip)")
    ap.add_argument("--seed", type=int, default=0, help="constraint sampling seed")
    ap.add_argument("--no-speed", action="store_true", help="skip the speed measurement")
    ap.add_argument("--worst", type=int, default=10, help="worst images printed")
    ap.add_argument("--json", type=Path, help="write the full result (per image) here")
    ap.add_argument("--suite", action="store_true",
                    help="every set in one run: real CLEVR, its shifts, held-out renders of each profile")
    ap.add_argument("--suite-renders", type=render_set, action="append", default=[], metavar="NAME=DIR[:FRACTION]",
                    help="with --suite: a render folder to measure (FRACTION: its last share by name; default 1)")
    ap.add_argument("--renders-root", type=Path, default=os.environ.get("LOGICVAL_RENDERS") or None, metavar="DIR",
                    help="with --suite and no --suite-renders: the folder holding the held-out render folders "
                         f"({', '.join(f for _, f in HELD_OUT_SETS)}; default $LOGICVAL_RENDERS)")
    args = ap.parse_args(argv)
    settings: dict[str, Any] = {}
    if args.model:
        settings["model_path"] = args.model
    if args.threshold is not None:
        settings["threshold"] = args.threshold
    settings = backend_settings(ap, args.backend, args.set, settings)
    if args.backend == "clevr" and args.model and "attribute_model" not in settings:
        # A detector exported by train_scene_parser has no classifier beside it, so the parser falls back to the
        # detector's own attribute heads: say so, or its figures pass for the two-stage read's.
        beside = attribute_model_beside(Path(args.model))
        if not beside.is_file():
            print(f"clevr_perception.py: no {beside.name} beside {args.model}: attributes are read by the detector's "
                  "own heads (--set attribute_model=PATH picks a classifier)", file=sys.stderr)

    if args.suite:
        return suite(args, settings)
    if not (args.oracle or args.renders) and not (args.data / "scenes.json").is_file():
        ap.error(f"no scenes.json in {str(args.data)!r}: give a folder in CLEVR's layout (benchmarks/clevr_layout.py "
                 "lays out the official CLEVR v1.0 release so; docs/data.md)")
    if args.oracle:
        scenes, name = load_oracle(args.oracle), f"oracle images ({args.oracle} witnesses)"
    elif args.renders:
        scenes = loaded_renders(args.renders, args.holdout_fraction)
        name = f"{args.renders} (held-out {args.holdout_fraction:g})"
    else:
        scenes, name = load_clevr(args.data), str(args.data)
    if args.jpeg:
        for s in scenes:
            s["_rgb"] = jpeg(s["_rgb"], args.jpeg)
        name += f", JPEG q{args.jpeg}"
    images = [s["_rgb"] for s in scenes]
    preds, unread = read(scenes, args.backend, settings)
    r = score(scenes, preds)
    r = {"data": name, "backend": args.backend, "settings": settings, **r,
         "calibration": calibration(scenes, preds, r["per_image"]), "unread_images": unread}
    if args.oracle:  # the main job's figure: the row's own spec, strict, on the perceived scene
        import logicval_hf as lv

        ok = [lv.verify(s["_spec"], p, count="strict", label="SAT").ok for s, p in zip(scenes, preds, strict=True)]
        r["oracle_sat_score"] = sum(ok) / max(len(ok), 1)
    if args.constraints:
        r["verdicts"] = verdict_agreement(scenes, preds, args.constraints, args.seed)
    if not args.no_speed:
        r["speed_images_per_s"] = speed(images, args.backend, settings)
        full = [im for im in images if im.shape[:2] == (320, 480)]
        if full and len(full) != len(images):
            r["speed_images_per_s"]["batched_480x320_only"] = speed(full, args.backend, settings)["batched"]

    print(f"backend {args.backend!r} on {name}: {r['images']} images, {r['objects_true']} true objects, "
          f"{r['objects_pred']} predicted")
    if unread:
        print(f"  unread images              {len(unread)} (scored as empty scenes), e.g. {unread[0]['error']}")
    print(f"  count accuracy             {r['count_accuracy']:.3f}")
    print(f"  detection recall/precision {_fmt(r['detection_recall'])} / {_fmt(r['detection_precision'])}")
    for a, v in r["attribute_accuracy_on_matched"].items():
        print(f"  {a:9s} acc (matched)     {_fmt(v)}")
    print(f"  region acc (matched)       {_fmt(r['region_accuracy_on_matched'])}")
    if r["empty_scenes"]:
        print(f"  empty scenes read empty    {r['empty_scenes_read_empty']}/{r['empty_scenes']}")
    sizes = r["exact_by_image_size"]
    by_size = sizes if len(sizes) <= 6 else f"{len(sizes)} sizes"
    print(f"  exact scene-graph rate     {r['exact_scene_graph_rate']:.3f}   by #objects: {r['exact_by_object_count']}"
          f"   by size: {by_size}")
    print(f"  exact by half (sorted names) {r['exact_by_half']}")
    if r["by_group"]:
        print_groups("by kind", r)
    if r["wrong_images_by_error_kind"]:
        print(f"  wrong images by error kind {r['wrong_images_by_error_kind']}")
        print(f"  exact but for unsettled truth {r['exact_but_for_unsettled_truth']:.3f} (diagnostic: errors only on "
              f"centres within 1 px of a midline or objects below CLEVR's visibility floor forgiven)")
    if r["calibration"]["ece"] is not None:
        c = r["calibration"]
        auroc = "-" if c["auroc"] is None else f"{c['auroc']:.3f}"  # None: every image right, or none
        print(f"  scene confidence           ECE {c['ece']:.3f}, mean {c['mean_confidence']:.3f}, AUROC {auroc}, "
              f"exact among the least certain tenth {c['exact_rate_least_certain_tenth']:.3f}")
    if "oracle_sat_score" in r:
        print(f"  oracle SAT score           {r['oracle_sat_score']:.4f} (strict verdict of each row's own spec)")
    if "verdicts" in r:
        v = r["verdicts"]
        print(f"  verdict agreement          {v['agreement_relaxed']:.3f} relaxed ({v['constraints']} constraints), "
              f"{v['agreement_strict']:.3f} strict ({v['constraints_strict']})")
    if "speed_images_per_s" in r:
        sp = r["speed_images_per_s"]
        print("  speed (images/s)           " + ", ".join(f"{k} {v:.1f}" for k, v in sp.items()))
    for a, c in r["confusions"].items():
        if c:
            print(f"  {a} confusions (true->pred): {c}")
    worst = [w for w in sorted(r["per_image"], key=lambda x: -x["n_errors"]) if w["n_errors"]][: args.worst]
    if worst:
        print(f"worst {len(worst)} images:")
    for w in worst:
        print(f"  {w['image']} ({w['n_true']} true, {w['n_pred']} pred): " + "; ".join(w["errors"][:6]))
    if args.json:
        args.json.write_text(json.dumps(r, indent=1, default=str))
    return r


if __name__ == "__main__":
    main()
