"""``logicval run --baselines`` end to end on tiny models (a random-weight CLIP folder, the fake judge server):
every image's baseline scores in its verdict file, the summary, the report's table and ``scores.jsonl``; reused on
resume; ``logicval meta RUN_DIR`` compares every metric with the known truth; bad baselines refused in one line
before any work."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fake_vlm import FakeJudge
from helpers import requires

from logicval_hf.benchmark.sampler import PACKAGE_NAMES
from logicval_hf.cli.main import main
from logicval_hf.job.report import SUMMARY_KEYS

NAMES = ("clipscore", "vlm-judge", "soft-tifa")
GENS = ("oracle", "naive")
pytestmark = requires("torch", "transformers", "open_clip")


def _argv(out, clip, fake, *extra):
    return ["run", "--out", str(out), "--limit", "1", "--generator", *GENS, "--jobs", "1", "--quiet",
            "--baselines", ",".join(NAMES), "--baseline-setting", f"clipscore.model={clip}",
            "--baseline-setting", "clipscore.device=cpu",
            *(x for n in ("vlm-judge", "soft-tifa") for x in (
                "--baseline-setting", f"{n}.model=fake-judge", "--baseline-setting", f"{n}.url={fake.base_url}",
                "--baseline-setting", f"{n}.api_key_env=none")), *extra]


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    from tiny_models import save_tiny_hf_clip

    root = tmp_path_factory.mktemp("baselines")
    save_tiny_hf_clip(root / "clip")
    with FakeJudge(models=("fake-judge",)) as fake:
        yield root / "run", root / "clip", fake


@pytest.fixture(scope="module")
def first(judged):
    out, clip, fake = judged
    assert main(_argv(out, clip, fake)) == 0
    return out, json.loads((out / "summary.json").read_text()), len(fake.requests)


def test_every_image_gets_every_baseline_score(first):
    out, summary, n_requests = first
    n_images = len(GENS) * len(PACKAGE_NAMES)
    # one judge request per image, one Soft-TIFA request per sub-question of each image
    assert n_requests > 2 * n_images
    assert tuple(k for k in summary if k != "baselines") == SUMMARY_KEYS
    assert list(summary).index("baselines") == list(summary).index("backend_fingerprint") + 1
    assert list(summary["baselines"]["metrics"]) == list(NAMES)
    assert summary["baselines"]["metrics"]["vlm-judge"]["settings"]["model"] == "fake-judge"
    pooled = summary["baselines"]["known_truth"]
    assert pooled["generators"] == list(GENS) and set(pooled["by_metric"]) == {"logicval", *NAMES}
    assert pooled["by_metric"]["logicval"]["n"] == n_images
    for g in GENS:
        entry = summary["generators"][g]["baselines"]
        assert list(entry) == list(NAMES)
        assert entry["clipscore"]["n_scored"] == len(PACKAGE_NAMES) and -1 <= entry["clipscore"]["mean"] <= 1
        assert entry["soft-tifa"]["n_scored"] == len(PACKAGE_NAMES)
        assert entry["vlm-judge"]["n_scored"] + entry["vlm-judge"]["n_unscored"] == len(PACKAGE_NAMES)
    for path in (out / "verdicts" / "naive").glob("*.json"):
        records = json.loads(path.read_text())["baselines"]
        assert list(records) == list(NAMES)
        assert records["clipscore"]["context_length"] == 248 and isinstance(records["clipscore"]["score"], float)
        assert records["vlm-judge"]["raw_score"] in (1, 2, 3, 4, 5)
        assert records["soft-tifa"]["subquestions"] and 0 <= records["soft-tifa"]["score"] <= 1
        fps = {n: summary["baselines"]["metrics"][n]["fingerprint"] for n in NAMES}
        assert {n: r["fingerprint"] for n, r in records.items()} == fps
    lines = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert len(lines) == n_images and {line["model"] for line in lines} == set(GENS)
    for line in lines:
        assert {"id", "package", "spec_json", "known_truth", "logicval", *NAMES} <= set(line)
    report = (out / "report.md").read_text()
    assert "## Baseline metrics beside LogicVal" in report and "### Metrics against the known truth" in report
    assert "| generator | LogicVal | known truth | clipscore | vlm-judge | soft-tifa |" in report
    assert "Baseline metrics beside LogicVal" in (out / "report.html").read_text()


def test_a_resumed_run_reuses_the_scores_and_redoes_only_what_changed(first, judged, capsys):
    out, summary, _ = first
    _, clip, fake = judged
    before = len(fake.requests)
    capsys.readouterr()
    assert main(_argv(out, clip, fake)) == 0
    assert len(fake.requests) == before  # every score came from the verdict files
    headline = capsys.readouterr().out
    assert "clipscore" in headline and "soft-tifa" in headline
    again = json.loads((out / "summary.json").read_text())
    assert again["generators"]["naive"]["baselines"] == summary["generators"]["naive"]["baselines"]
    # a setting that changes Soft-TIFA's score re-asks Soft-TIFA only
    assert main(_argv(out, clip, fake, "--baseline-setting", "soft-tifa.aggregate=gm")) == 0
    asked = fake.requests[before:]
    assert asked and all(r["body"].get("logprobs") for r in asked)
    changed = json.loads((out / "summary.json").read_text())
    assert changed["generators"]["naive"]["baselines"]["clipscore"] == summary["generators"]["naive"]["baselines"][
        "clipscore"]


def test_meta_compares_every_metric_with_the_known_truth(first, tmp_path, capsys):
    out, _, _ = first
    capsys.readouterr()
    assert main(["meta", str(out), "--out", str(tmp_path / "meta")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# Meta-evaluation against known-truth verdicts")
    assert "## Metrics compared" in printed
    table = printed.split("## Metrics compared")[1].split("## Images per model")[0]
    for name in ("logicval", *NAMES):
        assert f"| {name} | {len(GENS) * len(PACKAGE_NAMES)} |" in table
    data = json.loads((tmp_path / "meta" / "meta.json").read_text())
    assert set(data["metrics"]) == {"logicval", *NAMES} and data["verdicts"]["known truth"] == 12
    assert data["by_metric"]["logicval"]["all"]["agreement"] is not None
    assert (tmp_path / "meta" / "roc.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["meta", str(tmp_path)]) == 2
    assert "without scores.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--baselines", "clipscore,vlm-jugde"], "unknown baseline metric 'vlm-jugde'; did you mean 'vlm-judge'?"),
    (["--baselines", "vlm-judge"], "vlm-judge baseline: needs a model"),
    (["--baselines", "clipscore", "--baseline-setting", "clipscore.model=./no/such/clip"],
     "clipscore baseline: model './no/such/clip': no such local path"),
    (["--baselines", "clipscore", "--baseline-setting", "clipscore.modle=x"],
     "unknown setting 'modle'; did you mean 'model'?"),
    (["--baseline-setting", "clipscore.model=x"], "--baseline-setting without --baselines"),
    (["--baselines", "clipscore", "--baseline-setting", "vlm-judge.model=x"], "not among the baselines asked for"),
    (["--baselines", "vlm-judge", "--baseline-setting", "vlm-judge.model=m",
      "--baseline-setting", "vlm-judge.url=http://127.0.0.1:9/v1", "--baseline-setting", "vlm-judge.api_key_env=none"],
     "vlm-judge baseline: cannot reach the endpoint"),
])
def test_bad_baselines_are_one_line_before_any_work(tmp_path, capsys, args, message):
    out = tmp_path / "r"
    assert main(["run", "--out", str(out), "--limit", "1", "--quiet", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("logicval: error: ") and message in err[0], err
    assert not out.exists()


@pytest.mark.slow  # a fresh interpreter that imports the CLI
def test_a_missing_extra_is_one_line(tmp_path):
    code = ("import sys; sys.modules['torch'] = None; from logicval_hf.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "run", "--baselines", "clipscore", "--limit", "1",
                           "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ('logicval: error: the clipscore baseline needs the "neural" extra (torch is not '
                                   'installed): pip install "logicval-hf[neural]"')
    assert not (tmp_path / "r").exists()
