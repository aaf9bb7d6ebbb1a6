"""logicval_hf/training/quantize_parser.py and the shipped 8-bit detector it made."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import render_folder

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from logicval_hf.perception import load_image  # noqa: E402
from logicval_hf.perception import scene_parser as SP  # noqa: E402
from logicval_hf.perception.parser_decoding import prepare  # noqa: E402
from logicval_hf.perception.parser_settings import META_KEY  # noqa: E402
from logicval_hf.training.quantize_parser import KEEP_FLOAT, main, quantize  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "clevr"
IMAGE = DATA / "clevr_v1_train__CLEVR_train_000514.png"


def _meta(path: Path) -> dict:
    graph = onnx.load(str(path))
    return json.loads(next(e.value for e in graph.metadata_props if e.key == META_KEY))


def _graph(scene) -> list[tuple]:
    return sorted(tuple(o.attributes.values()) for o in scene.objects)


@pytest.fixture(scope="module")
def quantized(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("q") / "detector_int8.onnx"
    images = [load_image(p) for p in sorted(DATA.glob("*.png"))[:3]]
    record = quantize(SP.DEFAULT_MODEL, images, out, provenance={"data": "three test images"})
    assert record["calibration_images"] == 3 and record["data"] == "three test images"
    return out


def _quantised_after_float(graph) -> list[str]:
    """QuantizeLinear nodes that a floating-point convolution's output reaches: the places where rounding to
    8 bits would turn a float kernel's last-bit differences (which differ between CPUs) into whole steps."""
    consumers: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    # a float convolution reads a DequantizeLinear's output or the image; an integer one is fused from DQ -> Conv
    # -> Q, i.e. its weight comes through a DequantizeLinear
    producers = {o: n for n in graph.node for o in n.output}
    float_convs = [n for n in graph.node if n.op_type == "Conv"
                   and getattr(producers.get(n.input[1]), "op_type", None) != "DequantizeLinear"]
    seen, stack, hits = set(), [o for n in float_convs for o in n.output], []
    while stack:
        t = stack.pop()
        for n in consumers.get(t, []):
            if n.name in seen:
                continue
            seen.add(n.name)
            if n.op_type == "QuantizeLinear":
                hits.append(n.name)
            else:
                stack.extend(n.output)
    return hits


def test_convolutions_are_8_bit_but_the_head(quantized):
    graph = onnx.load(str(quantized)).graph
    ops = [n.op_type for n in graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    record = _meta(quantized)["provenance"]["quantized"]
    assert all(any(k in name for k in KEEP_FLOAT) for name in record["float_convolutions"])
    assert len(record["float_convolutions"]) == 2 and record["int8_convolutions"] == 16
    assert record["weights"] == "int8 (7-bit range)"
    assert quantized.stat().st_size < SP.DEFAULT_MODEL.stat().st_size / 2


@pytest.mark.parametrize("which", ["fresh", "shipped"])
def test_nothing_is_rounded_to_8_bits_after_a_float_convolution(quantized, which):
    """Why the read is the same on every CPU: the image is quantised on entry and integer arithmetic runs up
    to the float head, with nothing rounded to 8 bits after it (the model card has the AVX2 / AVX-512
    comparison)."""
    graph = onnx.load(str(quantized if which == "fresh" else SP.INT8_MODEL)).graph
    path, t = [], "image"
    while not path or path[-1] not in ("QuantizeLinear", "Conv"):  # the input's normalisation, then what?
        node = next(n for n in graph.node if t in n.input)
        path.append(node.op_type)
        t = node.output[0]
    assert path == ["Sub", "Div", "QuantizeLinear"]  # single IEEE operations, the same on every CPU, then 8 bits
    assert _quantised_after_float(graph) == []


def test_the_check_finds_a_float_stem_feeding_8_bit_layers(tmp_path):
    """The graph check above is not vacuous: a copy with the stem kept in floating point (the file shipped
    before) rounds its output to 8 bits."""
    images = [load_image(p) for p in sorted(DATA.glob("*.png"))[:2]]
    out = tmp_path / "stem_float_int8.onnx"
    quantize(SP.DEFAULT_MODEL, images, out, keep_float=("s4.0.0", "head."))
    graph = onnx.load(str(out)).graph
    assert len(_quantised_after_float(graph)) >= 1


def test_the_copy_keeps_the_float_files_metadata_and_records_its_source(quantized):
    meta, source = _meta(quantized), _meta(SP.DEFAULT_MODEL)
    record = meta["provenance"].pop("quantized")
    assert meta == source
    assert record["source_sha256"] == hashlib.sha256(SP.DEFAULT_MODEL.read_bytes()).hexdigest()[:16]


def test_the_copy_reads_like_the_float_file(quantized):
    rgb = load_image(IMAGE)
    float_parser = SP.SceneParser(SP.DEFAULT_MODEL)
    int8_parser = SP.SceneParser(quantized, attribute_model=SP.attribute_model_beside(SP.DEFAULT_MODEL))
    x = prepare(rgb, 480 / max(rgb.shape[:2]))[None]
    heat_f = float_parser.forward(x)[0]
    heat_q = int8_parser.forward(x)[0]
    assert np.abs(heat_f - heat_q).max() < 0.15  # peaks only: the max-pooled heat at local maxima
    assert _graph(int8_parser.parse_batch([rgb])[0]) == _graph(float_parser.parse_batch([rgb])[0])


def test_the_shipped_8_bit_detector_was_made_from_the_shipped_float_one():
    """Refitting the float file without quantizing it again would leave the default reading stale metadata."""
    meta, source = _meta(SP.INT8_MODEL), _meta(SP.DEFAULT_MODEL)
    record = meta["provenance"].pop("quantized")
    assert meta == source
    assert record["source_sha256"] == hashlib.sha256(SP.DEFAULT_MODEL.read_bytes()).hexdigest()[:16]


def test_precision_picks_a_shipped_detector_and_both_share_the_classifier():
    assert SP.SceneParser().path == SP.INT8_MODEL
    assert SP.SceneParser(precision="fp32").path == SP.DEFAULT_MODEL
    assert SP.SceneParser().attributes.path == SP.SceneParser(precision="fp32").attributes.path
    assert SP.attribute_model_beside(Path("m/x_int8.onnx")) == Path("m/x_attributes.onnx")
    assert SP.load_model() is SP.load_model(precision="int8")  # the default is loaded once
    rgb = load_image(IMAGE)
    assert _graph(SP.extract(rgb, precision="fp32")) == _graph(SP.extract(rgb))


@pytest.mark.parametrize(("settings", "says"), [
    ({"precision": "fp16"}, "precision must be one of int8, fp32, not 'fp16'"),
    ({"precision": ["int8"]}, "precision must be one of int8, fp32, not \\['int8'\\]"),
    ({"precision": "fp32", "model_path": str(SP.DEFAULT_MODEL)}, "with model_path the file decides"),
])
def test_bad_precision_is_refused_by_name(settings, says):
    with pytest.raises(ValueError, match=says):
        SP.extract(np.zeros((32, 32, 3), np.uint8), **settings)


def test_the_command_line_quantizes_a_render_folder(tmp_path, capsys):
    folder = render_folder(tmp_path / "renders", 3)
    out = tmp_path / "q.onnx"
    assert main(["--data", str(folder), "--images", "2", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["out"] == str(out) and printed["calibration_images"] == 2
    assert printed["data"][0]["folder"] == "$RENDERS/renders"  # relative to a stated root, never absolute
    assert _meta(out)["provenance"]["quantized"]["data"] == printed["data"]


@pytest.mark.parametrize(("argv", "says"), [
    (["--data", "{nowhere}"], "is not a CLEVR-layout folder"),
    (["--data", "{folder}", "--images", "0"], "--images must be at least 1"),
    (["--data", "{folder}", "--model", "{nowhere}/m.onnx"], "--model: "),
])
def test_bad_arguments_are_one_line(tmp_path, capsys, argv, says):
    folder = render_folder(tmp_path / "renders", 2)
    names = {"nowhere": str(tmp_path / "nowhere"), "folder": str(folder)}
    with pytest.raises(SystemExit) as e:
        main([a.format(**names) for a in argv])
    assert e.value.code == 2
    assert says in capsys.readouterr().err
