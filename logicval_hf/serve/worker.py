"""What a scoring worker does with one micro-batch: read the items, decode the images in bounded chunks, hand each
chunk to the judge (`logicval_hf.scoring.judge`: batched perception per domain, the minimum confidence, labels,
verification with the worker's one solver), and turn each judgement into one `SampleResult` of rewards.

`score_batch` is a plain function of picklable arguments, so it runs unchanged in a worker process (the server's
process pool), in a thread (a Ray Serve replica) or in-process (the benchmark's baseline). Nothing in it raises for
a bad sample: an undecodable image, a malformed item, a scene the spec cannot read, or anything a sample makes raise
(a TypeError from a value of the wrong type included) becomes that sample's error, and the others are scored.

What stays here, before the judge: each item read into its `Task` (``meta_datas[i]`` errors), the check that the
backend perceives the item's domain, a raw-input backend's scene graph checked (`_raw_scene_input`: never a path),
and the images decoded as they are scored: a batch's images go to the judge in chunks of at most `DECODE_PIXELS`
decoded pixels (at least one image each; read from each image's header), so a worker's memory does not grow with
the size of a batch (64 images of 512x512 are one chunk; 256 of 2048x2048, 32 chunks of 8).

With a minimum confidence (``--min-confidence``), an image read below it is *unread*: its result carries the reason
and the answer's floor values, in no group (`logicval_hf.serve.protocol.SampleResult.set_apart`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from logicval_hf.errors import SolverTimeout
from logicval_hf.serve.items import Task, read_item
from logicval_hf.serve.protocol import SampleResult

if TYPE_CHECKING:
    from logicval_hf.scoring.judge import JudgeOptions

__all__ = ["DECODE_PIXELS", "Sample", "ScoringSettings", "decode_image", "score_batch", "start_worker", "warm_up"]

#: decoded pixels a worker holds at once (about 100 MB of RGB): a batch is perceived in chunks within it
DECODE_PIXELS = 32 * 2**20


@dataclass(frozen=True)
class ScoringSettings:
    """How a worker scores: the perception backend, its settings, the default reward mode of LogicVal items, and
    the minimum scene confidence below which an image is unread (None: every image is scored).

    Raises:
        ValueError: a ``min_confidence`` outside [0, 1].
    """

    backend: str = "clevr"
    backend_settings: Mapping[str, Any] = field(default_factory=dict)
    reward: str = "fraction"
    min_confidence: float | None = None

    def __post_init__(self) -> None:
        if self.min_confidence is not None:
            from logicval_hf.scoring.judge import check_min_confidence

            object.__setattr__(self, "min_confidence", check_min_confidence(self.min_confidence))

    def judge_options(self, chunk: int = 1) -> JudgeOptions:
        """The judge's options for this worker (`logicval_hf.scoring.judge.JudgeOptions`): the backend, its
        settings and the minimum confidence; ``chunk`` images perceived per call (already decoded here, within
        `DECODE_PIXELS`)."""
        from logicval_hf.scoring.judge import JudgeOptions

        return JudgeOptions(backend=self.backend, backend_settings=dict(self.backend_settings),
                            min_confidence=self.min_confidence, chunk=max(1, chunk))


@dataclass(frozen=True)
class Sample:
    """One image of a micro-batch: its encoded bytes (or a scene graph for a raw-input backend), its metadata item,
    its request's flags, and its index in its request (what its error messages name; default: its place in the
    batch)."""

    image: Any
    item: Any
    only_strict: bool = False
    reward: str | None = None
    index: int | None = None


def _exit_with(server: int) -> None:
    """End this worker as soon as process ``server`` has ended (a pidfd becomes readable then; without pidfds,
    polled once a second)."""
    import select

    try:
        fd = os.pidfd_open(server)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        select.select([fd], [], [])
    else:
        while True:
            try:
                os.kill(server, 0)
            except ProcessLookupError:
                break
            time.sleep(1.0)
    os._exit(0)


def start_worker(settings: ScoringSettings, server: int | None = None) -> None:
    """Process start-up of a scoring worker (the process pool's initializer): one intra-op thread per worker
    process unless the environment says otherwise, then the backend's own start-up (`PerceptionBackend.init_worker`).

    Args:
        settings: what the worker scores with.
        server: the server process's pid: the worker exits when that process ends, however it ended (a SIGKILL
            leaves no chance to stop the workers). Ctrl-C reaches the worker too (one process group); the server
            stops it, so the worker ignores SIGINT instead of printing a traceback.
    """
    from logicval_hf.perception import get_backend

    if server is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Thread(target=_exit_with, args=(server,), name="logicval-server-watch", daemon=True).start()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    backend = get_backend(settings.backend)
    if backend.init_worker is not None:
        backend.init_worker()


def warm_up(settings: ScoringSettings) -> dict[str, Any]:
    """Load the backend's model (one tiny perception call) and the solver, so the first request pays neither.

    Returns:
        ``{"pid", "backend"}`` of the process that warmed up.
    Raises:
        Whatever the backend raises when its model cannot be loaded: the server reports it as unhealthy.
    """
    import numpy as np

    from logicval_hf.asp.solver import default_solver
    from logicval_hf.perception import get_backend
    from logicval_hf.scoring.judge import read_scenes

    if not get_backend(settings.backend).raw_input:
        (got,) = read_scenes([np.zeros((64, 64, 3), np.uint8)], None, settings.judge_options(), ["warm-up image"])
        if isinstance(got, BaseException):
            raise got
    default_solver()
    return {"pid": os.getpid(), "backend": settings.backend}


def decode_image(data: Any, what: str) -> Any:
    """An ``H x W x 3`` uint8 array from encoded image bytes (a `PerceptionError` naming ``what`` otherwise)."""
    from logicval_hf.perception import PerceptionError, load_image
    from logicval_hf.scoring.inputs import normalise_prediction

    if not isinstance(data, (bytes, bytearray)):
        raise PerceptionError(f"{what}: expected encoded image bytes (JPEG/PNG), got {type(data).__name__}")
    return load_image(normalise_prediction(bytes(data), what), what)  # header checked before decoding


def header_pixels(data: Any) -> int:
    """The pixels an encoded image will decode to, from its header (0 when it has none: decoding will say why)."""
    import io

    from PIL import Image

    if not isinstance(data, (bytes, bytearray)):
        return 0
    try:
        with Image.open(io.BytesIO(data)) as im:
            w, h = im.size
    except Exception:  # noqa: BLE001 - any unreadable header: the decode names the problem
        return 0
    return w * h


def _raw_scene_input(data: Any, what: str) -> Any:
    """A raw-input backend's input (a scene graph): JSON text or a dict. Never a path: the backend would read a
    file of the server's machine that a client named."""
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what}: the backend reads scene graphs (JSON), not image bytes") from None
    if isinstance(data, str) and not data.lstrip().startswith("{"):
        raise ValueError(f"{what}: the backend reads a scene graph as a JSON object, got text starting "
                         f"{data.lstrip()[:20]!r}")
    if not isinstance(data, (str, dict)):
        raise ValueError(f"{what}: the backend reads a scene graph (a JSON object), got {type(data).__name__}")
    return data


def failure(what: str, error: BaseException) -> SampleResult:
    """A sample's error entry for ``error``: its message for a `ValueError` (what bad input raises), else the
    exception's type with the traceback kept (without paths) in ``detail``, for the server's debug log."""
    if isinstance(error, (ValueError, SolverTimeout)) and str(error):
        text = str(error)
        return SampleResult.failed(text if text.startswith(f"{what}:") else f"{what}: {text}")
    detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return SampleResult.failed(f"{what}: could not be scored ({type(error).__name__})", detail)


def _chunks(idx: list[int], pixels: dict[int, int], budget: int) -> list[list[int]]:
    """``idx`` cut into runs of at most ``budget`` pixels (at least one index each), in order."""
    out: list[list[int]] = []
    held = 0
    for i in idx:
        if out and out[-1] and held + pixels[i] <= budget:
            out[-1].append(i)
            held += pixels[i]
        else:
            out.append([i])
            held = pixels[i]
    return out


def _score_chunk(order: list[int], inputs: Mapping[int, Any], tasks: Mapping[int, Task],
                 samples: Sequence[Sample], names: Sequence[str], settings: ScoringSettings,
                 solver: Any) -> list[SampleResult]:
    """The results of one decoded chunk: one judge call, then each judgement's rewards. Should the judge raise for
    the chunk as a whole (something no check foresaw), each sample is judged on its own, so that it fails alone."""
    from logicval_hf.scoring.judge import judge
    from logicval_hf.serve.rewards import judged_rewards

    whats = [f"images[{names[i]}]" for i in order]
    try:
        judged = judge([tasks[i].spec for i in order], [inputs[i] for i in order], settings.judge_options(len(order)),
                       solver=solver, labels=[tasks[i].judge_label for i in order], names=whats)
    except Exception as e:  # noqa: BLE001 - one sample's fault, found by judging each alone
        if len(order) == 1:
            return [failure(whats[0], e)]
        return [_score_chunk([i], inputs, tasks, samples, names, settings, solver)[0] for i in order]
    out: list[SampleResult] = []
    for i, what, j in zip(order, whats, judged, strict=True):
        try:
            out.append(judged_rewards(tasks[i], j, samples[i].only_strict, solver))
        except Exception as e:  # noqa: BLE001 - a dense reward that raises (too many worlds...): this sample's
            out.append(failure(what, e))
    return out


def score_batch(samples: Sequence[Sample], settings: ScoringSettings) -> list[SampleResult]:
    """The rewards of every sample of a micro-batch, in order (module docstring).

    Args:
        samples: the batch's images with their items and request flags.
        settings: the backend, reward mode and minimum confidence.
    Returns:
        One `SampleResult` per sample; a bad sample's has reward 0 and ``error`` naming the problem, an unread
        one ``unread`` saying why.
    """
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.perception import get_backend

    solver = default_solver()
    backend = get_backend(settings.backend)
    raw = backend.raw_input
    results: list[SampleResult | None] = [None] * len(samples)
    names = [f"{k}" if s.index is None else f"{s.index}" for k, s in enumerate(samples)]
    tasks: dict[int, Task] = {}
    for i, s in enumerate(samples):
        try:
            tasks[i] = read_item(s.item, s.reward or settings.reward)
        except Exception as e:  # noqa: BLE001 - whatever the item makes raise is its own error entry
            results[i] = failure(f"meta_datas[{names[i]}]", e)
    # chunks of one domain each, as the judge perceives them: the catalog's own domain is asked for as None
    default = solver.catalog.domain
    by_domain: dict[Any, list[int]] = {}
    for i, task in tasks.items():
        by_domain.setdefault(None if task.spec.domain == default else task.spec.domain, []).append(i)
    for domain, idx in by_domain.items():
        if domain is not None and not backend.perceives(domain):
            for i in idx:
                results[i] = SampleResult.failed(
                    f"meta_datas[{names[i]}]: a {domain.name} item (GenEval metadata) needs a backend that perceives "
                    f"the {domain.name} domain; this server runs the {backend.name!r} backend (start it with "
                    "--backend neural)")
            continue
        pixels = {i: 0 if raw else header_pixels(samples[i].image) for i in idx}
        for chunk in _chunks(idx, pixels, DECODE_PIXELS):
            inputs: dict[int, Any] = {}
            for i in chunk:
                what = f"images[{names[i]}]"
                try:
                    inputs[i] = _raw_scene_input(samples[i].image, what) if raw else decode_image(samples[i].image,
                                                                                                   what)
                except Exception as e:  # noqa: BLE001 - an image that cannot be read is its own error entry
                    results[i] = failure(what, e)
            order = list(inputs)
            if order:
                for i, result in zip(order, _score_chunk(order, inputs, tasks, samples, names, settings, solver),
                                     strict=True):
                    results[i] = result
            inputs.clear()  # the decoded pixels go before the next chunk is decoded
    return results  # type: ignore[return-value]  # every index was either refused above or scored here
