"""The import-graph reader (`logicval_hf.common.imports`) on a small package written for the test: imports at every
scope, relative ones, ``from pkg import submodule``, and what `import_closure` reaches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_tree

from logicval_hf.common.imports import import_closure, import_graph, module_name, package_modules


@pytest.fixture
def pkg(tmp_path: Path) -> Path:
    return write_tree(tmp_path, {
        "pkg/__init__.py": "from pkg.core import VALUE\n",
        "pkg/core.py": "VALUE = 1\n",
        "pkg/room/__init__.py": "",
        "pkg/room/top.py": "from . import helper\nfrom ..core import VALUE\n",
        "pkg/room/helper.py": """
            import json

            def late():
                import pkg.room.lazy
                return pkg.room.lazy

            class Holder:
                def method(self):
                    from pkg import other
                    return other
            """,
        "pkg/room/lazy.py": "try:\n    from pkg.room.top import helper\nexcept ImportError:\n    helper = None\n",
        "pkg/other.py": """
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from pkg.room import typed_only
            """,
        "pkg/room/typed_only.py": "X = 1\n",
        "pkg/unused.py": "import pkg.core\n",
    }) / "pkg"


def test_module_names_follow_the_files(pkg):
    mods = package_modules(pkg)
    assert set(mods) == {"pkg", "pkg.core", "pkg.room", "pkg.room.top", "pkg.room.helper", "pkg.room.lazy",
                         "pkg.other", "pkg.room.typed_only", "pkg.unused"}
    assert module_name(pkg / "room" / "__init__.py", pkg) == "pkg.room"


def test_imports_are_read_at_every_scope(pkg):
    graph = import_graph(pkg)
    assert graph["pkg"] == {"pkg.core"}
    assert graph["pkg.room.top"] == {"pkg.room.helper", "pkg.core"}  # relative: `from . import x`, `from ..core`
    assert graph["pkg.room.helper"] == {"pkg.room.lazy", "pkg.other"}  # inside a function and a method
    assert graph["pkg.room.lazy"] == {"pkg.room.top"}  # inside try
    assert graph["pkg.other"] == {"pkg.room.typed_only"}  # under TYPE_CHECKING: part of the structure
    assert import_graph(pkg, type_checking=False)["pkg.other"] == set()


def test_the_closure_follows_function_level_imports_and_parent_packages(pkg):
    reached = import_closure(pkg, ["pkg.room.top"])
    # top -> helper -> (lazy, other) -> ...; the packages above each module run first; TYPE_CHECKING never runs
    assert reached == {"pkg", "pkg.core", "pkg.room", "pkg.room.top", "pkg.room.helper", "pkg.room.lazy",
                       "pkg.other"}
    assert import_closure(pkg, ["pkg.other"], type_checking=True) >= {"pkg.room.typed_only"}


def test_the_closure_holds_every_module_a_real_import_runs(pkg):
    """Differential: what Python actually imports is inside what the reader predicts."""
    code = ("import sys, pkg.room.top, pkg.room.helper as h\n"
            "h.late(); h.Holder().method()\n"
            "print(' '.join(sorted(m for m in sys.modules if m == 'pkg' or m.startswith('pkg.'))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=pkg.parent, capture_output=True, text=True,
                         timeout=60, check=True)
    assert set(out.stdout.split()) <= import_closure(pkg, ["pkg.room.top"])
