"""GenEval's prompts (``prompts/evaluation_metadata.jsonl`` of github.com/djghosh13/geneval, MIT licence) as
LogicVal specs in the ``coco`` domain, each labelled SAT/UNSAT by clingo.

One metadata line reads ``{"tag", "include": [{"class", "count", "color"?, "position"?: [relation, j]}],
"exclude"?: [{"class", "count"}], "prompt"}``. GenEval's ``evaluate_images.py`` keeps, per class, the detections
whose score is above a threshold, most confident first, and checks each include against the ``count`` most
confident detections of its class. The import reproduces that rule, constraint by constraint:

* **Threshold.** The spec's ``score_threshold`` is GenEval's: 0.3, or 0.9 for lines tagged ``counting``; a
  detection counts iff its score is strictly above it (as GenEval's ``>``). The tag must be one of GenEval's six
  (a misspelt ``counting`` would silently change the threshold).
* **Include** (class c, count K) -> ``X1/count_cmp``: the number of c is >= K (GenEval: fewer than K kept
  detections fail).
* **Colour** -> ``X2/ranked_prop``: the K most confident detections of c all have the colour. GenEval colours
  only the K objects it matched, so other (less confident) detections of c may have any colour; the ranked
  template says exactly that. ``rank`` is the confidence rank within the class (1 = most confident).
* **Position** [rel, j] -> ``X3/ranked_rel``: every one of the K most confident c is ``rel`` every one of the
  K_j most confident detections of include j's class (GenEval checks every pair of the two found groups).
  "left of" / "right of" / "above" / "below" become the coco relations left / right / above / below, decided
  by GenEval's box rule (centre offset shrunk by 0.1 x both boxes' sizes, normalised; > 0.5 on the axis). A
  pair of one object with itself (same class in both groups) never holds, as GenEval's zero offset gives no
  relation. GenEval fails a position whose target include found too few objects; the spec fails the target's
  own count constraint instead; the prompt's verdict is the same.
* **Exclude** (class c, count K) -> ``X1/count_cmp``: the number of c is < K.
* **The 16-detection cap.** GenEval keeps at most 16 detections per class. Counts must be 1..16, so the cap never
  changes a verdict (K <= 16 of the top 16 are the top K; "16 or more kept" iff "K or more" detections for
  K <= 16); a count above 16 is refused, since such an include could never be met and such an exclude never
  fail.
* **Ties.** Detections of a class with equal scores are ranked in input order (the first one is the more
  confident); GenEval leaves their order to numpy's ``argsort``.
* **Plain reading** (``spec_for(..., plain=True)``, used to measure what ranking changes): the same threshold,
  counts and excludes, but a coloured include becomes "at least K detections of c have the colour"
  (``X1/count2_cmp``) and a position "some c is rel some detection of include j's class" (``C4/pair_rel``);
  nothing reads the rank.

Every line is validated, and every spec built, before anything is labelled or written; a bad line raises
`SourceError` naming the file, the line and the field, and no folder is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.benchmark.imported import SourceError, import_rows, write_import
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SpecError

__all__ = ["ABOUT", "MAX_COUNT", "RELATIONS", "TAGS", "import_source", "spec_for", "threshold_for"]

TAGS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")
#: GenEval's relation strings -> the coco domain's relations
RELATIONS = {"left of": "left", "right of": "right", "above": "above", "below": "below"}
#: GenEval keeps at most this many detections per class
MAX_COUNT = 16
THRESHOLD, COUNTING_THRESHOLD = 0.3, 0.9

_LINE_KEYS = ("tag", "include", "exclude", "prompt")
_INCLUDE_KEYS = ("class", "count", "color", "position")
_EXCLUDE_KEYS = ("class", "count")

ABOUT = (
    "Prompts of GenEval (Ghosh et al., 2023; https://github.com/djghosh13/geneval, MIT licence), read from its "
    "`evaluation_metadata.jsonl`, one row per line, as specs in LogicVal's `coco` domain. Each spec reproduces "
    "GenEval's scoring rule over detections: only detections scoring above 0.3 count (0.9 for `counting`); an "
    "include of K objects of a class is a count >= K; its colour applies to the K most confident detections of "
    "the class (`X2/ranked_prop`, by detection-confidence rank), its position to every pair of the K most "
    "confident detections and the target include's most confident ones (`X3/ranked_rel`, GenEval's "
    "size-proportional box rule); an exclude of K is a count < K. Counts are 1..16 (GenEval keeps 16 detections "
    "per class, which then never matters); equal scores are ranked in input order. The importer's module "
    "docstring (`logicval_hf.benchmark.importers.geneval`) lists every choice, and the plain-logic reading "
    "without ranks that it can also build."
)


def _err(path: str | Path, line: int | None, field: str, msg: str) -> SourceError:
    return SourceError(path, line, field, msg)


def threshold_for(tag: str) -> float:
    """GenEval's detection threshold for a line's tag."""
    return COUNTING_THRESHOLD if tag == "counting" else THRESHOLD


def _keys(obj: Any, allowed: tuple[str, ...], required: tuple[str, ...], where: str,
          path: str | Path, line: int | None) -> None:
    if not isinstance(obj, Mapping):
        raise _err(path, line, where, f"must be a JSON object, got {type(obj).__name__}")
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        raise _err(path, line, where, f"unknown keys {unknown}; expected {list(allowed)}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise _err(path, line, where, f"missing {missing}")


def _count(v: Any, field: str, path: str | Path, line: int | None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise _err(path, line, field, f"must be a positive integer, got {v!r}")
    if v > MAX_COUNT:
        raise _err(path, line, field, f"{v} is more than the {MAX_COUNT} detections per class GenEval keeps, so "
                                      "such a count could never be met (an include) or never fail (an exclude)")
    return v


def _value(v: Any, attribute: str, field: str, path: str | Path, line: int | None) -> str:
    dom = load_domain("coco")
    if not isinstance(v, str) or v not in dom.values(attribute):
        raise _err(path, line, field, f"{v!r} is not a {attribute}; {dom.expected(attribute, v)}")
    return v


def _check(meta: Any, path: str | Path, line: int | None) -> None:
    """Validate one metadata line (raises `SourceError`)."""
    _keys(meta, _LINE_KEYS, ("tag", "include", "prompt"), "line", path, line)
    if meta["tag"] not in TAGS:
        raise _err(path, line, "tag", f"{meta['tag']!r} is not a GenEval tag; expected one of {list(TAGS)}")
    if not isinstance(meta["prompt"], str) or not meta["prompt"].strip():
        raise _err(path, line, "prompt", f"must be a non-empty string, got {meta['prompt']!r}")
    include = meta["include"]
    if not isinstance(include, list):
        raise _err(path, line, "include", f"must be a list, got {type(include).__name__}")
    exclude = meta.get("exclude", [])
    if not isinstance(exclude, list):
        raise _err(path, line, "exclude", f"must be a list, got {type(exclude).__name__}")
    if not include and not exclude:
        raise _err(path, line, "include", "is empty and there is no exclude: the line checks nothing")
    for i, req in enumerate(include):
        where = f"include[{i}]"
        _keys(req, _INCLUDE_KEYS, ("class", "count"), where, path, line)
        _value(req["class"], "class", f"{where}.class", path, line)
        _count(req["count"], f"{where}.count", path, line)
        if "color" in req:
            _value(req["color"], "color", f"{where}.color", path, line)
        if "position" in req:
            pos = req["position"]
            if not isinstance(pos, list) or len(pos) != 2:
                raise _err(path, line, f"{where}.position", f"must be [relation, index of an earlier include], "
                                                            f"got {pos!r}")
            rel, j = pos
            if rel not in RELATIONS:
                raise _err(path, line, f"{where}.position[0]", f"{rel!r} is not a GenEval relation; expected one "
                                                               f"of {list(RELATIONS)}")
            if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < i:
                earlier = f"0..{i - 1}" if i else "none: include[0] has no earlier include"
                raise _err(path, line, f"{where}.position[1]", f"{j!r} is not the index of an earlier include "
                                                               f"({earlier})")
    for i, req in enumerate(exclude):
        where = f"exclude[{i}]"
        _keys(req, _EXCLUDE_KEYS, _EXCLUDE_KEYS, where, path, line)
        _value(req["class"], "class", f"{where}.class", path, line)
        _count(req["count"], f"{where}.count", path, line)


def _cls(name: str) -> dict[str, Any]:
    return {"prop": "class", "value": name, "negated": False}


def _count_cmp(cls: str, theta: str, k: int) -> dict[str, Any]:
    return {"template": "X1/count_cmp", "params": {"A1": _cls(cls), "T": theta, "K": k}}


def _constraints(meta: Mapping[str, Any], plain: bool) -> list[dict[str, Any]]:
    include = meta["include"]
    out = []
    for req in include:
        c, k = req["class"], req["count"]
        colour = {"prop": "color", "value": req["color"], "negated": False} if "color" in req else None
        if colour is not None and plain:
            out.append({"template": "X1/count2_cmp", "params": {"A1": _cls(c), "A2": colour, "T": ">=", "K": k}})
        else:
            out.append(_count_cmp(c, ">=", k))
        if colour is not None and not plain:
            out.append({"template": "X2/ranked_prop", "params": {"A1": _cls(c), "K": k, "B1": colour}})
        if "position" in req:
            rel, j = req["position"]
            target = include[j]
            r = {"rel": RELATIONS[rel], "negated": False}
            if plain:
                out.append({"template": "C4/pair_rel", "params": {"A1": _cls(c), "B1": _cls(target["class"]),
                                                                  "R1": r}})
            else:
                out.append({"template": "X3/ranked_rel", "params": {"A1": _cls(c), "K1": k, "R1": r,
                                                                    "B1": _cls(target["class"]),
                                                                    "K2": target["count"]}})
    for req in meta.get("exclude", []):
        out.append(_count_cmp(req["class"], "<", req["count"]))
    return out


def _spec(meta: Mapping[str, Any], plain: bool, path: str | Path, line: int | None) -> Spec:
    _check(meta, path, line)
    d = {"domain": "coco", "score_threshold": threshold_for(meta["tag"]), "constraints": _constraints(meta, plain)}
    try:
        return Spec.from_dict(d)
    except SpecError as e:  # not expected after _check; named all the same
        raise _err(path, line, "spec", str(e)) from None


def spec_for(metadata: Mapping[str, Any], plain: bool = False) -> Spec:
    """The spec of one GenEval metadata line (a dict): GenEval's rank-based rule, or with ``plain=True`` the
    plain-logic reading (see the module docstring).

    Raises:
        SourceError: a malformed line (the message names the field; the location reads ``<metadata>``).
    """
    return _spec(metadata, plain, "<metadata>", None)


def _read(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise _err(path, None, "file", f"is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise _err(path, None, "file", f"cannot read it ({e.strerror or e})") from None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            meta = json.loads(raw)
        except json.JSONDecodeError as e:
            raise _err(path, number, "line", f"not valid JSON ({e.msg} at column {e.colno})") from None
        yield number, meta


def read_specs(path: str | Path, plain: bool = False) -> list[tuple[int, dict[str, Any], Spec]]:
    """``(line number, metadata, spec)`` for every non-blank line of a metadata file, all validated.

    Raises:
        SourceError: the first bad line, naming file, line and field.
    """
    path = Path(path)
    out = [(number, meta, _spec(meta, plain, path, number)) for number, meta in _read(path)]
    if not out:
        raise _err(path, None, "file", "has no metadata lines")
    return out


def import_source(path: str | Path, out: str | Path, progress: bool = False,
                  timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Import GenEval's ``evaluation_metadata.jsonl`` (or a file of the same shape) into the dataset folder
    ``out``: one row per line, with the source fields ``tag``, ``prompt``, ``include``, ``exclude`` (JSON
    strings) and ``line``. ``timeout``: the time budget of each label in seconds (None: none).

    Returns:
        The summary of `write_import` (``folder``, ``rows``, ``labels``).
    Raises:
        SourceError: a bad line (nothing is written).
        SolverTimeout: a line was not labelled within its budget (nothing is written; the message names it).
    """
    path = Path(path)
    parsed = read_specs(path)
    items = [(spec, f"GenEval {path.name}:{number}",
              {"tag": meta["tag"], "prompt": meta["prompt"], "include": json.dumps(meta["include"]),
               "exclude": json.dumps(meta.get("exclude", [])), "line": number})
             for number, meta, spec in parsed]
    rows = import_rows(items, "geneval", progress=progress, total=len(items), timeout=timeout)
    return write_import(rows, out, "GenEval", ABOUT, group="tag")
