"""GIR-Bench's text-to-image prompt files (github.com/lihxxx/GIR-Bench; the files live on the Hugging Face Hub) as
LogicVal folders: numerical reasoning and spatial layout as specs in the ``gir`` box domain, labelled SAT/UNSAT by
the solver; text rendering as a folder of target texts, scored by ``logicval text-score`` (GIR-Bench's word-level
continuous substring score, `logicval_hf.tasks.text_rendering`).

Each file is a JSON list; its kind is read from its entries (all must be of one kind):

* ``NumericalReasoning.json``: ``{"id", "prompt", "task": {"objects": [name, ...], "number": [k, ...]}}``;
* ``SpatialLayout.json``: ``{"id", "prompt", "task": {"objects": [...] (or lists of names, groups), "colors"?:
  [...] (the same shape; "" for none), "relative_position": [{"subject", "object", "direction"}, ...]}}``, a
  subject or object being an object's index, its name, or a list of names (a group);
* ``TextRendering.json``: ``{"id", "prompt", "text"}``.

Semantic choices (GIR-Bench's ``eval/`` scripts decide with a VLM's boxes; the spec says the same over a scene graph)
------------------------------------------------------------------------------------------------------------------
* **Domain.** ``gir``: each object has a free-text ``class`` (the name GIR-Bench asks the detector for) and an
  optional free-text ``color``, both folded as GIR-Bench folds text; relations by GIR-Bench's box rule (the direction
  of the centre offset within 60 degrees of the axis, none while the centres are closer than a quarter of the two
  boxes' sizes on both axes), declared in ``contract/domains/gir.json``.
* **Numerical reasoning.** GIR-Bench's verdict: every listed object's count equals its number and none is missing.
  Each (name, k) becomes ``X1/count_cmp`` class = name, ``=`` k; a k of 0 also gets ``>= 1`` (GIR-Bench counts a
  missing object as a failure), so the solver proves such a prompt UNSAT, as it does a name listed twice with two
  numbers.
* **Spatial layout.** GIR-Bench's verdict: every object found exactly once (``color name`` when it has a colour), and
  every relation holds. Each object becomes a count of exactly 1 (``X1/count2_cmp`` class and colour, or
  ``X1/count_cmp`` class); each relation, for every member of the subject and every member of the object (one each
  unless a group), a pair in the relation: ``C4/pair_rel``, ``C4/pair_2prop_rel`` or ``X6/pair_2prop_1prop_rel``
  (with the inverse relation when only the object has a colour). ``left``/``right`` keep their names, ``up`` and
  ``above`` become above, ``down`` and ``below`` below. A group is where the spec differs from GIR-Bench, which
  relates the box that encloses the group's boxes: the spec asks it of every member.
* **Text rendering.** One row per entry with its ``text`` (the target) and ``prompt``; the target must hold a letter
  or digit once folded.

Every entry is validated, and every spec built, before anything is labelled or written; a malformed entry, an
unknown direction or a reference to no object raises `SourceError` naming the file, the entry (index and id) and the
field, and nothing is written.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.benchmark.imported import SourceError, import_rows, write_import
from logicval_hf.common.atomic import replace_dir
from logicval_hf.common.markdown import md_table
from logicval_hf.contract.folding import fold_text
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SpecError

__all__ = ["ABOUT", "DIRECTIONS", "KINDS", "import_source", "read_entries", "spec_for"]

#: GIR-Bench's directions -> the gir domain's relations
DIRECTIONS = {"left": "left", "right": "right", "up": "above", "above": "above", "down": "below", "below": "below"}
KINDS = ("numerical", "spatial", "text")
_NAMES = {"numerical": "GIR-Bench numerical reasoning", "spatial": "GIR-Bench spatial layout",
          "text": "GIR-Bench text rendering"}

ABOUT = (
    "Prompts of GIR-Bench (Li et al., 2025; https://github.com/lihxxx/GIR-Bench), read from its `{file}`, one row "
    "per entry, as specs in LogicVal's `gir` domain: objects with a free-text class and an optional colour (folded "
    "as GIR-Bench folds text), relations by GIR-Bench's box rule. {rule} The importer's module docstring "
    "(`logicval_hf.benchmark.importers.gir_bench`) lists every choice."
)
_RULES = {
    "numerical": "Every listed object's count equals its number (a number of 0 is unsatisfiable, as GIR-Bench "
                 "also fails a missing object).",
    "spatial": "Every object appears exactly once and every relation holds between the objects named (for a group, "
               "between every member and every member of the other side; GIR-Bench relates the groups' "
               "enclosing boxes).",
}


class _Entry:
    """Where one entry sits, for messages: ``FILE: [i] (id X).field: message``."""

    def __init__(self, path: Path, index: int, entry: Any):
        self.path, self.index = path, index
        eid = entry.get("id") if isinstance(entry, Mapping) else None
        self.label = f"[{index}]" + (f" (id {eid})" if eid is not None else "")

    def error(self, field: str, message: str) -> SourceError:
        return SourceError(self.path, None, f"{self.label}{'.' + field if field else ''}", message)


def _kind(entry: Any, where: _Entry) -> str:
    if not isinstance(entry, Mapping):
        raise where.error("", f"an entry must be a JSON object, got {type(entry).__name__}")
    if "text" in entry and "task" not in entry:
        return "text"
    task = entry.get("task")
    if not isinstance(task, Mapping):
        raise where.error("task", "missing, or not an object: an entry has 'task' (numerical reasoning, spatial "
                                  "layout) or 'text' (text rendering)")
    if "number" in task:
        return "numerical"
    if "relative_position" in task:
        return "spatial"
    raise where.error("task", f"has keys {sorted(task)}; expected 'objects' with 'number' (numerical reasoning) or "
                              "'relative_position' (spatial layout)")


def _name(v: Any, field: str, where: _Entry) -> str:
    if not isinstance(v, str) or not fold_text(v):
        raise where.error(field, f"{v!r} is not a name (a text with a letter or digit)")
    return v


def _prompt(entry: Mapping[str, Any], where: _Entry) -> str:
    p = entry.get("prompt")
    if not isinstance(p, str) or not p.strip():
        raise where.error("prompt", f"must be a non-empty string, got {p!r}")
    return p


def _lit(prop: str, value: Any) -> dict[str, Any]:
    return {"prop": prop, "value": value, "negated": False}


def _numerical(task: Mapping[str, Any], where: _Entry) -> list[dict[str, Any]]:
    objects, numbers = task.get("objects"), task.get("number")
    if not isinstance(objects, list) or not objects:
        raise where.error("task.objects", f"must be a non-empty list of names, got {objects!r}")
    if not isinstance(numbers, list) or len(numbers) != len(objects):
        raise where.error("task.number", f"must be a list of {len(objects)} counts (one per object), got {numbers!r}")
    out = []
    for i, (obj, k) in enumerate(zip(objects, numbers, strict=True)):
        name = _name(obj, f"task.objects[{i}]", where)
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise where.error(f"task.number[{i}]", f"must be a whole number >= 0, got {k!r}")
        out.append({"template": "X1/count_cmp", "params": {"A1": _lit("class", name), "T": "=", "K": k}})
        if k == 0:  # GIR-Bench fails an image whose detections miss a listed object
            out.append({"template": "X1/count_cmp", "params": {"A1": _lit("class", name), "T": ">=", "K": 1}})
    return out


def _flat(v: Any) -> list[Any]:
    return [x for item in v for x in (item if isinstance(item, list) else [item])]


def _spatial(task: Mapping[str, Any], where: _Entry) -> list[dict[str, Any]]:
    raw = task.get("objects")
    if not isinstance(raw, list) or not raw:
        raise where.error("task.objects", f"must be a non-empty list of names (or lists of names), got {raw!r}")
    names = [_name(o, f"task.objects[{i}]", where) for i, o in enumerate(_flat(raw))]
    colours_raw = task.get("colors") or []
    if not isinstance(colours_raw, list):
        raise where.error("task.colors", f"must be a list of colours, got {colours_raw!r}")
    colours = _flat(colours_raw)
    if len(colours) > len(names):
        raise where.error("task.colors", f"has {len(colours)} colours for {len(names)} objects")
    for i, c in enumerate(colours):
        if c is not None and not isinstance(c, str):
            raise where.error(f"task.colors[{i}]", f"must be a colour name or \"\", got {c!r}")
    colour = [colours[i] if i < len(colours) and colours[i] and fold_text(colours[i]) else None
              for i in range(len(names))]
    labels = [f"{colour[i]} {names[i]}" if colour[i] else names[i] for i in range(len(names))]

    def resolve(ref: Any, field: str) -> list[int]:
        if isinstance(ref, list):
            if not ref:
                raise where.error(field, "an empty group")
            return [i for k, r in enumerate(ref) for i in resolve(r, f"{field}[{k}]")]
        if isinstance(ref, int) and not isinstance(ref, bool):
            if not 0 <= ref < len(names):
                raise where.error(field, f"index {ref} is not an object (there are {len(names)})")
            return [ref]
        if isinstance(ref, str):
            hits = [i for i in range(len(names)) if fold_text(ref) in (fold_text(names[i]), fold_text(labels[i]))]
            if len(hits) == 1:
                return hits
            what = "names no object" if not hits else f"names {len(hits)} objects"
            raise where.error(field, f"{ref!r} {what}; the objects are {labels}")
        raise where.error(field, f"must be an object's index, its name or a list of names, got {ref!r}")

    out = []
    for i in range(len(names)):  # each object exactly once
        if colour[i]:
            out.append({"template": "X1/count2_cmp", "params": {"A1": _lit("class", names[i]),
                                                                "A2": _lit("color", colour[i]), "T": "=", "K": 1}})
        else:
            out.append({"template": "X1/count_cmp", "params": {"A1": _lit("class", names[i]), "T": "=", "K": 1}})
    relations = task.get("relative_position")
    if not isinstance(relations, list):
        raise where.error("task.relative_position", f"must be a list of relations, got {relations!r}")
    for k, rel in enumerate(relations):
        field = f"task.relative_position[{k}]"
        if not isinstance(rel, Mapping) or not {"subject", "object", "direction"} <= set(rel):
            raise where.error(field, f"must be an object with 'subject', 'object' and 'direction', got {rel!r}")
        direction = rel["direction"]
        if direction not in DIRECTIONS:
            raise where.error(f"{field}.direction", f"{direction!r} is not a direction; expected one of "
                                                    f"{list(DIRECTIONS)}")
        for a in resolve(rel["subject"], f"{field}.subject"):
            for b in resolve(rel["object"], f"{field}.object"):
                out.append(_pair(names, colour, a, b, DIRECTIONS[direction]))
    return out


_INVERSE = {"left": "right", "right": "left", "above": "below", "below": "above"}


def _pair(names: Sequence[str], colour: Sequence[str | None], a: int, b: int, rel: str) -> dict[str, Any]:
    def lits(i: int) -> list[dict[str, Any]]:
        return [_lit("class", names[i])] + ([_lit("color", colour[i])] if colour[i] else [])

    la, lb = lits(a), lits(b)
    r = {"rel": rel, "negated": False}
    if len(la) == len(lb) == 1:
        return {"template": "C4/pair_rel", "params": {"A1": la[0], "B1": lb[0], "R1": r}}
    if len(la) == len(lb) == 2:
        return {"template": "C4/pair_2prop_rel",
                "params": {"A1": la[0], "A2": la[1], "B1": lb[0], "B2": lb[1], "R1": r}}
    if len(la) == 2:
        return {"template": "X6/pair_2prop_1prop_rel", "params": {"A1": la[0], "A2": la[1], "B1": lb[0], "R1": r}}
    return {"template": "X6/pair_2prop_1prop_rel", "params": {"A1": lb[0], "A2": lb[1], "B1": la[0],
                                                              "R1": {"rel": _INVERSE[rel], "negated": False}}}


def spec_for(entry: Mapping[str, Any]) -> Spec:
    """The spec of one numerical reasoning or spatial layout entry (a dict; see the module docstring).

    Raises:
        SourceError: a malformed entry (the location reads ``<entry>``).
    """
    where = _Entry(Path("<entry>"), 0, entry)
    kind = _kind(entry, where)
    if kind == "text":
        raise where.error("", "a text rendering entry has no spec; its target is scored by logicval text-score")
    return _spec(kind, entry, where)


def _spec(kind: str, entry: Mapping[str, Any], where: _Entry) -> Spec:
    _prompt(entry, where)
    cons = _numerical(entry["task"], where) if kind == "numerical" else _spatial(entry["task"], where)
    try:
        return Spec.from_dict({"domain": "gir", "constraints": cons}, allowed_m=None)
    except SpecError as e:
        raise where.error("task", str(e)) from None


def read_entries(path: str | Path) -> tuple[str, list[tuple[_Entry, dict[str, Any]]]]:
    """The file's kind and its entries, each checked to be of that kind.

    Raises:
        SourceError: unreadable, not JSON, not a list, empty, or entries of different kinds.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise SourceError(path, None, "file", f"is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise SourceError(path, None, "file", f"cannot read it ({e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise SourceError(path, None, "file",
                          f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(data, list) or not data:
        got = "an empty list" if isinstance(data, list) else type(data).__name__
        raise SourceError(path, None, "file", f"must be a JSON list of entries, got {got}")
    entries = [(_Entry(path, i, e), e) for i, e in enumerate(data)]
    kinds = [_kind(e, where) for where, e in entries]
    for (where, _), kind in zip(entries, kinds, strict=True):
        if kind != kinds[0]:
            raise where.error("", f"is a {kind} entry in a file whose first entry is {kinds[0]}; one file, one task")
    return kinds[0], entries


def _text_rows(path: Path, entries: Sequence[tuple[_Entry, dict[str, Any]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for where, e in entries:
        prompt = _prompt(e, where)
        text = e["text"]
        if not isinstance(text, str) or not fold_text(text):
            raise where.error("text", f"{text!r} is not a target text (it needs a letter or digit)")
        eid = e.get("id", where.index + 1)
        rows.append({"id": f"gir-text-{len(rows):04d}", "source": f"GIR-Bench {path.name}{where.label}",
                     "gir_id": str(eid), "prompt": prompt, "text": text, "text_folded": fold_text(text),
                     "entry": json.dumps(e, ensure_ascii=False)})
    return rows


_TEXT_COLUMNS = {
    "id": "Row id, `gir-text-<4-digit index>`, in file order.",
    "source": "The file and entry it was read from.",
    "gir_id": "GIR-Bench's own id (its images are named `<id as 3 digits>.png`).",
    "prompt": "The text-to-image prompt.",
    "text": "The target: the text the image must show.",
    "text_folded": "The target as the score compares it (lower case, letters, digits and single spaces).",
    "entry": "The entry as read (JSON).",
}


def write_targets(rows: Sequence[Mapping[str, Any]], out: str | Path, file: str) -> dict[str, Any]:
    """A folder of target texts (README.md + data/test.parquet, ``load_dataset(out)``), written atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    card = "\n".join([
        "---", "configs:", "- config_name: default", "  data_files:", "  - split: test", "    path: data/test.parquet",
        "---", "", "# GIR-Bench text rendering through LogicVal", "",
        f"Target texts of GIR-Bench (https://github.com/lihxxx/GIR-Bench), read from its `{file}`: {len(rows)} "
        "prompts, each naming the text its image must show. Score a folder of images named by `gir_id` (or by `id`) "
        "with `logicval text-score IMAGES --targets THIS_FOLDER`: each image is read by OCR (PP-OCRv6, lines kept "
        "above confidence 0.5) and scored with GIR-Bench's word-level continuous substring score.", "",
        "## Columns", "", md_table(["column", "meaning"], [[k, v] for k, v in _TEXT_COLUMNS.items()]), ""])
    try:
        (tmp / "data").mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(list(rows)), tmp / "data" / "test.parquet", compression="zstd")
        (tmp / "README.md").write_text(card, encoding="utf-8")
        replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"folder": str(out), "rows": len(rows), "task": "text"}


def import_source(path: str | Path, out: str | Path, progress: bool = False,
                  timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Import one of GIR-Bench's prompt files into the folder ``out`` (see the module docstring): a labelled spec
    folder for numerical reasoning and spatial layout, a folder of target texts for text rendering.

    Returns:
        The summary: ``folder``, ``rows``, ``task`` and, for specs, ``labels`` (and ``relabelled``).
    Raises:
        SourceError: a bad entry (nothing is written). SolverTimeout / SolverLimit: an entry not labelled.
    """
    path = Path(path)
    kind, entries = read_entries(path)
    if kind == "text":
        return write_targets(_text_rows(path, entries), out, path.name)
    parsed = [(where, e, _spec(kind, e, where)) for where, e in entries]
    items = [(spec, f"GIR-Bench {path.name}{where.label}",
              {"gir_id": str(e.get("id", where.index + 1)), "prompt": e["prompt"], "task": json.dumps(e["task"])})
             for where, e, spec in parsed]
    rows = import_rows(items, f"gir-{kind}", progress=progress, total=len(items), timeout=timeout)
    summary = write_import(rows, out, _NAMES[kind], ABOUT.format(file=path.name, rule=_RULES[kind]))
    return {**summary, "task": kind}
