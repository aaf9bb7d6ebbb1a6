"""The package's shape: rooms by role, imports that run one way, and a checkout that works uninstalled."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "logicval_hf"
ROOMS = {"contract", "asp", "benchmark", "perception", "scoring", "generation", "training", "job", "cli", "space",
         "common", "serve", "repairs", "tasks"}


@functools.lru_cache(maxsize=1)  # read once per run: the tests below only look at it
def _graph() -> dict[str, set[str]]:
    """Every package module and the package modules it imports, at any scope: module level, inside functions and
    classes, under ``if TYPE_CHECKING:`` (`logicval_hf.common.imports`, tested in tests/common)."""
    from logicval_hf.common.imports import import_graph

    return import_graph(PKG)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state, stack = [], {}, []

    def dfs(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cycles.append([*stack[stack.index(v):], v])
            elif v not in state:
                dfs(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            dfs(u)
    return cycles


def test_no_import_cycle_among_the_package_modules_at_any_scope():
    """A function-level import closes a cycle as surely as a module-level one: both are read."""
    found = _cycles(_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_module_below_the_root_imports_the_package_root():
    """Import a name from the module that defines it: ``from logicval_hf import Scene`` in a room runs the root's
    imports and ties the room to the whole package."""
    bad = sorted(m for m, deps in _graph().items() if m != "logicval_hf" and "logicval_hf" in deps)
    assert not bad, f"modules importing from the package root: {bad}"


def test_the_import_reader_sees_imports_inside_functions():
    """The layout rules rest on the reader: a known function-level import of the package must be in the graph."""
    graph = _graph()
    assert "logicval_hf.cli.demo" in graph["logicval_hf.cli.core"]  # imported inside cmd_demo only


def test_the_package_root_holds_only_a_handful_of_modules_and_the_rooms():
    top_modules = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top_modules) <= 4, top_modules
    rooms = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert rooms == ROOMS, rooms ^ ROOMS


def test_lower_rooms_never_import_higher_ones():
    """The flow is one way: the contract knows nothing of solving, scoring, generating or the job."""
    below = {"contract": {"asp", "benchmark", "perception", "scoring", "generation", "training", "job", "cli", "space",
                          "serve", "repairs", "tasks"},
             "asp": {"benchmark", "perception", "scoring", "generation", "training", "job", "cli", "space", "serve",
                     "repairs", "tasks"},
             "common": ROOMS - {"common"},
             "perception": {"scoring", "generation", "training", "job", "cli", "space", "serve", "repairs", "tasks"},
             "tasks": {"benchmark", "scoring", "generation", "training", "job", "cli", "space", "serve", "repairs"}}
    bad = []
    for m, deps in _graph().items():
        parts = m.split(".")
        if len(parts) < 2 or parts[1] not in below:
            continue
        for dep in deps:
            dparts = dep.split(".")
            if len(dparts) > 1 and dparts[1] in below[parts[1]]:
                bad.append(f"{m} -> {dep}")
    assert not bad, bad



def test_common_imports_nothing_but_common():
    """The shared helpers sit below every room and below the package root (whose import pulls in the contract)."""
    bad = [f"{m} -> {dep}" for m, deps in _graph().items() if m.startswith("logicval_hf.common")
           for dep in deps if not dep.startswith("logicval_hf.common")]
    assert not bad, bad


def test_command_modules_import_only_the_dispatcher():
    """``cli/main`` lists the groups; a group module never imports another group or ``main`` (even lazily)."""
    graph = _graph()
    groups = {m for m in graph if m.startswith("logicval_hf.cli.") and m.split(".")[-1] not in ("main", "__main__")}
    allowed = {"logicval_hf.cli.dispatch", "logicval_hf.cli.demo"}
    bad = [f"{m} -> {dep}" for m in sorted(groups) for dep in sorted(graph[m])
           if dep in (groups | {"logicval_hf.cli.main"}) - allowed]
    assert not bad, bad


def test_test_files_have_unique_names():
    """pytest imports a test file by its bare name (tests/ has no packages): two ``test_space.py`` in two folders
    make one of them fail to collect ("import file mismatch"), so every test file's name is unique."""
    seen: dict[str, list[str]] = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        if "__pycache__" not in path.parts and path.name != "conftest.py":
            seen.setdefault(path.name, []).append(path.relative_to(REPO).as_posix())
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"rename one of each: {clashes}"


def test_the_package_version_is_the_projects():
    import tomllib

    from logicval_hf.common.version import __version__

    assert tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"] == __version__


def _checkout_env(tmp_path: Path) -> dict[str, str]:
    """An interpreter that sees the checkout through PYTHONPATH only: the installed copy is hidden."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.path[:] = [p for p in sys.path if 'site-packages' not in p or 'logicval' not in p]\n"
        "import importlib.machinery\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__name__.lower()\n"
        "                    and '__editable__' not in getattr(f, '__module__', '')]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hide), str(REPO)]))
    return env


def _run(code: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=300)


def test_a_checkout_solves_without_being_installed(tmp_path):
    env = _checkout_env(tmp_path)
    code = (
        "import logicval_hf, pathlib\n"
        f"assert pathlib.Path(logicval_hf.__file__).resolve().is_relative_to({str(REPO)!r}), logicval_hf.__file__\n"
        "spec = {'n': 3, 'constraints': [{'template': 'C1/1prop', 'params': {"
        "'A1': {'prop': 'color', 'value': 'red', 'negated': False}}}]}\n"
        "r = logicval_hf.solve(spec)\n"
        "assert r.satisfiable and logicval_hf.verify(spec, r.witness).ok\n"
        "print('ok')\n")
    out = _run(code, env, tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_every_exported_name_resolves_the_lazy_ones_included():
    """``__all__`` is written out for static tools; it must name every lazy entry point and nothing missing."""
    import logicval_hf

    assert set(logicval_hf._LAZY) <= set(logicval_hf.__all__)
    assert len(set(logicval_hf.__all__)) == len(logicval_hf.__all__)
    missing = [name for name in logicval_hf.__all__ if getattr(logicval_hf, name, None) is None]
    assert not missing, missing


@pytest.mark.slow
def test_the_space_builds_from_a_checkout(tmp_path):
    """Hugging Face runs ``space/app.py`` from the repository: its app must build without an install."""
    pytest.importorskip("gradio")
    env = _checkout_env(tmp_path)
    env["LOGICVAL_ANNOTATION_ROOT"] = str(tmp_path / "annotations")
    env["LOGICVAL_SPACE_PRELOAD"] = "0"  # building the benchmark in the background is not what is tested here
    code = ("import runpy\n"
            f"ns = runpy.run_path({str(REPO / 'space' / 'app.py')!r}, run_name='space_app')\n"
            "assert type(ns['build_demo']()).__name__ == 'Blocks'\n"
            "print('ok')\n")
    out = _run(code, env, tmp_path)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


@pytest.mark.slow  # a fresh interpreter importing torch and diffusers; tests/training loads the script in-process
def test_the_lora_script_gets_past_its_imports_from_a_checkout(tmp_path):
    pytest.importorskip("diffusers")
    env = _checkout_env(tmp_path)
    out = subprocess.run([sys.executable, str(REPO / "lora_training" / "train_lora.py"), "--help"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0 and "usage" in out.stdout.lower(), out.stderr[-2000:]


def test_atomic_writes_replace_whole_files_with_the_usual_mode(tmp_path):
    from logicval_hf.common.atomic import atomic_write_json, atomic_write_text, remove_stale_temps

    target = tmp_path / "out" / "a.json"
    atomic_write_json(target, {"x": 1})
    atomic_write_text(target, "replaced\n", fsync=True)
    assert target.read_text() == "replaced\n"
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask
    with pytest.raises(RuntimeError):
        from logicval_hf.common.atomic import atomic_path

        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed mid-write")
    assert target.read_text() == "replaced\n" and sorted(p.name for p in target.parent.iterdir()) == ["a.json"]
    (target.parent / ".a.json.abc123.tmp").write_text("left by a crash")
    assert remove_stale_temps(tmp_path) == 1


def test_the_registry_suggests_close_names():
    from logicval_hf.common.registry import Registry, UnknownNameError

    reg = Registry("widget", {"oracle": 1, "naive": "json:loads"})
    assert reg.get("oracle") == 1 and callable(reg.get("naive")) and reg.names() == ["naive", "oracle"]
    with pytest.raises(UnknownNameError, match="did you mean 'oracle'"):
        reg.get("oracel")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("oracle", 2)
