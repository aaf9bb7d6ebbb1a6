"""What ``logicval baselines`` prints: the declared baseline metrics with what each needs (extra, weights) and
its settings, as text or as JSON-ready data."""

from __future__ import annotations

import importlib.util
import textwrap
from typing import Any

from logicval_hf.common.extras import install_hint
from logicval_hf.scoring.baselines.registry import BASELINE_INFO, DECLARED, BaselineInfo

__all__ = ["describe", "listing"]


def _installed(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that are not installed."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _needs(info: BaselineInfo) -> list[dict[str, Any]]:
    out = []
    for value, need in info.needs.items():
        missing = _installed(need[1]) if need else []
        out.append({info.selector: value, "extra": need[0] if need else None,
                    "modules": list(need[1]) if need else [], "installed": not missing})
    return out


def describe(name: str | None = None) -> list[dict[str, Any]] | dict[str, Any]:
    """The declaration of baseline ``name`` (or of every one) as JSON-ready data: ``name``, ``metric``,
    ``summary``, ``weights``, ``needs`` (per value of the setting that decides it: the extra, its modules and
    whether they are installed) and ``settings`` (``{setting: {"default", "meaning"}}``).

    Raises:
        UnknownNameError: no baseline of that name (did-you-mean).
    """
    infos = [BASELINE_INFO.get(name)] if name is not None else list(DECLARED)
    out = [{"name": i.name, "metric": i.metric.split(":")[1], "summary": i.summary, "paper": i.paper,
            "weights": i.weights, "needs": _needs(i),
            "settings": {k: {"default": d, "meaning": m} for k, (d, m) in i.settings.items()}} for i in infos]
    return out[0] if name is not None else out


def _need_text(info: BaselineInfo) -> str:
    parts = []
    for n in _needs(info):
        what = f"{info.selector}={n[info.selector]}: "
        if n["extra"] is None:
            parts.append(what + "nothing more")
        else:
            state = "installed" if n["installed"] else f"not installed: {install_hint(n['extra'])}"
            parts.append(what + f"the {n['extra']!r} extra ({state})")
    return "; ".join(parts)


def _default(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def listing(name: str | None = None) -> str:
    """The text ``logicval baselines [NAME]`` prints: every baseline with what it needs and its settings' names,
    or one baseline with every setting's default and meaning.

    Raises:
        UnknownNameError: no baseline of that name (did-you-mean).
    """
    infos = [BASELINE_INFO.get(name)] if name is not None else list(DECLARED)
    wrap = textwrap.TextWrapper(width=110, initial_indent="", subsequent_indent=" " * 12)
    lines = [] if name is not None else [
        "Baseline metrics (paper §4.3): logicval run --baselines NAME,... [--baseline-setting NAME.KEY=VALUE]", ""]
    for info in infos:
        lines.append(f"{info.name}: {info.summary}")
        lines.append(wrap.fill(f"  needs     {_need_text(info)}"))
        lines.append(wrap.fill(f"  weights   {info.weights}"))
        if name is None:
            settings = ", ".join(f"{k}={_default(d)}" for k, (d, _) in info.settings.items())
            lines.append(wrap.fill(f"  settings  {settings}"))
            lines.append("")
    if name is not None:
        lines.append(f"  settings  (--baseline-setting {infos[0].name}.KEY=VALUE)")
        width = max(len(k) for k in infos[0].settings)
        dwidth = max(len(_default(d)) for d, _ in infos[0].settings.values())
        setting_wrap = textwrap.TextWrapper(width=110, subsequent_indent=" " * (width + dwidth + 8))
        lines.append(f"    {'KEY':<{width}}  {'DEFAULT':<{dwidth}}  MEANING")
        for k, (d, m) in infos[0].settings.items():
            lines.append(setting_wrap.fill(f"    {k:<{width}}  {_default(d):<{dwidth}}  {m}"))
    else:
        lines.append("logicval baselines NAME: every setting of one, with its meaning.")
    return "\n".join(lines) + "\n"
