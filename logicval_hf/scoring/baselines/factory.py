"""Baseline metrics built from a name and settings (the declarations of `logicval_hf.scoring.baselines.registry`).

    from logicval_hf.scoring.baselines.factory import build_baseline, check_baselines

    clip = build_baseline("clipscore", {"model": "path/to/clip"})          # or the Hub id (the default)
    judge = build_baseline("vlm-judge", {"model": "gpt-4o"})               # key from $OPENAI_API_KEY
    tifa = build_baseline("soft-tifa", {"transport": "transformers", "model": "Qwen/Qwen2.5-VL-7B-Instruct"})

Every refusal is one line (`BaselineSetupError`, a `ValueError`): an unknown baseline or setting (with the closest
names), a value of the wrong kind, a missing extra (`MissingExtraError`, naming it), weights that are neither a
local folder nor loadable from the Hub, an endpoint that cannot be reached, refuses the key or does not serve the
model. `check_baselines` does the checks that need no model (names, settings, extras) before any work;
`build_baseline` then loads the weights or asks the endpoint.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.common.fingerprint import modules_hash
from logicval_hf.common.version import __version__
from logicval_hf.scoring.baselines.base import BaselineError, BaselineMetric, BaselineSetupError
from logicval_hf.scoring.baselines.registry import BASELINE_INFO, BaselineInfo

__all__ = ["CHOICES", "SCORE_NEUTRAL", "baseline_fingerprint", "build_baseline", "build_baselines",
           "check_baselines", "parse_names", "parse_settings", "read_settings", "resolve_baselines"]

#: settings that take one of a few words
CHOICES = {"loader": ("transformers", "open_clip"), "transport": ("http", "transformers"),
           "on_error": ("record", "raise"), "aggregate": ("am", "gm")}
#: settings that change how fast a score comes, never the score (left out of the fingerprint)
SCORE_NEUTRAL = frozenset({"device", "batch_size", "concurrency", "timeout", "max_retries", "on_error",
                           "api_key_env"})
#: the baselines' code: a change re-scores every image
_MODULES = tuple(f"scoring/baselines/{m}" for m in ("base", "clipscore", "vlm", "vlm_judge", "soft_tifa", "items"))
#: seconds the reachability check of an HTTP endpoint waits at most
PROBE_TIMEOUT = 5.0
#: a Hugging Face Hub id (``owner/name`` or ``name``), as opposed to a local path
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def parse_names(text: str | Iterable[str]) -> list[str]:
    """Baseline names from ``"a,b"`` (or a list), each checked (unknown: the did-you-mean error); repeats dropped."""
    parts = text.split(",") if isinstance(text, str) else [str(t) for t in text]
    names: list[str] = []
    for part in (p.strip() for p in parts):
        if part and part not in names:
            BASELINE_INFO.get(part)
            names.append(part)
    if not names:
        raise ValueError("no baseline named: give one or more of " + ", ".join(BASELINE_INFO.names()))
    return names


def parse_settings(texts: Sequence[str]) -> dict[str, dict[str, str]]:
    """``["clipscore.model=DIR", "vlm-judge.url=http://..."]`` as ``{name: {setting: text}}`` (the values are read
    by `read_settings`).

    Raises:
        ValueError: a text not of the form ``NAME.KEY=VALUE``; an unknown baseline (did-you-mean).
    """
    out: dict[str, dict[str, str]] = {}
    for text in texts:
        target, sep, value = text.partition("=")
        name, dot, key = target.strip().partition(".")
        if not sep or not dot or not name or not key.strip():
            raise ValueError(f"a baseline setting reads NAME.KEY=VALUE (e.g. clipscore.model=DIR), got {text!r}")
        BASELINE_INFO.get(name)
        out.setdefault(name, {})[key.strip()] = value
    return out


def _fail(name: str, message: str) -> BaselineSetupError:
    return BaselineSetupError(f"{name} baseline: {message}")


def _value(name: str, key: str, value: Any, default: Any) -> Any:
    """A setting's value, read from text where it came as text (``"0.5"``, ``"none"``, ``"true"``)."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("none", "null"):
            return None
        if not isinstance(default, str) and default is not None:
            with contextlib.suppress(json.JSONDecodeError):  # text that is no number stays text, refused below
                value = json.loads(text.lower() if text.lower() in ("true", "false") else text)
    if value is None:
        return None
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise _fail(name, f"{key} must be true or false, got {value!r}")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(default, int) and not isinstance(default, bool) and value != int(value)):
            raise _fail(name, f"{key} must be a number, got {value!r}")
        value = type(default)(value)
        if value < 0 or (value == 0 and key != "max_retries"):
            raise _fail(name, f"{key} must be {'at least 0' if key == 'max_retries' else 'positive'}, got {value!r}")
    elif not isinstance(value, str) or not value.strip():
        raise _fail(name, f"{key} must be a non-empty text, got {value!r}")
    if key in CHOICES and value not in CHOICES[key]:
        raise _fail(name, f"{key} must be one of {', '.join(CHOICES[key])}, got {value!r}")
    return value.strip() if isinstance(value, str) else value


def read_settings(name: str, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every setting of baseline ``name``: its defaults with ``settings`` over them, each checked.

    Raises:
        UnknownNameError: no baseline of that name.
        BaselineSetupError: an unknown setting (with the closest ones), a value of the wrong kind, a VLM
            baseline without a model.
    """
    info = BASELINE_INFO.get(name)
    out = {key: default for key, (default, _) in info.settings.items()}
    for key, value in (settings or {}).items():
        if key not in info.settings:
            close = difflib.get_close_matches(str(key), list(info.settings), n=2, cutoff=0.5)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise _fail(name, f"unknown setting {key!r}{hint} (settings: {', '.join(info.settings)})")
        out[key] = _value(name, key, value, info.settings[key][0])
    if out.get("model") is None:
        raise _fail(name, "needs a model: set model=NAME (" + info.settings["model"][1].removeprefix("required: ")
                    + ")")
    return out


def check_baselines(names: Sequence[str], settings: Mapping[str, Mapping[str, Any]] | None = None
                    ) -> dict[str, dict[str, Any]]:
    """The checked settings of each baseline, after the checks that need no model: names, settings, extras.

    Args:
        names: baseline names (`BASELINE_INFO`).
        settings: ``{name: {setting: value}}``; a name not among ``names`` is refused.
    Returns:
        ``{name: every setting}``.
    Raises:
        UnknownNameError, BaselineSetupError: see `read_settings`; settings for a baseline not asked for.
        MissingExtraError: the extra a baseline needs with its settings is not installed (one line naming it).
    """
    settings = settings or {}
    stray = [n for n in settings if n not in names]
    if stray:
        raise BaselineSetupError(f"settings for {', '.join(map(repr, stray))}, which is not among the baselines "
                                 f"asked for ({', '.join(names)})")
    out = {}
    for name in names:
        s = out[name] = read_settings(name, settings.get(name))
        need = BASELINE_INFO.get(name).requirement(s)
        if need is not None:
            extra, modules = need
            for m in modules:
                require(m, extra, f"the {name} baseline")
        for key, what in _local_paths(s):
            _local_or_hub(name, s[key], what)  # a local path that is not there: refused before any loading
    return out


def _local_paths(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The settings that name weights on this machine or on the Hub: ``(setting, what it is)``."""
    if s.get("loader") == "open_clip":
        p = s.get("pretrained")
        return [("pretrained", "pretrained checkpoint")] if p and ("/" in p or "\\" in p or p.startswith(".")) \
            else []
    return [("model", "model")] if s.get("loader") == "transformers" or s.get("transport") == "transformers" else []


def _local_or_hub(name: str, model: str, what: str) -> str:
    """``model`` as given when it names an existing path or looks like a Hub id; a missing local path is refused."""
    path = Path(model).expanduser()
    if path.exists():
        return str(path)
    if model.startswith((".", "/", "~")) or "\\" in model or not _HUB_ID.match(model):
        raise _fail(name, f"{what} {model!r}: no such local path")
    return model


def _loading(name: str, model: str, e: BaseException) -> BaselineSetupError:
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    where = "local folder" if Path(model).expanduser().exists() else "Hub id (not in the local cache, or offline?)"
    return _fail(name, f"cannot load {model!r} as a {where}: {first[:300]}; set model=DIR to a local folder")


def _clipscore(s: Mapping[str, Any]) -> BaselineMetric:
    from logicval_hf.scoring.baselines.clipscore import CLIPScore

    common = {"device": s["device"], "batch_size": s["batch_size"], "prompt_field": s["prompt_field"]}
    if s["loader"] == "open_clip":
        pretrained = s["pretrained"]
        if _local_paths(s):
            pretrained = _local_or_hub("clipscore", pretrained, "pretrained checkpoint")
        try:
            return CLIPScore.from_open_clip(s["model"], pretrained=pretrained, **common)
        except BaselineError as e:
            raise _fail("clipscore", str(e)) from None
        except (OSError, RuntimeError, ValueError) as e:
            raise _loading("clipscore", f"{s['model']} ({pretrained})", e) from None
    model = _local_or_hub("clipscore", s["model"], "model")
    try:
        return CLIPScore.from_transformers(model, **common)
    except BaselineError as e:
        raise _fail("clipscore", str(e)) from None
    except (OSError, ValueError) as e:
        raise _loading("clipscore", model, e) from None


def _vlm(name: str, s: Mapping[str, Any]) -> Any:
    """The VLM a VLM baseline asks: a local transformers model, or an HTTP endpoint checked to answer."""
    from logicval_hf.perception.vlm.endpoint import serving_problem
    from logicval_hf.scoring.baselines.vlm import OpenAIChatVLM, TransformersVLM

    if s["transport"] == "transformers":
        model = _local_or_hub(name, s["model"], "model")
        try:
            return TransformersVLM.from_pretrained(model, device=s["device"], dtype=s["dtype"],
                                                   batch_size=s["batch_size"])
        except (OSError, ValueError) as e:
            raise _loading(name, model, e) from None
    env = s["api_key_env"]
    key = "EMPTY" if env is None else os.environ.get(env)
    if not key:
        raise _fail(name, f"no API key: set the environment variable {env} (or api_key_env=none for a server "
                          "that needs none)")
    try:
        vlm = OpenAIChatVLM(s["model"], s["url"], api_key=key, timeout=s["timeout"], max_retries=s["max_retries"],
                            max_workers=s["concurrency"])
    except BaselineError as e:
        raise _fail(name, str(e)) from None
    # one quick question before any work: is anyone there, taking the key, serving the model?
    problem = serving_problem(vlm.endpoint, s["model"], min(PROBE_TIMEOUT, s["timeout"]),
                              "the environment variable " + str(env))
    if problem is not None:
        raise _fail(name, problem)
    return vlm


def _vlm_judge(s: Mapping[str, Any]) -> BaselineMetric:
    from logicval_hf.scoring.baselines.vlm_judge import VLMJudge

    return VLMJudge(_vlm("vlm-judge", s), prompt_field=s["prompt_field"], max_new_tokens=s["max_new_tokens"],
                    on_error=s["on_error"])


def _soft_tifa(s: Mapping[str, Any]) -> BaselineMetric:
    from logicval_hf.scoring.baselines.soft_tifa import SoftTIFA

    return SoftTIFA(_vlm("soft-tifa", s), aggregate=s["aggregate"], top_k=s["top_k"], normalize=s["normalize"],
                    on_error=s["on_error"])


#: how each declared baseline is constructed from its checked settings
_BUILDERS = {"clipscore": _clipscore, "vlm-judge": _vlm_judge, "soft-tifa": _soft_tifa}


def build_baseline(name: str, settings: Mapping[str, Any] | None = None) -> BaselineMetric:
    """The metric ``name`` with ``settings`` (`BaselineInfo.settings` lists them), its weights loaded or its
    endpoint checked.

    Args:
        name: a registered baseline (``clipscore``, ``vlm-judge``, ``soft-tifa``).
        settings: setting -> value (text values are read: ``"0.5"``, ``"none"``, ``"true"``).
    Returns:
        The metric, ready to score.
    Raises:
        UnknownNameError, BaselineSetupError, MissingExtraError: see the module docstring.
    """
    checked = check_baselines([name], {name: dict(settings or {})})[name]
    return _BUILDERS[name](checked)


def build_baselines(settings: Mapping[str, Mapping[str, Any]]) -> dict[str, BaselineMetric]:
    """``{name: metric}`` for ``{name: settings}``: every name and setting checked before any model is loaded."""
    checked = check_baselines(list(settings), settings)
    return {name: _BUILDERS[name](s) for name, s in checked.items()}


def resolve_baselines(baselines: str | Sequence[Any] | Mapping[str, Any],
                      settings: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, BaselineMetric]:
    """``{name: metric}`` from what a caller names: ``"a,b"``, a list of names and/or built metrics, or a mapping
    ``{name: metric}``; names are built with their ``settings`` (``{name: {setting: value}}``), built metrics are
    used as they are (named by the registry name of their class).

    Raises:
        UnknownNameError, BaselineSetupError, MissingExtraError: see `build_baseline`.
        TypeError: something that is neither a name nor a `BaselineMetric`.
    """
    if isinstance(baselines, Mapping):
        given = dict(baselines)
    else:
        given = {}
        for b in (baselines.split(",") if isinstance(baselines, str) else baselines):
            if isinstance(b, BaselineMetric):
                given[_registry_name(b)] = b
            elif isinstance(b, str):
                if b.strip():
                    given[b.strip()] = None
            else:
                raise TypeError(f"baselines: expected names or BaselineMetric objects, got {type(b).__name__}")
    names = [n for n, m in given.items() if m is None]
    built = build_baselines({n: dict((settings or {}).get(n) or {}) for n in names}) if names else {}
    stray = [n for n in (settings or {}) if n not in names]
    if stray:
        raise BaselineSetupError(f"settings for {', '.join(map(repr, stray))}, which is not a baseline built by name "
                                 "here")
    for name, metric in given.items():
        if metric is not None and not isinstance(metric, BaselineMetric):
            raise TypeError(f"baselines[{name!r}]: expected a BaselineMetric, got {type(metric).__name__}")
    return {n: built.get(n) or given[n] for n in given}


def _registry_name(metric: BaselineMetric) -> str:
    from logicval_hf.scoring.baselines.registry import BASELINES

    for name in BASELINES.names():
        if isinstance(metric, BASELINES.get(name)):
            return name
    return metric.name


def _weights_identity(value: Any) -> str:
    """A local weights path by its files' names, sizes and times (hashing gigabytes would cost minutes); a Hub id
    or a served model's name as it is."""
    path = Path(str(value)).expanduser()
    if value is None or not path.exists():
        return str(value)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return ";".join(f"{p.relative_to(path) if p != path else p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                    for p in files)


def baseline_fingerprint(name: str, settings: Mapping[str, Any]) -> str:
    """A short hash of what decides a baseline's scores: its code, the settings that change a score and the
    weights (a cached score is reused only while it matches)."""
    info: BaselineInfo = BASELINE_INFO.get(name)
    decisive = {k: v for k, v in sorted(settings.items()) if k not in SCORE_NEUTRAL and k in info.settings}
    for key in ("model", "pretrained", "url"):
        if key in decisive:
            decisive[key] = _weights_identity(decisive[key])
    return modules_hash(_MODULES, f"{__version__}/{name}/{json.dumps(decisive, sort_keys=True, default=str)}")
