"""The compact prompt and CLIP token counts: what a 77-token text encoder reads of the benchmark's prompts."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logicval_hf.benchmark.sampler import PROMPT_COLUMNS, cached_benchmark
from logicval_hf.contract.clip_tokens import CLIP_CONTEXT, clip_token_count, clip_tokens
from logicval_hf.contract.compact_prompt import COMPACT_CLOSING, compact_fits, compact_prompt
from logicval_hf.contract.verbalise import constraint_text


@pytest.fixture(scope="module")
def rows():
    return cached_benchmark().all_rows()


@functools.lru_cache(maxsize=1)
def _open_clip():
    return pytest.importorskip("open_clip.tokenizer").SimpleTokenizer()


def test_clip_tokens_equal_open_clip_on_every_benchmark_prompt(rows):
    ref = _open_clip()
    for row in rows[::23]:
        for column in PROMPT_COLUMNS:
            assert clip_tokens(row[column]) == [ref.decoder[i] for i in ref.encode(row[column])], (row["id"], column)


def _open_clip_without_ftfy(text: str) -> list[str]:
    """open_clip's pattern, byte map and BPE, with its cleaning minus ftfy (which repairs mis-encoded text)."""
    import html

    ref = _open_clip()
    cleaned = " ".join(html.unescape(html.unescape(text)).split()).lower()
    out: list[str] = []
    for piece in ref.pat.findall(cleaned):
        out.extend(ref.bpe("".join(ref.byte_encoder[b] for b in piece.encode("utf-8"))).split(" "))
    return out


# letters (accented too), numbers (fractions and superscripts too), punctuation, white space, contractions, HTML
# entities
_TEXT = st.lists(st.sampled_from([*list("abcXYZ019 .,;:!?'\"()-_/&#é ñÜß½²Ⅷ\n\t"), "'s", "'ll", "&amp;", "n't"]),
                 max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_clip_tokens_equal_open_clip_on_random_text(text):
    assert clip_tokens(text) == _open_clip_without_ftfy(text)


def test_clip_token_count_includes_the_start_and_end_tokens():
    assert clip_token_count("") == 2
    assert clip_token_count("a red metal cube") == 6
    assert CLIP_CONTEXT == 77


def test_every_one_constraint_prompt_fits_with_its_constraint_whole(rows):
    one = [r for r in rows if r["m"] == 1]
    assert len(one) == 380
    for row in one:
        text = row["full_prompt_compact"]
        assert text == compact_prompt(row["spec_json"])
        assert clip_token_count(text) <= CLIP_CONTEXT and row["full_prompt_compact_fits"], row["id"]
        assert row["prompt_short"] in text and COMPACT_CLOSING in text, row["id"]


def test_constraints_come_before_the_description_and_in_order(rows):
    for row in rows[::5]:
        text = row["full_prompt_compact"]
        positions = [text.index(c["text_short"]) for c in row["constraints"]]
        assert positions == sorted(positions), row["id"]
        assert text.index(COMPACT_CLOSING) > positions[-1]
        assert f"exactly {row['n']} objects" in text


def test_the_fits_column_says_where_the_constraints_are_cut(rows):
    long = [r for r in rows if not r["full_prompt_compact_fits"]]
    assert long and all(r["m"] > 1 for r in long)
    for row in long[:20]:
        assert clip_token_count(row["full_prompt_compact"]) > CLIP_CONTEXT
        assert compact_fits(row["spec_json"]) is False


def test_prompt_lengths_measure_every_prompt_column(rows):
    for row in rows[::11]:
        assert set(row["prompt_lengths"]) == set(PROMPT_COLUMNS)
        for column, length in row["prompt_lengths"].items():
            assert length == {"words": len(row[column].split()), "clip_tokens": clip_token_count(row[column])}
    # the full prompts open with the domain description: no CLIP encoder reaches their constraints
    assert min(r["prompt_lengths"]["full_prompt_short"]["clip_tokens"] for r in rows) > CLIP_CONTEXT


def test_the_compact_prompt_states_each_constraint_as_the_verbaliser_does(rows):
    from logicval_hf.contract.spec import as_spec

    row = next(r for r in rows if r["m"] == 6)
    spec = as_spec(row["spec_json"])
    text = compact_prompt(spec)
    for i, c in enumerate(spec.constraints, 1):
        assert f"({i}) {constraint_text(c, spec.n, 'short')}" in text



def test_the_compact_prompt_opens_with_the_spec_domain(tmp_path):
    import json

    from logicval_hf.contract.domain import load_domain
    from logicval_hf.contract.spec import Spec, SpecError

    def lit(prop, value):
        return {"prop": prop, "value": value, "negated": False}

    coco = Spec.from_dict({"domain": "coco", "n": 2, "constraints": [
        {"template": "C1/1prop", "params": {"A1": lit("color", "red")}}]}, allowed_m=None)
    assert compact_prompt(coco).startswith("A photograph of exactly 2 objects.")
    shelf = {"name": "shelf", "attributes": {"book": ["novel", "atlas"], "color": ["red", "blue"]},
             "relations": {}, "theta": ["="], "n_range": [1, 4], "noun": "book"}
    path = tmp_path / "shelf.json"
    path.write_text(json.dumps(shelf))
    spec = Spec.from_dict({"domain": str(path), "n": 3, "constraints": [
        {"template": "C1/1prop", "params": {"A1": lit("color", "red")}}]}, allowed_m=None)
    assert compact_prompt(spec).startswith("A scene with exactly 3 objects. There is a red object.")
    for bad in ("Books: {count}.", "No field here.", 7):
        other = tmp_path / "bad.json"
        other.write_text(json.dumps(dict(shelf, name="badshelf", compact_description=bad)))
        with pytest.raises(SpecError, match="compact_description"):
            load_domain(str(other))
