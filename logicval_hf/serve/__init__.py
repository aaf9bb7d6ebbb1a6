"""LogicVal as a verifiable reward for RL fine-tuning of text-to-image models: a drop-in reward server.

``logicval serve`` (extra ``serve``) answers Flow-GRPO's pickle protocol at ``POST /`` (read with a restricted
unpickler), Flow-Factory's JSON at ``POST /compute`` and ``GET /health``; ``logicval serve --ray --replicas N``
(extra ``serve-ray``) runs the same app as a Ray Serve deployment. The reference page is ``docs/reward_server.md``.
The modules, one job each:

| module | job |
|---|---|
| `unpickling` | pickle bytes from a socket -> plain values, or a refusal before anything runs |
| `protocol` | the two wire formats, size caps, answers (`RewardRequest`, `SampleResult`) |
| `items` | a metadata item (GenEval metadata or a LogicVal item) -> a `Task` |
| `prompts` | ``--prompts``: a prompt's text -> its item (Flow-Factory's client sends only prompts) |
| `reward_modes` | the dense rewards of LogicVal items, one registry entry each (``fraction``, ``probability``) |
| `rewards` | a task and its judgement -> the image's rewards (GenEval's partial rule, LogicVal's verdicts) |
| `admission` | every item checked before it joins a micro-batch: what it raises is its own error entry |
| `worker` | one micro-batch: decode in bounded chunks, judge each (`scoring.judge`); failures kept to their sample |
| `pool` | where batches run: worker processes (restarted when one dies) or a thread |
| `batching` | requests merged into micro-batches (one failing as a whole: scored in parts); 503 when full |
| `health` | model loaded, model files present; messages without the machine's paths |
| `config`, `app` | the configuration and the workers rule; the FastAPI routes |
| `http_server` | the app under uvicorn, stopped cleanly by SIGTERM or SIGINT |
| `ray_deployment` | the same app on Ray Serve, N replicas |
| `client` | what Flow-GRPO's client sends: its retrying session, its JPEG bytes |

Usage::

    from logicval_hf.serve import ServeConfig, create_app
    app = create_app(ServeConfig(backend="clevr", workers=2))      # any ASGI server; `logicval serve` uses uvicorn
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logicval_hf.serve.app import create_app
    from logicval_hf.serve.config import ServeConfig

__all__ = ["ServeConfig", "create_app"]


def __getattr__(name: str) -> Any:
    # resolved on first use: the CLI reads `serve.config` to build its parser, which must not import the app
    if name == "create_app":
        from logicval_hf.serve.app import create_app

        return create_app
    if name == "ServeConfig":
        from logicval_hf.serve.config import ServeConfig

        return ServeConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
