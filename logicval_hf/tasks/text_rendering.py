"""Text rendering, GIR-Bench's task: a prompt implies a text (a slogan, a quote); the image must show it. The image is
read by OCR (`logicval_hf.perception.ocr`) and scored with GIR-Bench's word-level continuous substring score.

The score (GIR-Bench's ``lcs_continuous_score``, from its ``eval/eval_TextRendering.py``): fold the target and the
text read (the lines kept, joined by spaces) to lower-case letters, digits and single spaces
(`logicval_hf.contract.folding.fold_text`); a word of the target is *covered* when a continuous run of characters
shared by the two texts spans it; the score is the number of distinct covered words over the number of the target's
words. A run that spans a word contains the word itself, so a word is covered exactly when it occurs as a substring
of the folded text read (``"cat"`` is covered by ``"concatenate"``), which is how `text_score` computes it. Two
quirks of GIR-Bench's rule are kept: covered words are counted once each however often the target repeats them
(``"the cat the dog"`` read exactly scores 3/4), and an empty read text scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from logicval_hf.contract.folding import fold_text
from logicval_hf.perception.ocr import DEFAULT_MIN_CONFIDENCE, TextLine, read_lines

__all__ = ["TextTargetError", "check_target", "read_text", "score_image", "text_score"]


class TextTargetError(ValueError):
    """A target text that names nothing: empty, or without a letter or digit once folded."""


def check_target(target: Any, what: str = "target text") -> str:
    """The target as given, when it holds a word once folded.

    Raises:
        TextTargetError: not a string, empty, or nothing left after folding (one line naming ``what``).
    """
    if not isinstance(target, str):
        raise TextTargetError(f"{what}: must be a string, got {type(target).__name__}")
    if not target.strip():
        raise TextTargetError(f"{what}: is empty; give the text the image must show")
    if not fold_text(target):
        raise TextTargetError(f"{what}: {target!r} has no letter or digit (a-z, 0-9) once folded as GIR-Bench folds "
                              "text, so there is no word to find")
    return target


def text_score(target: str, read: str) -> float:
    """GIR-Bench's word-level continuous substring score of the text ``read`` against ``target`` (see the module
    docstring): 0..1, 1 when every word of the target occurs in what was read."""
    words = fold_text(target).split()
    seen = fold_text(read)
    if not words or not seen:
        return 0.0
    return len({w for w in words if w in seen}) / len(words)


def read_text(lines: Sequence[TextLine]) -> str:
    """The text read from an image: the lines' texts joined by spaces, in reading order (as GIR-Bench joins them)."""
    return " ".join(ln.text for ln in lines)


def score_image(image: Any, target: str, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                what: str = "image") -> dict[str, Any]:
    """Read ``image`` and score it against ``target``.

    Returns:
        ``{"score", "lines", "target", "read"}``: the score, the OCR lines kept (confidence above
        ``min_confidence``; each ``{"text", "box", "confidence", "polygon"}``), the target and the text read.
    Raises:
        TextTargetError: an empty target. PerceptionError: an image that cannot be read.
        MissingExtraError: the OCR (the ``ocr`` extra) is not installed.
    """
    check_target(target)
    lines = read_lines(image, min_confidence, what=what)
    text = read_text(lines)
    return {"score": text_score(target, text), "lines": [ln.to_dict() for ln in lines], "target": target,
            "read": text}
