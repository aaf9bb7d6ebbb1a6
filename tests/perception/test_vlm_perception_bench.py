"""benchmarks/clevr_perception.py measures the ``vlm`` backend (``--backend vlm --setting url=... --setting
model=...``) on real CLEVR images, here against a fake OpenAI-compatible server that answers each image's true
objects (boxes around the official projected centres): every scene graph exact, and an image whose answer cannot
be read is counted as an empty scene and listed with its error rather than ending the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_vlm import FakeVLM
from helpers import clevr_folder, load_script

from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.perception import load_image
from logicval_hf.perception.vlm import clear_cache

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "clevr_perception.py"


@pytest.fixture(scope="module")
def bench():
    return load_script(SCRIPT, "clevr_perception_bench_vlm")


def truth(row: dict, size: tuple[int, int]) -> Scene:
    objs = tuple(SceneObject({a: o[a] for a in ("color", "shape", "material")},
                             (o["pixel_coords"][0] - 12, o["pixel_coords"][1] - 12,
                              o["pixel_coords"][0] + 12, o["pixel_coords"][1] + 12)) for o in row["objects"])
    return Scene(size, objs)


def test_the_perception_benchmark_measures_the_vlm_backend(bench, tmp_path, capsys):
    folder = clevr_folder(tmp_path / "clevr", 4)
    rows = json.loads((folder / "scenes.json").read_text())
    clear_cache()
    with FakeVLM() as fake:
        for k, row in enumerate(rows):
            rgb = load_image(folder / "images" / row["image_filename"])
            fake.register(rgb, truth(row, (rgb.shape[1], rgb.shape[0])), "malformed" if k == 3 else None)
        out = bench.main([str(folder), "--backend", "vlm", "--setting", f"url={fake.base_url}",
                          "--setting", "model=fake-vlm", "--no-speed", "--constraints", "2",
                          "--json", str(tmp_path / "vlm.json")])
    assert out["backend"] == "vlm" and out["settings"] == {"url": fake.base_url, "model": "fake-vlm"}
    assert [x["exact"] for x in out["per_image"]] == [True, True, True, False]
    (unread,) = out["unread_images"]
    assert unread["image"] == rows[3]["image_filename"] and unread["error"].startswith("images[3]: vlm answer: "
                                                                                       "malformed JSON")
    assert "unread images              1 (scored as empty scenes)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e, FakeVLM() as fake:  # a model the endpoint does not serve: one line
        bench.main([str(folder), "--backend", "vlm", "--setting", f"url={fake.base_url}", "--setting", "model=x"])
    assert e.value.code == 2 and "model 'x' is not served at" in capsys.readouterr().err
