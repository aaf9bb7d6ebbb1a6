"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers like a grounding VLM, for the tests of the
``vlm`` perception backend: it returns the true objects of each image it was given, in the box convention it is
set to, or one kind of bad answer for the images it is told to spoil.

Each image is registered with its true `Scene`: `FakeVLM.image` makes one (a uniform colour of its own, the scene's
size), known by its colour whatever size or format it was sent in; `FakeVLM.register` takes any image, known by
its exact pixels (sent losslessly at its own size). Requests, the most requests in
flight at once and the time of each are recorded. Every wait is bounded: a server told to stay silent waits at
most `SILENCE` seconds or until it is closed.

`FakeJudge` is the same server answering as the VLM baselines' model would: a 1-5 rating for the VLM judge, top
log-probabilities for Soft-TIFA, each drawn from the image.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

from logicval_hf.contract.scene import Scene

#: the longest a silent answer waits (seconds)
SILENCE = 20.0
#: every kind of answer the server can be told to give an image
BAD = ("malformed", "vocabulary", "outside", "silent", "flaky", "fenced", "cut")


def sent_image(request: dict[str, Any]) -> Any:
    """The PIL image a recorded request carried."""
    content = request["body"]["messages"][0]["content"]
    url = next(c["image_url"]["url"] for c in content if c["type"] == "image_url")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def colour_of(image: Any) -> tuple[int, int, int]:
    """The colour an image is known by (its centre pixel's)."""
    a = np.asarray(image)
    r, g, b = (int(v) for v in a[a.shape[0] // 2, a.shape[1] // 2])
    return r, g, b


class FakeVLM:
    """The server (a context manager: started on entry, closed on exit).

    Args:
        boxes: ``pixels`` (of the image as received) or ``norm1000``.
        models: what ``GET /v1/models`` lists.
        key: when set, a request without ``Authorization: Bearer <key>`` gets HTTP 401 whose body echoes the
            header it got (as a careless server might).
        delay: seconds each answer takes.
        retry_after: the ``Retry-After`` of a ``flaky`` image's first answer (HTTP 503).
    """

    def __init__(self, boxes: str = "pixels", models: tuple[str, ...] = ("fake-vlm",), key: str | None = None,
                 delay: float = 0.0, retry_after: str = "0.3") -> None:
        self.boxes, self.models, self.key, self.delay, self.retry_after = boxes, models, key, delay, retry_after
        self.truth: dict[Any, Scene] = {}  # by colour, or by the pixels' digest
        self.bad: dict[Any, str] = {}
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self.closed = threading.Event()
        self._lock = threading.Lock()
        self._seen: set[tuple[int, int, int]] = set()
        handler = type("Handler", (_Handler,), {"fake": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeVLM:
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def image(self, scene: Scene, bad: str | None = None) -> np.ndarray:
        """A new image (``H x W x 3`` uint8 of the scene's size) whose true objects are ``scene``'s; ``bad``: the
        kind of bad answer it gets (`BAD`)."""
        assert bad is None or bad in BAD, bad
        k = len(self.truth) + 1
        colour = (k % 40 * 5 + 20, k // 40 % 40 * 5 + 20, 90)  # 5 levels apart
        self.truth[colour] = scene
        if bad:
            self.bad[colour] = bad
        w, h = (int(v) for v in scene.image_size)
        return np.full((h, w, 3), colour, np.uint8)

    def register(self, rgb: np.ndarray, scene: Scene, bad: str | None = None) -> None:
        """Make ``scene`` the truth of the image ``rgb`` (known by its exact pixels)."""
        key = hashlib.sha1(np.ascontiguousarray(rgb).tobytes()).hexdigest()
        self.truth[key] = scene
        if bad:
            self.bad[key] = bad

    def known(self, colour: tuple[int, int, int]) -> tuple[int, int, int]:
        """The registered colour within 4 levels of ``colour`` (JPEG shifts a flat colour a little), or itself."""
        near = [c for c in self.truth if isinstance(c, tuple)
                and max(abs(a - b) for a, b in zip(c, colour, strict=True)) <= 4]
        return near[0] if near else colour

    # ---- answers ------------------------------------------------------------------------------------------
    def objects(self, scene: Scene, size: tuple[int, int]) -> list[dict[str, Any]]:
        """The scene's objects as a VLM would list them for an image received at ``size``: most confident first
        (so that ranks by order equal ranks by score), boxes in the server's convention, at full precision."""
        w, h = scene.image_size
        sx, sy = (size[0] / w, size[1] / h) if self.boxes == "pixels" else (1000 / w, 1000 / h)
        order = sorted(range(len(scene.objects)), key=lambda i: -(scene.objects[i].score or 0.0))
        out = []
        for i in order:
            o = scene.objects[i]
            x0, y0, x1, y1 = o.bbox
            out.append({**o.attributes, "bbox": [x0 * sx, y0 * sy, x1 * sx, y1 * sy]})
        return out

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        """(status, headers, JSON body or None for no answer at all)."""
        im = sent_image({"body": body})
        digest = hashlib.sha1(np.asarray(im).tobytes()).hexdigest()
        colour = digest if digest in self.truth else self.known(colour_of(im))
        scene = self.truth.get(colour)
        objs = [] if scene is None else self.objects(scene, im.size)  # an unknown image: an empty scene
        bad = self.bad.get(colour)
        with self._lock:
            first = colour not in self._seen
            self._seen.add(colour)
        if bad == "flaky" and first:
            return 503, {"Retry-After": self.retry_after}, {"error": "overloaded, try later"}
        if bad == "silent":
            self.closed.wait(SILENCE)
            return 200, {}, None
        if bad == "vocabulary" and objs:
            objs[0][next(iter(objs[0]))] = "magenta"
        if bad == "outside" and objs:  # the whole box right of the image
            right = im.width if self.boxes == "pixels" else 1000
            objs[0]["bbox"][0], objs[0]["bbox"][2] = right + 10, right + 60
        text = json.dumps({"objects": objs})
        finish = "stop"
        if bad == "malformed":
            text = text[:-3]
        elif bad == "cut":
            text, finish = text[: len(text) // 2], "length"
        elif bad == "fenced":
            text = f"Here are the objects I found:\n```json\n{text}\n```\nLet me know if you need more."
        return 200, {}, {"id": "fake", "object": "chat.completion", "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": finish,
                                      "message": {"role": "assistant", "content": text}}]}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeVLM
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        fake, got = self.fake, self.headers.get("Authorization", "")
        if fake.key is not None and got != f"Bearer {fake.key}":
            self._send(401, {"error": f"invalid credentials: {got!r}"})
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorised():
            return
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.fake.models]})
        else:
            self._send(404, {"error": "no such route"})

    def do_POST(self) -> None:
        fake = self.fake
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with fake._lock:
            fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body,
                                  "at": time.monotonic()})
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            if not self._authorised():
                return
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": "no such route"})
                return
            if fake.delay:
                fake.closed.wait(fake.delay)
            status, headers, payload = fake.answer(body)
            if payload is None:
                self.close_connection = True
                return
            self._send(status, payload, headers)
        finally:
            with fake._lock:
                fake.in_flight -= 1


class FakeJudge(FakeVLM):
    """The server answering the VLM baselines: a judge request gets ``SCORE: k RATIONALE: ...`` with ``k`` in 1-5
    drawn from the image's pixels; a request for log-probabilities (Soft-TIFA) gets a top-3 list over the question's
    candidates (``... one of: a, b, c.``), the most likely drawn from the image and the question. An image whose
    pixels are all dark (mean below 8) gets a judge answer without a rating."""

    @staticmethod
    def _draw(*parts: Any) -> int:
        return int(hashlib.sha1(b"|".join(p if isinstance(p, bytes) else str(p).encode() for p in parts))
                   .hexdigest()[:8], 16)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        im = np.asarray(sent_image({"body": body}))
        text = next(c["text"] for c in body["messages"][0]["content"] if c["type"] == "text")
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
        if body.get("logprobs"):
            cands = text.rsplit("one of: ", 1)[-1].rstrip(".").split(", ")
            k = self._draw(im.tobytes(), text) % len(cands)
            top = [(cands[k], 0.6), (cands[(k + 1) % len(cands)], 0.3), ("maybe", 0.1)]
            first = top[0][0]
            choice.update(message={"role": "assistant", "content": first}, logprobs={"content": [{
                "token": first, "logprob": math.log(0.6), "bytes": None,
                "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in top]}]})
        else:
            rating = 1 + self._draw(im.tobytes()) % 5
            content = "I cannot tell." if im.mean() < 8 else f"SCORE: {rating} RATIONALE: drawn from the pixels."
            choice["message"] = {"role": "assistant", "content": content}
        return 200, {}, {"id": "fake", "object": "chat.completion", "model": body.get("model"), "choices": [choice]}
