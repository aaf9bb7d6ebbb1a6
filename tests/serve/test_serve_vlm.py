"""``logicval serve --backend vlm --setting url=... --setting model=...``: the reward server reads images with a
grounding VLM (a fake OpenAI-compatible server on 127.0.0.1 that answers the true objects): the rewards are the
true scene graphs' verdicts, an image whose answer is outside the vocabulary gets its own error entry while the
others are scored, and a missing model or an unreachable endpoint is one line, exit 2, before anything starts."""

from __future__ import annotations

import io
import pickle
import random
import socket
import subprocess
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
import requests
from fake_vlm import FakeVLM
from helpers import random_scene
from PIL import Image
from server_helpers import ServerProcess, sat_specs, wait_healthy

from logicval_hf.asp.solver import default_solver


def png(array) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def test_the_reward_server_reads_images_with_a_vlm(tmp_path):
    solver = default_solver()
    specs = sat_specs(5, seed=3)
    truth = [solver.solve(s).witness for s in specs[:3]] + [random_scene(random.Random(1), 4)] * 2
    with FakeVLM() as fake:
        images = [png(fake.image(t, "vocabulary" if k == 4 else None)) for k, t in enumerate(truth)]
        server = ServerProcess("--backend", "vlm", "--setting", f"url={fake.base_url}", "--setting", "model=fake-vlm",
                               "--setting", "timeout=20", "--workers", "1", log=tmp_path / "server.log")
        try:
            health = wait_healthy(server.url)
            assert health["status"] == "ok", (health, (tmp_path / "server.log").read_text()[-2000:])
            items = [{"spec_json": s.to_json()} for s in specs]
            r = requests.post(server.url, data=pickle.dumps({"images": images, "meta_datas": items,
                                                             "only_strict": False}), timeout=120)
            assert r.status_code == 200
            answer = pickle.loads(r.content)
        finally:
            server.stop()
    want = [float(solver.verify(s, t).ok) for s, t in zip(specs[:4], truth[:4], strict=True)]
    assert answer["strict_rewards"][:4] == want and want[:3] == [1.0, 1.0, 1.0]
    assert answer["strict_rewards"][4] == 0.0
    (error,) = answer["errors"]
    assert error["index"] == 4 and "vlm answer: objects[0]" in error["error"] and "is outside the vocabulary" in \
        error["error"]
    # the warm-up's image and the five: the refused image's error comes back with the batch, never sent again
    assert len([r for r in fake.requests if r["path"] == "/v1/chat/completions"]) == 6


def _serve(*argv: str) -> subprocess.CompletedProcess:
    code = "import sys; from logicval_hf.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "serve", "--port", "1", "--backend", "vlm", *argv],
                          capture_output=True, text=True, timeout=120, check=False)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("argv, line", [
    (["--setting", "url=http://127.0.0.1:9/v1"], "vlm backend: the setting 'model' is missing"),
    (["--setting", "model=m"], "vlm backend: the setting 'url' is missing"),
    (["--setting", "url=http://127.0.0.1:{port}/v1", "--setting", "model=m"],
     "vlm backend: cannot reach the endpoint: http://127.0.0.1:{port}/v1/models: cannot connect"),
    (["--setting", "url=http://127.0.0.1:9/v1", "--setting", "model=m", "--setting", "boxes=xyxy"],
     "vlm backend: boxes must be one of pixels, norm1000, got 'xyxy'"),
])
def test_bad_vlm_settings_stop_the_server_in_one_line(argv, line):
    port = _closed_port()
    proc = _serve(*(a.format(port=port) for a in argv))
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert line.format(port=port) in proc.stderr
