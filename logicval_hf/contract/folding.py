"""How the values of an open attribute (free text: a line's words, an object's name) are compared: each value is
folded to a canonical form, and two values are the same value when their folds are equal.

``gir-bench`` is GIR-Bench's text normalisation (its ``eval/eval_TextRendering.py``): lower case, every character
other than ``a``-``z``, ``0``-``9`` and white space dropped, runs of white space made one space, both ends
trimmed. ``"Grand  Opening-SALE!"`` folds to ``"grand openingsale"``; ``"Café"`` to ``"caf"`` (letters outside
``a``-``z`` are dropped, as GIR-Bench drops them).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["FOLDS", "fold_text"]

_DROP = re.compile(r"[^a-z0-9\s]")
_SPACE = re.compile(r"\s+")


def fold_text(text: str) -> str:
    """GIR-Bench's normal form of a text (see the module docstring)."""
    return _SPACE.sub(" ", _DROP.sub("", text.lower())).strip()


#: fold name (a domain file's ``open_attributes`` value) -> the function
FOLDS: dict[str, Callable[[str], str]] = {"gir-bench": fold_text}
