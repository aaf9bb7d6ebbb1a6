"""The generation harness: API generators against a local fake HTTP server (threads on 127.0.0.1), the
resumable runner (skip, retry, one log line per id, atomic writes) and the diffusers generator with a tiny
random FLUX pipeline. No network, no model download."""

from __future__ import annotations

import base64
import collections
import http.server
import io
import json
import threading
import time
from pathlib import Path

import pytest
from helpers import png_header
from PIL import Image

from logicval_hf.cli import generate as generate_cli
from logicval_hf.generation import t2i
from logicval_hf.generation.t2i import (
    GeminiImageGenerator,
    GenerationFailed,
    HttpClient,
    OpenAIImageGenerator,
    run_generation,
)


def _png(color=(200, 30, 30), size=(8, 8)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


class FakeAPI:
    """OpenAI- and Gemini-style endpoints. Scenario by a marker in the prompt:

    REFUSE (safety refusal), FLAKY (two 500s, then ok), SLOW (first answer after 1 s: client timeout), DOWN
    (always 503), BLOCK (Gemini prompt block), TEXTONLY (Gemini answers text only), URL (OpenAI url answer),
    BOMB (a PNG whose header claims 100000x100000 pixels).
    """

    def __init__(self):
        self.calls: collections.Counter[str] = collections.Counter()
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, code, obj=None, raw=None, ctype="application/json"):
                data = raw if raw is not None else json.dumps(obj).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                if self.path.startswith("/img/"):
                    self._send(200, raw=_png((0, 0, 200)), ctype="image/png")
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                gemini = ":generateContent" in self.path
                prompt = body["contents"][0]["parts"][0]["text"] if gemini else body["prompt"]
                with api.lock:
                    api.calls[prompt] += 1
                    n = api.calls[prompt]
                    api.requests.append({"path": self.path, "body": body,
                                         "headers": {k.lower(): v for k, v in self.headers.items()}})
                key_ok = (self.headers.get("x-goog-api-key") == "gk" if gemini
                          else self.headers.get("Authorization") == "Bearer ok")
                if not key_ok:
                    return self._send(401, {"error": {"message": "bad key", "code": "invalid_api_key"}})
                if "DOWN" in prompt:
                    return self._send(503, {"error": {"message": "overloaded"}})
                if "FLAKY" in prompt and n <= 2:
                    return self._send(500, {"error": {"message": "boom"}})
                if "SLOW" in prompt and n == 1:
                    time.sleep(1.0)
                b64 = base64.b64encode(png_header(100_000, 100_000) if "BOMB" in prompt else _png()).decode()
                if gemini:
                    if "BLOCK" in prompt:
                        return self._send(200, {"promptFeedback": {"blockReason": "SAFETY"}})
                    if "REFUSE" in prompt:
                        return self._send(200, {"candidates": [{"finishReason": "IMAGE_SAFETY",
                                                                "content": {"parts": [{"text": "Sorry."}]}}]})
                    if "TEXTONLY" in prompt:
                        return self._send(200, {"candidates": [{"finishReason": "STOP", "content": {
                            "parts": [{"text": "Here is a description instead of an image."}]}}]})
                    return self._send(200, {"candidates": [{"finishReason": "STOP", "content": {"parts": [
                        {"text": "ok"}, {"inlineData": {"mimeType": "image/png", "data": b64}}]}}]})
                if "REFUSE" in prompt:
                    return self._send(400, {"error": {"code": "moderation_blocked", "message":
                                                      "Your request was rejected by the safety system."}})
                if "URL" in prompt:
                    port = self.server.server_address[1]
                    return self._send(200, {"data": [{"url": f"http://127.0.0.1:{port}/img/x.png"}]})
                return self._send(200, {"data": [{"b64_json": b64}]})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api():
    with FakeAPI() as server:
        yield server


def _client(**kw) -> HttpClient:
    return HttpClient(**{"timeout": 0.3, "retries": 2, "backoff": 0.01, **kw})


def _log(out: Path) -> dict[str, dict]:
    lines = (out / t2i.LOG_NAME).read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    assert len({r["id"] for r in recs}) == len(recs)  # one line per id
    return {r["id"]: r for r in recs}


# ---------------------------------------------------------------------------------------------------------
# API generators
# ---------------------------------------------------------------------------------------------------------
def test_openai_ok_refusal_retry_timeout_failure(api, tmp_path):
    gen = OpenAIImageGenerator("gpt-image-2", base_url=api.url + "/v1", api_key="ok", client=_client())
    items = [("a", "plain"), ("b", "REFUSE this"), ("c", "FLAKY one"), ("d", "SLOW one"), ("e", "DOWN one"),
             ("f", "URL one")]
    counts = run_generation(gen, items, tmp_path, progress=False)
    assert counts == {"ok": 4, "refused": 1, "failed": 1, "skipped": 0, "total": 6}
    log = _log(tmp_path)
    assert {k: v["status"] for k, v in log.items()} == {"a": "ok", "b": "refused", "c": "ok", "d": "ok",
                                                        "e": "failed", "f": "ok"}
    assert log["c"]["attempts"] == 3 and log["d"]["attempts"] == 2 and log["e"]["attempts"] == 3
    assert "moderation_blocked" in log["b"]["error"] and "503" in log["e"]["error"]
    assert all(r["model"] == "gpt-image-2" and r["seconds"] >= 0 and set(r) >= {"id", "status", "error", "model",
                                                                                 "seconds"} for r in log.values())
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["a.png", "c.png", "d.png", "f.png"]
    assert Image.open(tmp_path / "f.png").getpixel((0, 0)) == (0, 0, 200)  # downloaded from the url answer
    req = next(r for r in api.requests if r["body"]["prompt"] == "plain")
    assert req["path"] == "/v1/images/generations"
    assert req["body"] == {"model": "gpt-image-2", "prompt": "plain", "n": 1, "size": "1024x1024", "quality": "low"}
    assert req["headers"]["authorization"] == "Bearer ok"


def test_an_answer_claiming_too_many_pixels_is_a_failure_in_one_line(api, tmp_path):
    """A returned PNG whose header claims 100000x100000 pixels is refused before decoding."""
    gen = OpenAIImageGenerator("gpt-image-2", base_url=api.url + "/v1", api_key="ok", client=_client())
    counts = run_generation(gen, [("a", "BOMB please")], tmp_path, progress=False)
    assert counts["failed"] == 1 and not list(tmp_path.glob("*.png"))
    error = _log(tmp_path)["a"]["error"]
    assert "megapixels exceeds the limit" in error and "\n" not in error, error


def test_gemini_ok_and_the_ways_of_returning_no_image(api, tmp_path):
    gen = GeminiImageGenerator(base_url=api.url + "/v1beta", api_key="gk", client=_client())
    items = [("a", "plain"), ("b", "BLOCK me"), ("c", "REFUSE me"), ("d", "TEXTONLY"), ("e", "FLAKY"),
             ("f", "SLOW"), ("g", "DOWN")]
    counts = run_generation(gen, items, tmp_path, progress=False)
    assert (counts["ok"], counts["refused"], counts["failed"]) == (3, 3, 1)
    log = _log(tmp_path)
    assert [log[k]["status"] for k in "abcdefg"] == ["ok", "refused", "refused", "refused", "ok", "ok", "failed"]
    assert "SAFETY" in log["b"]["error"] and "IMAGE_SAFETY" in log["c"]["error"]
    assert "no image" in log["d"]["error"] and "description" in log["d"]["error"]
    req = next(r for r in api.requests if r["body"]["contents"][0]["parts"][0]["text"] == "plain")
    assert req["path"] == "/v1beta/models/gemini-3-pro-image-preview:generateContent"
    assert req["headers"]["x-goog-api-key"] == "gk"
    cfg = req["body"]["generationConfig"]
    assert "IMAGE" in cfg["responseModalities"] and cfg["imageConfig"] == {"imageSize": "1K"}


def test_api_keys_from_the_environment(api, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIImageGenerator(base_url=api.url)
    with pytest.raises(ValueError, match="GEMINI_API_KEY"):
        GeminiImageGenerator(base_url=api.url)
    monkeypatch.setenv("MY_IMAGES_KEY", "ok")
    gen = OpenAIImageGenerator(base_url=api.url, api_key_env="MY_IMAGES_KEY", client=_client())
    assert run_generation(gen, [("x", "plain")], tmp_path, progress=False)["ok"] == 1
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    bad = OpenAIImageGenerator(base_url=api.url, client=_client())
    assert run_generation(bad, [("y", "plain")], tmp_path, progress=False)["failed"] == 1
    assert "401" in _log(tmp_path)["y"]["error"] and _log(tmp_path)["y"]["attempts"] == 1  # 4xx: no retry


def test_http_client_gives_up_on_a_dead_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    slept = []
    client = HttpClient(timeout=0.2, retries=2, backoff=0.01, sleep=slept.append)
    with pytest.raises(GenerationFailed, match="connection error") as e:
        client.request("POST", f"http://127.0.0.1:{port}/v1/images/generations", {"x": 1})
    assert e.value.attempts == 3 and len(slept) == 2 and slept[1] > slept[0] * 1.0 - 1e-9


# ---------------------------------------------------------------------------------------------------------
# The runner: resume, retry, atomic writes
# ---------------------------------------------------------------------------------------------------------
class ScriptedGenerator(t2i.Generator):
    model = "scripted"

    def __init__(self, outcomes):
        self.outcomes = outcomes  # prompt -> list of "ok" / "refuse" / "fail", consumed per call
        self.calls = collections.Counter()

    def generate(self, prompt, seed):
        self.calls[prompt] += 1
        todo = self.outcomes[prompt]
        what = todo.pop(0) if len(todo) > 1 else todo[0]
        if what == "refuse":
            raise t2i.GenerationRefused("no image")
        if what == "fail":
            raise GenerationFailed("transient")
        if what == "bug":
            raise RuntimeError("generator bug")
        return Image.new("RGB", (4, 4), (seed % 256, 0, 0))


def test_resume_skips_done_retries_failed_keeps_refused(tmp_path):
    gen = ScriptedGenerator({"p1": ["ok"], "p2": ["fail", "ok"], "p3": ["refuse", "ok"], "p4": ["bug", "ok"]})
    items = [("1SAT-0001", "p1"), ("1SAT-0002", "p2"), ("1SAT-0003", "p3"), ("1SAT-0004", "p4")]
    first = run_generation(gen, items, tmp_path, seed=7, progress=False)
    assert (first["ok"], first["failed"], first["refused"]) == (1, 2, 1)
    assert "RuntimeError" in _log(tmp_path)["1SAT-0004"]["error"]
    png1 = (tmp_path / "1SAT-0001.png").read_bytes()
    second = run_generation(gen, items, tmp_path, seed=7, progress=False)
    assert second == {"ok": 2, "refused": 0, "failed": 0, "skipped": 2, "total": 4}
    assert gen.calls == {"p1": 1, "p2": 2, "p3": 1, "p4": 2}  # done and refused ids were not asked again
    assert (tmp_path / "1SAT-0001.png").read_bytes() == png1
    log = _log(tmp_path)
    assert [log[i]["status"] for i, _ in items] == ["ok", "ok", "refused", "ok"]
    third = run_generation(gen, items, tmp_path, seed=7, retry_refused=True, progress=False)
    assert third["ok"] == 1 and _log(tmp_path)["1SAT-0003"]["status"] == "ok"
    # the seed of an id does not depend on the run or on the order of the ids
    assert log["1SAT-0002"]["seed"] == t2i.image_seed(7, "1SAT-0002") != t2i.image_seed(8, "1SAT-0002")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_interrupted_image_write_leaves_no_partial_file(tmp_path, monkeypatch):
    class HalfImage:
        def save(self, fh, format=None):
            fh.write(b"\x89PNG partial")
            raise OSError("disk full")

    class G(t2i.Generator):
        model = "half"

        def generate(self, prompt, seed):
            return HalfImage()

    counts = run_generation(G(), [("x", "p")], tmp_path, progress=False)
    assert counts["failed"] == 1 and not (tmp_path / "x.png").exists()
    assert [p.name for p in tmp_path.iterdir()] == [t2i.LOG_NAME]
    assert "disk full" in _log(tmp_path)["x"]["error"]

    real_replace = t2i.os.replace  # a crash while the log is being rewritten keeps the old log intact

    def boom(src, dst):
        if str(dst).endswith(t2i.LOG_NAME):
            raise KeyboardInterrupt
        return real_replace(src, dst)

    before = (tmp_path / t2i.LOG_NAME).read_text()
    monkeypatch.setattr(t2i.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        run_generation(ScriptedGenerator({"q": ["ok"]}), [("y", "q")], tmp_path, progress=False)
    assert (tmp_path / t2i.LOG_NAME).read_text() == before
    assert (tmp_path / "y.png").is_file() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_threaded_runner_writes_one_record_per_id(api, tmp_path):
    gen = OpenAIImageGenerator(base_url=api.url, api_key="ok", client=_client())
    items = [(f"id{i:02d}", f"prompt {i}" + (" FLAKY" if i % 3 == 0 else "")) for i in range(12)]
    counts = run_generation(gen, items, tmp_path, workers=4, progress=False)
    assert counts["ok"] == 12 and len(_log(tmp_path)) == 12
    assert all(_log(tmp_path)[f"id{i:02d}"]["attempts"] == (3 if i % 3 == 0 else 1) for i in range(12))


# ---------------------------------------------------------------------------------------------------------
# CLI (rows from a JSONL file; the white-background variant for API models)
# ---------------------------------------------------------------------------------------------------------
def _rows_file(tmp_path: Path) -> Path:
    from logicval_hf.benchmark.dataset import COLUMNS

    assert {"id", "package", "full_prompt_short", "full_prompt_white_short", "full_prompt_long"} <= set(COLUMNS)
    rows = []
    for pkg, k in (("1SAT", 3), ("3SAT", 2)):
        for i in range(1, k + 1):
            rows.append({"id": f"{pkg}-{i:04d}", "package": pkg,
                         "full_prompt_short": f"{pkg} {i} plain prompt", "full_prompt_long": f"{pkg} {i} long",
                         "full_prompt_white_short": f"{pkg} {i} white prompt",
                         "full_prompt_white_long": f"{pkg} {i} white long",
                         "full_prompt_compact": f"{pkg} {i} compact"})
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_cli_api_backend_uses_the_white_prompt(api, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "ok")
    rows = _rows_file(tmp_path)
    out = tmp_path / "gpt"
    rc = generate_cli.main(["generate", "--model", "gpt-image-2", "--config", "1SAT", "--out", str(out),
                            "--dataset", str(rows), "--base-url", api.url, "--limit", "2", "--no-progress",
                            "--retries", "0"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["prompt"] == "full_prompt_white_short" and summary["ok"] == 2
    assert sorted(p.name for p in out.glob("*.png")) == ["1SAT-0001.png", "1SAT-0002.png"]
    assert [r["body"]["prompt"] for r in api.requests] == ["1SAT 1 white prompt", "1SAT 2 white prompt"]
    rc = generate_cli.main(["generate", "--model", "gpt-image-2", "--config", "3SAT", "--out", str(out),
                            "--dataset", str(rows), "--base-url", api.url, "--no-white-background",
                            "--register", "long", "--no-progress"])
    assert rc == 0 and api.requests[-1]["body"]["prompt"] == "3SAT 2 long"
    rc = generate_cli.main(["generate", "--model", "gpt-image-2", "--config", "1SAT", "--out", str(tmp_path / "c"),
                            "--dataset", str(rows), "--base-url", api.url, "--register", "compact", "--limit", "1",
                            "--no-progress"])
    assert rc == 0 and api.requests[-1]["body"]["prompt"] == "1SAT 1 compact"
    assert "warning" not in capsys.readouterr().err  # an API model does not say what it reads: no guess
    assert generate_cli.guess_backend("gemini-3-pro-image-preview") == "gemini"
    assert generate_cli.guess_backend("black-forest-labs/FLUX.1-dev") == "diffusers"
    assert generate_cli.main(["generate", "--model", "gpt-image-2", "--config", "9SAT", "--out", str(out),
                              "--dataset", str(rows)]) == 2


# ---------------------------------------------------------------------------------------------------------
# Diffusers (tiny random FLUX, 64x64)
# ---------------------------------------------------------------------------------------------------------
def test_diffusers_generator_tiny_flux(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    pytest.importorskip("diffusers")
    from logicval_hf.training import lora as L

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny model: intra-op threads only add hand-off cost
    try:
        _diffusers_checks(torch, L, tmp_path, capsys)
    finally:
        torch.set_num_threads(threads)


def _diffusers_checks(torch, L, tmp_path, capsys):

    from tiny_models import tiny_pipeline

    pipe = tiny_pipeline("flux")
    gen = t2i.DiffusersGenerator(pipeline=pipe, width=64, height=64, steps=2, max_sequence_length=32)
    assert gen.settings["guidance_scale"] == 3.5 and gen.model_type == "flux"
    assert t2i.DIFFUSERS_SETTINGS["flux"]["num_inference_steps"] == 28
    # what the model reads: CLIP's 77 tokens (T5 capped at max_sequence_length=32 here); longer prompts are named
    limit, count = gen.text_context()
    assert limit == 77 and count("a red cube") == len(pipe.tokenizer("a red cube")["input_ids"])
    capsys.readouterr()
    cut = generate_cli.warn_long_prompts(gen, "full_prompt_short", [("1SAT-0001", "x " * 100), ("1SAT-0002", "ok")])
    err = capsys.readouterr().err
    assert cut == ["1SAT-0001"] and "1 of 2 prompts (full_prompt_short)" in err and "--register compact" in err
    assert len(err.strip().splitlines()) == 1
    assert t2i.DIFFUSERS_SETTINGS["qwen-image"] == {"num_inference_steps": 50, "true_cfg_scale": 4.0,
                                                    "negative_prompt": " "}
    counts = run_generation(gen, [("1SAT-0001", "a red cube"), ("1SAT-0002", "two blue spheres")], tmp_path / "a",
                            progress=False)
    assert counts["ok"] == 2
    img = Image.open(tmp_path / "a" / "1SAT-0001.png")
    assert img.size == (64, 64)
    again = gen.generate("a red cube", _log(tmp_path / "a")["1SAT-0001"]["seed"])
    import numpy as np

    assert (np.asarray(again) == np.asarray(img.convert("RGB"))).all()  # the logged seed reproduces the image

    # CLI: local folder + LoRA folder, plain (non-white) prompt for the open model
    model_dir = tmp_path / "tiny-flux"
    pipe.save_pretrained(model_dir)
    L.add_lora(pipe.transformer, rank=4, alpha=4)
    with torch.no_grad():
        for p in L.lora_parameters(pipe.transformer):
            p.add_(0.05)
    lora_dir = L.save_lora(tmp_path / "lora", pipe.transformer, "flux")
    out = tmp_path / "b"
    rc = generate_cli.main(["generate", "--model", str(model_dir), "--lora", str(lora_dir), "--config", "1SAT",
                            "--dataset", str(_rows_file(tmp_path)), "--out", str(out), "--width", "64",
                            "--height", "64", "--steps", "2", "--no-progress", "--device", "cpu"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["prompt"] == "full_prompt_short" and summary["ok"] == 3 and "+lora:" in summary["model"]
    assert sorted(p.name for p in out.glob("*.png")) == ["1SAT-0001.png", "1SAT-0002.png", "1SAT-0003.png"]
    assert all(r["status"] == "ok" and r["prompt"] == "full_prompt_short" for r in _log(out).values())
