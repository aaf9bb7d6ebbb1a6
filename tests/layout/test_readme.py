"""Every Python snippet of the README (and of the docs pages of the dataset, the metric and the Space) runs as
printed, and every ``logicval`` command they name exists with the flags they give it. Each snippet runs in a
fresh interpreter from a folder laid out as the README assumes: the repository's ``metric/`` beside it and a
dataset built at ``path/to/logicval``."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", REPO / "docs" / "dataset.md", REPO / "docs" / "metric_and_space.md"]
SNIPPETS = [(page.relative_to(REPO).as_posix(), code) for page in PAGES
            for code in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]


def test_the_readme_has_python_snippets():
    assert sum(page == "README.md" for page, _ in SNIPPETS) >= 2
    assert len(SNIPPETS) >= 4


def test_the_readme_is_reference_sized():
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 300


def test_every_relative_link_of_the_pages_resolves():
    """The README is an index of docs/: every page it (or a docs page of the front door) links to exists, anchors
    included."""
    bad = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                bad.append(f"{page.relative_to(REPO)} -> {target}")
    assert not bad, bad


def _commands(text: str) -> list[str]:
    """``logicval ...`` commands: inline code spans, and lines of bash blocks (comments cut)."""
    spans = re.findall(r"`(logicval [^`]+)`", text)
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in re.split(r"&&|;|\|", line.split(" #")[0]):
                words = part.split()
                while words and ("=" in words[0] or words[0] in ("pip", "python3")):
                    words = words[1:] if "=" in words[0] else []
                if words and words[0].endswith("logicval"):
                    spans.append(" ".join(["logicval", *words[1:]]))
    return spans


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def test_every_command_the_docs_name_exists_with_its_flags():
    from logicval_hf.cli.main import build_parser

    commands = _subparsers(build_parser())
    bad = []
    for page in PAGES:
        for text in _commands(page.read_text(encoding="utf-8")):
            for alternative in text.split(" / "):
                words = shlex.split(alternative.replace("\\|", "|").replace("...", ""))
                if words[0] != "logicval" or len(words) < 2 or words[1].startswith("-"):
                    continue
                parser = commands.get(words[1])
                if parser is None:
                    bad.append(f"{page.name}: {alternative!r}: no command {words[1]!r}")
                    continue
                inner = _subparsers(parser)
                if inner and len(words) > 2 and words[2] in inner:
                    parser = inner[words[2]]
                known = {opt for action in parser._actions for opt in action.option_strings}
                flags = {w.split("=")[0] for w in re.findall(r"--[a-z][a-z-]*", alternative)}
                bad += [f"{page.name}: {alternative!r}: no flag {f}" for f in sorted(flags - known)]
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def readers_folder(tmp_path_factory):
    from logicval_hf.benchmark.dataset import write_dataset
    from logicval_hf.benchmark.sampler import cached_benchmark

    folder = tmp_path_factory.mktemp("reader")
    (folder / "metric").symlink_to(REPO / "metric", target_is_directory=True)
    write_dataset(folder / "path" / "to" / "logicval", benchmark=cached_benchmark())
    return folder


@pytest.mark.slow  # a fresh interpreter per snippet; the metric's imports torch (~8 s)
@pytest.mark.parametrize("k", range(len(SNIPPETS)), ids=[f"{page}-{k + 1}" for k, (page, _) in enumerate(SNIPPETS)])
def test_every_python_snippet_runs_as_printed(readers_folder, k):
    page, code = SNIPPETS[k]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(readers_folder / "hf")}
    out = subprocess.run([sys.executable, "-c", code], cwd=readers_folder, env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert out.returncode == 0, f"{page}, snippet {k + 1} failed:\n{code}\n{out.stderr[-3000:]}"
