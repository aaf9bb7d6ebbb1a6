"""The ``vlm`` perception backend against a fake OpenAI-compatible server on 127.0.0.1 (tests/fake_vlm.py) that
answers like a grounding VLM: true answers give exactly the verdicts of the true scene graphs (CLEVR and COCO,
through `extract_scenes`, the metric's `compute` and `evaluate.load(..., "vlm")`), each kind of bad answer is
that image's one-line error while the others are read, retries honour Retry-After, no call outlives its
timeout by more than a second, 8 requests are in flight by default, and the API key is never shown."""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import tempfile
import time
import uuid
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_MODULES_CACHE", os.path.join(tempfile.gettempdir(), "logicval-tests-hf-modules"))

import numpy as np
import pytest
from coco_specs import TEMPLATES as COCO_TEMPLATES
from coco_specs import random_scene as coco_scene
from coco_specs import random_spec as coco_spec
from fake_vlm import FakeVLM, colour_of, sent_image
from helpers import lazy, random_scene, random_spec

from logicval_hf.asp.solver import default_solver
from logicval_hf.contract.scene import Scene
from logicval_hf.perception import PerceptionError, extract_scene, extract_scenes, get_backend
from logicval_hf.perception.vlm import check_settings, clear_cache
from logicval_hf.scoring.evaluation import compute
from logicval_hf.scoring.judge import JudgeOptions, judge

evaluate = lazy("evaluate")
METRIC = Path(__file__).resolve().parents[2] / "metric" / "logicval"
VERDICT = ("ok", "relaxed_ok", "count_ok", "violated", "n_objects")


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()  # every test sends its own requests
    yield
    clear_cache()


def settings(fake: FakeVLM, **more) -> dict:
    return {"url": fake.base_url, "model": "fake-vlm", "boxes": fake.boxes, **more}


def without_provenance(scene: Scene) -> dict:
    d = scene.to_dict()
    d.pop("provenance", None)
    return d


def same_objects(a: dict, b: dict) -> bool:
    """Two scene dicts with the same objects, boxes equal to a thousandth of a pixel (the backend's rounding; the
    solver's witnesses carry float noise such as 369.99999999999994)."""
    strip = [[{k: v for k, v in o.items() if k != "bbox"} for o in d["objects"]] for d in (a, b)]
    boxes = [[o["bbox"] for o in d["objects"]] for d in (a, b)]
    return a["image_size"] == b["image_size"] and strip[0] == strip[1] and len(boxes[0]) == len(boxes[1]) and all(
        x == pytest.approx(y, abs=1e-3) for x, y in zip(boxes[0], boxes[1], strict=True))


def clevr_cases(rng: random.Random, count: int) -> tuple[list, list[Scene]]:
    """Specs with true scenes: half the solver's witnesses (satisfied), half random scenes on a coarse grid (ties
    on both axes, centres on the midlines and on the image's edges)."""
    solver = default_solver()
    specs, scenes = [], []
    while len(specs) < count:
        spec = random_spec(rng, rng.choice((1, 3)))
        result = solver.solve(spec)
        if len(specs) % 2 == 0 and result.satisfiable:
            scenes.append(result.witness)
        else:
            scenes.append(random_scene(rng, rng.randint(0, 7), grid=4))
        specs.append(spec)
    return specs, scenes


@pytest.mark.parametrize("boxes, more", [("pixels", {}), ("pixels", {"multiple_of": 28}),
                                         ("norm1000", {"image_format": "jpeg"})])
def test_true_answers_give_the_verdicts_of_the_true_clevr_scenes(boxes, more):
    specs, truth = clevr_cases(random.Random(7), 16)
    with FakeVLM(boxes=boxes) as fake:
        images = [fake.image(s) for s in truth]
        out = compute(images, specs, backend="vlm", backend_settings=settings(fake, **more))
        sent = {sent_image(r).size for r in fake.requests}
    want = compute([s.to_dict() for s in truth], specs)
    assert [[p[k] for k in VERDICT] for p in out["per_sample"]] == [[p[k] for k in VERDICT] for p in want["per_sample"]]
    assert out["logicval_score"] == want["logicval_score"] and 0 < want["logicval_score"] < 1
    for got, scene in zip(out["per_sample"], truth, strict=True):
        assert got["scene"].pop("provenance")["boxes"] == boxes
        assert same_objects(got["scene"], scene.to_dict())
    assert sent == ({(476, 308)} if more.get("multiple_of") == 28 else {(480, 320)})


def test_true_answers_give_the_verdicts_of_the_true_coco_scenes():
    rng = random.Random(3)
    specs = [coco_spec(rng, COCO_TEMPLATES, rng.choice((1, 3))) for _ in range(12)]
    truth = [coco_scene(rng, rng.randint(0, 6), lattice=k % 2 == 0) for k in range(12)]
    with FakeVLM(boxes="norm1000") as fake:
        images = [fake.image(s) for s in truth]
        out = compute(images, specs, backend="vlm", backend_settings=settings(fake))
        schemas = [r["body"]["response_format"]["json_schema"]["schema"] for r in fake.requests]
    want = compute([s.to_dict() for s in truth], specs)
    assert [[p[k] for k in VERDICT] for p in out["per_sample"]] == [[p[k] for k in VERDICT] for p in want["per_sample"]]
    assert len({p["ok"] for p in want["per_sample"]}) == 2  # both verdicts occur
    item = schemas[0]["properties"]["objects"]["items"]
    assert len(item["properties"]["class"]["enum"]) == 80 and item["required"] == ["class", "color", "bbox"]
    for got, scene in zip(out["per_sample"], truth, strict=True):  # listed most confident first, without scores
        ranked = sorted(scene.objects, key=lambda o: -(o.score or 0.0))
        got["scene"].pop("provenance")
        assert same_objects(got["scene"], {**scene.to_dict(), "objects": [
            {**o.attributes, "bbox": list(o.bbox)} for o in ranked]})


def test_each_kind_of_bad_answer_is_that_images_error_and_the_others_are_read():
    rng = random.Random(1)
    truth = [random_scene(rng, k) for k in (3, 2, 4, 1, 3, 2, 3, 2, 5)]
    kinds = [None, "malformed", "vocabulary", "outside", "cut", None, "flaky", "fenced", "silent"]
    with FakeVLM(retry_after="0.4") as fake:
        images = [fake.image(s, bad) for s, bad in zip(truth, kinds, strict=True)]
        t0 = time.monotonic()
        out = extract_scenes(images, backend="vlm", errors="return", **settings(fake, timeout=2))
        took = time.monotonic() - t0
        flaky = [r["at"] for r in fake.requests if fake.known(colour_of(sent_image(r))) == colour_of(images[6])]
        with pytest.raises(PerceptionError, match=r"^images\[1\]: vlm answer: malformed JSON"):  # errors="raise"
            extract_scenes(images[:2], backend="vlm", **settings(fake))
    errors = {i: str(o) for i, o in enumerate(out) if isinstance(o, PerceptionError)}
    assert sorted(errors) == [1, 2, 3, 4, 8]
    assert errors[1].startswith("images[1]: vlm answer: malformed JSON: ")
    assert errors[2].startswith("images[2]: vlm answer: objects[0].color 'magenta' is outside the vocabulary: "
                                "expected one of ['gray', 'red'")
    assert errors[3].startswith("images[3]: vlm answer: objects[0].bbox [490, ") and "lies outside the 480x320 image" \
        in errors[3]
    assert "(the answer was cut off at max_tokens)" in errors[4]
    assert errors[8].startswith("images[8]: vlm request: ")
    assert "no answer within the timeout (timeout 2 s)" in errors[8]
    assert all("\n" not in e for e in errors.values())
    for i in (0, 5, 6, 7):  # the fenced answer is read; the flaky image waited for its Retry-After, then was read
        assert same_objects(without_provenance(out[i]), truth[i].to_dict())
    assert len(flaky) == 2 and flaky[1] - flaky[0] >= 0.4
    assert took < 2 + 1  # the silent image costs its timeout, the others run beside it


@pytest.mark.parametrize("timeout", [0.5, 1.5])
def test_no_call_outlives_its_timeout_by_a_second(timeout):
    """Retries and waits count against the image's timeout: a silent server, and a Retry-After longer than the
    time left (the call ends at once rather than sleeping past it)."""
    scene = random_scene(random.Random(0), 2)
    with FakeVLM(retry_after="30") as fake:
        for bad, most in (("silent", timeout + 1), ("flaky", 1.0)):
            image = fake.image(scene, bad)
            t0 = time.monotonic()
            with pytest.raises(PerceptionError, match="vlm request: ") as e:
                extract_scene(image, backend="vlm", **settings(fake, timeout=timeout))
            assert time.monotonic() - t0 < most, bad
        assert "HTTP 503" in str(e.value) and "Retry-After 30 s does not fit" in str(e.value)


def test_eight_requests_are_in_flight_by_default():
    scenes = [random_scene(random.Random(k), 1) for k in range(20)]
    with FakeVLM(delay=0.4) as fake:
        out = extract_scenes([fake.image(s) for s in scenes], backend="vlm", **settings(fake))
        assert fake.max_in_flight == 8
    with FakeVLM(delay=0.1) as fake:
        extract_scenes([fake.image(s) for s in scenes[:6]], backend="vlm", **settings(fake, concurrency=2))
        assert fake.max_in_flight == 2
    assert all(same_objects(without_provenance(a), b.to_dict()) for a, b in zip(out, scenes, strict=True))


def test_the_request_names_the_vocabulary_and_the_provenance_records_it():
    scene = random_scene(random.Random(2), 3)
    with FakeVLM() as fake:
        got = extract_scene(fake.image(scene), backend="vlm", **settings(fake, max_tokens=500, temperature=0))
        body = fake.requests[0]["body"]
        again = extract_scene(fake.image(scene), backend="vlm", domain="clevr", **settings(fake))
    text = body["messages"][0]["content"][1]["text"]
    assert "- color: gray, red, blue, green, brown, cyan, purple, yellow" in text
    assert "- shape: cube, sphere, cylinder" in text and "- material: rubber, metal" in text
    assert "in pixels of this 480x320 image" in text
    assert body["model"] == "fake-vlm" and body["max_tokens"] == 500 and body["temperature"] == 0
    assert body["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    prov = got.provenance
    assert prov["prompt"] == text and prov["model"] == "fake-vlm" and prov["url"] == fake.base_url
    assert prov["sent_size"] == [480, 320] and json.loads(prov["answer"])["objects"]
    round_trip = Scene.from_dict(got.to_json())
    assert round_trip.provenance == prov and round_trip == got == again


def test_answers_are_cached_only_at_temperature_zero():
    scene = random_scene(random.Random(4), 2)
    with FakeVLM() as fake:
        image = fake.image(scene)
        for _ in range(3):
            extract_scene(image, backend="vlm", **settings(fake))
        assert len(fake.requests) == 1
        for _ in range(2):
            extract_scene(image, backend="vlm", **settings(fake, temperature=0.7))
        assert len(fake.requests) == 3
        extract_scene(image, backend="vlm", **settings(fake, boxes="norm1000", response_format="none"))
        assert len(fake.requests) == 4  # another request: not the cached answer


@pytest.mark.parametrize("fmt, want", [("json_object", {"type": "json_object"}), ("none", None)])
def test_response_format_can_be_looser_for_servers_without_structured_output(fmt, want):
    scene = random_scene(random.Random(5), 2)
    with FakeVLM() as fake:
        got = extract_scene(fake.image(scene, "fenced"), backend="vlm", **settings(fake, response_format=fmt))
        assert fake.requests[0]["body"].get("response_format") == want
    assert same_objects(without_provenance(got), scene.to_dict())


@pytest.mark.slow  # evaluate.load: a fresh import of evaluate and datasets; `compute` above is its function
def test_the_metric_module_reads_images_with_the_vlm_config(tmp_path):
    specs, truth = clevr_cases(random.Random(11), 4)
    with FakeVLM() as fake:
        metric = evaluate.load(str(METRIC), "vlm", cache_dir=str(tmp_path / "cache"), experiment_id=uuid.uuid4().hex)
        out = metric.compute(predictions=[fake.image(s) for s in truth], references=[s.to_json() for s in specs],
                             backend_settings=settings(fake))
    want = compute([s.to_dict() for s in truth], specs)
    assert metric.backend == "vlm"
    assert [p["ok"] for p in out["per_sample"]] == [p["ok"] for p in want["per_sample"]]


# ---- settings and the endpoint -----------------------------------------------------------------------------
@pytest.mark.parametrize("bad, line", [
    ({"url": None}, "vlm backend: the setting 'url' is missing"),
    ({"model": None}, "vlm backend: the setting 'model' is missing"),
    ({"api_key": "sk-1"}, "vlm backend: the API key is never a setting"),
    ({"timout": 3}, "vlm backend: unknown setting 'timout'; did you mean 'timeout'?"),
    ({"timeout": "soon"}, "vlm backend: timeout must be a number > 0, got 'soon'"),
    ({"timeout": 0}, "vlm backend: timeout must be a number > 0, got 0"),
    ({"boxes": "xyxy"}, "vlm backend: boxes must be one of pixels, norm1000, got 'xyxy'"),
    ({"concurrency": 2.5}, "vlm backend: concurrency must be an integer >= 1, got 2.5"),
    ({"url": "ftp://host/v1"}, "vlm backend: url must be an http:// or https:// address, got 'ftp://host/v1'"),
    ({"api_key_env": "LOGICVAL_TEST_UNSET_KEY"}, "vlm backend: the environment variable LOGICVAL_TEST_UNSET_KEY "
                                                 "(api_key_env) is not set"),
])
def test_bad_settings_are_one_line(bad, line, monkeypatch):
    monkeypatch.delenv("LOGICVAL_TEST_UNSET_KEY", raising=False)
    s = {k: v for k, v in {"url": "http://127.0.0.1:9/v1", "model": "m", **bad}.items() if v is not None}
    for call in (lambda: check_settings(s), lambda: extract_scene(np.zeros((8, 8, 3), np.uint8), "vlm", **s)):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_settings_given_as_text_are_read():
    with FakeVLM() as fake:
        check_settings({"url": fake.base_url, "model": "fake-vlm", "timeout": "2.5", "concurrency": "3",
                        "max_pixels": "null", "boxes": "NORM1000"})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_or_a_model_it_does_not_serve_is_one_line():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=r"^vlm backend: cannot reach the endpoint: .*/v1/models: cannot connect"):
        check_settings({"url": url, "model": "m"})
    # perceiving: every image would fail alike, so the call fails once, not once per image
    with pytest.raises(PerceptionError, match=r"^vlm backend: .*cannot connect") as e:
        extract_scenes([np.zeros((8, 8, 3), np.uint8)] * 20, backend="vlm", errors="return", url=url, model="m",
                       max_retries=1, backoff=0.05)
    assert "\n" not in str(e.value) and time.monotonic() - t0 < 5
    with FakeVLM(models=("Qwen/Qwen2.5-VL-7B-Instruct",)) as fake:
        with pytest.raises(ValueError, match=r"model 'fake-vlm' is not served at .* \(it serves \['Qwen/Qwen2.5-VL"):
            check_settings(settings(fake))
        check_settings({**settings(fake), "model": "Qwen/Qwen2.5-VL-7B-Instruct"})
    assert get_backend("vlm").check_settings is check_settings


def test_unknown_domain_is_one_line():
    with pytest.raises(PerceptionError, match=r"^domain: unknown domain 'cocoa'; did you mean 'coco'"):
        extract_scene(np.zeros((8, 8, 3), np.uint8), backend="vlm", domain="cocoa", url="http://127.0.0.1:9/v1",
                      model="m")


def test_the_api_key_is_never_shown(monkeypatch, caplog, capsys, tmp_path):
    key = "sk-test-" + uuid.uuid4().hex
    monkeypatch.setenv("LOGICVAL_TEST_VLM_KEY", key)
    caplog.set_level(logging.DEBUG)
    scene = random_scene(random.Random(6), 2)
    seen: list[str] = []
    with FakeVLM(key=key, retry_after="0.05") as fake:
        s = settings(fake, api_key_env="LOGICVAL_TEST_VLM_KEY")
        check_settings(s)
        got = extract_scenes([fake.image(scene), fake.image(scene, "flaky"), fake.image(scene, "malformed")],
                             backend="vlm", errors="return", **s)
        assert {r["auth"] for r in fake.requests} == {f"Bearer {key}"}  # it is sent, in the header only
        fake.key = "another-key"  # now the server refuses ours and echoes it back in its 401 body
        with pytest.raises(ValueError) as refused:
            check_settings(s)
        seen.append(str(refused.value))
        with pytest.raises(PerceptionError) as e:
            extract_scene(fake.image(scene), backend="vlm", **s)
        seen.append(str(e.value))
    assert "HTTP 401" in seen[1] and "***" in seen[1] and "check the API key" in seen[1]
    from logicval_hf.perception.vlm.reader import endpoint_of
    from logicval_hf.perception.vlm.settings import read_settings

    seen += [repr(read_settings(s)), repr(endpoint_of(read_settings(s))), json.dumps(got[0].to_dict()),
             *(str(x) for x in got), caplog.text, *capsys.readouterr()]
    (tmp_path / "scene.json").write_text(got[0].to_json())
    seen += [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    assert all(key not in text for text in seen)


def test_credentials_in_the_url_are_never_recorded():
    scene = random_scene(random.Random(8), 1)
    with FakeVLM() as fake:
        url = fake.base_url.replace("http://", "http://user:hunter2@")
        got = extract_scene(fake.image(scene), backend="vlm", **{**settings(fake), "url": url})
    assert "hunter2" not in got.to_json() and got.provenance["url"] == fake.base_url


def test_a_free_text_domain_is_read_as_text_and_gives_the_verdicts_of_the_true_scenes():
    """GIR-Bench's domain names objects and colours in free text: the schema asks for strings, not an empty
    ``enum``; the instruction says free text; the answer's words are stored folded as the domain folds them."""
    from logicval_hf.benchmark.importers.gir_bench import spec_for

    data = Path(__file__).resolve().parents[1] / "data" / "gir_bench"
    entries = [e for name in ("NumericalReasoning.json", "SpatialLayout.json")
               for e in json.loads((data / name).read_text(encoding="utf-8"))]
    solver = default_solver()
    specs, truth = [], []
    for entry in entries:
        spec = spec_for(entry)
        result = solver.solve(spec)
        if result.satisfiable:  # the witness, then the same objects with their first one gone
            specs += [spec, spec]
            truth += [result.witness, Scene.from_dict({**result.witness.to_dict(),
                                                       "objects": result.witness.to_dict()["objects"][1:]},
                                                      spec.domain)]
    with FakeVLM() as fake:
        images = [fake.image(s) for s in truth]
        out = compute(images, specs, backend="vlm", backend_settings=settings(fake))
        schema = fake.requests[0]["body"]["response_format"]["json_schema"]["schema"]
        text = fake.requests[0]["body"]["messages"][0]["content"]
    want = compute([s.to_dict() for s in truth], specs)
    assert [[p[k] for k in VERDICT] for p in out["per_sample"]] == [[p[k] for k in VERDICT] for p in want["per_sample"]]
    assert len({p["ok"] for p in want["per_sample"]}) == 2  # both verdicts occur
    item = schema["properties"]["objects"]["items"]["properties"]
    assert item["class"] == {"type": "string"} and item["color"] == {"type": "string"}
    assert "free text" in json.dumps(text)
    for got, scene in zip(out["per_sample"], truth, strict=True):
        got["scene"].pop("provenance")
        assert same_objects(got["scene"], scene.to_dict())


def test_an_unreachable_endpoint_fails_each_image_once_without_reading_them_again(monkeypatch):
    """The judge gives every image of the chunk the endpoint's error: with nothing to reach, reading the images
    again one by one would only repeat the refused connections (and their back-off) once per image."""
    import logicval_hf.perception as perception

    def one_by_one(*a, **k):
        raise AssertionError("an image was read again after the backend said it cannot read any")

    monkeypatch.setattr(perception, "extract_scene", one_by_one)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    specs, _ = clevr_cases(random.Random(5), 6)
    options = JudgeOptions(backend="vlm", backend_settings={"url": url, "model": "m", "max_retries": 1,
                                                            "backoff": 0.05})
    out = judge(specs, [np.zeros((8, 8, 3), np.uint8)] * len(specs), options)
    assert len(out) == len(specs) and all(j.strict is None and "cannot connect" in j.error for j in out)
    assert [j.error.split(":")[0] for j in out] == [f"predictions[{i}]" for i in range(len(specs))]
