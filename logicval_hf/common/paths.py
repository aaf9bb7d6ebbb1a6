"""Where LogicVal keeps files of its own outside any output folder the user names: the user-level cache (built
benchmark rows, reused across runs and output folders) and the user-level data folder (the Space's annotations
when no folder is configured).

* cache: ``$LOGICVAL_CACHE`` if set (``off`` turns the cache off), else ``$XDG_CACHE_HOME/logicval``, else
  ``~/.cache/logicval``;
* data: ``$XDG_DATA_HOME/logicval``, else ``~/.local/share/logicval``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CACHE_ENV", "OFF_VALUES", "user_cache_dir", "user_data_dir"]

#: the environment variable that moves (or, set to ``off``, turns off) the user-level cache
CACHE_ENV = "LOGICVAL_CACHE"
#: values of a folder setting that mean "no folder"
OFF_VALUES = ("0", "off", "none", "no", "false")


def _xdg(env: Mapping[str, str], var: str, default: Path) -> Path:
    base = env.get(var, "").strip()
    return (Path(base).expanduser() if base else default) / "logicval"


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The user-level cache folder (not created here), or None when ``LOGICVAL_CACHE=off``."""
    env = os.environ if environ is None else environ
    setting = env.get(CACHE_ENV, "").strip()
    if setting.lower() in OFF_VALUES:
        return None
    if setting:
        return Path(setting).expanduser()
    return _xdg(env, "XDG_CACHE_HOME", Path.home() / ".cache")


def user_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user-level data folder (not created here)."""
    env = os.environ if environ is None else environ
    return _xdg(env, "XDG_DATA_HOME", Path.home() / ".local" / "share")
