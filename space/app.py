"""LogicVal Space: explore the benchmark, compose and solve specs, check images, annotate model outputs.

Run locally::

    python space/app.py                       # public: Explore, Compose, Check
    LOGICVAL_SPACE_USER=alice,bob LOGICVAL_SPACE_PASSWORD=... \\
    LOGICVAL_ANNOTATION_ROOT=/data/outputs python space/app.py      # protected: + Annotate, login on every route

The module exposes ``demo`` (built by `build_demo` from the environment) and launches it only under
``__main__`` with `launch_kwargs` (authentication, upload cap). See ``space/README.md`` for every setting.
All logic lives in ``logicval_hf.space`` (settings in ``logicval_hf.space.config``); the handlers here only
convert between the UI and it.
"""

from __future__ import annotations

import functools
import hashlib
import html
import logging
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path
from typing import Any, Callable, Mapping

try:  # running from a checkout without `pip install -e .`
    import logicval_hf  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from logicval_hf.common.extras import MissingExtraError, require
from logicval_hf.space.config import exit_with_error

try:  # without the "space" extra: one line and exit status 2 (exercised by hiding gradio in the tests)
    gr = require("gradio", "space", "the Space")
except MissingExtraError as e:
    if __name__ == "__main__":
        exit_with_error(str(e))
    raise

import pandas as pd
from PIL import Image, UnidentifiedImageError

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.generation.render import render_scene
from logicval_hf.contract.scene import Scene
from logicval_hf.space import annotate as ann
from logicval_hf.space import check as chk
from logicval_hf.space import common
from logicval_hf.space import compose as cmp
from logicval_hf.space import explore as exp
from logicval_hf.space import images as img
from logicval_hf.space.config import (ConfigError, SpaceConfig, config_from_env, config_or_exit,  # noqa: F401
                                      make_auth)
from logicval_hf.contract.spec import Spec

log = logging.getLogger("logicval.space")

TITLE = "LogicVal: logical constraints for text-to-image models"
CSS = """
.lv-small textarea { font-size: 0.85em !important; }
#lv-header h1 { margin-bottom: 0.1em; }
footer { display: none !important; }
"""


# ---------------------------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------------------------
def launch_kwargs(demo_or_config: Any = None) -> dict[str, Any]:
    """Arguments for ``demo.launch``: the login (protected mode), the upload cap, theme and CSS. FastAPI's own
    schema route (``/openapi.json``, gradio's HTTP routes, no data) is switched off."""
    cfg = demo_or_config if isinstance(demo_or_config, SpaceConfig) else getattr(
        demo_or_config, "logicval_config", None) or config_from_env()
    kw: dict[str, Any] = {"max_file_size": cfg.max_file_bytes, "theme": gr.themes.Soft(), "css": CSS,
                          "show_error": True, "app_kwargs": {"openapi_url": None}}
    if cfg.protected:
        kw["auth"] = make_auth(cfg.credentials or [])
        kw["auth_message"] = "LogicVal annotation service: log in with the credentials you were given."
    return kw


def hide_api_from_page(demo: gr.Blocks) -> None:
    """Do not embed the API description in the HTML page (gradio 6.31 embeds it in every page it serves, the
    login page included, and has no setting for it). The page-scoped description (``page=...``) becomes empty;
    ``/gradio_api/info``, which gradio_client reads and which requires the login, is unchanged."""
    inner = demo.get_api_info

    def get_api_info(all_endpoints: bool = False, page: str | None = None):
        if page is not None:
            return {"named_endpoints": {}, "unnamed_endpoints": {}}
        return inner(all_endpoints=all_endpoints)

    demo.get_api_info = get_api_info  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------
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


def upload_image(max_bytes: int, **kwargs: Any) -> gr.Image:
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
        except UnidentifiedImageError:
            raise gr.Error(f"{html.escape(_upload_name(payload))}: not an image file (expected PNG, JPEG, WebP or "
                           "another format PIL reads)", print_exception=False) from None
        except (Image.DecompressionBombError, OSError) as e:
            raise gr.Error(f"the uploaded image cannot be read safely ({html.escape(str(e))})",
                           print_exception=False) from None

    comp.preprocess = preprocess  # type: ignore[method-assign]
    return comp


def closed_menu(*args: Any, **kwargs: Any) -> gr.Dropdown:
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

    comp.preprocess = preprocess  # type: ignore[method-assign]
    return comp


def annotator_input(comp: Any, max_bytes: int) -> Any:
    """The annotation widget with its input passed through the image gate (the widget would decode any image
    it is sent, whatever its size) and its boxes handed over raw: `logicval_hf.space.annotate.check_boxes`
    checks them when they are saved (the widget's own parsing turns a missing colour into black and rounds
    1e300 into a 301-digit integer)."""
    def preprocess(payload: Any) -> Any:
        if payload is None:
            return None
        _checked_upload(payload.image, max_bytes)
        return {"image": getattr(payload.image, "path", None), "boxes": list(payload.boxes or []),
                "orientation": payload.orientation}

    comp.preprocess = preprocess  # type: ignore[method-assign]
    return comp


def _df(rows: list[list[Any]], headers: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=headers)


def _render(scene: Scene | None, boxes: bool = True) -> Image.Image | None:
    if scene is None:
        return None
    img, drawn = render_scene(scene)
    return chk.draw_boxes(img, drawn) if boxes else img


def _cache_copy(path: Path, cache_dir: str) -> str:
    """A byte-identical copy of an image in gradio's cache (content-addressed), which gradio may serve."""
    data = Path(path).read_bytes()
    d = Path(cache_dir) / ("logicval-" + hashlib.sha256(data).hexdigest()[:32])
    d.mkdir(parents=True, exist_ok=True)
    dst = d / Path(path).name
    if not dst.exists():
        from logicval_hf.common.atomic import atomic_write_bytes

        atomic_write_bytes(dst, data)
    return str(dst)


def _user(request: gr.Request | None) -> str:
    name = getattr(request, "username", None) if request is not None else None
    if not name:
        raise gr.Error("log in first: annotation needs the app to run in protected mode (LOGICVAL_SPACE_USER / "
                       "LOGICVAL_SPACE_PASSWORD)", print_exception=False)
    return str(name)


# ---------------------------------------------------------------------------------------------------------------
# The app
# ---------------------------------------------------------------------------------------------------------------
def build_demo(config: SpaceConfig | None = None) -> gr.Blocks:
    """Build the Blocks app. ``demo.logicval_config`` keeps the config for `launch_kwargs`."""
    cfg = config if config is not None else config_from_env()
    catalog = load_catalog()
    common.use_disk_cache(cfg.cache_dir)  # Explore reads the built benchmark from disk after the first start
    warmup = common.warm_benchmark() if cfg.preload else None

    with gr.Blocks(title="LogicVal") as demo:
        gr.Markdown(f"# {TITLE}\nBenchmark prompts with solver labels, a spec composer with instant solving, an image "
                    "checker (scene graph → verdict), and the annotation tool"
                    f"{' (log in required)' if cfg.protected else ''}.", elem_id="lv-header")
        with gr.Tabs() as tabs:
            with gr.Tab("Explore", id="explore"):
                explore_ui = _explore_tab()
            with gr.Tab("Compose", id="compose"):
                _compose_tab(catalog)
            with gr.Tab("Check", id="check"):
                check_ui = _check_tab(cfg)
            annotate_ui = None
            with gr.Tab("Annotate", id="annotate"):
                if cfg.annotate_enabled:
                    annotate_ui = _annotate_tab(cfg)
                else:
                    gr.Markdown(
                        "### Annotation is switched off\nThe annotation tool only runs in protected mode: set "
                        "`LOGICVAL_SPACE_USER` and `LOGICVAL_SPACE_PASSWORD` (Space secrets) and "
                        "`LOGICVAL_ANNOTATION_ROOT` (folders of model outputs named by benchmark id). Every data "
                        "route of the app then requires a login (see the Space's README).")
        # Explore -> Check: carry the prompt id over and switch tabs
        explore_ui["to_check"].click(lambda rid: (rid, gr.Tabs(selected="check")), explore_ui["rid"],
                                     [check_ui["spec"], tabs], api_name="explore_to_check")
        demo.load(explore_ui["show"], explore_ui["rid"], explore_ui["outs"], api_visibility="private")
        if annotate_ui:
            demo.load(annotate_ui["load"], annotate_ui["load_in"], annotate_ui["load_out"], api_visibility="private")
    hide_api_from_page(demo)
    demo.logicval_config = cfg  # type: ignore[attr-defined]
    demo.logicval_warmup = warmup  # type: ignore[attr-defined]  # the benchmark build thread (or None)
    return demo


# ---- Explore ---------------------------------------------------------------------------------------------------
def _explore_tab() -> dict[str, Any]:
    gr.Markdown("Pick a configuration and a prompt. UNSAT prompts show their minimal unsat core; SAT prompts show "
                "the solver's witness scene, rendered.")
    with gr.Row():
        pkg = closed_menu(list(PACKAGE_NAMES), value="1SAT", label="Configuration", scale=1)
        rid = gr.Dropdown(common.package_ids("1SAT"), value="1SAT-0001", label="Prompt id", scale=1,
                          allow_custom_value=True)
        to_check = gr.Button("Check an image against this prompt →", scale=1)
    header = gr.Markdown()
    with gr.Row():
        with gr.Column(scale=1):
            p_short = gr.Textbox(label="Prompt (short register)", lines=4, elem_classes="lv-small")
            p_long = gr.Textbox(label="Prompt (long register)", lines=4, elem_classes="lv-small")
        with gr.Column(scale=1):
            core_md = gr.Markdown()
            witness = gr.Image(label="Witness scene (rendered)", type="pil", interactive=False, height=300,
                               visible=True)
    witness_tab = gr.Dataframe(label="Witness scene graph", interactive=False, visible=True)
    with gr.Accordion("Full prompt given to the model", open=False):
        with gr.Row():
            fp_short = gr.Textbox(label="Full prompt (short)", lines=8, elem_classes="lv-small")
            fp_long = gr.Textbox(label="Full prompt (long)", lines=8, elem_classes="lv-small")
    with gr.Accordion("Sub-questions (Soft-TIFA)", open=False):
        subq = gr.Dataframe(interactive=False, headers=exp.SUBQUESTION_HEADERS)
    with gr.Accordion("ASP program", open=False):
        asp = gr.Code(label="ASP program (clingo)", language=None, interactive=False)
    with gr.Accordion("Spec JSON", open=False):
        spec = gr.Code(label="spec_json", language="json", interactive=False)

    @user_errors
    def ids(package: str):
        choices = common.package_ids(package)
        return gr.Dropdown(choices=choices, value=choices[0])

    @user_errors
    def show(row_id: str):
        v = exp.explore_row(row_id)
        scene = exp.witness_scene(v)
        sq = _df(exp.subquestion_rows(v), exp.SUBQUESTION_HEADERS)
        wt = (_df(common.scene_rows(scene), common.scene_headers(scene)).drop(columns=["score"])
              if scene is not None else None)
        return (exp.header_markdown(v), v["prompt_short"], v["prompt_long"], v["full_prompt_short"],
                v["full_prompt_long"], v["asp_program"], sq, exp.spec_pretty(v), exp.core_markdown(v),
                gr.Image(value=_render(scene), visible=scene is not None),
                gr.Dataframe(value=wt, visible=scene is not None))

    pkg.change(ids, pkg, rid, api_name="explore_ids")
    outs = [header, p_short, p_long, fp_short, fp_long, asp, subq, spec, core_md, witness, witness_tab]
    rid.change(show, rid, outs, api_name="explore")
    return {"rid": rid, "to_check": to_check, "show": show, "outs": outs}


# ---- Compose ---------------------------------------------------------------------------------------------------
def _compose_tab(catalog: Any) -> None:
    gr.Markdown("Compose a spec: up to six templates from **distinct classes**, parameters from menus that offer "
                "only valid values. Slot rules that relate several slots are listed under each template and "
                f"explained if broken. Solving has a budget of {cmp.DEFAULT_TIMEOUT:g} s: a spec the solver cannot "
                "label in that time gets a message saying so, never a label.")
    n_choices = list(range(catalog.domain.n_min, catalog.domain.n_max + 1))
    n = closed_menu(n_choices, value=4, label="n (number of objects)")
    t_choices = [("(none)", "")] + cmp.template_choices(catalog)
    templates, slots, rules = [], [], []
    first_default = "C3/2prop"
    for k in range(cmp.MAX_CONSTRAINTS):
        with gr.Group():
            tid0 = first_default if k == 0 else ""
            menus = cmp.slot_menus(tid0, 4, None, catalog) if tid0 else []
            with gr.Row():
                t = closed_menu(t_choices, value=tid0, label=f"Constraint {k + 1}: template", scale=3)
            with gr.Row():
                row_slots = []
                for j in range(cmp.MAX_SLOTS):
                    m = menus[j] if j < len(menus) else None
                    row_slots.append(gr.Dropdown(
                        choices=m["choices"] if m else [], value=m["value"] if m else None,
                        label=m["label"] if m else f"slot {j + 1}", visible=m is not None, min_width=140,
                        allow_custom_value=True))
            r = gr.Markdown(_rules_md(tid0, catalog), visible=bool(tid0))
        templates.append(t)
        slots.append(row_slots)
        rules.append(r)
    solve_btn = gr.Button("Verbalise and solve", variant="primary")
    with gr.Row():
        with gr.Column(scale=1):
            label_md = gr.Markdown()
            texts_md = gr.Markdown()
        with gr.Column(scale=1):
            witness = gr.Image(label="Witness scene (rendered)", type="pil", interactive=False, height=300)
    with gr.Accordion("Full prompt", open=False):
        fp = gr.Textbox(label="Full prompt (short register)", lines=8, elem_classes="lv-small")
    with gr.Accordion("ASP program", open=False):
        asp = gr.Code(language=None, interactive=False)
    with gr.Accordion("Spec JSON (the input of /solve: edit or paste a spec, or copy it into Check)", open=False):
        spec_box = gr.Code(language="json", interactive=True, label="spec")
        solve_json_btn = gr.Button("Solve this JSON")
    with gr.Accordion("Solver answer (JSON, the /solve output)", open=False):
        solve_json = gr.JSON()

    def slot_updates(tid: str, n_val: Any, current: Mapping[str, Any] | None = None) -> list[Any]:
        menus = cmp.slot_menus(tid, int(n_val), current, catalog) if tid else []
        ups = []
        for j in range(cmp.MAX_SLOTS):
            if j < len(menus):
                m = menus[j]
                ups.append(gr.Dropdown(choices=m["choices"], value=m["value"], label=m["label"], visible=True))
            else:
                ups.append(gr.Dropdown(choices=[], value=None, visible=False))
        ups.append(gr.Markdown(_rules_md(tid, catalog), visible=bool(tid)))
        return ups

    for k in range(cmp.MAX_CONSTRAINTS):
        templates[k].change(user_errors(lambda tid, n_val: slot_updates(tid, n_val)), [templates[k], n],
                            [*slots[k], rules[k]], api_name=f"compose_template_{k + 1}")

    def n_changed(n_val: Any, *vals: Any):
        ups = []
        per = 1 + cmp.MAX_SLOTS
        for k in range(cmp.MAX_CONSTRAINTS):
            tid, cur = vals[k * per], vals[k * per + 1:(k + 1) * per]
            names = [s.name for s in catalog.template(tid).slots] if tid else []
            ups += slot_updates(tid, n_val, dict(zip(names, cur)))[:cmp.MAX_SLOTS]
        return ups

    all_inputs = [x for k in range(cmp.MAX_CONSTRAINTS) for x in (templates[k], *slots[k])]
    n.change(user_errors(n_changed), [n, *all_inputs], [s for row in slots for s in row], api_name="compose_n")

    @user_errors
    def compose(n_val: Any, *vals: Any) -> str:
        per = 1 + cmp.MAX_SLOTS
        rows = []
        for k in range(cmp.MAX_CONSTRAINTS):
            tid, cur = vals[k * per], vals[k * per + 1:(k + 1) * per]
            if not tid:
                rows.append(("", {}))
                continue
            names = [s.name for s in catalog.template(tid).slots]
            rows.append((tid, dict(zip(names, cur))))
        return cmp.spec_json_text(cmp.build_spec(n_val, rows, catalog))

    @user_errors
    def solve(spec_json: str) -> dict[str, Any]:
        spec, _ = common.parse_spec_input(spec_json, catalog)
        return cmp.solve_spec(spec)

    @user_errors
    def view(result: Mapping[str, Any]):
        spec = Spec.from_dict(result["spec"], catalog=catalog, allowed_m=common.COMPOSE_M)
        d = cmp.describe_spec(spec, catalog)
        return (cmp.solve_markdown(result), cmp.constraints_markdown(d), d["full_prompt_short"], d["asp_program"],
                _render(cmp.witness_scene(result)))

    (solve_btn.click(compose, [n, *all_inputs], spec_box, api_name="compose")
     .success(solve, spec_box, solve_json, api_name="solve")
     .success(view, solve_json, [label_md, texts_md, fp, asp, witness], api_name="solve_view"))
    solve_json_btn.click(solve, spec_box, solve_json, api_visibility="private").success(
        view, solve_json, [label_md, texts_md, fp, asp, witness], api_visibility="private")


def _rules_md(tid: str, catalog: Any) -> str:
    if not tid:
        return ""
    t = catalog.template(tid)
    rules = cmp.slot_rules(t)
    pattern = cmp.template_pattern(t)
    return f"<small>_{pattern}_" + (("  \nSlot rules: " + "; ".join(rules)) if rules else "") + "</small>"


# ---- Check -----------------------------------------------------------------------------------------------------
def _check_tab(cfg: SpaceConfig) -> dict[str, Any]:
    gr.Markdown(f"Upload an image (at most {cfg.max_file_bytes / 1024 / 1024:.0f} MB and "
                f"{chk.perception.MAX_PIXELS / 1e6:.0f} megapixels) and give the spec as a benchmark id or as JSON "
                "(e.g. from the Compose tab). The perception backend turns the image into a scene graph; the solver "
                f"checks it (a spec given as JSON is first labelled, within {cmp.DEFAULT_TIMEOUT:g} s).")
    with gr.Row():
        with gr.Column(scale=1):
            image = upload_image(cfg.max_file_bytes, label="Image", sources=["upload", "clipboard"], height=300,
                                 elem_id="check-image")
            spec = gr.Textbox(label="Spec: benchmark id (e.g. 3SAT-0007) or spec JSON", lines=2,
                              value="1SAT-0001")
            backend = closed_menu(chk.backend_choices(), value=cfg.backend, label="Perception backend")
            btn = gr.Button("Check", variant="primary")
        with gr.Column(scale=1):
            boxed = gr.Image(label="Detected objects", type="pil", interactive=False, height=300, elem_id="check-boxed")
            verdict_md = gr.Markdown()
            violations_md = gr.Markdown()
    table = gr.Dataframe(label="Scene graph", interactive=False, headers=common.scene_headers(load_catalog().domain),
                         elem_id="check-table")
    with gr.Accordion("Result JSON (the /check answer; box coordinates under \"objects\")", open=False):
        result = gr.JSON()

    @user_errors
    def check(image_path: str, spec_input: str, backend_name: str) -> dict[str, Any]:
        if not image_path:
            raise gr.Error("upload an image first", print_exception=False)
        return chk.check_image(image_path, spec_input, backend_name or cfg.backend, cfg.max_file_bytes)

    @user_errors
    def view(res: Mapping[str, Any], image_path: str):
        scene = Scene.from_dict(res["scene"])
        rgb = chk.load_upload(image_path, cfg.max_file_bytes)
        hl = {i for v in res["violated"] for i in v["objects"]}
        return (chk.draw_boxes(rgb, scene, hl), chk.verdict_markdown(res), chk.violations_markdown(res),
                _df(common.scene_rows(scene), common.scene_headers(scene)))

    def clear():  # before every check: an error must not leave the previous verdict on screen
        return None, "", "", _df([], common.scene_headers(load_catalog().domain)), None

    (btn.click(clear, None, [boxed, verdict_md, violations_md, table, result], api_visibility="private",
               queue=False)
     .then(check, [image, spec, backend], result, api_name="check")
     .success(view, [result, image], [boxed, verdict_md, violations_md, table], api_name="check_view"))
    return {"spec": spec, "image": image}


# ---- Annotate --------------------------------------------------------------------------------------------------
def _annotate_tab(cfg: SpaceConfig) -> dict[str, Any]:
    image_annotator = require("gradio_image_annotation", "space", "the annotation tool").image_annotator

    root = Path(cfg.annotation_root)  # type: ignore[arg-type]
    root.mkdir(parents=True, exist_ok=True)
    store = ann.AnnotationStore(cfg.db_path or root / "annotations.sqlite")
    export_dir = cfg.export_dir or root / "_export"
    labels = ann.box_labels()
    colors = [ann.label_color(lab) for lab in labels]

    gr.Markdown("Draw **one box per object** and pick its colour, material and shape from the list. Mark the scene "
                "flags below. Every edit is saved immediately (who and when are recorded). The prompt is not shown.")
    with gr.Row():
        # filled after login (demo.load): the unauthenticated login page embeds the API description, menus included
        model = gr.Dropdown([], value=None, label="Model (output folder)", scale=2, allow_custom_value=True)
        package = closed_menu(list(PACKAGE_NAMES), value="1SAT", label="Package", scale=1)
        image_id = gr.Dropdown([], label="Image", scale=2, allow_custom_value=True)
        next_btn = gr.Button("Next unannotated →", scale=1)
        refresh = gr.Button("↻ Refresh folders", scale=1)
    progress_md = gr.Markdown()
    annot = annotator_input(image_annotator(
        label_list=labels, label_colors=colors, image_type="filepath", sources=None, show_clear_button=False,
        show_download_button=False, show_share_button=False, show_remove_button=True, label="Objects", height=560,
        interactive=True), cfg.max_file_bytes)
    with gr.Row():
        flag_boxes = {f: gr.Checkbox(label=ann.FLAG_LABELS[f], value=False) for f in ann.FLAGS}
    notes = gr.Textbox(label="Notes (optional)", lines=1)
    status = gr.Markdown()
    key = gr.Textbox(visible=False)  # JSON: which image the widgets show (+ digest of the boxes as loaded)
    with gr.Accordion("Export scene graphs", open=False):
        gr.Markdown(f"Writes `<id>.json` (scene-graph format of `logicval verify` / the `given` backend), "
                    f"`annotations.jsonl` (for `logicval meta --annotations`) and `flags.jsonl` for the selected "
                    f"model into `{export_dir}/<model>/`, and offers a zip.")
        export_btn = gr.Button("Export this model")
        export_md = gr.Markdown()
        export_file = gr.File(label="Download", interactive=False)

    def image_choices(m: str | None, p: str | None) -> list[tuple[str, str]]:
        return ann.image_choices(store, root, m, p) if m else []

    def progress_text(m: str | None, p: str | None) -> str:
        if not m:
            return "_No model folders under the annotation root yet._"
        done, total = ann.progress(store, root, m, p)
        return f"**{m} / {p}:** {done} of {total} images annotated."

    @user_errors
    def images(m: str, p: str, request: gr.Request):
        _user(request)
        ch = image_choices(m, p)
        return gr.Dropdown(choices=ch, value=ch[0][1] if ch else None), progress_text(m, p)

    @user_errors
    def refresh_models(m: str, request: gr.Request):
        _user(request)
        ms = ann.list_models(root)
        return gr.Dropdown(choices=ms, value=m if m in ms else (ms[0] if ms else None))

    @user_errors
    def load(m: str, i: str, request: gr.Request):
        _user(request)
        if not m or not i:
            return (None, *[False] * len(ann.FLAGS), "", "", "_Choose an image._")
        path = ann.image_path(root, m, i)
        ann.image_size(path, cfg.max_file_bytes)  # the image gate: size and pixel caps, from the header
        rec = store.load(m, i)
        shown = _cache_copy(path, annot.GRADIO_CACHE)  # served from gradio's cache, byte for byte
        meta = rec["_meta"]
        k = ann.make_key(m, i, rec["boxes"])
        last = max(meta.values(), key=lambda x: x["at"]) if meta else None
        st = (f"Loaded **{i}** — last edit by {common.md_escape(last['by'])} at {last['at']}" if last
              else f"Loaded **{i}** (no annotation yet)")
        return ({"image": shown, "boxes": rec["boxes"]}, *[bool(rec[f]) for f in ann.FLAGS], rec["notes"], k, st)

    def _saved(res: Mapping[str, Any], who: str, what: str, i: str, notes: list[str] = ()) -> str:
        extra = "".join(f"  \n⚠ {common.md_escape(n)}" for n in notes)
        if not res["changed"]:
            return f"{what} of **{i}** unchanged.{extra}"
        return f"✔ Saved {what} of **{i}** (edit #{res['edit_id']}, {common.md_escape(who)}, {res['at']}).{extra}"

    @user_errors
    def save_boxes(k: str, value: Mapping[str, Any] | None, request: gr.Request):
        who = _user(request)
        if not k or value is None:  # nothing loaded yet (page start): not an edit
            return gr.skip(), gr.skip()
        d = ann.parse_key(k)
        raw = value.get("boxes")
        if d.get("fresh") and ann.box_signature(raw) == d.get("boxes"):  # the echo of loading the image
            return gr.skip(), ann.make_key(d["model"], d["image_id"], None, fresh=False)
        path = ann.image_path(root, d["model"], d["image_id"])  # still a valid image of a known folder
        checked = ann.check_boxes(raw, ann.image_size(path, cfg.max_file_bytes))  # refusals write nothing
        res = store.save(d["model"], d["image_id"], "boxes", checked.boxes, who)
        return (_saved(res, who, f"{len(checked.boxes)} box(es)", d["image_id"], checked.notes()),
                ann.make_key(d["model"], d["image_id"], None, fresh=False))

    def make_field_saver(field_name: str):
        @user_errors
        def save_field(k: str, value: Any, request: gr.Request):
            who = _user(request)
            d = ann.parse_key(k)
            ann.image_path(root, d["model"], d["image_id"])
            res = store.save(d["model"], d["image_id"], field_name, value, who)
            return _saved(res, who, field_name.replace("_", " "), d["image_id"])
        return save_field

    @user_errors
    def next_unannotated(m: str, p: str, current: str, request: gr.Request):
        _user(request)
        ch = image_choices(m, p)
        todo = ann.unannotated(store, root, m, p) if m else []
        if not todo:
            return gr.skip(), "_Every image of this package is annotated._"
        after = [v for v in todo if current is None or v > current]
        return gr.Dropdown(choices=ch, value=(after or todo)[0]), progress_text(m, p)

    @user_errors
    def export(m: str, request: gr.Request):
        _user(request)
        if not m:
            raise gr.Error("choose a model folder first", print_exception=False)
        res = ann.export_model(store, root, m, export_dir)
        zpath = Path(tempfile.mkdtemp(prefix="logicval-export-")) / f"{m}_scenes.zip"
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
            for i in res["written"]:
                z.write(Path(res["dir"]) / f"{i}.json", f"{m}/{i}.json")
            z.write(res["flags_file"], f"{m}/flags.jsonl")
            z.write(res["annotations_file"], f"{m}/annotations.jsonl")
        skipped = "".join(f"\n- {i}: {common.md_escape(why)}" for i, why in list(res["skipped"].items())[:50])
        md = (f"Exported **{len(res['written'])}** scene graph(s) to `{res['dir']}`; "
              f"{len(res['unannotated'])} image(s) not annotated yet."
              + (f"\n\nSkipped {len(res['skipped'])}:{skipped}" if res["skipped"] else ""))
        return md, str(zpath)

    package.change(images, [model, package], [image_id, progress_md], api_name="annotate_images")
    model.change(images, [model, package], [image_id, progress_md], api_name="annotate_images_model")
    refresh.click(refresh_models, model, model, api_name="annotate_models")
    outs = [annot, *flag_boxes.values(), notes, key, status]
    image_id.change(load, [model, image_id], outs, api_name="annotate_load")
    def refresh_progress(m: str, p: str, request: gr.Request) -> str:
        _user(request)
        return progress_text(m, p)

    annot.change(save_boxes, [key, annot], [status, key], api_name="annotate_boxes", concurrency_limit=8,
                 trigger_mode="always_last").success(
        refresh_progress, [model, package], progress_md, api_visibility="private")
    for f, cb in flag_boxes.items():
        ev = cb.input(make_field_saver(f), [key, cb], status, api_name=f"annotate_{f}", concurrency_limit=8)
        if f == "empty_scene":
            ev.success(refresh_progress, [model, package], progress_md, api_visibility="private")
    notes.input(make_field_saver("notes"), [key, notes], status, api_name="annotate_notes", concurrency_limit=8,
                trigger_mode="always_last")
    next_btn.click(next_unannotated, [model, package, image_id], [image_id, progress_md], api_name="annotate_next")
    export_btn.click(export, model, [export_md, export_file], api_name="annotate_export")
    return {"load": refresh_models, "load_in": [model], "load_out": [model]}


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)

# a misconfigured Space (or one without gradio_image_annotation for Annotate) stops here with one line (exit
# status 2), not a traceback
try:
    demo = build_demo(config_or_exit())
except MissingExtraError as e:
    if __name__ == "__main__":
        exit_with_error(str(e))
    raise

if __name__ == "__main__":
    demo.queue(default_concurrency_limit=2).launch(**launch_kwargs(demo))
