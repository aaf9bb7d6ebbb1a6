"""The Space's settings, read from the environment (Space secrets / variables); see ``space/README.md``.

`config_from_env` is the only place that reads ``LOGICVAL_SPACE_*`` / ``LOGICVAL_ANNOTATION_*``;
``space/app.py`` calls `config_or_exit` so that a misconfigured Space stops with one line, not a traceback.
"""

from __future__ import annotations

import hmac
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from logicval_hf.common.paths import OFF_VALUES, user_cache_dir, user_data_dir
from logicval_hf.space.images import DEFAULT_MAX_FILE_BYTES

#: environment variables that switch the default perception backend to ``neural``
NEURAL_ENV_PREFIX = "LOGICVAL_NEURAL_"
#: exit status of a Space that refuses to start (bad settings), as the command line's bad-input status
EXIT_CONFIG = 2


class ConfigError(RuntimeError):
    """The Space is misconfigured (e.g. a user name without a password); it refuses to start."""


def default_backend(environ: Mapping[str, str] | None = None) -> str:
    """``LOGICVAL_SPACE_BACKEND`` if set; ``neural`` when any ``LOGICVAL_NEURAL_*`` setting is configured;
    otherwise the ``clevr`` backend (the shipped CLEVR scene parser)."""
    env = os.environ if environ is None else environ
    if env.get("LOGICVAL_SPACE_BACKEND"):
        return env["LOGICVAL_SPACE_BACKEND"]
    if any(k.startswith(NEURAL_ENV_PREFIX) and v for k, v in env.items()):
        return "neural"
    return "clevr"


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Where the Space keeps the built benchmark: the user-level cache (`logicval_hf.common.paths.user_cache_dir`:
    ``$LOGICVAL_CACHE``, else ``$XDG_CACHE_HOME/logicval``, default ``~/.cache/logicval``)."""
    return user_cache_dir(os.environ if environ is None else environ)


def default_annotation_root(environ: Mapping[str, str] | None = None) -> Path:
    """The annotation folder when ``LOGICVAL_ANNOTATION_ROOT`` is not set: ``annotations/`` in the user-level data
    folder (``$XDG_DATA_HOME/logicval``, default ``~/.local/share/logicval``), never the working folder."""
    return user_data_dir(os.environ if environ is None else environ) / "annotations"


@dataclass
class SpaceConfig:
    """What the Space serves. ``credentials`` switch on protected mode (login on every data route) and, with
    it, the Annotate tab; without credentials the Annotate tab is not built at all."""

    credentials: list[tuple[str, str]] | None = None
    annotation_root: Path | None = None
    db_path: Path | None = None
    export_dir: Path | None = None
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    backend: str = field(default_factory=default_backend)
    preload: bool = True
    #: folder of the on-disk benchmark cache (None: build in memory only)
    cache_dir: Path | None = field(default_factory=default_cache_dir)

    @property
    def protected(self) -> bool:
        return bool(self.credentials)

    @property
    def annotate_enabled(self) -> bool:
        return self.protected and self.annotation_root is not None


def config_from_env(environ: Mapping[str, str] | None = None) -> SpaceConfig:
    """Read the settings (see space/README.md).

    ``LOGICVAL_SPACE_USER`` (one name, or several separated by commas, sharing the password) and
    ``LOGICVAL_SPACE_PASSWORD`` must be set together; a half-set pair refuses to start (`ConfigError`).
    """
    env = os.environ if environ is None else environ
    user, pw = env.get("LOGICVAL_SPACE_USER", "").strip(), env.get("LOGICVAL_SPACE_PASSWORD", "")
    if bool(user) != bool(pw):
        missing, given = (("LOGICVAL_SPACE_PASSWORD", "LOGICVAL_SPACE_USER") if user
                          else ("LOGICVAL_SPACE_USER", "LOGICVAL_SPACE_PASSWORD"))
        raise ConfigError(f"{given} is set but {missing} is not: set both (protected mode with the Annotate tab) "
                          "or neither (the public app)")
    creds = [(u.strip(), pw) for u in user.split(",") if u.strip()] if user else None
    if user and not creds:
        raise ConfigError(f"LOGICVAL_SPACE_USER={user!r} names no user (expected e.g. alice or alice,bob)")
    root = env.get("LOGICVAL_ANNOTATION_ROOT", "").strip()
    root_path = Path(root).expanduser() if root else None
    if creds and root_path is None:
        root_path = default_annotation_root(env)
    db = env.get("LOGICVAL_ANNOTATION_DB", "").strip()
    export = env.get("LOGICVAL_ANNOTATION_EXPORT", "").strip()
    mb = env.get("LOGICVAL_SPACE_MAX_FILE_MB", "").strip()
    try:
        max_bytes = int(float(mb) * 1024 * 1024) if mb else DEFAULT_MAX_FILE_BYTES
    except (ValueError, OverflowError):
        raise ConfigError(f"LOGICVAL_SPACE_MAX_FILE_MB must be a number of megabytes, got {mb!r}") from None
    if max_bytes <= 0:
        raise ConfigError(f"LOGICVAL_SPACE_MAX_FILE_MB must be positive, got {mb!r}")
    cache = env.get("LOGICVAL_SPACE_CACHE", "").strip()
    cache_dir = None if cache.lower() in OFF_VALUES else Path(cache).expanduser() if cache else default_cache_dir(env)
    return SpaceConfig(
        credentials=creds,
        annotation_root=root_path,
        db_path=Path(db).expanduser() if db else None,
        export_dir=Path(export).expanduser() if export else None,
        max_file_bytes=max_bytes,
        backend=default_backend(env),
        preload=env.get("LOGICVAL_SPACE_PRELOAD", "1").strip().lower() not in ("0", "false", "no", "off"),
        cache_dir=cache_dir,
    )


def config_or_exit(environ: Mapping[str, str] | None = None) -> SpaceConfig:
    """`config_from_env`, or exit with status 2 and one line on stderr (no traceback) when misconfigured."""
    try:
        return config_from_env(environ)
    except ConfigError as e:
        exit_with_error(str(e))


def exit_with_error(message: str) -> NoReturn:
    """Stop the Space with ``logicval space: error: MESSAGE`` (one line on stderr) and exit status 2: bad
    settings (`config_or_exit`), a missing extra (``space/app.py``)."""
    print(f"logicval space: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(EXIT_CONFIG)



def make_auth(credentials: Sequence[tuple[str, str]]) -> Callable[[str, str], bool]:
    """A gradio ``auth`` function comparing in constant time."""
    pairs = [(u.encode(), p.encode()) for u, p in credentials]

    def auth(username: str, password: str) -> bool:
        ok = False
        for u, p in pairs:
            ok |= hmac.compare_digest(u, (username or "").encode()) & hmac.compare_digest(p, (password or "").encode())
        return ok

    return auth
