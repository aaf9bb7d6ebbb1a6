"""The template contract: load ``catalog.json`` into typed objects and validate constraints and specs.

Everything domain-specific (attribute names and values, relations, comparators, the range of n) is read
from the catalog's ``domain`` block; nothing here names a colour or a shape.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from logicval_hf.contract.domain import Domain, load_domain
from logicval_hf.errors import SpecError

__all__ = ["Catalog", "Domain", "Slot", "Template", "catalog_path", "load_catalog", "load_domain"]

#: Templates beyond the paper's nine classes (the peers' rules: confidence ranks, relations between groups,
#: weighted sums), shipped beside the unchanged catalog; their classes start with X and are never sampled.
EXTENSIONS = "extensions.json"

@dataclass(frozen=True)
class Slot:
    """A typed template parameter (docs/spec_language.md §3)."""

    name: str
    type: str  # attr | rel | count | theta
    negated: bool | None = None
    props: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    min: int | None = None
    max: int | str | None = None
    overflow: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Slot:
        return cls(
            name=d["name"],
            type=d["type"],
            negated=d.get("negated"),
            props=tuple(d.get("props", ())),
            values=tuple(d.get("values", ())),
            min=d.get("min"),
            max=d.get("max"),
            overflow=d.get("overflow"),
        )

    def count_max(self, n: int) -> int:
        """The largest regular K at scene size n (``max`` may be an integer, "n", "n-1" or "n-2")."""
        m = self.max
        if m is None:
            return n
        if isinstance(m, int):
            return m
        if m == "n":
            return n
        if isinstance(m, str) and m.startswith("n-"):
            return n - int(m[2:])
        raise ValueError(f"slot {self.name}: unreadable max {m!r}")

    def count_min(self) -> int:
        """The smallest K (every count slot of the catalog declares ``min``)."""
        if self.min is None:
            raise ValueError(f"slot {self.name}: a count slot needs a min")
        return int(self.min)

    def count_range(self, n: int, ceiling: int) -> tuple[int, int]:
        """Valid K at scene size n, overflow included (``ceiling`` is the domain's largest n)."""
        hi = self.count_max(n)
        if self.overflow == "unsat":
            hi = max(hi, ceiling)
        return self.count_min(), hi


@dataclass(frozen=True)
class Template:
    """One of the catalog's templates (docs/spec_language.md §2)."""

    id: str
    cls: str
    name: str
    slots: tuple[Slot, ...]
    slot_constraints: tuple[Mapping[str, Any], ...]
    formula: Mapping[str, Any]
    anti_vacuity: Mapping[str, Any] | None
    nl: Mapping[str, str]
    subquestions: tuple[Mapping[str, Any], ...]
    note: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Template:
        return cls(
            id=d["id"],
            cls=d["class"],
            name=d["name"],
            slots=tuple(Slot.from_dict(s) for s in d["slots"]),
            slot_constraints=tuple(d.get("slot_constraints", ())),
            formula=d["formula"],
            anti_vacuity=d.get("anti_vacuity"),
            nl=d["nl"],
            subquestions=tuple(d.get("subquestions", ())),
            note=d.get("note"),
        )

    def slot(self, name: str) -> Slot:
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(name)


@dataclass(frozen=True)
class Catalog:
    """The whole contract: the domain and the templates, looked up by id."""

    version: str
    domain: Domain
    templates: Mapping[str, Template]  # the paper's templates (C1..C9)
    raw: Mapping[str, Any] = field(repr=False, compare=False, default_factory=dict)
    extensions: Mapping[str, Template] = field(default_factory=dict)  # X1.. (`EXTENSIONS`): looked up, never sampled

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Catalog:
        templates = {t["id"]: Template.from_dict(t) for t in d["templates"]}
        extensions = {t["id"]: Template.from_dict(t) for t in d.get("extensions", ())}
        return cls(str(d.get("version", "")), Domain.from_dict(d["domain"]), templates, d, extensions)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted({t.cls for t in self.templates.values()}, key=lambda c: int(c[1:])))

    def template(self, template_id: Any) -> Template:
        """Look a template up by id; unknown ids raise a `SpecError` that suggests close matches."""
        if not isinstance(template_id, str):
            raise SpecError(f"template id must be a string, got {type(template_id).__name__}")
        try:
            return self.templates[template_id]
        except KeyError:
            if template_id in self.extensions:
                return self.extensions[template_id]
            near = difflib.get_close_matches(template_id, [*self.templates, *self.extensions], n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise SpecError(f"unknown template {template_id!r}{hint}") from None

    def by_class(self, cls: str) -> list[Template]:
        return [t for t in self.templates.values() if t.cls == cls]


def catalog_path() -> Path:
    """Path of the catalog shipped inside the package (an unchanged copy of the contract)."""
    return Path(str(resources.files("logicval_hf.contract").joinpath("catalog.json")))


@functools.cache
def _load(path: str) -> Catalog:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if Path(path) == catalog_path():
        ext = Path(path).with_name(EXTENSIONS)
        with open(ext, encoding="utf-8") as fh:
            data = {**data, "extensions": json.load(fh)["templates"]}
    return Catalog.from_dict(data)


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Load a catalog (default: the shipped CLEVR contract). Cached per path."""
    return _load(str(path or catalog_path()))
