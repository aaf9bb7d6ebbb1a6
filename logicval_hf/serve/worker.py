"""What a scoring worker does with one micro-batch: read the items, decode the images, perceive every image of the
batch in one batched call per domain, verify, and return one `SampleResult` per image.

`score_batch` is a plain function of picklable arguments, so it runs unchanged in a worker process (the server's
process pool), in a thread (a Ray Serve replica) or in-process (the benchmark's baseline). Nothing in it raises for
a bad sample: an undecodable image, a malformed item or a scene the spec cannot read becomes that sample's error.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from logicval_hf.errors import SolverTimeout
from logicval_hf.serve.items import ItemError, Task, read_item
from logicval_hf.serve.protocol import SampleResult

__all__ = ["Sample", "ScoringSettings", "decode_image", "score_batch", "start_worker", "warm_up"]


@dataclass(frozen=True)
class ScoringSettings:
    """How a worker scores: the perception backend, its settings, and the default reward mode of LogicVal items."""

    backend: str = "clevr"
    backend_settings: Mapping[str, Any] = field(default_factory=dict)
    reward: str = "fraction"


@dataclass(frozen=True)
class Sample:
    """One image of a micro-batch: its encoded bytes (or a scene graph for a raw-input backend), its metadata item,
    and its request's flags."""

    image: Any
    item: Any
    only_strict: bool = False
    reward: str | None = None


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
    from logicval_hf.perception import extract_scenes, get_backend

    if not get_backend(settings.backend).raw_input:
        extract_scenes([np.zeros((64, 64, 3), np.uint8)], settings.backend, **dict(settings.backend_settings))
    default_solver()
    return {"pid": os.getpid(), "backend": settings.backend}


def decode_image(data: Any, what: str) -> Any:
    """An ``H x W x 3`` uint8 array from encoded image bytes (a `PerceptionError` naming ``what`` otherwise)."""
    from logicval_hf.perception import PerceptionError, load_image
    from logicval_hf.scoring.inputs import normalise_prediction

    if not isinstance(data, (bytes, bytearray)):
        raise PerceptionError(f"{what}: expected encoded image bytes (JPEG/PNG), got {type(data).__name__}")
    return load_image(normalise_prediction(bytes(data), what), what)  # header checked before decoding


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
    return data


def _perceive(settings: ScoringSettings, inputs: list[Any], domain: Any) -> list[Any]:
    """Scenes of ``inputs`` in one batched call, or one call per input when the batch fails (so that one input the
    backend cannot read costs only its own sample). Each entry is a `Scene` or an error message."""
    from logicval_hf.perception import extract_scenes

    extra = dict(settings.backend_settings)
    try:
        return list(extract_scenes(inputs, settings.backend, domain=domain, **extra))
    except (ValueError, RuntimeError):
        pass
    out: list[Any] = []
    for x in inputs:
        try:
            out.append(extract_scenes([x], settings.backend, domain=domain, **extra)[0])
        except (ValueError, RuntimeError) as e:
            out.append(str(e))
    return out


def score_batch(samples: Sequence[Sample], settings: ScoringSettings) -> list[SampleResult]:
    """The rewards of every sample of a micro-batch, in order (module docstring).

    Args:
        samples: the batch's images with their items and request flags.
        settings: the backend and reward mode.
    Returns:
        One `SampleResult` per sample; a bad sample's has reward 0 and ``error`` naming the problem.
    """
    from logicval_hf.asp.solver import default_solver
    from logicval_hf.perception import get_backend
    from logicval_hf.serve.rewards import score_task

    solver = default_solver()
    backend = get_backend(settings.backend)
    raw = backend.raw_input
    results: list[SampleResult | None] = [None] * len(samples)
    tasks: dict[int, Task] = {}
    inputs: dict[int, Any] = {}
    for i, s in enumerate(samples):
        try:
            tasks[i] = read_item(s.item, s.reward or settings.reward)
            inputs[i] = (_raw_scene_input if raw else decode_image)(s.image, f"images[{i}]")
        except (ItemError, ValueError) as e:
            results[i] = SampleResult.failed(str(e) if str(e).startswith("images[") else f"meta_datas[{i}]: {e}")
    # one perception call per domain: the catalog's own domain is asked for as None (every backend's default)
    default = solver.catalog.domain
    by_domain: dict[Any, list[int]] = {}
    for i in inputs:
        dom = tasks[i].spec.domain
        by_domain.setdefault(None if dom == default else dom, []).append(i)
    for domain, idx in by_domain.items():
        if domain is not None and not backend.perceives(domain):
            for i in idx:
                results[i] = SampleResult.failed(
                    f"meta_datas[{i}]: a {domain.name} item (GenEval metadata) needs a backend that perceives the "
                    f"{domain.name} domain; this server runs the {backend.name!r} backend (start it with "
                    "--backend neural)")
            continue
        scenes = _perceive(settings, [inputs[i] for i in idx], domain)
        for i, scene in zip(idx, scenes, strict=True):
            if isinstance(scene, str):
                results[i] = SampleResult.failed(f"images[{i}]: {scene}")
                continue
            try:
                results[i] = score_task(tasks[i], scene, samples[i].only_strict, solver)
            except (ValueError, SolverTimeout) as e:  # the scene does not fit the spec; a spec too hard to label
                results[i] = SampleResult.failed(f"images[{i}]: {e}")
    return results  # type: ignore[return-value]  # every index was either refused above or scored here
