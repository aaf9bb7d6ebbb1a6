"""Other benchmarks' prompts as LogicVal dataset folders: label every imported spec with the solver, write the
folder atomically.

An importer (``logicval_hf/benchmark/importers/<source>.py``) turns each line or prompt of its source into a
spec plus the source's own fields; `import_rows` labels them (SAT with a witness scene, UNSAT with a minimal
core, both by clingo) and `write_import` writes::

    README.md            a short card: the source, its licence, the semantic choices, label counts
    data/test.parquet    one row per imported prompt

which loads with ``datasets.load_dataset(folder)``. The folder is built beside ``out`` and moved into place in
one step, so a failed import never leaves a partial folder (an existing ``out`` stays until the new one is
complete). When ``out`` holds an earlier import, its labels are compared with the new ones, prompt by prompt (by the
``source`` column): the summary's ``relabelled`` and the card's changelog say how many changed and which.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.programs import spec_program
from logicval_hf.asp.solver import Solver
from logicval_hf.common.atomic import replace_dir
from logicval_hf.common.markdown import md_table
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import CONSTRAINT_ITEM_TEMPLATE, constraint_names, constraint_text
from logicval_hf.errors import SolverLimit, SolverTimeout

__all__ = ["CHANGELOG", "IMPORT_COLUMNS", "SourceError", "import_rows", "previous_labels", "relabelled", "unsat_table",
           "write_import"]

#: the benchmark's columns every imported row has (the source's own fields follow them)
IMPORT_COLUMNS = {
    "id": "Row id, `<source>-<4-digit index>`, in source order.",
    "source": "Where the prompt comes from: the benchmark's name and the file (and line) it was read from.",
    "spec_json": "The LogicVal specification the importer built (domain, optional n and score threshold, "
                 "constraints): the input of `logicval solve` / `logicval verify`.",
    "asp_program": "The standalone ASP program of the spec: an answer set iff the label is SAT.",
    "label": "`SAT` or `UNSAT`, decided by clingo.",
    "prompt_short": "The spec in LogicVal's short English register, one `Constraint i:` line per constraint.",
    "witness": "For SAT: a scene graph (JSON) that satisfies every constraint; empty for UNSAT.",
    "core": "For UNSAT: a minimal set of contradicting constraints (0-based indices); empty for SAT.",
    "core_text": "For UNSAT: those constraints in words; empty for SAT.",
}


class SourceError(ValueError):
    """A malformed line or field of a source file: the message names the file, the line and the field."""

    def __init__(self, path: str | Path, line: int | None, field: str, message: str):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {field}: {message}")


def _prompt(spec: Spec) -> str:
    texts = [constraint_text(c, spec.n) for c in spec.constraints]
    if len(texts) == 1:
        return texts[0]
    return "\n".join(CONSTRAINT_ITEM_TEMPLATE.format(i=i, text=t) for i, t in enumerate(texts, 1))


def import_rows(
    items: Iterable[tuple[Spec, str, Mapping[str, Any]]],
    prefix: str,
    solver: Solver | None = None,
    progress: bool = False,
    total: int | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    skipped: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Label imported specs and make dataset rows.

    Args:
        items: ``(spec, source, fields)`` per prompt: the spec, where it was read from, the source's own fields
            (JSON-serialisable values; nested ones are stored as JSON strings).
        prefix: the id prefix (``geneval`` gives ``geneval-0000``, ...); ids number the rows made, in order.
        solver: reused across calls (groundings are cached per spec).
        progress: show a progress bar.
        timeout: the time budget of each label in seconds (None: no budget).
        skipped: if given, a prompt that gets no label (past its budget, or needing more objects than the domain
            allows) is left out and ``{"source", "why"}`` appended here; otherwise that is an error.
    Returns:
        One dict per labelled item with `IMPORT_COLUMNS` and then the source's fields.
    Raises:
        ValueError: a prompt got no label (naming its source and why) and ``skipped`` is None.
    """
    from tqdm.auto import tqdm

    solver = solver or Solver()
    rows: list[dict[str, Any]] = []
    for spec, source, fields in tqdm(items, total=total, disable=not progress, desc=f"import {prefix}", unit="prompt"):
        try:
            result = solver.solve(spec, timeout=timeout)
        except (SolverTimeout, SolverLimit) as e:
            if skipped is None:
                raise type(e)(f"{source}: {e}") from None
            skipped.append({"source": source, "why": str(e)})
            continue
        row: dict[str, Any] = {
            "id": f"{prefix}-{len(rows):04d}",
            "source": source,
            "spec_json": spec.to_json(),
            "asp_program": spec_program(spec),
            "label": result.label,
            "prompt_short": _prompt(spec),
            "witness": result.witness.to_json() if result.witness is not None else "",
            "core": list(result.core or ()),
            "core_text": _core_text(spec, result.core) if result.core else "",
        }
        for key, value in fields.items():
            if key in row:
                raise ValueError(f"source field {key!r} would overwrite a benchmark column")
            row[key] = value if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(value)
        rows.append(row)
    return rows


def _core_text(spec: Spec, core: Sequence[int]) -> str:
    return " | ".join(f"{constraint_names([i])}: {constraint_text(spec.constraints[i], spec.n)}" for i in core)


def unsat_table(rows: Sequence[Mapping[str, Any]], group: str) -> str:
    """Markdown: per value of ``group`` (e.g. the source's tag), how many prompts were imported and how many the
    solver found UNSAT, with the cores' templates as the reason."""
    by: dict[str, list[Mapping[str, Any]]] = collections.defaultdict(list)
    for r in rows:
        by[str(r.get(group, ""))].append(r)
    table = []
    for key in sorted(by):
        rs = by[key]
        unsat = [r for r in rs if r["label"] == "UNSAT"]
        reasons: collections.Counter[str] = collections.Counter()
        for r in unsat:
            spec = json.loads(r["spec_json"])
            reasons[" + ".join(sorted(spec["constraints"][i]["template"] for i in r["core"]))] += 1
        why = "; ".join(f"{k} ({v})" for k, v in reasons.most_common(4)) or "-"
        table.append([key, len(rs), len(unsat), why])
    table.append(["all", len(rows), sum(r["label"] == "UNSAT" for r in rows), ""])
    return md_table([group, "prompts", "UNSAT", "cores (templates)"], table)


#: the card's standing changelog entry: what the labels of box relations mean
CHANGELOG = (
    "Box relations (left, right, above, below, larger, smaller, inside, containing) are decided for real boxes: as "
    "orders of the objects on each axis, of their areas and of containment, a spec being UNSAT only when no boxes in "
    "the image satisfy it (`docs/solver.md`, \"Box geometry\"). Imports labelled before placed boxes on a 3 x 3 "
    "lattice of cells and four sizes: a chain of more than three objects on one axis, or a box inside another and "
    "off its centre, was labelled UNSAT. Re-importing into a folder that holds such an import reports the labels "
    "that changed (below, and in the summary's `relabelled`)."
)


def previous_labels(out: str | Path) -> dict[str, str]:
    """``source -> label`` of the import already in folder ``out`` (empty when there is none or it cannot be read)."""
    path = Path(out) / "data" / "test.parquet"
    if not path.is_file():
        return {}
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=["source", "label"]).to_pydict()
    except Exception:  # noqa: BLE001  an unreadable old folder is replaced like any other; nothing to compare
        return {}
    return dict(zip(table["source"], table["label"], strict=True))


def relabelled(before: Mapping[str, str], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """How the labels of the prompts of an earlier import changed: ``{"compared", "changed": {"UNSAT -> SAT": k,
    ...}, "sources": [...]}`` (None without an earlier import)."""
    if not before:
        return None
    moves: collections.Counter[str] = collections.Counter()
    sources = []
    compared = 0
    for r in rows:
        old = before.get(r["source"])
        if old is None:
            continue
        compared += 1
        if old != r["label"]:
            moves[f"{old} -> {r['label']}"] += 1
            sources.append(r["source"])
    return {"compared": compared, "changed": dict(sorted(moves.items())), "sources": sources}


def _changelog(changes: Mapping[str, Any] | None) -> list[str]:
    lines = ["## Changelog", "", f"- {CHANGELOG}"]
    if changes is not None:
        moved = ", ".join(f"{k}: {v}" for k, v in changes["changed"].items()) or "none"
        lines.append(f"- Relabelled against the import this folder held: {len(changes['sources'])} of "
                     f"{changes['compared']} labels changed ({moved})"
                     + (": " + ", ".join(f"`{s}`" for s in changes["sources"]) if changes["sources"] else "") + ".")
    return [*lines, ""]


def _card(name: str, rows: Sequence[Mapping[str, Any]], about: str, group: str | None,
          changes: Mapping[str, Any] | None = None) -> str:
    labels = collections.Counter(r["label"] for r in rows)
    columns = md_table(["column", "meaning"], [[k, v] for k, v in IMPORT_COLUMNS.items()])
    extra = [k for k in rows[0] if k not in IMPORT_COLUMNS] if rows else []
    lines = [
        "---",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: test",
        "    path: data/test.parquet",
        "---",
        "",
        f"# {name} through LogicVal",
        "",
        about.strip(),
        "",
        f"{len(rows)} prompts: {labels.get('SAT', 0)} SAT, {labels.get('UNSAT', 0)} UNSAT (labels by clingo).",
        "",
    ]
    if group is not None and rows:
        lines += [unsat_table(rows, group), ""]
    lines += ["## Columns", "", columns, "", f"Source fields: {', '.join(f'`{k}`' for k in extra) or 'none'}.", ""]
    lines += _changelog(changes)
    return "\n".join(lines)


def write_import(
    rows: Sequence[Mapping[str, Any]], out: str | Path, name: str, about: str, group: str | None = None,
) -> dict[str, Any]:
    """Write the dataset folder ``out`` (README.md + data/test.parquet) atomically.

    Returns ``{"folder", "rows", "labels"}``, and ``relabelled`` (`relabelled`) when ``out`` held an import.
    Raises:
        ValueError: no rows, or rows whose columns differ.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not rows:
        raise ValueError(f"nothing to import into {out}")
    keys = list(rows[0])
    for r in rows:
        if list(r) != keys:
            raise ValueError(f"row {r.get('id')} has columns {list(r)}, expected {keys}")
    out = Path(out)
    changes = relabelled(previous_labels(out), rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        (tmp / "data").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(list(rows)), tmp / "data" / "test.parquet", compression="zstd")
        (tmp / "README.md").write_text(_card(name, rows, about, group, changes), encoding="utf-8")
        replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    labels = collections.Counter(r["label"] for r in rows)
    summary: dict[str, Any] = {"folder": str(out), "rows": len(rows), "labels": dict(labels)}
    if changes is not None:
        summary["relabelled"] = changes
    return summary
