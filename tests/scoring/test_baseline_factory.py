"""Baselines by name: the declarations (`BASELINE_INFO`), settings checked in one line, metrics built from a name
and settings (a tiny CLIP folder, the fake judge server), ``logicval baselines``, and the metric's ``baselines``
option scoring images beside LogicVal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from fake_vlm import FakeJudge
from helpers import attr, requires

from logicval_hf.cli.main import main
from logicval_hf.common.registry import UnknownNameError
from logicval_hf.scoring.baselines import BASELINE_INFO, BASELINES, BaselineSetupError, build_baseline
from logicval_hf.scoring.baselines.factory import (
    baseline_fingerprint,
    check_baselines,
    parse_names,
    parse_settings,
    read_settings,
    resolve_baselines,
)
from logicval_hf.scoring.baselines.items import baseline_item, baseline_record

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}
needs_models = requires("torch", "transformers", "open_clip")


def test_every_baseline_is_declared_with_what_it_needs():
    assert BASELINE_INFO.names() == BASELINES.names() == ["clipscore", "soft-tifa", "vlm-judge"]
    for name in BASELINE_INFO.names():
        info = BASELINE_INFO.get(name)
        assert BASELINES.get(name).__name__ == info.metric.split(":")[1]
        assert info.selector in info.settings and set(info.needs) and info.weights and info.summary
        assert all(isinstance(meaning, str) and meaning for _, meaning in info.settings.values())
    clip = BASELINE_INFO.get("clipscore")
    assert clip.requirement() == ("neural", ("torch", "transformers"))
    assert clip.requirement({"loader": "open_clip"}) == ("neural", ("torch", "open_clip"))
    judge = BASELINE_INFO.get("vlm-judge")
    assert judge.requirement() is None and judge.requirement({"transport": "transformers"})[0] == "neural"
    with pytest.raises(UnknownNameError, match="did you mean 'vlm-judge'"):
        BASELINE_INFO.get("vlm-jugde")


def test_names_and_settings_are_read_and_refused_in_one_line():
    assert parse_names("clipscore, vlm-judge,clipscore") == ["clipscore", "vlm-judge"]
    with pytest.raises(UnknownNameError, match="did you mean 'soft-tifa'"):
        parse_names("clipscore,softtifa")
    with pytest.raises(ValueError, match="no baseline named"):
        parse_names(" , ")
    assert parse_settings(["clipscore.model=a/b", "vlm-judge.url=http://x:1/v1?k=v"]) == {
        "clipscore": {"model": "a/b"}, "vlm-judge": {"url": "http://x:1/v1?k=v"}}
    for bad in ("clipscore=1", "model=x", ".model=x", "clipscore.=x"):
        with pytest.raises(ValueError, match=r"NAME\.KEY=VALUE"):
            parse_settings([bad])
    s = read_settings("soft-tifa", {"model": "m", "top_k": "5", "normalize": "true", "timeout": "2.5",
                                    "max_retries": "0", "url": "none"})
    assert (s["top_k"], s["normalize"], s["timeout"], s["max_retries"], s["url"]) == (5, True, 2.5, 0, None)
    assert s["aggregate"] == "am" and s["api_key_env"] == "OPENAI_API_KEY"
    refusals = [
        ("vlm-judge", {}, "needs a model"),
        ("vlm-judge", {"model": "m", "timout": 3}, "unknown setting 'timout'; did you mean 'timeout'"),
        ("soft-tifa", {"model": "m", "aggregate": "median"}, "aggregate must be one of am, gm"),
        ("soft-tifa", {"model": "m", "top_k": "many"}, "top_k must be a number"),
        ("soft-tifa", {"model": "m", "top_k": 2.5}, "top_k must be a number"),
        ("soft-tifa", {"model": "m", "top_k": 0}, "top_k must be positive"),
        ("soft-tifa", {"model": "m", "normalize": "maybe"}, "normalize must be true or false"),
        ("clipscore", {"loader": "onnx"}, "loader must be one of transformers, open_clip"),
    ]
    for name, settings, message in refusals:
        with pytest.raises(BaselineSetupError, match=message) as e:
            read_settings(name, settings)
        assert isinstance(e.value, ValueError) and "\n" not in str(e.value)
        assert str(e.value).startswith(f"{name} baseline: ")
    with pytest.raises(BaselineSetupError, match="not among the baselines asked for"):
        check_baselines(["clipscore"], {"vlm-judge": {"model": "m"}})


def test_fingerprints_follow_what_decides_a_score(tmp_path):
    base = read_settings("vlm-judge", {"model": "m"})
    fp = baseline_fingerprint("vlm-judge", base)
    assert fp == baseline_fingerprint("vlm-judge", {**base, "concurrency": 16, "timeout": 5.0, "device": "cuda"})
    assert fp != baseline_fingerprint("vlm-judge", {**base, "model": "other"})
    assert fp != baseline_fingerprint("vlm-judge", {**base, "max_new_tokens": 64})
    weights = tmp_path / "w"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"1")
    clip = read_settings("clipscore", {"model": str(weights)})
    before = baseline_fingerprint("clipscore", clip)
    (weights / "model.safetensors").write_bytes(b"22")  # new weights under the same path
    assert baseline_fingerprint("clipscore", clip) != before


def test_items_from_rows_specs_and_prompts():
    from logicval_hf.contract.verbalise import full_prompt

    item = baseline_item(json.dumps(SPEC))
    assert item["full_prompt_short"] == full_prompt(SPEC, "short") and item["subquestions"][0]["expect"] == ">0"
    row = {"spec_json": json.dumps(SPEC), "full_prompt_short": "the row's own prompt"}
    assert baseline_item(row)["full_prompt_short"] == "the row's own prompt"
    white = baseline_item(SPEC, ("full_prompt_white_long",), subquestions=False)
    assert white["full_prompt_white_long"] == full_prompt(SPEC, "long", True) and "subquestions" not in white
    assert baseline_item("a red cube") == "a red cube"
    with pytest.raises(ValueError, match="prompt_short"):
        baseline_item(SPEC, ("prompt_short",))


# ---------------------------------------------------------------------------------------------------
# built from settings: the fake judge server, a tiny CLIP folder
# ---------------------------------------------------------------------------------------------------
def _image(value: int) -> np.ndarray:
    return np.full((32, 48, 3), value, np.uint8)


def test_vlm_baselines_over_http_are_checked_before_any_work(monkeypatch):
    monkeypatch.delenv("LV_TEST_KEY", raising=False)
    with FakeJudge(models=("judge-1",), key="sesame") as fake:
        at = {"url": fake.base_url, "api_key_env": "LV_TEST_KEY"}
        with pytest.raises(BaselineSetupError, match="set the environment variable LV_TEST_KEY"):
            build_baseline("vlm-judge", {"model": "judge-1", **at})
        monkeypatch.setenv("LV_TEST_KEY", "wrong")
        with pytest.raises(BaselineSetupError, match=r"refused the request \(HTTP 401\).*LV_TEST_KEY"):
            build_baseline("vlm-judge", {"model": "judge-1", **at})
        monkeypatch.setenv("LV_TEST_KEY", "sesame")
        with pytest.raises(BaselineSetupError, match="model 'judge-2' is not served"):
            build_baseline("vlm-judge", {"model": "judge-2", **at})
        assert not fake.requests  # every refusal came from GET /models alone
        judge = build_baseline("vlm-judge", {"model": "judge-1", **at})
        tifa = build_baseline("soft-tifa", {"model": "judge-1", "aggregate": "gm", **at})
        images, items = [_image(200), _image(0)], [baseline_item(SPEC)] * 2
        got = judge.evaluate(images, items)
        assert got[0].score in (0.0, 0.25, 0.5, 0.75, 1.0) and got[0].details["raw_score"] is not None
        assert got[1].score is None and "no 'SCORE" in got[1].details["reason"]  # a dark image: no rating
        rec = baseline_record(judge, got[1])
        assert rec == {"score": None, "reason": got[1].details["reason"], "raw_score": None, "rationale": None}
        res = tifa.evaluate(images, items)[0]
        assert res.score == pytest.approx(res.details["gm"]) and 0 <= res.score <= 1
        assert {"score", "am", "gm", "subquestions"} <= set(baseline_record(tifa, res))
    with pytest.raises(BaselineSetupError, match="cannot reach the endpoint"):
        build_baseline("vlm-judge", {"model": "judge-1", **at})


def test_missing_weights_are_one_line(tmp_path, monkeypatch):
    with pytest.raises(BaselineSetupError, match=r"model '\./no/such/clip': no such local path"):
        build_baseline("clipscore", {"model": "./no/such/clip"})
    with pytest.raises(BaselineSetupError, match="no such local path"):
        build_baseline("vlm-judge", {"transport": "transformers", "model": str(tmp_path / "missing")})
    (tmp_path / "empty").mkdir()
    with pytest.raises(BaselineSetupError, match=r"cannot load .*empty.* as a local folder.*set model=DIR") as e:
        build_baseline("clipscore", {"model": str(tmp_path / "empty")})
    assert "\n" not in str(e.value)


@pytest.mark.slow  # a fresh interpreter: the Hub client reads HF_HUB_OFFLINE when it is imported
@needs_models
def test_a_hub_id_that_cannot_be_fetched_is_one_line(tmp_path):
    code = ("from logicval_hf.scoring.baselines import build_baseline\n"
            "try:\n    build_baseline('clipscore')\nexcept ValueError as e:\n    print(type(e).__name__, e)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}  # no Hub, an empty cache
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith("BaselineSetupError clipscore baseline: cannot load 'zer0int/LongCLIP-GmP-ViT-L-14' "
                               "as a Hub id (not in the local cache, or offline?)")
    assert lines[0].endswith("set model=DIR to a local folder")


@needs_models
def test_clipscore_from_a_local_folder_and_the_metric_option(tmp_path):
    from tiny_models import save_tiny_hf_clip

    from logicval_hf.scoring.evaluation import compute

    save_tiny_hf_clip(tmp_path / "clip")
    clip = build_baseline("clipscore", {"model": str(tmp_path / "clip"), "device": "cpu", "batch_size": "2"})
    assert clip.context_length == 248 and clip.batch_size == 2
    images = [_image(40), _image(220), _image(128)]
    direct = clip.score(images, [baseline_item(SPEC)] * 3)
    result = compute(images, [json.dumps(SPEC)] * 3, baselines="clipscore",
                     baseline_settings={"clipscore": {"model": str(tmp_path / "clip"), "device": "cpu"}})
    assert result["baselines"]["clipscore"]["n_scored"] == 3
    assert result["baselines"]["clipscore"]["mean"] == pytest.approx(np.mean(direct), abs=1e-5)
    sample = result["per_sample"][1]
    assert sample["ok"] is False and sample["baselines"]["clipscore"]["score"] == pytest.approx(direct[1], abs=1e-5)
    assert sample["baselines"]["clipscore"]["context_length"] == 248
    # a built metric is used as it is, named by its registry name; scene graphs have no image to score
    assert resolve_baselines([clip]) == {"clipscore": clip}
    again = compute(images[:1], [SPEC], baselines=[clip], per_sample=False)
    assert again["baselines"]["clipscore"]["mean"] == pytest.approx(direct[0], abs=1e-5)
    scene = {"image_size": [480, 320], "objects": []}
    with pytest.raises(ValueError, match="predictions are scene graphs"):
        compute([json.dumps(scene)], [SPEC], baselines=[clip])
    with pytest.raises(UnknownNameError, match="did you mean 'clipscore'"):
        compute(images[:1], [SPEC], baselines="clipscor")


def test_logicval_baselines_lists_them(capsys):
    assert main(["baselines"]) == 0
    out = capsys.readouterr().out
    for name in ("clipscore:", "vlm-judge:", "soft-tifa:"):
        assert f"\n{name}" in out
    assert "zer0int/LongCLIP-GmP-ViT-L-14" in out and "transport=http: nothing more" in out
    assert main(["baselines", "soft-tifa"]) == 0
    out = capsys.readouterr().out
    assert "aggregate" in out and "atom level" in out and "KEY" in out
    assert main(["baselines", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in data] == ["clipscore", "vlm-judge", "soft-tifa"]
    assert data[0]["settings"]["model"]["default"] == "zer0int/LongCLIP-GmP-ViT-L-14"
    assert main(["baselines", "vlm-jugde"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["logicval: error: unknown baseline metric 'vlm-jugde'; did you mean "
                                        "'vlm-judge'? (known: clipscore, soft-tifa, vlm-judge)"]


@needs_models
def test_vlm_baselines_on_a_local_transformers_model(tmp_path):
    """transport=transformers: a tiny Qwen2.5-VL folder loaded through the Auto classes; Soft-TIFA reads its
    next-token log-probabilities, the judge its greedy answer (a random model gives no rating: no score, a reason)."""
    from tiny_models import tiny_qwen25_vl

    model, proc = tiny_qwen25_vl()
    model.save_pretrained(tmp_path / "qwen")
    proc.save_pretrained(tmp_path / "qwen")
    local = {"transport": "transformers", "model": str(tmp_path / "qwen"), "device": "cpu", "batch_size": 2}
    tifa = build_baseline("soft-tifa", {**local, "top_k": 5})
    judge = build_baseline("vlm-judge", {**local, "max_new_tokens": 4})
    images, items = [_image(60), _image(180)], [baseline_item(SPEC)] * 2
    for res in tifa.evaluate(images, items):
        assert res.score is not None and 0 <= res.score <= 1
        assert all(len(q["top_logprobs"]) == 5 for q in res.details["subquestions"])
    for res in judge.evaluate(images, items):
        assert res.score is None and res.details["reason"] and isinstance(res.details["answer"], str)
