"""One small registry: things declared as data, looked up by name, with a did-you-mean error.

Perception backends, built-in generators, baseline metrics and T2I model families each keep one `Registry`.
An entry is either the object itself or a lazy ``"package.module:attribute"`` reference, resolved on first use,
so registering something heavy (a torch model) costs nothing until it is asked for.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Generic, Iterator, TypeVar

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
    """

    def __init__(self, kind: str, entries: dict[str, T | str] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        for name, entry in (entries or {}).items():
            self.register(name, entry)

    def register(self, name: str, entry: T | str, *, replace: bool = False) -> None:
        """Add ``entry`` under ``name``.

        Raises:
            ValueError: empty name, a name already taken (without ``replace=True``), or a string entry that is
                not a ``"module:attribute"`` reference.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string")
        if name in self._entries and not replace:
            raise ValueError(f"{self.kind} {name!r} is already registered (pass replace=True to override)")
        if isinstance(entry, str) and ":" not in entry:
            raise ValueError(f"{self.kind} {name!r}: a lazy entry must read 'package.module:attribute'")
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
        """
        if not isinstance(name, str) or name not in self._entries:
            raise self.unknown(name)
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def reference(self, name: str) -> T | str:
        """The raw entry (a lazy reference stays a string): for code fingerprints without importing."""
        if name not in self._entries:
            raise self.unknown(name)
        return self._entries[name]

    def pop(self, name: str, default: Any = None) -> Any:
        """Remove ``name`` (tests and plugins that registered something temporary); returns its entry."""
        return self._entries.pop(name, default)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
