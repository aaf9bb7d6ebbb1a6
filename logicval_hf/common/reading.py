"""Input files read through one size cap, and JSON values through one nesting cap.

Every spec, scene graph and ASP program a command reads comes through `read_text_capped`: at most `MAX_INPUT_BYTES`
are read (``/dev/zero``, a FIFO that never ends or a multi-gigabyte file given by mistake is a one-line error
naming the file, not a MemoryError after reading it all); bytes that are not UTF-8 are an error naming the file
and the byte. JSON goes through `loads_json`: a value nested deeper than `MAX_JSON_DEPTH` (a spec is 5 levels deep,
a scene graph 6) is refused by name, where ``json.loads`` and every recursive walk after it would raise
RecursionError. A JSON-lines file is read line by line through `capped_lines`, each line under the same cap.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any

__all__ = ["MAX_INPUT_BYTES", "MAX_JSON_DEPTH", "InputTooLarge", "NotText", "capped_lines", "check_nesting",
           "loads_json", "read_capped", "read_text_capped"]

#: the most bytes read from one input file (a spec, a scene graph, a program; a line of a JSON-lines file): a spec
#: is under 2 KB, a scene graph of the most objects a scene may hold (`logicval_hf.contract.scene`) under 1 MB
MAX_INPUT_BYTES = 16 * 2**20
#: the deepest nesting of a JSON value admitted (a spec is 5 levels deep, a scene graph with probabilities 5)
MAX_JSON_DEPTH = 64


class InputTooLarge(ValueError):
    """An input file, line or value over its cap (a `ValueError`: a command reports it in one line, exit 2)."""


class NotText(ValueError):
    """An input file that is not UTF-8 text (a binary file, an image given where text belongs)."""


def _describe(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"


def read_capped(path: str, what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of file ``path`` (``-``: standard input), at most ``limit`` of them.

    Args:
        path: the file.
        what: what the file is, for messages ("spec", "program").
        limit: the cap in bytes.
    Raises:
        InputTooLarge: the file holds more than ``limit`` bytes (only ``limit + 1`` were read).
        ValueError: it cannot be opened or read (the message names it and why).
    """
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read(limit + 1) if stream is not None else sys.stdin.read(limit + 1).encode("utf-8")
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as e:
        raise ValueError(f"cannot read {what} {path!r}: {e.strerror or e}") from None
    if len(data) > limit:
        raise InputTooLarge(f"{what} {path!r} is larger than {_describe(limit)}, the cap on a {what} file (is it "
                            "the right file?)")
    return data


def read_text_capped(path: str, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """`read_capped`, decoded as UTF-8.

    Raises:
        InputTooLarge: over ``limit``.
        NotText: not UTF-8 (the message names the file and the first bad byte).
        ValueError: unreadable.
    """
    data = read_capped(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotText(f"{what} {path!r} is not UTF-8 text (byte {e.start}: {e.reason})") from None


def check_nesting(value: Any, what: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``value`` when no list or dict in it is nested more than ``limit`` deep (walked without recursion).

    Raises:
        InputTooLarge: it is.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        x, depth = stack.pop()
        if not isinstance(x, (dict, list)):
            continue
        children: Iterable[Any] = x.values() if isinstance(x, dict) else x
        if depth > limit:
            raise InputTooLarge(f"{what} nests deeper than {limit} levels")
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return value


def loads_json(text: str | bytes, what: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)`` with its nesting capped (`check_nesting`): a value nested past Python's recursion
    limit is the same one-line refusal, not a RecursionError.

    Raises:
        json.JSONDecodeError: not JSON.
        InputTooLarge: nested deeper than ``limit``.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise InputTooLarge(f"{what} nests deeper than {limit} levels") from None
    return check_nesting(value, what, limit)


def capped_lines(stream: IO[str], what: str, limit: int = MAX_INPUT_BYTES) -> Iterator[str]:
    """The lines of a text stream, each at most ``limit`` characters (a longer one is refused before more of it is
    read).

    Raises:
        InputTooLarge: line k is longer (the message names ``what`` and k).
        NotText: the stream is not UTF-8 (the message names ``what``).
    """
    number = 0
    while True:
        number += 1
        try:
            line = stream.readline(limit + 1)
        except UnicodeDecodeError as e:
            raise NotText(f"{what} is not UTF-8 text (near line {number}: {e.reason})") from None
        if not line:
            return
        if len(line) > limit:
            raise InputTooLarge(f"{what}, line {number}: longer than {_describe(limit)}, the cap on a line")
        yield line
