"""What every push to the Hugging Face Hub shares: the repo-id check and the authenticated client."""

from __future__ import annotations

import os
import re
from typing import Any

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


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
