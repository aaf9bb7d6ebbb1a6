"""The benchmark's code fingerprint: a cached copy of the rows (the main job's ``benchmark.json``, the Space's
disk cache) is reused only while every source that decides them is unchanged."""

from __future__ import annotations

from logicval_hf import __version__
from logicval_hf.common.fingerprint import PACKAGE_ROOT, files_hash

#: modules whose code decides the benchmark rows
BENCHMARK_MODULES = ("benchmark/sampler", "contract/params", "contract/spec", "contract/catalog", "asp/encoding",
                     "asp/programs", "asp/solver", "contract/layout", "contract/scene", "contract/spatial",
                     "contract/verbalise", "contract/domain")


def benchmark_fingerprint() -> str:
    """Hash of those modules, the catalog, the domain files and the ASP programs."""
    files = [PACKAGE_ROOT / f"{m}.py" for m in BENCHMARK_MODULES] + [PACKAGE_ROOT / "contract" / "catalog.json"]
    files += sorted((PACKAGE_ROOT / "contract" / "domains").glob("*.json"))
    files += sorted((PACKAGE_ROOT / "asp" / "lp").rglob("*.lp"))
    return files_hash(files, __version__)
