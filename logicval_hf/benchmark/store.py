"""The built benchmark kept on disk, so that a new output folder, a new ``build-dataset`` or the Space's first start
reads the rows (well under a second) instead of building them again (~15 s on 2 cores).

One gzipped JSON file per seed and code fingerprint, ``benchmark-<seed>-<fingerprint>.json.gz``, in the user-level
cache folder (`logicval_hf.common.paths.user_cache_dir`: ``$LOGICVAL_CACHE``, else ``$XDG_CACHE_HOME/logicval``)
or a folder the caller names. A file of other code has another name and is never read; an unreadable file is
built again. Writes are atomic; a read-only disk only costs the build.
"""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.fingerprint import benchmark_fingerprint
from logicval_hf.common.atomic import atomic_write_bytes
from logicval_hf.common.paths import user_cache_dir

__all__ = ["USER_CACHE", "read_stored", "stored_file", "write_stored"]

log = logging.getLogger("logicval.benchmark")

#: ``cache_dir`` value meaning "the user-level cache folder" (read from the environment at each call)
USER_CACHE = "user"


def _folder(cache_dir: str | Path | None) -> Path | None:
    return user_cache_dir() if cache_dir == USER_CACHE else None if cache_dir is None else Path(cache_dir)


def stored_file(seed: int, cache_dir: str | Path | None = USER_CACHE) -> Path | None:
    """The file that holds (or would hold) the rows of ``seed`` built by this code; None without a folder."""
    folder = _folder(cache_dir)
    return None if folder is None else folder / f"benchmark-{int(seed)}-{benchmark_fingerprint()}.json.gz"


def read_stored(seed: int, cache_dir: str | Path | None = USER_CACHE) -> dict[str, Any] | None:
    """The stored document of ``seed`` (``{"seed", "fingerprint", "rows", "streams", "seconds"}``), or None when
    there is none for this code (or it cannot be read)."""
    path = stored_file(seed, cache_dir)
    if path is None:
        return None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, EOFError) as e:
        log.warning("ignoring the unreadable benchmark cache %s (%s); building the benchmark", path, e)
        return None
    if not (isinstance(doc, dict) and doc.get("seed") == int(seed) and isinstance(doc.get("rows"), dict)
            and doc.get("fingerprint") == benchmark_fingerprint()):
        log.warning("ignoring the benchmark cache %s: not this seed's rows; building the benchmark", path)
        return None
    return doc


def write_stored(seed: int, doc: dict[str, Any], cache_dir: str | Path | None = USER_CACHE) -> Path | None:
    """Keep ``doc`` (the rows of ``seed`` and what else the caller stores) for the next reader; the file written,
    or None without a folder or when the disk refuses."""
    path = stored_file(seed, cache_dir)
    if path is None:
        return None
    data = json.dumps({**doc, "seed": int(seed), "fingerprint": benchmark_fingerprint()},
                      separators=(",", ":")).encode()
    try:
        atomic_write_bytes(path, gzip.compress(data, compresslevel=6, mtime=0))
    except OSError as e:
        log.warning("could not write the benchmark cache %s (%s)", path, e)
        return None
    return path
