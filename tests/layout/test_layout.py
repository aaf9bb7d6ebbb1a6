"""The package's shape: rooms by role, imports that run one way, and a checkout that works uninstalled."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "logicval_hf"
ROOMS = {"contract", "asp", "benchmark", "perception", "scoring", "generation", "training", "job", "cli", "space",
         "common", "serve"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts}


def _top_level_imports(path: Path, modules: set[str]) -> set[str]:
    """Package modules imported when ``path`` is imported (module level, not inside functions or TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = _module_name(path)
    out: set[str] = set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                continue
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in modules:
                        out.add(a.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join(pkg + ([node.module] if node.module else []))
                for a in node.names:
                    if f"{base}.{a.name}" in modules:
                        out.add(f"{base}.{a.name}")
                    elif base in modules:
                        out.add(base)

    visit(tree.body)
    out.discard(me)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state, stack = [], {}, []

    def dfs(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cycles.append(stack[stack.index(v):] + [v])
            elif v not in state:
                dfs(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            dfs(u)
    return cycles


def test_no_import_cycle_among_the_package_modules():
    mods = _modules()
    graph = {m: _top_level_imports(p, set(mods)) for m, p in mods.items()}
    assert not _cycles(graph), "\n".join(" -> ".join(c) for c in _cycles(graph))


def test_the_package_root_holds_only_a_handful_of_modules_and_the_rooms():
    top_modules = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top_modules) <= 4, top_modules
    rooms = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert rooms == ROOMS, rooms ^ ROOMS


def test_lower_rooms_never_import_higher_ones():
    """The flow is one way: the contract knows nothing of solving, scoring, generating or the job."""
    below = {"contract": {"asp", "benchmark", "perception", "scoring", "generation", "training", "job", "cli", "space",
                          "serve"},
             "asp": {"benchmark", "perception", "scoring", "generation", "training", "job", "cli", "space", "serve"},
             "common": ROOMS - {"common"},
             "perception": {"scoring", "generation", "training", "job", "cli", "space", "serve"}}
    mods = _modules()
    bad = []
    for m, p in mods.items():
        parts = m.split(".")
        if len(parts) < 2 or parts[1] not in below:
            continue
        for dep in _top_level_imports(p, set(mods)):
            dparts = dep.split(".")
            if len(dparts) > 1 and dparts[1] in below[parts[1]]:
                bad.append(f"{m} -> {dep}")
    assert not bad, bad



def test_common_imports_nothing_but_common():
    """The shared helpers sit below every room and below the package root (whose import pulls in the contract)."""
    mods = _modules()
    bad = [f"{m} -> {dep}" for m, p in mods.items() if m.startswith("logicval_hf.common")
           for dep in _top_level_imports(p, set(mods)) if not dep.startswith("logicval_hf.common")]
    assert not bad, bad

def test_command_modules_import_only_the_dispatcher():
    """``cli/main`` lists the groups; a group module never imports another group or ``main`` (even lazily)."""
    mods = _modules()
    groups = {m for m in mods if m.startswith("logicval_hf.cli.") and m.split(".")[-1] not in ("main", "__main__")}
    bad = []
    for m in groups:
        src = mods[m].read_text(encoding="utf-8")
        for other in groups | {"logicval_hf.cli.main"}:
            if other not in (m, "logicval_hf.cli.dispatch", "logicval_hf.cli.demo") and (
                    f"from {other} import" in src or f"import {other}" in src):
                bad.append(f"{m} -> {other}")
    assert not bad, bad


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
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
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
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
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
