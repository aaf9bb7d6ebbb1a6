"""Does a detector file read the same on another CPU? Its raw outputs on this machine against the same inputs run
under ``qemu-x86_64 -cpu MODEL`` (user-mode emulation: onnxruntime then picks the kernels of that CPU model,
e.g. ``Haswell`` for AVX2 without AVX-512 or VNNI).

Why: an 8-bit graph that rounds a floating-point convolution's output to 8 bits turns the last-bit differences
of float kernels (AVX-512 and AVX2 order their sums differently) into whole quantisation steps, and the read
then moves by images per set from one CPU to another. The copy shipped before 2026-12-05 kept its stem in
floating point: on one of 12 T2I-look renders its heat differed by 0.005 between AVX-512 VNNI and AVX2 kernels
(a whole step passed on), on the other 11 and on the 8 ``tests/data`` images by float rounding alone (up to
1e-7 in heat). Such steps are rare per image, so a clean run of a few images proves little: the graph check in
``tests/training/test_quantize_parser.py`` (nothing rounded to 8 bits after a float convolution) is what rules
them out, and this run shows what remains, float rounding of the head (model card, *Tried on 2026-12-05
(twenty-first session)*). Run it after quantising a detector again, on many images (``--images DIR --count
24``).

    python benchmarks/detector_cpu_check.py [--model FILE] [--images DIR] [--count 8] [--cpu Haswell]

Images: ``tests/data/clevr`` by default (no data beyond the repository), each prepared as the parser reads it.
Emulation is slow: about 10 seconds per 480x320 image. Needs ``qemu-x86_64`` (Debian: ``apt-get install
qemu-user``). Printed per output (heat, offsets and sizes, attribute logits): the largest difference between
the two runs, and how many inputs differ at all.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUTPUTS = ("peak", "reg", "logits")


def prepare_inputs(images: list[Path], out: Path) -> None:
    """Each image as the shipped parser feeds it to the detector, saved to ``out``: its first look and its read
    at the scale that look chooses (the feeds `quantize_parser` calibrates on), two inputs per image."""
    from logicval_hf.perception import load_image
    from logicval_hf.perception.scene_parser import SceneParser
    from logicval_hf.training.quantize_parser import calibration_inputs

    parser = SceneParser(attribute_model=False)
    np.savez(out, *[feed["image"][0] for feed in calibration_inputs(parser, [load_image(p) for p in images])])


def run_outputs(model: Path, inputs: Path, out: Path) -> None:
    """The detector's raw outputs for every saved input, one onnxruntime thread (the order of work fixed)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    feeds = np.load(inputs)
    res = {}
    for k in feeds.files:
        for name, value in zip(OUTPUTS, session.run(list(OUTPUTS), {"image": feeds[k][None]}), strict=True):
            res[f"{k}/{name}"] = value
    np.savez(out, **res)


def compare(a: Path, b: Path) -> dict[str, dict[str, float | int]]:
    """Per output: the largest absolute difference over inputs and how many inputs differ at all."""
    x, y = np.load(a), np.load(b)
    out: dict[str, dict[str, float | int]] = {}
    for key in x.files:
        name = key.split("/")[1]
        row = out.setdefault(name, {"max_abs_diff": 0.0, "inputs_differing": 0, "inputs": 0})
        diff = float(np.abs(x[key].astype(np.float64) - y[key].astype(np.float64)).max())
        row["max_abs_diff"] = max(float(row["max_abs_diff"]), diff)
        row["inputs_differing"] = int(row["inputs_differing"]) + int(diff > 0)
        row["inputs"] = int(row["inputs"]) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    from logicval_hf.perception.scene_parser import INT8_MODEL

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", type=Path, default=INT8_MODEL, help="detector file (default: the shipped 8-bit one)")
    ap.add_argument("--images", type=Path, default=REPO / "tests" / "data" / "clevr",
                    help="folder of PNG images (default: tests/data/clevr)")
    ap.add_argument("--count", type=int, default=8, help="images read, the first by name (default 8)")
    ap.add_argument("--cpu", default="Haswell", help="qemu CPU model to compare with (default Haswell: AVX2)")
    ap.add_argument("--qemu", default="qemu-x86_64", help="the qemu user-mode binary")
    ap.add_argument("--run", nargs=2, type=Path, metavar=("INPUTS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.run:  # the child: this interpreter, natively or under qemu
        run_outputs(args.model, *args.run)
        return 0
    qemu = shutil.which(args.qemu)
    if qemu is None:
        ap.error(f"{args.qemu} not found: install qemu's user-mode emulation (Debian: apt-get install qemu-user)")
    if not args.model.is_file():
        ap.error(f"--model: {str(args.model)!r} not found")
    images = sorted(args.images.glob("*.png"))[:args.count]
    if args.count < 1 or not images:
        ap.error(f"no PNG images to read in {args.images} (--count {args.count})")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prepare_inputs(images, work / "inputs.npz")
        child = [sys.executable, str(Path(__file__).resolve()), "--model", str(args.model), "--run",
                 str(work / "inputs.npz")]
        subprocess.run([*child, str(work / "native.npz")], check=True)
        subprocess.run([qemu, "-cpu", args.cpu, *child, str(work / "emulated.npz")], check=True,
                       stderr=subprocess.DEVNULL)  # qemu warns about CPU features it does not emulate
        result = {"model": str(args.model), "cpu": args.cpu, "images": [p.name for p in images],
                  "outputs": compare(work / "native.npz", work / "emulated.npz")}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
