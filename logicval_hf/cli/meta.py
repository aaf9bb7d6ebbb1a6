"""Metric subcommands of ``logicval``: ``meta`` (meta-evaluation against human or known-truth verdicts),
``baselines`` (the baseline metrics ``logicval run --baselines`` can run, with what each needs), ``metric-path``
(where the ``evaluate`` metric module is, for ``evaluate.load`` from any folder) and ``push-metric`` (publish it as
a Space).

`add_subcommands(subparsers)` registers them on the main parser's subparsers (``logicval_hf/cli/main.py``); each
sets ``func`` to a handler ``(args) -> exit status``. Importing this module is cheap (numpy, scipy and
matplotlib load when a command runs). ``python -m logicval_hf.cli.meta ...`` runs them standalone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from logicval_hf.cli.dispatch import emit, hub_upload, push_options, standalone

__all__ = ["add_subcommands", "main"]


def cmd_meta(args: argparse.Namespace) -> int:
    from logicval_hf.cli.dispatch import check_output_dir
    from logicval_hf.scoring.meta import format_markdown, load_records, meta_evaluate, write_report

    if args.out:
        check_output_dir(args.out, "--out")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    records = load_records(_scores_file(args.input), annotations=args.annotations, metrics=metrics)
    max_distance = None if args.max_distance is not None and args.max_distance <= 0 else args.max_distance
    result = meta_evaluate(records, matching=args.matching, max_distance=max_distance)
    if not result["metrics"] and not result["scene_graph_accuracy"]:
        raise ValueError(f"{args.input}: no metric scores with human verdicts and no scene graphs to compare")
    sys.stdout.write(format_markdown(result))
    if args.out:
        for path in write_report(result, args.out).values():
            print(f"wrote {path}")
    return 0


def _scores_file(path: str) -> Path:
    """The records to read: the file given, or a ``logicval run`` folder's ``scores.jsonl``."""
    p = Path(path)
    if p.is_dir():
        if not (p / "scores.jsonl").is_file():
            raise ValueError(f"{path}: a folder without scores.jsonl: give a `logicval run` report folder or a "
                             "scores file")
        return p / "scores.jsonl"
    return p


def cmd_baselines(args: argparse.Namespace) -> int:
    from logicval_hf.scoring.baselines.listing import describe, listing

    if args.json:
        emit(describe(args.name), pretty=True)
    else:
        sys.stdout.write(listing(args.name))
    return 0


#: ``push-metric``: `logicval_hf.scoring.metric_push.push_metric` of the folder (default: the installed one)
cmd_push_metric = hub_upload("logicval_hf.scoring.metric_push:push_metric")


def cmd_metric_path(args: argparse.Namespace) -> int:
    from logicval_hf.scoring.metric_push import metric_path

    print(metric_path())
    return 0


def add_subcommands(subparsers: Any) -> None:
    """Register ``meta``, ``baselines``, ``metric-path`` and ``push-metric`` on an argparse subparsers object."""
    m = subparsers.add_parser(
        "meta", help="meta-evaluate metric scores against human or known-truth verdicts (correlation, ROC-AUC, "
                     "agreement, scene-graph accuracy)")
    m.add_argument("input", metavar="INPUT",
                   help="a `logicval run` report folder (its scores.jsonl: LogicVal, the baselines and the known "
                        "truth), or a CSV / JSON Lines / JSON list: id, model, human (0/1) or known_truth (0/1) "
                        "and one column per metric (or metric + score columns); optional predicted_scene, "
                        "annotated_scene, spec_json")
    m.add_argument("--annotations", metavar="A",
                   help="annotated scene graphs: records with id (+ model) and scene / annotated_scene "
                        "(+ predicted_scene, spec_json)")
    m.add_argument("--out", metavar="DIR", help="write meta.md, meta.json and roc.png into DIR")
    m.add_argument("--metrics", metavar="A,B", help="only these metric columns (comma-separated)")
    m.add_argument("--matching", choices=("hungarian", "greedy"), default="hungarian",
                   help="object matching for scene-graph accuracy (default hungarian)")
    m.add_argument("--max-distance", type=float, default=0.1,
                   help="largest box-centre distance for a match, as a fraction of the image diagonal "
                        "(default 0.1; 0 = no limit)")
    m.set_defaults(func=cmd_meta)

    b = subparsers.add_parser(
        "baselines", help="list the baseline metrics `logicval run --baselines` can run, with what each needs "
                          "(extra, weights) and its settings")
    b.add_argument("name", nargs="?", default=None, help="one baseline: every setting with its default and meaning")
    b.add_argument("--json", action="store_true", help="the declarations as JSON")
    b.set_defaults(func=cmd_baselines)

    w = subparsers.add_parser("metric-path", help="print the folder of the evaluate metric module: "
                                                  "evaluate.load(PATH) works from any folder")
    w.set_defaults(func=cmd_metric_path)

    p = subparsers.add_parser("push-metric", help="upload the evaluate metric folder to a Hugging Face Space")
    p.add_argument("dir", nargs="?", default=None,
                   help="metric folder (default: the installed one, printed by `logicval metric-path`)")
    push_options(p, "Space", cmd_push_metric, name_note="name = the evaluate.load name; ")


#: ``python -m logicval_hf.cli.meta``: these commands alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "LogicVal metric commands.")


if __name__ == "__main__":
    sys.exit(main())
