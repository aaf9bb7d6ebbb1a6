"""Markdown tables for every report and card (one formatting rule, and cells that cannot break the table)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["escape_cell", "md_table"]


def escape_cell(value: Any) -> str:
    """A cell's text: pipes escaped and line breaks flattened, since either would end the row early."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def md_table(header: Sequence[Any], rows: Iterable[Sequence[Any]], escape: bool = False) -> str:
    """A GitHub-flavoured Markdown table. ``escape=True`` for cells that may hold user text."""
    cell = escape_cell if escape else str
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
