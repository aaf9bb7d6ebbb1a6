"""The clevr scene parser with onnxruntime's thread spinning off (the package's setting) against on
(onnxruntime's own default), each in a fresh process, rounds interleaved so the machine's load hits both alike.

A parse alternates between two onnxruntime sessions (detector, classifier, the detector again for the second
look) with Python work in between. With spinning on, a session's pool thread busy-waits after its run and
competes for the same cores with the next session's threads and with Python; on 2 cores that costs most when
images are parsed one at a time. Images: the oracle generator's drawings of ``--specs`` benchmark specs at
``--size`` (no data beyond the package), or ``--images DIR`` (every PNG/JPEG in it, resized to ``--size``).
Each child parses the images batched and one at a time and checks that both variants give the same scenes.

    python benchmarks/bench_ort_spinning.py [--rounds 3] [--specs 60] [--size 512] [--threads N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
#: the files of an --images folder that are read
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def image_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)


def images(args: argparse.Namespace) -> list:
    import numpy as np
    from PIL import Image

    if args.images is not None:
        return [np.asarray(Image.open(p).convert("RGB").resize((args.size, args.size), Image.BILINEAR))
                for p in image_files(args.images)]
    from logicval_hf.benchmark.sampler import sample
    from logicval_hf.generation.builtin import make_generator

    packages, _ = sample(509)
    specs = [s.spec for name in ("1SAT", "3SAT", "6SAT") for s in packages[name]][:args.specs]
    g = make_generator("oracle", seed=509, image_size=(args.size, args.size))
    return [np.asarray(g.generate(spec).image.convert("RGB")) for spec in specs]


def child(args: argparse.Namespace) -> None:
    """One variant in this process: images/s batched and one at a time, and a digest of the scenes."""
    from logicval_hf.perception import scene_parser

    scene_parser.ORT_SPINNING = args.child == "on"
    ims = images(args)
    parser = scene_parser.SceneParser(threads=args.threads)
    parser.parse_batch(ims[:2])  # warm-up
    t0 = time.perf_counter()
    parser.parse_batch(ims)
    batched = len(ims) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    scenes = [parser.parse_batch([im])[0] for im in ims]
    one = len(ims) / (time.perf_counter() - t0)
    digest = hashlib.sha256(json.dumps([s.to_dict() for s in scenes], sort_keys=True).encode()).hexdigest()[:16]
    print(json.dumps({"batched": batched, "one_at_a_time": one, "images": len(ims), "scenes": digest}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per variant (medians reported)")
    ap.add_argument("--specs", type=int, default=60, help="oracle images drawn (ignored with --images)")
    ap.add_argument("--size", type=int, default=512, help="square side the images are drawn or resized at")
    ap.add_argument("--images", type=Path, default=None, help="a folder of images to parse instead")
    ap.add_argument("--threads", type=int, default=None,
                    help="onnxruntime intra-op threads per session (default: the package's, min(4, CPUs))")
    ap.add_argument("--child", choices=("on", "off"), default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if args.images is not None and not args.images.is_dir():
        ap.error(f"--images: no such folder: {args.images}")
    if args.images is not None and not image_files(args.images):
        ap.error(f"--images: no PNG or JPEG in {args.images}")
    if args.rounds < 1 or args.specs < 1 or args.size < 32:
        ap.error("--rounds and --specs must be at least 1, --size at least 32")
    import os

    print(f"{os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.2f}", flush=True)
    runs: dict[str, list[dict]] = {"on": [], "off": []}
    passthrough = sys.argv[1:]
    for r in range(args.rounds):
        for variant in ("on", "off"):
            out = subprocess.run([sys.executable, __file__, *passthrough, "--child", variant],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                sys.exit(f"the {variant!r} child failed:\n{out.stderr[-2000:]}")
            runs[variant].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} spinning {variant:3}: batched {runs[variant][-1]['batched']:.1f}, one at a time "
                  f"{runs[variant][-1]['one_at_a_time']:.1f} images/s", flush=True)
    same = len({d["scenes"] for v in runs.values() for d in v}) == 1
    med = {v: {k: statistics.median(d[k] for d in runs[v]) for k in ("batched", "one_at_a_time")} for v in runs}
    n = runs["off"][0]["images"]
    print(f"\n{n} images at {args.size}x{args.size}, medians of {args.rounds} rounds (images/s):")
    print(f"  spinning on  (onnxruntime's default, the baseline): batched {med['on']['batched']:.1f}, "
          f"one at a time {med['on']['one_at_a_time']:.1f}")
    print(f"  spinning off (the package's setting):               batched {med['off']['batched']:.1f}, "
          f"one at a time {med['off']['one_at_a_time']:.1f}")
    print(f"  ratio off/on: batched {med['off']['batched'] / med['on']['batched']:.2f}x, one at a time "
          f"{med['off']['one_at_a_time'] / med['on']['one_at_a_time']:.2f}x")
    print(f"  scenes identical across variants and rounds: {same}")
    print(f"load average after {os.getloadavg()[0]:.2f}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
