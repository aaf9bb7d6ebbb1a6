"""How every ``logicval`` command runs: bad input prints ``logicval: error: <what is wrong>`` and exits 2 (so does a
command that needs an extra that is not installed, with one line naming it); output piped into ``head`` and the
like ends quietly. Also the small JSON helpers the command groups share. Command modules import this one, never
each other or `logicval_hf.cli.main`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from logicval_hf.common.extras import MissingExtraError, missing_extra
from logicval_hf.common.reading import NotText, loads_json, read_text_capped
from logicval_hf.errors import SceneError, SolverTimeout, SpecError, UnsafeProgramError

__all__ = ["NO_BUDGET", "USER_ERRORS", "check_output_dir", "check_output_file", "dispatch", "emit", "hub_upload",
           "min_confidence", "min_confidence_option", "positive_int", "push_options",
           "read_json", "standalone", "standalone_main", "timeout_seconds"]

#: errors that mean bad input: reported in one line, exit status 2
USER_ERRORS = (SpecError, SceneError, UnsafeProgramError, SolverTimeout, ValueError, OSError)
#: what ``--timeout`` takes for "no time budget" (the library's ``timeout=None``)
NO_BUDGET = "none"


def timeout_seconds(text: str) -> float | None:
    """An argparse type for ``--timeout``: a positive number of seconds, or ``none`` for no budget."""
    if text.strip().lower() == NO_BUDGET:
        return None
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, or {NO_BUDGET!r} for no time "
                                         f"budget, got {text!r}")
    return v


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (a one-line usage error otherwise)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def min_confidence_option(p: argparse.ArgumentParser) -> None:
    """``--min-confidence T`` on a command that perceives images (read back with `min_confidence`)."""
    p.add_argument("--min-confidence", metavar="T", default=None,
                   help="set apart as unread (with the reason, scored neither as a pass nor as a failure) every "
                        "image whose scene graph's confidence is below T, a number in [0, 1], or that has none")


def min_confidence(args: argparse.Namespace) -> float | None:
    """``--min-confidence`` as a number in [0, 1] (None when not given); a one-line `ValueError` otherwise (checked
    here, not by argparse, whose refusal takes two lines)."""
    text = getattr(args, "min_confidence", None)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 1:
        raise ValueError(f"--min-confidence must be a number in [0, 1], got {text!r}")
    return value


def read_json(path: str, what: str, hint: str = "", binary_hint: str | None = None) -> Any:
    """A JSON file (or stdin for ``-``), read through the input cap (`logicval_hf.common.reading`); an unreadable,
    oversized, binary, empty, malformed or too deeply nested file is a one-line error naming it, ending with
    ``hint`` (``binary_hint`` instead for a binary file: an image given where JSON belongs)."""
    try:
        text = read_text_capped(path, what)
    except NotText:
        hint = hint if binary_hint is None else binary_hint
        raise ValueError(f"{what} {path!r} is not JSON text (a binary file, an image?): {what}s are JSON"
                         + (f"; {hint}" if hint else "")) from None
    if not text.strip():
        raise ValueError(f"{what} {path!r} is empty" + (f"; {hint}" if hint else ""))
    try:
        return loads_json(text, f"{what} {path!r}")
    except json.JSONDecodeError as e:
        raise ValueError(f"{what} {path!r} is not valid JSON: {e}" + (f"; {hint}" if hint else "")) from None


def _writable_parent(path: Path, flag: str) -> None:
    """The nearest existing folder above ``path`` must be a folder this process can write in."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {str(path)!r}: {str(parent)!r} is a file, so nothing can be written under it")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {str(path)!r}: no permission to write in {str(parent)!r}")


def check_output_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """A command's output folder, checked before any work: an existing file, a path under a file or an
    unwritable place is a one-line error naming ``flag`` (a folder that does not exist yet is created later)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{flag} {str(p)!r} is an existing file, not a folder: give a folder (created if missing)")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise ValueError(f"{flag} {str(p)!r}: no permission to write in this folder")
    else:
        _writable_parent(p, flag)
    return p


def check_output_file(path: str | os.PathLike[str], flag: str) -> Path:
    """A command's output file, checked before any work: a folder, a path under a file or an unwritable
    place is a one-line error naming ``flag`` (an existing file is replaced)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{flag} {str(p)!r} is a folder: give a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise ValueError(f"{flag} {str(p)!r}: no permission to replace this file")
    _writable_parent(p, flag)
    return p


def hub_upload(target: str) -> Callable[[argparse.Namespace], int]:
    """The handler of a ``push-*`` command: imports ``target`` (``"module:function"``) when the command runs and
    calls it with the folder (``args.dir``), ``--repo-id``, ``--dry-run`` and ``--private``."""
    def handler(args: argparse.Namespace) -> int:
        module, name = target.split(":")
        push = getattr(importlib.import_module(module), name)
        push(args.dir, repo_id=args.repo_id, dry_run=args.dry_run, private=args.private)
        return 0

    return handler


def push_options(p: argparse.ArgumentParser, kind: str, handler: Callable[[argparse.Namespace], int],
                 name_note: str = "") -> None:
    """``--repo-id``, ``--dry-run`` and ``--private`` of a command that uploads a ``kind`` ("dataset repository",
    "Space") with ``handler`` (a `hub_upload`)."""
    p.add_argument("--repo-id", default=None,
                   help=f"{kind}, owner/name ({name_note}default <namespace>/logicval, the namespace from "
                        "$LOGICVAL_HUB_NAMESPACE, else logicval)")
    p.add_argument("--dry-run", action="store_true", help="only list the files that would be uploaded")
    p.add_argument("--private", action="store_true", help=f"create the {kind} as private")
    p.set_defaults(func=handler)


def emit(obj: Any, pretty: bool) -> None:
    print(json.dumps(obj, indent=2 if pretty else None, separators=None if pretty else (",", ":")))


def dispatch(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        rc = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return rc
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly, as Unix tools do
        _silence_stdout()
        return 0
    except MissingExtraError as e:
        print(f"logicval: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # an optional stack imported deep inside a command
        missing = missing_extra(e, f"`logicval {args.command}`")
        if missing is None:
            raise
        print(f"logicval: error: {missing}", file=sys.stderr)
        return 2
    except USER_ERRORS as e:
        print(f"logicval: error: {e}", file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not report the broken pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (tests capture it)
        pass


def standalone_main(add_subcommands: Callable[[Any], None], argv: Sequence[str] | None, description: str) -> int:
    """Entry point of a command group run on its own (``python -m logicval_hf.cli.<group>``), with the
    same handling of bad input as ``logicval``."""
    parser = argparse.ArgumentParser(prog="logicval", description=description)
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    return dispatch(parser, argv)


class EntryPoint(Protocol):
    """A command group's ``main``: runs ``argv`` (default: the command line) and returns the exit status."""

    def __call__(self, argv: Sequence[str] | None = None) -> int: ...


def standalone(add_subcommands: Callable[[Any], None], description: str) -> EntryPoint:
    """A command group's ``main(argv=None)``: `standalone_main` over its subcommands."""
    def main(argv: Sequence[str] | None = None) -> int:
        return standalone_main(add_subcommands, argv, description)

    main.__doc__ = f"{description} Standalone entry point with the ``logicval`` error convention."
    return main
