"""What a resumed run may reuse, and how it knows: the benchmark rows, fingerprints of the code and models that
decide each file, and the checks that a file on disk still matches them.

Every cached file records what it was made from (seed, spec, image hash, generator or backend fingerprint); a
file whose record differs from the present run is redone, never reused.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.fingerprint import benchmark_fingerprint
from logicval_hf.benchmark.rows import BenchmarkRow, as_rows, typed_benchmark
from logicval_hf.benchmark.sampler import DEFAULT_SEED
from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.common.fingerprint import files_hash, modules_hash
from logicval_hf.common.version import __version__

__all__ = ["HOW_SETTINGS", "backend_fingerprint", "cached_verdict", "generator_fingerprint", "intended_ok", "load_rows",
           "public_settings", "read_json", "sha1"]

#: benchmark-row fields the job keeps (in benchmark.json)
ROW_FIELDS = ("id", "package", "n", "m", "label", "classes", "templates", "spec_json", "witness", "core",
              "chance_rate", "prompt_short")
#: modules whose code decides a built-in generator's images
GENERATOR_MODULES = ("generation/builtin", "generation/render", "contract/layout")
#: backend settings that decide how an image is read, never what is read (waits, retries, parallelism, where the
#: key is found): left out of the verdicts' cache key. Every other setting is in it (vlm: url, model, boxes,
#: multiple_of, response_format, max_tokens, temperature, ...), so a change re-reads every image.
HOW_SETTINGS = frozenset({"api_key_env", "timeout", "concurrency", "max_retries", "backoff", "threads"})


def read_json(path: Path) -> Any | None:
    """A JSON file's content, or None when it is missing or not JSON (a file to redo)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def load_rows(seed: int = DEFAULT_SEED, cache: str | Path | None = None, reuse: bool = True) -> list[BenchmarkRow]:
    """The benchmark rows, typed (with the columns the job needs, `ROW_FIELDS`): read from ``cache`` when ``reuse``
    and it matches the seed and the code, else built with `cached_benchmark` (and then written to ``cache``)."""
    fp = benchmark_fingerprint()
    if cache is not None and reuse:
        d = read_json(Path(cache))
        if isinstance(d, dict) and d.get("seed") == seed and d.get("fingerprint") == fp and \
                isinstance(d.get("rows"), list):
            return as_rows(d["rows"])
    rows = list(typed_benchmark(seed))  # memoised per process (keyed on the seed's value)
    if cache is not None:
        atomic_write_json(cache, {"seed": seed, "fingerprint": fp, "logicval_version": __version__,
                                  "rows": [r.to_dict(ROW_FIELDS) for r in rows]})
    return rows


@functools.lru_cache(maxsize=1)
def generator_fingerprint() -> str:
    """Hash of the generators' and renderer's sources: a generated image is reused only when it matches."""
    return modules_hash(GENERATOR_MODULES, __version__)


def public_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Backend settings as a summary may show them: a URL without user name, password, query or fragment (the key
    itself is never a setting: it lives in the environment variable ``api_key_env`` names)."""
    from logicval_hf.perception.vlm.endpoint import public_url

    def shown(v: Any) -> Any:
        return public_url(v) if isinstance(v, str) and v.lower().startswith(("http://", "https://")) else v

    return {k: shown(v) for k, v in sorted(settings.items())}


def backend_fingerprint(backend: str, settings: Mapping[str, Any] | None = None) -> str:
    """A short hash of a perception backend's code, model and settings: cached verdicts are reused only when it
    matches.

    Hashes the source files of the backend's functions, the model files it declares
    (`PerceptionBackend.model_files`: the clevr backend's trained weights) and the settings that decide what is
    read (all but `HOW_SETTINGS`; URLs as `public_settings` shows them), so a retrained or edited backend, or
    another model behind an endpoint, re-scores every image.

    Raises:
        UnknownNameError: no backend of that name (a `ValueError`).
    """
    from logicval_hf.perception import get_backend

    b = get_backend(backend)
    decisive = {k: v for k, v in public_settings(settings or {}).items() if k not in HOW_SETTINGS}
    tag = f"{__version__}/{backend}" + (f"/{json.dumps(decisive, sort_keys=True, default=str)}" if decisive else "")
    return files_hash([*b.source_files(), *b.model_files], tag)


def intended_ok(rec: Any, name: str, seed: int, size: tuple[int, int], row: BenchmarkRow,
                renderer: str = "numpy") -> bool:
    """Whether an intended-scene record on disk was made by this generator, seed, size, renderer and code for
    this spec."""
    return (isinstance(rec, dict) and rec.get("generator") == name and rec.get("seed") == seed
            and rec.get("renderer", "numpy") == renderer
            and rec.get("image_size") == list(size) and rec.get("spec_json") == row.spec_json
            and rec.get("generator_fingerprint") == generator_fingerprint()
            and isinstance(rec.get("metadata"), dict) and isinstance(rec.get("intended"), dict))


def cached_verdict(path: Path, backend: str, fingerprint: str, image_sha1: str, spec_json: str,
                   row: BenchmarkRow | None = None) -> dict[str, Any] | None:
    """The verdict recorded in a verdict file when it was reached by this backend (name and fingerprint) on
    these image bytes for this spec (and, given ``row``, for its label and package: the verdict holds both, and
    another dataset in the same folder may give the same id and spec another label or package); None otherwise."""
    rec = read_json(path)
    if (isinstance(rec, dict) and rec.get("backend") == backend and rec.get("image_sha1") == image_sha1
            and rec.get("backend_fingerprint") == fingerprint and rec.get("spec_json") == spec_json
            and isinstance(rec.get("verdict"), dict)):
        verdict: dict[str, Any] = rec["verdict"]
        if row is None or (verdict.get("label") == row.label and verdict.get("package") == row.package):
            return verdict
    return None
