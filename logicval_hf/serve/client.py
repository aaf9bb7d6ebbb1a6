"""A Python client for the reward server, shaped like Flow-GRPO's GenEval reward client: a ``requests`` session
that retries HTTP 500 (and, through urllib3, a 503 that carries ``Retry-After``) up to 1,000 times, JPEG-encoded
images in chunks of at most 64, a pickled request, a pickled answer. The tests and
``benchmarks/bench_reward_server.py`` use it to send exactly the request Flow-GRPO sends.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Sequence
from typing import Any

from logicval_hf.serve.unpickling import restricted_loads

__all__ = ["CHUNK", "jpeg_bytes", "reward_session", "score_images"]

#: images per request (Flow-GRPO's batch size for the GenEval reward)
CHUNK = 64


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


def score_images(url: str, jpegs: Sequence[bytes], meta_datas: Sequence[Any], only_strict: bool = False,
                 session: Any = None, timeout: float = 120.0, chunk: int = CHUNK) -> dict[str, Any]:
    """Post ``jpegs`` with their metadata in chunks of ``chunk`` and merge the answers as Flow-GRPO does.

    Returns:
        ``{"scores", "rewards", "strict_rewards", "group_rewards", "group_strict_rewards", "errors"}`` over all
        images (group lists concatenated chunk after chunk; error indices shifted to the whole list).
    Raises:
        requests.HTTPError: an answer other than 200 once the retries are spent.
    """
    session = session or reward_session()
    out: dict[str, Any] = {"scores": [], "rewards": [], "strict_rewards": [], "group_rewards": {},
                           "group_strict_rewards": {}, "errors": []}
    for start in range(0, len(jpegs), chunk):
        body = pickle.dumps({"images": list(jpegs[start:start + chunk]),
                             "meta_datas": list(meta_datas[start:start + chunk]), "only_strict": only_strict})
        response = session.post(url, data=body, timeout=timeout)
        response.raise_for_status()
        answer = restricted_loads(response.content)  # an answer is plain values too; nothing in it may run
        for key in ("scores", "rewards", "strict_rewards"):
            out[key] += answer[key]
        for key in ("group_rewards", "group_strict_rewards"):
            for group, values in answer[key].items():
                out[key].setdefault(group, []).extend(values)
        out["errors"] += [{**e, "index": e["index"] + start} for e in answer.get("errors", [])]
    return out
