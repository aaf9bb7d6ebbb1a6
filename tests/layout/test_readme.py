"""Every Python snippet of the README runs as printed (issue 23, point 14: the COCO snippet used `lv` without
importing it). Each runs in a fresh interpreter from a folder laid out as the README assumes: the repository's
``metric/`` beside it and a dataset built at ``path/to/logicval``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNIPPETS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_snippets():
    assert len(SNIPPETS) >= 4


@pytest.fixture(scope="module")
def readers_folder(tmp_path_factory):
    from logicval_hf.benchmark.dataset import write_dataset
    from logicval_hf.benchmark.sampler import cached_benchmark

    folder = tmp_path_factory.mktemp("reader")
    (folder / "metric").symlink_to(REPO / "metric", target_is_directory=True)
    write_dataset(folder / "path" / "to" / "logicval", benchmark=cached_benchmark())
    return folder


@pytest.mark.slow  # a fresh interpreter per snippet; the metric's imports torch (~8 s)
@pytest.mark.parametrize("k", range(len(SNIPPETS)), ids=[f"snippet{k + 1}" for k in range(len(SNIPPETS))])
def test_every_python_snippet_runs_as_printed(readers_folder, k):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(readers_folder / "hf")}
    out = subprocess.run([sys.executable, "-c", SNIPPETS[k]], cwd=readers_folder, env=env, capture_output=True,
                         text=True, timeout=600, check=False)
    assert out.returncode == 0, f"README snippet {k + 1} failed:\n{SNIPPETS[k]}\n{out.stderr[-3000:]}"
