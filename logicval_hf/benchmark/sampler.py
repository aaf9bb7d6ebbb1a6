"""The LogicVal benchmark: 509 solver-labelled specifications in six packages, sampled from one seed.

Packages (paper §3.2): ``1SAT`` 355, ``1UNSAT`` 25, ``3SAT`` 25, ``3UNSAT`` 10, ``6SAT`` 25, ``6UNSAT`` 69.

How a package is sampled (every random choice comes from `random.Random` seeded with a string derived from
the benchmark seed and the stream name, so the output depends on the seed alone):

* **1SAT** — the 71 templates in catalog order, each until it has 5 accepted specs: draw n uniformly from
  3..9 and the parameters with `logicval_hf.contract.params.random_constraint` (uniform over the valid parameter sets,
  counts from the widened ``overflow: "unsat"`` range of docs/spec_language.md §8.1); keep the draw if the solver says
  SAT. Every template therefore appears exactly 5 times.
* **1UNSAT** — single-constraint draws with the template uniform over *all* 71 templates, n uniform in
  3..9 and uniform parameters, kept when the solver says UNSAT, until there are 25. Nothing steers the draw
  towards UNSAT (about 4 % of uniform single draws are UNSAT, more often at small n). Almost all of them are
  count overflows, a count slot declared ``overflow: "unsat"`` with K above its regular maximum: "there are
  exactly 8 red objects" in a 5-object scene, "every cube has exactly 6 objects to its left" with n = 4, from
  the C8 count templates and ``C7/1prop_exact``. The other cause seen is rarer still: parity, e.g. "as
  many metal as rubber objects" with n odd (the dual of the tautologies of docs/spec_language.md §8.2). With the default
  seed all 25 are overflows. `unsat_causes` names the cause of each constraint.
* **3SAT / 3UNSAT** and **6SAT / 6UNSAT** — one stream per m: draw n uniformly, m distinct classes
  (uniformly; the constraints keep the drawn, random order), a template uniformly within each class and its
  parameters; the spec goes to the SAT or the UNSAT package of that m according to the solver, until both
  quotas are full (draws whose package is already full are discarded).

For every candidate the solver is asked first (``Solver.solve``: label, witness or minimal core). A
candidate is then rejected when its package is full, when it duplicates an accepted spec (the canonical
key is n plus the *sorted* constraint keys, so the same constraints in another order also count as a
duplicate; this is stricter than `Spec.key`), or when one of its constraints is a tautology at its n
(`Solver.is_tautology`, docs/spec_language.md §8.2: such a spec is rejected as a whole and a new one is drawn). The
order of these checks never changes which draws are accepted, only the cost. Labels come from the solver
only (docs/spec_language.md §8.3); UNSAT rows carry a minimal unsat core (0-based constraint indices).

**Chance rates** (docs/spec_language.md §8.4, `chance_rates`): the probability that a uniformly random admissible
scene of exactly n objects satisfies a constraint (formula and anti-vacuity), estimated by Monte Carlo over
``CHANCE_SCENES`` = 256 random scenes per n, the same scenes for every constraint at that n (common random
numbers, generated from ``CHANCE_SEED``, independent of the benchmark seed, so a constraint always gets the
same estimate). A random scene gives each object every perceived attribute uniformly and independently
(colour 1/8, shape 1/3, material 1/2) and a box centre uniform on the image plane (so the region is uniform
over the four quadrants, the orders within a half are uniformly random, and ties have probability 0). The
verdicts come from `Solver.verify_many` (all constraints of one n are checked against the same scenes in a
few batched groundings). A row's ``chance_rate`` is the fraction of those scenes that satisfy *all* its
constraints at once: 0 for every UNSAT spec, necessarily. The standard error of an estimate p is
sqrt(p(1-p)/256) <= 0.031.

Same seed, same rows, byte for byte (clingo's first model, the minimal core and the Monte Carlo scenes are
all deterministic).
"""

from __future__ import annotations

import functools
import json
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from logicval_hf.asp.programs import spec_program
from logicval_hf.asp.solver import DEFAULT_IMAGE_SIZE, Solver, SolveResult
from logicval_hf.benchmark.store import USER_CACHE, read_stored, write_stored
from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.clip_tokens import CLIP_CONTEXT, clip_token_count
from logicval_hf.contract.compact_prompt import compact_prompt
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Constraint, Spec
from logicval_hf.contract.verbalise import CONSTRAINT_ITEM_TEMPLATE, constraint_text, full_prompt, spec_subquestions

__all__ = [
    "DEFAULT_SEED", "CHANCE_SCENES", "CHANCE_SEED", "PACKAGES", "PACKAGE_NAMES", "Package", "Sampled",
    "Benchmark", "sample", "chance_rates", "random_scene", "make_row", "build_benchmark", "dedup_key",
    "unsat_causes", "prompt_body", "prompt_length", "PROMPT_COLUMNS", "cached_benchmark", "stored_benchmark",
    "keep_benchmark",
]

#: the benchmark's default seed (the published dataset is built with it)
DEFAULT_SEED = 509
#: Monte Carlo sample size of the chance-rate estimator, per scene size n
CHANCE_SCENES = 256
#: seed of the chance-rate scenes (fixed, independent of the benchmark seed)
CHANCE_SEED = 9
#: constraints verified per batched grounding in the chance-rate stage
_CHANCE_CHUNK = 64
#: draws allowed per stream before giving up (a safeguard; the default seed needs far fewer)
_MAX_DRAWS = 200_000


@dataclass(frozen=True)
class Package:
    """One of the six packages: m constraints per spec and the label every spec of the package has."""

    name: str
    m: int
    label: str
    size: int


PACKAGES: tuple[Package, ...] = (
    Package("1SAT", 1, "SAT", 355),
    Package("1UNSAT", 1, "UNSAT", 25),
    Package("3SAT", 3, "SAT", 25),
    Package("3UNSAT", 3, "UNSAT", 10),
    Package("6SAT", 6, "SAT", 25),
    Package("6UNSAT", 6, "UNSAT", 69),
)
PACKAGE_NAMES: tuple[str, ...] = tuple(p.name for p in PACKAGES)
#: the columns that hold a whole prompt for a text-to-image model; `prompt_lengths` measures each
PROMPT_COLUMNS = ("full_prompt_short", "full_prompt_long", "full_prompt_white_short", "full_prompt_white_long",
                  "full_prompt_compact")
_BY_NAME = {p.name: p for p in PACKAGES}


@dataclass(frozen=True)
class Sampled:
    """An accepted spec with its solver result."""

    package: str
    spec: Spec
    result: SolveResult


@dataclass
class _Stream:
    """Draw counters of one sampling stream (reported in the dataset card)."""

    draws: int = 0
    sat: int = 0
    unsat: int = 0
    duplicates: int = 0
    tautologies: int = 0
    discarded_full: int = 0

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def dedup_key(spec: Spec) -> str:
    """n plus the sorted constraint keys: two specs with the same constraints in any order are duplicates."""
    return json.dumps([spec.n, sorted(c.key() for c in spec.constraints)], separators=(",", ":"))


def _rng(seed: int, stream: str) -> random.Random:
    # String seeds are hashed with SHA-512 by `random.seed` (version 2): stable across runs and platforms.
    return random.Random(f"logicval-benchmark/{seed}/{stream}")


class _Sampler:
    def __init__(self, seed: int, catalog: Catalog, solver: Solver, bar: Any):
        self.seed = seed
        self.catalog = catalog
        self.solver = solver
        self.bar = bar
        self.seen: set[str] = set()
        self.out: dict[str, list[Sampled]] = {p.name: [] for p in PACKAGES}
        self.streams: dict[str, _Stream] = {}
        dom = catalog.domain
        self.n_values = list(range(dom.n_min, dom.n_max + 1))

    def _consider(self, spec: Spec, stream: _Stream, packages: Mapping[str, Package]) -> bool:
        """Label a candidate and accept it into the package of its label if allowed; True if accepted."""
        stream.draws += 1
        if stream.draws > _MAX_DRAWS:
            raise RuntimeError(f"sampling did not fill {sorted(packages)} within {_MAX_DRAWS} draws")
        key = dedup_key(spec)
        if key in self.seen:
            stream.duplicates += 1
            return False
        result = self.solver.solve(spec)
        if result.satisfiable:
            stream.sat += 1
        else:
            stream.unsat += 1
        pkg = packages.get(result.label)
        if pkg is None or len(self.out[pkg.name]) >= pkg.size:
            stream.discarded_full += 1
            return False
        n = spec.fixed_n("sampling")
        if any(self.solver.is_tautology(c, n) for c in spec.constraints):
            # docs/spec_language.md §8.2; also in UNSAT specs, where another constraint causes the contradiction
            stream.tautologies += 1
            return False
        self.seen.add(key)
        self.out[pkg.name].append(Sampled(pkg.name, spec, result))
        self.bar.update(1)
        return True

    def one_sat(self) -> None:
        pkg = _BY_NAME["1SAT"]
        per_template, extra = divmod(pkg.size, len(self.catalog.templates))
        if extra:
            raise ValueError(f"1SAT size {pkg.size} is not a multiple of the {len(self.catalog.templates)} templates")
        rng = _rng(self.seed, "1SAT")
        stream = self.streams.setdefault("1SAT", _Stream())
        for template in self.catalog.templates.values():
            got = 0
            while got < per_template:
                n = rng.choice(self.n_values)
                c = random_constraint(template, n, rng, self.catalog)
                if self._consider(Spec(n, (c,)), stream, {"SAT": pkg}):
                    got += 1

    def one_unsat(self) -> None:
        pkg = _BY_NAME["1UNSAT"]
        rng = _rng(self.seed, "1UNSAT")
        stream = self.streams.setdefault("1UNSAT", _Stream())
        templates = list(self.catalog.templates.values())
        while len(self.out[pkg.name]) < pkg.size:
            template = rng.choice(templates)
            n = rng.choice(self.n_values)
            c = random_constraint(template, n, rng, self.catalog)
            self._consider(Spec(n, (c,)), stream, {"UNSAT": pkg})

    def multi(self, m: int) -> None:
        sat, unsat = _BY_NAME[f"{m}SAT"], _BY_NAME[f"{m}UNSAT"]
        rng = _rng(self.seed, f"m={m}")
        stream = self.streams.setdefault(f"m={m}", _Stream())
        classes = list(self.catalog.classes)
        while len(self.out[sat.name]) < sat.size or len(self.out[unsat.name]) < unsat.size:
            n = rng.choice(self.n_values)
            chosen = rng.sample(classes, m)
            cons = tuple(random_constraint(rng.choice(self.catalog.by_class(k)), n, rng, self.catalog) for k in chosen)
            self._consider(Spec(n, cons), stream, {"SAT": sat, "UNSAT": unsat})


def sample(
    seed: int = DEFAULT_SEED,
    catalog: Catalog | None = None,
    solver: Solver | None = None,
    progress: bool = False,
) -> tuple[dict[str, list[Sampled]], dict[str, dict[str, int]]]:
    """Sample the six packages. Returns ``({package: [Sampled, ...]}, {stream: draw counters})``."""
    from tqdm.auto import tqdm

    catalog = catalog or load_catalog()
    solver = solver or Solver(catalog, max_specs=64)
    total = sum(p.size for p in PACKAGES)
    with tqdm(total=total, desc="sampling specs", unit="spec", disable=not progress, leave=False) as bar:
        s = _Sampler(seed, catalog, solver, bar)
        s.one_sat()
        s.one_unsat()
        s.multi(3)
        s.multi(6)
    return s.out, {k: v.to_dict() for k, v in s.streams.items()}


# ---------------------------------------------------------------------------------------------
# Chance rates
# ---------------------------------------------------------------------------------------------
def random_scene(
    n: int, rng: random.Random, domain: Domain | None = None, image_size: tuple[float, float] = DEFAULT_IMAGE_SIZE
) -> Scene:
    """A uniformly random admissible scene of n objects: attributes uniform and independent, box centres
    uniform on the image (small boxes around them)."""
    domain = domain or load_catalog().domain
    w, h = image_size
    objs = []
    for _ in range(n):
        attrs = {a: rng.choice(domain.attributes[a]) for a in domain.perceived_attributes}
        cx, cy = rng.uniform(1.0, w - 1.0), rng.uniform(1.0, h - 1.0)
        objs.append(SceneObject(attrs, (cx - 1.0, cy - 1.0, cx + 1.0, cy + 1.0)))
    return Scene((w, h), tuple(objs), domain)


def _chance_scenes(n: int, count: int, seed: int, domain: Domain) -> list[Scene]:
    rng = random.Random(f"logicval-chance/{seed}/{n}")
    return [random_scene(n, rng, domain) for _ in range(count)]


def chance_rates(
    specs: Iterable[Spec],
    scenes: int = CHANCE_SCENES,
    seed: int = CHANCE_SEED,
    solver: Solver | None = None,
    progress: bool = False,
) -> dict[str, tuple[list[float], float]]:
    """Monte Carlo chance rates: ``{spec.key(): ([rate of each constraint], rate of the whole spec)}``.

    Each rate is the fraction of ``scenes`` random admissible scenes of exactly n objects (the same scenes for
    every constraint at that n) that satisfy the constraint, respectively all constraints of the spec.
    """
    from tqdm.auto import tqdm

    specs = list(specs)
    solver = solver or Solver()
    domain = solver.catalog.domain
    # unique constraints per n; each gets a bit mask of the scenes it holds in
    by_n: dict[int, dict[str, Constraint]] = {}
    for spec in specs:
        bucket = by_n.setdefault(spec.fixed_n("chance rates"), {})
        for c in spec.constraints:
            bucket.setdefault(c.key(), c)
    masks: dict[tuple[int, str], int] = {}
    total = sum(len(b) for b in by_n.values())
    with tqdm(total=total, desc="chance rates", unit="constraint", disable=not progress, leave=False) as bar:
        for n in sorted(by_n):
            pool = _chance_scenes(n, scenes, seed, domain)
            items = sorted(by_n[n].items())
            for start in range(0, len(items), _CHANCE_CHUNK):
                chunk = items[start:start + _CHANCE_CHUNK]
                # A bag of unrelated constraints checked in one grounding (only verification, never solved).
                bag = Spec(n, tuple(c for _, c in chunk))
                verdicts = solver.verify_many([(bag, s) for s in pool], labels=["SAT"] * len(pool),
                                              batch_size=len(pool))
                held = [0] * len(chunk)
                for j, v in enumerate(verdicts):
                    if not v.count_ok:
                        raise RuntimeError("internal error: a chance scene does not have n objects")
                    bad = set(v.violated)
                    for i in range(len(chunk)):
                        if i not in bad:
                            held[i] |= 1 << j
                for (key, _), mask in zip(chunk, held, strict=True):
                    masks[(n, key)] = mask
                bar.update(len(chunk))
    out: dict[str, tuple[list[float], float]] = {}
    everything = (1 << scenes) - 1
    for spec in specs:
        ms = [masks[(spec.fixed_n("chance rates"), c.key())] for c in spec.constraints]
        joint = everything
        for mk in ms:
            joint &= mk
        out[spec.key()] = ([bin(mk).count("1") / scenes for mk in ms], bin(joint).count("1") / scenes)
    return out


# ---------------------------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------------------------
def unsat_causes(spec: Spec) -> list[str]:
    """Per constraint: ``"count_overflow"`` if a count slot exceeds its regular maximum at n
    (docs/spec_language.md §8.1), else ``""`` (a single UNSAT constraint without overflow is a parity conflict such
    as ``#metal = #rubber`` with n odd)."""
    n = spec.fixed_n("unsat causes")
    out = []
    for c in spec.constraints:
        over = any(
            s.type == "count" and c.count(s.name) > s.count_max(n) for s in c.template.slots
        )
        out.append("count_overflow" if over else "")
    return out


def prompt_body(spec: Spec, register: str) -> str:
    """The constraint part of the prompt: the single constraint's text, or the numbered list
    ``Constraint 1: ...`` (one per line) when there are several (paper, Appendix C)."""
    texts = [constraint_text(c, spec.n, register) for c in spec.constraints]
    if len(texts) == 1:
        return texts[0]
    return "\n".join(CONSTRAINT_ITEM_TEMPLATE.format(i=i, text=t) for i, t in enumerate(texts, 1))


def _witness(scene: Scene | None, domain: Domain) -> dict[str, Any] | None:
    if scene is None:
        return None
    return {
        "image_size": [round(v) for v in scene.image_size],  # pixels: integers
        "objects": [
            {**{a: o.attributes[a] for a in domain.perceived_attributes}, "bbox": [float(v) for v in o.bbox]}
            for o in scene.objects
        ],
    }


def make_row(
    row_id: str,
    package: str,
    spec: Spec,
    result: SolveResult,
    chance: tuple[Sequence[float], float],
    catalog: Catalog | None = None,
) -> dict[str, Any]:
    """One dataset row (columns documented in the dataset card, `logicval_hf.benchmark.dataset.COLUMNS`)."""
    catalog = catalog or load_catalog()
    per_constraint, joint = chance
    # every English text first, then the program: the row's parts in the order the verbaliser makes them
    prompts = {f"prompt_{register}": prompt_body(spec, register) for register in ("short", "long")}
    subqs = [
        {
            "constraint": int(sq["constraint"]),
            "question": sq["question"],
            "type": sq["type"],
            "expect": str(sq["expect"]),
            "bind": sq["bind"],
            "candidates": [str(x) for x in sq["candidates"]],
        }
        for sq in spec_subquestions(spec, catalog)
    ]
    constraints = [
        {
            "template": c.template_id,
            "class": c.cls,
            "params_json": json.dumps(c.to_dict()["params"], separators=(",", ":")),
            "text_short": constraint_text(c, spec.n, "short"),
            "text_long": constraint_text(c, spec.n, "long"),
        }
        for c in spec.constraints
    ]
    for white in (False, True):
        for register in ("short", "long"):
            prompts[f"full_prompt_{'white_' if white else ''}{register}"] = full_prompt(spec, register, white, catalog)
    prompts["full_prompt_compact"] = compact_prompt(spec, catalog)
    row: dict[str, Any] = {
        "id": row_id,
        "package": package,
        "n": spec.n,
        "m": spec.m,
        "label": result.label,
        "classes": [c.cls for c in spec.constraints],
        "templates": [c.template_id for c in spec.constraints],
        "constraints": constraints,
        "spec_json": spec.to_json(),
        "asp_program": spec_program(spec, catalog),
        **prompts,
        "subquestions": subqs,
        "witness": _witness(result.witness, catalog.domain),
        "core": list(result.core) if result.core is not None else None,
        "chance_rates": [float(x) for x in per_constraint],
        "chance_rate": float(joint),
    }
    row["full_prompt_compact_fits"] = clip_token_count(row["full_prompt_compact"]) <= CLIP_CONTEXT
    row["prompt_lengths"] = {c: prompt_length(row[c]) for c in PROMPT_COLUMNS}
    return row


def prompt_length(text: str) -> dict[str, int]:
    """``{"words", "clip_tokens"}`` of a prompt: words split on whitespace; the tokens a CLIP text encoder takes,
    its start and end tokens included (it reads `CLIP_CONTEXT`)."""
    return {"words": len(text.split()), "clip_tokens": clip_token_count(text)}


@dataclass(frozen=True)
class Benchmark:
    """The sampled benchmark: rows per package (in package order), with the draw counters and timings."""

    seed: int
    rows: Mapping[str, tuple[dict[str, Any], ...]]
    streams: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    seconds: Mapping[str, float] = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return sum(len(r) for r in self.rows.values())

    def all_rows(self) -> list[dict[str, Any]]:
        return [r for name in PACKAGE_NAMES for r in self.rows.get(name, ())]


def build_benchmark(
    seed: int = DEFAULT_SEED,
    progress: bool = False,
    catalog: Catalog | None = None,
    chance_scenes: int = CHANCE_SCENES,
) -> Benchmark:
    """Sample the six packages, label them, estimate chance rates and render every row."""
    from tqdm.auto import tqdm

    catalog = catalog or load_catalog()
    solver = Solver(catalog, max_specs=64)
    t0 = time.perf_counter()
    packages, streams = sample(seed, catalog, solver, progress)
    t1 = time.perf_counter()
    specs = [s.spec for name in PACKAGE_NAMES for s in packages[name]]
    chance = chance_rates(specs, scenes=chance_scenes, solver=solver, progress=progress)
    t2 = time.perf_counter()
    rows: dict[str, tuple[dict[str, Any], ...]] = {}
    with tqdm(total=len(specs), desc="rendering rows", unit="row", disable=not progress, leave=False) as bar:
        for name in PACKAGE_NAMES:
            out = []
            for i, s in enumerate(packages[name], 1):
                out.append(make_row(f"{name}-{i:04d}", name, s.spec, s.result, chance[s.spec.key()], catalog))
                bar.update(1)
            rows[name] = tuple(out)
    t3 = time.perf_counter()
    timings = {"sampling": t1 - t0, "chance_rates": t2 - t1, "rows": t3 - t2}
    return Benchmark(seed, rows, streams, timings)


def cached_benchmark(seed: int = DEFAULT_SEED) -> Benchmark:
    """`build_benchmark` memoised in-process (the last seed only) and on disk, in the user-level cache
    (`logicval_hf.benchmark.store`: ``$LOGICVAL_CACHE``, default ``~/.cache/logicval``; ``LOGICVAL_CACHE=off``
    turns it off): a second process, a new output folder or a new dataset reads the rows instead of building
    them. The rows are shared, do not mutate them."""
    return _cached_benchmark(int(seed))


def stored_benchmark(seed: int = DEFAULT_SEED, cache_dir: str | Path | None = USER_CACHE,
                     progress: bool = False) -> Benchmark:
    """The benchmark of ``seed`` read from ``cache_dir`` (default: the user-level cache) when this code built it
    there, else built and kept there (None: built, not kept)."""
    doc = read_stored(seed, cache_dir)
    if doc is not None:
        return Benchmark(int(seed), {name: tuple(doc["rows"][name]) for name in PACKAGE_NAMES},
                         doc.get("streams") or {}, doc.get("seconds") or {})
    bench = build_benchmark(seed, progress=progress)
    keep_benchmark(bench, cache_dir)
    return bench


def keep_benchmark(bench: Benchmark, cache_dir: str | Path | None = USER_CACHE) -> Path | None:
    """Write a built benchmark where `stored_benchmark` reads it; the file, or None when nothing was written."""
    return write_stored(bench.seed, {"rows": {name: list(bench.rows[name]) for name in PACKAGE_NAMES},
                                     "streams": bench.streams, "seconds": bench.seconds}, cache_dir)


@functools.lru_cache(maxsize=1)
def _cached_benchmark(seed: int) -> Benchmark:
    # keyed on the normalised seed, so cached_benchmark() and cached_benchmark(DEFAULT_SEED) share one build
    return stored_benchmark(seed)
