"""Request bodies: the cap on one body, the budget of bodies held at once, and the timeout on a client that stops
sending.

* A body over ``--max-bytes`` is refused with 413 as soon as that is known (its declared length, or the byte that
  passes the cap), before more of it is read.
* The bodies the server holds at once (being read, parsed, waiting or being scored: a parsed request holds its
  images until it is answered) are bounded by a budget in bytes (`BodyBudget`, ``max_inflight_bytes``), counted as
  the bytes arrive. A request whose bytes would pass it is refused with 503 and ``Retry-After`` (Flow-GRPO's client
  waits and retries): eight clients posting 113 MB each no longer hold 3.5 GB at once.
* A client that sends nothing for ``read_timeout`` seconds while its body is read is answered 408 (the connection is
  closed; `logicval_hf.serve.http_server` closes a connection silent before or between requests the same way).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["Body", "BodyBudget", "Refused", "read_body"]


class Refused(Exception):
    """An answer other than 200: status, one-line message, extra headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


class BodyBudget:
    """Bytes of request bodies held at once, at most ``total`` (the event loop's own bookkeeping: no lock)."""

    def __init__(self, total: int):
        self.total = total
        self.held = 0

    def take(self, n: int) -> None:
        """Hold ``n`` more bytes.

        Raises:
            Refused: 503 with ``Retry-After``: the budget cannot hold them now.
        """
        if self.held + n > self.total:
            raise Refused(503, f"the server holds {self.held:,} bytes of request bodies (its budget is "
                               f"{self.total:,}); retry the request", {"Retry-After": "1"})
        self.held += n

    def give(self, n: int) -> None:
        self.held = max(0, self.held - n)


class Body:
    """A body read whole; `take` hands its bytes over once, so that they can go as soon as they are parsed (the
    budget still counts them until the request is answered: the parsed request holds its images)."""

    def __init__(self, data: bytes):
        self._data = data

    def take(self) -> bytes:
        data, self._data = self._data, b""
        return data


@contextlib.asynccontextmanager
async def read_body(request: Any, limit: int, budget: BodyBudget, timeout: float | None) -> AsyncIterator[Body]:
    """The body of ``request``, held against ``budget`` until the block ends (module docstring).

    Args:
        request: a Starlette request.
        limit: the most bytes one body may have.
        budget: the bodies held at once.
        timeout: seconds the client may send nothing before the body is complete (None: no limit).
    Raises:
        Refused: 413 over ``limit``, 503 over the budget, 408 after ``timeout`` seconds of silence.
    """
    held = 0
    try:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise Refused(413, f"the body has {int(declared):,} bytes; the cap is {limit:,}")
        # held as it arrives, not as declared: a client that declares a large body and sends nothing holds nothing
        chunks, size = [], 0
        stream = request.stream().__aiter__()
        while True:
            try:
                chunk = await asyncio.wait_for(stream.__anext__(), timeout)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise Refused(408, f"the client sent nothing for {timeout:g} s before the body was complete",
                              {"Connection": "close"}) from None
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"the body has more than {limit:,} bytes; the cap is {limit:,}")
            if size > held:
                budget.take(size - held)
                held = size
            chunks.append(chunk)
        body = Body(b"".join(chunks))
        chunks.clear()
        yield body
    finally:
        budget.give(held)
