"""Metric subcommands of ``logicval``: ``meta`` (meta-evaluation against human verdicts), ``metric-path`` (where
the ``evaluate`` metric module is, for ``evaluate.load`` from any folder) and ``push-metric`` (publish it as a
Space).

`add_subcommands(subparsers)` registers them on the main parser's subparsers (``logicval_hf/cli/main.py``); each
sets ``func`` to a handler ``(args) -> exit status``. Importing this module is cheap (numpy, scipy and
matplotlib load when a command runs). ``python -m logicval_hf.cli.meta ...`` runs them standalone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["add_subcommands", "main"]


def cmd_meta(args: argparse.Namespace) -> int:
    from logicval_hf.cli.dispatch import check_output_dir
    from logicval_hf.scoring.meta import format_markdown, load_records, meta_evaluate, write_report

    if args.out:
        check_output_dir(args.out, "--out")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    records = load_records(args.input, annotations=args.annotations, metrics=metrics)
    max_distance = None if args.max_distance is not None and args.max_distance <= 0 else args.max_distance
    result = meta_evaluate(records, matching=args.matching, max_distance=max_distance)
    if not result["metrics"] and not result["scene_graph_accuracy"]:
        raise ValueError(f"{args.input}: no metric scores with human verdicts and no scene graphs to compare")
    sys.stdout.write(format_markdown(result))
    if args.out:
        for path in write_report(result, args.out).values():
            print(f"wrote {path}")
    return 0


def cmd_push_metric(args: argparse.Namespace) -> int:
    from logicval_hf.scoring.metric_push import push_metric

    push_metric(args.dir, repo_id=args.repo_id, dry_run=args.dry_run, private=args.private)
    return 0


def cmd_metric_path(args: argparse.Namespace) -> int:
    from logicval_hf.scoring.metric_push import metric_path

    print(metric_path())
    return 0


def add_subcommands(subparsers: Any) -> None:
    """Register ``meta``, ``metric-path`` and ``push-metric`` on an argparse subparsers object."""
    m = subparsers.add_parser(
        "meta", help="meta-evaluate metric scores against human verdicts (correlation, ROC-AUC, agreement, "
                     "scene-graph accuracy)")
    m.add_argument("input", metavar="INPUT",
                   help="CSV / JSON Lines / JSON list: id, model, human (0/1) and one column per metric "
                        "(or metric + score columns); optional predicted_scene, annotated_scene, spec_json")
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

    w = subparsers.add_parser("metric-path", help="print the folder of the evaluate metric module: "
                                                  "evaluate.load(PATH) works from any folder")
    w.set_defaults(func=cmd_metric_path)

    p = subparsers.add_parser("push-metric", help="upload the evaluate metric folder to a Hugging Face Space")
    p.add_argument("dir", nargs="?", default=None,
                   help="metric folder (default: the installed one, printed by `logicval metric-path`)")
    p.add_argument("--repo-id", default=None,
                   help="Space repository, owner/name (name = the evaluate.load name; default <namespace>/logicval, "
                        "the namespace from $LOGICVAL_HUB_NAMESPACE, else logicval)")
    p.add_argument("--dry-run", action="store_true", help="only list the files that would be uploaded")
    p.add_argument("--private", action="store_true", help="create the Space as private")
    p.set_defaults(func=cmd_push_metric)


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point with the ``logicval`` error convention (``logicval: error: ...``, status 2)."""
    from logicval_hf.cli.dispatch import standalone_main

    return standalone_main(add_subcommands, argv, "LogicVal metric commands.")


if __name__ == "__main__":
    sys.exit(main())
