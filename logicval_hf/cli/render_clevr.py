"""The ``logicval render-clevr`` subcommand: CLEVR scenes rendered with Blender (bpy) from the official assets.

`add_subcommands(subparsers)` registers it on the main parser; ``python -m logicval_hf.cli.render_clevr
render-clevr ...`` runs it standalone. Importing this module is cheap: bpy is imported only when the command
runs (extra ``blender``: ``pip install "logicval-hf[blender]"``).

Output in ``--out``: ``images/CLEVRX_NNNNNN.png``, ``masks/CLEVRX_NNNNNN.png`` (8-bit, value i+1 = object i),
``scenes/CLEVRX_NNNNNN.json`` (official CLEVR scene format plus boxes and mask ids from the masks, render
settings and seed; with ``--variations`` that draw things which are not objects, ``uncounted`` with their mask
ids after the objects') and ``scenes.json`` (every scene of the folder). Each image depends only on ``--seed`` and its
index, so a rerun skips finished images and ranges (``--start-index``) can be rendered in any order or in
parallel. See `logicval_hf.generation.blender`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from logicval_hf.cli.dispatch import standalone

__all__ = ["add_subcommands", "cmd_render_clevr", "main"]


def cmd_render_clevr(args: argparse.Namespace) -> int:
    from logicval_hf.cli.dispatch import check_output_dir
    from logicval_hf.generation.blender import RenderConfig, load_assets, render_dataset, require_bpy
    from logicval_hf.generation.blender_process import blender_python, bpy_in_process, run_cli

    if args.num_images < 1:
        raise ValueError(f"--num-images must be >= 1, got {args.num_images}")
    check_output_dir(args.out, "--out")
    from logicval_hf.generation.clevr_sampling import RENDER_PROFILES
    from logicval_hf.generation.clevr_variations import parse_variations
    from logicval_hf.generation.clevr_worlds import parse_worlds

    profile = RENDER_PROFILES.get("randomise" if args.randomise and args.profile is None else args.profile or "clevr")
    config = RenderConfig(seed=args.seed, samples=args.samples, denoise=args.denoise, width=args.width,
                          height=args.height,
                          min_objects=profile.min_objects if args.min_objects is None else args.min_objects,
                          max_objects=profile.max_objects if args.max_objects is None else args.max_objects,
                          randomise=args.randomise, threads=args.threads,
                          profile="randomise" if args.randomise else profile.name,
                          long_side=_long_side(args.long_side),
                          elevation=_elevation(args.elevation), empty=args.empty,
                          worlds=parse_worlds(args.worlds), sky_in_frame=args.sky_in_frame,
                          variations=parse_variations(args.variations)).validate()
    assets = load_assets(args.assets)  # both checks before any work
    if args.blender_python or not bpy_in_process():
        # bpy needs numpy<2: it usually lives in an environment of its own (see generation/blender_process.py)
        blender_python(args.blender_python)
        return run_cli(_argv_of(args), python=args.blender_python)
    require_bpy()
    counts = render_dataset(args.out, args.num_images, config, assets, start_index=args.start_index,
                            chunk=args.chunk, progress=not args.no_progress)
    print(json.dumps({"out": str(args.out), **counts}))
    return 0


def _long_side(text: str | None) -> tuple[int, int] | None:
    """``--long-side MIN:MAX`` (or one number) as a pair."""
    if text is None:
        return None
    parts = text.split(":")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) in (1, 2) else (None, None)
    except ValueError:
        lo = hi = None
    if lo is None or hi is None:
        raise ValueError(f"--long-side must read MIN:MAX in pixels (e.g. 256:1024), got {text!r}")
    return lo, hi


def _elevation(text: str | None) -> tuple[float, float] | None:
    """``--elevation MIN:MAX`` (or one number) in degrees as a pair."""
    if text is None:
        return None
    lo, colon, hi = text.partition(":")
    hi = hi if colon else lo
    try:
        return float(lo), float(hi)
    except ValueError:
        raise ValueError(f"--elevation must read MIN:MAX in degrees (e.g. 15:35), got {text!r}") from None


def _argv_of(args: argparse.Namespace) -> list[str]:
    """The same command for the Blender environment's interpreter (which runs it in-process)."""
    argv = ["--out", str(args.out), "--num-images", str(args.num_images), "--seed", str(args.seed),
            "--assets", str(args.assets), "--samples", str(args.samples),
            "--denoise" if args.denoise else "--no-denoise", "--width", str(args.width), "--height", str(args.height),
            "--start-index", str(args.start_index), "--chunk", str(args.chunk), "--threads", str(args.threads)]
    for flag, value in (("--min-objects", args.min_objects), ("--max-objects", args.max_objects),
                        ("--profile", args.profile), ("--long-side", args.long_side),
                        ("--elevation", args.elevation), ("--worlds", args.worlds),
                        ("--variations", args.variations)):
        if value is not None:
            argv += [flag, str(value)]
    return (argv + ["--randomise"] * bool(args.randomise) + ["--no-progress"] * bool(args.no_progress)
            + ["--empty"] * bool(args.empty) + ["--sky-in-frame"] * bool(args.sky_in_frame))


def add_subcommands(subparsers: Any) -> None:
    """Register ``render-clevr`` on the ``logicval`` subparsers."""
    from logicval_hf.generation.clevr_sampling import RENDER_PROFILES
    from logicval_hf.generation.clevr_variations import VARIATIONS
    from logicval_hf.generation.clevr_worlds import WORLD_KINDS

    p = subparsers.add_parser(
        "render-clevr", help="render CLEVR scenes with Blender (bpy) from the official generator's assets",
        description="Render CLEVR scenes (images, instance masks, official-format scene JSON with boxes) with "
                    "Blender as a Python module, sampling as the official CLEVR generator does. Resumable.")
    p.add_argument("--out", required=True, help="output folder (images/, masks/, scenes/, scenes.json)")
    p.add_argument("--num-images", type=int, required=True, help="number of images to render")
    p.add_argument("--seed", type=int, default=0, help="random seed; image i depends only on (seed, i)")
    p.add_argument("--assets", required=True,
                   help="the official generator's image_generation/data/ folder (base_scene.blend, shapes/, "
                        "materials/, properties.json)")
    p.add_argument("--samples", type=int, default=32, help="Cycles samples per pixel (default 32)")
    p.add_argument("--denoise", dest="denoise", action="store_true", default=True,
                   help="OpenImageDenoise after rendering (default)")
    p.add_argument("--no-denoise", dest="denoise", action="store_false", help="no denoiser")
    p.add_argument("--width", type=int, default=480, help="image width in pixels (default 480)")
    p.add_argument("--height", type=int, default=320, help="image height in pixels (default 320)")
    p.add_argument("--min-objects", type=int, default=None,
                   help="fewest objects per scene (default: the profile's, 3 for clevr and randomise, 1 for t2i)")
    p.add_argument("--max-objects", type=int, default=None, help="most objects per scene (default 10)")
    p.add_argument("--profile", default=None, metavar="NAME",
                   help="render profile (default clevr): " + "; ".join(
                       f"{name}: {RENDER_PROFILES.get(name).description}" for name in RENDER_PROFILES.names()))
    p.add_argument("--randomise", action="store_true",
                   help="the profile 'randomise': beyond CLEVR v1.0, draw floor colour (incl. white), light energy, "
                        "camera elevation and distance, image size (recorded in render_settings)")
    p.add_argument("--long-side", default=None, metavar="MIN:MAX",
                   help="range of the longer image side in pixels for profiles that draw the frame (t2i: default "
                        "256:1024; training renders need fewer pixels, e.g. 256:448); --width/--height otherwise")
    p.add_argument("--elevation", default=None, metavar="MIN:MAX",
                   help="camera elevation range in degrees for profiles that draw the camera (t2i: default 15:75); "
                        "images with a horizon keep their lower range, clipped to this one")
    p.add_argument("--worlds", default=None, metavar="KIND,...",
                   help="world kinds to draw, for profiles that draw one per image (t2i_world, t2i_real; default: "
                        "all its kinds at its weights): " + ", ".join(WORLD_KINDS.names()) + "; e.g. a held-out set of "
                        "a kind never trained on")
    p.add_argument("--variations", default=None, metavar="NAME[=P],...",
                   help="what real T2I pictures show beyond the look, each drawn per image with probability P "
                        "(default: its own rate) on a stream of its own, for profiles that draw the camera; replaces "
                        "the profile's (t2i_real: all at their rates; others: none); 'all' or 'none' also work: "
                        + "; ".join(f"{v}: {VARIATIONS.get(v).description} (rate {VARIATIONS.get(v).rate:g})"
                                    for v in VARIATIONS.names()).replace("%", "%%"))
    p.add_argument("--sky-in-frame", action="store_true",
                   help="every camera shows the horizon and the world above it (profiles that draw the camera: "
                        "elevation and focal length redrawn so the horizon is in the frame's upper half)")
    p.add_argument("--empty", action="store_true",
                   help="render every image without its objects: the profile's stage (camera framed on a scene "
                        "drawn as usual, floor, lights) with nothing on it, the right image for an UNSAT prompt; "
                        "measures objects a parser sees where there are none")
    p.add_argument("--blender-python", default=None, metavar="PYTHON",
                   help="interpreter of an environment with bpy (default: this one if bpy imports here, else "
                        "$LOGICVAL_BLENDER_PYTHON); bpy needs numpy<2, so it usually has an environment of its own")
    p.add_argument("--start-index", type=int, default=0, help="index of the first image (default 0)")
    p.add_argument("--chunk", type=int, default=20, help="images per chunk; scenes.json is refreshed after each")
    p.add_argument("--threads", type=int, default=2, help="Cycles render threads (default 2)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_render_clevr)


main = standalone(add_subcommands, "LogicVal CLEVR renders with Blender.")


if __name__ == "__main__":
    sys.exit(main())
