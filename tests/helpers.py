"""Shared test helpers: random scenes and specs drawn from seeded generators."""

from __future__ import annotations

import importlib
import importlib.util
import random
import struct
import zlib
from pathlib import Path

import pytest

from logicval_hf import Scene, SceneObject, Spec, load_catalog
from logicval_hf.contract.params import random_constraint


def requires(*modules: str):
    """Skip mark for tests that need optional packages. Unlike a module-level ``pytest.importorskip`` it
    imports nothing (``find_spec`` of the top-level package): every xdist worker collects every test file, and
    torch, transformers or datasets imported at collection cost each worker seconds it may never use."""
    missing = [m for m in modules if importlib.util.find_spec(m.partition(".")[0]) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} (not installed)")


def load_script(path: Path, name: str):
    """A script that is not part of the package (a benchmark, a Space shell) imported as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: text}`` under ``root`` (texts dedented), e.g. a small package; returns ``root``."""
    import textwrap

    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


class lazy:
    """A module imported at its first attribute access (see `requires`). Patch the module itself
    (``monkeypatch.setattr("pkg.mod.name", ...)``), not this handle."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        if attr.startswith("_"):  # pytest probes every module attribute for fixture markers at collection
            raise AttributeError(attr)
        return getattr(importlib.import_module(self._name), attr)


#: set by conftest's pytest_configure: this run leaves out the slow tests (`pytest -m "not slow"`, the inner loop)
INNER_LOOP = False


def examples(n: int) -> int:
    """How many random cases a property test or a seeded loop tries: ``n`` in the whole suite (CI, the README's
    test command), a quarter of it (at least 10) in the inner loop, which is for quick feedback."""
    return min(n, max(10, n // 4)) if INNER_LOOP else n


CATALOG = load_catalog()
DOMAIN = CATALOG.domain


def random_scene(rng: random.Random, k: int, size=(480, 320), grid: int | None = None) -> Scene:
    """k random objects; with ``grid`` the box centres snap to a coarse grid so that ties occur."""
    w, h = size
    objs = []
    for _ in range(k):
        attrs = {a: rng.choice(DOMAIN.attributes[a]) for a in DOMAIN.perceived_attributes}
        if grid:
            cx = rng.randint(0, grid) * w / grid
            cy = rng.randint(0, grid) * h / grid
        else:
            cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        objs.append(SceneObject(attrs, (cx - 10, cy - 10, cx + 10, cy + 10)))
    return Scene((w, h), tuple(objs))


def random_spec(rng: random.Random, m: int, n: int | None = None) -> Spec:
    n = n if n is not None else rng.randint(DOMAIN.n_min, DOMAIN.n_max)
    classes = rng.sample(CATALOG.classes, m)
    cons = [random_constraint(rng.choice(CATALOG.by_class(c)), n, rng).to_dict() for c in classes]
    return Spec.from_dict({"n": n, "constraints": cons}, allowed_m=None)


def attr(prop: str, value: str, negated: bool = False) -> dict:
    return {"prop": prop, "value": value, "negated": negated}


def rel(name: str, negated: bool = False) -> dict:
    return {"rel": name, "negated": negated}


def obj(color: str, shape: str, material: str, cx: float, cy: float, half: float = 10) -> dict:
    return {"color": color, "shape": shape, "material": material, "bbox": [cx - half, cy - half, cx + half, cy + half]}


def violations(program: str, max_count: int = 12) -> set[int]:
    """Indices ``i`` of the ``violated(i)`` atoms a stratified constraint program derives (counts compared up to
    ``max_count``)."""
    import clingo

    ctl = clingo.Control(["--warn=none", "-c", f"max_count={max_count}"])
    ctl.add("base", [], program)
    ctl.ground([("base", [])])
    out: set[int] = set()
    ctl.solve(on_model=lambda m: out.update(s.arguments[0].number for s in m.symbols(atoms=True)
                                            if s.name == "violated" and len(s.arguments) == 1))
    return out


def clevr_folder(root: Path, n: int) -> Path:
    """A folder in real CLEVR's layout (``images/`` and one ``scenes.json``) holding the first ``n`` of the
    CLEVR images shipped in ``tests/data/clevr`` with their official scenes."""
    import json
    import shutil

    data = Path(__file__).resolve().parent / "data" / "clevr"
    scenes = json.loads((data / "scenes.json").read_text())[:n]
    (root / "images").mkdir(parents=True, exist_ok=True)
    for s in scenes:
        shutil.copy(data / s["image_filename"], root / "images" / s["image_filename"])
    (root / "scenes.json").write_text(json.dumps(scenes))
    return root


def render_folder(root: Path, n: int, masks: bool = False) -> Path:
    """A tiny render folder in the CLEVR layout, drawn by the numpy renderer, plus one corrupt image and one
    corrupt scene file. ``masks``: also instance masks in the Blender renders' format (8-bit PNG, object i
    has index i + 1), here the drawn boxes painted in order."""
    import json

    import numpy as np
    from PIL import Image

    from logicval_hf.training.parser_data import classes, numpy_render

    attrs = ("color", "shape", "material")

    cls = classes()
    (root / "images").mkdir(parents=True)
    (root / "scenes").mkdir()
    if masks:
        (root / "masks").mkdir()
    for i in range(n):
        rec = numpy_render((77, 0, i), min_objects=2, max_objects=4)
        name = f"R_{i:03d}.png"
        Image.fromarray(rec.rgb).save(root / "images" / name)
        objs = []
        mask = np.zeros(rec.rgb.shape[:2], np.uint8)
        for k, ((cx, cy), (w, h), lab) in enumerate(zip(rec.centres, rec.sizes, rec.labels, strict=False)):
            box = [int(cx - w / 2), int(cy - h / 2), int(cx + w / 2), int(cy + h / 2)]
            objs.append({**{a: cls[a][int(lab[k])] for k, a in enumerate(attrs)}, "size": "large",
                         "pixel_coords": [float(cx), float(cy), 10.0], "bbox_xyxy": box, "mask_index": k + 1})
            mask[box[1]:box[3] + 1, box[0]:box[2] + 1] = k + 1
        if masks:
            Image.fromarray(mask).save(root / "masks" / name)
        (root / "scenes" / f"R_{i:03d}.json").write_text(json.dumps({"image_filename": name, "objects": objs}))
    (root / "images" / "R_bad.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    (root / "scenes" / "R_bad.json").write_text(json.dumps({"image_filename": "R_bad.png", "objects": []}))
    (root / "scenes" / "R_broken.json").write_text("{ this is not json")
    return root


def png_header(w: int, h: int) -> bytes:
    """A PNG whose header claims ``w x h`` pixels, with no usable pixel data (60 bytes whatever the claim)."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def occluded_map():
    """A 48x64 object map: object 0 (behind) is a 40x40 square whose centre (20, 20) is covered by object 1 (in
    front); only a strip of 0 on its right stays visible."""
    import numpy as np

    m = np.full((48, 64), -1, np.int16)
    m[0:40, 0:40] = 0
    m[0:40, 0:30] = 1
    return m
