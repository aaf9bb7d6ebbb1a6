"""The two wire protocols of the reward server, their size caps, and the answers they get.

**Flow-GRPO** (``POST /``): the body is ``pickle.dumps({"images": [JPEG bytes, ...], "meta_datas": [dict, ...],
"only_strict": bool})`` (read with `logicval_hf.serve.unpickling.restricted_loads`); the answer is a pickled dict
``{"scores", "rewards", "strict_rewards", "group_rewards", "group_strict_rewards", "errors"}``: one float per image
in the first three, one list per group in the two ``group_*`` dicts (one entry per image: the image's value when
it belongs to the group, -10.0 when it does not), ``errors``, one ``{"index", "error"}`` per bad sample, and, on a
server with a minimum confidence, ``unread``, one ``{"index", "reason"}`` per image read below it.

**Flow-Factory** (``POST /compute``): JSON ``{"prompt": [...], "image": [base64 PNG/JPEG, ...]}``, exactly what
Flow-Factory's remote reward client (``RemoteRewardClient.compute``) posts, with its ``video``, ``condition_images``,
``condition_videos`` and ``kwargs`` keys null (``kwargs`` may also be an object, not read); optionally ``"specs"``
or ``"meta_datas"`` (one per image). Without them, each image's spec is looked up by its prompt in the server's
``--prompts`` file (`logicval_hf.serve.prompts`). The answer is JSON ``{"rewards": [...], "scores": [...],
"verdicts": [...], "strict_rewards": [...], "errors": [...]}`` (and ``"unread": [...]`` on a server with a minimum
confidence); the client reads ``rewards``. It never has an ``"error"`` key: Flow-Factory's client treats a truthy
one as a failed call.

An **unread** image (its scene confidence below ``--min-confidence``) is neither a pass nor a failure: it belongs
to no group (-10.0 in every ``group_*`` list, which Flow-GRPO's evaluation leaves out of its means), its ``unread``
entry says why, and its numbers are the floor every sample without a reward gets (0.0, as a bad sample's): both
clients turn the lists into tensors at once (no None can stand there, and a NaN would spread through the mean and
standard deviation of its prompt's group), and any value above the floor would pay a policy for drawing images the
reader cannot read. A client that can leave a sample out of its loss reads ``unread``.

A request that is malformed as a whole (not a pickle of plain values, wrong keys, images and metadata of
different lengths) is a `BadRequest` (HTTP 400); one over a size cap is a `TooLarge` (HTTP 413). A bad *sample*
(an undecodable image, a malformed spec) is neither: it gets reward 0 and an ``errors`` entry in an HTTP 200,
because a 500 makes Flow-GRPO's client retry the same request a thousand times.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.serve.health import without_paths
from logicval_hf.serve.reward_modes import check_reward_mode
from logicval_hf.serve.unpickling import UnsafePickleError, restricted_loads

__all__ = ["BadRequest", "GENEVAL_TAGS", "Limits", "RewardRequest", "SampleResult", "TooLarge", "ABSENT",
           "check_image_headers", "grouped", "parse_json_request", "parse_pickle_request",
           "pickle_response", "json_response"]

#: GenEval's six tags: always keys of ``group_rewards`` / ``group_strict_rewards`` (as the reference server)
GENEVAL_TAGS = ("single_object", "two_object", "counting", "colors", "position", "color_attr")
#: the value of a group an image does not belong to (Flow-GRPO averages each group without these)
ABSENT = -10.0

_PICKLE_KEYS = ("images", "meta_datas", "only_strict", "reward")
#: Flow-Factory's payload keys we accept (``video`` and ``condition_*`` only as null: we score images)
_JSON_KEYS = ("prompt", "image", "specs", "meta_datas", "reward", "only_strict", "video", "condition_images",
              "condition_videos", "kwargs")


class BadRequest(ValueError):
    """The request as a whole is malformed (HTTP 400)."""


class TooLarge(ValueError):
    """The request is over a size cap (HTTP 413)."""


@dataclass(frozen=True)
class Limits:
    """Size caps of one request.

    Attributes:
        max_images: images per request (Flow-GRPO sends at most 64).
        max_pixels: pixels per image, read from the image header before anything is decoded.
        max_bytes: bytes per request body.
    """

    max_images: int = 256
    max_pixels: int = 2048 * 2048  # a worker decodes a whole micro-batch: 64 images of 4.2 MP are 0.8 GB of RGB
    max_bytes: int = 128 * 2**20

    def __post_init__(self) -> None:
        for name in ("max_images", "max_pixels", "max_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")


@dataclass
class RewardRequest:
    """One request, either protocol: encoded images and one metadata item per image.

    ``items[i]`` is what image i is scored against: GenEval metadata, a LogicVal item or a spec (see
    `logicval_hf.serve.items`); ``reward`` overrides the server's reward mode for LogicVal items; ``prompts_only``:
    the request named no spec, only a prompt per image (Flow-Factory's client).
    """

    images: list[Any]
    items: list[Any]
    only_strict: bool = False
    reward: str | None = None
    prompts_only: bool = False


@dataclass
class SampleResult:
    """The rewards of one image. ``groups`` maps each group the image belongs to (a GenEval tag, a LogicVal
    constraint class or tag) to its ``(reward, strict_reward)``; ``error`` is set when the sample was bad (one line,
    what the client reads); ``unread``, when the image was read with a scene confidence below the server's minimum
    (why; module docstring: what its numbers are); ``detail``, when scoring it raised something other than bad
    input's ValueError: the traceback, for the server's debug log only (never sent)."""

    score: float = 0.0
    reward: float = 0.0
    strict: float = 0.0
    groups: dict[str, tuple[float, float]] = field(default_factory=dict)
    error: str | None = None
    detail: str | None = field(default=None, compare=False, repr=False)
    unread: str | None = None

    @classmethod
    def failed(cls, error: str, detail: str | None = None) -> SampleResult:
        """A bad sample's result: reward 0 and ``error`` on one line (a library's message may name files: only
        their names are kept, `without_paths`; so does ``detail``)."""
        return cls(error=" ".join(without_paths(error).split()),
                   detail=None if detail is None else without_paths(detail))

    @classmethod
    def set_apart(cls, reason: str) -> SampleResult:
        """An unread image's result: neither a pass nor a failure (module docstring): the floor values, no group,
        and ``unread`` saying why (one line)."""
        return cls(unread=" ".join(without_paths(reason).split()))


def _check_count(n_images: int, n_items: int, limits: Limits, items_key: str) -> None:
    if n_images > limits.max_images:
        raise TooLarge(f"{n_images} images in one request; the cap is {limits.max_images} (send smaller chunks)")
    if n_images != n_items:
        raise BadRequest(f"{n_images} images but {n_items} {items_key}: one per image")


def _only_strict(data: Mapping[str, Any]) -> bool:
    only_strict = data.get("only_strict", False)
    if not isinstance(only_strict, bool):
        raise BadRequest(f"'only_strict' must be true or false, got {only_strict!r}")
    return only_strict


def _reward_mode(v: Any) -> str | None:
    if v is None:
        return None
    try:
        check_reward_mode(v)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    return v


def parse_pickle_request(body: bytes, limits: Limits) -> RewardRequest:
    """Flow-GRPO's request from its body bytes.

    Raises:
        TooLarge: over the byte or image-count cap.
        BadRequest: not a pickle of plain values (the message names what was refused), or not the protocol's dict.
    """
    if len(body) > limits.max_bytes:
        raise TooLarge(f"the body has {len(body):,} bytes; the cap is {limits.max_bytes:,}")
    try:
        data = restricted_loads(body)
    except UnsafePickleError as e:
        raise BadRequest(f"refused: {e}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the pickle must hold a dict with 'images' and 'meta_datas', got a {type(data).__name__}")
    unknown = [k for k in data if k not in _PICKLE_KEYS]
    missing = [k for k in ("images", "meta_datas") if k not in data]
    if unknown or missing:
        raise BadRequest(f"expected keys {list(_PICKLE_KEYS[:3])} (and optionally 'reward'); "
                         f"missing {missing}, unknown {unknown}")
    images, items = data["images"], data["meta_datas"]
    if not isinstance(images, (list, tuple)) or not isinstance(items, (list, tuple)):
        raise BadRequest("'images' and 'meta_datas' must be lists")
    _check_count(len(images), len(items), limits, "meta_datas")
    return RewardRequest(list(images), list(items), _only_strict(data), _reward_mode(data.get("reward")))


def _b64(x: Any) -> Any:
    """Decoded image bytes, or the value itself when it is not a base64 string (the worker names the sample)."""
    if not isinstance(x, str):
        return x
    text = x.split(",", 1)[1] if x.startswith("data:") else x  # a data URL as well as bare base64
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return x


def parse_json_request(data: Any, limits: Limits) -> RewardRequest:
    """Flow-Factory's request (already parsed from JSON).

    A request without ``specs`` and ``meta_datas`` has one prompt-only item per image (``{"prompt": text}``): the
    server looks their specs up (`logicval_hf.serve.prompts`), or refuses the request when it has no prompts file.

    Raises:
        TooLarge: over the image-count cap.
        BadRequest: not an object with ``image`` and, of the same length, ``specs``, ``meta_datas`` or ``prompt``.
    """
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, got {type(data).__name__}")
    unknown = [k for k in data if k not in _JSON_KEYS]
    if unknown:
        raise BadRequest(f"unknown keys {unknown}; expected {list(_JSON_KEYS[:6])}")
    for k in ("video", "condition_images", "condition_videos"):
        if data.get(k) is not None:
            raise BadRequest(f"'{k}' is not scored by LogicVal; send images ('image') only")
    if data.get("kwargs") is not None and not isinstance(data["kwargs"], dict):
        raise BadRequest("'kwargs' must be an object or null")
    images = data.get("image")
    if not isinstance(images, list):
        raise BadRequest("'image' must be a list of base64-encoded images")
    if "specs" in data and "meta_datas" in data:
        raise BadRequest("send one of 'specs' or 'meta_datas' (one per image), not both")
    prompts = data.get("prompt")
    if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(images)):
        raise BadRequest("'prompt' must be a list with one prompt per image")
    if "specs" not in data and "meta_datas" not in data:
        if prompts is None or not all(isinstance(p, str) for p in prompts):
            raise BadRequest("send 'prompt' (one text per image) or one of 'specs' or 'meta_datas' (one per image)")
        _check_count(len(images), len(prompts), limits, "prompt")
        items: list[Any] = [{"prompt": p} for p in prompts]
        return RewardRequest([_b64(x) for x in images], items, _only_strict(data), _reward_mode(data.get("reward")),
                             prompts_only=True)
    items_key = "specs" if "specs" in data else "meta_datas"
    items = data[items_key]
    if not isinstance(items, list):
        raise BadRequest(f"'{items_key}' must be a list")
    _check_count(len(images), len(items), limits, items_key)
    if items_key == "specs":  # a bare spec is a LogicVal item of its own
        items = [{"spec": s} for s in items]
    return RewardRequest([_b64(x) for x in images], list(items), _only_strict(data), _reward_mode(data.get("reward")))


def check_image_headers(images: Sequence[Any], limits: Limits) -> None:
    """Refuse (`TooLarge`) any image over the pixel cap, from its header alone. Images that are not readable
    are left alone here: the worker gives them an error entry."""
    import warnings

    from PIL import Image

    for i, data in enumerate(images):
        if not isinstance(data, (bytes, bytearray)):
            continue
        try:
            with warnings.catch_warnings():  # PIL warns over 89 megapixels and refuses over 179
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as im:
                    w, h = im.size
        except Image.DecompressionBombError as e:  # a header of more pixels than PIL opens: over any cap
            claimed = re.search(r"\((\d+) pixels\)", str(e))
            size = f"{int(claimed.group(1)):,} pixels" if claimed else "more pixels than PIL opens"
            raise TooLarge(f"images[{i}] has {size}; the cap is {limits.max_pixels:,} per image") from None
        except Exception:  # noqa: BLE001 - any unreadable header is the sample's error entry, later
            continue
        if w * h > limits.max_pixels:
            raise TooLarge(f"images[{i}] is {w}x{h} = {w * h:,} pixels; the cap is {limits.max_pixels:,} per image")


def grouped(results: Sequence[SampleResult], base: Sequence[str] = GENEVAL_TAGS) -> tuple[dict, dict]:
    """``(group_rewards, group_strict_rewards)``: for each group (GenEval's tags, then every other group named in
    the request, in order of appearance), one entry per image: its value, or `ABSENT`."""
    keys = list(base)
    for r in results:
        keys.extend(k for k in r.groups if k not in keys)
    rewards = {k: [r.groups[k][0] if k in r.groups else ABSENT for r in results] for k in keys}
    strict = {k: [r.groups[k][1] if k in r.groups else ABSENT for r in results] for k in keys}
    return rewards, strict


def _errors(results: Sequence[SampleResult]) -> list[dict[str, Any]]:
    return [{"index": i, "error": r.error} for i, r in enumerate(results) if r.error is not None]


def _unread(results: Sequence[SampleResult]) -> list[dict[str, Any]]:
    return [{"index": i, "reason": r.unread} for i, r in enumerate(results) if r.unread is not None]


def pickle_response(results: Sequence[SampleResult], with_unread: bool = False) -> bytes:
    """Flow-GRPO's answer, pickled (protocol 4: their client's ``pickle.loads`` reads it on any Python 3);
    ``with_unread``: the server has a minimum confidence, and the answer lists the images read below it (the key is
    there, empty or not, exactly when the server sets images apart)."""
    import pickle

    group_rewards, group_strict = grouped(results)
    answer = {
        "scores": [r.score for r in results],
        "rewards": [r.reward for r in results],
        "strict_rewards": [r.strict for r in results],
        "group_rewards": group_rewards,
        "group_strict_rewards": group_strict,
        "errors": _errors(results),
        **({"unread": _unread(results)} if with_unread else {}),
    }
    return pickle.dumps(answer, protocol=4)


def json_response(results: Sequence[SampleResult], mode: Mapping[str, Any] | None = None,
                  with_unread: bool = False) -> dict[str, Any]:
    """Flow-Factory's answer: ``rewards`` is what a trainer optimises (the dense ``scores``), with the verdicts
    beside it (``with_unread``: as for `pickle_response`)."""
    return {
        "rewards": [r.score for r in results],
        "scores": [r.score for r in results],
        "verdicts": [r.reward for r in results],
        "strict_rewards": [r.strict for r in results],
        "errors": _errors(results),
        **({"unread": _unread(results)} if with_unread else {}),
        **(dict(mode) if mode else {}),
    }
