"""Short content hashes that decide whether cached work (benchmark rows, images, verdicts) may be reused."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from pathlib import Path

#: the package folder: module paths below are relative to it (``"contract/spec"``)
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def files_hash(files: Iterable[Path], salt: str) -> str:
    """Short hash of ``salt`` and the names and contents of ``files`` (unreadable ones skipped).

    ``salt`` is what else decides the cached work: callers pass the package version (so that a release
    invalidates every cache), plus whatever names the work (a backend's name).
    """
    h = hashlib.sha256(salt.encode())
    for f in files:
        with contextlib.suppress(OSError):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def modules_hash(modules: Iterable[str], salt: str) -> str:
    """`files_hash` of package modules named by path without suffix (``"generation/render"``)."""
    return files_hash((PACKAGE_ROOT / f"{m}.py" for m in modules), salt)
