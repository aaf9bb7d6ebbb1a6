"""Untrusted ASP text (e.g. a dataset row's program): refuse file access and code, bound the time.

clingo's ``#include`` reads any path (even from `clingo.ast.parse_string`), ``#script`` runs code once
anything enables it, and ``@f(...)`` terms call Python. Text is refused if it contains any of them, first by a
regular expression on the raw text (so nothing is ever parsed with an include in it), then by walking the AST.
Grounding cannot be interrupted in-process, so solving runs in a child process with a wall-clock timeout and
a memory cap.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from logicval_hf.errors import SolverTimeout, UnsafeProgramError

_FORBIDDEN = re.compile(r"#\s*(include|script|python|lua|end)\b|@\s*[A-Za-z_]", re.IGNORECASE)
MAX_PROGRAM_CHARS = 2_000_000


def check_program(text: object) -> str:
    """Return ``text`` if it is safe to ground, else raise `UnsafeProgramError` saying why."""
    if not isinstance(text, str):
        raise UnsafeProgramError(f"ASP program must be a string, got {type(text).__name__}")
    if len(text) > MAX_PROGRAM_CHARS:
        raise UnsafeProgramError(f"ASP program is too long ({len(text)} characters, limit {MAX_PROGRAM_CHARS})")
    m = _FORBIDDEN.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise UnsafeProgramError(
            f"ASP program line {line}: {m.group(0).strip()!r} is not allowed in untrusted programs "
            "(no #include, #script or @-functions: they read files or run code)"
        )
    _check_ast(text)
    return text


def _check_ast(text: str) -> None:
    from clingo import ast

    from logicval_hf.asp.messages import Messages, parse_string

    problems: list[str] = []
    messages = Messages()

    def visit(node: object) -> None:
        if isinstance(node, ast.AST):
            if node.ast_type == ast.ASTType.Script:
                problems.append("#script")
            if node.ast_type == ast.ASTType.Function and getattr(node, "external", False):
                problems.append(f"@{node.name}")
            loc = getattr(node, "location", None)
            if loc is not None and loc.begin.filename not in ("<string>", "<stdin>", ""):
                problems.append(f"content from {loc.begin.filename}")
            for key in node.child_keys:
                visit(getattr(node, key))
        elif isinstance(node, (list, tuple, ast.ASTSequence)):
            for child in node:
                visit(child)

    try:
        parse_string(text, visit, messages)
    except RuntimeError:
        raise UnsafeProgramError(f"ASP program does not parse: {messages.summary('syntax error')}") from None
    if problems:
        raise UnsafeProgramError(f"ASP program uses forbidden constructs: {sorted(set(problems))}")


@dataclass(frozen=True)
class ProgramResult:
    """Outcome of solving an untrusted program: satisfiability and the first model's shown atoms."""

    satisfiable: bool
    model: tuple[str, ...]

    @property
    def label(self) -> str:
        return "SAT" if self.satisfiable else "UNSAT"

    def to_dict(self) -> dict:
        return {"label": self.label, "satisfiable": self.satisfiable, "model": list(self.model)}


def run_program(text: str, timeout: float = 10.0, memory_mb: int = 2048) -> ProgramResult:
    """Check and solve untrusted ASP text in a child process.

    Args:
        text: the program.
        timeout: wall-clock seconds for grounding and solving together.
        memory_mb: address-space cap of the child process.
    Returns:
        A `ProgramResult`.
    Raises:
        UnsafeProgramError: the text reads files, runs code, or does not parse.
        SolverTimeout: grounding + solving took longer than ``timeout``.
    """
    check_program(text)
    payload = json.dumps({"program": text, "memory_mb": memory_mb})
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "logicval_hf.asp.sandbox"],
            input=payload,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,  # a non-zero exit is reported below (memory budget or the child's last line)
        )
    except subprocess.TimeoutExpired:
        raise SolverTimeout(f"ASP program exceeded its time budget of {timeout} s") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        if "MemoryError" in proc.stderr or "std::bad_alloc" in proc.stderr:
            raise SolverTimeout(f"ASP program exceeded its memory budget of {memory_mb} MB")
        raise UnsafeProgramError(f"ASP program failed: {tail[0]}")
    out = json.loads(proc.stdout)
    if "error" in out:
        raise UnsafeProgramError(f"ASP program failed: {out['error']}")
    return ProgramResult(bool(out["satisfiable"]), tuple(out["model"]))
