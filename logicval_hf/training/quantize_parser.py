"""An 8-bit copy of a scene-parser detector file, for reading images about 1.5 times faster on the CPU.

    python -m logicval_hf.training.quantize_parser --model scene_parser.onnx --data $RENDERS/t2i_train4a \\
        --data $RENDERS/t2i_wide_train2

onnxruntime's static quantisation (QDQ format): every convolution's weights per output channel in signed 8 bits
and its input activations in unsigned 8 bits, with ranges taken (min-max) from the detector's own reads of
calibration images: each image at the scale the parser reads it (its first look at 224 px and the read at the
scale that look chooses, `SceneParser.scales`). The head stays in floating point, by name (`KEEP_FLOAT`):
heat, offsets, log box sizes, visible-point offsets and attribute logits share one output convolution whose
channels differ in range by orders of magnitude, so one 8-bit scale over its output would drown the heat map.

Everything before the head is integer arithmetic, the stem included, so the read is the same on every CPU: a
floating-point convolution's last-bit differences between CPU kernels (AVX-512 against AVX2) would otherwise
become whole steps of the next layer's 8-bit input. Weights use 7 of the 8 bits (``reduce_range``): CPUs without
VNNI multiply 8-bit pairs with an instruction whose 16-bit sums can saturate.

Calibration images must be ones the parser trained on or any renders not used for evaluation: the first
``--images`` scenes by name of each ``--data`` folder (a training folder's first scenes lie in its training split;
the held-out share is its last). The output keeps the input file's metadata (threshold, temperatures, second look,
expert weights, confidence) and records the quantisation under ``provenance.quantized``; refit the float file
first (`logicval_hf.training.refit_parser`), then quantise it again. It is written atomically to ``--out``
(default: ``<stem>_int8.onnx`` beside the input, which `SceneParser` pairs with ``<stem>_attributes.onnx``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from logicval_hf.perception.parser_decoding import prepare, target_scale
from logicval_hf.perception.scene_parser import DEFAULT_MODEL, SceneParser, int8_copy_of
from logicval_hf.training.loop import command, parse
from logicval_hf.training.parser_data import dataset_name, load_folder
from logicval_hf.training.refit_parser import write_metadata

__all__ = ["KEEP_FLOAT", "calibration_inputs", "main", "quantize"]

#: name fragments of the convolutions kept in floating point (`logicval_hf.training.parser_model`'s naming):
#: the head, which nothing quantised follows (module docstring)
KEEP_FLOAT = ("head.",)


def calibration_inputs(parser: SceneParser, images: Sequence[np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
    """The detector's inputs for ``images`` as ``parser`` reads them: each image's first look (224 px) and its
    read at the scale that look chooses, one image per feed."""
    multiple, probe_side = parser.settings.multiple, parser.settings.scale.probe_side
    for rgb, scale in zip(images, parser.scales(list(images)), strict=True):
        yield {"image": prepare(rgb, target_scale(rgb.shape[1], rgb.shape[0], probe_side), multiple)[None]}
        yield {"image": prepare(rgb, scale, multiple)[None]}


def quantize(model: Path, images: Sequence[np.ndarray], out: Path, keep_float: Sequence[str] = KEEP_FLOAT,
             provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the 8-bit copy of the detector ``model`` calibrated on ``images`` (RGB uint8 arrays) to ``out``
    (atomically); return what was done (also stored under the metadata's ``provenance.quantized``).

    Args:
        model: a float detector file with LogicVal metadata.
        images: calibration images (not evaluation images).
        out: where to write the quantised file.
        keep_float: name fragments of convolutions to keep in floating point.
        provenance: more to record under ``provenance.quantized`` (e.g. the calibration folders).

    Returns:
        The record stored under ``provenance.quantized``.

    Raises:
        ValueError: ``model`` has no LogicVal metadata, or ``images`` is empty.
    """
    import onnx
    import onnxruntime
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    if not images:
        raise ValueError("no calibration images")
    parser = SceneParser(model, attribute_model=False)  # refuses a file without LogicVal metadata, by name
    graph = onnx.load(str(model)).graph
    convs = [n.name for n in graph.node if n.op_type == "Conv"]
    kept = [n for n in convs if any(k in n for k in keep_float)]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = calibration_inputs(parser, images)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.feeds, None)

    record = {"source": model.name, "source_sha256": hashlib.sha256(model.read_bytes()).hexdigest()[:16],
              "calibration_images": len(images), "method": "static QDQ, min-max ranges, per-channel weights",
              "weights": "int8 (7-bit range)", "activations": "uint8",
              "float_convolutions": kept, "int8_convolutions": len(convs) - len(kept),
              "onnxruntime": onnxruntime.__version__, **(provenance or {})}
    meta = json.loads(json.dumps(parser.meta))
    meta.setdefault("provenance", {})["quantized"] = record
    with tempfile.TemporaryDirectory() as work:
        quantized = Path(work) / out.name  # quantize_static keeps the source's metadata; the record is added after
        quantize_static(str(model), str(quantized), Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        reduce_range=True, calibrate_method=CalibrationMethod.MinMax,
                        nodes_to_exclude=[n.name for n in graph.node if n.op_type != "Conv" or n.name in kept])
        write_metadata(quantized, meta, out)
    return record


def _folder(text: str) -> Path:
    path = Path(text)
    if not (path / "images").is_dir() or not (path / "scenes").is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a CLEVR-layout folder (images/ and scenes/)")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = command("logicval_hf.training.quantize_parser", __doc__)
    ap.add_argument("--data", type=_folder, action="append", required=True, metavar="DIR",
                    help="calibration renders in the CLEVR layout (repeatable): the parser's training folders or "
                         "other renders never used for evaluation; the first --images scenes by name are read")
    ap.add_argument("--images", type=int, default=24, help="calibration scenes per folder (default 24)")
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                    help=f"the float detector file (default: the shipped {DEFAULT_MODEL.name})")
    ap.add_argument("--out", type=Path, default=None,
                    help="the 8-bit file (default: <stem>_int8.onnx beside --model)")
    args = parse(ap, argv)
    try:
        import onnx  # noqa: F401  quantize_static reads and writes ONNX graphs
        import onnxruntime.quantization  # noqa: F401
    except ImportError:
        ap.error("quantizing needs the onnx package: pip install 'logicval-hf[train]'")
    if args.images < 1:
        ap.error("--images must be at least 1")
    if not args.model.is_file():
        ap.error(f"--model: {str(args.model)!r} not found")
    images, sources = [], []
    for folder in args.data:
        recs = load_folder(folder, first=args.images, who="quantize_parser")
        images += [r.rgb for r in recs]
        sources.append({"folder": dataset_name(folder), "images": len(recs), "first": recs[0].name if recs else None})
    if not images:
        ap.error("no usable scene in --data")
    out = args.out or int8_copy_of(args.model)
    try:
        record = quantize(args.model, images, out, KEEP_FLOAT, {"data": sources})
    except ValueError as e:
        ap.error(str(e))
    print(json.dumps({"out": str(out), "bytes": out.stat().st_size, **record}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
