"""Prompts looked up by their text: ``logicval serve --prompts FILE``.

Flow-Factory's reward client sends only ``{"prompt": [...], "image": [...]}``: no spec travels with an image. A
server started with ``--prompts`` knows the specs of the prompts it will be asked about and finds each image's
spec by its prompt's exact text (leading and trailing whitespace aside). What ``FILE`` may be:

* a JSON-lines file whose lines carry a ``prompt`` and the spec: a ``logicval build-prompts`` output's
  ``train_metadata.jsonl`` (LogicVal items: ``spec_json``, ``label``, ``tag``, ``id``), GenEval's
  ``evaluation_metadata.jsonl`` (``include``/``exclude``; needs ``--backend neural``), or any file of such lines,
  such as a Flow-Factory dataset's ``train.jsonl`` with those keys beside its prompt;
* a folder: its ``*_metadata.jsonl`` files (a ``build-prompts`` folder: train and test), else its
  ``data/*.parquet`` files (a ``logicval build-dataset`` folder: every prompt column of every row, the full
  prompts in both registers, with and without the white background, and the constraint-only ones), else its
  ``*.jsonl`` files;
* a ``.parquet`` file of such rows.

An item that carries a prompt and no spec (``{"prompt": ...}`` in Flow-GRPO's ``meta_datas``, or every image of
a prompt-only JSON request) gets the spec found under that text. A prompt the file does not hold, or one whose
text stands for different specs there (a constraint-only prompt says nothing of n), is that image's error entry;
the other images of the request are scored.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.common.reading import capped_lines
from logicval_hf.serve.items import SPEC_KEYS, is_geneval

__all__ = ["PromptIndex", "is_prompt_only", "load_prompts"]

#: how much of an unknown prompt an error entry quotes
_QUOTED = 80


def is_prompt_only(item: Any) -> bool:
    """An item with a prompt and nothing that names its spec (no spec keys, no GenEval metadata, no benchmark id)."""
    return (isinstance(item, Mapping) and isinstance(item.get("prompt"), str) and not is_geneval(item)
            and not any(k in item for k in (*SPEC_KEYS, "id")))


def _has_spec(row: Mapping[str, Any]) -> bool:
    return is_geneval(row) or any(k in row for k in (*SPEC_KEYS, "id"))


def _jsonl_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    with path.open(encoding="utf-8") as f:  # each line under the input cap; a non-UTF-8 file is named
        for number, line in enumerate(capped_lines(f, f"--prompts {str(path)!r}"), 1):
            if not line.strip():
                continue
            where = f"{path.name}, line {number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"--prompts: {where} is not JSON ({e.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
                raise ValueError(f"--prompts: {where} has no 'prompt' text")
            if not _has_spec(row):
                raise ValueError(f"--prompts: {where} has a prompt but no spec ('spec_json', 'spec', 'constraints', "
                                 "'id' or GenEval's 'include'): the server could not score its images")
            yield row["prompt"], row


def _parquet_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow.parquet as pq

    from logicval_hf.benchmark.rows import split_row

    table = pq.read_table(path)
    columns = [c for c in table.column_names if "prompt" in c]
    if "spec_json" not in table.column_names or not columns:
        raise ValueError(f"--prompts: {path.name} has no 'spec_json' and prompt columns (a build-dataset file has)")
    keep = [c for c in ("id", "package", "spec_json", "label") if c in table.column_names]
    for row in table.select(keep + columns).to_pylist():
        spec_json, item = split_row(row, ("id", "label", "package"))  # the row's own reader (`benchmark.rows`)
        item["spec_json"] = spec_json
        if "package" in item:  # a row's package is its item's group
            item["tag"] = item.pop("package")
        for text in (row[c] for c in columns):  # every prompt column the file has, whatever its name
            if isinstance(text, str):
                yield text, item


def _sources(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ValueError(f"--prompts: {path.name} is neither a file nor a folder")
    for found in (sorted(path.glob("*_metadata.jsonl")), sorted(path.glob("data/*.parquet")),
                  sorted(path.glob("*.jsonl"))):
        if found:
            return found
    raise ValueError(f"--prompts: {path.name} holds no *_metadata.jsonl, data/*.parquet or *.jsonl file")


class PromptIndex:
    """Prompt text -> the item to score its images against (module docstring).

    Attributes:
        source: the file or folder's name (never its path: /health shows it).
    """

    def __init__(self, rows: Iterator[tuple[str, Mapping[str, Any]]], source: str):
        self.source = source
        self._items: dict[str, Mapping[str, Any]] = {}
        self._ambiguous: dict[str, int] = {}
        for text, item in rows:
            key = text.strip()
            held = self._items.get(key)
            if held is None:
                self._items[key] = item
            elif _spec_of(held) != _spec_of(item):
                self._ambiguous[key] = self._ambiguous.get(key, 1) + 1

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and text.strip() in self._items and text.strip() not in self._ambiguous

    def item(self, text: str) -> Mapping[str, Any]:
        """The item of ``text``.

        Raises:
            KeyError: the prompt is not in the file, or it stands for several specs there (the message says which).
        """
        key = text.strip()
        quoted = repr(key if len(key) <= _QUOTED else key[:_QUOTED] + "...")
        if key in self._ambiguous:
            raise KeyError(f"the prompt {quoted} stands for {self._ambiguous[key]} different specs in "
                           f"{self.source} (--prompts): send its spec")
        if key not in self._items:
            raise KeyError(f"the prompt {quoted} is not one of the {len(self):,} prompts of {self.source} "
                           "(--prompts)")
        return self._items[key]

    def resolve(self, items: Sequence[Any], where: str) -> tuple[list[Any], dict[int, str]]:
        """``items`` with every prompt-only item (`is_prompt_only`) given its spec, and the errors of those whose
        prompt was not found, by index (``where[i]: ...``)."""
        out, errors = list(items), {}
        for i, x in enumerate(items):
            if is_prompt_only(x):
                try:
                    out[i] = {**self.item(x["prompt"]), **x}
                except KeyError as e:
                    errors[i] = f"{where}[{i}]: {e.args[0]}"
        return out, errors


def _spec_of(item: Mapping[str, Any]) -> str:
    """What decides an item's spec: GenEval's include/exclude, else its spec keys, else the benchmark id it names."""
    if is_geneval(item):
        keys: tuple[str, ...] = ("include", "exclude")
    elif any(k in item for k in SPEC_KEYS):
        keys = (*SPEC_KEYS, "n", "domain", "score_threshold")  # a bare spec's n and domain are keys of the item
    else:
        keys = ("id",)
    return json.dumps({k: item.get(k) for k in keys}, sort_keys=True)


@functools.lru_cache(maxsize=4)
def _load(path: str, _stamp: tuple[int, int]) -> PromptIndex:
    p = Path(path)
    rows = (row for f in _sources(p)
            for row in (_parquet_rows(f) if f.suffix == ".parquet" else _jsonl_rows(f)))
    index = PromptIndex(rows, p.name)
    if not len(index):
        raise ValueError(f"--prompts: {p.name} holds no prompt")
    return index


def load_prompts(path: str | Path) -> PromptIndex:
    """The prompts of ``path`` (module docstring), read once per file version (the CLI checks the file, the app
    then uses it).

    Raises:
        ValueError: no such file or folder, a line that is not JSON or has no prompt or no spec, no prompt at all.
    """
    p = Path(path).expanduser().resolve()
    try:
        st = p.stat()
    except OSError:
        raise ValueError(f"--prompts: {path}: no such file or folder") from None
    return _load(str(p), (st.st_mtime_ns, st.st_size))
