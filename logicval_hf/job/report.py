"""The main job's report: tables (Markdown and HTML), PNG plots and ``summary.json``.

The content, one function per section, is `logicval_hf.job.report_sections` (success per package and per class,
count-relaxed and per-load success, abstention, constraint success, agreement with the known truth, unread images,
perception confidence, repair cost, self-correction, examples, perturbations, failed generations, timings); this
module writes it as Markdown and HTML, draws the plots and writes ``summary.json``. Everything is rendered from the
summary that `logicval_hf.job.run.run` assembles, so the Markdown, the HTML and the JSON always say the same
thing. Every file is written atomically (temporary name, then rename).
"""

from __future__ import annotations

import html
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.job.report_sections import OPERATOR_SYMBOLS, Section, _classes, _loads, sections, what_broke

__all__ = ["SUMMARY_KEYS", "VOLATILE_KEYS", "GENERATOR_KEYS", "OPERATOR_SYMBOLS", "Section", "sections",
           "to_markdown", "to_html", "what_broke", "write_plots", "write_report"]

#: top-level keys of summary.json (and ``min_confidence``, after ``backend_fingerprint``, when the run set one;
#: then ``baselines``, ``{name: {"settings", "fingerprint"}}``, when the run had baseline metrics)
SUMMARY_KEYS = ("logicval_version", "seed", "backend", "backend_fingerprint", "image_size", "limit", "n_specs",
                "packages", "generators", "jobs", "timings", "cpu_seconds", "work")
#: keys that change from run to run (wall/CPU time, what was redone or reused); the rest is reproducible
VOLATILE_KEYS = ("jobs", "timings", "cpu_seconds", "work")
#: keys of every ``summary["generators"][name]`` entry (``truth``/``agreement`` are null for image folders; with a
#: minimum confidence also ``unread``: ``n_read``, ``n_unread`` and the ``images`` set apart with their reasons; with
#: baselines also ``baselines``: per baseline ``mean``, ``n_scored``, ``n_unscored``, ``by_package``, and ``roc_auc``
#: and ``point_biserial`` against the known truth)
GENERATOR_KEYS = ("kind", "folder", "n_images", "missing", "unreadable", "metric", "truth", "agreement", "left_out",
                  "warnings", "gallery", "confidence", "repair")
#: thumbnails per row of a gallery
GALLERY_COLUMNS = 4


# ---------------------------------------------------------------------------------------------
# Markdown / HTML
# ---------------------------------------------------------------------------------------------
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
