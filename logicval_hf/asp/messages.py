"""clingo's messages, safe for any bytes: every `clingo.Control` and parse of the package is made here.

clingo hands each warning and error to a Python logger through one C callback, which decodes the message as UTF-8
before the logger sees it. A lexer error in the middle of a multi-byte character (``p(é).``: clingo reports the
byte ``\\xc3`` alone) makes that decode raise inside a C++ ``noexcept`` frame, and clingo ends the whole process
("PANIC: exception in nothrow scope", exit 1), whatever ``except`` surrounds the call. Importing this module
replaces that callback, once per process, by one that decodes with ``backslashreplace`` (the byte is shown as
``\\xc3``) and never lets an exception out: the parse then fails as any syntax error does, with a `RuntimeError`
and the messages collected. The replacement is process-wide (clingo has one callback), and only changes what
would otherwise have ended the process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import clingo

__all__ = ["Messages", "control", "install", "parse_string"]

#: a logger: ``(code, message)``
Logger = Callable[[Any, str], None]

_installed = False


def install() -> bool:
    """Replace clingo's logger callback by the tolerant one (module docstring); idempotent.

    Returns:
        Whether the replacement is in place (False only for a clingo whose internals differ from the 5.x ones
        this was written for; tests/asp/test_messages.py fails then).
    """
    global _installed  # noqa: PLW0603  one C callback per process: replaced once
    if _installed:
        return True
    try:
        from clingo import core
        from clingo._internal import _ffi
    except ImportError:  # pragma: no cover - another clingo layout
        return False

    def quiet(*_: Any) -> None:  # what the callback raised (nothing can): dropped, never a panic
        return None

    def tolerant(code: int, message: Any, data: Any) -> None:
        try:
            handler = _ffi.from_handle(data)
            handler(core.MessageCode(code), _ffi.string(message).decode("utf-8", "backslashreplace"))
        except Exception:  # noqa: BLE001  a logger's own failure must not end the process
            pass

    _ffi.def_extern(onerror=quiet, name="pyclingo_logger_callback")(tolerant)
    _installed = True
    return True


install()


class Messages(list[str]):
    """A logger that keeps clingo's messages (each stripped, on one line); ``summary`` joins them."""

    def __call__(self, code: Any, message: str) -> None:
        self.append(" ".join(message.split()))

    def summary(self, default: str = "") -> str:
        return "; ".join(self) or default


def _silent(code: Any, message: str) -> None:
    return None


def control(args: Sequence[str], logger: Logger | None = None) -> clingo.Control:
    """A `clingo.Control` with ``args`` whose messages go to ``logger`` (default: dropped; a `Messages` keeps
    them), through the tolerant callback."""
    return clingo.Control(list(args), logger=logger if logger is not None else _silent)


def parse_string(text: str, callback: Callable[[Any], None], logger: Logger | None = None) -> None:
    """`clingo.ast.parse_string` with its messages sent to ``logger`` (default: dropped).

    Raises:
        RuntimeError: the text does not parse (the logger got clingo's messages).
    """
    from clingo import ast

    ast.parse_string(text, callback, logger=logger if logger is not None else _silent)
