"""Shared helpers of the Space: benchmark rows by id, spec input, object labels and scene tables."""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Mapping

from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES, PACKAGES, cached_benchmark
from logicval_hf.contract.catalog import Catalog, load_catalog
from logicval_hf.errors import SpecError
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import ADJECTIVE_ORDER, NOUN_ATTRIBUTE

#: a benchmark row id, e.g. ``3SAT-0007``
ROW_ID_RE = re.compile(r"^(?P<package>[0-9]+(?:SAT|UNSAT))-(?P<index>[0-9]{4})$")
#: composed specs may have 1..6 constraints (benchmark specs have 1, 3 or 6)
COMPOSE_M = tuple(range(1, 7))
#: most objects shown in an explanation line before "..."
MAX_LISTED = 12

_lock = threading.Lock()


def package_ids(package: str) -> list[str]:
    """The row ids of a package (known without building the benchmark: ``<package>-0001`` .. size)."""
    for p in PACKAGES:
        if p.name == package:
            return [f"{package}-{i:04d}" for i in range(1, p.size + 1)]
    raise ValueError(f"unknown package {package!r}; expected one of {list(PACKAGE_NAMES)}")


def benchmark(seed: int = DEFAULT_SEED):
    """The benchmark (built once per process, ~15 s on 2 cores; thread-safe)."""
    with _lock:
        return cached_benchmark(seed)


def warm_benchmark(seed: int = DEFAULT_SEED) -> threading.Thread:
    """Build the benchmark in a background thread so that the first Explore click is fast."""
    t = threading.Thread(target=benchmark, args=(seed,), name="logicval-benchmark-warmup", daemon=True)
    t.start()
    return t


def get_row(row_id: str, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The benchmark row with this id; `ValueError` naming the problem otherwise."""
    if not isinstance(row_id, str) or not row_id.strip():
        raise ValueError("no benchmark id given (expected e.g. 3SAT-0007)")
    row_id = row_id.strip()
    m = ROW_ID_RE.match(row_id)
    if not m:
        raise ValueError(f"{row_id!r} is not a benchmark id; ids look like 3SAT-0007 (package, dash, 4 digits)")
    package = m.group("package")
    if package not in PACKAGE_NAMES:
        raise ValueError(f"unknown package {package!r} in {row_id!r}; packages are {list(PACKAGE_NAMES)}")
    rows = benchmark(seed).rows[package]
    k = int(m.group("index"))
    if not 1 <= k <= len(rows):
        raise ValueError(f"{row_id!r}: package {package} has rows {package}-0001..{package}-{len(rows):04d}")
    row = rows[k - 1]
    assert row["id"] == row_id, (row["id"], row_id)
    return row


def parse_spec_input(text: Any, catalog: Catalog | None = None,
                     seed: int = DEFAULT_SEED) -> tuple[Spec, dict[str, Any]]:
    """A spec from user input: a benchmark id (``3SAT-0007``), spec JSON, or a benchmark row as JSON.

    Returns the spec and metadata (``id``, ``package``, ``label`` for benchmark rows, else empty). Raises
    `ValueError` (`SpecError` for invalid specs, with the validator's message naming the field).
    """
    catalog = catalog or load_catalog()
    if isinstance(text, Spec):
        return text, {}
    if isinstance(text, Mapping):
        d: Any = text
    else:
        s = (text or "").strip() if isinstance(text, str) else ""
        if not s:
            raise ValueError("no spec given: enter a benchmark id (e.g. 3SAT-0007) or a spec as JSON "
                             '({"n": 3, "constraints": [...]})')
        if ROW_ID_RE.match(s):
            row = get_row(s, seed)
            return Spec.from_dict(row["spec_json"], catalog=catalog), {
                "id": row["id"], "package": row["package"], "label": row["label"]}
        if not s.startswith("{"):
            raise ValueError(f"{s[:40]!r} is neither a benchmark id (like 3SAT-0007) nor spec JSON "
                             "(starting with '{')")
        try:
            d = json.loads(s)
        except json.JSONDecodeError as e:
            raise SpecError(f"spec: not valid JSON ({e})") from None
    meta: dict[str, Any] = {}
    if isinstance(d, Mapping) and "spec_json" in d:  # a benchmark row
        meta = {k: d[k] for k in ("id", "package", "label") if d.get(k) is not None}
        d = d["spec_json"]
    return Spec.from_dict(d, catalog=catalog, allowed_m=COMPOSE_M), meta


def attribute_order(scene_or_domain: Any) -> list[str]:
    """Perceived attributes in reading order (adjectives, then the noun): colour, material, shape."""
    dom = scene_or_domain.domain if isinstance(scene_or_domain, Scene) else scene_or_domain
    attrs = list(dom.perceived_attributes)
    first = [a for a in ADJECTIVE_ORDER if a in attrs] + ([NOUN_ATTRIBUTE] if NOUN_ATTRIBUTE in attrs else [])
    return first + [a for a in attrs if a not in first]


def object_words(attributes: Mapping[str, str], order: list[str]) -> str:
    return " ".join(str(attributes[a]) for a in order if a in attributes)


def object_label(scene: Scene, i: int) -> str:
    """``#2 red metal cube`` (0-based index, as in the scene table and the drawn boxes)."""
    return f"#{i} {object_words(scene.objects[i].attributes, attribute_order(scene))}"


def object_labels(scene: Scene, indices: Any) -> list[str]:
    return [object_label(scene, i) for i in indices]


def listed(labels: list[str], limit: int = MAX_LISTED) -> str:
    if len(labels) > limit:
        return ", ".join(labels[:limit]) + f", ... ({len(labels) - limit} more)"
    return ", ".join(labels)


def scene_headers(scene_or_domain: Any) -> list[str]:
    return ["#", *attribute_order(scene_or_domain), "region", "x0", "y0", "x1", "y1", "score"]


def scene_rows(scene: Scene) -> list[list[Any]]:
    """One table row per object: index, attributes, region, box, detection score (blank when absent)."""
    order = attribute_order(scene)
    rows = []
    for i, o in enumerate(scene.objects):
        x0, y0, x1, y1 = (round(float(v), 1) for v in o.bbox)
        score = "" if o.score is None else round(float(o.score), 3)
        rows.append([i, *(o.attributes[a] for a in order), scene.region(i), x0, y0, x1, y1, score])
    return rows


def boxes_json(scene: Scene) -> list[dict[str, Any]]:
    """Box coordinates with labels (what the image shows), JSON-ready."""
    return [
        {"index": i, "label": object_label(scene, i), "bbox": [round(float(v), 2) for v in o.bbox],
         "region": scene.region(i)}
        for i, o in enumerate(scene.objects)
    ]
