"""A LogicVal dataset folder read back as typed rows: what ``logicval run --dataset DIR`` scores instead of the
benchmark built from a seed.

A dataset folder is ``README.md`` + ``data/*.parquet`` with one row per spec (at least ``id``, ``label`` and
``spec_json``): a ``logicval import`` output (``data/test.parquet``: GenEval, Imag-Eval, GIR-Bench's numerical
reasoning and spatial layout) or a ``logicval build-dataset`` output (``data/<package>.parquet``)::

    from logicval_hf.benchmark.dataset_folder import read_dataset
    ds = read_dataset("geneval_import")
    ds.name, ds.fingerprint, ds.rows[0].spec.domain.name, ds.rows[0].package

A row's package is its ``package`` column; an imported row has none and belongs to its source, the prefix of its id
(``geneval-0003`` -> ``geneval``, ``gir-spatial-0001`` -> ``gir-spatial``). The fingerprint hashes what decides a
verdict (each row's id, package, label and spec), so a run names the exact rows it scored and a re-import that
changed a label is told apart. A folder of GIR-Bench target texts (``text`` column, no specs) is not a spec
dataset: its images are scored by ``logicval text-score IMAGES --targets DIR``, and `read_dataset` says so.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.rows import BenchmarkRow

__all__ = ["DatasetRows", "read_dataset", "row_package"]

_INDEXED = re.compile(r"^(?P<prefix>.+?)-\d+$")


@dataclass(frozen=True)
class DatasetRows:
    """The rows of a dataset folder, typed, with its name (the folder's) and fingerprint (`read_dataset`)."""

    folder: Path
    name: str
    fingerprint: str
    rows: tuple[BenchmarkRow, ...]

    def describe(self) -> dict[str, Any]:
        """What a report says of the dataset: ``{"name", "fingerprint", "rows"}``."""
        return {"name": self.name, "fingerprint": self.fingerprint, "rows": len(self.rows)}


def row_package(row: dict[str, Any], file_stem: str) -> str:
    """A row's package: its ``package`` column, else its id's prefix (an imported row's source), else the file's
    name."""
    if row.get("package"):
        return str(row["package"])
    m = _INDEXED.match(str(row.get("id") or ""))
    return m.group("prefix") if m else file_stem


def _fingerprint(rows: tuple[BenchmarkRow, ...]) -> str:
    h = hashlib.sha1()
    for r in rows:
        h.update(json.dumps([r.id, r.package, r.label, r.spec_json], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:12]


def _columns(row: dict[str, Any], stem: str) -> dict[str, Any]:
    """A stored row as `BenchmarkRow.from_dict` reads it: its package filled in, an empty witness or core (an
    import's UNSAT / SAT rows) as none."""
    out = dict(row)
    out["package"] = row_package(row, stem)
    if out.get("witness") in ("", None):
        out["witness"] = None
    return out


def read_dataset(folder: str | Path) -> DatasetRows:
    """The typed rows of the dataset folder ``folder``, in file order (files sorted by name).

    Raises:
        ValueError: one line naming the problem: no such folder, no ``data/*.parquet`` (not a dataset folder), a
            file that is not Parquet, a folder of target texts (scored by ``logicval text-score``), no rows, a row
            without an id, label or spec, a spec that does not parse, an id used twice.
    """
    import pyarrow.parquet as pq

    path = Path(folder).expanduser()
    if not path.is_dir():
        raise ValueError(f"dataset {str(folder)!r}: no such folder (a `logicval import` or `logicval build-dataset` "
                         "output)")
    files = sorted((path / "data").glob("*.parquet"))
    if not files:
        raise ValueError(f"dataset {str(folder)!r}: no data/*.parquet; not a LogicVal dataset folder (a `logicval "
                         "import` or `logicval build-dataset` output)")
    rows: list[BenchmarkRow] = []
    seen: set[str] = set()
    for file in files:
        where = f"dataset {str(folder)!r}: data/{file.name}"
        try:
            table = pq.read_table(file)
        except Exception as e:  # noqa: BLE001  pyarrow raises several types for a file that is not Parquet
            raise ValueError(f"{where}: not a Parquet file ({str(e).splitlines()[0]})") from None
        names = table.column_names
        if "spec_json" not in names and "text" in names:
            raise ValueError(f"dataset {str(folder)!r} is a folder of target texts (GIR-Bench text rendering), not "
                             f"of specs: score its images with `logicval text-score IMAGES --targets {folder}`")
        missing = [c for c in ("id", "label", "spec_json") if c not in names]
        if missing:
            raise ValueError(f"{where}: no column(s) {missing}; a LogicVal dataset row has id, label and spec_json")
        for record in table.to_pylist():
            try:
                row = BenchmarkRow.from_dict(_columns(record, file.stem))
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
            if row.label not in ("SAT", "UNSAT"):
                raise ValueError(f"{where}: row {row.id!r}: label {row.label!r} is neither SAT nor UNSAT")
            if row.id in seen:
                raise ValueError(f"{where}: row id {row.id!r} is used twice")
            seen.add(row.id)
            rows.append(row)
    if not rows:
        raise ValueError(f"dataset {str(folder)!r}: no rows")
    typed = tuple(rows)
    return DatasetRows(path, path.resolve().name, _fingerprint(typed), typed)
