"""``logicval serve``'s command line: a missing extra, an unknown backend, a setting the backend does not take and
flags that need ``--ray`` are one line each (exit 2), before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _serve(hidden: list[str], *argv: str) -> str:
    prelude = "".join(f"sys.modules[{m!r}] = None; " for m in hidden)
    code = f"import sys; {prelude}from logicval_hf.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "serve", "--port", "1", *argv], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    return proc.stderr.strip()


@pytest.mark.parametrize("hidden, argv, line", [
    (["fastapi", "uvicorn"], [], 'the reward server needs the "serve" extra (uvicorn is not installed): '
                                 'pip install "logicval-hf[serve]"'),
    (["ray"], ["--ray"], 'the reward server on Ray Serve needs the "serve-ray" extra (ray is not installed): '
                         'pip install "logicval-hf[serve-ray]"'),
    ([], ["--backend", "clevre"], "did you mean 'clevr'"),
    ([], ["--replicas", "2"], "--replicas and --gpus-per-replica scale out on Ray Serve: add --ray"),
    ([], ["--prompts", "no/such/prompts.jsonl"], "--prompts: no/such/prompts.jsonl: no such file or folder"),
    # a removed experiment setting and a bad value: refused before a worker starts (not a server answering 503)
    ([], ["--setting", "visible_peaks=true"], "unsupported setting 'visible_peaks' (supported: threshold,"),
    ([], ["--setting", "threshold=2"], "threshold must be a number in (0, 1], not 2"),
])
def test_serve_refuses_in_one_line(hidden, argv, line):
    assert line in _serve(hidden, *argv)


def test_workers_share_the_cores_out_unless_told():
    from logicval_hf.serve.config import ServeConfig

    assert ServeConfig().sharing_cores(2).backend_settings == {"threads": 2}
    assert ServeConfig().sharing_cores(0.5).backend_settings == {"threads": 1}
    assert ServeConfig(backend_settings={"threads": 3}).sharing_cores(1).backend_settings == {"threads": 3}
    assert ServeConfig(backend="neural").sharing_cores(1).backend_settings == {}  # a clevr parser setting only


@pytest.mark.parametrize("files, cpus", [
    ({"cpu.max": "150000 100000\n"}, 1.5),  # cgroup v2: docker --cpus 1.5
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 4.0),  # cgroup v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_a_cgroup_cpu_quota_is_read_from_either_cgroup_version(tmp_path, files, cpus):
    from logicval_hf.serve.config import cgroup_cpu_quota

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpu_quota(str(tmp_path)) == cpus


def test_the_default_workers_fit_the_cores_this_process_may_use():
    import os

    from logicval_hf.cli.main import build_parser
    from logicval_hf.cli.serve import _config
    from logicval_hf.serve.config import MAX_DEFAULT_WORKERS, default_workers, usable_cores

    assert [default_workers(c) for c in (1, 2, 3, 16, 64)] == [1, 2, 3, MAX_DEFAULT_WORKERS, MAX_DEFAULT_WORKERS]
    cores = usable_cores()
    assert 1 <= cores <= len(os.sched_getaffinity(0))
    config = _config(build_parser().parse_args(["serve"]))
    threads = config.backend_settings["threads"]
    assert config.workers == default_workers(cores) and threads == max(1, cores // config.workers)
    assert config.workers * threads <= max(cores, config.workers)  # workers x threads fit the cores
    told = _config(build_parser().parse_args(["serve", "--workers", "1", "--setting", "threads=3"]))
    assert told.workers == 1 and told.backend_settings["threads"] == 3


def test_build_prompts_refuses_a_file_as_its_folder_before_sampling(tmp_path):
    target = tmp_path / "taken"
    target.write_text("x")
    proc = subprocess.run([sys.executable, "-m", "logicval_hf.cli", "build-prompts", "--n", "5", "--out", str(target)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "is an existing file, not a folder" in proc.stderr
