"""The typed benchmark row: every column read once into a `BenchmarkRow`, written back column for column."""

import json

import pytest

from logicval_hf.benchmark.rows import BenchmarkRow, as_rows, is_row, split_row, typed_benchmark
from logicval_hf.benchmark.sampler import PACKAGE_NAMES, cached_benchmark
from logicval_hf.errors import SpecError


def test_every_row_reads_and_writes_back_the_same_columns():
    columns = cached_benchmark().all_rows()
    rows = typed_benchmark()
    assert len(rows) == len(columns) == 509
    for typed, d in zip(rows, columns, strict=True):
        assert typed.to_dict() == d
        assert (typed.id, typed.package, typed.label, typed.n, typed.m) == (d["id"], d["package"], d["label"],
                                                                             d["n"], d["m"])
        assert list(typed.templates) == d["templates"] and list(typed.classes) == d["classes"]
        assert typed.spec.to_json() == d["spec_json"]
    assert [r.package for r in rows] == [r["package"] for r in columns]
    assert {r.package for r in rows} == set(PACKAGE_NAMES)
    assert typed_benchmark() is rows  # parsed once per process


def test_a_subset_of_columns_is_a_row_and_the_rest_is_none():
    full = cached_benchmark().all_rows()[0]
    keep = ("id", "package", "label", "spec_json", "witness", "core", "chance_rate", "prompt_short")
    row = BenchmarkRow.from_dict({k: full[k] for k in keep})
    assert row.prompt_short == full["prompt_short"] and row.full_prompt_short is None and row.constraints == ()
    assert row.to_dict(keep) == {k: full[k] for k in keep}
    assert row.witness == full["witness"] and row.core is None
    # the spec as a dict, the witness as JSON text (a Parquet or JSONL reader's forms) read the same
    again = BenchmarkRow.from_dict({**full, "spec_json": json.loads(full["spec_json"]),
                                    "witness": json.dumps(full["witness"])})
    assert again.spec == row.spec and again.witness == full["witness"]


def test_a_row_without_its_key_columns_or_with_a_bad_spec_is_refused():
    with pytest.raises(ValueError, match=r"benchmark row 'x': missing column\(s\) \['label'\]"):
        BenchmarkRow.from_dict({"id": "x", "package": "1SAT", "spec_json": "{}"})
    with pytest.raises(SpecError, match=r"benchmark row 'x': spec"):
        BenchmarkRow.from_dict({"id": "x", "package": "1SAT", "label": "SAT", "spec_json": {"n": 1}})


def test_row_like_mappings_are_read_in_one_place():
    full = cached_benchmark().all_rows()[3]
    assert is_row(full) and is_row(typed_benchmark()[3]) and not is_row({"n": 3, "constraints": []})
    spec_data, meta = split_row({**full, "package": None})
    assert spec_data == full["spec_json"] and meta == {"id": full["id"], "label": full["label"]}
    _, meta = split_row({"spec_json": "{}", "witness": json.dumps({"objects": []})}, ("witness",))
    assert meta == {"witness": {"objects": []}}
    assert as_rows([full, typed_benchmark()[3]])[0] == typed_benchmark()[3]
