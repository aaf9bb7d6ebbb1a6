"""The top-level ``asp/`` folder: the one copy of the ASP programs, run by plain clingo as its README shows, and found
by the package both from an uninstalled checkout and from an installed wheel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import clingo
import pytest

from logicval_hf.asp.programs import program_dir, read_program

REPO = Path(__file__).resolve().parents[2]
ASP = REPO / "asp"
FILES = sorted(p.relative_to(ASP).as_posix() for p in ASP.rglob("*.lp"))


def _readme_example() -> tuple[str, list[str]]:
    """The facts block and the files of the clingo command in asp/README.md."""
    text = (ASP / "README.md").read_text(encoding="utf-8")
    facts = re.search(r"```prolog\n(.*?)```", text, re.S).group(1)
    command = re.search(r"```bash\n(clingo .*?)\n```", text, re.S).group(1).split()[1:]
    files = [str(p.relative_to(REPO)) for arg in command if arg != "facts.lp" for p in sorted(REPO.glob(arg))]
    return facts, files


def test_the_package_reads_the_top_level_folder_in_a_checkout():
    assert program_dir().resolve() == ASP.resolve()
    assert len(FILES) >= 15 and "templates/C9.lp" in FILES
    for name in FILES:
        assert read_program(name) == (ASP / name).read_text(encoding="utf-8")


def test_the_readme_example_runs_with_plain_clingo(tmp_path):
    """The command of asp/README.md, as a user types it (``python -m clingo`` is the same program), finds a witness;
    the spec made contradictory is UNSAT."""
    facts, files = _readme_example()
    (tmp_path / "facts.lp").write_text(facts)
    run = subprocess.run([sys.executable, "-m", "clingo", *files, str(tmp_path / "facts.lp")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert "SATISFIABLE" in run.stdout and "UNSATISFIABLE" not in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    answer = run.stdout.split("Answer: 1")[1].splitlines()[1].split()
    red = {a[len("hasProperty("):].split(",")[0] for a in answer if a.endswith(",color,red)")}
    cubes = {a[len("hasProperty("):].split(",")[0] for a in answer if a.endswith(",shape,cube)")}
    assert red and red <= cubes  # every red object is a cube, and there is one (the C4 constraint's B)
    ctl = clingo.Control(["--warn=none"])
    for f in files:
        ctl.load(str(REPO / f))
    ctl.add("base", [], facts + "attr_param(2,a1,shape,cube,pos). constraint(2,\"C2/1prop\").\n")
    ctl.ground([("base", [])])
    assert not ctl.solve().satisfiable  # "every object is a cube" beside "some sphere ...": contradictory


def _isolated_env(tmp_path: Path, site: Path) -> dict[str, str]:
    """An interpreter that sees the package only in ``site``: the checkout and any installed copy are hidden."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\n"
        "sys.path[:] = [p for p in sys.path if 'site-packages' not in p or 'logicval' not in p]\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in type(f).__name__.lower()\n"
        "                    and '__editable__' not in getattr(f, '__module__', '')]\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(hide), str(site)]))


@pytest.mark.slow  # builds a wheel (setuptools, no network: no build isolation)
def test_an_installed_wheel_carries_the_programs(tmp_path):
    src = tmp_path / "src"
    for part in ("logicval_hf", "asp"):
        shutil.copytree(REPO / part, src / part, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / part, src / part)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next((tmp_path / "dist").glob("logicval_hf-*.whl"))
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(site)
    assert {f"logicval_hf/asp/lp/{name}" for name in FILES} <= names
    assert not (site / "logicval_hf" / "asp" / "lp").is_symlink()  # real files in the wheel
    code = (
        "import pathlib, logicval_hf\n"
        "from logicval_hf.asp.programs import program_dir, read_program\n"
        f"site = pathlib.Path({str(site)!r})\n"
        "assert pathlib.Path(logicval_hf.__file__).resolve().is_relative_to(site), logicval_hf.__file__\n"
        "assert program_dir().resolve().is_relative_to(site), program_dir()\n"
        f"expected = {{n: (pathlib.Path({str(ASP)!r}) / n).read_text() for n in {FILES!r}}}\n"
        "assert all(read_program(n) == t for n, t in expected.items())\n"
        "spec = {'n': 3, 'constraints': [{'template': 'C1/1prop', 'params': {"
        "'A1': {'prop': 'color', 'value': 'red', 'negated': False}}}]}\n"
        "assert logicval_hf.solve(spec).satisfiable\n"
        "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], env=_isolated_env(tmp_path, site), cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
