"""Reading meta-evaluation records: CSV, JSON Lines or a JSON list, wide or long, with annotations joined
(see `logicval_hf.scoring.meta`)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.contract.scene import Scene

__all__ = ["DEFECT_FLAGS", "FLAGS", "RESERVED", "MetaRecord", "load_records"]

#: columns that are never metric scores in the wide format
RESERVED = frozenset({
    "id", "model", "human", "known_truth", "metric", "score", "spec_json", "predicted_scene", "annotated_scene",
    "scene", "package", "label", "prompt", "image", "path", "file", "split", "n", "m",
    "rendering_error", "deformed", "empty_scene", "notes", "n_boxes", "updated_by", "updated_at", "annotation",
})
#: the annotation flags of the Space's Annotate tab (`logicval_hf.space.annotation_values.FLAGS`)
FLAGS = ("rendering_error", "deformed", "empty_scene")
#: flags that mark a defective image (an empty scene is an answer: correct for UNSAT specifications)
DEFECT_FLAGS = ("rendering_error", "deformed")
_TRUE = {"1", "true", "yes", "y", "t"}
_FALSE = {"0", "false", "no", "n", "f"}


@dataclass
class MetaRecord:
    """One (model, image): the human verdict, metric scores, and optionally scene graphs, the spec and the known
    truth (a built-in generator's: whether the scene it intended satisfies the spec; the verdict used where no
    human one is given or derived)."""

    id: str
    model: str
    human: int | None
    scores: dict[str, float] = field(default_factory=dict)
    predicted_scene: Scene | None = None
    annotated_scene: Scene | None = None
    spec_json: str | None = None
    flags: dict[str, bool] = field(default_factory=dict)
    package: str | None = None
    known_truth: int | None = None

    @property
    def flagged(self) -> bool | None:
        """A rendering error or a deformed object (`DEFECT_FLAGS`); ``None`` without flag annotations."""
        if not any(f in self.flags for f in DEFECT_FLAGS):
            return None
        return any(self.flags.get(f, False) for f in DEFECT_FLAGS)


_PACKAGE_PREFIX = re.compile(r"^(\d+(?:UN)?SAT)-")


def _package_of(rid: str, value: Any) -> str | None:
    if not _missing(value):
        return str(value)
    m = _PACKAGE_PREFIX.match(rid)
    return m.group(1) if m else None


def _read_flags(rec: MetaRecord, r: Mapping[str, Any], where: str) -> None:
    for f in FLAGS:
        if not _missing(r.get(f)):
            rec.flags[f] = bool(_human(r[f], f"{where} {f}"))


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, str) and v.strip() == "") or (isinstance(v, float) and math.isnan(v))


def _human(v: Any, where: str) -> int | None:
    if _missing(v):
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (int, float)) and v in (0, 1):
        return int(v)
    t = str(v).strip().lower()
    if t in _TRUE:
        return 1
    if t in _FALSE:
        return 0
    try:
        f = float(t)
    except ValueError:
        f = None
    if f in (0.0, 1.0):
        return int(f)
    raise ValueError(f"{where}: human verdict must be 0 or 1, got {v!r}")


def _number(v: Any) -> float | None:
    if _missing(v):
        return None
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    t = str(v).strip().lower()
    if t in ("true", "false"):
        return float(t == "true")
    try:
        f = float(t)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _scene(v: Any, where: str) -> Scene | None:
    if _missing(v):
        return None
    from logicval_hf.perception.given import to_scene

    return to_scene(v, what=where)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8-sig")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if suffix == ".tsv" else ",")
        return [dict(r) for r in reader]
    stripped = text.lstrip()
    if suffix == ".json" or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ValueError(f"{path}: expected a JSON list of objects (one per image)")
        return data
    if suffix == ".jsonl" or stripped.startswith("{"):
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path} line {lineno}: not valid JSON ({e})") from None
                if not isinstance(r, dict):
                    raise ValueError(f"{path} line {lineno}: expected a JSON object")
                rows.append(r)
        return rows
    reader = csv.DictReader(io.StringIO(text))
    return [dict(r) for r in reader]


def load_records(path: str | Path, annotations: str | Path | None = None,
                 metrics: Sequence[str] | None = None) -> list[MetaRecord]:
    """Read records (wide or long format; see the module docstring) and join annotations.

    ``annotations``: a file of ``{"id", optional "model", "scene" | "annotated_scene", optional
    "predicted_scene"}`` records (JSON Lines / JSON list / CSV), matched by (model, id) then by id.
    ``metrics`` restricts the metric columns. Raises `ValueError` naming the row of bad input.
    """
    path = Path(path)
    rows = _read_rows(path)
    if not rows:
        raise ValueError(f"{path}: no rows")
    long = all("metric" in r and "score" in r for r in rows)
    records: dict[tuple[str, str], MetaRecord] = {}
    for k, r in enumerate(rows):
        where = f"{path} row {k + 1}"
        if _missing(r.get("id")):
            raise ValueError(f"{where}: missing 'id'")
        rid = str(r["id"])
        model = str(r.get("model")) if not _missing(r.get("model")) else "model"
        key = (model, rid)
        rec = records.get(key)
        if rec is None:
            rec = records[key] = MetaRecord(rid, model, None)
        h = _human(r.get("human"), where)
        if h is not None:
            if rec.human is not None and rec.human != h:
                raise ValueError(f"{where}: conflicting human verdicts for model {model!r}, id {rid!r}")
            rec.human = h
        truth = _human(r.get("known_truth"), f"{where} known_truth")
        if truth is not None:
            rec.known_truth = truth
        if long:
            name = str(r["metric"])
            s = _number(r["score"])
            if s is None and not _missing(r["score"]):
                raise ValueError(f"{where}: score {r['score']!r} is not a number")
            if s is not None and (metrics is None or name in metrics):
                rec.scores[name] = s
        else:
            for name, v in r.items():
                if name in RESERVED or (metrics is not None and name not in metrics):
                    continue
                s = _number(v)
                if s is not None:
                    rec.scores[name] = s
                elif not _missing(v) and metrics is not None:
                    raise ValueError(f"{where}: {name} = {v!r} is not a number")
        pred = r.get("predicted_scene", r.get("scene"))
        if not _missing(pred):
            rec.predicted_scene = _scene(pred, f"{where} predicted_scene")
        if not _missing(r.get("annotated_scene")):
            rec.annotated_scene = _scene(r["annotated_scene"], f"{where} annotated_scene")
        if not _missing(r.get("spec_json")):
            rec.spec_json = r["spec_json"] if isinstance(r["spec_json"], str) else json.dumps(r["spec_json"])
        _read_flags(rec, r, where)
        rec.package = rec.package or _package_of(rid, r.get("package"))
    if not long and metrics is None:  # a wide column is a metric only if every non-empty value is a number
        numeric = {name for r in rows for name in r if name not in RESERVED}
        for r in rows:
            numeric -= {n for n, v in r.items() if n in numeric and not _missing(v) and _number(v) is None}
        for rec in records.values():
            rec.scores = {n: s for n, s in rec.scores.items() if n in numeric}
    if annotations is not None:
        _join_annotations(list(records.values()), Path(annotations))
    return list(records.values())


def _join_annotations(records: list[MetaRecord], path: Path) -> None:
    rows = _read_rows(path)
    by_key: dict[tuple[str | None, str], dict[str, Any]] = {}
    for k, row in enumerate(rows):
        if _missing(row.get("id")):
            raise ValueError(f"{path} row {k + 1}: missing 'id'")
        model = None if _missing(row.get("model")) else str(row["model"])
        by_key[(model, str(row["id"]))] = row
    for rec in records:
        r = by_key.get((rec.model, rec.id)) or by_key.get((None, rec.id))
        if r is None:
            continue
        where = f"{path} id {rec.id!r}"
        ann = next((r[c] for c in ("annotated_scene", "scene", "annotation") if not _missing(r.get(c))), None)
        if ann is not None:
            rec.annotated_scene = _scene(ann, f"{where} annotated scene")
        if not _missing(r.get("predicted_scene")):
            rec.predicted_scene = _scene(r["predicted_scene"], f"{where} predicted_scene")
        if rec.spec_json is None and not _missing(r.get("spec_json")):
            rec.spec_json = r["spec_json"] if isinstance(r["spec_json"], str) else json.dumps(r["spec_json"])
        if rec.human is None and not _missing(r.get("human")):
            rec.human = _human(r["human"], where)
        _read_flags(rec, r, where)
        if rec.package is None:
            rec.package = _package_of(rec.id, r.get("package"))
