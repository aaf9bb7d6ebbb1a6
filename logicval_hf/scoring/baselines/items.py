"""Baselines beside LogicVal: what each metric is given for a reference, and its result as a small JSON record.

The metric (`logicval_hf.scoring.evaluation.compute` with ``baselines=...``) and the main job (``logicval run
--baselines``) score every image with LogicVal and with the baselines asked for. A baseline reads a prompt (the
benchmark column its ``prompt_field`` names: ``full_prompt_short`` by default) or, for Soft-TIFA, the spec's
sub-questions; `baseline_item` gives it both from whatever the reference is (a typed row, a row's columns, a
spec), verbalising the spec where the row leaves a column out. `score_baselines` runs every metric over a list of
images and returns one `baseline_record` per image and metric::

    {"score": 0.27, "truncated": true, "dropped_tokens": 61}          # clipscore
    {"score": 0.75, "raw_score": 4, "rationale": "..."}                  # vlm-judge
    {"score": 0.52, "am": 0.52, "gm": 0.31, "subquestions": [...]}       # soft-tifa
    {"score": null, "reason": "no 'SCORE: <1-5>' in the answer"}         # no honest score
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from logicval_hf.scoring.baselines.base import DEFAULT_PROMPT_FIELD, BaselineMetric, BaselineResult

__all__ = ["add_baselines", "baseline_item", "baseline_record", "mean_scores", "prompt_fields", "score_baselines"]

#: the details a record keeps, per metric class name (the rest, long texts and top-k lists, stays out of files)
_KEPT = {
    "clipscore": ("n_tokens", "context_length", "truncated", "dropped_tokens"),
    "vlm_judge": ("raw_score", "rationale"),
    "soft_tifa": ("am", "gm"),
}


def prompt_fields(metrics: Mapping[str, BaselineMetric]) -> tuple[str, ...]:
    """The prompt columns ``metrics`` read (each one's ``prompt_field``; Soft-TIFA reads sub-questions)."""
    return tuple(dict.fromkeys(f for m in metrics.values() if isinstance(f := getattr(m, "prompt_field", None), str)))


def baseline_item(reference: Any, fields: Sequence[str] = (DEFAULT_PROMPT_FIELD,), subquestions: bool = True
                  ) -> Any:
    """What a baseline is given for one reference: a prompt string as it is; otherwise a dict with the spec
    (``spec_json``), the ``fields`` columns and the ``subquestions`` (the row's, else the verbaliser's).

    Args:
        reference: a `BenchmarkRow`, a row's columns (a mapping with ``spec_json``), a spec (`Spec`, dict or
            JSON text) or a plain prompt.
        fields: the prompt columns the metrics read (``full_prompt_*`` are verbalised when missing).
        subquestions: add the sub-questions (Soft-TIFA's).
    Raises:
        ValueError: a spec that does not parse; a column missing that the verbaliser cannot make.
    """
    from logicval_hf.benchmark.rows import BenchmarkRow, is_row
    from logicval_hf.contract.spec import Spec, as_spec
    from logicval_hf.contract.verbalise import full_prompt, spec_subquestions

    if isinstance(reference, str) and not reference.lstrip().startswith("{"):
        return reference
    if isinstance(reference, BenchmarkRow):
        row: Mapping[str, Any] = reference.to_dict()
        spec = reference.spec
    elif is_row(reference):
        row, spec = reference, as_spec(reference["spec_json"])
    elif isinstance(reference, (Spec, Mapping, str)):
        spec = as_spec(reference)
        row = {}
    else:
        raise ValueError(f"a baseline reads a prompt, a spec or a benchmark row, not {type(reference).__name__}")
    item: dict[str, Any] = {"spec_json": spec.to_json()}
    if subquestions:
        item["subquestions"] = list(row.get("subquestions") or ()) or spec_subquestions(spec)
    for name in fields:
        if row.get(name):
            item[name] = row[name]
        elif name.startswith("full_prompt_") and name.removeprefix("full_prompt_").removeprefix("white_") in \
                ("short", "long"):
            register = name.rsplit("_", 1)[1]
            item[name] = full_prompt(spec, register, "_white_" in name)
        else:
            raise ValueError(f"the reference has no {name!r} column, and only full_prompt_short/long (white or "
                             "not) can be made from its spec")
    return item


def baseline_record(metric: BaselineMetric, result: BaselineResult) -> dict[str, Any]:
    """The JSON record of one result: the score, why there is none (``reason``) and the details worth keeping."""
    details = result.details
    out: dict[str, Any] = {"score": result.score}
    if result.score is None:
        out["reason"] = details.get("reason") or "no score"
    for key in _KEPT.get(metric.name, ()):
        if key in details:
            out[key] = details[key]
    if metric.name == "soft_tifa" and details.get("subquestions"):
        out["subquestions"] = [{"question": q.get("question"), "expect": q.get("expect"), "score": q.get("score")}
                               for q in details["subquestions"]]
    return out


def score_baselines(metrics: Mapping[str, BaselineMetric], images: Sequence[Any], items: Sequence[Any]
                    ) -> dict[str, list[dict[str, Any]]]:
    """``{name: [record per image]}``: each metric's `evaluate` over the (image, item) pairs, as `baseline_record`."""
    images, items = list(images), list(items)
    return {name: [baseline_record(metric, r) for r in metric.evaluate(images, items)]
            for name, metric in metrics.items()}


def mean_scores(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"mean", "n_scored", "n_unscored"}`` of one metric's records (the mean is over the scored ones)."""
    scores = [r["score"] for r in records if r.get("score") is not None]
    return {"mean": sum(scores) / len(scores) if scores else None, "n_scored": len(scores),
            "n_unscored": len(records) - len(scores)}


def add_baselines(result: dict[str, Any], metrics: Mapping[str, BaselineMetric], images: Sequence[Any],
                  references: Sequence[Any]) -> None:
    """Score ``images`` against ``references`` with ``metrics`` into the metric's ``result``: ``baselines``
    (``{name: {"mean", "n_scored", "n_unscored"}}``) and, per sample, ``baselines`` (``{name: record}``)."""
    tifa = any(m.name == "soft_tifa" for m in metrics.values())
    items = [baseline_item(r, prompt_fields(metrics), tifa) for r in references]
    scored = score_baselines(metrics, images, items)
    result["baselines"] = {name: mean_scores(records) for name, records in scored.items()}
    for i, sample in enumerate(result.get("per_sample") or ()):
        sample["baselines"] = {name: records[i] for name, records in scored.items()}
