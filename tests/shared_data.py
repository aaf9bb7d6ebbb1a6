"""Where tests find data that is not part of the repository: real CLEVR scenes, the CLEVR generator's assets, Blender
renders, GenEval's prompt file, the original template contract. They live under one data root laid out as
docs/data.md describes: ``$LOGICVAL_SHARED_DATA``, else a folder named ``shared`` beside the repository's checkout.
A test that needs such data skips without it (a fresh clone has none); every other test runs everywhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: the environment variable naming the data root
ENV = "LOGICVAL_SHARED_DATA"
REPO = Path(__file__).resolve().parents[1]


def shared_root() -> Path:
    """The data root: ``$LOGICVAL_SHARED_DATA`` when set, else the folder ``shared`` beside the checkout."""
    return Path(os.environ.get(ENV) or REPO.parent / "shared")


def shared_path(*parts: str) -> Path:
    """A path under the data root (``shared_path("data", "clevr_dev")``); it may not exist."""
    return shared_root().joinpath(*parts)


def needs_shared(*parts: str) -> pytest.MarkDecorator:
    """Skip the test unless ``parts`` exists under the data root; the reason names the path and docs/data.md."""
    rel = "/".join(parts)
    return pytest.mark.skipif(not shared_path(*parts).exists(),
                              reason=f"{rel} not under ${ENV} or the checkout's sibling 'shared' (docs/data.md)")
