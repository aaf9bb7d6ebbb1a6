"""What Flow-GRPO's GenEval reward client sends the reward server, for the tests and
``benchmarks/bench_reward_server.py``: a ``requests`` session that retries HTTP 500 (and, through urllib3, a 503
that carries ``Retry-After``) up to 1,000 times, and images JPEG-encoded as it encodes them.
"""

from __future__ import annotations

import io
from typing import Any

__all__ = ["jpeg_bytes", "reward_session"]


def reward_session(retries: int = 1000, backoff_factor: float = 1.0) -> Any:
    """A ``requests.Session`` retrying 500s (and 503s with ``Retry-After``) as Flow-GRPO's does."""
    import requests
    from requests.adapters import HTTPAdapter, Retry

    session = requests.Session()
    # allowed_methods=None: retry any verb, POST included (Flow-GRPO writes False, which urllib3 reads the same)
    retry = Retry(total=retries, backoff_factor=backoff_factor, status_forcelist=[500], allowed_methods=None)
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


def jpeg_bytes(image: Any, quality: int = 75) -> bytes:
    """A PIL image or an ``H x W x 3`` uint8 array as JPEG bytes (PIL's default quality, as Flow-GRPO sends)."""
    from PIL import Image

    im = image if isinstance(image, Image.Image) else Image.fromarray(image)
    buf = io.BytesIO()
    im.convert("RGB").save(buf, format="JPEG", quality=quality)
    return buf.getvalue()
