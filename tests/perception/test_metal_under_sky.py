"""The shipped parser reads metal as metal where it looks like metal: spheres that reflect a sky gradient (the camera
sees it too), on the project's own renders committed in ``tests/data/metal_under_sky`` (see its README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

from logicval_hf.common.matching import match_centres
from logicval_hf.perception import extract_scenes, load_image

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "metal_under_sky"
SCENES = sorted((FIXTURE / "scenes").glob("*.json"))


def _truth_and_read() -> list[tuple[dict, list, list]]:
    """(scene file, true objects, perceived objects) of every fixture render, read by the shipped files."""
    scenes = [json.loads(p.read_text()) for p in SCENES]
    read = extract_scenes([load_image(FIXTURE / "images" / s["image_filename"]) for s in scenes])
    return [(s, s["objects"], list(r.objects)) for s, r in zip(scenes, read, strict=True)]


def test_the_fixture_is_metal_under_a_sky_the_camera_sees():
    scenes = [json.loads(p.read_text()) for p in SCENES]
    assert len(scenes) == 4
    for s in scenes:
        assert s["render_settings"]["world"]["kind"] == "sky_gradient"
        assert 0 < s["render_settings"]["camera"]["horizon_height"] <= 0.75  # the horizon is in the frame
    spheres = [o for s in scenes for o in s["objects"] if (o["shape"], o["material"]) == ("sphere", "metal")]
    assert len(spheres) == 5


def test_every_metal_sphere_under_the_sky_reads_as_metal_with_its_colour_and_shape():
    for scene, truth, read in _truth_and_read():
        assert len(read) == len(truth), scene["image_filename"]
        centres = [((o.bbox[0] + o.bbox[2]) / 2, (o.bbox[1] + o.bbox[3]) / 2) for o in read]
        pairs = {t: p for p, t in match_centres(centres, [o["pixel_coords"][:2] for o in truth], 8.0)}
        for t, o in enumerate(truth):
            if (o["shape"], o["material"]) != ("sphere", "metal"):
                continue
            got = read[pairs[t]]
            assert got.attributes == {"color": o["color"], "shape": "sphere", "material": "metal"}, \
                scene["image_filename"]
            assert got.probs["material"]["metal"] > 0.5
