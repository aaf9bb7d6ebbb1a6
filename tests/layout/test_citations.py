"""The repository stands alone: every Markdown file that code, docs or tests cite is in it, with the sections cited
("docs/regions.md §6", "[verbaliser](verbaliser.md) §2", "training.md#held-out-sets-of-a-world-kind"); no shipped
file points into a data folder beside the checkout; and the spec-language pages say what the code does (their
template table, prompt and domain example are checked against it)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: where citations are looked for: everything a user or a developer reads
ROOTS = ("logicval_hf", "asp", "docs", "tests", "benchmarks", "metric", "space", "lora_training", "dataset_builder",
         "README.md", "pyproject.toml")
#: what a user's clone ships (the files the before-stop hook checks for ``../shared``)
SHIPPED = ("logicval_hf", "docs", "README.md", "metric", "space", "lora_training")
TEXT = {".py", ".md", ".lp", ".toml", ".txt", ".json", ".yaml", ".yml", ".cfg", ".sh", ".html"}
#: Markdown files the tool writes into its output folders, named as outputs, not cited
OUTPUT_FILES = {"report.md", "meta.md"}
#: a Markdown file named in text; never the tail of a longer path such as ``{out}/report.md``
MD_PATH = r"(?<![\w.{}/-])((?:\.\./)*[\w.-]+(?:/[\w.-]+)*\.md)\b"
NUM = r"\d+(?:\.\d+)?"
SECTION_REF = re.compile(MD_PATH + rf"\)?\s*§\s*{NUM}(?:\s*-\s*{NUM})?(?:(?:,|\s+and)\s*§\s*{NUM}(?:\s*-\s*{NUM})?)*")
LINK = re.compile(r"\]\(([^)\s#]*)#([^)\s]+)\)")


def _files(roots: tuple[str, ...]) -> Iterator[Path]:
    for name in roots:
        top = REPO / name
        if top.is_file():
            yield top
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            for f in filenames:
                yield Path(dirpath) / f


def _text(path: Path) -> str | None:
    """A file's text, or None for a binary file (one with a NUL byte, as git grep -I judges)."""
    data = path.read_bytes()
    return None if b"\0" in data else data.decode("utf-8", errors="replace")


def _sources() -> list[tuple[Path, str]]:
    out = []
    for path in _files(ROOTS):
        if path.suffix in TEXT:
            text = _text(path)
            if text is not None:
                out.append((path, text))
    return out


def _basenames() -> dict[str, list[Path]]:
    names: dict[str, list[Path]] = {}
    for path in _files(ROOTS):
        if path.suffix == ".md":
            names.setdefault(path.name, []).append(path)
    return names


def _resolve(cited: str, where: Path, basenames: dict[str, list[Path]]) -> Path | None:
    """The file a citation names: a path from the repository's root or from the citing file's folder, or a bare
    name that one file of the repository has."""
    for base in (REPO, where.parent):
        if (base / cited).is_file():
            return (base / cited).resolve()
    found = basenames.get(cited, []) if "/" not in cited else []
    return found[0].resolve() if len(found) == 1 else None


def section_numbers(page: Path) -> set[str]:
    """The numbers of a page's numbered headings: ``## 6. Perceived scenes`` -> 6, ``### 3.1 Slots`` -> 3.1."""
    heads = re.findall(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", page.read_text(encoding="utf-8"), re.M)
    return set(heads)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    heads = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", page.read_text(encoding="utf-8"), re.M)
    return {slug(h) for h in heads}


def test_every_cited_markdown_file_is_in_the_repository():
    basenames = _basenames()
    bad = []
    for path, text in _sources():
        for m in re.finditer(MD_PATH, text):
            cited = m.group(1)
            if Path(cited).name in OUTPUT_FILES or _resolve(cited, path, basenames) is not None:
                continue
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{path.relative_to(REPO)}:{line}: {cited}")
    assert not bad, "Markdown files cited but not in the repository:\n" + "\n".join(bad)


def test_every_cited_section_exists():
    """A page cited with a section number (``docs/regions.md §6``; ranges ``§3-5`` and lists ``§2, §6`` too) has a
    numbered heading of that number, and a link's ``#anchor`` names a heading of the page it links to."""
    basenames = _basenames()
    bad, seen = [], 0
    for path, text in _sources():
        for m in SECTION_REF.finditer(text):
            page = _resolve(m.group(1), path, basenames)
            where = f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
            if page is None:
                bad.append(f"{where}: {m.group(1)} is not in the repository")
                continue
            have = section_numbers(page)
            for num in re.findall(NUM, m.group(0)[len(m.group(1)):]):
                seen += 1
                if num not in have:
                    bad.append(f"{where}: {m.group(1)} has no section {num} (it has {sorted(have)})")
        if path.suffix != ".md":
            continue
        for target, anchor in LINK.findall(text):
            if "://" in target:
                continue
            page = (path.parent / target).resolve() if target else path
            seen += 1
            if not page.is_file() or anchor not in anchors(page):
                bad.append(f"{path.relative_to(REPO)}: link {target}#{anchor} has no such heading")
    assert seen > 100, f"only {seen} section citations found: is the pattern still right?"
    assert not bad, "\n".join(bad)


def test_no_shipped_file_names_the_folder_beside_the_checkout():
    """A user's clone has no ``../shared``: shipped code, docs, help texts and cards name a command or a download."""
    bad = [str(p.relative_to(REPO)) for p in _files(SHIPPED) if "../shared" in (_text(p) or "")]
    assert not bad, f"shipped files naming ../shared: {bad}"


def test_the_hook_agrees_where_git_is_there():
    """The same check as the before-stop hook, through git (tracked files only)."""
    try:
        out = subprocess.run(["git", "grep", "-IlF", "../shared", "--", *SHIPPED], cwd=REPO, capture_output=True,
                             text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("git is not available")
    if out.returncode not in (0, 1):
        pytest.skip(f"not a git checkout ({out.stderr.strip()[:80]})")
    assert out.stdout == ""


# ---- the spec-language pages against the code ----------------------------------------------------------------


def _rows(page: str) -> dict[str, list[str]]:
    rows = {}
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([A-Z]\d/\w+)` \|(.*)\|$", line)
        if m:
            rows[m.group(1)] = [c.strip().replace("\\|", "|") for c in m.group(2).split(" | ")]
    return rows


def test_the_templates_page_lists_every_template_with_its_slots_and_example():
    from logicval_hf.cli.templates import template_table

    rows = _rows("templates.md")
    table = template_table(extensions=True)
    assert list(rows) == [t["id"] for t in table], "docs/templates.md lists other templates or another order"
    bad = []
    for t in table:
        slots, _rules, example = rows[t["id"]]
        named = [w for w in re.split(r",\s*(?![^()]*\))", slots) if w]
        names = [re.sub(r"^not ", "", w).split(" ")[0] for w in named]
        if names != t["slots"]:
            bad.append(f"{t['id']}: slots {names}, the catalog has {t['slots']}")
        if example != t["example"]:
            bad.append(f"{t['id']}: example\n  page: {example}\n  code: {t['example']}")
    assert not bad, "\n".join(bad)


def test_the_verbaliser_page_prints_the_prompt_the_code_writes():
    from logicval_hf.contract.verbalise import full_prompt

    text = (DOCS / "verbaliser.md").read_text(encoding="utf-8")
    section = text.split("## 5. ", 1)[1].split("\n## ", 1)[0]
    spec = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    prompt = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    assert full_prompt(spec) == prompt.rstrip("\n")


def test_the_domains_page_example_runs_as_printed(tmp_path):
    text = (DOCS / "domains.md").read_text(encoding="utf-8")
    section = text.split("## 7. ", 1)[1].split("\n## ", 1)[0]
    (tmp_path / "fruit.json").write_text(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True True"
