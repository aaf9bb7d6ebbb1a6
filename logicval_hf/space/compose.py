"""Composing specs from menus: valid values per slot, slot rules in English, solving (the ``/solve`` endpoint).

Menu values are short strings that read well in the API too:

* attribute literal: ``color=red`` (``color!=red`` in a negated slot), shown as ``red (color)`` / ``not red``;
* relation literal: ``left`` (``not left`` in a negated slot), shown as ``to the left of``;
* count: ``"3"``; comparator: ``">="``.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.programs import spec_program
from logicval_hf.asp.solver import Solver, default_solver
from logicval_hf.contract.catalog import Catalog, Slot, Template, load_catalog
from logicval_hf.contract.params import random_constraint, slot_choices
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Constraint, Spec
from logicval_hf.contract.verbalise import (
    REGION_ATTRIBUTE,
    REL_PHRASES,
    constraint_names,
    constraint_text,
    full_prompt,
    region_name,
    spec_subquestions,
)
from logicval_hf.errors import SpecError
from logicval_hf.space.common import COMPOSE_M, quote
from logicval_hf.space.explore import core_lines, core_names

#: most constraints in a composed spec (one per class, distinct classes)
MAX_CONSTRAINTS = 6
#: most slots of any template (the UI shows this many parameter menus per constraint)
MAX_SLOTS = 5
#: longest value a parameter menu accepts (its menus accept typed values; the longest offered one is ~20)
MAX_VALUE_CHARS = 100

THETA_WORDS = {"=": "exactly as many", "!=": "not as many", "<": "fewer", "<=": "at most as many",
               ">": "more", ">=": "at least as many"}

SLOT_RULE_TEXT = {
    "distinct_props": "{slots} must constrain different attributes (e.g. one colour and one shape)",
    "distinct_literals": "{slots} must be different literals",
    "different_axis": "{slots} must lie on different axes (one of left/right, the other front/behind)",
    "distinct_values": "{slots} must be different relations",
    "no_cover": "{slots} together must not cover every value of an attribute (the disjunction would always hold)",
    "not_equivalent": "{slots} must not describe the same objects",
    "distinct_props_or_same_literal": "{slots} must constrain different attributes or be the very same literal",
    "distinct_sets": "the slot groups {slots} must not name the same literals",
}


def _names(slots: Any) -> str:
    if slots and isinstance(slots[0], (list, tuple)):
        return " vs ".join("(" + ", ".join(g) + ")" for g in slots)
    return ", ".join(slots)


def slot_rules(template: Template) -> list[str]:
    """The template's slot rules in English."""
    return [SLOT_RULE_TEXT.get(r["kind"], r["kind"] + " on {slots}").format(slots=_names(r["slots"]))
            for r in template.slot_constraints]


_PLACEHOLDER = re.compile(r"\{([^{}:]*):?([^{}]*)\}")


def template_pattern(template: Template) -> str:
    """The template's short sentence with its slots as ``⟨NAME⟩``."""
    def sub(m: re.Match) -> str:
        kind, name = m.group(1), m.group(2)
        return f"⟨{name or kind}⟩"
    return _PLACEHOLDER.sub(sub, template.nl.get("short", template.name))


def rules_markdown(template_id: str | None, catalog: Catalog | None = None) -> str:
    """The small print under a template menu: its pattern and its slot rules ("" without a template)."""
    if not template_id:
        return ""
    t = (catalog or load_catalog()).template(template_id)
    rules = slot_rules(t)
    return f"<small>_{template_pattern(t)}_" + (("  \nSlot rules: " + "; ".join(rules)) if rules else "") + "</small>"


def template_choices(catalog: Catalog | None = None) -> list[tuple[str, str]]:
    """(menu label, template id) for every template, in catalog order."""
    catalog = catalog or load_catalog()
    return [(f"{t.id}: {template_pattern(t)}", t.id) for t in catalog.templates.values()]


def slot_help(slot: Slot, n: int, catalog: Catalog) -> str:
    if slot.type == "attr":
        pol = "negated " if slot.negated else ""
        return f"{pol}attribute literal over {', '.join(slot.props)}"
    if slot.type == "rel":
        return "negated relation" if slot.negated else "relation"
    if slot.type == "count":
        lo, hi = slot.count_range(n, catalog.domain.n_max)
        reg = slot.count_max(n)
        extra = f"; above {reg} the constraint is unsatisfiable (overflow)" if hi > reg else ""
        return f"count {lo}..{hi} at n={n} (regular max {slot.max}{extra})"
    if slot.type == "theta":
        return "comparator"
    return slot.type


def _literal_dict(v: Any) -> Mapping[str, Any]:
    """An attribute or relation literal as its JSON dict (parsed literals have ``to_dict``)."""
    return v.to_dict() if hasattr(v, "to_dict") else v


def encode_value(slot: Slot, v: Any) -> str:
    """Menu value of a slot value (JSON form or parsed)."""
    if slot.type == "attr":
        d = _literal_dict(v)
        return f"{d['prop']}{'!=' if d['negated'] else '='}{d['value']}"
    if slot.type == "rel":
        d = _literal_dict(v)
        return f"not {d['rel']}" if d["negated"] else d["rel"]
    return str(v)


def display_value(slot: Slot, v: Any) -> str:
    if slot.type == "attr":
        d = _literal_dict(v)
        if d["prop"] == REGION_ATTRIBUTE:  # named as the prompt names it: "in the back-left region (r0)"
            return f"{'not ' if d['negated'] else ''}in {region_name(d['value'])}"
        return f"{'not ' if d['negated'] else ''}{d['value']} ({d['prop']})"
    if slot.type == "rel":
        d = _literal_dict(v)
        phrase = REL_PHRASES.get(d["rel"], d["rel"])
        return f"not {phrase}" if d["negated"] else phrase
    if slot.type == "theta":
        return f"{v}  ({THETA_WORDS.get(v, v)})"
    return str(v)


def decode_value(slot: Slot, s: Any, path: str) -> Any:
    """The contract's JSON value of a menu value; `SpecError` naming ``path`` when unreadable. The menus accept
    typed values: a refused one is quoted cut short (`quote`), one over `MAX_VALUE_CHARS` is refused unread."""
    if s is None or (isinstance(s, str) and not s.strip()):
        raise SpecError(f"{path}: no value chosen for slot {slot.name}")
    if not isinstance(s, (str, int)) or isinstance(s, bool):
        raise SpecError(f"{path}: a menu value is text, got {type(s).__name__}")
    text = str(s)
    if len(text) > MAX_VALUE_CHARS:
        raise SpecError(f"{path}: {quote(text)} is too long for a value of slot {slot.name} (at most "
                        f"{MAX_VALUE_CHARS} characters)")
    if slot.type == "attr":
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(!?=)\s*([A-Za-z0-9_]+)\s*", text)
        if not m:
            raise SpecError(f"{path}: {quote(text)} is not an attribute literal like 'color=red' or 'color!=red'")
        return {"prop": m.group(1), "value": m.group(3), "negated": m.group(2) == "!="}
    if slot.type == "rel":
        m = re.fullmatch(r"\s*(not\s+)?([A-Za-z_]\w*)\s*", text)
        if not m:
            raise SpecError(f"{path}: {quote(text)} is not a relation like 'left' or 'not left'")
        return {"rel": m.group(2), "negated": bool(m.group(1))}
    if slot.type == "count":
        try:
            return int(text.strip())
        except ValueError:
            raise SpecError(f"{path}: count must be an integer, got {quote(text)}") from None
    return text.strip()


def slot_options(slot: Slot, n: int, catalog: Catalog | None = None) -> list[tuple[str, str]]:
    """(label, value) of every valid value of the slot at scene size n (before the slot rules)."""
    catalog = catalog or load_catalog()
    return [(display_value(slot, v), encode_value(slot, v)) for v in slot_choices(slot, n, catalog)]


def default_params(template: Template, n: int, catalog: Catalog | None = None) -> dict[str, str]:
    """The first valid parameter set in menu order (deterministic), as menu values."""
    catalog = catalog or load_catalog()
    choices = [slot_choices(s, n, catalog) for s in template.slots]
    for k, combo in enumerate(itertools.product(*choices)):
        if k > 50_000:
            break
        raw = {s.name: v for s, v in zip(template.slots, combo, strict=True)}
        try:
            Constraint.from_dict({"template": template.id, "params": raw}, n=n, catalog=catalog)
        except SpecError:
            continue
        return {s.name: encode_value(s, v) for s, v in zip(template.slots, combo, strict=True)}
    c = random_constraint(template, n, random.Random(0), catalog)
    return {s.name: encode_value(s, c.params[s.name]) for s in template.slots}


def slot_menus(template_id: str | None, n: int, current: Mapping[str, str] | None = None,
               catalog: Catalog | None = None) -> list[dict[str, Any]]:
    """The parameter menus of a template at scene size n: name, label, choices, value, info per slot.

    ``current`` values are kept where still valid; others get the template's default valid instance.
    """
    catalog = catalog or load_catalog()
    if not template_id:
        return []
    t = catalog.template(template_id)
    defaults = default_params(t, n, catalog)
    out = []
    for s in t.slots:
        opts = slot_options(s, n, catalog)
        values = [v for _, v in opts]
        cur = (current or {}).get(s.name)
        value = cur if cur in values else defaults[s.name]
        out.append({"name": s.name, "label": f"{s.name}: {slot_help(s, n, catalog)}", "choices": opts,
                    "value": value, "type": s.type})
    return out


def menu_rows(values: Sequence[Any], catalog: Catalog | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The Compose menus' values as `build_spec` rows: ``values`` holds, per constraint row, the template id
    then `MAX_SLOTS` slot values (the page sends them flat, in that order); each row becomes (template id or
    "", {slot name: value}) with the template's slot names in order (unused menus dropped)."""
    catalog = catalog or load_catalog()
    per = 1 + MAX_SLOTS
    if len(values) != MAX_CONSTRAINTS * per:
        raise ValueError(f"expected {MAX_CONSTRAINTS} x {per} menu values, got {len(values)}")
    rows = []
    for k in range(MAX_CONSTRAINTS):
        tid, current = values[k * per], values[k * per + 1:(k + 1) * per]
        names = [s.name for s in catalog.template(tid).slots] if tid else []
        rows.append((tid or "", dict(zip(names, current, strict=False))))  # the template's menus; the rest unused
    return rows


def build_spec(n: Any, rows: Sequence[tuple[str | None, Mapping[str, Any]]], catalog: Catalog | None = None) -> Spec:
    """A spec from menu choices: ``rows`` = (template id or empty, {slot name: menu value}) per constraint.

    Empty rows are skipped. Raises `SpecError` with the validator's message; for a slot-rule violation the
    template's rules are spelled out.
    """
    catalog = catalog or load_catalog()
    try:
        n = int(n)
    except (TypeError, ValueError):
        raise SpecError(f"spec.n: must be an integer, got {quote(n)}") from None
    used = [(i, t, p) for i, (t, p) in enumerate(rows) if t]
    if not used:
        raise SpecError("spec.constraints: choose at least one template")
    if len(used) > MAX_CONSTRAINTS:
        raise SpecError(f"spec.constraints: at most {MAX_CONSTRAINTS} constraints, got {len(used)}")
    cons = []
    for k, (row, tid, params) in enumerate(used):
        path = f"spec.constraints[{k}] ({constraint_label(k, row)})"
        if not isinstance(tid, str) or len(tid) > MAX_VALUE_CHARS:
            raise SpecError(f"{path}.template: {quote(tid)} is not a template id (like C1/1prop)")
        try:
            t = catalog.template(tid)
        except SpecError as e:
            raise SpecError(f"{path}.template: {e}") from None
        raw = {}
        for s in t.slots:
            raw[s.name] = decode_value(s, (params or {}).get(s.name), f"{path}.params.{s.name}")
        cons.append({"template": t.id, "params": raw})
    try:
        return Spec.from_dict({"n": n, "constraints": cons}, catalog=catalog, allowed_m=COMPOSE_M)
    except SpecError as e:
        templates = [catalog.template(t) for _, t, _ in used]
        raise SpecError(explain_spec_error(str(e), templates, [r for r, _, _ in used])) from None


def constraint_label(k: int, row: int | None = None) -> str:
    """How a message names the spec's constraint ``k`` (0-based): ``Constraint 1``, as the prompt numbers it;
    plus the menu row (counted from 1) when empty rows above it make the two differ."""
    name = constraint_names([k])
    return name if row is None or row == k else f"{name}, in menu row {row + 1}"


def explain_spec_error(msg: str, templates: Sequence[Template], rows: Sequence[int] | None = None) -> str:
    """The validator's message, plus the slot rules of the constraint it names (when it is a slot rule)."""
    m = re.match(r"spec\.constraints\[(\d+)\]", msg)
    if not m:
        return msg
    k = int(m.group(1))
    if k >= len(templates):
        return msg
    t = templates[k]
    where = constraint_label(k, rows[k] if rows is not None else None)
    msg = msg.replace(f"spec.constraints[{k}]", f"spec.constraints[{k}] ({where}, {t.id})", 1)
    rules = slot_rules(t)
    if "slot rule" in msg and rules:
        msg += f". Slot rules of {t.id}: " + "; ".join(rules) + "."
    return msg


def describe_spec(spec: Spec, catalog: Catalog | None = None) -> dict[str, Any]:
    """Texts of a spec: per-constraint sentences, full prompts, sub-questions, ASP program."""
    catalog = catalog or load_catalog()
    return {
        "spec": spec.to_dict(),
        "n": spec.n,
        "m": spec.m,
        "constraints": [
            {"index": i, "template": c.template_id, "class": c.cls,
             "text_short": constraint_text(c, spec.n, "short"), "text_long": constraint_text(c, spec.n, "long")}
            for i, c in enumerate(spec.constraints)
        ],
        "full_prompt_short": full_prompt(spec, "short", False, catalog),
        "full_prompt_long": full_prompt(spec, "long", False, catalog),
        "subquestions": spec_subquestions(spec, catalog),
        "asp_program": spec_program(spec, catalog),
    }


def solve_spec(spec: Spec, solver: Solver | None = None, timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """The ``/solve`` answer: label, witness scene (SAT) or minimal core with the core's texts (UNSAT).

    Raises:
        SolverTimeout: no label within ``timeout`` seconds (a ValueError: the UI shows its message; the worker is
            free again within about a second of the budget).
    """
    solver = solver or default_solver()
    r = solver.solve(spec, timeout=timeout)
    texts = [constraint_text(c, spec.n, "short") for c in spec.constraints]
    return {
        "label": r.label,
        "satisfiable": r.satisfiable,
        "witness": r.witness.to_dict() if r.witness is not None else None,
        "core": list(r.core) if r.core is not None else None,
        "core_constraints": [{"index": i, "template": spec.constraints[i].template_id, "text": texts[i]}
                             for i in (r.core or ())],
        "spec": spec.to_dict(),
        "constraints": [{"index": i, "template": c.template_id, "text": texts[i]}
                        for i, c in enumerate(spec.constraints)],
    }


def solve_markdown(result: Mapping[str, Any]) -> str:
    """The Compose tab's verdict: SAT, or UNSAT with the minimal core named as the prompt numbers it."""
    if result["label"] == "SAT":
        return "### SAT (satisfiable)\nThe solver found a scene; its witness is rendered on the right."
    return ("### UNSAT (contradictory)\n"
            f"Minimal unsat core: {core_names(result)}\n" + "\n".join(core_lines(result)))


def constraints_markdown(described: Mapping[str, Any]) -> str:
    """Each constraint of a `describe_spec` answer: ``**Constraint 1** (`C1/1prop`)`` and its two texts."""
    return "\n\n".join(f"**{constraint_names([c['index']])}** (`{c['template']}`)  \n{c['text_short']}  \n"
                        f"<small>{c['text_long']}</small>" for c in described["constraints"])


def witness_scene(result: Mapping[str, Any]) -> Scene | None:
    w = result.get("witness")
    return Scene.from_dict(w) if w else None


def spec_json_text(spec: Spec) -> str:
    return json.dumps(spec.to_dict(), indent=1)
