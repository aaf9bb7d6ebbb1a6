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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.contract.folding import fold_text
from logicval_hf.perception.images import IMAGE_EXTENSIONS
from logicval_hf.perception.ocr import DEFAULT_MIN_CONFIDENCE, TextLine, read_lines

__all__ = ["IMAGE_SUFFIXES", "TextTargetError", "check_target", "read_text", "score_folder", "score_image",
           "text_score"]

#: image files a folder of outputs is searched for, by name
IMAGE_SUFFIXES = IMAGE_EXTENSIONS


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


def _image_for(folder: Path, row: Mapping[str, Any]) -> Path | None:
    """The image of a target row: named by GIR-Bench's id (as GIR-Bench names them, ``001.png``, or as it is) or by
    the row id."""
    gid = str(row.get("gir_id", ""))
    names = ([f"{int(gid):03d}"] if gid.isdigit() else []) + [gid, str(row["id"])]
    for name in dict.fromkeys(n for n in names if n):
        for suffix in IMAGE_SUFFIXES:
            if (folder / f"{name}{suffix}").is_file():
                return folder / f"{name}{suffix}"
    return None


def score_folder(targets: str | Path, images: str | Path, min_confidence: float = DEFAULT_MIN_CONFIDENCE,
                 progress: bool = False) -> dict[str, Any]:
    """Score a folder of images against a folder of target texts (``logicval import gir-bench TextRendering.json``).

    Returns:
        ``{"score", "scored", "missing", "results"}``: the mean score over the images found (GIR-Bench's
        ``avg_lcs_continuous_score``, which skips a missing image), how many were scored, the ids without an image,
        and per image ``{"id", "gir_id", "image", "score", "read"}``.
    Raises:
        ValueError: ``targets`` is not a folder of target texts, or no image of it is in ``images``.
    """
    from tqdm import tqdm

    targets, images = Path(targets), Path(images)
    table = targets / "data" / "test.parquet"
    if not table.is_file():
        raise ValueError(f"--targets {str(targets)!r}: not a folder of target texts (no data/test.parquet; make one "
                         "with logicval import gir-bench TextRendering.json --out DIR)")
    import pyarrow.parquet as pq

    rows = pq.read_table(table).to_pylist()
    if not rows or "text" not in rows[0]:
        raise ValueError(f"--targets {str(targets)!r}: its rows have no 'text' column; not a folder of target texts")
    found = [(r, _image_for(images, r)) for r in rows]
    if not any(path for _, path in found):
        raise ValueError(f"no image in {str(images)!r} is named by a target's id (e.g. {_example(rows[0])})")
    results, missing = [], []
    for row, path in tqdm(found, desc="text-score", unit="image", disable=not progress):
        if path is None:
            missing.append(row["id"])
            continue
        out = score_image(path, row["text"], min_confidence, what=f"image {str(path)!r}")
        results.append({"id": row["id"], "gir_id": row.get("gir_id"), "image": str(path), "score": out["score"],
                        "read": out["read"]})
    return {"score": sum(r["score"] for r in results) / len(results), "scored": len(results), "missing": missing,
            "results": results}


def _example(row: Mapping[str, Any]) -> str:
    gid = str(row.get("gir_id", ""))
    return f"{int(gid):03d}.png" if gid.isdigit() else f"{row['id']}.png"
