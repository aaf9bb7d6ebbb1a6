"""GIR-Bench's text rendering score: worked examples, a differential test against a second implementation that
follows the rule's own wording (every shared character run, then the words it spans), and the OCR end to end."""

from __future__ import annotations

import json
import re

import pytest
from helpers import requires
from hypothesis import given, settings
from hypothesis import strategies as st
from text_images import render_lines

from logicval_hf.contract.folding import fold_text
from logicval_hf.tasks.text_rendering import TextTargetError, check_target, text_score


def runs_rule(target: str, read: str) -> float:
    """The rule as GIR-Bench words it, computed the long way: fold both texts; list every maximal run of characters
    the two share (from each pair of start positions); a target word counts when one run spans it from its first
    to its last character; the score is the number of distinct words that count over the number of words."""
    def fold(text):
        kept = "".join(ch for ch in text.lower() if ch in "abcdefghijklmnopqrstuvwxyz0123456789" or ch.isspace())
        return " ".join(kept.split())

    gt, pred = fold(target), fold(read)
    if not gt or not pred:
        return 0.0
    spans, start = [], 0
    for word in gt.split(" "):
        spans.append((word, start, start + len(word)))
        start += len(word) + 1
    runs = []
    for i in range(len(gt)):
        for j in range(len(pred)):
            k = 0
            while i + k < len(gt) and j + k < len(pred) and gt[i + k] == pred[j + k]:
                k += 1
            if k:
                runs.append((i, i + k))
    counted = {w for w, a, b in spans if any(x <= a and y >= b for x, y in runs)}
    return len(counted) / len(spans)


@pytest.mark.parametrize(("target", "read", "score"), [
    ("Grand Opening Sale", "GRAND OPENING SALE", 1.0),
    ("Grand Opening Sale", "grand  opening", 2 / 3),
    ("Hello, World!", "hello world", 1.0),                 # case and punctuation folded
    ("50% OFF", "50 off today", 1.0),
    ("cat", "concatenate", 1.0),                           # a word inside a longer one counts
    ("the cat the dog", "the cat the dog", 0.75),          # repeated words count once (GIR-Bench's set)
    ("open", "opne", 0.0),
    ("Sale Today", "", 0.0),
    ("café au lait", "caf au lait", 1.0),                  # letters outside a-z are dropped on both sides
    ("state-of-the-art", "state of the art", 0.0),         # one folded word, not found as such
])
def test_worked_examples(target, read, score):
    assert text_score(target, read) == pytest.approx(score)
    assert runs_rule(target, read) == pytest.approx(score)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcAB 1-!é\t", max_size=24), st.text(alphabet="abcAB 1-!é\n", max_size=30))
def test_the_score_is_the_rule_on_random_pairs(target, read):
    assert text_score(target, read) == pytest.approx(runs_rule(target, read))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_folding_is_idempotent_and_leaves_only_letters_digits_and_single_spaces(text):
    f = fold_text(text)
    assert fold_text(f) == f and re.fullmatch(r"([a-z0-9]+( [a-z0-9]+)*)?", f)


def test_targets_that_name_nothing_are_refused():
    for bad, message in (("", "is empty"), ("   ", "is empty"), ("?!", "has no letter or digit"),
                         (3, "must be a string")):
        with pytest.raises(TextTargetError, match=message):
            check_target(bad)


@requires("rapidocr")
def test_an_image_scores_its_own_phrase_high_and_another_low(tmp_path, capsys):
    from PIL import Image

    from logicval_hf.cli.main import main
    from logicval_hf.tasks.text_rendering import score_image

    rgb, _ = render_lines(["Fresh Coffee", "Open Daily 7am"], size=36, colour=(150, 20, 20),
                          background=(245, 235, 200), noise=6)
    path = tmp_path / "sign.jpg"
    Image.fromarray(rgb).save(path, quality=85)
    out = score_image(path, "Fresh coffee, open daily 7AM")
    assert out["score"] == 1.0 and [ln["text"] for ln in out["lines"]] == ["Fresh Coffee", "Open Daily 7am"]
    assert text_score("Closed for winter holidays", out["read"]) == 0.0
    assert main(["text-score", str(path), "--text", "Open Daily", "--min-confidence", "0.9"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["score"] == 1.0 and {"score", "lines"} <= set(printed)


def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    from logicval_hf.cli.main import main

    image = tmp_path / "x.png"
    image.write_text("not an image")
    for argv, message in (
        (["text-score", str(image), "--text", ""], "--text: is empty"),
        (["text-score", str(image)], "give --text TARGET"),
        (["text-score", str(image), "--text", "hi"], "not an image file"),
        (["text-score", str(tmp_path / "none.png"), "--text", "hi"], "no such file"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("logicval: error:") and message in err and "\n" not in err


@requires("rapidocr")
def test_a_folder_of_images_is_scored_against_imported_targets(tmp_path, capsys):
    from pathlib import Path

    from PIL import Image

    from logicval_hf.benchmark.importers.gir_bench import import_source
    from logicval_hf.cli.main import main

    sample = Path(__file__).resolve().parents[1] / "data" / "gir_bench" / "TextRendering.json"
    import_source(sample, tmp_path / "targets")
    images = tmp_path / "images"
    images.mkdir()
    Image.fromarray(render_lines(["Fresh Bread", "Every Morning"], size=40)[0]).save(images / "001.png")
    Image.fromarray(render_lines(["I Have A Drum"], size=40)[0]).save(images / "002.jpg")
    assert main(["text-score", str(images), "--targets", str(tmp_path / "targets"), "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scored"] == 2 and out["missing"] == ["gir-text-0002"]
    assert [r["score"] for r in out["results"]] == [1.0, 0.75] and out["score"] == pytest.approx(0.875)
    assert main(["text-score", str(images / "001.png"), "--targets", str(tmp_path / "targets")]) == 2
    assert "must be a folder of images" in capsys.readouterr().err
