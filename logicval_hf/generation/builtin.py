"""Reference image generators with a known truth: the oracle, a naive baseline and a minimally perturbed oracle.

Each generator maps a benchmark row (a dict with ``spec_json``, and usually ``id``, ``label``, ``witness``)
or a plain spec (a `Spec`, its dict or its JSON) to a `Generation` ``(image, scene, metadata)``:

* ``image``: the CLEVR-style render (PIL, RGB, ``image_size``, default 480x320);
* ``scene``: the scene the generator *intended*, with the boxes actually drawn
  (`logicval_hf.generation.render.render_scene` keeps every region and both orders, so this is exact);
* ``metadata``: what was done, and the **known truth**: the solver's verdict on the intended scene
  (``truth_ok`` strict, ``truth_relaxed_ok`` with the count ignored, ``truth_count_ok``, ``truth_violated``).

Generators
----------
``OracleGenerator`` (``"oracle"``)
    spec -> solver witness (the row's ``witness`` when present, else `Solver.solve`) -> the attributes the
    constraints leave free re-drawn at random, each change checked with the solver (`Generator.varied_witness`;
    ``vary_witness=False`` keeps the witness as the solver returned it) -> render. For an
    UNSAT spec the correct output is the empty scene (paper §3.1), drawn as the plain ground. Its truth is
    ``True`` everywhere, so the metric's score on it is the metric's recall on perfect images.
``NaiveGenerator`` (``"naive"``)
    n objects with uniformly random colour, shape and material at uniformly random positions
    (`logicval_hf.benchmark.sampler.random_scene`, the chance-rate distribution), constraints ignored. Its truth rate
    is its real satisfaction rate (close to the rows' ``chance_rate`` on SAT specs, 0 on UNSAT specs).
``PerturbedGenerator`` (``"perturbed"``)
    The oracle scene with ONE minimal change that breaks exactly one constraint, or only the object count:
    recolour / reshape / re-material one object, move one object across a midline (it becomes the nearest
    object on the other side, its other relations kept), swap two neighbours of the x- or y-order (within
    one half, so regions stay), add or remove one object. Candidates are tried in an order drawn from the
    seed (the kind first, then the candidate within the kind); each is checked with `Solver.verify` and the
    first that leaves the count right and violates exactly one constraint, or keeps every constraint and
    breaks the count, is taken. If no candidate does (rare; ``metadata["exact"]`` is then ``False``), the
    first candidate with the fewest broken items among those that break something is used. For an UNSAT spec
    the perturbation is a non-empty scene: one object added to the empty oracle scene (abstention broken).
    Its truth is ``False`` everywhere: the metric's score on it is its false-positive rate.

Everything is deterministic given ``(generator, seed, row id, spec)``: randomness comes from
`random.Random` seeded with a string, render seeds from SHA-256 of the same string.
"""

from __future__ import annotations

import abc
import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from PIL import Image

from logicval_hf.asp.solver import DEFAULT_IMAGE_SIZE, Solver, Verdict, default_solver
from logicval_hf.benchmark.rows import BenchmarkRow, is_row, split_row
from logicval_hf.benchmark.sampler import random_scene
from logicval_hf.common.registry import Registry
from logicval_hf.contract.catalog import Domain
from logicval_hf.contract.layout import layout_scene
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spatial import region_cell
from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.generation.render import render_scene

__all__ = [
    "GENERATORS", "Generation", "Generator", "NaiveGenerator", "OracleGenerator", "PerturbedGenerator", "Plan",
    "make_generator", "ref_fields", "seed_for",
]


class Generation(NamedTuple):
    """One generated image, the scene it intended (drawn boxes) and what the generator did (incl. the truth)."""

    image: Image.Image
    scene: Scene
    metadata: dict[str, Any]


def seed_for(*parts: Any) -> int:
    """A stable 63-bit seed from any printable parts (SHA-256 of their ``/``-joined text)."""
    text = "/".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


def ref_fields(ref: Any, solver: Solver) -> tuple[Spec, str, str | None, Mapping[str, Any] | None]:
    """``(spec, id, label or None, witness dict or None)`` of a benchmark row (a `BenchmarkRow`, or its columns as a
    dict) or a plain spec.

    A plain spec gets the id ``spec-<first 12 hex digits of SHA-256 of its key>``.
    """
    if isinstance(ref, BenchmarkRow):
        return ref.spec, ref.id, ref.label, ref.witness
    if isinstance(ref, Mapping) and is_row(ref):
        spec_data, meta = split_row(ref, ("id", "label", "witness"))
        spec = as_spec(spec_data, solver.catalog)
        return spec, str(meta.get("id") or _spec_id(spec)), meta.get("label"), meta.get("witness")
    spec = as_spec(ref, solver.catalog)
    return spec, _spec_id(spec), None, None


def _spec_id(spec: Spec) -> str:
    return "spec-" + hashlib.sha256(spec.key().encode("utf-8")).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------
# Abstract scenes: attributes, regions and the two orders (what the solver's witness fixes)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """An abstract scene: per-object attributes and regions, the left-to-right and back-to-front orders.

    ``layout_scene`` turns it into boxes that give these regions and orders back exactly (docs/regions.md §6).
    """

    attributes: tuple[Mapping[str, str], ...]
    regions: tuple[str, ...]
    x_order: tuple[int, ...]
    y_order: tuple[int, ...]

    @classmethod
    def from_scene(cls, scene: Scene) -> Plan:
        n = len(scene)
        cent = [o.center for o in scene.objects]
        return cls(
            tuple(dict(o.attributes) for o in scene.objects),
            tuple(scene.regions()),
            tuple(sorted(range(n), key=lambda i: (cent[i][0], i))),
            tuple(sorted(range(n), key=lambda i: (cent[i][1], i))),
        )

    def __len__(self) -> int:
        return len(self.attributes)

    def to_scene(self, image_size: tuple[float, float] = DEFAULT_IMAGE_SIZE) -> Scene:
        return layout_scene(list(self.attributes), list(self.regions), list(self.x_order), list(self.y_order),
                            (image_size[0], image_size[1]))

    # ---- one-step changes (each returns a valid plan: orders agree with the regions) ----------
    def with_attribute(self, i: int, attribute: str, value: str) -> Plan:
        attrs = [dict(a) for a in self.attributes]
        attrs[i][attribute] = value
        return Plan(tuple(attrs), self.regions, self.x_order, self.y_order)

    def across(self, i: int, axis: str) -> Plan:
        """Object i moved across the vertical (``axis="x"``) or horizontal (``"y"``) midline, to the nearest
        place on the other side: it becomes the first (last) object of the other half of that order."""
        col, row = region_cell(self.regions[i])
        k = 0 if axis == "x" else 1
        cell = [col, row]
        cell[k] = 1 - cell[k]
        regions = list(self.regions)
        regions[i] = f"r{2 * cell[1] + cell[0]}"
        order = [j for j in (self.x_order if axis == "x" else self.y_order) if j != i]
        first_half = sum(1 for j in order if region_cell(self.regions[j])[k] == 0)
        order.insert(first_half, i)
        if axis == "x":
            return Plan(self.attributes, tuple(regions), tuple(order), self.y_order)
        return Plan(self.attributes, tuple(regions), self.x_order, tuple(order))

    def swapped(self, axis: str, pos: int) -> Plan:
        """Neighbours ``pos`` and ``pos + 1`` of the x- or y-order exchanged (callers keep them in one half)."""
        order = list(self.x_order if axis == "x" else self.y_order)
        order[pos], order[pos + 1] = order[pos + 1], order[pos]
        if axis == "x":
            return Plan(self.attributes, self.regions, tuple(order), self.y_order)
        return Plan(self.attributes, self.regions, self.x_order, tuple(order))

    def without(self, i: int) -> Plan:
        def renumber(order: Sequence[int]) -> tuple[int, ...]:
            return tuple(j - (j > i) for j in order if j != i)

        return Plan(
            tuple(a for j, a in enumerate(self.attributes) if j != i),
            tuple(r for j, r in enumerate(self.regions) if j != i),
            renumber(self.x_order),
            renumber(self.y_order),
        )

    def with_object(self, attributes: Mapping[str, str], region: str, x_pos: int, y_pos: int) -> Plan:
        """A new object (index n) in ``region``, inserted at positions ``x_pos``/``y_pos`` *within its half*
        of each order (0 = first of the half)."""
        n = len(self)
        col, row = region_cell(region)
        regions = (*self.regions, region)

        def insert(order: Sequence[int], k: int, half: int, pos: int) -> tuple[int, ...]:
            out = list(order)
            before = sum(1 for j in order if region_cell(self.regions[j])[k] < half)
            inside = sum(1 for j in order if region_cell(self.regions[j])[k] == half)
            out.insert(before + min(pos, inside), n)
            return tuple(out)

        return Plan((*self.attributes, dict(attributes)), regions, insert(self.x_order, 0, col, x_pos),
                    insert(self.y_order, 1, row, y_pos))


# ---------------------------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------------------------
#: how generated scenes become images (see `Generator`)
RENDERERS = ("numpy", "blender")


class Generator(abc.ABC):
    """Base class: ``generate(ref) -> Generation``; subclasses implement ``plan_scene``.

    Args:
        seed: base seed (with the row id it fixes every random choice).
        image_size: ``(W, H)`` of the images.
        solver: the `Solver` used for witnesses and checks (default: the shared one).
        vary_witness: the oracle scene (also the perturbed generator's starting point) re-draws the attributes
            the constraints leave free (`varied_witness`); ``False`` renders the solver's witness unchanged.
        renderer: ``"numpy"`` (the fast built-in renderer, default) or ``"blender"`` (the CLEVR look: the
            official CLEVR assets rendered in 3D with Blender, regions and orders kept; needs ``assets`` and
            bpy, here or in the environment named by ``$LOGICVAL_BLENDER_PYTHON``).
        assets: the official CLEVR generator's ``image_generation/data/`` folder (``renderer="blender"``).
        blender: further `BlenderSceneRenderer` settings (``samples``, ``denoise``, ``threads``).
    """

    name = "generator"
    #: render seeds are drawn from this stream (the perturbed generator shares the oracle's, so that its image
    #: differs from the oracle image of the same row by the change only: same sizes, rotations, jitter)
    render_stream = "generator"

    def __init__(self, seed: int = 0, image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE,
                 solver: Solver | None = None, vary_witness: bool = True, renderer: str = "numpy",
                 assets: str | None = None, blender: Mapping[str, Any] | None = None):
        self.seed = int(seed)
        self.image_size = (int(image_size[0]), int(image_size[1]))
        self.solver = solver or default_solver()
        self.vary_witness = bool(vary_witness)
        if renderer not in RENDERERS:
            raise ValueError(f"unknown renderer {renderer!r}; known renderers: {', '.join(RENDERERS)}")
        if renderer == "blender" and not assets:
            raise ValueError("renderer 'blender' needs the CLEVR assets folder (the official generator's "
                             "image_generation/data/)")
        self.renderer, self.assets, self.blender_settings = renderer, assets, dict(blender or {})
        self._blender: Any = None

    def render(self, planned: Scene, render_seed: int) -> tuple[Image.Image, Scene]:
        """The image of a planned scene and the scene as drawn (boxes of the drawn objects)."""
        if self.renderer == "numpy":
            return render_scene(planned, size=self.image_size, seed=render_seed)
        if self._blender is None:
            from logicval_hf.generation.blender_process import scene_renderer

            assets = cast(str, self.assets)  # __init__ refuses renderer 'blender' without assets
            self._blender = scene_renderer(assets, width=self.image_size[0], height=self.image_size[1],
                                           seed=self.seed, **self.blender_settings)
        rgb, drawn = self._blender.render(planned)
        return Image.fromarray(rgb), drawn

    @property
    def domain(self) -> Domain:
        return self.solver.catalog.domain

    def rng(self, rid: str) -> random.Random:
        return random.Random(f"logicval-generator/{self.name}/{self.seed}/{rid}")

    def label_of(self, spec: Spec, label: str | None) -> str:
        return label if label in ("SAT", "UNSAT") else self.solver.solve(spec).label

    def oracle_scene(self, spec: Spec, label: str, witness: Mapping[str, Any] | None, rid: str = "") -> Scene:
        """The solver's witness (the row's when given), its free attributes re-drawn (`varied_witness`) unless
        ``vary_witness=False``; for UNSAT, the empty scene."""
        if label == "UNSAT":
            return Scene.empty(self.image_size)
        if witness is not None:
            scene = Scene.from_dict(witness, self.domain)
            if tuple(scene.image_size) != tuple(float(v) for v in self.image_size):
                scene = Plan.from_scene(scene).to_scene(self.image_size)
        else:
            witness_scene = self.solver.solve(spec, image_size=self.image_size).witness
            if witness_scene is None:
                raise ValueError(f"the oracle has no scene to draw: the solver finds this spec unsatisfiable, "
                                 f"but it is labelled {label}")
            scene = witness_scene
        if self.vary_witness:
            scene = self.varied_witness(spec, scene, random.Random(f"logicval-witness/{self.seed}/{rid}"))
        return scene

    def varied_witness(self, spec: Spec, scene: Scene, rng: random.Random) -> Scene:
        """``scene`` (a model of ``spec``) with the attributes the constraints leave free re-drawn at random.

        A solver's witness takes the first value wherever nothing forces another one (about half of its objects
        are grey metal), which is neither a natural picture nor a fair test of perception. Every (object,
        attribute) pair is visited once in random order and given a random other value; each change is kept
        only if the solver still accepts the scene (strict count), so the result is again a model of ``spec``
        with the same regions and orders.
        """
        dom = self.domain
        attrs = [dict(o.attributes) for o in scene.objects]

        def build() -> Scene:
            return Scene(scene.image_size,
                         tuple(SceneObject(dict(a), o.bbox) for a, o in zip(attrs, scene.objects, strict=True)),
                         scene.domain)

        steps = [(i, a) for i in range(len(attrs)) for a in dom.perceived_attributes]
        rng.shuffle(steps)
        for i, a in steps:
            old = attrs[i][a]
            attrs[i][a] = rng.choice([v for v in dom.attributes[a] if v != old])
            if not self.solver.verify(spec, build(), count="strict", label="SAT").ok:
                attrs[i][a] = old
        return build()

    @abc.abstractmethod
    def plan_scene(self, spec: Spec, rid: str, label: str, witness: Mapping[str, Any] | None,
                   rng: random.Random) -> tuple[Scene, dict[str, Any]]:
        """The scene this generator intends for a spec, and metadata saying how it was made."""

    def generate(self, ref: Any) -> Generation:
        """Image, intended scene (drawn boxes) and metadata (with the known truth) for a row or a spec."""
        spec, rid, label, witness = ref_fields(ref, self.solver)
        label = self.label_of(spec, label)
        planned, meta = self.plan_scene(spec, rid, label, witness, self.rng(rid))
        render_seed = seed_for("logicval-render", self.render_stream, self.seed, rid)
        image, drawn = self.render(planned, render_seed)
        strict = self.solver.verify(spec, drawn, count="strict", label=label)
        relaxed = self.solver.verify(spec, drawn, count="relaxed", label=label)
        metadata = {
            "generator": self.name,
            "id": rid,
            "seed": self.seed,
            "render_seed": render_seed,
            "renderer": self.renderer,
            "label": label,
            "n": spec.n,
            "n_objects": len(drawn),
            **meta,
            "truth_ok": strict.ok,
            "truth_relaxed_ok": relaxed.ok,
            "truth_count_ok": strict.count_ok,
            "truth_violated": list(strict.violated),
        }
        return Generation(image, drawn, metadata)

    __call__ = generate


class OracleGenerator(Generator):
    """The solver's witness, rendered; the empty ground for UNSAT specs."""

    name = "oracle"
    render_stream = "oracle"

    def plan_scene(self, spec, rid, label, witness, rng):
        scene = self.oracle_scene(spec, label, witness, rid)
        what = "solver witness, free attributes varied" if self.vary_witness else "solver witness"
        return scene, {"description": "empty scene (UNSAT: abstain)" if label == "UNSAT" else what}


class NaiveGenerator(Generator):
    """n objects with uniformly random attributes and positions; the constraints are ignored."""

    name = "naive"
    render_stream = "naive"

    def plan_scene(self, spec, rid, label, witness, rng):
        scene = random_scene(spec.n, rng, self.domain, self.image_size)
        return scene, {"description": f"{spec.n} random objects"}


# kinds of perturbation, in the order used before the seed shuffles them
PERTURBATION_KINDS = ("attribute", "move", "swap", "count")


class PerturbedGenerator(Generator):
    """The oracle scene with one minimal change that breaks exactly one constraint or only the count."""

    name = "perturbed"
    render_stream = "oracle"

    def __init__(self, seed: int = 0, image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE,
                 solver: Solver | None = None, vary_witness: bool = True, add_candidates: int = 12,
                 **render: Any):
        super().__init__(seed, image_size, solver, vary_witness, **render)
        self.add_candidates = add_candidates

    def _random_object(self, rng: random.Random) -> dict[str, str]:
        dom = self.domain
        return {a: rng.choice(dom.attributes[a]) for a in dom.perceived_attributes}

    def candidates(self, plan: Plan, rng: random.Random) -> list[tuple[str, dict[str, Any], Plan]]:
        """Every one-step change of ``plan`` as ``(kind, description, new plan)``, in the search order."""
        dom = self.domain
        n = len(plan)
        by_kind: dict[str, list[tuple[dict[str, Any], Plan]]] = {k: [] for k in PERTURBATION_KINDS}
        verbs = {"color": "recolour", "shape": "reshape", "material": "rematerial"}
        for i in range(n):
            for a in dom.perceived_attributes:
                old = plan.attributes[i][a]
                for v in dom.attributes[a]:
                    if v != old:
                        by_kind["attribute"].append((
                            {"op": verbs.get(a, f"change {a}"), "object": i, "attribute": a, "from": old, "to": v},
                            plan.with_attribute(i, a, v)))
            for axis, line in (("x", "vertical"), ("y", "horizontal")):
                new = plan.across(i, axis)
                by_kind["move"].append((
                    {"op": "move", "object": i, "across": f"{line} midline", "from": plan.regions[i],
                     "to": new.regions[i]}, new))
        for axis, k in (("x", 0), ("y", 1)):
            order = plan.x_order if axis == "x" else plan.y_order
            for pos in range(n - 1):
                first, second = order[pos], order[pos + 1]
                if region_cell(plan.regions[first])[k] == region_cell(plan.regions[second])[k]:
                    by_kind["swap"].append((
                        {"op": "swap", "axis": axis, "objects": [first, second],
                         "relation": "left" if axis == "x" else "behind"}, plan.swapped(axis, pos)))
        for i in range(n):
            by_kind["count"].append(({"op": "remove", "object": i, "attributes": dict(plan.attributes[i])},
                                     plan.without(i)))
        for _ in range(self.add_candidates):
            attrs = self._random_object(rng)
            region = rng.choice(dom.attributes.get("region", ("r0", "r1", "r2", "r3")))
            xp, yp = rng.randint(0, n), rng.randint(0, n)
            by_kind["count"].append(({"op": "add", "object": n, "attributes": attrs, "region": region},
                                     plan.with_object(attrs, region, xp, yp)))
        kinds = list(PERTURBATION_KINDS)
        rng.shuffle(kinds)
        out: list[tuple[str, dict[str, Any], Plan]] = []
        for kind in kinds:
            items = by_kind[kind]
            rng.shuffle(items)
            out.extend((kind, desc, p) for desc, p in items)
        return out

    def plan_scene(self, spec, rid, label, witness, rng):
        if label == "UNSAT":
            attrs = self._random_object(rng)
            region = rng.choice(("r0", "r1", "r2", "r3"))
            plan = Plan((), (), (), ()).with_object(attrs, region, 0, 0)
            return plan.to_scene(self.image_size), {
                "description": f"one object added to the empty scene (UNSAT spec): {_describe(attrs)} in {region}",
                "exact": True,
                "perturbation": {"kind": "count", "op": "add", "object": 0, "attributes": attrs, "region": region},
                "broken": {"what": "abstention"},
            }
        base = Plan.from_scene(self.oracle_scene(spec, label, witness, rid))
        fallback: tuple[int, tuple[str, dict[str, Any], Scene, Verdict]] | None = None
        tried = 0
        for kind, desc, plan in self.candidates(base, rng):
            scene = plan.to_scene(self.image_size)
            v = self.solver.verify(spec, scene, count="strict", label=label)
            tried += 1
            broken = len(v.violated) + (not v.count_ok)
            if broken == 1:
                return scene, self._meta(spec, kind, desc, v, True, tried)
            if broken and (fallback is None or broken < fallback[0]):
                fallback = (broken, (kind, desc, scene, v))
        if fallback is None:  # pragma: no cover - removing an object always breaks the count
            raise RuntimeError(f"{rid}: no perturbation breaks anything")
        kind, desc, scene, v = fallback[1]
        return scene, self._meta(spec, kind, desc, v, False, tried)

    @staticmethod
    def _meta(spec: Spec, kind: str, desc: dict[str, Any], v: Verdict, exact: bool, tried: int) -> dict[str, Any]:
        if not v.count_ok and not v.violated:
            broken: dict[str, Any] = {"what": "count"}
        else:
            broken = {"what": "constraint", "constraints": list(v.violated),
                      "classes": [spec.constraints[i].cls for i in v.violated],
                      "templates": [spec.constraints[i].template_id for i in v.violated]}
            if not v.count_ok:
                broken["count"] = True
        return {"description": _describe_change(desc), "exact": exact, "candidates_tried": tried,
                "perturbation": {"kind": kind, **desc}, "broken": broken}


def _describe(attrs: Mapping[str, str]) -> str:
    return " ".join(attrs[a] for a in ("color", "material", "shape") if a in attrs)


def _describe_change(d: Mapping[str, Any]) -> str:
    op = d["op"]
    if op in ("recolour", "reshape", "rematerial") or op.startswith("change"):
        return f"{op} object {d['object']}: {d['from']} -> {d['to']}"
    if op == "move":
        return f"move object {d['object']} across the {d['across']} ({d['from']} -> {d['to']})"
    if op == "swap":
        return f"swap objects {d['objects'][0]} and {d['objects'][1]} in the {d['axis']}-order"
    if op == "remove":
        return f"remove object {d['object']} ({_describe(d['attributes'])})"
    return f"add a {_describe(d['attributes'])} in {d['region']}"


GENERATORS: Registry[type[Generator]] = Registry("generator", {
    "oracle": OracleGenerator,
    "naive": NaiveGenerator,
    "perturbed": PerturbedGenerator,
})


def make_generator(name: str, seed: int = 0, image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE,
                   solver: Solver | None = None, vary_witness: bool = True, renderer: str = "numpy",
                   assets: str | None = None, blender: Mapping[str, Any] | None = None) -> Generator:
    """A generator by name (``oracle``, ``naive``, ``perturbed``); the other arguments as in `Generator`."""
    cls = GENERATORS.get(name)
    return cls(seed=seed, image_size=image_size, solver=solver, vary_witness=vary_witness, renderer=renderer,
               assets=assets, blender=blender)
