"""``logicval text-score IMAGE --text TARGET``: GIR-Bench's text rendering score of an image read by OCR; with
``--spec`` also a spec over the text lines (the ``text`` domain) verified, and repaired when it fails
(`logicval_hf.tasks.text_rendering`)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

from logicval_hf.cli.dispatch import emit, read_json, standalone

__all__ = ["add_subcommands", "main"]


def _confidence(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return v


def cmd_text_score(args: argparse.Namespace) -> int:
    from logicval_hf.perception.ocr import lines_scene, read_lines
    from logicval_hf.tasks.text_rendering import check_target, read_text, text_score

    if args.targets is not None:
        from logicval_hf.tasks.text_rendering import score_folder

        if args.text is not None or args.spec is not None:
            raise ValueError("--targets scores a folder of images against its target texts; leave out --text and "
                             "--spec")
        if not os.path.isdir(args.image):
            raise ValueError(f"with --targets, IMAGE must be a folder of images, got {args.image!r}")
        emit(score_folder(args.targets, args.image, args.min_confidence, progress=not args.no_progress), args.pretty)
        return 0
    if args.text is None and args.spec is None:
        raise ValueError("give --text TARGET (the text the image must show), --spec SPEC.json, or both")
    spec = None
    if args.text is not None:
        check_target(args.text, "--text")
    if args.spec is not None:
        from logicval_hf.contract.spec import as_spec

        spec = as_spec(read_json(args.spec, "spec"))
        if spec.domain.name != "text":
            raise ValueError(f"--spec: the spec is in domain {spec.domain.name!r}; text-score checks specs of the "
                             "'text' domain (lines read by OCR)")
    from logicval_hf.perception.images import load_image

    rgb = load_image(args.image, "image")
    lines = read_lines(rgb, args.min_confidence)
    out: dict[str, Any] = {}
    read = read_text(lines)
    if args.text is not None:
        out.update(score=text_score(args.text, read), target=args.text)
    out.update(lines=[ln.to_dict() for ln in lines], read=read)
    if spec is not None:
        from logicval_hf.asp.solver import solve, verify
        from logicval_hf.repairs import repair

        scene = lines_scene(lines, (rgb.shape[1], rgb.shape[0]))
        label = solve(spec, timeout=args.timeout).label
        verdict = verify(spec, scene, label=label)
        out.update(label=label, verdict=verdict.to_dict(), scene=scene.to_dict())
        if not verdict.ok and label == "SAT":  # the edits that make the image's text satisfy the spec
            out["repair"] = repair(spec, scene, timeout=math.inf if args.timeout is None else args.timeout).to_dict()
    emit(out, args.pretty)
    return 0


def add_subcommands(sub: Any) -> None:
    """Register ``text-score`` on the ``logicval`` subparsers."""
    from logicval_hf.asp.budget import DEFAULT_TIMEOUT
    from logicval_hf.cli.dispatch import timeout_option

    p = sub.add_parser("text-score", help="read an image's text lines by OCR and score them against a target text "
                                          "(GIR-Bench's word-level continuous substring score); --spec: verify a "
                                          "spec over the lines (JSON)")
    p.add_argument("image", metavar="IMAGE", help="image (PNG, JPEG, WebP, ...); with --targets a folder of images")
    p.add_argument("--targets", metavar="DIR", help="a folder of target texts (logicval import gir-bench "
                                                    "TextRendering.json): score every image of the folder IMAGE named "
                                                    "by a target's id (001.png, ...) and the mean, as GIR-Bench does")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (with --targets)")
    p.add_argument("--text", metavar="TARGET", help="the text the image must show")
    p.add_argument("--spec", metavar="SPEC", help="a spec of the text domain (lines as objects with their text and "
                                                  "box: 'SALE above TODAY', 'exactly one line reading ...'), JSON file "
                                                  "or - for stdin: verified, and repaired when it fails")
    p.add_argument("--min-confidence", type=_confidence, default=0.5, metavar="P",
                   help="keep OCR lines whose confidence is above P (default 0.5, as GIR-Bench)")
    timeout_option(p, DEFAULT_TIMEOUT, "time budget of the spec's label and repair")
    p.add_argument("--pretty", action="store_true", help="indent the JSON output")
    p.set_defaults(func=cmd_text_score)


main = standalone(add_subcommands, "Score an image's text against a target (OCR).")


if __name__ == "__main__":
    sys.exit(main())
