"""The prompts of benchmark rows, for drawing their images (`logicval generate`): each row's id, package and its
full-prompt columns, read from the benchmark sampled in-process, a built dataset folder (``data/<package>.parquet``)
or a JSONL file of rows. Only the id and the prompt columns are needed, so a JSONL file of prompts alone (no spec)
is enough; every field is read here, once."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from logicval_hf.benchmark import sampler
from logicval_hf.benchmark.sampler import DEFAULT_SEED, PACKAGE_NAMES, PROMPT_COLUMNS
from logicval_hf.common.reading import capped_lines, loads_json

__all__ = ["PROMPT_COLUMNS", "PromptRow", "read_prompt_rows"]



@dataclass(frozen=True)
class PromptRow:
    """One row's id, package and prompts (``{column: text}``, the columns it has of `PROMPT_COLUMNS`)."""

    id: str
    package: str
    prompts: Mapping[str, str]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> PromptRow:
        """A row read from a dict (a benchmark row, a Parquet or JSONL record).

        Raises:
            ValueError: no string ``id`` (the message names ``where``).
        """
        rid = d.get("id")
        if not isinstance(rid, str) or not rid:
            raise ValueError(f"{where}: a row without an id")
        prompts = {c: d[c] for c in PROMPT_COLUMNS if isinstance(d.get(c), str)}
        return cls(rid, str(d.get("package") or ""), prompts)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "package": self.package, **self.prompts}


def read_prompt_rows(packages: Sequence[str], dataset: str | Path | None = None,
                     benchmark_seed: int | None = None) -> list[PromptRow]:
    """The rows of ``packages`` (``["all"]``: every package), in package order.

    Args:
        packages: package names (``1SAT`` ... ``6UNSAT``) or ``["all"]``.
        dataset: a built dataset folder or a JSONL file of rows (None: the benchmark sampled in-process).
        benchmark_seed: the benchmark's seed when ``dataset`` is None (None: the default).
    Raises:
        ValueError: an unknown package, a missing dataset, a JSONL line that is not UTF-8 JSON (naming the line).
    """
    names = list(PACKAGE_NAMES) if list(packages) == ["all"] else list(packages)
    bad = [c for c in names if c not in PACKAGE_NAMES]
    if bad:
        raise ValueError(f"unknown package(s) {bad}; expected some of {list(PACKAGE_NAMES)} or 'all'")
    if dataset is None:
        bm = sampler.cached_benchmark(DEFAULT_SEED if benchmark_seed is None else benchmark_seed)
        return [PromptRow.from_dict(r, f"benchmark {c}") for c in names for r in bm.rows[c]]
    path = Path(dataset)
    if path.is_file():
        rows = []
        with open(path, encoding="utf-8") as fh:  # each line under the input cap; a non-UTF-8 file is named
            for lineno, line in enumerate(capped_lines(fh, f"--dataset {str(path)!r}"), 1):
                if line.strip():
                    try:
                        record = loads_json(line, f"{path}:{lineno}")
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{path}:{lineno}: not JSON ({e})") from None
                    if not isinstance(record, dict):
                        raise ValueError(f"{path}:{lineno}: not a JSON object")
                    rows.append(PromptRow.from_dict(record, f"{path}:{lineno}"))
        return [r for c in names for r in rows if r.package == c]
    if path.is_dir():
        from logicval_hf.benchmark.dataset import read_rows

        return [PromptRow.from_dict(r, f"{path} ({c})") for c in names for r in read_rows(path, c)]
    raise ValueError(f"--dataset {dataset}: no such file or folder")
