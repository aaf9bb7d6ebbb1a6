"""Where the ``evaluate`` metric module is (`metric_path`), and publishing it as a Hugging Face Space.

The module lives once, in the repository's ``metric/logicval/`` folder; the package reaches it through
``logicval_hf/scoring/metric_module/logicval`` (a link in a checkout, a copy in a wheel), so
``evaluate.load(str(logicval_hf.metric_path()))`` works from any folder, and ``logicval metric-path`` prints it.

``evaluate.load("owner/name")`` fetches ``name.py`` from the Space ``owner/name``, so the metric script is
uploaded under the repository's name (``logicval.py`` -> ``name.py`` when they differ); the card
(``README.md``, with the Space front matter) goes along naming the configured Hub namespace
(`logicval_hf.common.hub.in_namespace`: it is written for the default, ``logicval/logicval``), ``app.py`` and
``requirements.txt`` unchanged. The default repository is ``<LOGICVAL_HUB_NAMESPACE>/logicval``.

Usage::

    from logicval_hf.scoring.metric_push import push_metric
    push_metric(repo_id="me/logicval", dry_run=True)   # lists the files, no network

Pushing needs ``huggingface_hub`` and a token (``token=`` or ``HF_TOKEN``).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from logicval_hf.common.hub import REPO_NAME, check_repo_id, default_repo_id, hf_api, in_namespace

__all__ = ["METRIC_FILES", "metric_files", "metric_path", "push_metric"]

#: files of the metric folder that are uploaded; the script is renamed after the repository
METRIC_FILES = ("logicval.py", "README.md", "app.py", "requirements.txt")
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


def metric_path() -> Path:
    """The folder of the ``evaluate`` metric module, for ``evaluate.load(str(metric_path()))`` from any folder
    (``evaluate.load("metric/logicval")`` finds it only from the repository's root)."""
    return Path(__file__).resolve().parent / "metric_module" / "logicval"


def metric_files(folder: str | Path, repo_name: str = REPO_NAME) -> list[tuple[str, str]]:
    """``(file in folder, path in the Space)`` pairs for the folder; raises `ValueError` if it is incomplete
    or its card lacks the Space front matter (``sdk: gradio``, ``app_file: app.py``, ``tags: [evaluate, metric]``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a directory (expected the metric folder, e.g. metric/logicval)")
    missing = [f for f in METRIC_FILES if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"{folder}: missing {missing}; a metric folder has {list(METRIC_FILES)}")
    card = (folder / "README.md").read_text(encoding="utf-8")
    m = _FRONT_MATTER.match(card)
    if not m:
        raise ValueError(f"{folder}/README.md: no YAML front matter (the Space configuration) at the top")
    meta = m.group(1)
    for needed, label in ((r"^sdk:\s*gradio\s*$", "sdk: gradio"), (r"^app_file:\s*app\.py\s*$", "app_file: app.py"),
                          (r"^-\s*evaluate\s*$", "tags: - evaluate"), (r"^-\s*metric\s*$", "tags: - metric")):
        if not re.search(needed, meta, re.M):
            raise ValueError(f"{folder}/README.md: the front matter lacks {label!r}")
    return [(f, f"{repo_name}.py" if f == "logicval.py" else f) for f in METRIC_FILES]


def push_metric(
    folder: str | Path | None = None,
    repo_id: str | None = None,
    token: str | None = None,
    dry_run: bool = False,
    private: bool = False,
    out: TextIO | None = None,
) -> list[str]:
    """Upload the metric folder (default `metric_path`) to the Space ``repo_id`` (created with the gradio SDK if
    missing; default `logicval_hf.common.hub.default_repo_id`, ``<LOGICVAL_HUB_NAMESPACE>/logicval``).

    ``dry_run`` only lists the files (no network, no token needed). Returns the paths in the Space.
    Raises `ValueError` for an incomplete folder, a malformed repo id or a missing token.
    """
    out = out or sys.stdout
    repo_id = check_repo_id(default_repo_id() if repo_id is None else repo_id)
    name = repo_id.split("/", 1)[1]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"repo name {name!r} must be a Python identifier: evaluate loads the script {name}.py")
    folder = metric_path() if folder is None else Path(folder)
    pairs = metric_files(folder, name)
    url = f"https://huggingface.co/spaces/{repo_id}"
    if dry_run:
        print(f"dry run: would upload {len(pairs)} files from {folder} to {url}", file=out)
        for src, dst in pairs:
            print(f"  {src}" + (f" -> {dst}" if dst != src else ""), file=out)
        return [dst for _, dst in pairs]
    api = hf_api(token)
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True, private=private)
    with tempfile.TemporaryDirectory(prefix="logicval-metric-") as staging:
        for src, dst in pairs:
            if src == "README.md":
                (Path(staging) / dst).write_text(in_namespace((folder / src).read_text(encoding="utf-8")),
                                                 encoding="utf-8")
            else:
                shutil.copyfile(folder / src, Path(staging) / dst)
        api.upload_folder(
            repo_id=repo_id,
            folder_path=staging,
            repo_type="space",
            allow_patterns=[dst for _, dst in pairs],
            commit_message=f"Upload LogicVal metric ({len(pairs)} files)",
        )
    print(f"uploaded {len(pairs)} files to {url}", file=out)
    return [dst for _, dst in pairs]
