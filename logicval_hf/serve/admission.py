"""Every item of a request checked before it joins a micro-batch, so that nothing one client sends can fail the
batch it would share with other clients' requests.

`admit` reads each item as the worker will (`logicval_hf.serve.items.read_item`: its spec parsed, its reward mode
and label checked) and checks each image's type, and refuses what no worker should receive: a value nested deeper
than `MAX_ITEM_DEPTH` (pickling it for a worker process recurses once per level), anything that raises, whatever it
raises. A refused item is its image's error entry at once; the others are scored. The worker checks each sample
again and keeps every sample's failure to itself (`logicval_hf.serve.worker.score_batch`), and a batch that fails as
a whole all the same is scored again in parts (`logicval_hf.serve.batching`), so no bad item is ever a 500.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from logicval_hf.common.reading import check_nesting
from logicval_hf.serve.items import read_item
from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.worker import failure

__all__ = ["MAX_ITEM_DEPTH", "admit"]

#: the deepest nesting of a metadata item or a scene graph sent in place of an image (GenEval metadata is 4
#: levels deep, a LogicVal item with its spec 6, a scene graph 5)
MAX_ITEM_DEPTH = 32


def _check_image(image: Any, what: str, raw_input: bool) -> None:
    if raw_input:  # a scene graph: JSON text, or an object
        if isinstance(image, dict):
            check_nesting(image, "the scene graph", MAX_ITEM_DEPTH)
        elif not isinstance(image, (bytes, bytearray, str)):
            raise ValueError(f"expected a scene graph (a JSON object or its text), got {type(image).__name__}")
    elif not isinstance(image, (bytes, bytearray)):
        raise ValueError(f"expected encoded image bytes (JPEG/PNG), got {type(image).__name__}")


def admit(images: Sequence[Any], items: Sequence[Any], raw_input: bool, reward: str,
          skip: Sequence[int] = ()) -> dict[int, SampleResult]:
    """The error entries of the samples that must not join a batch, by index (module docstring).

    Args:
        images: the request's images (encoded bytes; scene graphs for a raw-input backend).
        items: one metadata item per image, prompts and benchmark ids already resolved.
        raw_input: the backend reads scene graphs, not pixels.
        reward: the reward mode of LogicVal items without one of their own (the request's, else the server's).
        skip: indices already refused (left out).
    Returns:
        ``{index: result}`` for every refused sample; each result has ``error`` (and ``detail`` when the item made
        something other than a ValueError raise).
    """
    refused: dict[int, SampleResult] = {}
    skipped = set(skip)
    for i, (image, item) in enumerate(zip(images, items, strict=True)):
        if i in skipped:
            continue
        what = f"meta_datas[{i}]"
        try:
            check_nesting(item, "the item", MAX_ITEM_DEPTH)
            read_item(item, reward)
            what = f"images[{i}]"
            _check_image(image, what, raw_input)
        except Exception as e:  # noqa: BLE001 - whatever an item makes raise is its own error entry
            refused[i] = failure(what, e)
    return refused
