"""The main job's report: tables (Markdown and HTML), PNG plots and ``summary.json``.

Everything is rendered from the summary that `logicval_hf.job.run.run` assembles (one entry per generator with
the metric's scores, the known-truth scores and the agreement between the two), so the Markdown, the HTML and
the JSON always say the same thing. Tables:

1. success rate per package, the metric's verdicts and, for the built-in generators, the known truth;
2. 1SAT success per constraint class C1-C9;
3. count-relaxed success, and success per compositional load (Imag-Eval: objects plus constraints that must
   hold at once, ``n + m``) with a plot of success against load;
4. UNSAT abstention and false abstention on SAT specs;
5. constraint success per logical operator (∃, ∀, →, count) and per class over all SAT constraints;
6. agreement between the metric and the known truth (accuracy, confusion counts, per package)
   and the worst disagreements by id; the perception backend's confidence in its scene graphs and the least
   certain images, first; a gallery of examples per generator (thumbnails, failures first, with the perceived
   boxes and the violated constraint; `logicval_hf.job.gallery`);
7. what the perturbed generator changed, failed generations of image folders, timings per stage.

Warnings (a folder of images that lacks some) open the report, before the tables.

Every section says what it measures in its own words, so the report reads without the paper. A rate is never
rounded to an exact 0 or 1 it is not (`_fmt`); a verdict that fails says what broke, a constraint or the count
(`what_broke`). Every file is written atomically (temporary name, then rename).
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.verbalise import constraint_names

__all__ = ["SUMMARY_KEYS", "VOLATILE_KEYS", "GENERATOR_KEYS", "sections", "to_markdown", "to_html", "what_broke",
           "write_plots", "write_report"]

#: top-level keys of summary.json
SUMMARY_KEYS = ("logicval_version", "seed", "backend", "backend_fingerprint", "image_size", "limit", "n_specs",
                "packages", "generators", "jobs", "timings", "cpu_seconds", "work")
#: keys that change from run to run (wall/CPU time, what was redone or reused); the rest is reproducible
VOLATILE_KEYS = ("jobs", "timings", "cpu_seconds", "work")
#: keys of every ``summary["generators"][name]`` entry (``truth``/``agreement`` are null for image folders)
GENERATOR_KEYS = ("kind", "folder", "n_images", "missing", "unreadable", "metric", "truth", "agreement", "left_out",
                  "warnings", "gallery", "confidence", "repair")
#: thumbnails per row of a gallery
GALLERY_COLUMNS = 4
OPERATOR_SYMBOLS = {"exists": "∃", "forall": "∀", "implies": "→", "count": "count"}


#: the most digits `_fmt` shows to keep a rate near 0 or 1 from reading as exactly 0 or 1
_MAX_DIGITS = 4


def _fmt(x: Any, digits: int = 2) -> str:
    """A cell: ``–`` for none, yes/no, a float with ``digits`` decimals, more of them (up to `_MAX_DIGITS`) when
    fewer would show a value that is not a whole number as one (508 of 509 is 0.998, never 1.00)."""
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        for d in range(digits, _MAX_DIGITS + 1):
            text = f"{x:.{d}f}"
            if x == round(x) or float(text) != round(x):
                return text
        step = 10.0 ** -_MAX_DIGITS  # still shows as whole: say on which side of it the value lies
        return f">{round(x) - step:.{_MAX_DIGITS}f}" if x < round(x) else f"<{round(x) + step:.{_MAX_DIGITS}f}"
    return str(x)


def _classes() -> list[str]:
    return list(load_catalog().classes)


def what_broke(violated: Sequence[int] | None, count_ok: bool | None = None, n_objects: int | None = None,
               n: int | None = None, label: str | None = None) -> str:
    """What a verdict says broke, in the prompt's words: the violated constraints ("Constraint 2"), the object
    count ("count: 4 objects, the prompt asks for 5"), objects drawn for an unsatisfiable prompt, or "none";
    "–" when unknown. A failed count is never reported as "none"."""
    if violated is None:
        return "–"
    found = "–" if n_objects is None else str(n_objects)
    if label == "UNSAT" and n_objects:
        return f"{found} object(s) drawn for an unsatisfiable prompt (the right answer is an empty scene)"
    parts = [constraint_names(violated)] if violated else []
    if count_ok is False:
        parts.append(f"count: {found} object(s), the prompt asks for {'–' if n is None else n}")
    return "; ".join(parts) or "none"


def _loads(gens: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Compositional loads present in any generator's breakdown, in increasing order."""
    found = {k for e in gens.values() for agg in (e["metric"], e["truth"]) if agg for k in agg.get("by_load", {})}
    return sorted(found, key=int)


class Section:
    """A titled block of text, a bulleted list (``items``) and/or one table (headers + rows of cells)."""

    def __init__(self, title: str, text: str = "", headers: Sequence[str] = (), rows: Sequence[Sequence[Any]] = (),
                 level: int = 2, image: str | None = None, items: Sequence[str] = (),
                 gallery: Sequence[tuple[str | None, str, str]] = ()):
        self.title, self.text, self.headers, self.rows, self.level, self.image = title, text, list(headers), \
            [list(r) for r in rows], level, image
        self.items = list(items)
        self.gallery = list(gallery)  # (thumbnail path or None, its alt text, caption)


def _verdict_rows(gens: Mapping[str, Mapping[str, Any]], cells: Callable[[Mapping[str, Any]], list[str]]
                  ) -> list[list[str]]:
    """Table rows: per generator, the metric's verdicts then the known truth's (when there is one)."""
    return [[g, who, *cells(agg)] for g, e in gens.items()
            for who, agg in (("metric", e["metric"]), ("known truth", e["truth"])) if agg is not None]


def sections(summary: Mapping[str, Any], worst: Mapping[str, Sequence[Mapping[str, Any]]],
             plots: Mapping[str, str] | None = None) -> list[Section]:
    """The report's content, independent of the output format."""
    plots = plots or {}
    gens: Mapping[str, Mapping[str, Any]] = summary["generators"]
    packages = [p for p in PACKAGE_NAMES if summary["packages"].get(p)]
    classes = _classes()
    out: list[Section] = []
    builtin = [g for g, e in gens.items() if e["truth"] is not None]
    lim = f", the first {summary['limit']} per package" if summary.get("limit") else ""
    out.append(Section(
        "LogicVal report",
        f"{summary['n_specs']} specifications (benchmark seed {summary['seed']}{lim}), perception backend "
        f"`{summary['backend']}`, images {summary['image_size'][0]}x{summary['image_size'][1]}. "
        "Each prompt was generated from a *specification*: a scene size n and 1, 3 or 6 logical constraints; "
        "the solver labels it SAT (some scene satisfies it) or UNSAT (none does). The benchmark's *packages* "
        "group the specifications by number of constraints and label: 1SAT holds satisfiable one-constraint "
        "prompts, 6UNSAT unsatisfiable six-constraint ones, and so on. Each image is read into a scene graph "
        "(objects with colour, shape, material and box) and the solver checks it against the specification. "
        "A verdict is *ok* when the perceived scene has exactly n objects and satisfies every constraint; "
        "for an UNSAT specification, when the scene is empty (the model abstains). Rates are fractions of "
        "images, from 0 to 1. "
        "*Known truth* is the solver's verdict on the scene the generator intended (oracle: the solver's "
        "witness with the attributes the constraints leave free re-drawn at random, each change checked by the "
        "solver, or the empty scene for UNSAT; naive: n random objects; perturbed: the oracle scene with one "
        "change that breaks exactly one constraint or only the count).", level=1))
    notes = [f"**{g}**: {w}" for g, e in gens.items() for w in e.get("warnings") or ()]
    if notes:
        out.append(Section("Warnings", "Read these before the scores below.", items=notes))

    # 1. success per package
    rows = _verdict_rows(gens, lambda agg: [_fmt(agg["by_package"].get(p, {}).get("score")) for p in packages]
                         + [_fmt(agg["logicval_score"])])
    out.append(Section("Success rate per package", "Fraction of images whose verdict is ok. "
                       "Package sizes: " + ", ".join(f"{p} {summary['packages'][p]}" for p in packages) + ".",
                       ["generator", "verdicts", *packages, "all"], rows, image=plots.get("by_package")))

    # 2. per class on 1SAT
    rows = _verdict_rows(gens, lambda agg: [_fmt(agg["by_class"].get(c, {}).get("score")) for c in classes])
    out.append(Section("1SAT success per constraint class",
                       "Single-constraint SAT specifications (1SAT), by the class of their constraint (C1 "
                       "existential, C2 universal, C3 conditional, C4 existential subgraph, C5 conditional "
                       "subgraph, C6 exists-forall, C7 forall-exists, C8 count against a constant, C9 count "
                       "against a count; `logicval templates` lists them); strict verdict.",
                       ["generator", "verdicts", *classes], rows, image=plots.get("by_class")))

    # 3. count-relaxed
    def relaxed(agg: Mapping[str, Any]) -> list[str]:
        one = agg["by_package"].get("1SAT", {})
        return [_fmt(one.get("score")), _fmt(one.get("relaxed_score")), _fmt(agg["sat_score"]),
                _fmt(agg["sat_relaxed_score"]), _fmt(agg["count_accuracy"])]

    rows = _verdict_rows(gens, relaxed)
    out.append(Section("Count-relaxed success",
                       "Strict verdict against the count-relaxed one, which ignores the number of objects (every "
                       "constraint must still hold): the gap is what wrong object counts cost. Count accuracy: "
                       "fraction of SAT images with exactly n objects.",
                       ["generator", "verdicts", "1SAT strict", "1SAT relaxed", "SAT strict", "SAT relaxed",
                        "count accuracy"], rows))

    # 3b. compositional load
    loads = _loads(gens)
    if loads:
        rows = _verdict_rows(gens, lambda agg: [_fmt(agg.get("by_load", {}).get(k, {}).get("score")) for k in loads])
        sizes: dict[str, Any] = next((e["metric"].get("by_load", {}) for e in gens.values()), {})
        out.append(Section("Success per compositional load",
                           "SAT specifications grouped by compositional load (Imag-Eval): the number of objects n "
                           "plus the number of constraints m that must hold at once; strict verdict. Specifications "
                           "per load: " + ", ".join(f"{k}: {sizes.get(k, {}).get('n', 0)}" for k in loads) + ".",
                           ["generator", "verdicts"] + [f"load {k}" for k in loads], rows,
                           image=plots.get("by_load")))

    # 4. UNSAT abstention
    unsat = [p for p in packages if p.endswith("UNSAT")]
    rows = _verdict_rows(gens, lambda agg: [_fmt(agg["abstention_by_package"].get(p, {}).get("rate")) for p in unsat]
                         + [_fmt(agg["abstention_rate"]), _fmt(agg["false_abstention_rate"])])
    out.append(Section("UNSAT abstention",
                       "No scene satisfies an UNSAT specification, so the right answer is an empty image: the "
                       "fraction of UNSAT specifications answered with an empty scene. False abstention: empty "
                       "scenes for SAT specifications.",
                       ["generator", "verdicts", *unsat, "all UNSAT", "false abstention (SAT)"], rows))

    # 5. per operator / per class over all constraints
    ops = ["exists", "forall", "implies", "count"]
    rows = _verdict_rows(gens, lambda agg: [_fmt(agg["constraint_success_by_operator"].get(o, {}).get("rate"))
                                            for o in ops])
    out.append(Section("Constraint success per logical operator",
                       "Every constraint of every SAT specification, object count ignored; a constraint counts "
                       "for each operator its template uses.",
                       ["generator", "verdicts"] + [OPERATOR_SYMBOLS[o] for o in ops], rows))
    rows = _verdict_rows(gens, lambda agg: [_fmt(agg["constraint_success_by_class"].get(c, {}).get("rate"))
                                            for c in classes])
    out.append(Section("Constraint success per class (all SAT packages)",
                       "Every constraint of every SAT specification, object count ignored.",
                       ["generator", "verdicts", *classes], rows))

    # 6. agreement
    if builtin:
        rows = []
        for g in builtin:
            a, e = gens[g]["agreement"], gens[g]
            rows.append([g, a["n"], _fmt(a["accuracy"]), _fmt(a["relaxed_accuracy"]), a["tp"], a["fp"], a["fn"],
                         a["tn"], _fmt(e["metric"]["logicval_score"]), _fmt(e["truth"]["logicval_score"]),
                         _fmt(a["scene_exact_rate"])])
        allp = [(gens[g]["agreement"]) for g in builtin]
        n = sum(a["n"] for a in allp)
        agree = sum(a["tp"] + a["tn"] for a in allp)
        rows.append(["all", n, _fmt(agree / n if n else None), "", sum(a["tp"] for a in allp),
                     sum(a["fp"] for a in allp), sum(a["fn"] for a in allp), sum(a["tn"] for a in allp), "", "", ""])
        out.append(Section(
            "Agreement with the known truth",
            "The metric's strict verdict against the solver's verdict on the intended scene (positive = ok). "
            "FP: the metric accepts an image whose intended scene fails; FN: it rejects a correct one. "
            "Scene exact: the perceived scene has the intended objects with the intended colour, shape, "
            "material and region, every object found and nothing extra.",
            ["generator", "images", "accuracy", "relaxed accuracy", "TP", "FP", "FN", "TN", "metric score",
             "truth score", "scene exact"], rows))
        rows = []
        for g in builtin:
            bp = gens[g]["agreement"]["by_package"]
            rows.append([g] + [f"{_fmt(bp[p]['accuracy'])} ({bp[p]['fp']} FP, {bp[p]['fn']} FN)" if p in bp else "–"
                               for p in packages])
        out.append(Section("Agreement per package", "Accuracy, with the false positives and negatives.",
                           ["generator", *packages], rows, image=plots.get("agreement")))
        for g in builtin:
            ws = worst.get(g, [])
            total = gens[g]["agreement"]["disagreements"]
            if not ws:
                out.append(Section(f"Worst disagreements: {g}", "None: the metric agrees with the truth on every "
                                   "image.", level=3))
                continue
            rows = [[d["id"], d["package"], d["kind"], d["intended_objects"], _fmt(d["perceived_objects"]),
                     d["scene_errors"], _fmt(d.get("confidence")),
                     what_broke(d.get("truth_violated"), d.get("truth_count_ok"), d["intended_objects"], d.get("n"),
                                d.get("label")),
                     what_broke(d.get("metric_violated"), d.get("metric_count_ok"), d["perceived_objects"],
                                d.get("n"), d.get("label")),
                     d["diff"], d.get("generation") or ""] for d in ws]
            out.append(Section(
                f"Worst disagreements: {g}",
                f"{total} disagreement(s); the {len(ws)} with the largest scene-graph error (missed, extra and "
                "misread objects) are shown, all are in `disagreements.json`. Confidence: the perception "
                "backend's probability that its scene graph is right. Images: "
                f"`images/{g}/<id>.png`, perceived scenes: `verdicts/{g}/<id>.json`.",
                ["id", "package", "kind", "intended objects", "perceived objects", "scene errors", "confidence",
                 "what broke (truth)", "what broke (metric)", "difference", "generation"], rows, level=3))

    # 6b. where perception is least sure
    rated = {g: e["confidence"] for g, e in gens.items() if e.get("confidence")}
    if rated:
        out.append(Section(
            "Perception confidence",
            "The perception backend's probability that each scene graph is right (the whole graph: every object "
            "found, nothing extra, every attribute and region read right). A verdict rests on its scene graph, so "
            "the least certain images are the ones to look at first.",
            ["generator", "images rated", "mean", "lowest"],
            [[g, c["n"], _fmt(c["mean"]), _fmt(c["min"])] for g, c in rated.items()]))
        for g, c in rated.items():
            with_truth = any(x["truth"] is not None for x in c["least_certain"])
            out.append(Section(
                f"Least certain images: {g}", f"The {len(c['least_certain'])} images whose scene graph the "
                "backend is least sure of, least certain first.",
                ["id", "package", "confidence", "verdict", *(["known truth"] if with_truth else []),
                 "perceived objects", "what broke (metric)"],
                [[x["id"], x["package"], _fmt(x["confidence"]), "ok" if x["ok"] else "not ok",
                  *(["–" if x["truth"] is None else "ok" if x["truth"] else "not ok"] if with_truth else []),
                  _fmt(x["n_objects"]),
                  "none" if x["ok"] else what_broke(x["violated"], x.get("count_ok"), x["n_objects"], x.get("n"),
                                                    x.get("label"))] for x in c["least_certain"]], level=3))

    # 6c. repairs: how far each image is from right, in edits
    repaired = {g: e["repair"] for g, e in gens.items() if e.get("repair")}
    if repaired:
        top = max((int(k) for r in repaired.values() for k in r["costs"]), default=0)
        shown_costs = [str(k) for k in range(min(top, 5) + 1)]
        rows = [[g, r["n"], _fmt(r["mean"]), _fmt(r["median"])]
                + [r["costs"].get(k, 0) for k in shown_costs]
                + ([sum(v for k, v in r["costs"].items() if int(k) > 5)] if top > 5 else []) + [r["unproven"]]
                for g, r in repaired.items()]
        out.append(Section(
            "Repair cost",
            "The fewest edits after which each perceived scene satisfies its specification (`logicval repair`: "
            "change a colour, shape or material, move, remove or add an object; each edit costs 1; for an UNSAT "
            "specification every object is removed): how far an image is from right. Images per cost; "
            "unproven: repairs the time budget cut short (the best found, an upper bound).",
            ["generator", "images", "mean", "median", *[f"cost {k}" for k in shown_costs],
             *(["cost > 5"] if top > 5 else []), "unproven"], rows))
    corrected = {g: e["self_correction"] for g, e in gens.items() if e.get("self_correction")}
    if corrected:
        rows = [[g, label, s["n"], s["right_before"], f"{s['fixed']} ({_fmt(s['fixed_share'])})",
                 _fmt(s["mean_edits"]), _fmt(s["median_cost"])]
                for g, by_label in corrected.items() for label, s in by_label.items() if s["n"]]
        out.append(Section(
            "Self-correction (one round)",
            "Each perceived scene repaired, the repaired scene drawn by the built-in renderer as the image editor, "
            "perceived again and verified (`benchmarks/self_correct.py` runs the same loop): the images that "
            "satisfy their specification after one round.",
            ["generator", "label", "images", "right before", "right after one round", "mean edits",
             "median cost"], rows))

    # 6d. examples
    for g, e in gens.items():
        shots = e.get("gallery") or []
        if shots:
            out.append(Section(
                f"Examples: {g}",
                "Failures first (images the metric rejects, or where it disagrees with the known truth), then "
                "others, a few per package; yellow boxes: the objects the perception backend found. "
                f"Thumbnails: `gallery/{g}/`.", level=3,
                gallery=[(x["image"], x["id"], f"{x['id']}: {x['caption']}"
                          + (f" (confidence {x['confidence']:.2f})" if x.get("confidence") is not None else "")
                          + _fix(x.get("instructions")))
                         for x in shots]))

    # 7. perturbations, failed generations, timings
    for g, e in gens.items():
        if e.get("perturbations"):
            rows = [[k.split("/")[0], k.split("/")[1], v] for k, v in e["perturbations"].items()]
            inexact = e.get("inexact_perturbations") or []
            out.append(Section(f"Perturbations made by {g}",
                               "Kind of the single change and what it broke (a constraint, only the count, or the "
                               "abstention of an UNSAT spec). " + (f"Not exactly one broken item: {', '.join(inexact)}."
                                                                  if inexact else "Every change broke exactly one "
                                                                  "item, checked by the solver."),
                               ["change", "broken", "images"], rows, level=3))
    folders = [g for g, e in gens.items() if e["kind"] == "folder"]
    if folders:
        folder_rows: list[list[Any]] = []
        for g in folders:
            e = gens[g]
            miss, bad = e["missing"], e["unreadable"]
            folder_rows.append([g, e["folder"], e["n_images"], len(miss),
                                ", ".join(miss[:30]) + (" ..." if len(miss) > 30 else ""),
                                ", ".join(bad[:30]), len(e.get("left_out") or ())])
        out.append(Section("Failed generations",
                           "Image folders: ids without an image (or with an unreadable one) count as failed "
                           "generations, i.e. as not ok under both count modes; with `--only-present` the ids "
                           "without an image are left out of every score instead.",
                           ["generator", "folder", "images found", "missing", "missing ids", "unreadable ids",
                            "left out"], folder_rows))
    t, c = summary["timings"], summary.get("cpu_seconds", {})
    rows = [[k, f"{v:.1f}", f"{c[k]:.1f}" if k in c else "–"] for k, v in t.items()]
    out.append(Section("Timings", f"Seconds per stage: wall clock, and CPU time of this process and its "
                       f"{summary.get('jobs', 1)} worker process(es) (CPU > wall: the workers ran in parallel; "
                       "CPU < wall: the machine was busy with other work).",
                       ["stage", "wall s", "CPU s"], rows))
    return out


# ---------------------------------------------------------------------------------------------
# Markdown / HTML
# ---------------------------------------------------------------------------------------------
def _fix(instructions: Sequence[str] | None, shown: int = 2) -> str:
    """A gallery caption's repair: its first sentences (what would make the image right)."""
    if not instructions:
        return ""
    more = f" (+{len(instructions) - shown} more)" if len(instructions) > shown else ""
    return " Fix: " + " ".join(instructions[:shown]) + more


def _md_cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def to_markdown(secs: Sequence[Section]) -> str:
    lines: list[str] = []
    for s in secs:
        lines.append("#" * s.level + " " + s.title)
        lines.append("")
        if s.text:
            lines.append(s.text)
            lines.append("")
        if s.items:
            lines.extend(f"- {item}" for item in s.items)
            lines.append("")
        if s.image:
            lines.append(f"![{s.title}]({s.image})")
            lines.append("")
        if s.gallery:
            # a table of thumbnails, GALLERY_COLUMNS a row (the first row is the table's header: Markdown wants one)
            cells = [(f"![{_md_cell(a)}]({p})<br>" if p else "") + _md_cell(c) for p, a, c in s.gallery]
            width = min(GALLERY_COLUMNS, len(cells))
            cells += ["–"] * (-len(cells) % width)
            for k in range(0, len(cells), width):
                lines.append("| " + " | ".join(cells[k:k + width]) + " |")
                if k == 0:
                    lines.append("|" + "|".join("---" for _ in range(width)) + "|")
            lines.append("")
        if s.headers:
            lines.append("| " + " | ".join(_md_cell(h) for h in s.headers) + " |")
            lines.append("|" + "|".join("---" for _ in s.headers) + "|")
            for r in s.rows:
                lines.append("| " + " | ".join(_md_cell(c) for c in r) + " |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:75em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td.t,th:first-child{text-align:left}img{max-width:100%}code{background:#f3f3f3}
.gallery{display:flex;flex-wrap:wrap;gap:.8em}.gallery figure{margin:0;width:200px;font-size:.8em}"""


def _inline(text: str) -> str:
    """Escape, then turn `code` spans and *emphasis* into HTML."""
    import re

    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", t)


def _numeric(cell: Any) -> bool:
    text = str(cell).strip()
    return text in ("", "–") or text.replace(".", "", 1).replace("-", "", 1).isdigit()


def to_html(secs: Sequence[Section]) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>LogicVal report</title>',
             f"<style>{_CSS}</style></head><body>"]
    for s in secs:
        parts.append(f"<h{s.level}>{html.escape(s.title)}</h{s.level}>")
        if s.text:
            parts.append(f"<p>{_inline(s.text)}</p>")
        if s.items:
            parts.append("<ul>" + "".join(f"<li>{_inline(item)}</li>" for item in s.items) + "</ul>")
        if s.image:
            parts.append(f'<p><img src="{html.escape(s.image)}" alt="{html.escape(s.title)}"></p>')
        if s.gallery:
            parts.append('<div class="gallery">' + "".join(
                "<figure>" + (f'<img src="{html.escape(p)}" alt="{html.escape(a)}">' if p else "")
                + f"<figcaption>{html.escape(c)}</figcaption></figure>" for p, a, c in s.gallery) + "</div>")
        if s.headers:
            parts.append("<table><thead><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in s.headers)
                         + "</tr></thead><tbody>")
            for r in s.rows:
                parts.append("<tr>" + "".join(
                    f"<td>{html.escape(str(c))}</td>" if _numeric(c) else f'<td class="t">{html.escape(str(c))}</td>'
                    for c in r) + "</tr>")
            parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------
def _bars(ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[float | None]],
          truth: Mapping[str, Sequence[float | None]] | None = None) -> None:
    k = max(1, len(series))
    width = 0.8 / k
    for j, (name, vals) in enumerate(series.items()):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0.0 for v in vals], width, label=name)
        if truth and truth.get(name) is not None:
            tv = truth[name]
            ax.scatter([x for x, v in zip(xs, tv, strict=True) if v is not None], [v for v in tv if v is not None],
                       marker="_", s=120, color="black", zorder=3,
                       label="known truth" if j == 0 else None)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylim(0, 1.05)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)


def _plot_by_load(ax: Any, gens: Mapping[str, Mapping[str, Any]], loads: Sequence[str]) -> None:
    """Success against compositional load: per generator the metric as a thin line with dots, drawn over the
    known truth as a wide pale band of the same colour, so that where the two agree the line lies inside the band
    (a dashed truth line drawn under a solid metric line hid exactly under it)."""
    xs = [int(k) for k in loads]

    def points(agg: Mapping[str, Any]) -> tuple[list[int], list[float]]:
        pts = [(x, agg.get("by_load", {}).get(k, {}).get("score")) for x, k in zip(xs, loads, strict=True)]
        pts = [(x, y) for x, y in pts if y is not None]
        return [x for x, _ in pts], [y for _, y in pts]

    for j, (g, e) in enumerate(gens.items()):
        colour = f"C{j % 10}"
        if e["truth"]:
            x, y = points(e["truth"])
            ax.plot(x, y, "-", color=colour, linewidth=8, alpha=0.25, solid_capstyle="round", zorder=1,
                    label=f"{g} (known truth)")
        x, y = points(e["metric"])
        if x:
            ax.plot(x, y, "-o", color=colour, linewidth=1.5, markersize=4, zorder=3, label=f"{g} (metric)")
    ax.set_xticks(xs)
    ax.set_ylim(-0.03, 1.05)  # a score of 0 stays visible above the axis
    ax.grid(alpha=0.3)
    ax.set_xlabel("compositional load (objects n + constraints m)")
    ax.set_ylabel("success rate (SAT)")
    ax.set_title("Success against compositional load (line: metric, pale band: known truth)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)


def write_plots(out: Path, summary: Mapping[str, Any]) -> dict[str, str]:
    """PNG bar charts (matplotlib, Agg) under ``out/plots``; ``{name: relative path}`` (empty without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is in the data/test extras
        return {}
    from logicval_hf.common.atomic import atomic_write_bytes

    gens = summary["generators"]
    packages = [p for p in PACKAGE_NAMES if summary["packages"].get(p)]
    classes = _classes()
    written: dict[str, str] = {}

    def save(fig: Any, name: str) -> None:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        atomic_write_bytes(out / "plots" / f"{name}.png", buf.getvalue())
        written[name] = f"plots/{name}.png"

    def pick(key: str, groups: Sequence[str], field: str = "score"):
        series, truth = {}, {}
        for g, e in gens.items():
            series[g] = [e["metric"][key].get(x, {}).get(field) for x in groups]
            truth[g] = [e["truth"][key].get(x, {}).get(field) for x in groups] if e["truth"] else None
        return series, truth

    for key, groups, title in (("by_class", classes, "1SAT success per constraint class"),
                               ("by_package", packages, "Success per package")):
        fig, ax = plt.subplots(figsize=(9, 3.6))
        s, t = pick(key, groups)
        _bars(ax, groups, s, t)
        ax.set_title(f"{title} (bars: metric, ticks: known truth)")
        ax.set_ylabel("success rate")
        save(fig, key)

    loads = _loads(gens)
    if loads:
        fig, ax = plt.subplots(figsize=(9, 3.6))
        _plot_by_load(ax, gens, loads)
        save(fig, "by_load")

    builtin = [g for g, e in gens.items() if e["agreement"] is not None]
    if builtin:
        fig, ax = plt.subplots(figsize=(9, 3.6))
        series = {g: [gens[g]["agreement"]["by_package"].get(p, {}).get("accuracy") for p in packages]
                  for g in builtin}
        _bars(ax, packages, series)
        ax.set_title("Agreement of the metric with the known truth, per package")
        ax.set_ylabel("accuracy")
        save(fig, "agreement")
    return written


def write_report(out: str | Path, summary: dict[str, Any], worst: Mapping[str, Sequence[Mapping[str, Any]]],
                 timer: Any = None) -> dict[str, Path]:
    """Write plots, ``report.md``, ``report.html`` and ``summary.json`` into ``out``; return their paths.

    ``timer``: the run's `logicval_hf.job.timer.StageTimer` (whose ``wall`` / ``cpu`` are the summary's
    ``timings`` / ``cpu_seconds``); its open stages (the report's) end and its ``total`` is booked once the plots
    are drawn, so the files written after that hold them.
    """
    from logicval_hf.common.atomic import atomic_write_json, atomic_write_text

    out = Path(out)
    plots = write_plots(out, summary)
    if timer is not None:
        timer.finish()
    secs = sections(summary, worst, plots)
    paths = {"report.md": out / "report.md", "report.html": out / "report.html", "summary.json": out / "summary.json"}
    atomic_write_text(paths["report.md"], to_markdown(secs))
    atomic_write_text(paths["report.html"], to_html(secs))
    atomic_write_json(paths["summary.json"], summary, indent=1)
    paths.update({k: out / v for k, v in plots.items()})
    return paths
