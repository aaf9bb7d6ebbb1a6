"""Domains as data: what objects a domain has, which relations hold between them and how boxes decide them.

A domain file (``contract/domains/<name>.json``, or any JSON file of the same shape) declares

* ``attributes``: the perceived attributes and their values, in order (CLEVR: colour, shape, material;
  COCO: the 80 class names and GenEval's 10 colours);
* ``derived``: attributes computed from the scene rather than perceived, each with a ``kind``
  (``quadrant``: CLEVR's 2x2 regions of the box centre; ``score_rank``: the rank of an object's detection score
  among the objects sharing its ``within`` attribute, 1 = most confident);
* ``relations``: each with the ``kind`` of geometry that decides it from two boxes and its ``inverse``
  (``centre_order``: strict order of box centres on an ``axis``; ``box_offset``: GenEval's rule, the centre
  offset shrunk by ``margin`` x the two box sizes and normalised, or with ``"measure": "centre"`` GIR-Bench's, the
  raw centre offset's direction, the shrunk offset only deciding whether there is a relation; ``box_area``: strict
  order of box areas; ``box_inside``: one box within the other);
* ``open_attributes``: attributes whose values are free text rather than a list (the ``text`` domain's line
  text), each with the fold that makes two values the same (`logicval_hf.contract.folding`: ``gir-bench``, GIR-Bench's
  normal form); its ``attributes`` entry is an empty list, and any text is a value, stored folded;
* ``attribute_phrases``: how the verbaliser says a value of an attribute that is neither noun nor adjective
  (``{"text": {"noun": "line", "phrase": "reading \"{value}\""}}``: "a line reading "sale"");
* ``n_range`` (null: a spec may leave its scene size open), ``max_objects`` (the largest scene a spec with an
  open size is solved over), ``constants`` (per-value integers, e.g. legs per class), and the words the
  verbaliser needs (``noun``, ``adjectives``, each relation's ``phrase``).

One compiler, solver, verifier and verbaliser serve every domain: they read these declarations, never a
domain's name.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from logicval_hf.common.registry import Registry
from logicval_hf.contract import spatial
from logicval_hf.contract.domain_file import DERIVED_KINDS, QUADRANT_VALUES, RELATION_KINDS, check_domain_block
from logicval_hf.contract.folding import FOLDS
from logicval_hf.errors import SpecError

__all__ = ["DEFAULT_DOMAIN", "DERIVED_KINDS", "RELATION_KINDS", "Domain", "Relation", "domain_names", "load_domain"]

#: the domain of the paper's benchmark, and of every spec or scene that names none
DEFAULT_DOMAIN = "clevr"


@dataclass(frozen=True)
class Relation:
    """How one relation is decided from two boxes (``holds(a, b)``: "a is <name> b")."""

    name: str
    kind: str
    inverse: str
    phrase: str
    axis: str | None = None
    sign: int = 1
    margin: float = 0.0
    threshold: float = 0.5
    #: a box_offset's direction: of the shrunk offset (GenEval) or of the raw centre offset (GIR-Bench, "centre")
    measure: str = "shrunk"

    @property
    def axis_key(self) -> str:
        """What two relations must not share for the slot rule ``different_axis`` (the area counts as an axis)."""
        return self.axis or self.kind

    def holds(self, a: Sequence[float], b: Sequence[float]) -> bool:
        if self.kind == "centre_order":
            k = 0 if self.axis == "x" else 1
            return self.sign * (spatial.centre(a)[k] - spatial.centre(b)[k]) > 0
        if self.kind == "box_offset":
            k = 0 if self.axis == "x" else 1
            return self.sign * spatial.normalised_offset(a, b, self.margin, self.measure)[k] > self.threshold
        if self.kind == "box_inside":  # sign -1: a lies within b; +1: a contains b
            inner, outer = (a, b) if self.sign < 0 else (b, a)
            return spatial.within(inner, outer)
        # a relative tolerance: boxes of one size placed apart differ in the last bits of their areas
        aa, ab = spatial.area(a), spatial.area(b)
        return self.sign * (aa - ab) > 1e-9 * max(abs(aa), abs(ab))


@dataclass(frozen=True, eq=False)
class Domain:
    """The vocabulary of one domain and the geometry of its relations (see the module docstring)."""

    attributes: Mapping[str, tuple[str, ...]]  # perceived attributes, then categorical derived ones (region)
    relations: tuple[str, ...]
    thetas: tuple[str, ...]
    n_min: int
    n_max: int
    name: str = DEFAULT_DOMAIN
    open_size: bool = False  # True: a spec may leave n out (any number of objects up to n_max)
    derived: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rules: Mapping[str, Relation] = field(default_factory=dict)
    noun: str | None = None
    adjectives: tuple[str, ...] = ()
    slot_props: Mapping[str, str] | None = None
    constants: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    image_size: tuple[float, float] = (480, 320)
    description: str = ""
    #: the paragraph that opens a full prompt (``{attributes}``, ``{regions}``: docs/domains.md §1); "" builds one
    prompt_description: str = ""
    #: the compact prompt's opening sentence (``{objects}``: "exactly 5 objects"); "" for a generic one
    compact_description: str = ""
    #: the file a domain of one's own was read from, as specs name it when written back ("" for a shipped domain)
    source: str = ""
    #: attribute -> the fold (a `logicval_hf.contract.folding.FOLDS` name) of an attribute whose values are free text
    open_attributes: Mapping[str, str] = field(default_factory=dict)
    attribute_phrases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    # ---- construction --------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, block: Mapping[str, Any], where: str = "domain") -> Domain:
        """A domain file's JSON, or (for catalogs) a catalog's ``domain`` block: the vocabulary at top level,
        everything else taken from the CLEVR domain file.

        Raises:
            SpecError: a domain file that breaks the schema (`logicval_hf.contract.domain_file`), one line naming
                ``where`` and the key.
        """
        if isinstance(block, Mapping) and "attributes" not in block and "name" not in block:
            return _from_catalog_block(block)
        check_domain_block(block, where)
        attrs = {str(a): tuple(str(v) for v in vals) for a, vals in block["attributes"].items()}
        derived = {str(k): dict(v) for k, v in block.get("derived", {}).items()}
        for k, d in derived.items():
            if d["kind"] == "quadrant":
                d["values"] = list(QUADRANT_VALUES)
                attrs[k] = QUADRANT_VALUES
        rules = {r: Relation(r, d["kind"], d["inverse"], d.get("phrase", r), d.get("axis"), int(d["sign"]),
                             float(d.get("margin", 0.0)), float(d.get("threshold", 0.5)),
                             str(d.get("measure", "shrunk")))
                 for r, d in block["relations"].items()}
        open_attributes = {str(a): str(fold) for a, fold in (block.get("open_attributes") or {}).items()}
        phrases = block.get("attribute_phrases") or {}
        n_range = block.get("n_range")
        max_objects = int(block.get("max_objects") or (n_range[1] if n_range else 16))
        lo, hi = (int(n_range[0]), int(n_range[1])) if n_range else (1, max_objects)
        constants = {str(c): {str(v): int(w) for v, w in table.items()}
                     for c, table in (block.get("constants") or {}).items()}
        size = block.get("image_size") or (480, 320)
        return cls(attrs, tuple(rules), tuple(block["theta"]), lo, hi, name=str(block["name"]),
                   open_size=n_range is None, derived=derived, rules=rules, noun=block.get("noun"),
                   adjectives=tuple(block.get("adjectives", ())), slot_props=block.get("slot_props"),
                   constants=constants, image_size=(size[0], size[1]), description=block.get("description", ""),
                   prompt_description=block.get("prompt_description", ""),
                   compact_description=block.get("compact_description", ""), open_attributes=open_attributes,
                   attribute_phrases={str(a): {str(k): str(v) for k, v in d.items()} for a, d in phrases.items()})

    # ---- identity --------------------------------------------------------------------------------------------
    @functools.cached_property
    def key(self) -> str:
        return json.dumps([self.name, self.attributes, self.relations, self.thetas, self.n_min, self.n_max,
                           self.open_size, self.derived, sorted(self.constants.items()),
                           *([sorted(self.open_attributes.items())] if self.open_attributes else [])],
                          sort_keys=True, default=list)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Domain) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    # ---- vocabulary ------------------------------------------------------------------------------------------
    @property
    def perceived_attributes(self) -> tuple[str, ...]:
        """Attributes an object carries by itself (everything but the geometry-derived ones)."""
        return tuple(a for a in self.attributes if a not in self.derived)

    @property
    def numeric_attributes(self) -> tuple[str, ...]:
        """Derived integer attributes (confidence ranks), usable in comparisons, never as literals."""
        return tuple(a for a, d in self.derived.items() if d["kind"] == "score_rank")

    def values(self, attribute: str) -> tuple[str, ...]:
        try:
            return self.attributes[attribute]
        except KeyError:
            raise SpecError(f"unknown attribute {attribute!r}; expected one of {sorted(self.attributes)}") from None

    def is_open(self, attribute: str) -> bool:
        """Whether ``attribute``'s values are free text (`open_attributes`) rather than a list."""
        return attribute in self.open_attributes

    def canonical_value(self, attribute: str, value: Any) -> str:
        """``value`` as this domain stores it: folded for an open attribute, itself for a listed one.

        Raises:
            SpecError: a listed attribute's unknown value (naming the values, or the closest ones), or an open
                attribute's value that is not a string.
        """
        if attribute in self.open_attributes:
            if not isinstance(value, str):
                raise SpecError(f"{value!r} is not a {attribute}: {attribute} values are text")
            return FOLDS[self.open_attributes[attribute]](value)
        if value not in self.values(attribute):
            raise SpecError(f"{value!r} is not a {attribute}; {self.expected(attribute, value)}")
        return value

    def expected(self, attribute: str, value: Any) -> str:
        """The end of an error message for a value that is not one of ``attribute``'s: the values when they are
        few, the closest ones when they are many."""
        values = self.attributes[attribute]
        if len(values) <= 12:
            return f"expected one of {list(values)}"
        close = difflib.get_close_matches(str(value), values, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        return f"{hint}(domain {self.name!r} has {len(values)} {attribute} values)"

    def relation(self, name: str) -> Relation:
        try:
            return self.rules[name]
        except KeyError:
            raise SpecError(f"domain {self.name!r} has no relation {name!r}; it has {list(self.relations)}") from None

    @property
    def ordered(self) -> bool:
        """Whether relations are strict centre orders (CLEVR): solved as two total orders, not box placements. A
        domain without relations is solved so too, unless it ranks scores (ranks are solved with boxes)."""
        if not self.rules:
            return not self.numeric_attributes
        return all(r.kind == "centre_order" for r in self.rules.values())

    def canonical_relations(self) -> list[tuple[str, str]]:
        """One (relation, inverse) pair per inverse pair, the one that runs against its axis first (left, behind,
        above, smaller): on an order, the relation from the earlier object to the later one."""
        out: list[tuple[str, str]] = []
        seen: set[str] = set()
        for r in self.relations:
            if r not in seen:
                inv = self.rules[r].inverse
                out.append((r, inv) if self.rules[r].sign < 0 else (inv, r))
                seen.update((r, inv))
        return out

    def constant(self, name: str) -> Mapping[str, int]:
        try:
            return self.constants[name]
        except KeyError:
            raise SpecError(f"domain {self.name!r} has no constant {name!r}; it has {sorted(self.constants)}") from None

    # ---- template slots read in this domain -------------------------------------------------------------------
    def slot_attributes(self, props: Sequence[str]) -> tuple[str, ...]:
        """The attributes a template slot takes here: ``*`` is any perceived attribute; a domain with
        ``slot_props`` reads a CLEVR template's attribute names through it (COCO: shape -> class)."""
        if "*" in props:
            return self.perceived_attributes
        if self.slot_props is None:
            return tuple(props)
        return tuple(dict.fromkeys(self.slot_props[p] for p in props if p in self.slot_props))

    def slot_relations(self, values: Sequence[str]) -> tuple[str, ...]:
        """The relations a template's relation slot takes here: its own list where the domain has those
        relations, every relation of the domain otherwise (or for ``*``)."""
        if "*" in values or not set(values) <= set(self.relations):
            return self.relations
        return tuple(values)

    # ---- facts from boxes -----------------------------------------------------------------------------------
    def holds(self, rel: str, a: Sequence[float], b: Sequence[float]) -> bool:
        return self.relation(rel).holds(a, b)

    def derive(self, attribute: str, boxes: Sequence[Sequence[float]], image_size: Sequence[float],
               values: Sequence[Mapping[str, str]], scores: Sequence[float | None]) -> list[Any]:
        """Values of a derived attribute for every object of a scene."""
        d = self.derived[attribute]
        if d["kind"] == "quadrant":
            w, h = image_size
            return [spatial.region_of(*spatial.centre(b), w, h) for b in boxes]
        return spatial.score_ranks([v[d["within"]] for v in values], scores)


def _from_catalog_block(block: Mapping[str, Any]) -> Domain:
    base = load_domain(DEFAULT_DOMAIN)
    derived = set(base.derived)
    attrs = {k: tuple(v) for k, v in block.items() if k not in ("relations", "theta", "n_range")}
    lo, hi = block["n_range"]
    rules = {r: base.rules[r] for r in block["relations"]}
    domain = Domain(attrs, tuple(block["relations"]), tuple(block["theta"]), int(lo), int(hi), name=base.name,
                  derived={k: v for k, v in base.derived.items() if k in derived and k in attrs}, rules=rules,
                  noun=base.noun, adjectives=base.adjectives, image_size=base.image_size, description=base.description,
                  prompt_description=base.prompt_description, compact_description=base.compact_description)
    return base if domain == base else domain  # the shipped catalog: one CLEVR domain object everywhere


def _domain_dir() -> Path:
    return Path(str(resources.files("logicval_hf.contract").joinpath("domains")))


def domain_names() -> list[str]:
    """The domains shipped with the package."""
    return sorted(p.stem for p in _domain_dir().glob("*.json"))


@functools.cache
def _load_file(path: str) -> Domain:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError) as e:  # ValueError: not JSON, or not UTF-8
        raise SpecError(f"domain file {path}: cannot read it ({e})") from None
    where = f"domain file {path}"
    check_domain_block(data, where)  # a file is a domain file, never a catalog's block
    domain = Domain.from_dict(data, where=where)
    shipped = _domain_dir() / f"{domain.name}.json"
    if not shipped.is_file():
        return dataclasses.replace(domain, source=path)
    if Path(path).resolve() != shipped.resolve():
        raise SpecError(f"{where}: name: {domain.name!r} is a shipped domain's name; give this domain its own")
    return domain


def load_domain(domain: str | Path | Domain | None = None) -> Domain:
    """A domain by name (``"clevr"``, ``"coco"``), from a JSON file path, or passed through.

    Raises:
        SpecError: unknown name (with the closest names) or a malformed domain file.
    """
    if isinstance(domain, Domain):
        return domain
    if domain is None:
        domain = DEFAULT_DOMAIN
    text = str(domain)
    if text.endswith(".json") or Path(text).is_file():
        return _load_file(str(Path(text).resolve()))
    path = _domain_dir() / f"{text}.json"
    if not path.is_file():
        names = domain_names()
        known: Registry[Path] = Registry("domain", {n: _domain_dir() / f"{n}.json" for n in names})
        raise SpecError(str(known.unknown(text)))
    return _load_file(str(path))
