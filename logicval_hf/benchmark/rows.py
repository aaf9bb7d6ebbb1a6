"""A benchmark row as one typed object, parsed once: what every reader downstream of `logicval_hf.benchmark`
gets instead of the dataset's column dict.

The dataset's columns (`logicval_hf.benchmark.dataset.COLUMNS`) are the row's serialised form: the Hub's
Parquet files, the user-level store, the main job's ``benchmark.json``. `BenchmarkRow.from_dict` reads that form
(any subset of the columns with at least ``spec_json``; the spec is parsed here, once) and `BenchmarkRow.to_dict`
writes it back, column for column::

    from logicval_hf.benchmark.rows import BenchmarkRow
    row = BenchmarkRow.from_dict(dataset[0])          # a `datasets` row, a row of `Benchmark.rows`, ...
    row.id, row.package, row.label, row.spec.n, row.prompt_short
    row.to_dict() == dataset[0]                       # the same columns back

``n``, ``m``, ``classes`` and ``templates`` are read from the parsed spec (the columns say the same thing).
`typed_benchmark` gives the whole benchmark's rows so, parsed once per process.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.benchmark.sampler import DEFAULT_SEED
from logicval_hf.contract.catalog import Catalog
from logicval_hf.contract.spec import Spec, as_spec

__all__ = ["ROW_META", "BenchmarkRow", "RowConstraint", "as_row", "as_rows", "is_row", "split_row", "typed_benchmark"]


@dataclass(frozen=True)
class RowConstraint:
    """One constraint of a row, as the dataset's ``constraints`` column words it."""

    template: str
    cls: str
    params_json: str
    text_short: str
    text_long: str

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RowConstraint:
        return cls(str(d["template"]), str(d["class"]), str(d["params_json"]), str(d["text_short"]),
                   str(d["text_long"]))

    def to_dict(self) -> dict[str, str]:
        return {"template": self.template, "class": self.cls, "params_json": self.params_json,
                "text_short": self.text_short, "text_long": self.text_long}


def _json_value(x: Any) -> Any:
    return json.loads(x) if isinstance(x, str) else x


#: the optional columns a row carries as they are (None when the serialised row leaves them out)
_PLAIN = ("asp_program", "prompt_short", "prompt_long", "full_prompt_short", "full_prompt_long",
          "full_prompt_white_short", "full_prompt_white_long", "full_prompt_compact", "full_prompt_compact_fits",
          "chance_rate")


@dataclass(frozen=True)
class BenchmarkRow:
    """One benchmark row: the spec (parsed) with its id, package and solver label, and the columns the dataset
    derives from it (prompts, sub-questions, witness or core, chance rates).

    Args:
        id: ``<package>-<4-digit index>``, unique over the benchmark (an imported benchmark: its own ids).
        package: ``1SAT`` ... ``6UNSAT`` (an imported benchmark: its own names).
        label: ``SAT`` or ``UNSAT``, the solver's.
        spec: the parsed specification.
        spec_json: the spec's JSON as the row stores it (cached files compare it to tell a spec changed).
        constraints: each constraint's template, class, parameters and texts (empty when the row left them out).
        asp_program, prompt_short, prompt_long, full_prompt_short, full_prompt_long, full_prompt_white_short,
            full_prompt_white_long, full_prompt_compact, full_prompt_compact_fits: the columns of those names
            (None when the row left them out).
        prompt_lengths: words and CLIP tokens of each full prompt column (None when left out).
        subquestions: the Soft-TIFA sub-questions, one mapping each (empty when left out).
        witness: SAT rows: a scene graph that satisfies the spec (a dict in the `Scene` JSON format).
        core: UNSAT rows: a minimal unsat core (0-based constraint indices).
        chance_rates: per constraint, the chance that a random scene satisfies it; ``chance_rate``: all at once.
    """

    id: str
    package: str
    label: str
    spec: Spec = field(compare=False)
    spec_json: str
    constraints: tuple[RowConstraint, ...] = ()
    asp_program: str | None = None
    prompt_short: str | None = None
    prompt_long: str | None = None
    full_prompt_short: str | None = None
    full_prompt_long: str | None = None
    full_prompt_white_short: str | None = None
    full_prompt_white_long: str | None = None
    full_prompt_compact: str | None = None
    full_prompt_compact_fits: bool | None = None
    prompt_lengths: Mapping[str, Mapping[str, int]] | None = None
    subquestions: tuple[Mapping[str, Any], ...] = ()
    witness: Mapping[str, Any] | None = None
    core: tuple[int, ...] | None = None
    chance_rates: tuple[float, ...] | None = None
    chance_rate: float | None = None

    @property
    def n(self) -> int | None:
        """The scene size (objects the image must show)."""
        return self.spec.n

    @property
    def m(self) -> int:
        """The number of constraints."""
        return self.spec.m

    @property
    def classes(self) -> tuple[str, ...]:
        """Each constraint's class (``C1`` ... ``C9``), in order."""
        return tuple(c.cls for c in self.spec.constraints)

    @property
    def templates(self) -> tuple[str, ...]:
        """Each constraint's template id, in order."""
        return tuple(c.template_id for c in self.spec.constraints)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], catalog: Catalog | None = None) -> BenchmarkRow:
        """The row a column dict describes: at least ``id``, ``package``, ``label`` and ``spec_json``.

        Raises:
            ValueError: a missing column or a spec that does not parse (`SpecError`), naming the row.
        """
        missing = [k for k in ("id", "package", "label", "spec_json") if d.get(k) is None]
        if missing:
            raise ValueError(f"benchmark row {d.get('id')!r}: missing column(s) {missing}")
        raw = d["spec_json"]
        spec_json = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))
        try:
            spec = as_spec(raw, catalog)
        except ValueError as e:
            raise type(e)(f"benchmark row {d['id']!r}: {e}") from None
        core, rates = d.get("core"), d.get("chance_rates")
        return cls(
            id=str(d["id"]), package=str(d["package"]), label=str(d["label"]), spec=spec, spec_json=spec_json,
            constraints=tuple(RowConstraint.from_dict(c) for c in d.get("constraints") or ()),
            subquestions=tuple(dict(q) for q in d.get("subquestions") or ()),
            witness=_json_value(d.get("witness")),
            prompt_lengths=_json_value(d.get("prompt_lengths")),
            core=None if core is None else tuple(int(i) for i in core),
            chance_rates=None if rates is None else tuple(float(x) for x in rates),
            **{k: d.get(k) for k in _PLAIN},
        )

    @classmethod
    def of_spec(cls, spec: Spec, id: str, package: str, label: str) -> BenchmarkRow:
        """A row of a spec alone (no prompts or chance rates): a user's spec in a benchmark's place."""
        return cls(id=id, package=package, label=label, spec=spec, spec_json=spec.to_json())

    def to_dict(self, columns: Iterable[str] | None = None) -> dict[str, Any]:
        """The row's columns (all of them, or ``columns`` in that order); a column the row left out is None."""
        full: dict[str, Any] = {
            "id": self.id, "package": self.package, "n": self.n, "m": self.m, "label": self.label,
            "classes": list(self.classes), "templates": list(self.templates),
            "constraints": [c.to_dict() for c in self.constraints], "spec_json": self.spec_json,
            "asp_program": self.asp_program, "prompt_short": self.prompt_short, "prompt_long": self.prompt_long,
            "full_prompt_short": self.full_prompt_short, "full_prompt_long": self.full_prompt_long,
            "full_prompt_white_short": self.full_prompt_white_short,
            "full_prompt_white_long": self.full_prompt_white_long,
            "full_prompt_compact": self.full_prompt_compact,
            "full_prompt_compact_fits": self.full_prompt_compact_fits,
            "prompt_lengths": None if self.prompt_lengths is None else {k: dict(v) for k, v in
                                                                        self.prompt_lengths.items()},
            "subquestions": [dict(q) for q in self.subquestions],
            "witness": None if self.witness is None else dict(self.witness),
            "core": None if self.core is None else list(self.core),
            "chance_rates": None if self.chance_rates is None else list(self.chance_rates),
            "chance_rate": self.chance_rate,
        }
        return full if columns is None else {k: full[k] for k in columns}


#: what a row-like reference may say of itself beside its spec
ROW_META = ("id", "package", "label")


def is_row(x: Any) -> bool:
    """Whether ``x`` is a benchmark row's columns (a mapping with ``spec_json``), typed or not."""
    return isinstance(x, BenchmarkRow) or (isinstance(x, Mapping) and "spec_json" in x)


def split_row(d: Mapping[str, Any], keys: Iterable[str] = ROW_META) -> tuple[Any, dict[str, Any]]:
    """A row-like mapping (a benchmark row's columns, or a user's subset of them with ``spec_json``) as its spec's
    data (``spec_json``: JSON text or a dict) and the ``keys`` it has (not None); a ``witness`` given as JSON text is
    parsed. Readers of such mappings (the metric's references, the generators, the Space) go through here."""
    meta = {k: d[k] for k in keys if d.get(k) is not None}
    if isinstance(meta.get("witness"), str):
        meta["witness"] = json.loads(meta["witness"])
    return d["spec_json"], meta


def typed_benchmark(seed: int = DEFAULT_SEED) -> tuple[BenchmarkRow, ...]:
    """The benchmark's rows of ``seed`` (`logicval_hf.benchmark.sampler.cached_benchmark`), typed, in package
    order: parsed once per process (the last seed asked for)."""
    return _typed_benchmark(int(seed))


@functools.lru_cache(maxsize=1)
def _typed_benchmark(seed: int) -> tuple[BenchmarkRow, ...]:
    from logicval_hf.benchmark.sampler import cached_benchmark

    return tuple(BenchmarkRow.from_dict(r) for r in cached_benchmark(seed).all_rows())


def as_row(row: BenchmarkRow | Mapping[str, Any], catalog: Catalog | None = None) -> BenchmarkRow:
    """``row`` itself when typed, else `BenchmarkRow.from_dict` of it."""
    return row if isinstance(row, BenchmarkRow) else BenchmarkRow.from_dict(row, catalog)


def as_rows(rows: Iterable[BenchmarkRow | Mapping[str, Any]], catalog: Catalog | None = None) -> list[BenchmarkRow]:
    """Every row typed (`as_row`)."""
    return [as_row(r, catalog) for r in rows]
