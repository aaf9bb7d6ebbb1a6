"""Input files through one size cap, JSON through one nesting cap (logicval_hf.common.reading), as the library
and as the commands that read specs, scene graphs and programs meet them."""

from __future__ import annotations

import io
import json
import os

import pytest

from logicval_hf.cli.main import main
from logicval_hf.common.reading import (
    MAX_JSON_DEPTH,
    InputTooLarge,
    NotText,
    capped_lines,
    check_nesting,
    loads_json,
    read_capped,
    read_text_capped,
)

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop",
                                 "params": {"A1": {"prop": "color", "value": "red", "negated": False}}}]}
SCENE = {"image_size": [480, 320], "objects": [{"color": "red", "shape": "cube", "material": "metal",
                                                "bbox": [0, 0, 10, 10]}]}
ZERO = "/dev/zero"
needs_dev_zero = pytest.mark.skipif(not os.path.exists(ZERO), reason="no /dev/zero here")


def nested(depth: int) -> str:
    return '{"n": 3, "constraints": ' + "[" * depth + "]" * depth + "}"


def test_a_file_within_the_cap_is_read_whole(tmp_path):
    f = tmp_path / "a.json"
    f.write_bytes(b"x" * 100)
    assert read_capped(str(f), "spec", limit=100) == b"x" * 100
    with pytest.raises(InputTooLarge, match=r"spec '.*a\.json' is larger than 99 bytes"):
        read_capped(str(f), "spec", limit=99)


@needs_dev_zero
def test_an_endless_file_is_refused_after_the_cap():
    with pytest.raises(InputTooLarge, match="program '/dev/zero' is larger than 1 MiB"):
        read_capped(ZERO, "program", limit=2**20)


def test_unreadable_and_binary_files_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"cannot read spec '.*missing\.json'"):
        read_text_capped(str(tmp_path / "missing.json"), "spec")
    f = tmp_path / "b.lp"
    f.write_bytes(b"p(a).\n\xff\xfe")
    with pytest.raises(NotText, match=r"program '.*b\.lp' is not UTF-8 text \(byte 6"):
        read_text_capped(str(f), "program")


def test_nesting_is_checked_without_recursion():
    assert check_nesting([[{"a": [1]}]], "x", limit=4) == [[{"a": [1]}]]
    with pytest.raises(InputTooLarge, match="x nests deeper than 3 levels"):
        check_nesting([[{"a": [1]}]], "x", limit=3)
    deep: list = []
    for _ in range(100_000):  # past the recursion limit: a recursive walk would fail here
        deep = [deep]
    with pytest.raises(InputTooLarge):
        check_nesting(deep, "x")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, 900, 100_000])
def test_json_nested_past_the_cap_is_one_refusal(depth):
    with pytest.raises(InputTooLarge, match=f"spec nests deeper than {MAX_JSON_DEPTH} levels"):
        loads_json(nested(depth), "spec")
    assert loads_json(json.dumps(SPEC), "spec") == SPEC


def test_lines_are_capped_one_by_one():
    assert list(capped_lines(io.StringIO("ab\ncd\n"), "pairs", limit=3)) == ["ab\n", "cd\n"]
    with pytest.raises(InputTooLarge, match="pairs, line 2: longer than 4 bytes"):
        list(capped_lines(io.StringIO("ab\n" + "c" * 10), "pairs", limit=4))


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    (tmp_path / "scene.json").write_text(json.dumps(SCENE))
    (tmp_path / "deep.json").write_text(nested(100_000))
    return tmp_path


def one_line_error(rc, out, err, *names):
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("logicval: error: "), err
    assert all(n in lines[0] for n in names), err


@needs_dev_zero
@pytest.mark.parametrize("argv", [
    ["run-asp", ZERO], ["solve", ZERO], ["verify", ZERO, "SPEC"], ["verify", "SPEC", ZERO], ["check", ZERO, "x.png"],
    ["repair", ZERO, "SCENE"], ["asp", ZERO], ["verify", "--jsonl", ZERO],
], ids=lambda a: "-".join(x.strip("/").replace("/", "_") for x in a))
def test_dev_zero_as_any_input_file_is_one_line_naming_it(files, capsys, argv):
    argv = [str(files / "spec.json") if a == "SPEC" else str(files / "scene.json") if a == "SCENE" else a
            for a in argv]
    one_line_error(*run(capsys, *argv), "'/dev/zero'")


@pytest.mark.parametrize("argv", [["solve", "DEEP"], ["verify", "DEEP", "SCENE"], ["verify", "SPEC", "DEEP"],
                                  ["repair", "DEEP", "SCENE"], ["check", "DEEP", "x.png"]])
def test_a_spec_or_scene_nested_100000_deep_is_one_line(files, capsys, argv):
    argv = [str(files / {"DEEP": "deep.json", "SPEC": "spec.json", "SCENE": "scene.json"}[a])
            if a in ("DEEP", "SPEC", "SCENE") else a for a in argv]
    one_line_error(*run(capsys, *argv), "deep.json", "nests deeper than")


def test_a_program_that_is_not_utf8_is_named(files, capsys):
    (files / "latin1.lp").write_bytes(b"p(\xe9).\n")
    one_line_error(*run(capsys, "run-asp", files / "latin1.lp"), "latin1.lp", "not UTF-8")


def test_a_pairs_file_that_is_not_utf8_is_named(files, capsys):
    (files / "pairs.jsonl").write_bytes(json.dumps({"spec": SPEC, "scene": SCENE}).encode() + b"\n\xff\n")
    rc, _, err = run(capsys, "verify", "--jsonl", files / "pairs.jsonl")
    assert rc == 2 and "pairs.jsonl" in err and "not UTF-8" in err and len(err.strip().splitlines()) == 1
