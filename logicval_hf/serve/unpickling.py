"""Reading a pickle from a socket without running anything it says.

Flow-GRPO's reward client sends ``pickle.dumps({...})``; plain ``pickle.loads`` on such bytes is code execution
(a ``__reduce__`` that calls ``os.system`` runs while loading). `restricted_loads` reads them in two passes:

1. **Static scan** (`pickletools.genops`, which only parses): every opcode must be one that builds a plain value,
   and there may be at most `MAX_OPCODES` of them: the scan is Python, about a microsecond an opcode, so a body
   of cheap opcodes (15 MB of ``NONE, POP``: 7.5 million) is refused after a fraction of a second, not scanned for
   a minute.
   Opcodes that name a global (``GLOBAL``, ``STACK_GLOBAL``, ``INST``, ``OBJ``, ``EXT*``), call one (``REDUCE``,
   ``NEWOBJ*``, ``BUILD``), reach outside the stream (``PERSID``, ``NEXT_BUFFER``...) or build a type outside the
   admitted ones (sets, bytearrays) are refused before anything is loaded.
2. **Load** with `pickle.Unpickler` whose ``find_class`` refuses every global (a second lock on the same door),
   then a walk that checks every value is a dict, list, tuple, str, bytes, int, float, bool or None, within a
   node budget (shared references cannot blow the walk up: the memo makes a DAG, the budget counts visits).

Protocols 3-5 (``pickle.dumps``' default is 4) encode bytes with their own opcodes and load unchanged. Protocols
0-2 encode bytes through the global ``_codecs.encode`` and are refused with a message saying so.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

__all__ = ["ADMITTED_TYPES", "MAX_DEPTH", "MAX_NODES", "MAX_OPCODES", "UnsafePickleError", "restricted_loads"]

#: the only types a request may contain
ADMITTED_TYPES = (dict, list, tuple, str, bytes, int, float, bool, type(None))

#: opcodes that build admitted values (or only move them around: memo, marks, frames, protocol header)
_SAFE_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
    "NONE", "NEWTRUE", "NEWFALSE",
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
    "FLOAT", "BINFLOAT",
    "STRING", "BINSTRING", "SHORT_BINSTRING",
    "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
    "BINBYTES", "SHORT_BINBYTES", "BINBYTES8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST",
    "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
})

#: most values (containers and scalars) one request may hold; a Flow-GRPO request of 64 images holds ~2,000
MAX_NODES = 1_000_000
#: most opcodes a pickle may have: a request of 256 images with a spec of six constraints inline in each item has
#: about 40,000 (an image is 2 or 3, a LogicVal item 15 to 150)
MAX_OPCODES = 250_000
#: deepest nesting admitted (GenEval metadata is 4 deep)
MAX_DEPTH = 64


class UnsafePickleError(ValueError):
    """The bytes are not a pickle of plain values (dict, list, tuple, str, bytes, int, float, bool, None)."""


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(f"the pickle names {module}.{name}; only plain values are admitted")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("the pickle refers to a persistent object; only plain values are admitted")


def _scan(data: bytes) -> None:
    try:
        for count, (op, arg, pos) in enumerate(pickletools.genops(data), 1):
            if count > MAX_OPCODES:
                raise UnsafePickleError(f"the pickle has more than {MAX_OPCODES:,} opcodes (refused at byte {pos:,});"
                                        " a request of plain values needs far fewer")
            if op.name in _SAFE_OPCODES:
                continue
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str) and arg.startswith("_codecs encode"):
                raise UnsafePickleError(
                    "the pickle encodes bytes with pickle protocol 0-2 (through _codecs.encode); send protocol 3 or "
                    "higher (pickle.dumps' default)")
            what = f" ({arg})" if op.name in ("GLOBAL", "INST") and arg else ""
            raise UnsafePickleError(f"the pickle uses opcode {op.name}{what} at byte {pos}, which can run code or "
                                    "build a type outside dict, list, tuple, str, bytes, int, float, bool and None")
    except UnsafePickleError:
        raise
    except Exception as e:  # noqa: BLE001  genops' own errors on truncated or garbled bytes
        raise UnsafePickleError(f"not a valid pickle: {e}") from None


def _check_values(obj: Any) -> None:
    budget = MAX_NODES
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        x, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise UnsafePickleError(f"the pickle holds more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise UnsafePickleError(f"the pickle nests deeper than {MAX_DEPTH} levels")
        t = type(x)
        if t is dict:
            for k, v in x.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif t is list or t is tuple:
            stack.extend((v, depth + 1) for v in x)
        elif t not in ADMITTED_TYPES:  # exact types: a subclass would need a global, which the scan refuses
            raise UnsafePickleError(f"the pickle holds a {t.__name__}; only dict, list, tuple, str, bytes, int, "
                                    "float, bool and None are admitted")


def restricted_loads(data: bytes) -> Any:
    """The value pickled in ``data``, if it is made of dict, list, tuple, str, bytes, int, float, bool and None.

    Args:
        data: the pickle's bytes (from an untrusted socket).
    Returns:
        The value, built without calling or importing anything.
    Raises:
        UnsafePickleError: the bytes name a global, call something, hold another type, are truncated or are not a
            pickle; raised before any of it is loaded when the scan sees it.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise UnsafePickleError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise UnsafePickleError("the body is empty; expected a pickle")
    _scan(data)
    try:
        value = _NoGlobals(io.BytesIO(data)).load()
    except UnsafePickleError:
        raise
    except Exception as e:  # noqa: BLE001  EOFError, UnpicklingError, MemoryError on a garbled stream
        raise UnsafePickleError(f"not a valid pickle: {type(e).__name__}: {e}") from None
    _check_values(value)
    return value
