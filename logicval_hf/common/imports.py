"""The package's import graph, read from the source with `ast` (nothing is imported): which package modules each
module imports, at any scope (module level, inside functions and classes, under ``if`` and ``try``).

Two readers: the benchmark's code fingerprint (`logicval_hf.benchmark.fingerprint`: the modules the build runs,
found from its entry module, so that a new module cannot be left out of it) and the layout tests (no import
cycle, one-way rooms).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

__all__ = ["import_closure", "import_graph", "imports_of", "module_name", "package_modules"]


def module_name(path: Path, package_dir: Path) -> str:
    """The dotted name of a module file below ``package_dir`` (``pkg/a/__init__.py`` -> ``pkg.a``)."""
    parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package in ``package_dir``: ``{dotted name: file}``."""
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))
            if "__pycache__" not in p.parts}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside ``if TYPE_CHECKING:`` bodies (imports that never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports_of(path: Path, name: str, modules: Iterable[str], type_checking: bool = True) -> set[str]:
    """The package modules that module ``name`` (file ``path``) imports, at any scope; ``modules`` are the
    package's module names. ``from pkg import sub`` counts as importing ``pkg.sub`` when that is a module, else
    ``pkg`` itself; ``type_checking=False`` leaves out imports under ``if TYPE_CHECKING:``."""
    known = set(modules)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = set() if type_checking else _type_checking_only(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found = next((".".join(parts[:k]) for k in range(len(parts), 0, -1)
                              if ".".join(parts[:k]) in known), None)
                if found:
                    out.add(found)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    out.add(f"{base}.{alias.name}")
                elif base in known:
                    out.add(base)
    out.discard(name)
    return out


def import_graph(package_dir: Path, type_checking: bool = True) -> dict[str, set[str]]:
    """``{module: the package modules it imports}`` for every module of the package in ``package_dir``."""
    modules = package_modules(package_dir)
    return {name: imports_of(path, name, modules, type_checking) for name, path in modules.items()}


def import_closure(package_dir: Path, roots: Iterable[str], type_checking: bool = False) -> set[str]:
    """Every package module that importing ``roots`` may run: their imports at any scope, transitively, with the
    packages above each module (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first). Only the
    modules reached are read; ``type_checking=True`` also follows imports under ``if TYPE_CHECKING:``."""
    modules = package_modules(package_dir)
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m in seen or m not in modules:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:k]) for k in range(1, len(parts)))
        todo.extend(imports_of(modules[m], m, modules, type_checking))
    return seen
