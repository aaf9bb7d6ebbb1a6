"""The OCR backend with the real PP-OCRv6 weights from the rapidocr wheel: lines with text, box and confidence,
the ``text`` domain's scenes, bad input, and no network. Each OCR call costs one to three seconds on two cores,
so the module reads its image once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import requires
from text_images import render_lines

import logicval_hf as lv
from logicval_hf.perception import PerceptionError, extract_scene, get_backend

pytestmark = requires("rapidocr")


@pytest.fixture(scope="module")
def poster():
    rgb, boxes = render_lines(["GRAND OPENING", "SALE TODAY 2024"], size=44)
    from logicval_hf.perception.ocr import read_lines

    return rgb, boxes, read_lines(rgb)


def test_lines_come_back_with_text_box_and_confidence_in_reading_order(poster):
    _, boxes, lines = poster
    assert [ln.text for ln in lines] == ["GRAND OPENING", "SALE TODAY 2024"]
    for line, (x0, y0, x1, y1) in zip(lines, boxes, strict=True):
        assert 0.5 < line.confidence <= 1
        bx0, by0, bx1, by1 = line.box
        assert bx0 <= x0 + 4 and by0 <= y0 + 4 and bx1 >= x1 - 4 and by1 >= y1 - 4  # the box holds the ink
        assert bx1 - bx0 < (x1 - x0) * 1.5 and len(line.polygon) == 4
        assert set(line.to_dict()) == {"text", "box", "confidence", "polygon"}


def test_the_backend_gives_a_text_domain_scene_that_specs_over_text_verify(poster):
    rgb, _, _ = poster
    scene = extract_scene(rgb, backend="ocr", domain="text")
    assert scene.domain.name == "text"
    assert [o["text"] for o in scene.objects] == ["grand opening", "sale today 2024"]  # folded as GIR-Bench folds
    assert all(o.score > 0.5 for o in scene.objects)
    t = lambda v: {"prop": "text", "value": v, "negated": False}  # noqa: E731
    above = {"domain": "text", "constraints": [{"template": "C4/pair_rel", "params": {
        "A1": t("Grand Opening"), "B1": t("SALE TODAY 2024"), "R1": {"rel": "above", "negated": False}}}]}
    below = {"domain": "text", "constraints": [{"template": "C4/pair_rel", "params": {
        "A1": t("Grand Opening"), "B1": t("SALE TODAY 2024"), "R1": {"rel": "below", "negated": False}}}]}
    assert lv.verify(above, scene).ok and not lv.verify(below, scene).ok


def test_boxes_of_one_row_read_left_to_right_whatever_their_heights():
    from logicval_hf.perception.ocr import TextLine, reading_order

    tall = TextLine("Foolish", (120, 10, 200, 50), 0.9)  # ascenders: its centre is above its neighbour's
    short = TextLine("Stay", (20, 18, 100, 52), 0.9)
    below = TextLine("Hungry", (20, 70, 120, 110), 0.9)
    assert [ln.text for ln in reading_order([below, tall, short])] == ["Stay", "Foolish", "Hungry"]


def test_a_blank_image_reads_no_line():
    from logicval_hf.perception.ocr import read_lines

    assert read_lines(np.full((96, 96, 3), 255, np.uint8)) == []


def test_bad_input_is_one_clear_error(tmp_path):
    from logicval_hf.perception.ocr import read_lines

    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    with pytest.raises(PerceptionError, match="not an image file"):
        read_lines(bad)
    with pytest.raises(ValueError, match="min_confidence"):
        read_lines(np.zeros((32, 32, 3), np.uint8), min_confidence=1.5)
    with pytest.raises(ValueError, match="min_confidence only"):
        get_backend("ocr").check_settings({"threshold": 0.3})
    with pytest.raises(PerceptionError, match="perceives 'text' scenes only"):
        extract_scene(np.zeros((32, 32, 3), np.uint8), backend="ocr", domain="coco")


def test_the_backend_declares_its_weights_and_extra():
    b = get_backend("ocr")
    assert b.check() == [] and b.extra == "ocr" and b.requires == ("rapidocr",)
    assert [p.name for p in b.model_files] == ["PP-OCRv6_det_small.onnx", "PP-OCRv6_rec_small.onnx",
                                               "ch_ppocr_mobile_v2.0_cls_mobile.onnx"]
    assert all(p.stat().st_size > 500_000 for p in b.model_files)


@pytest.mark.slow  # a fresh interpreter loading the three networks (~8 s on two busy cores)
def test_reading_never_opens_a_network_connection():
    """The weights ship in the wheel: a process in which every connection and name lookup fails still loads the
    networks and reads."""
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network use')\n"
        "socket.socket.connect = refuse; socket.socket.connect_ex = refuse; socket.getaddrinfo = refuse\n"
        "from text_images import render_lines\n"
        "from logicval_hf.perception.ocr import read_lines\n"
        "print([ln.text for ln in read_lines(render_lines(['OFFLINE 42'], size=40, width=360)[0])])\n")
    tests = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tests), str(tests.parent)]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "['OFFLINE 42']"
