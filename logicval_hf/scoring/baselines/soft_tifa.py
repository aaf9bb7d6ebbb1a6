"""Soft-TIFA (Kamath et al., 2025) as adapted in the paper (§4.3, Appendix E).

The prompt is decomposed into the verbaliser's sub-questions (a benchmark row's ``"subquestions"`` column or
`logicval_hf.contract.verbalise.spec_subquestions`), each with a type (``yes_no``, ``value``, ``count``), an expected
answer and candidate answers. The VQA model answers each with a *single token*; its top-``k`` (20) next-token
log-probabilities are turned into probabilities and the mass of every candidate is gathered over its token
variants (case, a leading space or ``Ġ``/``▁`` marker, trailing punctuation; ``true``/``false`` for
``yes``/``no``; number words for counts; optionally the unique prefix of a candidate split into several
tokens). The sub-question score is then:

* ``yes_no`` / ``value``: the probability of the expected answer;
* count ``>0`` (and the equivalent ``>=1``): ``1 - P(0)`` (all mass on positive counts), 0 when no count
  candidate appears in the top-k at all (the count distribution is then not covered);
* other count conditions (count ranges): the sum of ``P(k)`` over candidate counts ``k`` that satisfy the
  condition (``>=0``, ``<=3``, ``!=c``, ``=n-c``, ...);
* linked counts: a question with ``bind: c`` binds ``c`` to its most likely candidate count (ties: the
  smaller count); later questions of the *same constraint* use that value (``=c`` scores ``P(c)``).

Probabilities are the raw top-k masses (the paper's reading) unless ``normalize=True``, which renormalises
over the candidates. An image's score is the arithmetic (``"am"``, atom-level) or geometric (``"gm"``,
prompt-level) mean over its sub-questions; `BaselineResult.details` carries both and every sub-question.

The question sent to the model is ``QUESTION_TEMPLATE`` (the paper does not print its wording): the
sub-question, then the candidate list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from logicval_hf.contract.verbalise import check_expect, parse_expect
from logicval_hf.scoring.baselines.base import BaselineError, BaselineMetric, BaselineResult, check_pairs
from logicval_hf.scoring.baselines.vlm import VLMBackend

__all__ = [
    "QUESTION_TEMPLATE", "SoftTIFA", "candidate_probs", "normalise_token", "question_prompt", "score_subquestions",
    "subquestions_of", "NUMBER_WORDS", "SPELLING_VARIANTS",
]

#: Question sent to the VQA model; ``{candidates}`` is the comma-separated candidate list.
QUESTION_TEMPLATE = "{question} Answer with a single word, one of: {candidates}."

#: Count candidates are also recognised as words.
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")

#: English spelling variants accepted for a value answer (US form -> other forms).
SPELLING_VARIANTS: dict[str, tuple[str, ...]] = {"gray": ("grey",), "colored": ("coloured",)}

#: Synonyms of the binary answers: the candidate set may be yes/no or true/false.
BINARY_SYNONYMS = {"yes": ("yes", "true"), "no": ("no", "false")}

_MARKERS = "\u0120\u2581\u010a"  # byte-level BPE space (Ġ), SentencePiece space (▁), byte-level newline (Ċ)
_PUNCT = " \t\r\n.,;:!?\"'`*()[]<>"


def normalise_token(token: str) -> str:
    """Token text without space markers, surrounding punctuation and case (``" Yes."`` -> ``"yes"``)."""
    t = token.replace("\u0120", " ").replace("\u2581", " ").replace("\u010a", "\n")
    return t.strip(_PUNCT).lower()


def _variants(kind: str, candidate: str, binary: tuple[str, str]) -> set[str]:
    c = candidate.strip().lower()
    if kind == "yes_no":
        pos, neg = binary
        if c in (pos, "yes", "true"):
            return set(BINARY_SYNONYMS["yes"]) | {pos}
        if c in (neg, "no", "false"):
            return set(BINARY_SYNONYMS["no"]) | {neg}
        return {c}
    if kind == "count":
        k = int(c)
        return {str(k)} | ({NUMBER_WORDS[k]} if 0 <= k < len(NUMBER_WORDS) else set())
    return {c, *SPELLING_VARIANTS.get(c, ())}


def candidate_probs(top: Iterable[tuple[str, float]], candidates: Sequence[Any], kind: str = "value", *,
                    binary: tuple[str, str] = ("yes", "no"), prefix_match: bool = True) -> dict[str, float]:
    """Probability mass of every candidate in a top-k list ``[(token, logprob), ...]``.

    A token counts for a candidate when its normalised text (`normalise_token`) is one of the candidate's
    variants; with ``prefix_match`` a token of two or more letters that is a prefix of exactly one
    candidate's variants (and matches none exactly) counts for it too (first piece of a multi-token answer).
    Masses of all matching tokens add up. Keys are ``str(candidate)``.
    """
    cands = [str(c) for c in candidates]
    variants = {c: _variants(kind, c, binary) for c in cands}
    exact: dict[str, str] = {}
    for c, vs in variants.items():
        for v in vs:
            exact.setdefault(v, c)
    out = dict.fromkeys(cands, 0.0)
    seen: set[str] = set()
    for token, logprob in top:
        if token in seen:  # the same token twice in one list: count it once
            continue
        seen.add(token)
        t = normalise_token(token)
        if not t:
            continue
        owner = exact.get(t)
        if owner is None and prefix_match and len(t) >= 2 and t.isalpha():
            owners = {c for c, vs in variants.items() if any(v.startswith(t) for v in vs)}
            if len(owners) == 1:
                owner = owners.pop()
        if owner is not None:
            out[owner] += math.exp(float(logprob))
    return out


def question_prompt(sq: Mapping[str, Any], binary: tuple[str, str] = ("yes", "no"),
                    template: str = QUESTION_TEMPLATE) -> str:
    """The text asked for one sub-question."""
    cands = list(binary) if sq["type"] == "yes_no" else [str(c) for c in sq["candidates"]]
    return template.replace("{question}", str(sq["question"])).replace("{candidates}", ", ".join(cands))


def _is_positive(expect: str) -> bool:
    op, rhs = parse_expect(expect)
    return (op, rhs.replace(" ", "")) in ((">", "0"), (">=", "1"))


def score_subquestions(subqs: Sequence[Mapping[str, Any]], tops: Sequence[Sequence[tuple[str, float]]], *,
                       binary: tuple[str, str] = ("yes", "no"), normalize: bool = False,
                       prefix_match: bool = True) -> dict[str, Any]:
    """Soft-TIFA of one image from the top-k lists of its sub-questions (same order).

    Returns ``{"am", "gm", "subquestions": [...]}``; each entry has ``score``, ``probs`` (per candidate),
    ``mass`` (candidate mass in the top-k), ``rule`` and, for bound counts, ``bound``.
    """
    if len(subqs) != len(tops):
        raise ValueError(f"{len(subqs)} sub-questions but {len(tops)} answers")
    bindings: dict[Any, dict[str, int | None]] = {}
    per = []
    for sq, top in zip(subqs, tops, strict=True):
        kind = sq["type"]
        cands = [str(c) for c in (sq["candidates"] if kind != "yes_no" else ("yes", "no"))]
        probs = candidate_probs(top, cands, kind, binary=binary, prefix_match=prefix_match)
        mass = sum(probs.values())
        if normalize and mass > 0:
            probs = {c: p / mass for c, p in probs.items()}
        expect = str(sq["expect"]).strip()
        scope = bindings.setdefault(sq.get("constraint", 0), {})
        entry: dict[str, Any] = {"question": sq["question"], "type": kind, "expect": expect, "probs": probs,
                                 "mass": mass}
        if kind == "count":
            counts = {int(c): p for c, p in probs.items()}
            if _is_positive(expect):
                entry["rule"] = "1-P(0)"
                entry["score"] = 1.0 - counts.get(0, 0.0) if mass > 0 else 0.0
                if mass <= 0:
                    entry["reason"] = "no count candidate among the top-k tokens"
            else:
                _, rhs = parse_expect(expect)
                names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rhs))
                missing = sorted(n for n in names if scope.get(n) is None)
                if missing:
                    entry["rule"] = "count range"
                    entry["score"] = 0.0
                    entry["reason"] = f"unresolved binding {missing}: the binding question had no count candidate"
                else:
                    env = {n: int(scope[n]) for n in names}  # type: ignore[arg-type]
                    entry["rule"] = "count range"
                    entry["bindings"] = env
                    entry["score"] = float(sum(p for k, p in counts.items() if check_expect(expect, k, env)))
            bind = sq.get("bind")
            if bind:
                best = max(sorted(counts), key=lambda k: counts[k]) if mass > 0 else None
                scope[bind] = best
                entry["bound"] = {bind: best}
        else:
            target = None
            if kind == "yes_no":
                e = expect.lower()
                target = "yes" if e in ("yes", "true", binary[0]) else "no" if e in ("no", "false", binary[1]) else None
            else:
                target = next((c for c in cands if c.lower() == expect.lower()), None)
            if target is None:
                raise BaselineError(f"expected answer {expect!r} is not among the candidates {cands}")
            entry["rule"] = "P(expected)"
            entry["score"] = float(probs[target])
        entry["score"] = min(1.0, max(0.0, entry["score"]))
        per.append(entry)
    scores = [e["score"] for e in per]
    if not scores:
        return {"am": None, "gm": None, "subquestions": []}
    am = sum(scores) / len(scores)
    gm = 0.0 if min(scores) <= 0 else math.exp(sum(math.log(s) for s in scores) / len(scores))
    return {"am": am, "gm": gm, "subquestions": per}


def subquestions_of(item: Any) -> list[dict[str, Any]]:
    """The sub-questions of a benchmark row (a `BenchmarkRow` or its columns: the ``subquestions`` column), a spec
    (`Spec`, dict or JSON, via `spec_subquestions`) or an explicit list of sub-question dicts."""
    from logicval_hf.benchmark.rows import BenchmarkRow, is_row, split_row
    from logicval_hf.contract.spec import Spec
    from logicval_hf.contract.verbalise import spec_subquestions

    subqs: Any
    if isinstance(item, BenchmarkRow):
        subqs = list(item.subquestions) if item.subquestions else spec_subquestions(item.spec)
    elif isinstance(item, Mapping) and is_row(item):  # a row's columns: its sub-questions, or its spec's
        spec_data, given = split_row(item, ("subquestions",))
        subqs = given["subquestions"] if "subquestions" in given else spec_subquestions(spec_data)
    elif isinstance(item, Mapping) and "subquestions" in item:
        subqs = item["subquestions"]
    elif isinstance(item, (Spec, Mapping)) or (isinstance(item, str) and item.lstrip().startswith("{")):
        subqs = spec_subquestions(item)
    elif isinstance(item, (list, tuple)):
        subqs = item
    else:
        raise BaselineError("Soft-TIFA needs sub-questions: pass benchmark rows, specs or lists of sub-question "
                            f"dicts, not {type(item).__name__}")
    out = []
    for i, sq in enumerate(subqs):
        if not isinstance(sq, Mapping) or not {"question", "type", "expect"} <= set(sq):
            raise BaselineError(f"sub-question {i} must have question, type and expect: {sq!r}")
        if sq["type"] not in ("yes_no", "value", "count"):
            raise BaselineError(f"sub-question {i}: unknown type {sq['type']!r}")
        out.append(dict(sq))
    return out


class SoftTIFA(BaselineMetric):
    """Soft-TIFA over any `VLMBackend` offering ``top_logprobs``.

    ``aggregate`` picks the reported score (``"am"`` or ``"gm"``; details hold both); ``binary`` the candidate
    pair named in yes/no questions (``("yes", "no")`` or ``("true", "false")``; both pairs are scored as
    variants of each other); ``top_k`` the number of log-probabilities asked for (20 in the paper; OpenAI's
    maximum). All sub-questions of all images are sent in one backend call.
    """

    name = "soft_tifa"

    def __init__(self, backend: VLMBackend, *, aggregate: str = "am", top_k: int = 20,
                 binary: tuple[str, str] = ("yes", "no"), normalize: bool = False, prefix_match: bool = True,
                 template: str = QUESTION_TEMPLATE, on_error: str = "raise") -> None:
        if aggregate not in ("am", "gm"):
            raise ValueError("aggregate must be 'am' or 'gm'")
        if on_error not in ("raise", "record"):
            raise ValueError("on_error must be 'raise' or 'record'")
        pair = tuple(str(b).lower() for b in binary)
        if len(pair) != 2:
            raise ValueError("binary must be a (positive, negative) pair such as ('yes', 'no')")
        self.backend = backend
        self.aggregate = aggregate
        self.top_k = int(top_k)
        self.binary: tuple[str, str] = (pair[0], pair[1])
        self.normalize = normalize
        self.prefix_match = prefix_match
        self.template = template
        self.on_error = on_error

    def evaluate(self, images: Sequence[Any], items: Sequence[Any]) -> list[BaselineResult]:
        images, items = check_pairs(images, items)
        per_image = [subquestions_of(it) for it in items]
        flat_images, flat_prompts, owner = [], [], []
        for i, (im, subqs) in enumerate(zip(images, per_image, strict=True)):
            for sq in subqs:
                flat_images.append(im)
                flat_prompts.append(question_prompt(sq, self.binary, self.template))
                owner.append(i)
        answers = self.backend.top_logprobs(flat_images, flat_prompts, k=self.top_k,
                                            return_exceptions=self.on_error == "record") if flat_prompts else []
        grouped: list[list[Any]] = [[] for _ in images]
        for i, a in zip(owner, answers, strict=True):
            grouped[i].append(a)
        out = []
        for subqs, tops in zip(per_image, grouped, strict=True):
            errors = [a for a in tops if isinstance(a, Exception)]
            if errors:
                out.append(BaselineResult(None, {"reason": f"request failed: {errors[0]}", "subquestions": subqs}))
                continue
            if not subqs:
                out.append(BaselineResult(None, {"reason": "no sub-questions", "am": None, "gm": None,
                                                 "subquestions": []}))
                continue
            res = score_subquestions(subqs, tops, binary=self.binary, normalize=self.normalize,
                                     prefix_match=self.prefix_match)
            for e, t in zip(res["subquestions"], tops, strict=True):
                e["top_logprobs"] = list(t)
            out.append(BaselineResult(res[self.aggregate], res))
        return out
