"""``logicval serve --prompts FILE``: Flow-Factory's remote reward client sends only prompts and images to
``/compute``; the server finds each prompt's spec in the file. The request here is built the way that client builds
it (PIL image -> PNG -> base64; ``video``, ``condition_images``, ``condition_videos`` and, in one of its versions,
``kwargs`` null) and read the way it reads the answer (``error`` must be falsy, ``rewards`` one float per image)."""

from __future__ import annotations

import base64
import io
import json
import pickle

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import full_prompt
from logicval_hf.serve.app import create_app
from logicval_hf.serve.config import ServeConfig
from logicval_hf.serve.prompts import load_prompts

SPECS = [
    {"n": 3, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "red", "negated": False}}}]},
    {"n": 4, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "shape", "value": "sphere", "negated": False}}}]},
]


def _row(k: int, spec: dict) -> dict:
    """A line of a build-prompts output (`logicval_hf.benchmark.training_prompts.item_row`'s keys)."""
    s = Spec.from_dict(spec)
    return {"id": f"train-{k}", "prompt": full_prompt(s, "short"), "tag": "1SAT", "spec_json": s.to_json(),
            "label": "SAT"}


def _png_b64(image) -> str:
    """What Flow-Factory's client does with each PIL image: PNG, then base64 text."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def _flow_factory_payload(prompts: list[str], images: list, with_kwargs: bool) -> dict:
    payload = {"prompt": prompts, "image": [_png_b64(im) for im in images], "video": None,
               "condition_images": None, "condition_videos": None}
    if with_kwargs:  # one version of the client sends its extra keyword arguments as well, null when none
        payload["kwargs"] = None
    return payload


@pytest.fixture(scope="module")
def prompts_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("prompts") / "train_metadata.jsonl"
    path.write_text("".join(json.dumps(_row(k, s)) + "\n" for k, s in enumerate(SPECS)))
    return path


@pytest.fixture(scope="module")
def oracle_images():
    from logicval_hf.generation.builtin import make_generator

    g = make_generator("oracle", seed=3, image_size=(320, 320))
    return [g.generate(Spec.from_dict(s)).image for s in SPECS]


@pytest.fixture(scope="module")
def client(prompts_file):
    with TestClient(create_app(ServeConfig(backend="clevr", workers=0, prompts=str(prompts_file)))) as c:
        for _ in range(1000):
            if c.get("/health").json()["status"] != "starting":
                break
        yield c


@pytest.mark.parametrize("with_kwargs", [False, True])
def test_flow_factorys_prompt_and_image_request_is_scored_as_the_same_images_with_their_specs(
        client, oracle_images, with_kwargs):
    prompts = [_row(k, s)["prompt"] for k, s in enumerate(SPECS)]
    r = client.post("/compute", json=_flow_factory_payload(prompts, oracle_images, with_kwargs))
    assert r.status_code == 200
    data = r.json()
    assert not data.get("error") and data["errors"] == []
    rewards = data["rewards"]
    assert len(rewards) == 2 and all(isinstance(x, float) and 0.0 <= x <= 1.0 for x in rewards)
    with_specs = client.post("/compute", json={"image": [_png_b64(im) for im in oracle_images], "specs": SPECS})
    assert with_specs.json()["rewards"] == rewards and with_specs.json()["verdicts"] == data["verdicts"]


def test_an_unknown_prompt_is_its_images_error_entry_and_the_rest_is_scored(client, oracle_images):
    prompts = [_row(0, SPECS[0])["prompt"], "a photo of a cat"]
    r = client.post("/compute", json=_flow_factory_payload(prompts, oracle_images, with_kwargs=False))
    assert r.status_code == 200
    data = r.json()
    assert not data.get("error") and len(data["rewards"]) == 2 and data["rewards"][1] == 0.0
    assert [e["index"] for e in data["errors"]] == [1]
    assert "prompt[1]: the prompt 'a photo of a cat' is not one of the 2 prompts of train_metadata.jsonl" in (
        data["errors"][0]["error"])
    alone = client.post("/compute", json={"image": [_png_b64(oracle_images[0])], "specs": SPECS[:1]}).json()
    assert data["rewards"][0] == alone["rewards"][0]


def test_a_flow_grpo_item_with_only_a_prompt_is_looked_up_too(client, oracle_images):
    from logicval_hf.serve.client import jpeg_bytes

    jpegs = [jpeg_bytes(im) for im in oracle_images]
    body = {"images": jpegs, "meta_datas": [{"prompt": _row(k, s)["prompt"]} for k, s in enumerate(SPECS)]}
    looked_up = pickle.loads(client.post("/", content=pickle.dumps(body)).content)
    body["meta_datas"] = [{"spec": s} for s in SPECS]
    given = pickle.loads(client.post("/", content=pickle.dumps(body)).content)
    assert looked_up["errors"] == [] and looked_up["strict_rewards"] == given["strict_rewards"]
    assert looked_up["scores"] == given["scores"]


def test_health_names_the_prompts_file_and_the_control_routes_answer(client):
    assert client.get("/health").json()["prompts"] == {"source": "train_metadata.jsonl", "count": 2}
    assert client.post("/load").json() == {"status": "ok"} and client.post("/offload").status_code == 200


def test_without_a_prompts_file_a_prompt_only_request_is_refused_naming_the_flag():
    with TestClient(create_app(ServeConfig(backend="given", workers=0))) as c:
        r = c.post("/compute", json={"prompt": ["a red object"], "image": ["x"], "video": None, "kwargs": None})
        assert r.status_code == 400 and "--prompts FILE" in r.json()["detail"]
        assert c.get("/health").json()["prompts"] is None


@pytest.mark.slow  # the benchmark's rows: read from the user-level cache, or built (about 20 s) when it is cold
def test_a_build_dataset_folder_finds_every_prompt_column(tmp_path):
    from logicval_hf.benchmark.dataset import write_dataset
    from logicval_hf.benchmark.sampler import cached_benchmark

    bench = cached_benchmark()
    write_dataset(tmp_path / "ds", benchmark=bench)
    index = load_prompts(tmp_path / "ds")
    row = bench.all_rows()[7]
    for column in ("full_prompt_short", "full_prompt_long", "full_prompt_white_short", "prompt_long"):
        item = index.item(row[column])
        assert item["spec_json"] == row["spec_json"] and item["id"] == row["id"] and item["tag"] == row["package"]
    by_text: dict[str, set[str]] = {}
    for r in bench.all_rows():
        by_text.setdefault(r["prompt_short"], set()).add(r["spec_json"])
    for text, specs in by_text.items():  # a constraint-only prompt may stand for specs of different n
        assert (text in index) == (len(specs) == 1)


def test_a_prompt_that_stands_for_two_specs_is_refused_and_one_repeated_for_the_same_spec_is_not(tmp_path):
    first, second = _row(0, SPECS[0]), _row(1, SPECS[1])
    lines = [first, {**first, "id": "again"}, {**second, "prompt": "the same words"},
             {**first, "prompt": "the same words"}]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    index = load_prompts(tmp_path / "p.jsonl")
    assert index.item(first["prompt"])["id"] == "train-0"  # the first line of a repeated prompt and spec
    with pytest.raises(KeyError, match=r"'the same words' stands for 2 different specs in p\.jsonl"):
        index.item("the same words")
    assert "the same words" not in index and first["prompt"] in index


def test_a_build_prompts_folder_is_read_whole(tmp_path):
    (tmp_path / "train_metadata.jsonl").write_text(json.dumps(_row(0, SPECS[0])) + "\n")
    (tmp_path / "test_metadata.jsonl").write_text(json.dumps(_row(1, SPECS[1])) + "\n")
    index = load_prompts(tmp_path)
    assert len(index) == 2 and index.source == tmp_path.name
    assert index.item("  " + _row(1, SPECS[1])["prompt"] + "\n")["id"] == "train-1"  # outer whitespace aside


@pytest.mark.parametrize("text, message", [
    ('{"prompt": "a red cube"}\n', "line 1 has a prompt but no spec"),
    ('{"prompt": "ok", "spec": {}}\nnot json\n', "line 2 is not JSON"),
    ('{"text": "a red cube", "spec": {}}\n', "line 1 has no 'prompt' text"),
    ("\n", "holds no prompt"),
])
def test_a_prompts_file_that_cannot_serve_is_one_line_naming_the_problem(tmp_path, text, message):
    path = tmp_path / "p.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_prompts(path)
