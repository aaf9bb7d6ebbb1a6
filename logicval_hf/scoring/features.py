"""`datasets` feature types for the ``evaluate`` metric: how a prediction (image or scene graph) and a reference
(spec or benchmark row) are stored in the metric's Arrow cache between ``add_batch`` and ``compute``.

Storage only: encoding turns any accepted input into a storable value (scene graphs and references become JSON
text, images PNG bytes or their path) and refuses what cannot be stored (an unknown type, an array that is not
``uint8``, an image over the pixel cap, before it is encoded); decoding hands back what
`logicval_hf.scoring.evaluation.compute` accepts, which checks every item and names it (``predictions[3]: ...``).

Why two types of our own and not plain `datasets` ones: a prediction column holds an image *or* a scene graph,
and both columns take dicts (scene graphs, specs, benchmark rows) as well as text. ``Value("string")`` refuses a
dict (``evaluate`` checks string columns, so a dict reference would be turned away); ``Image()`` stores any
string as a file name, scene-graph JSON included, and only fails when the cache is read; ``Json()`` takes
everything and loses what is not JSON (a PIL image becomes a JSON object of its attributes, bytes a string). A
custom type has to be registered for ``evaluate`` to read its Arrow cache back (`datasets` looks the stored
``_type`` up by name), through ``datasets.features.features.register_feature``, which `datasets` marks
``@experimental`` (a ``UserWarning`` on every call). The registration below silences that warning; the metric
module's tests run the cache round trip (``add_batch`` then ``compute``), so a change to that API shows there.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import datasets
import pyarrow as pa

from logicval_hf.contract.scene import Scene
from logicval_hf.scoring.inputs import is_scene_graph, reference_json

__all__ = ["Prediction", "Reference", "metric_features"]


def _png(rgb: Any) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


@dataclass
class Prediction:
    """An image or a scene graph: ``{"scene": JSON text}``, ``{"path": image file}`` or ``{"bytes": image}``."""

    decode: bool = True
    id: str | None = field(default=None, repr=False)
    pa_type: ClassVar[Any] = pa.struct({"scene": pa.string(), "path": pa.string(), "bytes": pa.binary()})
    _type: str = field(default="LogicValPrediction", init=False, repr=False)

    def __call__(self):
        return self.pa_type

    def encode_example(self, value: Any) -> dict[str, Any]:
        from logicval_hf.perception.images import check_size, load_image

        what = "prediction"
        if isinstance(value, Scene):
            return {"scene": value.to_json(), "path": None, "bytes": None}
        if isinstance(value, Mapping) and is_scene_graph(value):
            try:
                return {"scene": json.dumps(value, default=str), "path": None, "bytes": None}
            except (TypeError, ValueError) as e:
                raise ValueError(f"{what}: scene graph is not JSON-serialisable ({e})") from None
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if isinstance(value, str):
            if is_scene_graph(value):
                return {"scene": value, "path": None, "bytes": None}
            return {"scene": None, "path": value, "bytes": None}
        if isinstance(value, (bytes, bytearray)):
            return {"scene": None, "path": None, "bytes": bytes(value)}
        if isinstance(value, Mapping) and ("bytes" in value or "path" in value):  # a `datasets.Image` cell
            b, p = value.get("bytes"), value.get("path")
            if b is not None:
                return {"scene": None, "path": None, "bytes": bytes(b)}
            if p is None:
                raise ValueError(f"{what}: an image cell needs 'bytes' or 'path'")
            return {"scene": None, "path": os.fspath(p), "bytes": None}
        if hasattr(value, "__array_interface__") and not type(value).__module__.startswith("PIL."):
            import numpy as np

            return {"scene": None, "path": None, "bytes": _png(load_image(np.asarray(value), what))}
        if type(value).__module__.startswith("PIL."):
            w, h = value.size
            check_size(w, h, what)  # before spending time on encoding
            return {"scene": None, "path": None, "bytes": _png(load_image(value, what))}
        raise ValueError(
            f"{what}: expected an image (PIL image, uint8 array, path, encoded bytes) or a scene graph (JSON string, "
            f"dict, Scene), got {type(value).__name__}"
        )

    def decode_example(self, value: Mapping[str, Any], token_per_repo_id: Any = None) -> Any:
        if value.get("scene") is not None:
            return value["scene"]
        if value.get("bytes") is not None:
            return value["bytes"]
        return value.get("path")


@dataclass
class Reference:
    """A spec or a benchmark row, as JSON text (a row keeps only id, package, label and spec_json)."""

    decode: bool = True
    id: str | None = field(default=None, repr=False)
    pa_type: ClassVar[Any] = pa.string()
    _type: str = field(default="LogicValReference", init=False, repr=False)

    def __call__(self):
        return self.pa_type

    def encode_example(self, value: Any) -> str:
        return reference_json(value)

    def decode_example(self, value: str, token_per_repo_id: Any = None) -> str:
        return value


with warnings.catch_warnings():  # "'register_feature' is experimental": see the module docstring
    warnings.simplefilter("ignore", UserWarning)
    datasets.features.features.register_feature(Prediction, "LogicValPrediction")
    datasets.features.features.register_feature(Reference, "LogicValReference")


def metric_features() -> datasets.Features:
    """The metric's one input format: ``{"predictions": Prediction(), "references": Reference()}``."""
    return datasets.Features({"predictions": Prediction(), "references": Reference()})
