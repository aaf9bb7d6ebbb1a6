"""One small registry: things declared as data, looked up by name, with a did-you-mean error.

Perception backends, built-in generators, baseline metrics and T2I model families each keep one `Registry`.
An entry is either the object itself or a lazy ``"package.module:attribute"`` reference, resolved on first use,
so registering something heavy (a torch model) costs nothing until it is asked for. A registry may check and
convert what it holds (``adapt``: e.g. a plain function into a typed backend object), both when an object is
registered and when a lazy reference is resolved. Registries are shared by threads (a server's request
handlers): every read and write of the table holds a lock, and a reference resolved by two threads at once ends
as one object.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["Registry", "UnknownNameError"]

T = TypeVar("T")


class UnknownNameError(ValueError, KeyError):
    """A name that is not registered (a ValueError, so the CLI reports it as bad input; a KeyError for
    mapping-style callers)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """``register`` / ``get`` / ``names``, plus the mapping protocol (``name in reg``, ``reg[name]``).

    Args:
        kind: what is registered, for messages ("perception backend", "generator").
        entries: the initial table, name -> object or lazy ``"module:attribute"`` reference.
        adapt: ``adapt(name, obj) -> T``, applied to every object before it is stored (a registered object at
            `register`, a lazy reference once resolved at `get`); it raises ``ValueError`` for an object that
            does not fit. None keeps objects as they are.
    """

    def __init__(self, kind: str, entries: dict[str, T | str] | None = None,
                 adapt: Callable[[str, Any], T] | None = None) -> None:
        self.kind = kind
        self._adapt = adapt
        self._entries: dict[str, T | str] = {}
        # re-entrant: resolving a reference imports a module, which may register something here (same thread)
        self._lock = threading.RLock()
        for name, entry in (entries or {}).items():
            self.register(name, entry)

    def register(self, name: str, entry: T | str, *, replace: bool = False) -> None:
        """Add ``entry`` under ``name``.

        Raises:
            ValueError: empty name, a name already taken (without ``replace=True``), a string entry that is
                not a ``"module:attribute"`` reference, or an object that ``adapt`` refuses.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string")
        if isinstance(entry, str):
            if ":" not in entry:
                raise ValueError(f"{self.kind} {name!r}: a lazy entry must read 'package.module:attribute'")
        elif self._adapt is not None:
            entry = self._adapt(name, entry)
        with self._lock:
            if name in self._entries and not replace:
                raise ValueError(f"{self.kind} {name!r} is already registered (pass replace=True to override)")
            self._entries[name] = entry

    def unknown(self, name: Any) -> UnknownNameError:
        """The error for a name that is not registered, with the closest known names."""
        known = self.names()
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5) if isinstance(name, str) else []
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        return UnknownNameError(f"unknown {self.kind} {name!r}{hint} (known: {', '.join(known)})")

    def get(self, name: str) -> T:
        """The entry registered as ``name``, importing a lazy reference on first use.

        Raises:
            UnknownNameError: ``name`` is not registered (the message suggests close names).
            ValueError: a lazy reference names a module or attribute that does not exist, or an object that
                ``adapt`` refuses (an ``ImportError`` raised inside the referenced module propagates).
        """
        with self._lock:
            if not isinstance(name, str) or name not in self._entries:
                raise self.unknown(name)
            entry = self._entries[name]
        if not isinstance(entry, str):
            return entry
        # resolved outside the lock: an import can take long, and holding the lock while the import machinery
        # holds a module lock would deadlock against a thread importing that module and registering something
        obj = self._resolve(name, entry)
        with self._lock:
            current = self._entries.get(name)
            if current is entry:  # still the reference we resolved: store the object once
                self._entries[name] = obj
                return obj
            if current is None or isinstance(current, str):  # removed or re-pointed meanwhile: what was asked
                return obj
            return current  # resolved by another thread, or replaced meanwhile: the entry as it stands now

    def _resolve(self, name: str, entry: str) -> T:
        module_name, _, attr = entry.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name is None or not (module_name == e.name or module_name.startswith(e.name + ".")):
                raise  # the module exists but needs something that is not installed
            raise ValueError(f"{self.kind} {name!r}: no module {module_name!r} (registered as {entry!r})") from None
        try:
            obj = getattr(module, attr)
        except AttributeError:
            raise ValueError(f"{self.kind} {name!r}: module {module_name!r} has no attribute {attr!r} "
                             f"(registered as {entry!r})") from None
        return self._adapt(name, obj) if self._adapt is not None else obj

    def pop(self, name: str, default: Any = None) -> Any:
        """Remove ``name`` (tests and plugins that registered something temporary); returns its entry."""
        with self._lock:
            return self._entries.pop(name, default)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
