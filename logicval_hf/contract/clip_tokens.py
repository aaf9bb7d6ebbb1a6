"""How much of a prompt CLIP's text encoder reads: the token count of OpenAI CLIP's byte-level BPE.

Stable Diffusion 1.x/2.x, SDXL and many other text-to-image models encode the prompt with a CLIP text encoder whose
context is 77 tokens, a start and an end token included: whatever comes after the 75th content token is never
read. `clip_token_count` counts the tokens a prompt takes there, so a benchmark can say which prompts a model reads
whole and `logicval generate` can warn before it draws.

The vocabulary is CLIP's own merge list (``clip_bpe_vocab.txt.gz`` beside this module: OpenAI CLIP's
``bpe_simple_vocab_16e6.txt.gz``, MIT licence, Copyright (c) 2021 OpenAI), read once. The text is cleaned as CLIP's
tokenizer cleans it (HTML entities unescaped, whitespace collapsed, lower case) and split as CLIP's pattern splits
it (the English contractions, runs of letters, single numbers, runs of other non-space characters; classes by
Unicode category, so no third-party regex module is needed). The tests compare the tokens with open_clip's
tokenizer; CLIP also applies ``ftfy`` to repair mis-encoded text, which is not done here.
"""

from __future__ import annotations

import gzip
import html
import unicodedata
from functools import lru_cache
from pathlib import Path

__all__ = ["CLIP_CONTEXT", "clip_token_count", "clip_tokens"]

#: the context of CLIP's text encoder in tokens, its start and end tokens included
CLIP_CONTEXT = 77

_VOCAB = Path(__file__).with_name("clip_bpe_vocab.txt.gz")
#: the merges CLIP's vocabulary uses: the file's lines after the header, up to the vocabulary size (49,408 tokens:
#: 512 byte symbols, 48,894 merges, 2 special tokens)
_N_MERGES = 49152 - 256 - 2
#: CLIP's contractions, tried first at each position (case-insensitively; the text is lower-cased before)
_CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


@lru_cache(maxsize=1)
def _byte_symbols() -> dict[int, str]:
    """CLIP's reversible map from bytes to printable characters (bytes that print stand for themselves)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    return symbols


@lru_cache(maxsize=1)
def _merge_ranks() -> dict[tuple[str, str], int]:
    with gzip.open(_VOCAB, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")[1:_N_MERGES + 1]
    return {(a, b): rank for rank, (a, b) in enumerate(line.split() for line in lines)}


@lru_cache(maxsize=4096)
def _bpe(word: str) -> tuple[str, ...]:
    """A pre-token's BPE symbols: merge the lowest-ranked adjacent pair until no pair is in the merge list."""
    ranks = _merge_ranks()
    parts = [*word[:-1], word[-1] + "</w>"]
    while len(parts) > 1:
        pairs = {(parts[i], parts[i + 1]) for i in range(len(parts) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, len(ranks)))
        if best not in ranks:
            break
        merged: list[str] = []
        i = 0
        while i < len(parts):
            if i < len(parts) - 1 and (parts[i], parts[i + 1]) == best:
                merged.append(parts[i] + parts[i + 1])
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return tuple(parts)


def _kind(ch: str) -> str:
    """``L`` (a letter), ``N`` (a number), ``S`` (white space) or ``P`` (anything else), by Unicode category."""
    if ch.isspace():
        return "S"
    category = unicodedata.category(ch)[0]
    return category if category in ("L", "N") else "P"


def _pieces(text: str) -> list[str]:
    """CLIP's pre-tokens: ``'s|'t|'re|'ve|'m|'ll|'d|\\p{L}+|\\p{N}|[^\\s\\p{L}\\p{N}]+``, scanned left to right."""
    out: list[str] = []
    i = 0
    while i < len(text):
        contraction = next((c for c in _CONTRACTIONS if text.startswith(c, i)), None)
        if contraction is not None:
            out.append(contraction)
            i += len(contraction)
            continue
        kind = _kind(text[i])
        if kind == "S":
            i += 1
            continue
        j = i + 1
        if kind != "N":  # a number is one character a piece; letters and other symbols run on
            while j < len(text) and _kind(text[j]) == kind:  # greedy, as the pattern's runs are
                j += 1
        out.append(text[i:j])
        i = j
    return out


def clip_tokens(text: str) -> list[str]:
    """The BPE tokens CLIP's text encoder sees for ``text``, without its start and end tokens.

    Args:
        text: a prompt.
    Returns:
        The tokens, as strings of CLIP's vocabulary (a word's last token ends in ``</w>``).
    """
    symbols = _byte_symbols()
    cleaned = " ".join(html.unescape(html.unescape(text)).split()).lower()
    out: list[str] = []
    for piece in _pieces(cleaned):
        out.extend(_bpe("".join(symbols[b] for b in piece.encode("utf-8"))))
    return out


def clip_token_count(text: str) -> int:
    """How many of CLIP's 77 context positions ``text`` takes: its tokens plus the start and end tokens.

    Args:
        text: a prompt.
    Returns:
        The count; a prompt of more than `CLIP_CONTEXT` is cut there by a CLIP text encoder.
    """
    return len(clip_tokens(text)) + 2
