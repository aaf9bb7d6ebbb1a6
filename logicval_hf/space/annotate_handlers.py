"""The Annotate tab's handlers: the answers of `logicval_hf.space.annotate_actions.AnnotationDesk` turned into widget
updates, every one for a logged-in user only (``space/app.py`` lays the widgets out and wires these in)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gradio as gr  # the app has checked the "space" extra (`widgets`); the name resolves the handlers' annotations

from logicval_hf.space import annotation_values as vals
from logicval_hf.space.annotate_actions import AnnotationDesk
from logicval_hf.space.widgets import login_name, user_errors

__all__ = ["AnnotateHandlers"]


class AnnotateHandlers:
    """What the Annotate tab's events call, over one desk; ``cache_dir`` is the folder gradio serves images from.

    Each handler takes the widgets' values and the request (for the user's name) and returns the updates; gradio
    hands the request over because the parameter is annotated `gr.Request`."""

    def __init__(self, desk: AnnotationDesk, cache_dir: str):
        self.desk = desk
        self.cache_dir = cache_dir
        for name in ("images", "refresh_models", "load", "save_boxes", "next_unannotated", "export",
                     "refresh_progress"):
            setattr(self, name, user_errors(getattr(self, name)))

    def images(self, m: str, p: str, request: gr.Request):
        login_name(request)
        ch = self.desk.image_choices(m, p)
        return gr.Dropdown(choices=ch, value=ch[0][1] if ch else None), self.desk.progress_text(m, p)

    def refresh_models(self, m: str, request: gr.Request):
        login_name(request)
        ms = self.desk.models()
        return gr.Dropdown(choices=ms, value=m if m in ms else (ms[0] if ms else None))

    def load(self, m: str, i: str, request: gr.Request):
        login_name(request)
        if not m or not i:
            return (None, *[False] * len(vals.FLAGS), "", "", "_Choose an image._")
        shown = self.desk.load(m, i, self.cache_dir)  # served from gradio's cache, byte for byte
        return ({"image": shown.image, "boxes": shown.boxes}, *[shown.flags[f] for f in vals.FLAGS], shown.notes,
                shown.key, shown.status)

    def save_boxes(self, k: str, value: Mapping[str, Any] | None, request: gr.Request):
        who = login_name(request)
        if not k or value is None:  # nothing loaded yet (page start): not an edit
            return gr.skip(), gr.skip()
        saved = self.desk.save_boxes(k, value.get("boxes"), who)
        return (gr.skip() if saved.status is None else saved.status), saved.key

    def field_saver(self, field_name: str) -> Callable[..., Any]:
        """The handler saving one scene flag or the notes."""
        @user_errors
        def save_field(k: str, value: Any, request: gr.Request):
            return self.desk.save_field(k, field_name, value, login_name(request))
        return save_field

    def next_unannotated(self, m: str, p: str, current: str, request: gr.Request):
        login_name(request)
        nxt = self.desk.next_unannotated(m, p, current)
        if nxt is None:
            return gr.skip(), "_Every image of this package is annotated._"
        return gr.Dropdown(choices=self.desk.image_choices(m, p), value=nxt), self.desk.progress_text(m, p)

    def export(self, m: str, request: gr.Request):
        login_name(request)
        return self.desk.export_zip(m)

    def refresh_progress(self, m: str, p: str, request: gr.Request) -> str:
        login_name(request)
        return self.desk.progress_text(m, p)
