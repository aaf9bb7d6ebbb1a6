"""Shared helpers of the Space: benchmark rows by id (cached on disk), spec input, object labels, scene tables,
and the escaping of user text that the Space echoes."""

from __future__ import annotations

import json
import logging
import lzma
import re
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.rows import BenchmarkRow, is_row, split_row
from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES, PACKAGES, cached_benchmark, keep_benchmark
from logicval_hf.benchmark.store import read_stored, stored_file
from logicval_hf.common.atomic import atomic_write_bytes
from logicval_hf.contract.catalog import Catalog, load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spatial import region_cell
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import (
    ADJECTIVE_ORDER,
    NOUN_ATTRIBUTE,
    REGION_ATTRIBUTE,
    REGION_COLUMN_WORDS,
    REGION_ROW_WORDS,
)
from logicval_hf.errors import SpecError

log = logging.getLogger("logicval.space")

#: a benchmark row id, e.g. ``3SAT-0007`` (use ``fullmatch``: ``$`` would also accept a trailing newline)
ROW_ID_RE = re.compile(r"(?P<package>[0-9]+(?:SAT|UNSAT))-(?P<index>[0-9]{4})")
#: composed specs may have 1..6 constraints (benchmark specs have 1, 3 or 6)
COMPOSE_M = tuple(range(1, 7))
#: most objects shown in an explanation line before "..."
MAX_LISTED = 12
#: longest spec input accepted (characters): a six-constraint spec is about 2,000
MAX_SPEC_CHARS = 100_000
#: how much of a refused value an error message quotes
QUOTE_CHARS = 40

#: the built benchmark rows of the default seed, shipped with the package (xz JSON: ``seed``, ``fingerprint``,
#: ``rows``) so that a fresh Space shows Explore at once instead of building them first (~15-20 s); used only
#: while its fingerprint matches the code (`fingerprint`). ``python -m logicval_hf.space.common`` rewrites it.
SHIPPED_ROWS = Path(__file__).with_name("benchmark_rows.json.xz")

_lock = threading.Lock()
_rows: dict[int, Mapping[str, tuple[dict[str, Any], ...]]] = {}
_cache_dir: Path | None = None
#: how the rows of a seed were obtained ("disk", "shipped" or "built") and how long it took (seconds)
load_info: dict[int, dict[str, Any]] = {}


# ---- quoting user text ---------------------------------------------------------------------------------------
def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr`` of a refused value, cut to ``limit`` characters (a 10 MB value is never echoed)."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value)} characters)"
    r = repr(value)
    return r if len(r) <= limit + 2 else r[:limit] + "..."


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")


def md_escape(text: Any) -> str:
    """User text for a Markdown output: HTML-escaped and Markdown-escaped, so it shows as typed."""
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return _MD_SPECIAL.sub(r"\\\1", s).replace("\n", " ")


# ---- benchmark rows --------------------------------------------------------------------------------------------
def package_ids(package: str) -> list[str]:
    """The row ids of a package (known without building the benchmark: ``<package>-0001`` .. size)."""
    for p in PACKAGES:
        if p.name == package:
            return [f"{package}-{i:04d}" for i in range(1, p.size + 1)]
    raise ValueError(f"unknown package {quote(package)}; expected one of {list(PACKAGE_NAMES)}")


def use_disk_cache(cache_dir: str | Path | None) -> None:
    """Keep the built benchmark under ``cache_dir`` (None: in memory only). Set by the app at start-up."""
    global _cache_dir  # noqa: PLW0603  a process-wide setting the app makes once at start-up (tests patch it)
    _cache_dir = Path(cache_dir) if cache_dir is not None else None


def fingerprint() -> str:
    """Hash of the code and data that decide the benchmark rows (a cached file is used only when it matches)."""
    from logicval_hf.benchmark.fingerprint import benchmark_fingerprint  # the main job's benchmark.json too

    return benchmark_fingerprint()


def cache_file(seed: int = DEFAULT_SEED, cache_dir: str | Path | None = None) -> Path | None:
    """The cache file of a seed (named by the code fingerprint; `logicval_hf.benchmark.store`), or None without a
    cache folder."""
    return stored_file(seed, cache_dir if cache_dir is not None else _cache_dir)


def _rows_of(d: Any, seed: int) -> dict[str, tuple[dict[str, Any], ...]] | None:
    """The per-package rows of a cache document, or None when it is not this seed's six packages."""
    if not (isinstance(d, dict) and d.get("seed") == seed and isinstance(d.get("rows"), dict)
            and set(d["rows"]) == set(PACKAGE_NAMES)):
        return None
    return {name: tuple(d["rows"][name]) for name in PACKAGE_NAMES}


def read_shipped(seed: int = DEFAULT_SEED, path: Path | None = None) -> dict[str, tuple[dict[str, Any], ...]] | None:
    """The shipped rows (`SHIPPED_ROWS`) when they are this seed's and were built by this code; else None."""
    path = SHIPPED_ROWS if path is None else path
    try:
        with lzma.open(path, "rt", encoding="utf-8") as fh:
            d = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError, lzma.LZMAError) as e:
        log.warning("ignoring the unreadable shipped benchmark rows %s (%s)", path, e)
        return None
    if not isinstance(d, dict) or d.get("fingerprint") != fingerprint():
        if isinstance(d, dict) and d.get("seed") == seed:
            log.info("the shipped benchmark rows %s were built by other code; building them", path)
        return None
    return _rows_of(d, seed)


def write_shipped(path: Path | None = None, seed: int = DEFAULT_SEED, preset: int = 9 | lzma.PRESET_EXTREME) -> Path:
    """(Re)write the shipped rows from the current code (byte-identical when nothing changed); ``preset``: xz's
    (the shipped file is packed hardest, at a few seconds of CPU)."""
    path = SHIPPED_ROWS if path is None else path
    bench = cached_benchmark() if seed == DEFAULT_SEED else cached_benchmark(seed)
    doc = {"seed": seed, "fingerprint": fingerprint(), "rows": {n: list(bench.rows[n]) for n in PACKAGE_NAMES}}
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    atomic_write_bytes(path, lzma.compress(data, preset=preset))
    return path


def benchmark_rows(seed: int = DEFAULT_SEED) -> Mapping[str, tuple[dict[str, Any], ...]]:
    """The benchmark rows per package: from memory, else from the disk cache, else the shipped rows (`SHIPPED_ROWS`,
    when the code matches), else built (~15 s on 2 cores) and written to the disk cache. Thread-safe; built at
    most once per process and once per cache folder."""
    seed = int(seed)
    with _lock:
        if seed in _rows:
            return _rows[seed]
        t0 = time.perf_counter()
        path = cache_file(seed)
        rows = _rows_of(read_stored(seed, _cache_dir), seed) if _cache_dir is not None else None
        how = "disk"
        if rows is None:
            rows, how = read_shipped(seed), "shipped"
        if rows is None:
            bench = cached_benchmark(seed)  # in-process memo (and the user-level cache), then the Space's folder
            rows = {name: tuple(bench.rows[name]) for name in PACKAGE_NAMES}
            how = "built"
            if path is not None and not path.is_file():
                keep_benchmark(bench, _cache_dir)
        _rows[seed] = rows
        load_info[seed] = {"how": how, "seconds": time.perf_counter() - t0, "file": str(path) if path else None}
        log.info("benchmark rows (seed %s) %s in %.1f s", seed,
                 {"disk": "read from disk", "shipped": "read from the shipped file"}.get(how, "built"),
                 load_info[seed]["seconds"])
        return rows


def warm_benchmark(seed: int = DEFAULT_SEED) -> threading.Thread:
    """Load (or build) the benchmark in a background thread, so that Explore is ready when the page opens."""
    t = threading.Thread(target=benchmark_rows, args=(seed,), name="logicval-benchmark-warmup", daemon=True)
    t.start()
    return t


def get_row(row_id: str, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """The benchmark row with this id; `ValueError` naming the problem otherwise."""
    if not isinstance(row_id, str) or not row_id.strip():
        raise ValueError("no benchmark id given (expected e.g. 3SAT-0007)")
    row_id = row_id.strip()
    m = ROW_ID_RE.fullmatch(row_id)
    if not m:
        raise ValueError(f"{quote(row_id)} is not a benchmark id; ids look like 3SAT-0007 (package, dash, 4 digits)")
    package = m.group("package")
    if package not in PACKAGE_NAMES:
        raise ValueError(f"unknown package {package!r} in {row_id!r}; packages are {list(PACKAGE_NAMES)}")
    rows = benchmark_rows(seed)[package]
    k = int(m.group("index"))
    if not 1 <= k <= len(rows):
        raise ValueError(f"{row_id!r}: package {package} has rows {package}-0001..{package}-{len(rows):04d}")
    row = rows[k - 1]
    assert row["id"] == row_id, (row["id"], row_id)
    return row


def typed_row(row_id: str, seed: int = DEFAULT_SEED, catalog: Catalog | None = None) -> BenchmarkRow:
    """`get_row` as a typed `BenchmarkRow` (its spec parsed)."""
    return BenchmarkRow.from_dict(get_row(row_id, seed), catalog)


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
        if len(s) > MAX_SPEC_CHARS:
            raise ValueError(f"spec: {len(s)} characters is too long (at most {MAX_SPEC_CHARS}); a spec has at "
                             "most six constraints")
        if not s:
            raise ValueError("no spec given: enter a benchmark id (e.g. 3SAT-0007) or a spec as JSON "
                             '({"n": 3, "constraints": [...]})')
        if ROW_ID_RE.fullmatch(s):
            row = typed_row(s, seed, catalog)
            return row.spec, {"id": row.id, "package": row.package, "label": row.label}
        if not s.startswith("{"):
            raise ValueError(f"{s[:40]!r} is neither a benchmark id (like 3SAT-0007) nor spec JSON "
                             "(starting with '{')")
        try:
            d = json.loads(s)
        except json.JSONDecodeError as e:
            raise SpecError(f"spec: not valid JSON ({e})") from None
    meta: dict[str, Any] = {}
    if isinstance(d, Mapping) and is_row(d):  # a benchmark row
        d, meta = split_row(d)
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


def listed(labels: list[str], limit: int = MAX_LISTED) -> str:
    if len(labels) > limit:
        return ", ".join(labels[:limit]) + f", ... ({len(labels) - limit} more)"
    return ", ".join(labels)


# ---- regions ---------------------------------------------------------------------------------------------------
def region_words(value: str) -> str | None:
    """``back left`` for ``r0`` (the prompt's words: "the back-left region (r0)"); None for another value."""
    try:
        col, row = region_cell(value)
        return f"{REGION_ROW_WORDS[row]} {REGION_COLUMN_WORDS[col]}"
    except (ValueError, IndexError, TypeError):
        return None


def region_label(value: str) -> str:
    """How the Space's tables show a region: ``back left (r0)`` (the code alone when it is not a region)."""
    words = region_words(value)
    return f"{words} ({value})" if words else str(value)


def region_legend(domain: Any) -> str:
    """One line naming the domain's region codes, for the texts that show them raw (spec JSON, ASP programs):
    ``Regions: r0 back left, r1 back right, ...``; "" for a domain without regions."""
    values = list(domain.attributes.get(REGION_ATTRIBUTE, ())) if hasattr(domain, "attributes") else []
    named = [f"`{v}` {region_words(v)}" for v in values if region_words(v)]
    if not named:
        return ""
    return ("Regions: " + ", ".join(named) + " (the four quadrants of the image, split at its centre; back is the "
            "upper half, farther from the camera).")


def _region(scene: Scene, i: int) -> str | None:
    """Object ``i``'s region code, or None in a domain without regions (COCO)."""
    return scene.region(i) if REGION_ATTRIBUTE in scene.domain.derived else None


def scene_headers(scene_or_domain: Any) -> list[str]:
    return ["#", *attribute_order(scene_or_domain), "region", "x0", "y0", "x1", "y1", "score"]


def scene_rows(scene: Scene) -> list[list[Any]]:
    """One table row per object: index, attributes, region (`region_label`), box, detection score (blank when
    absent)."""
    order = attribute_order(scene)
    rows = []
    for i, o in enumerate(scene.objects):
        x0, y0, x1, y1 = (round(float(v), 1) for v in o.bbox)
        score = "" if o.score is None else round(float(o.score), 3)
        region = _region(scene, i)
        rows.append([i, *(o.attributes[a] for a in order), "" if region is None else region_label(region), x0, y0, x1,
                     y1, score])
    return rows


def boxes_json(scene: Scene) -> list[dict[str, Any]]:
    """Box coordinates with labels (what the image shows), JSON-ready; ``region`` is the code (``r0``),
    ``region_name`` its words (``back left``)."""
    return [
        {"index": i, "label": object_label(scene, i), "bbox": [round(float(v), 2) for v in o.bbox],
         "region": _region(scene, i), "region_name": region_words(_region(scene, i) or "")}
        for i, o in enumerate(scene.objects)
    ]


if __name__ == "__main__":  # python -m logicval_hf.space.common: refresh the shipped rows after a code change
    print(write_shipped())
    sys.exit(0)
