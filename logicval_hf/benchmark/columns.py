"""The benchmark dataset's schema: every column with its meaning (the card's structure section is generated from
`COLUMNS`) and the `datasets.Features` of every config."""

from __future__ import annotations

import datasets

from logicval_hf.benchmark.sampler import CHANCE_SCENES, PROMPT_COLUMNS
from logicval_hf.contract.catalog import Domain, load_catalog

__all__ = ["COLUMNS", "features"]

#: every column (and struct field) with its meaning; the card's structure section is generated from this
COLUMNS: dict[str, str] = {
    "id": "Row id, `<package>-<4-digit index>` (e.g. `3SAT-0007`), unique over the whole benchmark.",
    "package": "The package (= config) of the row: `1SAT`, `1UNSAT`, `3SAT`, `3UNSAT`, `6SAT` or `6UNSAT`.",
    "n": "Scene size: the number of objects the image must show (3..9).",
    "m": "Number of constraints of the specification (1, 3 or 6).",
    "label": "`SAT` or `UNSAT`, decided by clingo on the spec's ASP program (never by hand).",
    "classes": "Constraint class of each constraint (`C1`..`C9`), in constraint order; pairwise distinct.",
    "templates": "Template id of each constraint (e.g. `C8/rel_exact`), in constraint order.",
    "constraints": "One struct per constraint, in order (the order of the numbered list in the prompt):",
    "constraints.template": "Template id (`<class>/<name>`, one of the 71 templates of the catalog).",
    "constraints.class": "Its class, `C1`..`C9`.",
    "constraints.params_json": "The slot values as compact JSON, exactly the contract's `params` object "
                               "(e.g. `{\"A1\":{\"prop\":\"color\",\"value\":\"red\",\"negated\":false},\"K\":2}`); "
                               "a string because slot sets differ between templates.",
    "constraints.text_short": "The constraint in the short English register, followed by its anti-vacuity "
                              "sentence if the template has one.",
    "constraints.text_long": "The same in the long register (quantifier scope spelled out with variables).",
    "spec_json": "The whole specification as the contract's JSON, `{\"n\": ..., \"constraints\": [{\"template\": "
                 "..., \"params\": {...}}, ...]}`: the input of `logicval solve` / `logicval verify`.",
    "asp_program": "The complete standalone ASP program of the spec (domain, background relations, symmetry "
                   "breaking, the compiled constraints): it has an answer set iff the label is SAT. Run it with "
                   "`clingo` or `logicval run-asp`.",
    "prompt_short": "The constraint part of the prompt, short register: the constraint's text when m = 1, "
                    "otherwise one line `Constraint i: <text>` per constraint.",
    "prompt_long": "The same in the long register.",
    "full_prompt_short": "The whole prompt given to a text-to-image model (Appendix C of the paper, open-model "
                         "variant): domain description, number of objects, constraints (short register), "
                         "instruction to draw an empty scene if the description is contradictory.",
    "full_prompt_long": "The same with the long register.",
    "full_prompt_white_short": "The proprietary-model variant of `full_prompt_short`: also asks for a plain "
                               "white background and an empty *white* scene; nothing else differs.",
    "full_prompt_white_long": "The white-background variant of `full_prompt_long`.",
    "full_prompt_compact": "The prompt for text encoders that read 77 CLIP tokens (Stable Diffusion 1.x/2.x, "
                           "SDXL): a one-line scene description with the number of objects, the constraints, "
                           "the empty-scene instruction, then as much of the vocabulary as fits in 77 tokens "
                           "(`logicval_hf.contract.compact_prompt`).",
    "full_prompt_compact_fits": "Whether a 77-token CLIP text encoder reads `full_prompt_compact` whole; false "
                                "when the constraints alone are longer (most 3- and 6-constraint rows).",
    "prompt_lengths": "The length of every full prompt column, one struct field per column "
                      "(`full_prompt_short`, `full_prompt_long`, `full_prompt_white_short`, "
                      "`full_prompt_white_long`, `full_prompt_compact`), each `{words, clip_tokens}`: words split "
                      "on whitespace, and the CLIP text encoder's tokens with its start and end tokens "
                      "(`logicval_hf.contract.clip_tokens`); a CLIP encoder reads 77.",
    "subquestions": "Soft-TIFA sub-questions of every constraint, in order (paper §4.3, Appendix E):",
    "subquestions.constraint": "0-based index of the constraint the question comes from.",
    "subquestions.question": "The question in English.",
    "subquestions.type": "`yes_no`, `count` or `value`.",
    "subquestions.expect": "Expected answer: `yes`/`no`, an attribute value, or a count condition `OP RHS` "
                           "(`OP` in `= != < <= > >=`, `RHS` an integer, a name bound by an earlier question of "
                           "the same constraint such as `c`, or `n-c`-style arithmetic).",
    "subquestions.bind": "For count questions that introduce a count: the name (e.g. `c`) later questions of "
                         "the same constraint refer to (the VQA model's most likely count); null otherwise.",
    "subquestions.candidates": "Candidate answers, as strings: `yes`/`no`, the attribute's values, or the "
                               "counts `0..max(n, 10)`.",
    "witness": "SAT rows: one scene that satisfies the spec, as found by the solver (a scene graph in the "
               "`logicval verify` format); null for UNSAT rows:",
    "witness.image_size": "`[W, H]` of the (virtual) image in pixels, `[480, 320]`.",
    "witness.objects": "The n objects: `color`, `shape`, `material` and `bbox` `[x0, y0, x1, y1]`; regions "
                       "and left/right/front/behind follow from the box centres (docs/regions.md §6).",
    "core": "UNSAT rows: a minimal unsat core, the 0-based indices of constraints that are already "
            "contradictory together at this n (dropping any one of them makes the rest satisfiable); null for "
            "SAT rows.",
    "chance_rates": f"Per constraint: the estimated probability that a uniformly random scene of exactly n "
                    f"objects satisfies it (formula and anti-vacuity), from {CHANCE_SCENES} random scenes per n "
                    "(see *Chance rates*).",
    "chance_rate": "The same for the whole spec: the fraction of those random scenes satisfying all "
                   "constraints at once (0 for every UNSAT row).",
}


def features(domain: Domain | None = None) -> datasets.Features:
    """The `datasets.Features` of every config (the witness objects carry the domain's perceived attributes)."""
    domain = domain or load_catalog().domain
    string, i32, f64 = datasets.Value("string"), datasets.Value("int32"), datasets.Value("float64")
    obj = dict.fromkeys(domain.perceived_attributes, string)
    obj["bbox"] = datasets.List(f64)
    return datasets.Features({
        "id": string,
        "package": string,
        "n": i32,
        "m": i32,
        "label": string,
        "classes": datasets.List(string),
        "templates": datasets.List(string),
        "constraints": datasets.List({
            "template": string, "class": string, "params_json": string, "text_short": string, "text_long": string,
        }),
        "spec_json": string,
        "asp_program": datasets.Value("large_string"),
        "prompt_short": string,
        "prompt_long": string,
        "full_prompt_short": string,
        "full_prompt_long": string,
        "full_prompt_white_short": string,
        "full_prompt_white_long": string,
        "full_prompt_compact": string,
        "full_prompt_compact_fits": datasets.Value("bool"),
        "prompt_lengths": {c: {"words": i32, "clip_tokens": i32} for c in PROMPT_COLUMNS},
        "subquestions": datasets.List({
            "constraint": i32, "question": string, "type": string, "expect": string, "bind": string,
            "candidates": datasets.List(string),
        }),
        "witness": {"image_size": datasets.List(i32), "objects": datasets.List(obj)},
        "core": datasets.List(i32),
        "chance_rates": datasets.List(f64),
        "chance_rate": f64,
    })
