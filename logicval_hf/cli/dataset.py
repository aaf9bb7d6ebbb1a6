"""Dataset subcommands of ``logicval``: ``build-dataset``, ``push-dataset`` and ``stats``.

`add_subcommands(subparsers)` registers them on the main parser's subparsers (``logicval_hf/cli/main.py``); each
sets ``func`` to a handler ``(args) -> exit status``, like the other subcommands. Importing this module is
cheap (no clingo, datasets or matplotlib until a command runs). ``python -m
logicval_hf.cli.dataset ...`` runs them standalone. They need the ``data`` extras (datasets, pyarrow,
matplotlib, huggingface_hub), imported only when a command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.cli.dispatch import hub_upload, push_options, standalone

__all__ = ["add_subcommands", "main", "dataset_stats", "format_stats", "plot_stats", "load_folder_rows"]


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------
def load_folder_rows(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Rows of every package found in a built folder (`logicval_hf.benchmark.stats.load_folder_rows`)."""
    from logicval_hf.benchmark.stats import load_folder_rows as load

    return load(folder)


def dataset_stats(rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """Counts per package x class, template, n and label (`logicval_hf.benchmark.stats.dataset_stats`)."""
    from logicval_hf.benchmark.stats import dataset_stats as stats

    return stats(rows)


def _table(title: str, row_keys: Sequence[Any], packages: Sequence[str],
           counts: Mapping[str, Mapping[Any, int]], row_name: str) -> str:
    header = [row_name, *packages, "total"]
    body = []
    for k in row_keys:
        vals = [counts[p].get(k, 0) for p in packages]
        body.append([str(k), *map(str, vals), str(sum(vals))])
    totals = [sum(counts[p].get(k, 0) for k in row_keys) for p in packages]
    body.append(["total", *map(str, totals), str(sum(totals))])
    widths = [max(len(header[i]), *(len(r[i]) for r in body)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells))

    return "\n".join([title, line(header), line(["-" * w for w in widths]), *map(line, body)])


def format_stats(stats: Mapping[str, Any]) -> str:
    """The statistics as four plain-text tables."""
    p = stats["packages"]
    return "\n\n".join([
        _table("Specs per package and label", stats["labels"], p, stats["by_label"], "label"),
        _table("Constraints per package and class", stats["classes"], p, stats["by_class"], "class"),
        _table("Specs per package and scene size n", stats["ns"], p, stats["by_n"], "n"),
        _table("Constraints per package and template", stats["templates"], p, stats["by_template"], "template"),
    ]) + "\n"


def plot_stats(stats: Mapping[str, Any], path: str | Path) -> Path:
    """A PNG with the distributions per class, per n, per label and per template (stacked by package).

    Uses matplotlib's Agg canvas directly (no GUI backend, no global pyplot state).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    packages = stats["packages"]
    fig = Figure(figsize=(16, 11), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 3)
    panels = [
        (fig.add_subplot(grid[0, 0]), "constraints per class", stats["classes"], stats["by_class"]),
        (fig.add_subplot(grid[0, 1]), "specs per scene size n", stats["ns"], stats["by_n"]),
        (fig.add_subplot(grid[0, 2]), "specs per label", stats["labels"], stats["by_label"]),
        (fig.add_subplot(grid[1, :]), "constraints per template", stats["templates"], stats["by_template"]),
    ]
    for ax, title, keys, counts in panels:
        bottom = [0] * len(keys)
        xs = list(range(len(keys)))
        for pkg in packages:
            vals = [counts[pkg].get(k, 0) for k in keys]
            ax.bar(xs, vals, bottom=bottom, label=pkg)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.set_title(title)
        ax.set_xticks(xs)
        ax.set_xticklabels([str(k) for k in keys], rotation=90 if len(keys) > 12 else 0,
                           fontsize=6 if len(keys) > 12 else 9)
        ax.set_ylabel("count")
    panels[0][0].legend(fontsize=8)
    fig.suptitle(f"LogicVal benchmark: {sum(stats['rows'].values())} specs")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=100)
    return path


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------
def cmd_build_dataset(args: argparse.Namespace) -> int:
    import time

    from logicval_hf.benchmark.dataset import write_dataset
    from logicval_hf.benchmark.sampler import DEFAULT_SEED
    from logicval_hf.cli.dispatch import check_output_dir

    check_output_dir(args.out, "--out")  # before the ~15 s of sampling
    t0 = time.perf_counter()
    seed = DEFAULT_SEED if args.seed is None else args.seed
    info = write_dataset(args.out, seed=seed, progress=not args.no_progress)
    secs = time.perf_counter() - t0
    rows = ", ".join(f"{k} {v}" for k, v in info["rows"].items())
    print(f"wrote {info['folder']} ({sum(info['rows'].values())} rows: {rows}) in {secs:.1f} s")
    for f in info["files"]:
        print(f"  {f}")
    return 0


#: ``push-dataset``: `logicval_hf.benchmark.dataset.push_dataset` of the folder
cmd_push_dataset = hub_upload("logicval_hf.benchmark.dataset:push_dataset")


def cmd_stats(args: argparse.Namespace) -> int:
    from logicval_hf.cli.dispatch import check_output_file

    if args.plot:
        check_output_file(args.plot, "--plot")
    stats = dataset_stats(load_folder_rows(args.dir))
    sys.stdout.write(format_stats(stats))
    if args.plot:
        print(f"wrote {plot_stats(stats, args.plot)}")
    return 0


def add_subcommands(subparsers: Any) -> None:
    """Register ``build-dataset``, ``push-dataset`` and ``stats`` on an argparse subparsers object."""
    b = subparsers.add_parser("build-dataset", help="sample the benchmark and write a Hub-ready dataset folder")
    b.add_argument("--out", required=True, metavar="DIR", help="output folder (README.md + data/*.parquet)")
    b.add_argument("--seed", type=int, default=None,
                   help="sampling seed (default: logicval_hf.benchmark.sampler.DEFAULT_SEED, the published dataset's)")
    b.add_argument("--no-progress", action="store_true", help="no progress bars")
    b.set_defaults(func=cmd_build_dataset)

    p = subparsers.add_parser("push-dataset", help="upload a built dataset folder to the Hugging Face Hub")
    p.add_argument("dir", help="folder written by build-dataset")
    push_options(p, "dataset repository", cmd_push_dataset)

    s = subparsers.add_parser("stats", help="counts of a built dataset per package, class, template, n and label")
    s.add_argument("dir", help="folder written by build-dataset")
    s.add_argument("--plot", metavar="PNG", help="also write the distributions as a PNG")
    s.set_defaults(func=cmd_stats)


#: ``python -m logicval_hf.cli.dataset``: these commands alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "LogicVal dataset commands.")


if __name__ == "__main__":
    sys.exit(main())
