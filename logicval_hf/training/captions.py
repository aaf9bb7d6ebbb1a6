"""The CLEVR caption grounder: constraints that HOLD in a CLEVR scene, as training captions (paper, Appendix F).

For every CLEVR image the objects (colour, shape, material) and their image-space centres (``pixel_coords``)
are read from the official ``scenes.json`` annotation; no pixel is inspected. For each class C1..C9 the
grounder looks for an instantiation of one of the class's templates that holds on that scene, checked by
the solver exactly as a generated image would be checked (`Solver.verify_many`, label ``SAT``, strict count
with n = the number of objects), and renders it with the benchmark's verbaliser (short register)::

    {"class": "C1", "template": "C1/1prop", "n": 6,
     "constraint": {"template": "C1/1prop", "params": {...}},        # the contract's constraint JSON
     "prompt": "There are 6 objects in the scene. There is a red object."}

How a caption is chosen (deterministic given the scene and ``seed``; `random.Random` seeded with a string):

1. **Scene.** Each object becomes a `SceneObject` with a tiny box (``BOX_HALF`` px) around its
   ``pixel_coords`` centre; regions and relations then follow docs/regions.md §6 from the centres (CLEVR's own 3D
   ``relationships`` are ignored). The image size comes from the image file when one is given or found,
   else from the scene's ``image_width``/``image_height`` fields, else from ``image_size`` (480x320).
2. **Candidates per template** (from the scene's own values). A positive attribute slot takes only the
   (attribute, value) pairs that occur in the scene; a negated one any value of its attributes; relations
   and comparators every allowed value; a count slot ``min..min(regular max at n, 9)`` (never the
   ``overflow`` range: an overflowing count cannot hold). When the product is small (<= ``ENUMERATE_LIMIT``)
   every combination is listed, otherwise combinations are drawn at random; the list is shuffled, parameter
   sets that break a slot rule are dropped, and at most ``max_candidates`` are kept.
3. **Template order.** The class's templates are visited in a random order; the caption of the class is
   the first candidate (in the shuffled order) of the first template that has a holding candidate. So the
   template is uniform over the templates that can be grounded on the scene (the first element of a random
   permutation that lies in a subset is uniform over the subset), and the instance is uniform over that
   template's holding candidates: templates are balanced within the class as far as the scene allows.
4. **Checks.** Truth is the solver's (`Solver.verify_many`, batched: one grounding per candidate spec, all
   scenes of a call sharing it). With ``prefilter=True`` (default) the independent plain-Python evaluator
   (`logicval_hf.contract.reference`) first skips candidates that are false, and only the pick is verified by the
   solver (if the solver disagreed, the search would go on, so the result is the same as without the
   prefilter, only faster; a test checks this). A pick that is a tautology at n (docs/spec_language.md §8.2, e.g.
   "the numbers of metal and rubber objects differ" with n odd) says nothing about the image and is skipped.

Scenes with more than 9 objects (CLEVR has 10) are captioned too (counts stay within the contract's 1..9);
a class that cannot be grounded (e.g. relations in a one-object scene) is simply missing from the output.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import Solver
from logicval_hf.contract.catalog import Catalog, Slot, Template, load_catalog
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Constraint, Spec
from logicval_hf.contract.verbalise import constraint_text, count_phrase
from logicval_hf.errors import SpecError

__all__ = [
    "BOX_HALF", "DEFAULT_IMAGE_SIZE", "ENUMERATE_LIMIT", "MAX_CANDIDATES", "CaptionGrounder", "caption_prompt",
    "clevr_scene_to_scene", "ground_captions", "image_size_of", "load_clevr_scenes", "scene_seed",
]

#: image size assumed when neither the image file nor the scene says (CLEVR v1.0 renders)
DEFAULT_IMAGE_SIZE = (480, 320)
#: half side (pixels) of the tiny box put around each object's ``pixel_coords`` centre
BOX_HALF = 0.5
#: templates whose candidate product is at most this large are enumerated exhaustively
ENUMERATE_LIMIT = 512
#: candidates kept per template and scene
MAX_CANDIDATES = 32
#: candidates verified by the solver per batched call when no prefilter is used
_SOLVER_CHUNK = 16
#: random scenes per n on which a pick must hold before the solver is asked whether it is a tautology
_PROBE_SCENES = 16


# ---------------------------------------------------------------------------------------------------------
# CLEVR scenes.json -> Scene
# ---------------------------------------------------------------------------------------------------------
def load_clevr_scenes(path: str | Path) -> list[dict[str, Any]]:
    """Scenes of a CLEVR scenes file: the official ``{"info": ..., "scenes": [...]}`` or a bare list."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, Mapping):
        if "scenes" not in data:
            raise ValueError(f"{path}: a CLEVR scenes file has a 'scenes' list")
        data = data["scenes"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of scenes")
    return data


def image_size_of(path: str | Path) -> tuple[int, int]:
    """(W, H) of an image file, read from its header only (`PerceptionError` for a non-image or too many pixels)."""
    from logicval_hf.perception.images import open_checked

    with open_checked(path, f"image {str(path)!r}") as im:
        return int(im.size[0]), int(im.size[1])


def _scene_image_size(
    clevr_scene: Mapping[str, Any], image_size: Sequence[float] | None, image_path: str | Path | None
) -> tuple[float, float]:
    if image_path is not None and Path(image_path).is_file():
        return image_size_of(image_path)
    if "image_width" in clevr_scene and "image_height" in clevr_scene:
        return float(clevr_scene["image_width"]), float(clevr_scene["image_height"])
    w, h = image_size if image_size is not None else DEFAULT_IMAGE_SIZE
    return float(w), float(h)


def clevr_scene_to_scene(
    clevr_scene: Mapping[str, Any],
    image_size: Sequence[float] | None = None,
    image_path: str | Path | None = None,
    catalog: Catalog | None = None,
) -> Scene:
    """A `Scene` from one CLEVR scene: attributes from the annotation, a ``2*BOX_HALF`` px box around each
    object's ``pixel_coords`` (clamped into the image), the image size as described in the module docstring."""
    catalog = catalog or load_catalog()
    domain = catalog.domain
    w, h = _scene_image_size(clevr_scene, image_size, image_path)
    objs = []
    for i, o in enumerate(clevr_scene.get("objects", ())):
        attrs = {}
        for a in domain.perceived_attributes:
            v = o.get(a)
            if v not in domain.attributes[a]:
                raise ValueError(f"object {i}: {a} {v!r} is not in the domain {list(domain.attributes[a])}")
            attrs[a] = v
        if "pixel_coords" not in o:
            raise ValueError(f"object {i}: no 'pixel_coords' (image-space centre) in the CLEVR annotation")
        cx = min(max(float(o["pixel_coords"][0]), 0.0), w)
        cy = min(max(float(o["pixel_coords"][1]), 0.0), h)
        objs.append(SceneObject(attrs, (cx - BOX_HALF, cy - BOX_HALF, cx + BOX_HALF, cy + BOX_HALF)))
    return Scene((w, h), tuple(objs), domain)


def caption_prompt(n: int, text: str) -> str:
    """``"There are 6 objects in the scene. <text>"`` (``"There is 1 object ..."`` for one object)."""
    verb = "is" if n == 1 else "are"
    return f"There {verb} {count_phrase(n, [])} in the scene. {text}"


def scene_seed(seed: int, key: str) -> int:
    """A per-scene seed from a global seed and a stable scene key (e.g. the image file name)."""
    import hashlib

    digest = hashlib.sha256(f"logicval-captions/{seed}/{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


# ---------------------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _SceneValues:
    n: int
    present: Mapping[str, tuple[str, ...]]  # attribute (region included) -> values present, in domain order


def _scene_values(scene: Scene) -> _SceneValues:
    dom = scene.domain
    present = {}
    for a, values in dom.attributes.items():
        have = {scene.attribute(i, a) for i in range(len(scene))}
        present[a] = tuple(v for v in values if v in have)
    return _SceneValues(len(scene), present)


def _slot_values(slot: Slot, sv: _SceneValues, catalog: Catalog) -> list[Any]:
    dom = catalog.domain
    if slot.type == "attr":
        neg = bool(slot.negated)
        pool = dom.attributes if neg else sv.present
        return [{"prop": p, "value": v, "negated": neg} for p in slot.props for v in pool[p]]
    if slot.type == "rel":
        return [{"rel": r, "negated": bool(slot.negated)} for r in slot.values]
    if slot.type == "count":
        hi = min(slot.count_max(sv.n), dom.n_max)
        return list(range(slot.count_min(), hi + 1))
    if slot.type == "theta":
        return list(slot.values)
    raise ValueError(f"unknown slot type {slot.type!r}")


class _Candidates:
    """The candidate instantiations of one template on one scene, produced lazily in a seeded random order.

    Each (scene seed, template) has its own random stream, so the candidates of a template do not depend on
    how far the search went in other templates (and the prefilter cannot change the outcome).
    """

    def __init__(self, template: Template, sv: _SceneValues, seed: int, catalog: Catalog, max_candidates: int):
        self.template = template
        self.catalog = catalog
        self.names = [s.name for s in template.slots]
        self.pools = [_slot_values(s, sv, catalog) for s in template.slots]
        self.total = math.prod(len(p) for p in self.pools)
        self.max_candidates = max_candidates
        self.rng = random.Random(f"logicval-captions/{seed}/{template.id}")
        self.items: list[Constraint] = []
        self._order: list[tuple[int, ...]] | None = None
        self._pos = 0
        self._seen: set[tuple[int, ...]] = set()
        self._draws = 0
        self._exhausted = self.total == 0
        if not self._exhausted and self.total <= ENUMERATE_LIMIT:
            self._order = list(itertools.product(*(range(len(p)) for p in self.pools)))
            self.rng.shuffle(self._order)

    def _make(self, idx: Sequence[int]) -> Constraint | None:
        params = {name: pool[i] for name, pool, i in zip(self.names, self.pools, idx, strict=True)}
        try:
            return Constraint.from_dict({"template": self.template.id, "params": params}, catalog=self.catalog)
        except SpecError:
            return None

    def get(self, j: int) -> Constraint | None:
        """The j-th candidate (0-based), or None when there are fewer."""
        while len(self.items) <= j and not self._exhausted:
            if len(self.items) >= self.max_candidates:
                self._exhausted = True
                break
            if self._order is not None:
                if self._pos >= len(self._order):
                    self._exhausted = True
                    break
                idx = self._order[self._pos]
                self._pos += 1
            else:
                if self._draws >= self.max_candidates * 20:
                    self._exhausted = True
                    break
                self._draws += 1
                idx = tuple(self.rng.randrange(len(p)) for p in self.pools)
                if idx in self._seen:
                    continue
                self._seen.add(idx)
            c = self._make(idx)
            if c is not None:
                self.items.append(c)
        return self.items[j] if j < len(self.items) else None


# ---------------------------------------------------------------------------------------------------------
# The grounder
# ---------------------------------------------------------------------------------------------------------
@dataclass
class _Search:
    """The state of one (scene, class) search: templates in visiting order, candidates of the current one."""

    scene_index: int
    cls: str
    templates: list[Template]
    seed: int
    t_pos: int = 0
    candidates: _Candidates | None = None
    c_pos: int = 0
    result: dict[str, Any] | None = None
    done: bool = False


class CaptionGrounder:
    """Grounds C1..C9 captions on scenes; reuses one `Solver` (and a tautology cache) across calls.

    Args:
        catalog: the template catalog (default: the shipped contract).
        solver: the solver used for verification (default: a new one).
        max_candidates: candidates considered per template and scene.
        prefilter: skip false candidates with the plain-Python reference evaluator before the solver check.
        reject_tautologies: skip picks that hold in every scene of size n (docs/spec_language.md §8.2).
        register: verbaliser register of the caption (``short`` as in the paper).
    """

    def __init__(
        self,
        catalog: Catalog | None = None,
        solver: Solver | None = None,
        max_candidates: int = MAX_CANDIDATES,
        prefilter: bool = True,
        reject_tautologies: bool = True,
        register: str = "short",
    ):
        self.catalog = catalog or load_catalog()
        self.solver = solver or Solver(self.catalog)
        self.max_candidates = int(max_candidates)
        self.prefilter = prefilter
        self.reject_tautologies = reject_tautologies
        self.register = register
        self._tautology: dict[str, bool] = {}
        self._probes: dict[int, list[Any]] = {}
        self.stats = {"solver_checks": 0, "reference_checks": 0, "tautologies_skipped": 0, "disagreements": 0}

    # ---- public API ------------------------------------------------------------------------------------
    def ground(self, scene: Scene, seed: int, classes: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Captions of one scene, one per class that can be grounded, in class order."""
        return self.ground_many([scene], [seed], classes)[0]

    def ground_many(
        self, scenes: Sequence[Scene], seeds: Sequence[int], classes: Iterable[str] | None = None
    ) -> list[list[dict[str, Any]]]:
        """Captions of many scenes (solver checks batched across the scenes); one list per scene."""
        if len(scenes) != len(seeds):
            raise ValueError(f"{len(scenes)} scenes but {len(seeds)} seeds")
        classes = list(classes) if classes is not None else list(self.catalog.classes)
        values = [_scene_values(s) for s in scenes]
        worlds: list[Any] = [None] * len(scenes)
        searches: list[_Search] = []
        for k, (scene, seed) in enumerate(zip(scenes, seeds, strict=True)):
            if len(scene) == 0:
                continue
            for cls in classes:
                templates = self.catalog.by_class(cls)
                random.Random(f"logicval-captions/{int(seed)}/{cls}").shuffle(templates)
                searches.append(_Search(k, cls, templates, int(seed)))
        pending = [s for s in searches if self._advance(s, values, scenes, worlds)]
        while pending:
            self._check_round(pending, scenes)
            pending = [s for s in pending if self._advance(s, values, scenes, worlds)]
        out: list[list[dict[str, Any]]] = [[] for _ in scenes]
        order = {c: i for i, c in enumerate(classes)}
        for s in searches:
            if s.result is not None:
                out[s.scene_index].append(s.result)
        for lst in out:
            lst.sort(key=lambda r: order[r["class"]])
        return out

    # ---- search machinery --------------------------------------------------------------------------------
    def _current(self, s: _Search, values: Sequence[_SceneValues]) -> Constraint | None:
        """The unchecked candidate ``s`` points at (moving on to the next template if need be); None when the
        class has no template left."""
        while True:
            if s.candidates is None:
                if s.t_pos >= len(s.templates):
                    s.done = True
                    return None
                s.candidates = _Candidates(
                    s.templates[s.t_pos], values[s.scene_index], s.seed, self.catalog, self.max_candidates
                )
                s.c_pos = 0
            c = s.candidates.get(s.c_pos)
            if c is not None:
                return c
            s.candidates = None
            s.t_pos += 1

    def _advance(self, s: _Search, values, scenes, worlds) -> bool:
        """Move ``s`` to the next candidate worth a solver check; False when the search is over."""
        if s.done or s.result is not None:
            return False
        while (c := self._current(s, values)) is not None:
            if not self.prefilter:
                return True
            world = worlds[s.scene_index]
            if world is None:
                from logicval_hf.contract.reference import AbstractWorld

                scene = scenes[s.scene_index]
                world = worlds[s.scene_index] = AbstractWorld.from_world(scene, list(scene.domain.attributes))
            from logicval_hf.contract.reference import constraint_holds

            self.stats["reference_checks"] += 1
            if constraint_holds(c, world):
                return True
            s.c_pos += 1
        return False

    def _check_round(self, pending: Sequence[_Search], scenes: Sequence[Scene]) -> None:
        """One batched solver call: the current candidate of every pending search (several per search
        without the prefilter); records picks and moves the others on."""
        items: list[tuple[_Search, int, Constraint]] = []
        for s in pending:
            k = 1 if self.prefilter else _SOLVER_CHUNK
            for j in range(s.c_pos, s.c_pos + k):
                c = s.candidates.get(j) if s.candidates is not None else None
                if c is None:
                    break
                items.append((s, j, c))
        pairs = [(Spec(len(scenes[s.scene_index]), (c,)), scenes[s.scene_index]) for s, _, c in items]
        self.stats["solver_checks"] += len(pairs)
        verdicts = self.solver.verify_many(pairs, labels=["SAT"] * len(pairs))
        holds: dict[int, dict[int, tuple[bool, Constraint]]] = {}
        for (s, j, c), v in zip(items, verdicts, strict=True):
            holds.setdefault(id(s), {})[j] = (v.ok, c)
        for s in pending:
            results = holds[id(s)]
            for j in sorted(results):
                ok, c = results[j]
                if ok:
                    n = len(scenes[s.scene_index])
                    if self.reject_tautologies and self._is_tautology(c, n):
                        self.stats["tautologies_skipped"] += 1
                        continue
                    s.result = self._caption(c, n)
                    break
                if self.prefilter:
                    self.stats["disagreements"] += 1
            if s.result is None:
                s.c_pos = max(results) + 1

    def _is_tautology(self, c: Constraint, n: int) -> bool:
        """`Solver.is_tautology`, skipped when the constraint already fails on one of a few fixed random scenes
        of size n (then it cannot hold in every scene)."""
        key = f"{n}:{c.key()}"
        hit = self._tautology.get(key)
        if hit is None:
            from logicval_hf.contract.reference import constraint_holds

            if any(not constraint_holds(c, w) for w in self._probe_worlds(n)):
                hit = False
            else:
                self.stats["tautology_solver_checks"] = self.stats.get("tautology_solver_checks", 0) + 1
                hit = self.solver.is_tautology(c, n)
            self._tautology[key] = hit
        return hit

    def _probe_worlds(self, n: int) -> list[Any]:
        worlds = self._probes.get(n)
        if worlds is None:
            from logicval_hf.benchmark.sampler import random_scene
            from logicval_hf.contract.reference import AbstractWorld

            rng = random.Random(f"logicval-captions-probe/{n}")
            attrs = list(self.catalog.domain.attributes)
            worlds = [AbstractWorld.from_world(random_scene(n, rng, self.catalog.domain), attrs)
                      for _ in range(_PROBE_SCENES)]
            self._probes[n] = worlds
        return worlds

    def _caption(self, c: Constraint, n: int) -> dict[str, Any]:
        text = constraint_text(c, n, self.register)
        return {"class": c.cls, "template": c.template_id, "n": n, "constraint": c.to_dict(),
                "prompt": caption_prompt(n, text)}


@functools.cache
def _default_grounder() -> CaptionGrounder:
    """The grounder `ground_captions` uses when given none: built on first use, then shared."""
    return CaptionGrounder()


def ground_captions(
    clevr_scene: Mapping[str, Any],
    seed: int,
    image_size: Sequence[float] | None = None,
    image_path: str | Path | None = None,
    grounder: CaptionGrounder | None = None,
) -> list[dict[str, Any]]:
    """Captions of one CLEVR scene (official scenes.json format), one per class C1..C9 that can be grounded.

    Each caption is ``{"class", "template", "n", "constraint", "prompt"}`` (module docstring); ``seed`` fixes
    every choice. ``image_size`` (W, H) is used when neither ``image_path`` nor the scene gives the size.
    """
    if grounder is None:
        grounder = _default_grounder()
    scene = clevr_scene_to_scene(clevr_scene, image_size, image_path, grounder.catalog)
    return grounder.ground(scene, seed)
