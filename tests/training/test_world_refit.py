"""The attribute classifier's refit on world renders: from the shipped classifier file, two steps on a folder
whose scenes carry ``render_settings.world`` (``tests/data/metal_under_sky``), exported where the parser reads it, with
the world kinds it trained on in its provenance."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from logicval_hf.perception import load_image  # noqa: E402
from logicval_hf.perception.parser_models import AttributeClassifier  # noqa: E402
from logicval_hf.perception.scene_parser import INT8_MODEL, SceneParser, attribute_model_beside  # noqa: E402
from logicval_hf.training import train_attribute_classifier  # noqa: E402
from logicval_hf.training.parser_data import load_folder  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "metal_under_sky"
SHIPPED = attribute_model_beside(INT8_MODEL)


def test_world_renders_record_their_world_kind():
    records = load_folder(FIXTURE, who="test")
    assert [r.world for r in records] == ["sky_gradient"] * 4


@pytest.mark.slow
def test_the_refit_from_the_shipped_classifier_runs_two_steps_on_world_renders(tmp_path):
    renders = tmp_path / "world_renders"
    shutil.copytree(FIXTURE, renders)
    out, export = tmp_path / "refit", tmp_path / "ship" / "scene_parser_attributes.onnx"
    argv = ["--data", f"{renders}#weight=1", "--init", str(SHIPPED), "--steps", "2", "--batch-size", "8",
            "--numpy-fraction", "0.25", "--white-balance", "0.3", "--lr", "5e-5", "--warmup", "1",
            "--out", str(out), "--export", str(export), "--no-progress", "--threads", "1"]
    assert train_attribute_classifier.main(argv) == 0
    ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    meta = AttributeClassifier(export).meta
    provenance = meta["provenance"]
    assert provenance["trained_steps"] == 2 and provenance["initialised_from"]["init"] == SHIPPED.name
    (data,) = provenance["data"]
    assert data["folder"] == "$RENDERS/world_renders" and data["worlds"] == {"sky_gradient": data["train"]}
    assert data["train"] + data["held_out"] == 4
    # two steps at a low rate leave the shipped reading of the fixture's metal spheres as it was
    parser = SceneParser(INT8_MODEL, attribute_model=export)
    scene = parser.parse_batch([load_image(renders / "images" / "CLEVRX_000006.jpg")])[0]
    (sphere,) = scene.objects
    assert sphere.attributes == {"color": "purple", "shape": "sphere", "material": "metal"}
    assert np.isclose(sum(sphere.probs["material"].values()), 1.0)
