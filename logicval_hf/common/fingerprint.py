"""Short content hashes that decide whether cached work (benchmark rows, images, verdicts) may be reused."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Iterable

from logicval_hf import __version__

#: the package folder: module paths below are relative to it (``"contract/spec"``)
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def files_hash(files: Iterable[Path]) -> str:
    """Short hash of the package version and the names and contents of ``files`` (unreadable ones skipped)."""
    h = hashlib.sha256(__version__.encode())
    for f in files:
        with contextlib.suppress(OSError):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def modules_hash(modules: Iterable[str]) -> str:
    """`files_hash` of package modules named by path without suffix (``"generation/render"``)."""
    return files_hash(PACKAGE_ROOT / f"{m}.py" for m in modules)
