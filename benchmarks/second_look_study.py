"""How the scene parser's second look decides uncertain peaks, against its first read alone.

    python benchmarks/second_look_study.py NAME=DIR[:FRACTION] [real] [...] [--model FILE]
        [--fit NAME ...] [--zoom Z] [--context C]

For every held-out set (a render folder in the CLEVR layout, its last FRACTION by file name, default all; or
``real`` for ``../shared/data/clevr_dev``): every peak of the first read whose heat lies in the second look's
band, whether it is an object (matched to a true centre as `benchmarks/clevr_perception.py` matches), its
first heat and its second-read heat (`logicval_hf.perception.second_look.second_heat`). Printed: the wrong
keep/drop decisions of the first read at the model's threshold (the naive baseline) and of the averaged heats
at thresholds 0.35-0.55, per set; the threshold `fit_threshold` chooses on the ``--fit`` sets (the model card's
0.45 was chosen so, on images the shipped detector never trained on); and the decisions' ratio against the
first read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import clevr_perception as cp  # noqa: E402

from logicval_hf.perception.scene_parser import SceneParser  # noqa: E402
from logicval_hf.perception.second_look import (  # noqa: E402
    SECOND_LOOK_DEFAULTS,
    averaged_heat,
    fit_threshold,
    labelled_band_peaks,
    wrong_decisions,
)

GRID = (0.35, 0.40, 0.42, 0.44, 0.45, 0.46, 0.48, 0.50, 0.55)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="+", metavar="NAME=DIR[:FRACTION]",
                    help="held-out sets; the word real reads ../shared/data/clevr_dev")
    ap.add_argument("--model", type=Path, default=None, help="detector file (default: the shipped one)")
    ap.add_argument("--fit", nargs="*", default=None, help="sets the threshold is fitted on (default: all)")
    ap.add_argument("--zoom", type=float, default=SECOND_LOOK_DEFAULTS["zoom"], help="second read's enlargement")
    ap.add_argument("--context", type=float, default=SECOND_LOOK_DEFAULTS["context"],
                    help="window side over the box's longer side")
    args = ap.parse_args(argv)
    parser = SceneParser(args.model, attribute_model=False)
    cfg = {**SECOND_LOOK_DEFAULTS, **(parser.second_look or {}), "zoom": args.zoom, "context": args.context}
    data: dict[str, tuple[list[float], list[float], list[bool]]] = {}
    for spec in args.sets:
        if spec == "real":
            name, scenes = "real", cp.load_clevr(ROOT.parent / "shared" / "data" / "clevr_dev")
        else:
            try:
                name, folder, fraction = cp.render_set(spec)
            except argparse.ArgumentTypeError as e:
                ap.error(str(e))
            scenes = cp.loaded_renders(folder, fraction)
        centres = [np.array([o["pixel_coords"][:2] for o in s["objects"]], float).reshape(-1, 2) for s in scenes]
        data[name] = labelled_band_peaks(parser, [s["_rgb"] for s in scenes], centres, cfg, parser.threshold, False,
                                         cp.match_radius(1.0))  # its share of the width
        print(f"  read: {name} ({len(scenes)} images, {len(data[name][2])} band peaks)", file=sys.stderr, flush=True)
    w, thr = float(cfg["weight"]), parser.threshold
    fit = args.fit or list(data)
    unknown = sorted(set(fit) - set(data))
    if unknown:
        ap.error(f"--fit names sets that were not read: {', '.join(unknown)} (read: {', '.join(data)})")
    first = [h for n in fit for h in data[n][0]]
    second = [h for n in fit for h in data[n][1]]
    is_object = [y for n in fit for y in data[n][2]]
    t, fig = fit_threshold(first, second, is_object, w, thr)
    print(f"model {args.model or 'shipped'}: first-read threshold {thr}; band {cfg['band']}, zoom {cfg['zoom']}, "
          f"context {cfg['context']}; fitted on {', '.join(fit)}: threshold {t} ({fig})")
    print("| set | band peaks | first read | " + " | ".join(f"second look {g:.2f}" for g in GRID) + " |")
    print("|" + "---|" * (3 + len(GRID)))
    total1 = total2 = 0
    for name, (s1, s2, y) in data.items():
        base, avg = wrong_decisions(s1, thr, y), averaged_heat(s1, s2, w)
        total1 += base
        total2 += wrong_decisions(avg, t, y)
        cells = [str(wrong_decisions(avg, g, y)) for g in GRID]
        print(f"| {name} | {len(y)} | {base} | " + " | ".join(cells) + " |")
    print(f"wrong decisions over all sets: first read {total1}, second look at {t} {total2} "
          f"(ratio {total2 / max(total1, 1):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
