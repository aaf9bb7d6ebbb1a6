"""One judge: images become scene graphs in `logicval_hf.perception` and, for everything downstream of it, only
through the judge (`logicval_hf.scoring.judge`), so that the domain always comes from the spec and one bad image
costs one entry everywhere. No other module names ``extract_scene`` or ``extract_scenes`` (imported, called or
reached as an attribute); the package root only lists them among its lazy public names."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "logicval_hf"
NAMES = {"extract_scene", "extract_scenes"}
#: the modules that may: perception itself, the judge, and the package root's lazy public names
ALLOWED = ("perception/", "scoring/judge.py", "__init__.py")


def _uses(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            hit = any(a.name.rsplit(".", 1)[-1] in NAMES for a in node.names)
        elif isinstance(node, ast.Attribute):
            hit = node.attr in NAMES
        elif isinstance(node, ast.Name):
            hit = node.id in NAMES
        else:
            hit = False
        if hit:
            lines.append(node.lineno)
    return lines


def _offenders() -> list[str]:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(ALLOWED[0]) or rel in ALLOWED[1:]:
            continue
        text = path.read_text(encoding="utf-8")
        if "extract_scene" in text:  # parsed only where the name occurs at all
            out += [f"logicval_hf/{rel}:{line}" for line in _uses(ast.parse(text))]
    return out


def test_nothing_outside_perception_and_the_judge_reads_images_into_scenes():
    offenders = _offenders()
    assert not offenders, "call the judge (logicval_hf.scoring.judge: judge, read_scenes) instead:\n" + \
        "\n".join(offenders)


def test_the_check_sees_every_way_of_naming_them():
    """The rule rests on the reader: an import, a call and an attribute are each found."""
    for source in ("from logicval_hf.perception import extract_scenes",
                   "import logicval_hf.perception as p\np.extract_scene(x)",
                   "def f(x):\n    from logicval_hf import perception\n    return perception.extract_scenes([x])"):
        assert _uses(ast.parse(source)), source
    assert not _uses(ast.parse("from logicval_hf.scoring.judge import read_scenes\nread_scenes([x])"))
