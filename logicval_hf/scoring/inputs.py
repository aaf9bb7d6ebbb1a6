"""What `compute` (and through it the ``evaluate`` metric and the main job) accepts, checked before any work.

Predictions are one of two kinds, never mixed in one call:

* **scene graphs**: a `Scene`, a dict with ``objects``, or a JSON string (``{"image_size": ..., "objects": ...}``),
  read in the domain of its reference's spec (a scene graph without ``"domain"`` is taken to be in it; one in
  another domain is an error naming the item);
* **images**: a PIL image, a ``uint8`` numpy array, a path (``str`` / ``os.PathLike``), encoded image bytes
  (PNG, JPEG, ...) or a ``datasets.Image`` cell (``{"bytes": ..., "path": ...}``).

A backend that takes raw input (`PerceptionBackend.raw_input`: ``given``, or one registered by a user) gets
every prediction that is not a scene graph as it is: nothing is checked or decoded here, its ``extract`` reads
it (``given``: a ``.json`` file; a third-party backend: whatever it documents).

References are specs (`Spec`, dict, JSON string / bytes) or benchmark rows (dicts with ``spec_json`` and
optionally ``id``, ``package``, ``label``). Every error is a `ValueError` that names the item
(``predictions[3]: ...``). Images are checked cheaply (file header, pixel cap `MAX_PIXELS`, array dtype and
shape) before anything decodes them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from logicval_hf.benchmark.rows import is_row, split_row
from logicval_hf.contract.domain import DEFAULT_DOMAIN, Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.errors import SceneError, SpecError
from logicval_hf.perception.images import MAX_PIXELS, PerceptionError, check_size, open_checked

__all__ = ["MAX_PIXELS", "ROW_KEYS", "check_domain", "check_lists", "check_one_kind", "is_scene_graph",
           "prediction_kind", "normalise_prediction", "normalise_predictions", "parse_reference", "reference_json",
           "takes_raw_input"]

#: benchmark-row fields a reference keeps (the rest of a row, e.g. the prompt or the witness, is not needed)
ROW_KEYS = ("id", "package", "label", "spec_json")


def check_lists(predictions: Any, references: Any) -> tuple[list[Any], list[Any]]:
    """Predictions and references as two lists of the same, non-zero length."""
    if isinstance(predictions, (str, bytes)) or isinstance(references, (str, bytes)):
        raise ValueError("predictions and references must be lists (one item per sample)")
    predictions = list(predictions) if predictions is not None else []
    references = list(references) if references is not None else []
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions for {len(references)} references")
    if not predictions:
        raise ValueError("no predictions to score: predictions and references are empty (pass one prediction "
                         "per reference)")
    return predictions, references


def is_scene_graph(x: Any) -> bool:
    """Whether a prediction is a scene graph (a `Scene`, a dict with ``objects``, a JSON object string)."""
    if isinstance(x, Scene):
        return True
    if isinstance(x, Mapping):
        return "objects" in x and not ("bytes" in x or "path" in x)
    if isinstance(x, str):
        return x.lstrip().startswith("{")
    return False


def prediction_kind(x: Any) -> str:
    """``"scene graph"`` or ``"image"``."""
    return "scene graph" if is_scene_graph(x) else "image"


def _describe(x: Any) -> str:
    if isinstance(x, (str, os.PathLike)) and not is_scene_graph(x):
        return f"the image path {os.fspath(x)[:120]!r}"
    if isinstance(x, str):
        return f"the scene-graph JSON {x.strip()[:60]!r}..." if len(x.strip()) > 60 else f"the scene-graph JSON {x!r}"
    if isinstance(x, (Scene, Mapping)) and is_scene_graph(x):
        return f"a scene graph ({type(x).__name__})"
    return f"an image ({type(x).__name__})"


def _scene(x: Any, what: str, domain: Domain | None = None) -> Scene:
    if not isinstance(x, (Scene, Mapping, str)):
        kind = "image bytes" if isinstance(x, (bytes, bytearray)) else type(x).__name__
        raise SceneError(f"{what}: scene: must be a JSON object (a scene graph), got {kind}")
    if isinstance(x, Scene):
        check_domain(x, domain, what)
        return x
    try:
        return Scene.from_dict(x, domain)
    except ValueError as e:
        hint = ""
        if domain is not None and domain.name != DEFAULT_DOMAIN and _named_domain(x) is None:
            hint = f" (the scene names no domain: it is read in its reference's spec's, {domain.name!r})"
        raise type(e)(f"{what}: {e}{hint}") from None


def _named_domain(x: Any) -> Any:
    if isinstance(x, str):
        try:
            x = json.loads(x)
        except json.JSONDecodeError:
            return None
    return x.get("domain") if isinstance(x, Mapping) else None


def check_domain(scene: Scene, domain: Domain | None, what: str) -> Scene:
    """``scene`` itself when it is in ``domain`` (or ``domain`` is None); a `SceneError` naming ``what`` otherwise."""
    if domain is not None and scene.domain != domain:
        raise SceneError(f"{what}: the scene is in domain {scene.domain.name!r}, but its reference's spec is in "
                         f"domain {domain.name!r}")
    return scene


def _open_image_bytes(data: bytes, what: str) -> Any:
    """A lazily decoded PIL image from encoded bytes, its header checked (type, pixel cap)."""
    return open_checked(data, f"{what} (image bytes)")


def _check_image_file(path: str, what: str) -> None:
    """Refuse a missing, non-image or oversized file from its header, before anything decodes it."""
    if not os.path.isfile(path):
        raise PerceptionError(f"{what}: {path[:200]!r} is neither scene-graph JSON nor an existing image file")
    what = f"{what} {path!r}"
    try:
        open_checked(path, what).close()
    except PerceptionError as e:
        if path.lower().endswith(".json") and "not an image file" in str(e):
            raise PerceptionError(f"{e} (scene graphs are JSON: pass the JSON text, not an image)") from None
        raise


def takes_raw_input(backend: str | None) -> bool:
    """Whether the named perception backend takes its input raw (`PerceptionBackend.raw_input`).

    Raises:
        UnknownNameError: no backend of that name (a `ValueError` suggesting close names).
    """
    if backend is None:
        return False
    from logicval_hf.perception import get_backend

    return get_backend(backend).raw_input


def normalise_prediction(x: Any, what: str = "prediction", backend: str | None = None,
                         domain: Domain | None = None) -> Any:
    """A checked prediction: a `Scene` for a scene graph (read in ``domain`` when given: its spec's); for an
    image, a path string, a numpy array or a PIL image (encoded bytes and ``datasets.Image`` cells are opened
    lazily). A backend that takes raw input (`takes_raw_input`) gets anything else untouched."""
    if is_scene_graph(x):
        return _scene(x, what, domain)
    if takes_raw_input(backend):
        return x
    if isinstance(x, os.PathLike):
        x = os.fspath(x)
    if isinstance(x, str):
        _check_image_file(x, what)
        return x
    if isinstance(x, (bytes, bytearray)):
        return _open_image_bytes(bytes(x), what)
    if isinstance(x, Mapping) and ("bytes" in x or "path" in x):  # a `datasets.Image` cell
        if x.get("bytes") is not None:
            return _open_image_bytes(bytes(x["bytes"]), what)
        if x.get("path") is not None:
            return normalise_prediction(os.fspath(x["path"]), what)
        raise ValueError(f"{what}: an image cell needs 'bytes' or 'path'")
    import numpy as np

    if isinstance(x, np.ndarray):
        from logicval_hf.perception.images import load_image

        load_image(x, what)  # dtype, shape and size (no decoding involved)
        return x
    if type(x).__module__.startswith("PIL."):
        w, h = x.size
        check_size(w, h, what)
        return x
    raise ValueError(
        f"{what}: expected an image (PIL image, uint8 array, path, encoded bytes) or a scene graph (JSON string, "
        f"dict, Scene), got {type(x).__name__}"
    )


def check_one_kind(predictions: Sequence[Any], backend: str | None = None) -> None:
    """Refuse images and scene graphs in one call, naming the first item of the other kind (unless the backend
    takes raw input: then the backend decides)."""
    if not predictions or takes_raw_input(backend):
        return
    first = prediction_kind(predictions[0])
    for i, p in enumerate(predictions):
        if prediction_kind(p) != first:
            raise ValueError(
                f"predictions mix images and scene graphs: predictions[0] is {_describe(predictions[0])} but "
                f"predictions[{i}] is {_describe(p)}; score scene graphs and images in separate calls")


def normalise_predictions(predictions: Sequence[Any], backend: str | None = None,
                          domains: Sequence[Domain | None] | None = None) -> list[Any]:
    """Every prediction checked (`normalise_prediction`; scene graphs read in ``domains[i]``, the domains of
    their references' specs, when given); images and scene graphs in one call are refused, naming the first
    item of the other kind (unless the backend takes raw input: then the backend decides)."""
    predictions = list(predictions)
    if domains is None:
        domains = [None] * len(predictions)
    elif len(domains) != len(predictions):
        raise ValueError(f"got {len(domains)} domains for {len(predictions)} predictions")
    check_one_kind(predictions, backend)
    return [normalise_prediction(p, f"predictions[{i}]", backend, d)
            for i, (p, d) in enumerate(zip(predictions, domains, strict=True))]


def parse_reference(ref: Any, catalog: Any = None) -> tuple[Spec, dict[str, Any]]:
    """A reference as (spec, metadata with id / package / label when the reference carries them)."""
    meta: dict[str, Any] = {}
    if isinstance(ref, bytes):
        ref = ref.decode("utf-8", errors="replace")
    if isinstance(ref, str):
        try:
            ref = json.loads(ref)
        except json.JSONDecodeError as e:
            raise SpecError(f"reference is not valid spec JSON ({e})") from None
    if isinstance(ref, Mapping) and is_row(ref):
        ref, meta = split_row(ref)
        if isinstance(ref, str):
            try:
                ref = json.loads(ref)
            except json.JSONDecodeError as e:
                raise SpecError(f"spec_json is not valid JSON ({e})") from None
    if isinstance(ref, Spec):
        return ref, meta
    if not isinstance(ref, Mapping):
        raise SpecError(f"expected a spec or a benchmark row (JSON or dict), got {type(ref).__name__}")
    return Spec.from_dict(ref, catalog=catalog), meta


def reference_json(ref: Any) -> str:
    """A reference as one JSON string (a spec, or a benchmark row reduced to `ROW_KEYS`), unchecked: for
    storage (the ``evaluate`` metric's Arrow cache); `parse_reference` checks it."""
    if isinstance(ref, Spec):
        return ref.to_json()
    if isinstance(ref, (bytes, bytearray)):
        return bytes(ref).decode("utf-8", errors="replace")
    if isinstance(ref, str):
        return ref
    if isinstance(ref, Mapping):
        if is_row(ref):
            spec_json, meta = split_row(ref)
            ref = {**meta, "spec_json": spec_json}
        return json.dumps(ref, separators=(",", ":"), default=str)
    raise SpecError(f"reference: expected a spec or a benchmark row (JSON or dict), got {type(ref).__name__}")
