"""Atomic files: every writer in the package goes through here, so a reader (or a resumed job) never sees half
a file, and a crash mid-write leaves the previous version in place.

The data goes to a temporary file in the target's own folder (same file system, so the final `os.replace` is
atomic) and is renamed over the target only once it is complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "TEMP_NAME", "atomic_path", "atomic_write_bytes", "atomic_write_json", "atomic_write_jsonl", "atomic_write_text",
    "remove_stale_temps", "replace_dir",
]

#: Names of the temporary files made here (``.<name>.<random>.tmp``): what `remove_stale_temps` may delete.
TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{6,}\.tmp$")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: str | Path, fsync: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block ends without error it replaces ``path``.

    For writers that want a file name (``image.save(tmp)``, ``pyarrow.parquet.write_table(t, tmp)``).
    ``fsync=True`` forces the data to disk before the rename (user data that must survive a power cut).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _FILE_MODE)  # mkstemp makes 0600; the result gets the mode a plain open() would give
        if fsync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | Path, data: bytes, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    with atomic_path(path, fsync=fsync) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = None,
                      default: Callable[[Any], Any] | None = None) -> Path:
    """Write ``obj`` as JSON (UTF-8, one trailing newline) to ``path`` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, default=default) + "\n")


def atomic_write_jsonl(path: str | Path, records: Any) -> Path:
    """Write one compact JSON object per line to ``path`` atomically."""
    return atomic_write_text(path, "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))


def replace_dir(tmp: str | Path, out: str | Path) -> Path:
    """Move the finished folder ``tmp`` to ``out``; an existing ``out`` is moved aside first and removed only
    after the new one is in place, so at every moment one complete version exists."""
    tmp, out = Path(tmp), Path(out)
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return out


def remove_stale_temps(root: str | Path) -> int:
    """Delete temporary files left under ``root`` by writers that were killed; returns how many."""
    n = 0
    for p in Path(root).rglob(".*.tmp"):
        if p.is_file() and TEMP_NAME.match(p.name):
            with contextlib.suppress(OSError):
                p.unlink()
                n += 1
    return n
