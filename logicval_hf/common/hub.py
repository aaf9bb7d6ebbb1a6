"""What every push to the Hugging Face Hub shares: where LogicVal lives on the Hub, the repo-id check and the
authenticated client.

The dataset and the metric Space are both published as ``<namespace>/logicval``. The namespace is one setting,
``LOGICVAL_HUB_NAMESPACE`` (default ``logicval``, the project's organisation): the dataset card, the metric's
homepage, the metric card as pushed and the default ``--repo-id`` of ``logicval push-dataset`` /
``logicval push-metric`` all read it, so a copy published elsewhere names itself throughout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REPO_ID = re.compile(rf"^{_NAME}/{_NAME}$")
#: the environment variable naming the Hub namespace (user or organisation) LogicVal is published under
NAMESPACE_ENV = "LOGICVAL_HUB_NAMESPACE"
#: the namespace when ``LOGICVAL_HUB_NAMESPACE`` is unset
DEFAULT_NAMESPACE = "logicval"
#: the repository name of the dataset and of the metric Space (``evaluate.load`` fetches ``<name>.py`` from it)
REPO_NAME = "logicval"


def hub_namespace(environ: Mapping[str, str] | None = None) -> str:
    """``LOGICVAL_HUB_NAMESPACE`` if set, else `DEFAULT_NAMESPACE`; a `ValueError` for a malformed one."""
    env = os.environ if environ is None else environ
    ns = env.get(NAMESPACE_ENV, "").strip() or DEFAULT_NAMESPACE
    if not re.fullmatch(_NAME, ns):
        raise ValueError(f"{NAMESPACE_ENV}={ns!r} is not a Hub user or organisation name")
    return ns


def default_repo_id(environ: Mapping[str, str] | None = None) -> str:
    """``<namespace>/logicval``: the dataset repository and the metric Space (`hub_namespace`)."""
    return f"{hub_namespace(environ)}/{REPO_NAME}"


def in_namespace(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` (a card written for the default namespace) naming the configured one instead."""
    return text.replace(f"{DEFAULT_NAMESPACE}/{REPO_NAME}", default_repo_id(environ))


def check_repo_id(repo_id: Any) -> str:
    """``repo_id`` if it looks like ``owner/name``; a `ValueError` otherwise."""
    if not isinstance(repo_id, str) or not _REPO_ID.match(repo_id):
        raise ValueError(f"repo id {repo_id!r} must look like 'owner/name'")
    return repo_id


def hf_api(token: str | None = None) -> Any:
    """An `HfApi` authenticated with ``token`` or the ``HF_TOKEN`` environment variable."""
    token = token or os.environ.get("HF_TOKEN")
    if not token:
        raise ValueError("no Hugging Face token: set the HF_TOKEN environment variable or pass token=... "
                         "(or use --dry-run to only list the files)")
    from huggingface_hub import HfApi

    return HfApi(token=token)
