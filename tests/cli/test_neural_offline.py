"""``--backend neural`` without reachable weights fails at once, in one line: the backend's ``check_settings`` looks
for the models locally and in the Hugging Face cache, and tries the Hub once, briefly (downloads turned off: not at
all), before anything imports torch; loading would otherwise retry the Hub for minutes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("huggingface_hub")

from logicval_hf.perception import check_backend
from logicval_hf.perception.neural.loading import check_settings

DETECTOR = "IDEA-Research/grounding-dino-tiny"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    return tmp_path / "hub"


def cache_snapshot(hub, repo: str) -> None:
    snapshot = hub / f"models--{repo.replace('/', '--')}" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")


def test_weights_neither_here_nor_downloadable_are_one_line(empty_cache, monkeypatch):
    with pytest.raises(ValueError, match=rf"^neural backend: the detector '{DETECTOR}' is not in the Hugging Face "
                                         r"cache and cannot be downloaded: the Hub \(http://127.0.0.1:\d+\) did not "
                                         r"answer within 3 s .*--setting detector=DIR"):
        check_settings({})
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ValueError, match=r"cannot be downloaded: downloads are off \(HF_HUB_OFFLINE"):
        check_backend("neural", {"domain": "coco"})


def test_local_or_cached_weights_pass(empty_cache, tmp_path):
    detector = tmp_path / "gdino"
    detector.mkdir()
    weights = tmp_path / "clip.pt"
    weights.write_bytes(b"")
    check_settings({"detector": str(detector), "clip_model": "ViT-B-32", "clip_pretrained": str(weights)})
    check_settings({"pipeline": object()})  # a pipeline given: nothing to load
    cache_snapshot(empty_cache, DETECTOR)
    with pytest.raises(ValueError, match=r"the CLIP weights ViT-L-14/openai \(from 'timm/vit_large_patch14_clip_224"
                                         r"\.openai'\) is not in the Hugging Face cache"):
        check_settings({})
    cache_snapshot(empty_cache, "timm/vit_large_patch14_clip_224.openai")
    check_settings({})  # both cached: loading reads them offline


def test_an_unknown_setting_is_one_line():
    with pytest.raises(ValueError, match=r"^neural backend: unknown setting 'box_treshold'; did you mean "
                                         r"'box_threshold'\?"):
        check_settings({"box_treshold": 0.3})


def test_the_command_fails_in_one_line_without_importing_torch(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"n": 3, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "red", "negated": False}}}]}))
    Image.fromarray(np.zeros((32, 48, 3), np.uint8)).save(tmp_path / "image.png")
    code = ("import sys; from logicval_hf.cli import main; rc = main(sys.argv[1:]); "
            "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)")
    for argv in (["check", str(spec), str(tmp_path / "image.png")], ["run", "--out", str(tmp_path / "out")]):
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
        proc = subprocess.run([sys.executable, "-c", code, *argv, "--backend", "neural"], capture_output=True,
                              text=True, timeout=120, check=False, env=env)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith(f"logicval: error: neural backend: the detector '{DETECTOR}' is not in the "
                                      "Hugging Face cache and cannot be downloaded: downloads are off")
    assert not (tmp_path / "out").exists()
