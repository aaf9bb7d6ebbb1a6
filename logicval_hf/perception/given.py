"""The ``given`` perception backend: predictions that already are scene graphs (human annotations, the
output of an external detector, a solver witness).

Usage::

    from logicval_hf.perception.given import extract
    scene = extract({"image_size": [480, 320], "objects": [...]})   # dict, JSON string, Scene or .json path
    scene = extract({"image_size": [512, 512], "objects": [{"class": "dog", "color": "brown", ...}]},
                    domain="coco")                                 # a COCO scene graph

A scene graph names its domain (``"domain": "coco"``; none: CLEVR). With ``domain`` (a name or a `Domain`) the
scene is read in that domain: one that omits ``"domain"`` is taken to be in it, one that names another (or a
`Scene` of another) is a `SceneError` naming the item.

Unlike the pixel backends, ``extract`` takes its input *raw* (its `BACKEND` declares ``raw_input=True``):
there is no image to load. `logicval_hf.scoring.evaluation.compute` already passes scene-graph predictions
through as given; this module makes the same thing available as the named backend ``"given"`` (`BACKEND`, which
`logicval_hf.perception.BACKENDS` refers to).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from logicval_hf.contract.catalog import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.errors import SceneError
from logicval_hf.perception import resolve_domain
from logicval_hf.perception.backend import PerceptionBackend
from logicval_hf.perception.images import PerceptionError

__all__ = ["BACKEND", "extract", "to_scene"]

#: JSON files larger than this are refused (a scene graph of 9 objects is well under 10 kB).
MAX_SCENE_BYTES = 5_000_000


def _looks_like_image(x: Any) -> bool:
    return type(x).__module__.startswith("PIL.") or hasattr(x, "__array_interface__")


def _domain(domain: Domain | str | None, what: str) -> Domain | None:
    try:
        return resolve_domain(domain)
    except PerceptionError as e:  # names the domain setting: "domain: ..."
        raise SceneError(f"{what}: {e}") from None


def to_scene(x: Any, domain: Domain | str | None = None, what: str = "scene") -> Scene:
    """A `Scene` from a `Scene`, a dict, a JSON string / bytes, or the path of a ``.json`` file, in ``domain``
    when given (a name or a `Domain`: a scene graph without ``"domain"`` is read in it; one in another domain
    is an error).

    Raises `SceneError` (a `ValueError`) naming ``what`` when the input is not a valid scene graph (or not in
    ``domain``), and says so explicitly when it is an image (the ``given`` backend does not look at pixels).
    """
    domain = _domain(domain, what)
    if isinstance(x, (bytearray, memoryview)):
        x = bytes(x)
    if isinstance(x, bytes):
        try:
            x.decode("utf-8")
        except UnicodeDecodeError:  # JSON is UTF-8 text: these are an image's (or other binary) bytes
            raise SceneError(f"{what}: must be a JSON object (a scene graph), got bytes that are not UTF-8 text "
                             "(image bytes?); the 'given' backend does not look at pixels: use a perception "
                             "backend such as 'clevr' for images") from None
    if isinstance(x, Scene):
        if domain is not None and x.domain != domain:
            raise SceneError(f"{what}: the scene is in domain {x.domain.name!r}, but domain {domain.name!r} is "
                             "expected")
        return x
    if _looks_like_image(x):
        raise SceneError(
            f"{what}: the 'given' backend takes scene graphs (dict, JSON or a .json file), got an image "
            f"({type(x).__name__}); use a perception backend such as 'clevr' for images"
        )
    if isinstance(x, os.PathLike) or (isinstance(x, str) and not x.lstrip().startswith("{")):
        path = Path(x)
        if not path.is_file():
            raise SceneError(f"{what}: {str(x)[:80]!r} is neither scene-graph JSON nor an existing .json file")
        if path.stat().st_size > MAX_SCENE_BYTES:
            raise SceneError(f"{what}: {path} is larger than {MAX_SCENE_BYTES} bytes; not a scene graph")
        try:
            x = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SceneError(f"{what}: cannot read {path} as UTF-8 JSON ({e})") from None
    try:
        return Scene.from_dict(x, domain)
    except SceneError as e:
        msg = str(e)  # Scene.from_dict's messages name their place from "scene" on ("scene.objects[0]: ...")
        raise SceneError(msg if msg.startswith((f"{what}:", f"{what}.", f"{what}[")) else f"{what}: {msg}") from None


def extract(x: Any, domain: Domain | str | None = None, **settings: Any) -> Scene:
    """The ``given`` backend: the prediction *is* the scene graph, read in ``domain`` when given (see
    `to_scene`). No other settings are accepted."""
    if settings:
        raise ValueError(f"the 'given' backend takes no settings but domain, got {sorted(settings)}")
    return to_scene(x, domain)


#: the ``given`` backend: raw input (the input is not an image: nothing to load), any domain (the scene graph's
#: own, or the one asked for)
BACKEND = PerceptionBackend("given", extract, domains=None, takes_domain=True, raw_input=True,
                            description="scene graphs as given (annotations, an external detector's output)")
