"""The Space's gradio side (``space/app.py`` lays the tabs out with it): handlers that turn the package's errors
into messages, inputs that pass uploads through the image gate first, menus that quote a refused value cut short,
and the conversions of scenes into what widgets show. The one module of `logicval_hf.space` besides
`annotate_handlers` that imports gradio (the "space" extra)."""

from __future__ import annotations

import functools
import html
import logging
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image, UnidentifiedImageError

from logicval_hf.common.extras import require
from logicval_hf.contract.scene import Scene
from logicval_hf.generation.render import render_scene
from logicval_hf.space import check as chk
from logicval_hf.space import common
from logicval_hf.space import images as img

gr: Any = require("gradio", "space", "the Space")  # gradio ships no type information for its components

__all__ = ["annotator_input", "closed_menu", "hide_api_from_page", "login_name", "scene_image", "table",
           "upload_image", "user_errors"]

log = logging.getLogger("logicval.space")


def user_errors(fn: Callable) -> Callable:
    """Turn the backend's `ValueError`s into messages for the user (gr.Error); log anything unexpected."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ValueError as e:  # gradio shows messages as HTML: user text quoted in them is escaped
            raise gr.Error(html.escape(str(e), quote=False), print_exception=False) from None
        except Exception as e:  # noqa: BLE001
            log.error("handler %s failed:\n%s", fn.__name__, traceback.format_exc())
            raise gr.Error(html.escape(f"internal error ({type(e).__name__}: {e})", quote=False)) from None
    return wrapper


def _upload_name(filedata: Any) -> str:
    return Path(str(getattr(filedata, "orig_name", None) or "")).name[:80] or img.UPLOAD


def _checked_upload(filedata: Any, max_bytes: int) -> None:
    """The image gate (`logicval_hf.space.images`: file size, type, pixel cap from the header) for an uploaded
    file, before any component decodes it; a refusal is a `gr.Error` naming the file."""
    path = getattr(filedata, "path", None)
    if path:
        try:
            img.image_size(path, max_bytes, _upload_name(filedata))
        except img.ImageInputError as e:
            raise gr.Error(html.escape(str(e), quote=False), print_exception=False) from None


def upload_image(max_bytes: int, **kwargs: Any) -> Any:
    """`gr.Image` (type ``filepath``) whose preprocessing passes the upload through the image gate first, so
    that a non-image, an oversized file or too many pixels get a clear message and nothing is decoded.

    (The instance's ``preprocess`` is wrapped; subclassing a component would make gradio write a .pyi file.)
    """
    comp = gr.Image(type="filepath", image_mode=None, **kwargs)
    inner = comp.preprocess

    def preprocess(payload: Any) -> Any:
        _checked_upload(payload, max_bytes)
        try:
            return inner(payload)
        except (UnidentifiedImageError, OSError) as e:  # what the gate cannot see (no file path to check)
            raise gr.Error(f"{html.escape(_upload_name(payload))}: the image cannot be read ({html.escape(str(e))})",
                           print_exception=False) from None

    comp.preprocess = preprocess
    return comp


def closed_menu(*args: Any, **kwargs: Any) -> Any:
    """`gr.Dropdown` of fixed choices whose refusal of any other value (sent through the API) quotes the value cut
    short (`logicval_hf.space.common.quote`), as every message of the Space does: gradio's own message repeats it
    whole, however long, and logs a traceback. For menus whose choices never change (a handler that returned
    new choices would get gradio's own component back)."""
    comp = gr.Dropdown(*args, **kwargs)
    inner = comp.preprocess

    def preprocess(payload: Any) -> Any:
        values = [v for _, v in comp.choices]
        if payload is not None and payload not in values:
            listed = ", ".join(map(str, values)) if len(values) <= 12 else f"{len(values)} of them"
            raise gr.Error(html.escape(f"{comp.label}: {common.quote(payload)} is not one of the choices "
                                       f"({listed})", quote=False), print_exception=False)
        return inner(payload)

    comp.preprocess = preprocess
    return comp


def annotator_input(comp: Any, max_bytes: int) -> Any:
    """The annotation widget with its input passed through the image gate (the widget would decode any image
    it is sent, whatever its size) and its boxes handed over raw: `logicval_hf.space.annotation_values.check_boxes`
    checks them when they are saved (the widget's own parsing turns a missing colour into black and rounds
    1e300 into a 301-digit integer)."""
    def preprocess(payload: Any) -> Any:
        if payload is None:
            return None
        _checked_upload(payload.image, max_bytes)
        return {"image": getattr(payload.image, "path", None), "boxes": list(payload.boxes or []),
                "orientation": payload.orientation}

    comp.preprocess = preprocess
    return comp


def hide_api_from_page(demo: Any) -> None:
    """Do not embed the API description in the HTML page (gradio 6.31 embeds it in every page it serves, the
    login page included, and has no setting for it). The page-scoped description (``page=...``) becomes empty;
    ``/gradio_api/info``, which gradio_client reads and which requires the login, is unchanged."""
    inner = demo.get_api_info

    def get_api_info(all_endpoints: bool = False, page: str | None = None):
        if page is not None:
            return {"named_endpoints": {}, "unnamed_endpoints": {}}
        return inner(all_endpoints=all_endpoints)

    demo.get_api_info = get_api_info


def table(rows: list[list[Any]], headers: list[str]) -> pd.DataFrame:
    """Rows as the frame a `gr.Dataframe` shows."""
    return pd.DataFrame(rows, columns=headers)


def scene_image(scene: Scene | None, boxes: bool = True) -> Image.Image | None:
    """A scene rendered (its boxes drawn on it unless ``boxes`` is false); None for no scene."""
    if scene is None:
        return None
    picture, drawn = render_scene(scene)
    return chk.draw_boxes(picture, drawn) if boxes else picture


def login_name(request: Any) -> str:
    """The logged-in user of a request; a `gr.Error` asking to log in without one."""
    name = getattr(request, "username", None) if request is not None else None
    if not name:
        raise gr.Error("log in first: annotation needs the app to run in protected mode (LOGICVAL_SPACE_USER / "
                       "LOGICVAL_SPACE_PASSWORD)", print_exception=False)
    return str(name)
