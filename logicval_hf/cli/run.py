"""``logicval run``: the whole loop offline in one command (benchmark -> images -> verdicts -> report).

`add_subcommands` registers it (``logicval_hf.cli.main`` lists every group). It also runs on its own:
``python -m logicval_hf.cli.run run --limit 2``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from logicval_hf.benchmark.sampler import DEFAULT_SEED
from logicval_hf.cli.dispatch import min_confidence, min_confidence_option, standalone
from logicval_hf.cli.dispatch import positive_int as _positive_int

__all__ = ["add_subcommands", "cmd_run", "main"]


def _warn(message: Any, *_: Any, **__: Any) -> None:
    print(f"logicval: warning: {message}", file=sys.stderr, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    from logicval_hf.cli.dispatch import check_output_dir
    from logicval_hf.common.extras import require_backend
    from logicval_hf.job.run import DEFAULT_GENERATORS, MissingImagesWarning, RunOptions, run

    floor = min_confidence(args)
    require_backend(args.backend)  # before any work: a missing extra is one line (exit 2)
    names, settings = _baselines(args)
    check_output_dir(args.out, "--out")
    options = RunOptions(
        out_dir=args.out,
        generators=args.generator or list(DEFAULT_GENERATORS),
        seed=args.seed,
        backend=args.backend,
        resume=not args.no_resume,
        progress=not args.quiet,
        limit=args.limit,
        jobs=args.jobs,
        renderer=args.renderer,
        assets=args.assets,
        only_present=args.only_present,
        keep_images=args.keep_images,
        repair=args.repair,
        min_confidence=floor,
        baselines=names,
        baseline_settings=settings,
    )

    with _stage_lines(not args.quiet), warnings.catch_warnings():
        warnings.simplefilter("always", MissingImagesWarning)  # said as soon as known, in the CLI's one-line form
        warnings.showwarning = _warn
        summary = run(options)
    print(_headline(summary, args.out))
    for e in summary["generators"].values():  # again after the scores, which they qualify
        for note in e.get("warnings") or ():
            _warn(note)
    return 0


def _baselines(args: argparse.Namespace) -> tuple[list[str], dict[str, dict[str, str]]]:
    """``--baselines`` and ``--baseline-setting`` read and checked (unknown names: did-you-mean, one line)."""
    from logicval_hf.scoring.baselines.factory import parse_names, parse_settings

    settings = parse_settings(args.baseline_setting or ())
    if not args.baselines:
        if settings:
            raise ValueError("--baseline-setting without --baselines: name the baselines to run "
                             "(logicval baselines lists them)")
        return [], {}
    return parse_names(args.baselines), settings


@contextlib.contextmanager
def _stage_lines(on: bool) -> Iterator[None]:
    """The job's stage lines (``logicval run: benchmark: ...``; logger ``logicval_hf.job``) on stderr, beside the
    progress bars: the benchmark build before the first bar takes ~15 s and would otherwise be silent."""
    if not on:
        yield
        return
    logger = logging.getLogger("logicval_hf.job")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("logicval run: %(message)s"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _headline(summary: dict[str, Any], out: str) -> str:
    def f(x: Any) -> str:
        return "–" if x is None else f"{x:.3f}"

    lines = [f"LogicVal run: {summary['n_specs']} specs, backend {summary['backend']}, "
             f"{summary['timings'].get('total', 0.0):.1f} s"]
    for name, e in summary["generators"].items():
        m = e["metric"]
        line = (f"  {name:<10} score {f(m['logicval_score'])}  relaxed {f(m['relaxed_score'])}  "
                f"abstention {f(m['abstention_rate'])}")
        if e["agreement"] is not None:
            a = e["agreement"]
            line += f"  | truth {f(e['truth']['logicval_score'])}  agreement {f(a['accuracy'])}" \
                    f" (FP {a['fp']}, FN {a['fn']})"
        if e["missing"] or e["unreadable"]:
            line += f"  | failed generations: {len(e['missing'])} missing, {len(e['unreadable'])} unreadable"
        if e.get("left_out"):
            line += f"  | {m['n_samples']} specs scored, {len(e['left_out'])} without an image left out"
        if e.get("unread") is not None:
            u = e["unread"]
            line += (f"  | {u['n_read']} read with confidence >= {summary['min_confidence']:g} (the scores are "
                     f"theirs), {u['n_unread']} unread")
        if e.get("baselines"):
            line += "  | " + "  ".join(f"{b} {f(v['mean'])}" for b, v in e["baselines"].items())
        lines.append(line)
    lines.append(f"report: {out}/report.md, {out}/report.html, {out}/summary.json")
    return "\n".join(lines)


def add_subcommands(subparsers: Any) -> None:
    """Register ``run`` on an ``argparse`` subparsers object."""
    from logicval_hf.job.run import DEFAULT_OUT

    r = subparsers.add_parser(
        "run", help="generate images for every benchmark spec, score them offline and write a report",
        description="Build the benchmark, generate one image per spec with each generator (oracle: the solver's "
                    "witness; naive: random objects; perturbed: the witness with one constraint broken) or take a "
                    "folder of images named by benchmark id, score them with the perception backend and the "
                    "solver, and write report.md, report.html, plots and summary.json.")
    r.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"report folder (default {DEFAULT_OUT})")
    r.add_argument("--generator", action="extend", nargs="+", metavar="NAME|PATH",
                   help="oracle, naive, perturbed, or a folder of images named <id>.png/.jpg (repeatable; "
                        "default: oracle naive perturbed)")
    r.add_argument("--backend", default="clevr",
                   help="perception backend (default clevr: the shipped CLEVR scene parser)")
    r.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"benchmark seed (default {DEFAULT_SEED})")
    r.add_argument("--no-resume", action="store_true",
                   help="regenerate and re-score every image instead of reusing the files in DIR")
    r.add_argument("--limit", type=_positive_int, metavar="K", help="only K specs per package (quick runs)")
    r.add_argument("--jobs", type=_positive_int, metavar="J", help="worker processes (default min(2, CPUs))")
    r.add_argument("--only-present", action="store_true",
                   help="score a folder of images on the specs it has an image for only (by default a spec without "
                        "an image counts as a failed generation)")
    r.add_argument("--keep-images", choices=("all", "failures", "none"), default="all",
                   help="generated images kept in DIR/images once scored: all (default; ~270 MB for a full run), "
                        "failures (those the metric rejects or gets wrong) or none; the report keeps small "
                        "thumbnails either way, and a later run redraws what was deleted")
    r.add_argument("--quiet", action="store_true", help="no progress bars and no stage lines")
    min_confidence_option(r)
    r.add_argument("--renderer", choices=("numpy", "blender"), default="numpy",
                   help="how the built-in generators draw scenes: numpy (fast, default) or blender (the CLEVR look "
                        "from the official assets; seconds per image; bpy here or in $LOGICVAL_BLENDER_PYTHON)")
    r.add_argument("--assets", metavar="DIR", default=None,
                   help="the official CLEVR generator's image_generation/data/ folder (for --renderer blender)")
    r.add_argument("--repair", action="store_true",
                   help="also run one round of self-correction: each image's repair drawn by the built-in renderer, "
                        "perceived again and verified (a report section; the repair costs are always reported)")
    r.add_argument("--baselines", metavar="NAME,...",
                   help="also score every image with these baseline metrics, beside LogicVal (clipscore, vlm-judge, "
                        "soft-tifa; `logicval baselines` lists what each needs): summary.json, the verdict files, "
                        "the report and scores.jsonl (`logicval meta DIR` compares them)")
    r.add_argument("--baseline-setting", action="append", metavar="NAME.KEY=VALUE",
                   help="a baseline's setting, repeatable (e.g. clipscore.model=DIR, vlm-judge.model=gpt-4o, "
                        "vlm-judge.url=http://127.0.0.1:8000/v1; `logicval baselines NAME` lists them)")
    r.set_defaults(func=cmd_run)


#: ``python -m logicval_hf.cli.run``: these commands alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "LogicVal main job.")


if __name__ == "__main__":
    sys.exit(main())
