"""Imag-Eval's prompts (github.com/Justsecret123/Imag-Eval, ``outputs/prompts/``; prompts CC BY-NC 4.0) as
LogicVal specs in the ``coco`` domain, labelled SAT/UNSAT by the solver.

Source format: one ``<skills>.json`` file per skill combination (``counting+color.json``, ..., ``all_skills.json``,
each also as ``<combo>_robust.json``), ``{"experiment_id", "timestamp", "prompts": [...]}``; each prompt
``{"id", "skills", "level", "meta_prompt", "scene", "synthetic_prompts"}`` with a scene ::

    {"emotion"?: [...], "objects": [{"object": "sports ball", "count"?: 4, "color"?: "orange"}, ...],
     "spatial_relations"?: [["sports ball", "under", "parking meter"], ...],
     "size_relations"?: [["sports ball", "larger", "boat"], ...],
     "text"?: {"word_count": 8, "objects": [...]}}

One dataset row per imported prompt (ids ``imag-eval-0000``, ... in file-name order, then prompt order). Source fields:
``file``, ``prompt_id``, ``level``, ``skills``, ``prompt`` (the first synthetic prompt), ``scene`` (the scene as
JSON) and ``unsupported`` (JSON list of the rules left out, each ``{"kind", "field", "rule", "why"}``).

Semantic choices (the spec says what Imag-Eval's scene asks, read strictly: every rule must hold)
------------------------------------------------------------------------------------------------------
* Objects. Every listed class must be present: with a ``count``, exactly that many (``X1/count_cmp`` ``=`` K);
  without one, at least one (``X1/count_cmp`` ``>=`` 1). (Imag-Eval's own counting scorer expects exactly 1 for a
  missing count; the spec only asks for presence, since the prompt does not fix a number.)
* Colour. Every instance of the class has the colour: with a count, the count of class-and-colour is also K
  (``X1/count2_cmp`` ``=`` K); without one, ``C3/1prop`` (every instance has it, and there is one; it stands in for
  the presence constraint). Imag-Eval's colours include ``gray``, which the coco domain (GenEval's 10 colours)
  lacks: that colour rule is an error, or with ``skip_unsupported`` it is dropped (the class's presence/count
  stays) and recorded as kind ``gray``. It is not mapped to another colour.
* Spatial and size relations. ``[A, r, B]`` becomes ``X4/group_rel_all``: every A instance stands in r to every
  other B instance, the strict counterpart of Imag-Eval pooling r over every A box x every B box pair.
  ``to the left of`` -> left, ``to the right of`` -> right, ``above`` and ``on top of`` -> above, ``below`` and
  ``under`` -> below, ``inside`` -> inside, ``larger`` -> larger, ``smaller`` -> smaller, all decided by the coco
  domain's box geometry (GenEval's size-proportional margin for left/right/above/below, box area for size where
  Imag-Eval uses mask area, box within box for inside; ``on top of``'s horizontal-overlap test is not kept).
  ``in front of`` and ``behind`` need depth and ``next to`` needs an edge distance relative to the image width;
  the coco domain has neither, so they are an error, or with ``skip_unsupported`` they are left out and recorded
  (kinds ``depth`` and ``next to``).
* Emotion and text skills are never expressible over boxes: always left out and recorded (kinds ``emotion``,
  ``text``), with or without ``skip_unsupported``. Imag-Eval's counting scorer also expects ``len(emotion)``
  persons in an emotion prompt; that is part of the emotion skill and is not imported either.
* Scene size. The specs leave the scene size open; the solver searches scenes of as many objects as the counts
  require (`logicval_hf.asp.universe`: Imag-Eval's hard prompts ask for 17 to 20), up to the coco domain's
  ``max_objects`` (48). A prompt that could need more, or whose label takes longer than the import's time budget,
  gets no label: an error, or with ``skip_unsupported`` the prompt is left out as a whole (no row; listed in the
  summary's ``skipped_prompts`` and on the dataset card), never labelled UNSAT for a reason that is a limit of
  the solver rather than the prompt's.
* Names. Imag-Eval uses Ultralytics' spellings; three differ from the coco domain's (GenEval's) and are mapped:
  ``mouse`` -> ``computer mouse``, ``remote`` -> ``tv remote``, ``keyboard`` -> ``computer keyboard``. Any other
  name must be a coco class.

Every file is read and every prompt validated before anything is solved or written: malformed JSON, a missing
key, an unknown class, colour or relation, or an unsupported rule without ``skip_unsupported`` raises
`SourceError` naming the file, the prompt index and the field, and no folder is written.

The strict verdict and Imag-Eval's score
-----------------------------------------
Imag-Eval reports per-skill means over instances, never one verdict per prompt. `instance_scores` re-expresses
that averaging over a scene graph (with the same relation geometry as the spec), so a result can carry both:
the verdict is all-or-nothing (every count exact, every instance coloured, every pair related), while the
averages give partial credit (3 of 4 pairs left-of scores 0.75). Counting there follows Imag-Eval's scorer (a
missing count asks for exactly one; an emotion prompt asks for ``len(emotion)`` persons); rules a scene graph cannot
judge (gray, in front of, behind, next to) are left out of the means and listed.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.benchmark.imported import SourceError, import_rows, write_import
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SceneError, SpecError

__all__ = [
    "ABOUT",
    "ALIASES",
    "SIZE",
    "SPATIAL",
    "UNSUPPORTED_RELATIONS",
    "import_source",
    "instance_scores",
    "read_source",
]

NAME = "Imag-Eval"
PREFIX = "imag-eval"
#: Ultralytics spellings Imag-Eval uses -> the coco domain's class names
ALIASES = {"mouse": "computer mouse", "remote": "tv remote", "keyboard": "computer keyboard"}
#: Imag-Eval's spatial strings -> coco relations
SPATIAL = {"to the left of": "left", "to the right of": "right", "above": "above", "on top of": "above",
           "below": "below", "under": "below", "inside": "inside"}
#: Imag-Eval's size strings -> coco relations
SIZE = {"larger": "larger", "smaller": "smaller"}
#: spatial strings boxes cannot decide: relation -> (kind, why)
UNSUPPORTED_RELATIONS = {
    "in front of": ("depth", "needs depth"),
    "behind": ("depth", "needs depth"),
    "next to": ("next to", "needs an edge distance relative to the image width"),
}
_SCENE_KEYS = ("emotion", "objects", "spatial_relations", "size_relations", "text")
_SKILL_KEYS = {"spatial": "spatial_relations", "size": "size_relations", "emotion": "emotion", "text": "text"}
_SKIP_HINT = "(pass --skip-unsupported, or skip_unsupported=True, to leave it out and record it in the row's " \
             "unsupported column)"

ABOUT = """\
Imports [Imag-Eval](https://github.com/Justsecret123/Imag-Eval)'s prompt files (`outputs/prompts/<skills>.json`).
The `prompt` and `scene` columns are Imag-Eval's text, licensed CC BY-NC 4.0 by its authors.

Semantic choices (each scene read strictly, in the `coco` domain):

* every listed class is present: exactly `count` instances when a count is given (`X1/count_cmp` =), else at
  least one;
* a colour applies to every instance of the class (`X1/count2_cmp` = count, or `C3/1prop` without a count);
  `gray` is not a coco colour: dropped and recorded (with `--skip-unsupported`), never mapped;
* `[A, r, B]` spatial and size rules hold for every A instance against every other B instance
  (`X4/group_rel_all`, the strict form of Imag-Eval's all-pairs pooling): to the left of -> left, to the right
  of -> right, above / on top of -> above, below / under -> below, inside -> inside, larger / smaller by box area;
* in front of, behind (need depth) and next to (needs the image width) are not coco relations: left out and
  recorded with `--skip-unsupported`, an error without it;
* emotion and text skills are always left out and recorded in `unsupported`;
* a prompt that gets no label (past the solver's object limit or the import's time budget) is left out as a whole
  (listed below), never labelled for a limit of the solver;
* Ultralytics names mapped: mouse -> computer mouse, remote -> tv remote, keyboard -> computer keyboard.

Imag-Eval itself averages per skill over instances and pairs (partial credit); the label here is the strict,
all-or-nothing reading. `logicval_hf.benchmark.importers.imag_eval.instance_scores` gives their averages over a
scene graph.
"""


# ---------------------------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------------------------
def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise SourceError(path, None, "folder", "has no <skills>.json prompt files")
        return files
    if not path.is_file():
        raise SourceError(path, None, "path", "no such file or folder")
    return [path]


def _load(file: Path) -> list[Any]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SourceError(file.name, e.lineno, "json", f"not valid JSON ({e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(file.name, None, "file", f"cannot read it ({e})") from None
    if not isinstance(data, Mapping):
        raise SourceError(file.name, None, "file", f"must be a JSON object with 'prompts', got {type(data).__name__}")
    if "prompts" not in data:
        raise SourceError(file.name, None, "prompts", "missing key 'prompts'")
    prompts = data["prompts"]
    if not isinstance(prompts, list) or not prompts:
        raise SourceError(file.name, None, "prompts", "must be a non-empty list of prompts")
    return prompts


class _Prompt:
    """One prompt being read: raises errors that name its file, index and field; collects what is left out."""

    def __init__(self, file: str, index: int, skip: bool):
        self.file, self.index, self.skip = file, index, skip
        self.unsupported: list[dict[str, Any]] = []

    def error(self, field: str, msg: str) -> SourceError:
        return SourceError(f"{self.file}:prompt[{self.index}]", None, field, msg)

    def leave_out(self, kind: str, field: str, rule: Any, why: str, always: bool = False) -> None:
        if not (always or self.skip):
            raise self.error(field, f"{why}; the coco domain lacks it {_SKIP_HINT}")
        self.unsupported.append({"kind": kind, "field": field, "rule": rule, "why": why})


def _str(p: _Prompt, field: str, v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise p.error(field, f"must be a non-empty string, got {v!r}")
    return v


def _class_name(p: _Prompt, field: str, name: Any, classes: Sequence[str]) -> str:
    name = _str(p, field, name)
    cls = ALIASES.get(name, name)
    if cls not in classes:
        raise p.error(field, f"unknown object {name!r}; {load_domain('coco').expected('class', name)} "
                             f"(aliases: {', '.join(f'{a} -> {b}' for a, b in ALIASES.items())})")
    return cls


def _lit(prop: str, value: str) -> dict[str, Any]:
    return {"prop": prop, "value": value, "negated": False}


def _read_prompt(p: _Prompt, raw: Any) -> tuple[Spec, dict[str, Any]]:
    """(spec, source fields) of one prompt."""
    coco = load_domain("coco")
    classes, colours = coco.values("class"), coco.values("color")
    if not isinstance(raw, Mapping):
        raise p.error("prompt", f"must be a JSON object, got {type(raw).__name__}")
    for key in ("id", "skills", "level", "scene", "synthetic_prompts"):
        if key not in raw:
            raise p.error(key, f"missing key {key!r}")
    pid = _str(p, "id", raw["id"])
    level = _str(p, "level", raw["level"])
    skills = raw["skills"]
    if not isinstance(skills, list) or not all(isinstance(s, str) for s in skills):
        raise p.error("skills", f"must be a list of skill names, got {skills!r}")
    synthetic = raw["synthetic_prompts"]
    if not isinstance(synthetic, list) or not synthetic:
        raise p.error("synthetic_prompts", "must be a non-empty list of strings")
    prompt = _str(p, "synthetic_prompts[0]", synthetic[0])
    scene = raw["scene"]
    if not isinstance(scene, Mapping):
        raise p.error("scene", f"must be a JSON object, got {type(scene).__name__}")
    extra = [k for k in scene if k not in _SCENE_KEYS]
    if extra:
        raise p.error("scene", f"unknown keys {extra}; a scene has {list(_SCENE_KEYS)}")
    for skill, key in _SKILL_KEYS.items():
        if skill in skills and key not in scene:
            raise p.error(f"scene.{key}", f"missing: the prompt's skills include {skill!r}")
    if "objects" not in scene:
        raise p.error("scene.objects", "missing key 'objects'")
    objs = scene["objects"]
    if not isinstance(objs, list) or not objs:
        raise p.error("scene.objects", "must be a non-empty list")

    constraints: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # the scene's bare name -> coco class
    for i, o in enumerate(objs):
        f = f"scene.objects[{i}]"
        if not isinstance(o, Mapping):
            raise p.error(f, f"must be a JSON object, got {type(o).__name__}")
        bad = [k for k in o if k not in ("object", "count", "color")]
        if bad:
            raise p.error(f, f"unknown keys {bad}; an object has 'object' and optionally 'count', 'color'")
        if "object" not in o:
            raise p.error(f, "missing key 'object'")
        cls = _class_name(p, f"{f}.object", o["object"], classes)
        if o["object"] in names or cls in names.values():
            raise p.error(f"{f}.object", f"{o['object']!r} is listed twice")
        names[o["object"]] = cls
        count = o.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not
                                  1 <= count <= coco.n_max):
            raise p.error(f"{f}.count", f"must be an integer in 1..{coco.n_max}, got {count!r}")
        colour = o.get("color")
        if colour is not None:
            colour = _str(p, f"{f}.color", colour)
            if colour not in colours:
                if colour == "gray":
                    p.leave_out("gray", f"{f}.color", [o["object"], colour], "colour 'gray' is not a coco colour "
                                "(GenEval's 10)")
                    colour = None
                else:
                    raise p.error(f"{f}.color", f"unknown colour {colour!r}; {coco.expected('color', colour)}")
        if count is not None:
            constraints.append({"template": "X1/count_cmp", "params": {"A1": _lit("class", cls), "T": "=",
                                                                       "K": count}})
            if colour is not None:
                constraints.append({"template": "X1/count2_cmp", "params": {
                    "A1": _lit("class", cls), "A2": _lit("color", colour), "T": "=", "K": count}})
        elif colour is not None:
            constraints.append({"template": "C3/1prop", "params": {"A1": _lit("class", cls),
                                                                   "C1": _lit("color", colour)}})
        else:
            constraints.append({"template": "X1/count_cmp", "params": {"A1": _lit("class", cls), "T": ">=", "K": 1}})

    for key, table in (("spatial_relations", SPATIAL), ("size_relations", SIZE)):
        if key not in scene:
            continue
        rules = scene[key]
        if not isinstance(rules, list):
            raise p.error(f"scene.{key}", f"must be a list of [A, relation, B], got {type(rules).__name__}")
        for j, rule in enumerate(rules):
            f = f"scene.{key}[{j}]"
            if not isinstance(rule, list) or len(rule) != 3 or not all(isinstance(x, str) for x in rule):
                raise p.error(f, f"must be [A, relation, B] (three strings), got {rule!r}")
            a, r, b = rule
            for side, name in (("A", a), ("B", b)):
                if name not in names:
                    raise p.error(f, f"{side} {name!r} is not among scene.objects {list(names)}")
            if key == "spatial_relations" and r in UNSUPPORTED_RELATIONS:
                kind, why = UNSUPPORTED_RELATIONS[r]
                p.leave_out(kind, f, rule, f"{r!r} {why}")
                continue
            if r not in table:
                raise p.error(f, f"unknown relation {r!r}; expected one of "
                                 f"{list(table) + (list(UNSUPPORTED_RELATIONS) if key == 'spatial_relations' else [])}")
            constraints.append({"template": "X4/group_rel_all", "params": {
                "A1": _lit("class", names[a]), "R1": {"rel": table[r], "negated": False},
                "B1": _lit("class", names[b])}})

    if "emotion" in scene:
        emo = scene["emotion"]
        if not isinstance(emo, list) or not all(isinstance(e, str) for e in emo):
            raise p.error("scene.emotion", f"must be a list of emotion names, got {emo!r}")
        p.leave_out("emotion", "scene.emotion", emo, "emotions are not expressible over boxes", always=True)
    if "text" in scene:
        text = scene["text"]
        if not isinstance(text, Mapping):
            raise p.error("scene.text", f"must be a JSON object, got {type(text).__name__}")
        p.leave_out("text", "scene.text", text, "rendered text is not expressible over boxes", always=True)

    try:
        spec = Spec.from_dict({"domain": "coco", "constraints": constraints})
    except SpecError as e:  # a count beyond what the domain allows, or a slot rule
        raise p.error("scene", f"does not make a valid spec: {e}") from None
    fields = {"file": p.file, "prompt_id": pid, "level": level, "skills": list(skills), "prompt": prompt,
              "scene": json.dumps(scene, ensure_ascii=False), "unsupported": p.unsupported}
    return spec, fields


def read_source(path: str | Path, skip_unsupported: bool = False) -> list[tuple[Spec, str, dict[str, Any]]]:
    """Every prompt of a folder of ``<skills>.json`` files (in file-name order) or of one file, validated:
    ``(spec, source, fields)`` per prompt, ready for `import_rows`.

    Raises:
        SourceError: the first malformed or (without ``skip_unsupported``) unsupported field.
    """
    items = []
    for file in _files(Path(path)):
        for k, raw in enumerate(_load(file)):
            p = _Prompt(file.name, k, skip_unsupported)
            spec, fields = _read_prompt(p, raw)
            items.append((spec, f"{NAME}:{file.name}:prompt[{k}]", fields))
    return items


def import_source(path: str | Path, out: str | Path, progress: bool = False,
                  skip_unsupported: bool = False, timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Import Imag-Eval prompt files (a folder or one file) into the dataset folder ``out``.

    ``timeout``: each label's time budget in seconds (None: none). Returns ``write_import``'s summary plus
    ``unsupported`` (rules left out, by kind) and ``skipped_prompts`` (prompts left out as a whole, see the module
    docstring).
    Raises:
        SourceError: malformed input or an unsupported rule without ``skip_unsupported``; nothing is written.
        SolverTimeout, SolverLimit: without ``skip_unsupported``, a prompt that got no label (named).
    """
    items = read_source(path, skip_unsupported)
    skipped: list[dict[str, Any]] = []
    rows = import_rows(items, PREFIX, progress=progress, total=len(items), timeout=timeout,
                       skipped=skipped if skip_unsupported else None)
    if not rows:
        raise SourceError(path, None, "prompts", "every prompt was left out; nothing to import")
    about = ABOUT
    if skipped:
        about += (f"\n{len(skipped)} prompt(s) left out as a whole, without a label (past the solver's object "
                  "limit or the import's time budget): " + ", ".join(f"`{s['source']}`" for s in skipped) + ".\n")
    summary = write_import(rows, out, NAME, about, group="level")
    left_out = collections.Counter(u["kind"] for _, _, f in items for u in f["unsupported"])
    summary["unsupported"] = dict(sorted(left_out.items()))
    summary["skipped_prompts"] = [s["source"] for s in skipped]
    return summary


# ---------------------------------------------------------------------------------------------------------------
# Imag-Eval's averages over a scene graph
# ---------------------------------------------------------------------------------------------------------------
def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def instance_scores(scene_json: Mapping[str, Any] | str, scene: Any, score_threshold: float | None = None,
                    emotion_persons: bool = True) -> dict[str, Any]:
    """Imag-Eval's per-skill averages for one prompt, computed over a (perceived) scene graph.

    Args:
        scene_json: the prompt's Imag-Eval scene (a dict, or the ``scene`` column's JSON string).
        scene: a `logicval_hf.contract.scene.Scene` in the coco domain, or its JSON / dict.
        score_threshold: only objects whose detection score is above it count (None: all).
        emotion_persons: like Imag-Eval's counting scorer, expect ``len(emotion)`` persons in a prompt with
            emotions (replacing a listed person's count).
    Returns:
        ``{"counting", "color", "spatial", "size", "unscored"}``: counting is the mean over the listed classes of
        (instances found == count asked, a missing count asking for exactly 1); color the mean over the found
        instances of classes with a colour rule of (instance has that colour); spatial and size the mean over
        every (A instance, B instance) pair of every rule, all rules pooled, each pair decided by the coco domain's
        geometry (`Scene.holds`). A skill with no cases (no rule, or no instance to judge) is None. ``unscored``
        lists the rules the scene graph cannot judge (gray, in front of, behind, next to), left out of the means.

    This is the partial credit their averaging gives; the LogicVal verdict on the same scene is all-or-nothing.
    """
    from logicval_hf.contract.scene import Scene

    prompt: Mapping[str, Any] = json.loads(scene_json) if isinstance(scene_json, str) else scene_json
    if not isinstance(scene, Scene):
        scene = Scene.from_dict(scene, domain=load_domain("coco"))
    if "class" not in scene.domain.attributes:
        raise SceneError(f"instance_scores: the scene is in domain {scene.domain.name!r}, not coco")
    scene = scene.above(score_threshold)

    def cls(name: str) -> str:
        return ALIASES.get(name, name)

    of: dict[str, list[int]] = collections.defaultdict(list)
    for i, o in enumerate(scene.objects):
        of[o.attributes["class"]].append(i)
    unscored: list[Any] = []

    asked = {cls(o["object"]): o.get("count", 1) for o in prompt["objects"]}
    if emotion_persons and prompt.get("emotion"):
        asked["person"] = len(prompt["emotion"])
    counting = _mean([float(len(of[c]) == k) for c, k in asked.items()])

    colour_cases = []
    for o in prompt["objects"]:
        want = o.get("color")
        if want is None:
            continue
        if want not in scene.domain.attributes["color"]:
            unscored.append([o["object"], want])
            continue
        colour_cases += [float(scene.objects[i].attributes["color"] == want) for i in of[cls(o["object"])]]

    def pooled(key: str, table: Mapping[str, str]) -> float | None:
        cases = []
        for a, r, b in prompt.get(key) or ():
            if r not in table:
                unscored.append([a, r, b])
                continue
            rel = table[r]
            cases += [float(scene.holds(rel, i, j)) for i in of[cls(a)] for j in of[cls(b)] if i != j]
        return _mean(cases)

    return {"counting": counting, "color": _mean(colour_cases), "spatial": pooled("spatial_relations", SPATIAL),
            "size": pooled("size_relations", SIZE), "unscored": unscored}
