"""The report's content, one function per section, independent of the output format (`logicval_hf.job.report`
writes it as Markdown and HTML).

Every section is rendered from the summary that `logicval_hf.job.run.run` assembles (one entry per generator with
the metric's scores, the known-truth scores and the agreement between the two), so the Markdown, the HTML and the
JSON always say the same thing. `SECTIONS` lists the section functions in report order; each takes the
`ReportInput` and returns its sections (none when it has nothing to say). A rate is never rounded to an exact 0 or
1 it is not (`_fmt`); a verdict that fails says what broke, a constraint or the count (`what_broke`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.verbalise import constraint_names

__all__ = ["OPERATOR_SYMBOLS", "SECTIONS", "ReportInput", "Section", "fix_text", "sections", "what_broke"]

OPERATOR_SYMBOLS = {"exists": "∃", "forall": "∀", "implies": "→", "count": "count"}


#: unread images listed per generator
UNREAD_SHOWN = 30
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


@dataclass(frozen=True)
class ReportInput:
    """What every section reads: the summary, the worst disagreements per generator, the plots' paths, and what
    they derive once (the generators' entries, the packages present, the constraint classes, the built-in
    generators: those with a known truth)."""

    summary: Mapping[str, Any]
    worst: Mapping[str, Sequence[Mapping[str, Any]]]
    plots: Mapping[str, str]
    gens: Mapping[str, Mapping[str, Any]]
    packages: list[str]
    classes: list[str]
    builtin: list[str]

    @classmethod
    def of(cls, summary: Mapping[str, Any], worst: Mapping[str, Sequence[Mapping[str, Any]]],
           plots: Mapping[str, str] | None = None) -> ReportInput:
        gens: Mapping[str, Mapping[str, Any]] = summary["generators"]
        return cls(summary, worst, plots or {}, gens, [p for p in PACKAGE_NAMES if summary["packages"].get(p)],
                   _classes(), [g for g, e in gens.items() if e["truth"] is not None])


def intro(r: ReportInput) -> list[Section]:
    summary = r.summary
    lim = f", the first {summary['limit']} per package" if summary.get("limit") else ""
    floor = summary.get("min_confidence")
    unread = (f" Images read with a scene confidence below {floor:g} (or none) are set apart as *unread*: every "
              "score below is over the others (see *Unread images*)." if floor is not None else "")
    return [Section(
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
        "change that breaks exactly one constraint or only the count)." + unread, level=1)]


def warnings(r: ReportInput) -> list[Section]:
    notes = [f"**{g}**: {w}" for g, e in r.gens.items() for w in e.get("warnings") or ()]
    return [Section("Warnings", "Read these before the scores below.", items=notes)] if notes else []


def by_package(r: ReportInput) -> list[Section]:
    packages = r.packages
    rows = _verdict_rows(r.gens, lambda agg: [_fmt(agg["by_package"].get(p, {}).get("score")) for p in packages]
                         + [_fmt(agg["logicval_score"])])
    return [Section("Success rate per package", "Fraction of images whose verdict is ok. "
                    "Package sizes: " + ", ".join(f"{p} {r.summary['packages'][p]}" for p in packages) + ".",
                    ["generator", "verdicts", *packages, "all"], rows, image=r.plots.get("by_package"))]


def by_class(r: ReportInput) -> list[Section]:
    rows = _verdict_rows(r.gens, lambda agg: [_fmt(agg["by_class"].get(c, {}).get("score")) for c in r.classes])
    return [Section("1SAT success per constraint class",
                    "Single-constraint SAT specifications (1SAT), by the class of their constraint (C1 "
                    "existential, C2 universal, C3 conditional, C4 existential subgraph, C5 conditional "
                    "subgraph, C6 exists-forall, C7 forall-exists, C8 count against a constant, C9 count "
                    "against a count; `logicval templates` lists them); strict verdict.",
                    ["generator", "verdicts", *r.classes], rows, image=r.plots.get("by_class"))]


def count_relaxed(r: ReportInput) -> list[Section]:
    def cells(agg: Mapping[str, Any]) -> list[str]:
        one = agg["by_package"].get("1SAT", {})
        return [_fmt(one.get("score")), _fmt(one.get("relaxed_score")), _fmt(agg["sat_score"]),
                _fmt(agg["sat_relaxed_score"]), _fmt(agg["count_accuracy"])]

    return [Section("Count-relaxed success",
                    "Strict verdict against the count-relaxed one, which ignores the number of objects (every "
                    "constraint must still hold): the gap is what wrong object counts cost. Count accuracy: "
                    "fraction of SAT images with exactly n objects.",
                    ["generator", "verdicts", "1SAT strict", "1SAT relaxed", "SAT strict", "SAT relaxed",
                     "count accuracy"], _verdict_rows(r.gens, cells))]


def by_load(r: ReportInput) -> list[Section]:
    loads = _loads(r.gens)
    if not loads:
        return []
    rows = _verdict_rows(r.gens, lambda agg: [_fmt(agg.get("by_load", {}).get(k, {}).get("score")) for k in loads])
    sizes: dict[str, Any] = next((e["metric"].get("by_load", {}) for e in r.gens.values()), {})
    return [Section("Success per compositional load",
                    "SAT specifications grouped by compositional load (Imag-Eval): the number of objects n "
                    "plus the number of constraints m that must hold at once; strict verdict. Specifications "
                    "per load: " + ", ".join(f"{k}: {sizes.get(k, {}).get('n', 0)}" for k in loads) + ".",
                    ["generator", "verdicts"] + [f"load {k}" for k in loads], rows, image=r.plots.get("by_load"))]


def abstention(r: ReportInput) -> list[Section]:
    unsat = [p for p in r.packages if p.endswith("UNSAT")]
    rows = _verdict_rows(r.gens, lambda agg: [_fmt(agg["abstention_by_package"].get(p, {}).get("rate"))
                                              for p in unsat]
                         + [_fmt(agg["abstention_rate"]), _fmt(agg["false_abstention_rate"])])
    return [Section("UNSAT abstention",
                    "No scene satisfies an UNSAT specification, so the right answer is an empty image: the "
                    "fraction of UNSAT specifications answered with an empty scene. False abstention: empty "
                    "scenes for SAT specifications.",
                    ["generator", "verdicts", *unsat, "all UNSAT", "false abstention (SAT)"], rows)]


def constraint_success(r: ReportInput) -> list[Section]:
    ops = ["exists", "forall", "implies", "count"]
    by_op = _verdict_rows(r.gens, lambda agg: [_fmt(agg["constraint_success_by_operator"].get(o, {}).get("rate"))
                                               for o in ops])
    by_cls = _verdict_rows(r.gens, lambda agg: [_fmt(agg["constraint_success_by_class"].get(c, {}).get("rate"))
                                                for c in r.classes])
    return [Section("Constraint success per logical operator",
                    "Every constraint of every SAT specification, object count ignored; a constraint counts "
                    "for each operator its template uses.",
                    ["generator", "verdicts"] + [OPERATOR_SYMBOLS[o] for o in ops], by_op),
            Section("Constraint success per class (all SAT packages)",
                    "Every constraint of every SAT specification, object count ignored.",
                    ["generator", "verdicts", *r.classes], by_cls)]


def agreement(r: ReportInput) -> list[Section]:
    gens, builtin = r.gens, r.builtin
    if not builtin:
        return []
    rows: list[list[Any]] = []
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
    per_package = []
    for g in builtin:
        bp = gens[g]["agreement"]["by_package"]
        per_package.append([g] + [f"{_fmt(bp[p]['accuracy'])} ({bp[p]['fp']} FP, {bp[p]['fn']} FN)" if p in bp
                                  else "–" for p in r.packages])
    return [Section(
        "Agreement with the known truth",
        "The metric's strict verdict against the solver's verdict on the intended scene (positive = ok). "
        "FP: the metric accepts an image whose intended scene fails; FN: it rejects a correct one. "
        "Scene exact: the perceived scene has the intended objects with the intended colour, shape, "
        "material and region, every object found and nothing extra.",
        ["generator", "images", "accuracy", "relaxed accuracy", "TP", "FP", "FN", "TN", "metric score",
         "truth score", "scene exact"], rows),
        Section("Agreement per package", "Accuracy, with the false positives and negatives.",
                ["generator", *r.packages], per_package, image=r.plots.get("agreement")),
        *(_worst(r, g) for g in builtin)]


def _worst(r: ReportInput, g: str) -> Section:
    ws = r.worst.get(g, [])
    total = r.gens[g]["agreement"]["disagreements"]
    if not ws:
        return Section(f"Worst disagreements: {g}", "None: the metric agrees with the truth on every image.", level=3)
    rows = [[d["id"], d["package"], d["kind"], d["intended_objects"], _fmt(d["perceived_objects"]),
             d["scene_errors"], _fmt(d.get("confidence")),
             what_broke(d.get("truth_violated"), d.get("truth_count_ok"), d["intended_objects"], d.get("n"),
                        d.get("label")),
             what_broke(d.get("metric_violated"), d.get("metric_count_ok"), d["perceived_objects"],
                        d.get("n"), d.get("label")),
             d["diff"], d.get("generation") or ""] for d in ws]
    return Section(
        f"Worst disagreements: {g}",
        f"{total} disagreement(s); the {len(ws)} with the largest scene-graph error (missed, extra and "
        "misread objects) are shown, all are in `disagreements.json`. Confidence: the perception "
        "backend's probability that its scene graph is right. Images: "
        f"`images/{g}/<id>.png`, perceived scenes: `verdicts/{g}/<id>.json`.",
        ["id", "package", "kind", "intended objects", "perceived objects", "scene errors", "confidence",
         "what broke (truth)", "what broke (metric)", "difference", "generation"], rows, level=3)


def baselines(r: ReportInput) -> list[Section]:
    """The baseline metrics' scores beside LogicVal's, and how each ranks the images by the known truth."""
    run = r.summary.get("baselines")
    if not run:
        return []
    names = list(run["metrics"])
    rows = []
    for g, e in r.gens.items():
        b = e.get("baselines") or {}
        rows.append([g, _fmt(e["metric"]["logicval_score"]), _fmt((e["truth"] or {}).get("logicval_score")),
                     *(f"{_fmt(b[n]['mean'])}" + (f" ({b[n]['n_unscored']} unscored)" if b[n]["n_unscored"] else "")
                       for n in names)])
    out = [Section(
        "Baseline metrics beside LogicVal",
        "Each image scored by the baseline metrics too (`scores.jsonl` and the verdict files hold every score): "
        "LogicVal's score is its success rate; a baseline's, its mean score over the images it scored (an "
        "image without an honest score, such as a judge answer with no rating, is left out and counted). "
        "Settings: " + "; ".join(f"{n}: model `{run['metrics'][n]['settings'].get('model')}`" for n in names) + ".",
        ["generator", "LogicVal", "known truth", *names], rows)]
    truth = run.get("known_truth")
    if truth:
        by = truth["by_metric"]
        out.append(Section(
            "Metrics against the known truth",
            f"Images of the built-in generators ({', '.join(truth['generators'])}) pooled: how well each metric's "
            "score ranks the images whose intended scene satisfies the spec above those whose does not (ROC-AUC: "
            "0.5 is chance, 1 perfect; LogicVal's verdict is 0 or 1) and its point-biserial correlation with the "
            "known truth. `logicval meta` on this folder gives the full comparison and the ROC plot.",
            ["metric", "images", "ROC-AUC", "point-biserial"],
            [[n, by[n]["n"], _fmt(by[n]["roc_auc"]), _fmt(by[n]["point_biserial"])] for n in ("logicval", *names)],
            level=3))
    return out


def unread(r: ReportInput) -> list[Section]:
    """The images set apart under the minimum confidence, with why: read neither as passes nor as failures."""
    floor = r.summary.get("min_confidence")
    entries = {g: e["unread"] for g, e in r.gens.items() if e.get("unread") is not None}
    if floor is None or not entries:
        return []
    out = [Section(
        "Unread images",
        f"Images whose scene graph was read with a confidence below {floor:g} (or with none) are set apart: they "
        "count neither as passes nor as failures, and every score in this report is over the images read with "
        "at least that confidence (failed generations still count as failures).",
        ["generator", f"read (confidence >= {floor:g})", "unread"],
        [[g, u["n_read"], u["n_unread"]] for g, u in entries.items()])]
    for g, u in entries.items():
        if u["images"]:
            shown = u["images"][:UNREAD_SHOWN]
            more = f" (the first {len(shown)} of {len(u['images'])})" if len(u["images"]) > len(shown) else ""
            out.append(Section(f"Unread images: {g}", f"Each with the reason it was set apart{more}.",
                               ["id", "reason"], [[x["id"], x["reason"]] for x in shown], level=3))
    return out


def confidence(r: ReportInput) -> list[Section]:
    rated = {g: e["confidence"] for g, e in r.gens.items() if e.get("confidence")}
    if not rated:
        return []
    out = [Section(
        "Perception confidence",
        "The perception backend's probability that each scene graph is right (the whole graph: every object "
        "found, nothing extra, every attribute and region read right). A verdict rests on its scene graph, so "
        "the least certain images are the ones to look at first.",
        ["generator", "images rated", "mean", "lowest"],
        [[g, c["n"], _fmt(c["mean"]), _fmt(c["min"])] for g, c in rated.items()])]
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
    return out


def repair_cost(r: ReportInput) -> list[Section]:
    repaired = {g: e["repair"] for g, e in r.gens.items() if e.get("repair")}
    if not repaired:
        return []
    top = max((int(k) for x in repaired.values() for k in x["costs"]), default=0)
    shown_costs = [str(k) for k in range(min(top, 5) + 1)]
    rows = [[g, x["n"], _fmt(x["mean"]), _fmt(x["median"])]
            + [x["costs"].get(k, 0) for k in shown_costs]
            + ([sum(v for k, v in x["costs"].items() if int(k) > 5)] if top > 5 else []) + [x["unproven"]]
            for g, x in repaired.items()]
    return [Section(
        "Repair cost",
        "The fewest edits after which each perceived scene satisfies its specification (`logicval repair`: "
        "change a colour, shape or material, move, remove or add an object; each edit costs 1; for an UNSAT "
        "specification every object is removed): how far an image is from right. Images per cost; "
        "unproven: repairs the time budget cut short (the best found, an upper bound).",
        ["generator", "images", "mean", "median", *[f"cost {k}" for k in shown_costs],
         *(["cost > 5"] if top > 5 else []), "unproven"], rows)]


def self_correction(r: ReportInput) -> list[Section]:
    corrected = {g: e["self_correction"] for g, e in r.gens.items() if e.get("self_correction")}
    if not corrected:
        return []
    rows = [[g, label, s["n"], s["right_before"], f"{s['fixed']} ({_fmt(s['fixed_share'])})",
             _fmt(s["mean_edits"]), _fmt(s["median_cost"])]
            for g, by_label in corrected.items() for label, s in by_label.items() if s["n"]]
    return [Section(
        "Self-correction (one round)",
        "Each perceived scene repaired, the repaired scene drawn by the built-in renderer as the image editor, "
        "perceived again and verified (`benchmarks/self_correct.py` runs the same loop): the images that "
        "satisfy their specification after one round.",
        ["generator", "label", "images", "right before", "right after one round", "mean edits",
         "median cost"], rows)]


def examples(r: ReportInput) -> list[Section]:
    return [Section(
        f"Examples: {g}",
        "Failures first (images the metric rejects, or where it disagrees with the known truth), then "
        "others, a few per package; yellow boxes: the objects the perception backend found. "
        f"Thumbnails: `gallery/{g}/`.", level=3,
        gallery=[(x["image"], x["id"], f"{x['id']}: {x['caption']}"
                  + (f" (confidence {x['confidence']:.2f})" if x.get("confidence") is not None else "")
                  + fix_text(x.get("instructions")))
                 for x in e["gallery"]])
        for g, e in r.gens.items() if e.get("gallery")]


def perturbations(r: ReportInput) -> list[Section]:
    out = []
    for g, e in r.gens.items():
        if e.get("perturbations"):
            rows = [[k.split("/")[0], k.split("/")[1], v] for k, v in e["perturbations"].items()]
            inexact = e.get("inexact_perturbations") or []
            out.append(Section(f"Perturbations made by {g}",
                               "Kind of the single change and what it broke (a constraint, only the count, or the "
                               "abstention of an UNSAT spec). " + (f"Not exactly one broken item: {', '.join(inexact)}."
                                                                  if inexact else "Every change broke exactly one "
                                                                  "item, checked by the solver."),
                               ["change", "broken", "images"], rows, level=3))
    return out


def failed_generations(r: ReportInput) -> list[Section]:
    folders = [g for g, e in r.gens.items() if e["kind"] == "folder"]
    if not folders:
        return []
    rows: list[list[Any]] = []
    for g in folders:
        e = r.gens[g]
        miss, bad = e["missing"], e["unreadable"]
        rows.append([g, e["folder"], e["n_images"], len(miss),
                     ", ".join(miss[:30]) + (" ..." if len(miss) > 30 else ""), ", ".join(bad[:30]),
                     len(e.get("left_out") or ())])
    return [Section("Failed generations",
                    "Image folders: ids without an image (or with an unreadable one) count as failed "
                    "generations, i.e. as not ok under both count modes; with `--only-present` the ids "
                    "without an image are left out of every score instead.",
                    ["generator", "folder", "images found", "missing", "missing ids", "unreadable ids",
                     "left out"], rows)]


def timings(r: ReportInput) -> list[Section]:
    t, c = r.summary["timings"], r.summary.get("cpu_seconds", {})
    rows = [[k, f"{v:.1f}", f"{c[k]:.1f}" if k in c else "–"] for k, v in t.items()]
    return [Section("Timings", f"Seconds per stage: wall clock, and CPU time of this process and its "
                    f"{r.summary.get('jobs', 1)} worker process(es) (CPU > wall: the workers ran in parallel; "
                    "CPU < wall: the machine was busy with other work).",
                    ["stage", "wall s", "CPU s"], rows)]


#: the report's sections, in order
SECTIONS: tuple[Callable[[ReportInput], list[Section]], ...] = (
    intro, warnings, by_package, by_class, count_relaxed, by_load, abstention, constraint_success, agreement,
    baselines, unread, confidence, repair_cost, self_correction, examples, perturbations, failed_generations, timings)


def sections(summary: Mapping[str, Any], worst: Mapping[str, Sequence[Mapping[str, Any]]],
             plots: Mapping[str, str] | None = None) -> list[Section]:
    """The report's content, independent of the output format: every function of `SECTIONS`, in order.

    Args:
        summary: the run's summary (`logicval_hf.job.report.SUMMARY_KEYS`).
        worst: the worst disagreements per built-in generator.
        plots: the plots' relative paths by name (``by_package``, ``by_class``, ``by_load``, ``agreement``).
    Returns:
        The sections.
    """
    r = ReportInput.of(summary, worst, plots)
    return [s for section in SECTIONS for s in section(r)]


def fix_text(instructions: Sequence[str] | None, shown: int = 2) -> str:
    """A gallery caption's repair: its first sentences (what would make the image right)."""
    if not instructions:
        return ""
    more = f" (+{len(instructions) - shown} more)" if len(instructions) > shown else ""
    return " Fix: " + " ".join(instructions[:shown]) + more
