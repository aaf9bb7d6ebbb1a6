"""How every ``logicval`` command runs: bad input prints ``logicval: error: <what is wrong>`` and exits 2 (so does a
command that needs an extra that is not installed, with one line naming it, and a usage error: `OneLineParser`);
Ctrl-C ends with one line and exit status 130; output piped into ``head`` and the like ends quietly. Also what the
command groups share: the options every command spells alike (``--timeout``, ``--setting``, ``--min-confidence``),
the perception backend's check before any work, input and output paths checked before any work, and the small
JSON helpers. Command modules import this one, never each other or `logicval_hf.cli.main`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

from logicval_hf.common.extras import MissingExtraError, missing_extra
from logicval_hf.common.reading import NotText, loads_json, read_text_capped
from logicval_hf.errors import SceneError, SolverTimeout, SpecError, UnsafeProgramError

__all__ = ["EXIT_INTERRUPTED", "MAX_SECONDS", "NO_BUDGET", "RELAXED_HELP", "USER_ERRORS", "Interrupted",
           "OneLineParser", "backend_options", "backend_settings", "check_backend", "check_output_dir",
           "check_output_file", "dispatch", "emit", "hub_upload", "input_file", "label_timeout_option",
           "min_confidence", "min_confidence_option", "positive_int", "positive_seconds", "push_options",
           "read_json", "setting", "settings_option", "standalone", "standalone_main", "timeout_option",
           "timeout_seconds"]

#: errors that mean bad input: reported in one line, exit status 2
USER_ERRORS = (SpecError, SceneError, UnsafeProgramError, SolverTimeout, ValueError, OSError)
#: what ``--timeout`` takes for "no time budget" (the library's ``timeout=None``)
NO_BUDGET = "none"
#: the longest time budget a command takes in seconds (about 11 days; beyond it: ``none``, or a mistake)
MAX_SECONDS = 1e6
#: exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130
#: the help of ``--relaxed`` on every command that gives a verdict
RELAXED_HELP = "count-relaxed verdict: every constraint must hold, the number of objects may differ from n"


class OneLineParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose usage errors are one line, ``logicval: error: <what is wrong> (see
    `<command> --help`)``, exit status 2, as every other bad input (argparse prints the usage first; its subparsers
    are of the same class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"logicval: error: {message} (see `{self.prog} --help`)\n")


class Interrupted(Exception):
    """Ctrl-C, told in one line: what was kept and how to go on (`dispatch` prints it, exit status 130)."""


def _seconds(text: str, none_ok: bool) -> float | None:
    if none_ok and text.strip().lower() == NO_BUDGET:
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 < v <= MAX_SECONDS:
        none = f", or {NO_BUDGET!r} for no time budget" if none_ok else ""
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds (at most {MAX_SECONDS:.0f}){none}, "
                                         f"got {text!r}")
    return v


def timeout_seconds(text: str) -> float | None:
    """An argparse type for ``--timeout``: a positive number of seconds, or ``none`` for no budget."""
    return _seconds(text, none_ok=True)


def positive_seconds(text: str) -> float:
    """An argparse type for a ``--timeout`` that must be bounded: a positive number of seconds."""
    v = _seconds(text, none_ok=False)
    assert v is not None
    return v


def timeout_option(p: argparse.ArgumentParser, default: float | None, what: str, none_ok: bool = True,
                   flag: str = "--timeout") -> None:
    """``--timeout SECONDS``, read the same way by every command: a positive number of seconds up to
    `MAX_SECONDS` (``inf``, ``nan``, 0 and negative numbers are a one-line usage error), or ``none`` for no budget
    where ``none_ok``.

    Args:
        p: the command's parser.
        default: the default (None: no budget).
        what: what the seconds bound, and what happens past them (the help text after the default).
        none_ok: whether ``none`` (no budget) is allowed.
        flag: the option's name.
    """
    shown = NO_BUDGET if default is None else f"{default:g}"
    none = f"; {NO_BUDGET!r}: no budget" if none_ok else ""
    p.add_argument(flag, type=timeout_seconds if none_ok else positive_seconds, default=default, metavar="SECONDS",
                   help=f"{what} (default {shown}{none})")


def label_timeout_option(p: argparse.ArgumentParser) -> None:
    """``--timeout`` of a command that labels a spec (`solve`, `verify`, `check`): the solver's default budget."""
    from logicval_hf.asp.budget import DEFAULT_TIMEOUT

    timeout_option(p, DEFAULT_TIMEOUT, "time budget for labelling a spec; past it: exit 2 with a one-line error, "
                                       "never a label")


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


def setting(text: str) -> tuple[str, Any]:
    """An argparse type for ``--setting KEY=VALUE``: the value read as JSON when it is JSON (``false``, ``0.4``,
    ``null``), else as text."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def settings_option(p: argparse.ArgumentParser, example: str = "") -> None:
    """``--setting KEY=VALUE``, repeatable: a perception backend's settings (read back with `backend_settings`)."""
    p.add_argument("--setting", action="append", type=setting, metavar="KEY=VALUE",
                   help="a setting of the perception backend, repeatable (vlm: --setting url=URL --setting "
                        "model=NAME, and api_key_env, timeout, boxes, ...: docs/vlm.md; clevr: second_look=false"
                        f"{example}); checked before any work")


def backend_options(p: argparse.ArgumentParser, what: str = "images") -> None:
    """``--backend NAME`` and ``--setting KEY=VALUE`` of a command that perceives ``what``."""
    p.add_argument("--backend", default="clevr",
                   help=f"perception backend for {what}: clevr (default, the shipped CLEVR scene parser), neural "
                        "(Grounding DINO + CLIP; extra 'neural'; any domain, e.g. COCO), vlm (a grounding VLM behind "
                        "an OpenAI-compatible endpoint: --setting url=URL --setting model=NAME), or any registered one")
    settings_option(p)


def backend_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--setting`` pairs as a dict (a key given twice: the last wins)."""
    return dict(getattr(args, "setting", None) or ())


def check_backend(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A command's perception backend and its settings checked before any work (`logicval_hf.perception.check_backend`:
    an unknown backend, a missing extra, an unknown ``domain``, a setting the backend refuses: one line each).

    Returns:
        The settings, as a dict.
    """
    from logicval_hf.perception import check_backend as check

    check(name, settings)
    return dict(settings)


def input_file(path: str, what: str, hint: str = "") -> Path:
    """An input file that must exist and be a file: a missing one, a folder or something unreadable is a one-line
    error naming it (and ``hint``: what to give instead)."""
    p = Path(path)
    why = None
    if p.is_dir():
        why = "it is a folder, not a file"
    elif not p.exists():
        why = "no such file"
    elif not os.access(p, os.R_OK):
        why = "no permission to read it"
    if why is not None:
        raise ValueError(f"cannot read {what} {path!r}: {why}" + (f"; {hint}" if hint else ""))
    return p


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


def _can_write_in(folder: Path, path: Path, flag: str) -> None:
    """Create and remove a file in ``folder``: the only sure test (as root, `os.access` says yes to /proc)."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".logicval-probe-")
    except OSError as e:
        raise ValueError(f"{flag} {str(path)!r}: cannot write in {str(folder)!r} "
                         f"({e.strerror or type(e).__name__})") from None
    os.close(fd)
    os.unlink(probe)


def _writable_parent(path: Path, flag: str) -> None:
    """The nearest existing folder above ``path`` must be a folder this process can write in."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"{flag} {str(path)!r}: {str(parent)!r} is a file, so nothing can be written under it")
    _can_write_in(parent, path, flag)


def check_output_dir(path: str | os.PathLike[str], flag: str) -> Path:
    """A command's output folder, checked before any work: an existing file, a path under a file or a place where
    nothing can be written is a one-line error naming ``flag`` (a folder that does not exist yet is created later)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{flag} {str(p)!r} is an existing file, not a folder: give a folder (created if missing)")
    if p.is_dir():
        _can_write_in(p, p, flag)
    else:
        _writable_parent(p, flag)
    return p


def check_output_file(path: str | os.PathLike[str], flag: str) -> Path:
    """A command's output file, checked before any work: a folder, a path under a file or a place where nothing
    can be written is a one-line error naming ``flag`` (an existing file is replaced)."""
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
    """Run the command ``argv`` names (default: the command line); returns its exit status: 0, 2 for bad input
    (one line), 130 for Ctrl-C (one line). Usage errors, ``--help`` and ``--version`` exit through argparse."""
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        rc = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return rc
    except (KeyboardInterrupt, Interrupted) as e:  # Ctrl-C: one line, never a traceback
        note = str(e) if isinstance(e, Interrupted) else "interrupted"
        print(f"logicval: {note}", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
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
    except UnicodeDecodeError as e:  # read deep inside a command, which did not say which file: the files it was given
        print(f"logicval: error: {_undecodable(args, e)}", file=sys.stderr)
        return 2
    except USER_ERRORS as e:
        print(f"logicval: error: {e}", file=sys.stderr)
        return 2
    except RecursionError:  # JSON or a spec nested thousands deep: bad input, not a crash
        print("logicval: error: the input is nested too deeply to be read", file=sys.stderr)
        return 2


def _undecodable(args: argparse.Namespace, e: UnicodeDecodeError) -> str:
    """A decoding error said with the file it most likely came from: the command's one file argument (or its file
    arguments, when several), since the error itself names none."""
    what = f"byte {e.object[e.start:e.start + 1]!r} at offset {e.start} cannot be decoded as {e.encoding}"
    files = []
    for value in vars(args).values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, (str, os.PathLike)) and str(v) not in files and os.path.isfile(v):
                files.append(str(v))
    if len(files) == 1:
        return f"{files[0]!r} is not UTF-8 text: {what}"
    if files:
        return f"one of the files given ({', '.join(repr(f) for f in files)}) is not UTF-8 text: {what}"
    return f"an input is not UTF-8 text: {what}"


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
    parser = OneLineParser(prog="logicval", description=description)
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
