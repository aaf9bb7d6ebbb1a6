"""The benchmark as a Hugging Face dataset: features, a Hub-ready folder, the dataset card and pushing.

`write_dataset` is the one way the dataset is built: ``logicval build-dataset`` and ``dataset_builder/build.py``
call it. `LogicValBuilder` (a `datasets.GeneratorBasedBuilder`) is deprecated: load the folder with
``datasets.load_dataset(folder, config)`` instead.

The folder (`write_dataset`) is what goes to the Hub::

    README.md              dataset card; YAML front matter with `configs:` (one per package) and `dataset_info`
    data/1SAT.parquet      one parquet file per package (config), split "test"
    data/1UNSAT.parquet ...

It loads with ``datasets.load_dataset(folder, "3SAT")`` (datasets >= 4, no loading script), from the Hub with
``load_dataset("logicval/logicval", "3SAT")`` (the namespace is the setting `logicval_hf.common.hub.hub_namespace`).
Every file is written to a temporary name in its directory and then renamed, so a reader never sees half a file.
The same seed gives byte-identical files.

Needs the ``data`` extras (datasets, pyarrow, PyYAML via datasets, huggingface_hub for pushing).
"""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TextIO

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from logicval_hf.benchmark.columns import COLUMNS, features
from logicval_hf.benchmark.sampler import (
    CHANCE_SCENES,
    DEFAULT_SEED,
    PACKAGE_NAMES,
    PACKAGES,
    Benchmark,
    stored_benchmark,
    unsat_causes,
)
from logicval_hf.common.atomic import atomic_path, atomic_write_text
from logicval_hf.common.hub import check_repo_id, default_repo_id, hf_api
from logicval_hf.common.markdown import md_table
from logicval_hf.common.version import __version__
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import (
    CONSTRAINT_ITEM_TEMPLATE,
    EMPTY_SCENE_INSTRUCTION,
    EMPTY_SCENE_INSTRUCTION_WHITE,
    LEAD_IN_MANY,
    LEAD_IN_ONE,
    PROMPT_TEMPLATE,
    domain_description,
)

__all__ = [
    "SPLIT", "LICENSE", "PRETTY_NAME", "COLUMNS", "CITATION", "features", "write_dataset", "dataset_card",
    "card_metadata", "push_dataset", "dataset_files", "read_rows", "LogicValConfig", "LogicValBuilder",
    "BUILDER_DEPRECATION",
]

SPLIT = "test"
LICENSE = "cc-by-4.0"
PRETTY_NAME = "LogicVal"
TASK_CATEGORIES = ["text-to-image"]

CITATION = """@misc{logicval2026,
  title = {{LogicVal}: A Logic-Formalized Benchmark for Constraint Satisfaction in Text-to-Image Generation},
  year  = {2026}
}"""

CLEVR_CITATION = """@inproceedings{johnson2017clevr,
  title     = {{CLEVR}: A Diagnostic Dataset for Compositional Language and Elementary Visual Reasoning},
  author    = {Johnson, Justin and Hariharan, Bharath and van der Maaten, Laurens and Fei-Fei, Li and
               Zitnick, C. Lawrence and Girshick, Ross},
  booktitle = {Proceedings of the IEEE Conference on Computer Vision and Pattern Recognition (CVPR)},
  year      = {2017}
}"""

# ---------------------------------------------------------------------------------------------
# Writing the folder
# ---------------------------------------------------------------------------------------------
def _table(rows: Sequence[Mapping[str, Any]], feats: datasets.Features) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=feats.arrow_schema)


def dataset_files(folder: str | Path) -> list[str]:
    """The files of a built folder that belong on the Hub (relative POSIX paths, sorted)."""
    folder = Path(folder)
    files = ["README.md"] if (folder / "README.md").is_file() else []
    files += sorted(p.relative_to(folder).as_posix() for p in (folder / "data").glob("*.parquet"))
    return files


def write_dataset(
    out: str | Path,
    seed: int = DEFAULT_SEED,
    progress: bool = False,
    benchmark: Benchmark | None = None,
) -> dict[str, Any]:
    """Sample the benchmark (or take ``benchmark``) and write the Hub-ready folder ``out``.

    Returns a summary: ``{"folder", "files", "rows": {package: count}, "seconds": {...}}``.
    """
    out = Path(out)
    bm = benchmark if benchmark is not None else stored_benchmark(seed, progress=progress)
    feats = features()
    sizes: dict[str, dict[str, int]] = {}
    for name in PACKAGE_NAMES:
        table = _table(bm.rows[name], feats)
        path = out / "data" / f"{name}.parquet"
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp, compression="zstd")
        sizes[name] = {"num_bytes": int(table.nbytes), "num_examples": table.num_rows,
                       "download_size": path.stat().st_size}
    card = dataset_card(bm, sizes)
    atomic_write_text(out / "README.md", card)
    return {
        "folder": str(out),
        "files": dataset_files(out),
        "rows": {k: len(v) for k, v in bm.rows.items()},
        "seconds": dict(bm.seconds),
    }


def read_rows(folder: str | Path, package: str) -> list[dict[str, Any]]:
    """The rows of one package from a built folder (plain pyarrow, no `datasets` machinery)."""
    path = Path(folder) / "data" / f"{package}.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; is {folder} a folder written by write_dataset?")
    return pq.read_table(path).to_pylist()


# ---------------------------------------------------------------------------------------------
# The dataset card
# ---------------------------------------------------------------------------------------------
class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # no &anchors / *aliases: the Hub's YAML reader rejects them
        return True


def card_metadata(sizes: Mapping[str, Mapping[str, int]] | None = None) -> dict[str, Any]:
    """The YAML front matter of the card: licence, task, `configs` (data files) and `dataset_info` (features)."""
    feats = features()._to_yaml_list()
    configs, infos = [], []
    for p in PACKAGES:
        entry: dict[str, Any] = {"config_name": p.name,
                                 "data_files": [{"split": SPLIT, "path": f"data/{p.name}.parquet"}]}
        if p.name == PACKAGE_NAMES[0]:
            entry["default"] = True
        configs.append(entry)
        size = (sizes or {}).get(p.name, {})
        split = {"name": SPLIT, "num_bytes": int(size.get("num_bytes", 0)), "num_examples": p.size}
        info: dict[str, Any] = {"config_name": p.name, "features": feats, "splits": [split]}
        if size:
            info["download_size"] = int(size["download_size"])
            info["dataset_size"] = int(size["num_bytes"])
        infos.append(info)
    return {
        "pretty_name": PRETTY_NAME,
        "license": LICENSE,
        "language": ["en"],
        "task_categories": TASK_CATEGORIES,
        "tags": ["text-to-image", "benchmark", "logic", "answer-set-programming", "constraint-satisfaction",
                 "clevr", "synthetic"],
        "size_categories": ["n<1K"],
        "configs": configs,
        "dataset_info": infos,
    }


def _column_table() -> str:
    feats = features()

    def dtype(f: Any) -> str:
        if isinstance(f, datasets.Value):
            return f.dtype
        if isinstance(f, datasets.List):
            inner = f.feature
            return f"list<{dtype(inner)}>" if not isinstance(inner, dict) else "list<struct>"
        if isinstance(f, dict):
            return "struct"
        return type(f).__name__

    rows = []
    for name, f in feats.items():
        rows.append((f"`{name}`", dtype(f), COLUMNS[name]))
        inner = f.feature if isinstance(f, datasets.List) else f
        if isinstance(inner, dict):
            for sub, sf in inner.items():
                key = f"{name}.{sub}"
                if key in COLUMNS:
                    rows.append((f"`{key}`", dtype(sf), COLUMNS[key]))
    return md_table(["column", "type", "meaning"], rows)


def _prompt_template() -> str:
    skeleton = PROMPT_TEMPLATE.format(
        domain=domain_description(), objects="<n> objects", lead_in="<lead-in>",
        constraints="<constraints>", closing="<closing>",
    )
    item = CONSTRAINT_ITEM_TEMPLATE.format(i="<i>", text="<text of constraint i>")
    return "\n".join([
        "```text", skeleton, "```", "",
        f"* `<lead-in>`: \"{LEAD_IN_ONE}\" when m = 1, \"{LEAD_IN_MANY.format(m='<m>')}\" otherwise.",
        f"* `<constraints>`: the constraint's text (m = 1) or one line `{item}` per constraint "
        "(the `prompt_short` / `prompt_long` column).",
        f"* `<closing>` in `full_prompt_short` / `full_prompt_long` (open models): \"{EMPTY_SCENE_INSTRUCTION}\"",
        f"* `<closing>` in `full_prompt_white_*` (proprietary models): \"{EMPTY_SCENE_INSTRUCTION_WHITE}\"",
    ])


def _stats_sections(bm: Benchmark) -> str:
    catalog = load_catalog()
    classes = list(catalog.classes)
    per_pkg = []
    for p in PACKAGES:
        rows = bm.rows[p.name]
        mean = sum(r["chance_rate"] for r in rows) / len(rows) if rows else 0.0
        mean_c = [x for r in rows for x in r["chance_rates"]]
        per_pkg.append((p.name, p.m, p.label, len(rows), f"{sum(mean_c) / len(mean_c):.3f}" if mean_c else "-",
                        f"{mean:.4f}"))
    pkg_table = md_table(["config", "m", "label", "rows", "mean constraint chance rate", "mean spec chance rate"],
                          per_pkg)
    single = [r["chance_rates"][0] for r in bm.rows["1SAT"]]
    near = sum(1 for x in single if x >= 0.9)
    rare = sum(1 for x in single if x <= 0.01)
    chance_note = (f"Of the {len(single)} 1SAT constraints, {near} hold in at least 90 % of random scenes "
                   f"(near-chance templates, kept on purpose, docs/spec_language.md §8.4) and {rare} in at most 1 %.")
    cls_rows = []
    for p in PACKAGES:
        cnt = collections.Counter(c for r in bm.rows[p.name] for c in r["classes"])
        cls_rows.append((p.name, *(cnt.get(c, 0) for c in classes)))
    cls_table = md_table(["config", *classes], cls_rows)
    ns = list(range(catalog.domain.n_min, catalog.domain.n_max + 1))
    n_rows = []
    for p in PACKAGES:
        cnt = collections.Counter(r["n"] for r in bm.rows[p.name])
        n_rows.append((p.name, *(cnt.get(n, 0) for n in ns)))
    n_table = md_table(["config", *(f"n={n}" for n in ns)], n_rows)
    unsat1 = collections.Counter(r["templates"][0] for r in bm.rows["1UNSAT"])
    causes = collections.Counter(
        c or "other (parity)" for r in bm.rows["1UNSAT"]
        for c in unsat_causes(Spec.from_dict(json.loads(r["spec_json"]))))
    unsat_table = md_table(["template", "1UNSAT rows"], sorted(unsat1.items(), key=lambda kv: (-kv[1], kv[0])))
    core_sizes = collections.Counter(len(r["core"]) for name in ("3UNSAT", "6UNSAT") for r in bm.rows[name])
    stream_rows = []
    names = {"1SAT": "1SAT (template by template)", "1UNSAT": "1UNSAT (uniform single draws)",
             "m=3": "3SAT + 3UNSAT", "m=6": "6SAT + 6UNSAT"}
    for key, st in bm.streams.items():
        stream_rows.append((names.get(key, key), st["draws"], st["sat"], st["unsat"],
                            f"{st['sat'] / max(1, st['sat'] + st['unsat']):.2f}", st["duplicates"], st["tautologies"]))
    stream_table = md_table(["stream", "draws", "SAT", "UNSAT", "SAT rate", "duplicates", "tautologies rejected"],
                             stream_rows)
    return "\n\n".join([
        "### Packages", pkg_table, chance_note,
        "### Constraint classes per config", cls_table,
        "### Scene sizes per config", n_table,
        "### Sampling streams",
        "Every draw is labelled by the solver; these counts show how often each label came up "
        "(a draw is discarded when its package is already full, or when it duplicates an accepted spec).",
        stream_table,
        "### What the 1UNSAT specs are",
        f"Causes: {', '.join(f'{k}: {v}' for k, v in sorted(causes.items()))} "
        "(`count_overflow` = a count slot above its regular maximum at this n, docs/spec_language.md §8.1, e.g. "
        "\"exactly 8 red objects\" in a 5-object scene; the other cause seen in "
        "single draws is parity, e.g. \"as many metal as rubber objects\" with n odd). Templates:",
        unsat_table,
        "Minimal core sizes of the 3UNSAT and 6UNSAT rows: "
        + ", ".join(f"{k} constraint(s): {v}" for k, v in sorted(core_sizes.items())) + ".",
        "### Prompt lengths", _length_table(bm),
    ])


def _length_table(bm: Benchmark) -> str:
    """Median words and CLIP tokens of the full and compact prompts per config, and how many compact prompts a
    77-token CLIP text encoder reads whole (the `prompt_lengths` and `full_prompt_compact_fits` columns)."""
    def median(xs: list[int]) -> int:
        return sorted(xs)[len(xs) // 2] if xs else 0

    out = []
    for p in PACKAGES:
        rows = bm.rows[p.name]
        lengths = [r["prompt_lengths"] for r in rows]
        out.append((p.name, *(median([x[c][k] for x in lengths]) for c in ("full_prompt_short", "full_prompt_compact")
                              for k in ("words", "clip_tokens")),
                    f"{sum(r['full_prompt_compact_fits'] for r in rows)} / {len(rows)}"))
    table = md_table(["config", "full_prompt_short words", "CLIP tokens", "full_prompt_compact words", "CLIP tokens",
                      "compact prompts within 77 CLIP tokens"], out)
    return ("Medians per config. A CLIP text encoder (Stable Diffusion 1.x/2.x, SDXL) reads 77 tokens, start and end "
            "tokens included: of `full_prompt_short` it reads the domain description only. `full_prompt_compact` puts "
            "the constraints first.\n\n" + table)


def dataset_card(bm: Benchmark, sizes: Mapping[str, Mapping[str, int]] | None = None) -> str:
    """The README.md of the dataset folder: YAML front matter + the card (deterministic for a seed)."""
    meta = yaml.dump(card_metadata(sizes), Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1000)
    example = bm.rows["3SAT"][0] if bm.rows.get("3SAT") else bm.all_rows()[0]
    total = len(bm)
    catalog = load_catalog()
    body = f"""# LogicVal

LogicVal is a benchmark for **constraint satisfaction in text-to-image generation**. Each prompt is a logical
*specification*: a scene size n (3–9 objects) and 1, 3 or 6 constraints from nine logical classes (C1–C9:
existential, universal and conditional object constraints; existential, conditional, ∃∀ and ∀∃ subgraph
constraints; counts against a constant and against another count) over the CLEVR vocabulary (8 colours,
3 shapes, 2 materials, a 2×2 grid of regions, left/right/front/behind). Every specification is written in
Answer Set Programming and labelled **SAT** or **UNSAT** by the clingo solver. A generated image is judged by
turning it into a scene graph and asking the solver whether the scene satisfies the specification; for an
UNSAT specification the correct image is the empty scene.

This dataset holds the {total} prompts of the paper (*LogicVal: A Logic-Formalized Benchmark for Constraint
Satisfaction in Text-to-Image Generation*, §3.2) in six configs, each with its ASP program, solver label,
witness scene or minimal unsat core, the prompt in two registers and two variants, Soft-TIFA sub-questions
and chance rates. It was built with `logicval-hf` {__version__} (catalog version {catalog.version}) from seed
{bm.seed}: `logicval build-dataset --out logicval --seed {bm.seed}` rebuilds it byte for byte (same package
versions).

```python
from datasets import load_dataset

ds = load_dataset("{default_repo_id()}", "3SAT", split="{SPLIT}")  # a local copy: load_dataset("path/to/logicval", ...)
row = ds[0]
print(row["full_prompt_white_short"])

import logicval_hf as lv                                       # pip install logicval-hf
verdict = lv.verify(row["spec_json"], scene_graph_json, label=row["label"])
```

## Dataset structure

Six configs (one parquet file each, a single split `{SPLIT}`); all share the same columns.

{md_table(["config", "m", "label", "rows"], [(p.name, p.m, p.label, p.size) for p in PACKAGES])}

### Columns

{_column_table()}

Constraint and object indices are 0-based. `witness` is null exactly on UNSAT rows and `core` exactly on SAT rows.

## How it was made

* **Templates.** The 71 constraint templates (C1: 8, C2: 7, C3: 8, C4: 9, C5: 8, C6: 7, C7: 6, C8: 11,
  C9: 7) are typed JSON formulas with slots for attribute literals, relations, counts and comparators
  (`logicval_hf/data/catalog.json`, the contract). Universal templates carry an anti-vacuity clause.
* **Sampler** (`logicval_hf.benchmark.sampler`, one seed). n is uniform in 3..9 and parameters are uniform over the
  valid instances of a template (`logicval_hf.contract.params.random_constraint`); count slots may exceed their regular
  maximum up to 9 when the template declares `overflow: "unsat"`, so contradictions with the scene size occur
  naturally. *1SAT*: each of the 71 templates until it has 5 SAT specs (every template exactly 5 times).
  *1UNSAT*: the template uniform over all 71, kept when UNSAT, until 25. *3SAT/3UNSAT* and *6SAT/6UNSAT*:
  m distinct classes drawn uniformly, a template uniform within each class, sorted into the SAT or UNSAT
  package by the solver until both are full. Specs whose constraints include one that holds in every
  n-object scene (a tautology at that n, e.g. a parity comparison) are rejected; no spec occurs twice
  (also not with its constraints reordered).
* **Labels** come from the clingo solver only: `SAT` with the first answer set found as the `witness`
  (laid out as boxes that reproduce its regions and orders), `UNSAT` with a minimal unsat core found by
  deletion-based shrinking of clingo's core over per-constraint assumptions.
* **Verbaliser** (`logicval_hf.contract.verbalise`): deterministic English in a short and a long register from the
  catalog's templates; the anti-vacuity clause is said explicitly. Sub-questions come from per-template
  question templates with expected answers.
* **Chance rates.** The probability that a random scene of exactly n objects satisfies a constraint,
  estimated from {CHANCE_SCENES} random scenes per n (each object's colour, shape and material uniform and
  independent; its box centre uniform on the image, hence uniform regions and random orders), the same scenes
  for all constraints of that n, checked by the solver. Standard error at most 0.031. Use them to report
  results against chance: some templates are satisfied by most random scenes.

{_stats_sections(bm)}

## Prompt template

Every prompt is the CLEVR domain description, the number of objects, the constraint specification and an
instruction to draw an empty scene if the description is contradictory (paper, Appendix C):

{_prompt_template()}

Example (`{example['id']}`, `full_prompt_white_short`):

```text
{example['full_prompt_white_short']}
```

## Limitations

* **Synthetic domain.** CLEVR's closed vocabulary of simple objects; nothing here measures real-world
  concepts.
* **Labels are relative to the formalisation.** SAT/UNSAT is exact for the ASP encoding (exactly n objects,
  regions on a 2×2 grid, strict box-centre orders with ties giving no relation); an image judged by a looser
  reading of the English can disagree.
* **1UNSAT is arithmetic.** Single constraints are contradictory through a count that exceeds the scene size
  (or, rarely, parity); multi-constraint UNSAT specs mix genuine logical conflicts between constraints with
  such single-constraint contradictions (a core of size 1).
* **Witnesses are one solution among many**, with schematic boxes; they are not images.
* **Chance rates are Monte Carlo estimates** under one random-scene model (uniform attributes and positions);
  a different scene distribution gives different rates.
* **Sub-questions are a lossy decomposition** meant for Soft-TIFA, not a second semantics.
* **Small packages.** 25 or 10 prompts in the multi-constraint packages give wide confidence intervals.

## Licence and attribution

The data (prompts, programs, labels, witnesses, cores, sub-questions and chance rates) is released under
**CC BY 4.0**; the code that builds it (`logicval-hf`) is MIT-licensed. The domain — the vocabulary of
colours, shapes and materials and the scene style the prompts describe — is that of **CLEVR** (Johnson et al.,
CVPR 2017), released under CC BY 4.0; this dataset contains no CLEVR images.

## Citation

```bibtex
{CITATION}
```

CLEVR:

```bibtex
{CLEVR_CITATION}
```
"""
    return f"---\n{meta}---\n\n{body}"


# ---------------------------------------------------------------------------------------------
# Pushing to the Hub
# ---------------------------------------------------------------------------------------------


def push_dataset(
    folder: str | Path,
    repo_id: str | None = None,
    token: str | None = None,
    dry_run: bool = False,
    private: bool = False,
    out: TextIO | None = None,
) -> list[str]:
    """Upload a built folder to the Hub as a dataset repository ``repo_id`` (created if missing; default
    `logicval_hf.common.hub.default_repo_id`, ``<LOGICVAL_HUB_NAMESPACE>/logicval``).

    The token is ``token`` or the ``HF_TOKEN`` environment variable. ``dry_run`` only lists the files (no
    network, no token needed). Returns the relative paths uploaded (or that would be). Raises `ValueError`
    for a bad folder, a malformed repo id or a missing token.
    """
    out = out or sys.stdout
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a directory; build it first with `logicval build-dataset --out {folder}`")
    files = dataset_files(folder)
    if "README.md" not in files or not any(f.startswith("data/") for f in files):
        raise ValueError(f"{folder}: expected README.md and data/*.parquet (a folder written by build-dataset)")
    repo_id = check_repo_id(default_repo_id() if repo_id is None else repo_id)
    url = f"https://huggingface.co/datasets/{repo_id}"
    if dry_run:
        print(f"dry run: would upload {len(files)} files from {folder} to {url}", file=out)
        for f in files:
            print(f"  {f}", file=out)
        return files
    api = hf_api(token)
    api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
    api.upload_folder(
        repo_id=repo_id,
        folder_path=str(folder),
        repo_type="dataset",
        allow_patterns=["README.md", "data/*.parquet"],
        commit_message=f"Upload LogicVal benchmark ({len(files)} files)",
    )
    print(f"uploaded {len(files)} files to {url}", file=out)
    return files


# ---------------------------------------------------------------------------------------------
# GeneratorBasedBuilder: deprecated (one way to build the dataset: write_dataset, then load_dataset)
# ---------------------------------------------------------------------------------------------
#: what a `LogicValBuilder` user is told to do instead
BUILDER_DEPRECATION = (
    "LogicValBuilder is deprecated and will be removed: build the dataset folder once with `logicval build-dataset "
    "--out DIR` (logicval_hf.benchmark.dataset.write_dataset) and load it with datasets.load_dataset(DIR, config)")


@dataclass
class LogicValConfig(datasets.BuilderConfig):
    """One package. ``seed`` selects the sample when generating; ``data_dir`` (a built folder) reads it."""

    seed: int = DEFAULT_SEED


class LogicValBuilder(datasets.GeneratorBasedBuilder):
    """Deprecated (`BUILDER_DEPRECATION`): the six packages as builder configs, rows from the same store as
    `write_dataset` (or from a built folder with ``data_dir``)::

        b = LogicValBuilder(config_name="3SAT", data_dir="path/to/logicval")   # a FutureWarning says what to use
        b.download_and_prepare(); ds = b.as_dataset(split="test")
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import warnings

        warnings.warn(BUILDER_DEPRECATION, FutureWarning, stacklevel=2)
        super().__init__(*args, **kwargs)

    BUILDER_CONFIG_CLASS = LogicValConfig
    BUILDER_CONFIGS: ClassVar[list[LogicValConfig]] = [
        LogicValConfig(name=p.name, version=datasets.Version("1.0.0"),
                       description=f"{p.size} {p.label} specifications with {p.m} constraint(s) each")
        for p in PACKAGES
    ]
    DEFAULT_CONFIG_NAME = PACKAGE_NAMES[0]

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="LogicVal: solver-labelled logical specifications for text-to-image evaluation.",
            features=features(),
            license=LICENSE,
            citation=CITATION,
        )

    def _split_generators(self, dl_manager: Any) -> list[datasets.SplitGenerator]:
        return [datasets.SplitGenerator(name=datasets.Split.TEST)]

    def _generate_examples(self) -> Iterable[tuple[str, dict[str, Any]]]:
        name = self.config.name
        if name not in PACKAGE_NAMES:
            raise ValueError(f"unknown LogicVal config {name!r}; configs are {list(PACKAGE_NAMES)}")
        if self.config.data_dir:
            rows: Iterable[Mapping[str, Any]] = read_rows(self.config.data_dir, name)
        else:  # the rows write_dataset would write
            rows = stored_benchmark(self.config.seed).rows[name]
        for row in rows:
            yield row["id"], dict(row)
