"""The benchmark's code fingerprint: a cached copy of the rows (the main job's ``benchmark.json``, the user-level
benchmark cache, the Space's copy) is reused only while every source that decides them is unchanged.

The sources are found, not listed: every package module that importing the builder (`BUILDER`) may run, followed
through imports at any scope (`logicval_hf.common.imports.import_closure`), plus the data files of the packages
those modules live in (the catalog, the domain files, the ASP programs). A module the build starts to import is
in the fingerprint from then on.
"""

from __future__ import annotations

from pathlib import Path

from logicval_hf.common.fingerprint import PACKAGE_ROOT, files_hash
from logicval_hf.common.imports import import_closure, package_modules
from logicval_hf.common.version import __version__

__all__ = ["BUILDER", "DATA_SUFFIXES", "benchmark_fingerprint", "benchmark_sources"]

#: the module that builds the benchmark rows (`build_benchmark`); its import closure decides them
BUILDER = "logicval_hf.benchmark.sampler"
#: data files read by the modules of a package folder (the catalog and domains as JSON, the ASP programs)
DATA_SUFFIXES = (".json", ".lp")


def _data_files(folder: Path) -> list[Path]:
    """The data files of a package folder and of its plain (non-package) subfolders, such as ``asp/lp/``."""
    out = [p for p in folder.iterdir() if p.is_file() and p.suffix in DATA_SUFFIXES]
    for sub in folder.iterdir():
        if sub.is_dir() and sub.name != "__pycache__" and not (sub / "__init__.py").exists():
            out += [p for p in sub.rglob("*") if p.is_file() and p.suffix in DATA_SUFFIXES]
    return out


def benchmark_sources(package_dir: Path = PACKAGE_ROOT, builder: str = BUILDER) -> list[Path]:
    """Every file whose content decides the benchmark rows, in a stable order: the modules the builder's import
    closure reaches, then the data files of their package folders."""
    modules = package_modules(package_dir)
    reached = import_closure(package_dir, [builder])
    files = sorted(modules[m] for m in reached)
    folders = sorted({p.parent for p in files})
    data = sorted({f for d in folders for f in _data_files(d)})
    return files + data


def benchmark_fingerprint(package_dir: Path = PACKAGE_ROOT) -> str:
    """Short hash of `benchmark_sources` and the package version."""
    return files_hash(benchmark_sources(package_dir), __version__)
