"""Statistics of a built dataset folder (``logicval stats``): rows per package and label, constraints per class
and per template, specs per scene size n. Reads the Parquet columns it needs, nothing else."""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["dataset_stats", "load_folder_rows"]


def load_folder_rows(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Rows of every package found in a built folder (``data/<package>.parquet``), in package order.

    Only the columns the statistics need are read.
    """
    import pyarrow.parquet as pq

    from logicval_hf.benchmark.sampler import PACKAGE_NAMES

    folder = Path(folder)
    data = folder / "data"
    if not data.is_dir():
        raise ValueError(f"{folder}: no data/ folder; is it a folder written by `logicval build-dataset`?")
    found = {p.stem: p for p in data.glob("*.parquet")}
    if not found:
        raise ValueError(f"{data}: no parquet files")
    order = [n for n in PACKAGE_NAMES if n in found] + sorted(n for n in found if n not in PACKAGE_NAMES)
    cols = ["id", "package", "n", "m", "label", "classes", "templates", "chance_rate"]
    out = {}
    for name in order:
        table = pq.read_table(found[name])
        out[name] = table.select([c for c in cols if c in table.column_names]).to_pylist()
    return out


def dataset_stats(rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Counts per package x class (constraints), per template (constraints, by package), per n and per label
    (specs, by package)."""
    from logicval_hf.contract.catalog import load_catalog

    catalog = load_catalog()
    packages = list(rows)
    by_class = {p: collections.Counter(c for r in rows[p] for c in r["classes"]) for p in packages}
    by_template = {p: collections.Counter(t for r in rows[p] for t in r["templates"]) for p in packages}
    by_n = {p: collections.Counter(int(r["n"]) for r in rows[p]) for p in packages}
    by_label = {p: collections.Counter(r["label"] for r in rows[p]) for p in packages}
    classes = list(catalog.classes) + sorted({c for cnt in by_class.values() for c in cnt} - set(catalog.classes))
    templates = list(catalog.templates) + sorted(
        {t for cnt in by_template.values() for t in cnt} - set(catalog.templates))
    ns = sorted(set(range(catalog.domain.n_min, catalog.domain.n_max + 1)) | {n for c in by_n.values() for n in c})
    return {
        "packages": packages,
        "rows": {p: len(rows[p]) for p in packages},
        "classes": classes,
        "templates": templates,
        "ns": ns,
        "labels": ["SAT", "UNSAT"],
        "by_class": by_class,
        "by_template": by_template,
        "by_n": by_n,
        "by_label": by_label,
    }
