"""An OpenAI-compatible ``/chat/completions`` endpoint (vLLM, SGLang, llama.cpp's server, OpenAI, ...): one POST
with retries, a hard deadline and a key that never leaves the request header.

`ChatEndpoint.post` sends a JSON body and returns the parsed JSON answer. Timeouts, refused connections and
HTTP 408/409/425/429/5xx are retried with exponential back-off; a ``Retry-After`` header (seconds or an HTTP
date) sets the wait instead. Other HTTP errors fail at once (401/403 with a hint about the key). Each attempt
gets ``timeout`` seconds, and no more than what is left of the call's ``deadline`` when one is given: a timer
shuts the socket at that moment, so neither a server that never answers nor one that trickles its answer a
byte at a time holds a call past it; a ``Retry-After`` longer than what is left ends the call at once.

The key is read by the caller (from an environment variable) and travels only in the ``Authorization`` header:
`ChatEndpoint`'s ``repr`` hides it, and any text of the server's that is quoted in an error has it masked.
The base URL's user name and password, if any, are never shown either (`public_url`).

Shared by the ``vlm`` perception backend and the VLM baselines (`logicval_hf.scoring.baselines.vlm`).
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import http.client
import io
import json
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

__all__ = ["RETRY_STATUS", "AnswerFormatError", "ChatEndpoint", "EndpointError", "EndpointUnreachable",
           "RequestFailed", "image_data_url", "public_url", "serving_problem"]

log = logging.getLogger(__name__)

#: HTTP statuses worth another attempt (the server may answer the same request later)
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
#: the most bytes of an answer read (a scene graph is a few kB; a chat answer rarely more than 100 kB)
MAX_ANSWER_BYTES = 16 * 2**20


class EndpointError(RuntimeError):
    """A request to the endpoint did not give a usable answer."""


class RequestFailed(EndpointError):
    """No answer after the allowed attempts (HTTP error, timeout), or an HTTP error not worth retrying.

    ``status``: the last HTTP status (None: no HTTP answer, e.g. a timeout); ``timed_out``: the last attempt ran
    out of time."""

    def __init__(self, message: str, status: int | None = None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.timed_out = timed_out


class EndpointUnreachable(RequestFailed):
    """Nothing listens at the URL (refused connection, unknown host): no request can succeed."""


class AnswerFormatError(EndpointError):
    """The endpoint answered 200, but not with JSON."""


def public_url(url: str) -> str:
    """``url`` without a user name, password, query or fragment: what messages and records may show."""
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = f"{host}:{p.port}" if p.port else host
    return urllib.parse.urlunsplit((p.scheme, netloc, p.path, "", ""))


def image_data_url(image: Any, fmt: str = "PNG") -> str:
    """``data:image/png;base64,...`` of an image (a PIL image, a uint8 array or a path; checked as perception
    inputs are, `logicval_hf.perception.load_image`)."""
    from PIL import Image

    from logicval_hf.perception.images import to_pil

    pil = image if isinstance(image, Image.Image) and image.mode == "RGB" else to_pil(image)
    buf = io.BytesIO()
    pil.save(buf, format=fmt)
    mime = "jpeg" if fmt.upper() in ("JPG", "JPEG") else fmt.lower()
    return f"data:image/{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _retry_after(value: str | None) -> float | None:
    """Seconds asked by a ``Retry-After`` header (delta seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _Attempt:
    """One HTTP exchange whose socket is shut when its time is up (a hard bound on connect, send and read)."""

    def __init__(self, parts: urllib.parse.SplitResult, seconds: float) -> None:
        host, port = parts.hostname or "", parts.port
        if parts.scheme == "https":
            self.conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=seconds, context=ssl.create_default_context())
        else:
            self.conn = http.client.HTTPConnection(host, port, timeout=seconds)
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def _expire(self) -> None:
        self.expired = True
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: the exchange is over
                sock.shutdown(socket.SHUT_RDWR)

    def exchange(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> tuple[int, Any, bytes]:
        self._timer.start()
        try:
            self.conn.request(method, path, body=body, headers=headers)
            resp = self.conn.getresponse()
            chunks, size = [], 0
            while True:
                chunk = resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise RequestFailed(f"the answer is larger than {MAX_ANSWER_BYTES} bytes", resp.status)
                chunks.append(chunk)
            if self.expired:  # the socket was shut under a read that then saw an early end
                raise TimeoutError("timed out")
            return resp.status, resp.headers, b"".join(chunks)
        except (OSError, http.client.HTTPException) as e:
            if self.expired:
                raise TimeoutError("timed out") from None
            raise e
        finally:
            self._timer.cancel()
            self.conn.close()


class ChatEndpoint:
    """POST JSON to ``<base_url>/chat/completions`` (module docstring).

    Args:
        base_url: the API's base (``http://127.0.0.1:8000/v1``); a URL that already ends in
            ``/chat/completions`` is taken as it is.
        api_key: sent as ``Authorization: Bearer <key>``; None: no header (a local server without a key).
        timeout: seconds per attempt.
        max_retries: attempts after the first.
        backoff, max_backoff: the wait before retry ``k`` is ``backoff * 2**k`` seconds, at most ``max_backoff``
            (a ``Retry-After`` header's wait is capped the same way).
        sleep: how to wait (tests pass a recorder).
    """

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 60.0, max_retries: int = 3,
                 backoff: float = 1.0, max_backoff: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        base = base_url.strip().rstrip("/")
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url must be an http:// or https:// address, got {public_url(base_url)!r}")
        self.base_url = base.removesuffix("/chat/completions")
        self._parts = parts
        self._key = api_key
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self._sleep = sleep

    def __repr__(self) -> str:  # never the key
        return f"ChatEndpoint({public_url(self.base_url)!r})"

    @property
    def url(self) -> str:
        """Where requests go, as messages may show it."""
        return public_url(self.base_url) + "/chat/completions"

    def mask(self, text: str) -> str:
        """``text`` with the key (if a server echoed it) replaced by ``***``."""
        return text.replace(self._key, "***") if self._key else text

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def _path(self, suffix: str) -> str:
        parts = urllib.parse.urlsplit(self.base_url + suffix)
        return parts.path + (f"?{parts.query}" if parts.query else "")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self.max_backoff, retry_after)
        return min(self.max_backoff, self.backoff * (2 ** attempt))

    def post(self, body: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        """POST ``body`` to the chat-completions route with retries; the parsed JSON answer.

        Args:
            body: the request (``model``, ``messages``, ...).
            deadline: a ``time.monotonic()`` instant no attempt or wait goes past (None: only ``timeout`` per
                attempt).
        Raises:
            EndpointUnreachable: nothing listens at the URL (after the retries).
            RequestFailed: the last attempt's HTTP error or timeout, or an HTTP error not worth retrying.
            AnswerFormatError: a 200 answer that is not JSON.
        """
        data = json.dumps(body).encode("utf-8")
        _, raw = self._send("POST", "/chat/completions", data, deadline)
        try:
            answer = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            text = self.mask(raw[:200].decode("utf-8", "replace"))
            raise AnswerFormatError(f"{self.url}: the answer is not JSON ({e}): {text!r}") from None
        if not isinstance(answer, dict):
            raise AnswerFormatError(f"{self.url}: the answer is JSON but not an object: {self.mask(str(answer))[:200]}")
        return answer

    def get(self, route: str, timeout: float) -> tuple[int, bytes]:
        """One GET of ``<base_url><route>`` (e.g. ``/models``) within ``timeout`` seconds, no retries: its status
        and bytes. Raises `EndpointUnreachable` or `RequestFailed` (timeout) when there is no HTTP answer."""
        try:
            status, _, raw = _Attempt(self._parts, timeout).exchange("GET", self._path(route), None, self._headers())
        except (OSError, http.client.HTTPException) as e:
            raise self._no_answer(e, public_url(self.base_url) + route) from None
        return status, raw

    def _no_answer(self, e: BaseException, where: str) -> RequestFailed:
        if isinstance(e, (TimeoutError, socket.timeout)):
            return RequestFailed(f"{where}: no answer within the timeout", timed_out=True)
        if isinstance(e, (ConnectionRefusedError, socket.gaierror)):
            return EndpointUnreachable(f"{where}: cannot connect ({type(e).__name__}: {e})")
        return RequestFailed(f"{where}: {type(e).__name__}: {self.mask(str(e))}")

    def _send(self, method: str, route: str, data: bytes | None, deadline: float | None) -> tuple[int, bytes]:
        last: RequestFailed | None = None
        made = 0
        for attempt in range(self.max_retries + 1):
            seconds = self.timeout if deadline is None else min(self.timeout, deadline - time.monotonic())
            if seconds <= 0:
                break
            made += 1
            retry_after = None
            try:
                status, headers, raw = _Attempt(self._parts, seconds).exchange(method, self._path(route), data,
                                                                                 self._headers())
            except RequestFailed as e:  # an oversized answer: not worth another attempt
                raise RequestFailed(f"{self.url}: {e}", e.status) from None
            except (OSError, http.client.HTTPException) as e:
                last = self._no_answer(e, self.url)
            else:
                if status < 300:
                    return status, raw
                text = self.mask(raw[:300].decode("utf-8", "replace"))
                if status not in RETRY_STATUS:
                    hint = " (check the API key)" if status in (401, 403) else ""
                    raise RequestFailed(f"{self.url}: HTTP {status}: {text}{hint}", status)
                last = RequestFailed(f"{self.url}: HTTP {status}: {text}", status)
                retry_after = _retry_after(headers.get("Retry-After"))
            if attempt == self.max_retries:
                break
            wait = self._delay(attempt, retry_after)
            if deadline is not None and time.monotonic() + wait >= deadline:
                if retry_after is not None:  # the server asked for more time than is left: say so
                    raise type(last)(f"{last}; Retry-After {retry_after:g} s does not fit in what is left of the "
                                     "timeout", last.status, last.timed_out)
                break
            log.debug("%s: attempt %d failed (%s); retrying in %.2f s", self.url, attempt + 1, last, wait)
            self._sleep(wait)
        if last is None:
            raise RequestFailed(f"{self.url}: no time left for a request", timed_out=True)
        raise type(last)(f"{self.url}: failed after {made} attempt{'s' * (made != 1)}; last error "
                         f"{str(last).removeprefix(self.url + ': ')}", last.status, last.timed_out)


def _served(raw: bytes) -> list[str] | None:
    try:
        return [str(m["id"]) for m in json.loads(raw)["data"]]
    except (ValueError, KeyError, TypeError):
        return None


def serving_problem(endpoint: ChatEndpoint, model: str, timeout: float, key_hint: str) -> str | None:
    """What stops ``endpoint`` from answering requests for ``model``, asked once with ``GET /models`` within
    ``timeout`` seconds: nothing answers, the key is refused (``key_hint`` says where the key comes from), or the
    listed models leave this one out. None when nothing is seen to be wrong (an endpoint without ``/models``
    included)."""
    where = endpoint.url.removesuffix("/chat/completions")
    try:
        status, raw = endpoint.get("/models", timeout)
    except RequestFailed as e:
        return f"cannot reach the endpoint: {e}"
    if status in (401, 403):
        return f"{where}/models refused the request (HTTP {status}): check the key in {key_hint}"
    served = _served(raw) if status == 200 else None
    if served is not None and model not in served:
        return f"model {model!r} is not served at {where} (it serves {served[:10]})"
    return None
