"""LogicVal Space: explore the benchmark, compose and solve specs, check images, annotate model outputs.

Run locally::

    python space/app.py                       # public: Explore, Compose, Check
    LOGICVAL_SPACE_USER=alice,bob LOGICVAL_SPACE_PASSWORD=... \\
    LOGICVAL_ANNOTATION_ROOT=/data/outputs python space/app.py      # protected: + Annotate, login on every route

Importing this module builds and starts nothing: `build_demo` builds the app from a configuration, `start`
warms the benchmark and launches it (`launch_kwargs`: authentication, upload cap), and `main` does both from
the environment; only ``python space/app.py`` (``__main__``) calls `main`. See ``space/README.md`` for every
setting. This file lays the tabs out and wires their events; all logic lives in ``logicval_hf.space``
(settings in ``logicval_hf.space.config``; the gradio widgets and error handling in ``logicval_hf.space.widgets``,
the Annotate tab's handlers in ``logicval_hf.space.annotate_handlers``), and the handlers left here only convert
between the widgets and it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

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

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.space import annotation_values as vals
from logicval_hf.space import check as chk
from logicval_hf.space import common, edits
from logicval_hf.space import compose as cmp
from logicval_hf.space import explore as exp
from logicval_hf.space import images as img
from logicval_hf.space import sudoku as sdk
from logicval_hf.space import text as txt
from logicval_hf.space.annotate_actions import AnnotationDesk
from logicval_hf.space.annotate_handlers import AnnotateHandlers
from logicval_hf.space.config import ConfigError, SpaceConfig, config_from_env, config_or_exit, make_auth  # noqa: F401
from logicval_hf.space.widgets import (
    annotator_input,
    closed_menu,
    hide_api_from_page,
    scene_image,
    table,
    upload_image,
    user_errors,
)

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


def start(demo: gr.Blocks, **launch_overrides: Any) -> gr.Blocks:
    """Start a built app: load (or build) the benchmark in the background when the config asks for it
    (``demo.logicval_warmup``: the thread, or None), then queue and launch it with `launch_kwargs` updated by
    ``launch_overrides`` (e.g. ``server_name``, ``prevent_thread_lock``)."""
    cfg = demo.logicval_config  # type: ignore[attr-defined]
    demo.logicval_warmup = common.warm_benchmark() if cfg.preload else None  # type: ignore[attr-defined]
    demo.queue(default_concurrency_limit=2).launch(**{**launch_kwargs(demo), **launch_overrides})
    return demo


def main() -> None:
    """``python space/app.py``: the settings from the environment (a misconfigured Space, or one without
    gradio_image_annotation for Annotate, stops with one line and exit status 2, not a traceback), then `start`."""
    logging.basicConfig(level=logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        demo = build_demo(config_or_exit())
    except MissingExtraError as e:
        exit_with_error(str(e))
    start(demo)


# ---------------------------------------------------------------------------------------------------------------
# The app
# ---------------------------------------------------------------------------------------------------------------
def build_demo(config: SpaceConfig | None = None) -> gr.Blocks:
    """Build the Blocks app (nothing starts: see `start`). ``demo.logicval_config`` keeps the config for
    `launch_kwargs` and `start`; ``demo.logicval_warmup`` is None until `start`."""
    cfg = config if config is not None else config_from_env()
    catalog = load_catalog()
    common.use_disk_cache(cfg.cache_dir)  # Explore reads the built benchmark from disk after the first start

    with gr.Blocks(title="LogicVal") as demo:
        gr.Markdown(f"# {TITLE}\nBenchmark prompts with solver labels, a spec composer with instant solving, an image "
                    "checker (scene graph → verdict), text and Sudoku read by OCR, and the annotation tool"
                    f"{' (log in required)' if cfg.protected else ''}.  \n"
                    f"<small>{common.region_legend(catalog.domain)}</small>", elem_id="lv-header")
        with gr.Tabs() as tabs:
            with gr.Tab("Explore", id="explore"):
                explore_ui = _explore_tab()
            with gr.Tab("Compose", id="compose"):
                _compose_tab(catalog)
            with gr.Tab("Check", id="check"):
                check_ui = _check_tab(cfg)
            with gr.Tab("Text", id="text"):
                _text_tab(cfg)
            with gr.Tab("Sudoku", id="sudoku"):
                _sudoku_tab(cfg)
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
    demo.logicval_warmup = None  # type: ignore[attr-defined]  # the benchmark build thread, set by `start`
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
    with gr.Accordion("Full prompt given to the model", open=False), gr.Row():
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
        sq = table(exp.subquestion_rows(v), exp.SUBQUESTION_HEADERS)
        wt = (table(common.scene_rows(scene), common.scene_headers(scene)).drop(columns=["score"])
              if scene is not None else None)
        return (exp.header_markdown(v), v["prompt_short"], v["prompt_long"], v["full_prompt_short"],
                v["full_prompt_long"], v["asp_program"], sq, exp.spec_pretty(v), exp.core_markdown(v),
                gr.Image(value=scene_image(scene), visible=scene is not None),
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
    t_choices = [("(none)", ""), *cmp.template_choices(catalog)]
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
            r = gr.Markdown(cmp.rules_markdown(tid0, catalog), visible=bool(tid0))
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
        ups.append(gr.Markdown(cmp.rules_markdown(tid, catalog), visible=bool(tid)))
        return ups

    for k in range(cmp.MAX_CONSTRAINTS):
        templates[k].change(user_errors(slot_updates), [templates[k], n],
                            [*slots[k], rules[k]], api_name=f"compose_template_{k + 1}")

    def n_changed(n_val: Any, *vals: Any):
        return [up for tid, current in cmp.menu_rows(vals, catalog)
                for up in slot_updates(tid, n_val, current)[:cmp.MAX_SLOTS]]

    all_inputs = [x for k in range(cmp.MAX_CONSTRAINTS) for x in (templates[k], *slots[k])]
    n.change(user_errors(n_changed), [n, *all_inputs], [s for row in slots for s in row], api_name="compose_n")

    @user_errors
    def compose(n_val: Any, *vals: Any) -> str:
        return cmp.spec_json_text(cmp.build_spec(n_val, cmp.menu_rows(vals, catalog), catalog))

    @user_errors
    def solve(spec_json: str) -> dict[str, Any]:
        spec, _ = common.parse_spec_input(spec_json, catalog)
        return cmp.solve_spec(spec)

    @user_errors
    def view(result: Mapping[str, Any]):
        spec = Spec.from_dict(result["spec"], catalog=catalog, allowed_m=common.COMPOSE_M)
        d = cmp.describe_spec(spec, catalog)
        return (cmp.solve_markdown(result), cmp.constraints_markdown(d), d["full_prompt_short"], d["asp_program"],
                scene_image(cmp.witness_scene(result)))

    (solve_btn.click(compose, [n, *all_inputs], spec_box, api_name="compose")
     .success(solve, spec_box, solve_json, api_name="solve")
     .success(view, solve_json, [label_md, texts_md, fp, asp, witness], api_name="solve_view"))
    solve_json_btn.click(solve, spec_box, solve_json, api_visibility="private").success(
        view, solve_json, [label_md, texts_md, fp, asp, witness], api_visibility="private")


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
    with gr.Row():
        with gr.Column(scale=1):
            edits_img = gr.Image(label="Repair: the edits drawn", type="pil", interactive=False, height=300,
                                 elem_id="check-edits")
        with gr.Column(scale=1):
            repair_md = gr.Markdown(elem_id="check-repair")
    scene_table = gr.Dataframe(label="Scene graph", interactive=False,
                               headers=common.scene_headers(load_catalog().domain), elem_id="check-table")
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
        return (chk.draw_boxes(rgb, scene, chk.involved_objects(res)), chk.verdict_markdown(res),
                chk.violations_markdown(res), table(common.scene_rows(scene), common.scene_headers(scene)))

    @user_errors
    def view_repair(res: Mapping[str, Any], image_path: str):
        repair = res.get("repair") or {}
        if not repair.get("edits"):
            return None, edits.repair_markdown(res)
        rgb = chk.load_upload(image_path, cfg.max_file_bytes)
        return edits.draw_edits(rgb, Scene.from_dict(res["scene"]), repair), edits.repair_markdown(res)

    def clear():  # before every check: an error must not leave the previous verdict on screen
        return None, "", "", table([], common.scene_headers(load_catalog().domain)), None, None, ""

    (btn.click(clear, None, [boxed, verdict_md, violations_md, scene_table, result, edits_img, repair_md],
               api_visibility="private", queue=False)
     .then(check, [image, spec, backend], result, api_name="check")
     .success(view, [result, image], [boxed, verdict_md, violations_md, scene_table], api_name="check_view")
     .success(view_repair, [result, image], [edits_img, repair_md], api_name="check_repair"))
    return {"spec": spec, "image": image}


# ---- Text and Sudoku: GIR-Bench's text rendering and visual logic, read by OCR (the "ocr" extra) ------------------
TEXT_SPEC_HINT = ('{"domain": "text", "constraints": [{"template": "C4/pair_rel", "params": {"A1": {"prop": "text", '
                  '"value": "SALE", "negated": false}, "B1": {"prop": "text", "value": "TODAY", "negated": false}, '
                  '"R1": {"rel": "above", "negated": false}}}]}')


def _text_tab(cfg: SpaceConfig) -> None:
    gr.Markdown("Upload an image with text. Its lines are read by OCR (PP-OCRv6) and scored against the target text "
                "(GIR-Bench's word-level continuous substring score); a spec over the lines (domain `text`: "
                "“SALE above TODAY”, “exactly one line reading …”) is verified and, when it fails, repaired.")
    with gr.Row():
        with gr.Column(scale=1):
            image = upload_image(cfg.max_file_bytes, label="Image", sources=["upload", "clipboard"], height=300)
            target = gr.Textbox(label="Target text (what the image must show)")
            spec = gr.Textbox(label="Text spec JSON (optional)", lines=3, placeholder=TEXT_SPEC_HINT)
            conf = gr.Slider(0, 0.95, value=0.5, step=0.05, label="Keep lines with confidence above")
            btn = gr.Button("Read", variant="primary")
        with gr.Column(scale=1):
            boxed = gr.Image(label="Lines read", type="pil", interactive=False, height=300)
            summary = gr.Markdown()
    with gr.Accordion("Result JSON", open=False):
        result = gr.JSON()

    @user_errors
    def read(image_path: str, target_text: str, spec_text: str, min_conf: float) -> dict[str, Any]:
        if not image_path:
            raise gr.Error("upload an image first", print_exception=False)
        return txt.read_upload(image_path, target_text, spec_text, float(min_conf), cfg.max_file_bytes)

    @user_errors
    def view(res: dict[str, Any], image_path: str):
        return txt.draw_lines(img.decode(image_path, cfg.max_file_bytes), res), txt.result_markdown(res)

    (btn.click(read, [image, target, spec, conf], result, api_name="text_read")
     .success(view, [result, image], [boxed, summary], api_name="text_view"))


def _sudoku_tab(cfg: SpaceConfig) -> None:
    gr.Markdown("Make a puzzle (clingo proves its solution unique), then upload an image of the filled grid: the grid "
                "is found, its cells read by OCR, and clingo's rules judge it. Tinted: red a given changed, orange a "
                "digit repeated in its row, column or box, yellow no digit read.")
    with gr.Row():
        with gr.Column(scale=1):
            with gr.Row():
                seed = gr.Number(value=0, precision=0, label="Seed")
                make_btn = gr.Button("Make a puzzle")
            puzzle = gr.Textbox(label="Puzzle JSON (or paste one)", lines=3)
            with gr.Row():
                puzzle_img = gr.Image(label="Puzzle", type="pil", interactive=False, height=240)
                answer_img = gr.Image(label="Its answer", type="pil", interactive=False, height=240)
        with gr.Column(scale=1):
            image = upload_image(cfg.max_file_bytes, label="Image of the filled grid", sources=["upload", "clipboard"],
                                 height=240)
            check_btn = gr.Button("Check", variant="primary")
            shown = gr.Image(label="Grid read", type="pil", interactive=False, height=300)
            summary = gr.Markdown()
    with gr.Accordion("Result JSON", open=False):
        result = gr.JSON()

    @user_errors
    def check(puzzle_text: str, image_path: str) -> dict[str, Any]:
        if not image_path:
            raise gr.Error("upload an image first", print_exception=False)
        return sdk.check_upload(puzzle_text, image_path, cfg.max_file_bytes)

    @user_errors
    def view(res: dict[str, Any], image_path: str):
        return sdk.draw_check(img.decode(image_path, cfg.max_file_bytes), res), sdk.result_markdown(res)

    make_btn.click(user_errors(sdk.make_puzzle), seed, [puzzle, puzzle_img, answer_img], api_name="sudoku_make")
    (check_btn.click(check, [puzzle, image], result, api_name="sudoku_check")
     .success(view, [result, image], [shown, summary], api_name="sudoku_view"))


# ---- Annotate --------------------------------------------------------------------------------------------------
def _annotate_tab(cfg: SpaceConfig) -> dict[str, Any]:
    image_annotator = require("gradio_image_annotation", "space", "the annotation tool").image_annotator

    desk = AnnotationDesk(cfg.annotation_root, cfg.db_path, cfg.export_dir,  # type: ignore[arg-type]
                          cfg.max_file_bytes)
    labels = vals.box_labels()
    colors = [vals.label_color(lab) for lab in labels]

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
        flag_boxes = {f: gr.Checkbox(label=vals.FLAG_LABELS[f], value=False) for f in vals.FLAGS}
    notes = gr.Textbox(label="Notes (optional)", lines=1)
    status = gr.Markdown()
    key = gr.Textbox(visible=False)  # JSON: which image the widgets show (+ digest of the boxes as loaded)
    with gr.Accordion("Export scene graphs", open=False):
        gr.Markdown(f"Writes `<id>.json` (scene-graph format of `logicval verify` / the `given` backend), "
                    f"`annotations.jsonl` (for `logicval meta --annotations`) and `flags.jsonl` for the selected "
                    f"model into `{desk.export_dir}/<model>/`, and offers a zip.")
        export_btn = gr.Button("Export this model")
        export_md = gr.Markdown()
        export_file = gr.File(label="Download", interactive=False)

    h = AnnotateHandlers(desk, annot.GRADIO_CACHE)
    package.change(h.images, [model, package], [image_id, progress_md], api_name="annotate_images")
    model.change(h.images, [model, package], [image_id, progress_md], api_name="annotate_images_model")
    refresh.click(h.refresh_models, model, model, api_name="annotate_models")
    outs = [annot, *flag_boxes.values(), notes, key, status]
    image_id.change(h.load, [model, image_id], outs, api_name="annotate_load")

    annot.change(h.save_boxes, [key, annot], [status, key], api_name="annotate_boxes", concurrency_limit=8,
                 trigger_mode="always_last").success(
        h.refresh_progress, [model, package], progress_md, api_visibility="private")
    for f, cb in flag_boxes.items():
        ev = cb.input(h.field_saver(f), [key, cb], status, api_name=f"annotate_{f}", concurrency_limit=8)
        if f == "empty_scene":
            ev.success(h.refresh_progress, [model, package], progress_md, api_visibility="private")
    notes.input(h.field_saver("notes"), [key, notes], status, api_name="annotate_notes", concurrency_limit=8,
                trigger_mode="always_last")
    next_btn.click(h.next_unannotated, [model, package, image_id], [image_id, progress_md], api_name="annotate_next")
    export_btn.click(h.export, model, [export_md, export_file], api_name="annotate_export")
    return {"load": h.refresh_models, "load_in": [model], "load_out": [model]}


if __name__ == "__main__":
    main()
