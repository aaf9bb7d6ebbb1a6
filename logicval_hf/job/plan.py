"""What a run covers: which generators (built-in names or folders of images) and which benchmark rows."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["BUILTIN_GENERATORS", "limit_rows", "resolve_generators"]

#: the built-in generators (`logicval_hf.generation.builtin.GENERATORS`), in report order
BUILTIN_GENERATORS = ("oracle", "naive", "perturbed")


def limit_rows(rows: Sequence[dict], limit: int | None) -> list[dict]:
    """At most ``limit`` rows per package, evenly spaced through the package (so a small limit still reaches
    several classes of 1SAT), in benchmark order."""
    if limit is None:
        return list(rows)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a positive number of specs per package, got {limit!r}")
    by_pkg: dict[str, list[dict]] = {}
    for r in rows:
        by_pkg.setdefault(r["package"], []).append(r)
    keep: set[str] = set()
    for members in by_pkg.values():
        k = len(members)
        picks = range(k) if k <= limit else sorted({(i * k) // limit for i in range(limit)})
        keep.update(members[i]["id"] for i in picks)
    return [r for r in rows if r["id"] in keep]


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "custom"


def resolve_generators(generators: Iterable[str] | str | None, image_folder: str | Path | None = None
                       ) -> list[tuple[str, Path | None]]:
    """``[(name, folder or None)]``: built-in names stay; anything else must be a folder of images and is named
    after the folder (``custom`` when that name is empty or taken)."""
    if isinstance(generators, (str, os.PathLike)):
        generators = [generators]
    items = list(generators or [])
    if image_folder is not None:
        items.append(image_folder)
    if not items:
        raise ValueError("no generator given")
    out: list[tuple[str, Path | None]] = []
    names: set[str] = set()
    for g in items:
        g_str = os.fspath(g)
        if g_str in BUILTIN_GENERATORS:
            if g_str in names:
                continue
            out.append((g_str, None))
            names.add(g_str)
            continue
        folder = Path(g_str).expanduser()
        if not folder.is_dir():
            raise ValueError(f"generator {g_str!r} is neither one of {list(BUILTIN_GENERATORS)} nor a folder of images")
        name = _safe_name(folder.resolve().name)
        if name in names or name in BUILTIN_GENERATORS:
            name = "custom"
        k = 2
        base = name
        while name in names:
            name = f"{base}-{k}"
            k += 1
        out.append((name, folder))
        names.add(name)
    return out
