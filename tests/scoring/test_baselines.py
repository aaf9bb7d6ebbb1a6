"""Baseline metrics (CLIPScore, VLM-Judge, Soft-TIFA) with tiny random models and a fake OpenAI server.

* CLIPScore: a tiny open_clip model (custom config, real BPE tokenizer) and a tiny ``transformers``
  ``CLIPModel`` saved to disk and loaded by path; raw cosines are recomputed by hand; truncation is checked
  against the tokenizer; a synthetic Long-CLIP checkpoint (248 positions + ``positional_embedding_res``) is
  detected and merged.
* VLM backends: (a) a tiny LLaVA (``LlavaForConditionalGeneration``: CLIP vision tower + Llama text model,
  random weights) with ``LlavaProcessor`` over a byte-level BPE tokenizer trained in memory; (b)
  ``OpenAIChatVLM`` against a threaded fake chat-completions server on 127.0.0.1 that returns crafted
  ``top_logprobs`` and judge texts, fails on demand (HTTP 503/429/401, slow answers) and records requests.
* Soft-TIFA arithmetic is checked exactly on crafted distributions (count ranges, ``>0`` as 1 - P(0),
  linked counts, token variants, AM/GM).
"""

from __future__ import annotations

import base64
import io
import json
import math
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from helpers import lazy, requires
from PIL import Image

from logicval_hf import Spec, load_catalog
from logicval_hf.contract.params import random_constraint
from logicval_hf.contract.verbalise import full_prompt, spec_subquestions
from logicval_hf.scoring.baselines import (
    JUDGE_PROMPT,
    BaselineError,
    BaselineResult,
    CLIPScore,
    OpenAIChatVLM,
    SoftTIFA,
    TransformersVLM,
    VLMJudge,
    VLMRequestError,
    VLMResponseError,
    candidate_probs,
    convert_longclip_state_dict,
    parse_judge_answer,
    score_subquestions,
)
from logicval_hf.scoring.baselines.soft_tifa import normalise_token, question_prompt, subquestions_of
from logicval_hf.scoring.baselines.vlm import image_data_url
from logicval_hf.scoring.baselines.vlm_judge import judge_prompt

CATALOG = load_catalog()
L = math.log


def make_row(spec: Spec) -> dict:
    """The benchmark-row columns the metrics read (as `logicval_hf.benchmark.sampler.make_row` writes them)."""
    return {
        "full_prompt_short": full_prompt(spec, "short", False, CATALOG),
        "spec_json": spec.to_json(),
        "subquestions": [{**sq, "expect": str(sq["expect"]), "candidates": [str(c) for c in sq["candidates"]]}
                         for sq in spec_subquestions(spec, CATALOG)],
    }


@pytest.fixture(scope="module")
def spec() -> Spec:
    rng = random.Random(0)
    # C3/1prop: "How many purple objects" (>0, binds c) then "How many purple metal objects" (=c);
    # C1/2prop_neg: yes/no, >0 count, yes/no; C6/propRel: "How many purple objects" (>0, no binding) and
    # "Is there a yellow object that is in front of all other purple objects?" (yes)
    return Spec(5, (random_constraint("C3/1prop", 5, rng), random_constraint("C1/2prop_neg", 5, rng),
                    random_constraint("C6/propRel", 5, rng)))


def img(w: int, h: int, seed: int = 0) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8))


# ---------------------------------------------------------------------------------------------------
# Soft-TIFA arithmetic (pure)
# ---------------------------------------------------------------------------------------------------
def sq(question, kind, expect, candidates=None, bind=None, constraint=0):
    if candidates is None:
        candidates = ["yes", "no"] if kind == "yes_no" else [str(k) for k in range(11)]
    return {"question": question, "type": kind, "expect": expect, "bind": bind, "candidates": candidates,
            "constraint": constraint}


def test_token_variants_and_candidate_mass():
    assert normalise_token("\u0120Yes") == "yes" and normalise_token("\u2581no.") == "no"
    assert normalise_token(" 2,") == "2" and normalise_token("**True**") == "true"
    top = [("Yes", L(0.5)), (" yes", L(0.2)), ("YES", L(0.05)), ("True", L(0.05)), ("no", L(0.1)), ("maybe", L(0.1))]
    p = candidate_probs(top, ["yes", "no"], "yes_no")
    assert p["yes"] == pytest.approx(0.8) and p["no"] == pytest.approx(0.1)
    # counts: digits with and without a space, number words
    p = candidate_probs([("2", L(0.4)), (" two", L(0.2)), ("\u01202", L(0.1)), ("10", L(0.1))], range(11), "count")
    assert p["2"] == pytest.approx(0.7) and p["10"] == pytest.approx(0.1) and p["1"] == 0
    # values: spelling variants and the unique prefix of a multi-token answer
    cands = ["gray", "green", "cylinder", "cube"]
    p = candidate_probs([("grey", L(0.3)), ("Gray", L(0.1)), (" cyl", L(0.2)), ("c", L(0.1)), ("gr", L(0.1))],
                        cands, "value")
    assert p["gray"] == pytest.approx(0.4) and p["cylinder"] == pytest.approx(0.2)
    assert p["cube"] == 0 and p["green"] == 0  # "c" is too short, "gr" is ambiguous
    assert candidate_probs([(" cyl", L(0.2))], cands, "value", prefix_match=False)["cylinder"] == 0


def test_count_ranges_positive_and_linked_counts():
    subqs = [
        sq("How many green objects are there?", "count", ">0", bind="c"),
        sq("How many green cubes are there?", "count", "=c"),
        sq("How many red objects are there?", "count", "<=2"),
        sq("How many spheres are there?", "count", "=5-c"),
    ]
    tops = [
        [("0", L(0.10)), ("1", L(0.60)), ("2", L(0.30))],  # paper's example: 1 - P(0) = 0.9; argmax c = 1
        [("1", L(0.25)), ("2", L(0.55)), ("0", L(0.20))],  # =c -> P(1) = 0.25
        [("0", L(0.1)), ("2", L(0.2)), ("3", L(0.6)), ("Two", L(0.05))],  # <=2 -> 0.1 + 0.25
        [("4", L(0.7)), ("3", L(0.2))],  # =5-c = 4 -> 0.7
    ]
    r = score_subquestions(subqs, tops)
    scores = [e["score"] for e in r["subquestions"]]
    assert scores == pytest.approx([0.9, 0.25, 0.35, 0.7])
    assert r["subquestions"][0]["rule"] == "1-P(0)" and r["subquestions"][0]["bound"] == {"c": 1}
    assert r["am"] == pytest.approx(sum(scores) / 4)
    assert r["gm"] == pytest.approx((0.9 * 0.25 * 0.35 * 0.7) ** 0.25)
    # argmax 2 -> =c scores P(2)
    tops[0] = [("0", L(0.1)), ("1", L(0.3)), ("2", L(0.6))]
    r = score_subquestions(subqs, tops)
    assert r["subquestions"][0]["bound"] == {"c": 2}
    assert r["subquestions"][1]["score"] == pytest.approx(0.55)
    assert r["subquestions"][3]["score"] == pytest.approx(0.2)  # 5 - 2 = 3
    # ties bind the smaller count
    tops[0] = [("3", L(0.4)), ("1", L(0.4)), ("0", L(0.2))]
    assert score_subquestions(subqs, tops)["subquestions"][0]["bound"] == {"c": 1}


def test_positive_count_without_mass_and_unresolved_bindings():
    subqs = [sq("How many?", "count", ">0", bind="c"), sq("How many cubes?", "count", "=c")]
    r = score_subquestions(subqs, [[("maybe", L(0.9))], [("1", L(0.9))]])
    first, second = r["subquestions"]
    assert first["score"] == 0.0 and "no count candidate" in first["reason"] and first["bound"] == {"c": None}
    assert second["score"] == 0.0 and "unresolved" in second["reason"]
    assert r["gm"] == 0.0 and r["am"] == 0.0
    # raw (paper) vs normalised masses: 1 - P(0) uses the raw P(0) unless normalize=True
    top = [[("0", L(0.2)), ("1", L(0.4)), ("The", L(0.4))]]
    assert score_subquestions([sq("n?", "count", ">0")], top)["am"] == pytest.approx(0.8)
    assert score_subquestions([sq("n?", "count", ">0")], top, normalize=True)["am"] == pytest.approx(4 / 6)
    assert score_subquestions([sq("n?", "count", ">=1")], top)["am"] == pytest.approx(0.8)


def test_bindings_are_scoped_per_constraint():
    subqs = [sq("a?", "count", ">0", bind="c", constraint=0), sq("b?", "count", "=c", constraint=1)]
    r = score_subquestions(subqs, [[("2", 0.0)], [("2", 0.0)]])
    assert r["subquestions"][1]["score"] == 0.0 and "unresolved" in r["subquestions"][1]["reason"]


def test_yes_no_value_and_true_false_candidates():
    subqs = [sq("Is it?", "yes_no", "no"), sq("What shape?", "value", "cylinder", ["cube", "sphere", "cylinder"])]
    tops = [[("false", L(0.6)), ("No", L(0.1)), ("true", L(0.3))], [("cylinder", L(0.5)), ("cube", L(0.5))]]
    r = score_subquestions(subqs, tops, binary=("true", "false"))
    assert [e["score"] for e in r["subquestions"]] == pytest.approx([0.7, 0.5])
    assert question_prompt(subqs[0], ("true", "false")).endswith("one of: true, false.")
    assert question_prompt(subqs[1]) == "What shape? Answer with a single word, one of: cube, sphere, cylinder."
    with pytest.raises(BaselineError):
        score_subquestions([sq("?", "value", "cone", ["cube"])], [[("cube", 0.0)]])


def test_subquestions_from_rows_specs_and_lists(spec):
    row = make_row(spec)
    from_row, from_spec = subquestions_of(row), subquestions_of(spec)
    assert [q["question"] for q in from_row] == [q["question"] for q in from_spec]
    assert subquestions_of(spec.to_json())[0]["expect"] == ">0"
    assert subquestions_of({"spec_json": spec.to_json()})[1]["expect"] == "=c"
    with pytest.raises(BaselineError, match="sub-questions"):
        subquestions_of("a red cube")


# ---------------------------------------------------------------------------------------------------
# VLM-Judge parsing
# ---------------------------------------------------------------------------------------------------
def test_judge_prompt_is_the_papers_rubric():
    assert JUDGE_PROMPT == (
        "You are judging whether a generated image matches a text description. Description: \u201c{prompt}\u201d. "
        "Rate how well the image satisfies all the logical constraints in the description on a scale of 1 (not "
        "at all) to 5 (perfect match). Respond in exactly this format: SCORE: \u27e81\u20135\u27e9 RATIONALE: "
        "\u27e8one sentence\u27e9")
    assert judge_prompt("a {red} cube").startswith(
        "You are judging whether a generated image matches a text description. Description: \u201ca {red} cube\u201d.")


@pytest.mark.parametrize("text, raw", [
    ("SCORE: 4 RATIONALE: Mostly right.", 4), ("**SCORE:** 5\n**RATIONALE:** ok", 5), ("score: <3>", 3),
    ("SCORE: 2/5 RATIONALE: no", 2), ("SCORE:1", 1),
])
def test_judge_parse_ok(text, raw):
    assert parse_judge_answer(text)[0] == raw


@pytest.mark.parametrize("text, why", [
    ("The image looks fine.", "no 'SCORE"), ("SCORE: 7", "outside"), ("SCORE: 3.5", "not an integer"),
    ("SCORE: 4/10", "out of 10"), ("SCORE: 2. Later: SCORE: 5", "several"), ("", "empty"),
    ("SCORE: \u27e81\u20135\u27e9 RATIONALE: \u27e8one sentence\u27e9", "no 'SCORE"),  # the template echoed back
])
def test_judge_parse_refuses(text, why):
    score, _, reason = parse_judge_answer(text)
    assert score is None and why in reason


# ---------------------------------------------------------------------------------------------------
# fake OpenAI-compatible server
# ---------------------------------------------------------------------------------------------------
class FakeState:
    def __init__(self):
        self.requests: list[dict] = []
        self.fail: list[tuple[int, dict]] = []  # (status, headers) answered before succeeding
        self.delay = 0.0
        self.no_logprobs = False
        self.key = "test-key"
        self.lock = threading.Lock()

    @staticmethod
    def logprobs(question: str, size: tuple[int, int]) -> list[tuple[str, float]]:
        wide = size[0] > size[1]  # image 0 is wide, image 1 is tall
        if "How many purple objects" in question:
            return ([("0", L(0.1)), (" 1", L(0.6)), ("2", L(0.3))] if wide
                    else [("0", L(0.1)), ("1", L(0.3)), ("2", L(0.6))])
        if "How many purple metal objects" in question:
            return [("1", L(0.2)), ("One", L(0.1)), ("2", L(0.5)), ("0", L(0.1))]
        if question.startswith("Is there a brown"):
            return [("Yes", L(0.5)), (" yes", L(0.2)), ("TRUE", L(0.1)), ("no", L(0.15))]
        if question.startswith("How many brown"):
            return [("0", L(0.25)), ("1", L(0.5)), ("3", L(0.2))]
        if question.startswith("Are all objects"):
            return [("No", L(0.7)), ("yes", L(0.2))]
        if question.startswith("Is there a yellow"):
            return [("yes", L(0.4)), ("No", L(0.5))]
        return [("hmm", L(0.9))]

    @staticmethod
    def judge(instruction: str) -> str:
        if "GOOD" in instruction:
            return "SCORE: 4 RATIONALE: Mostly right."
        if "BAD" in instruction:
            return "SCORE: 1\nRATIONALE: Nothing matches."
        return "I cannot rate this image."


class Handler(BaseHTTPRequestHandler):
    state: FakeState

    def log_message(self, *a):  # quiet
        pass

    def _send(self, status, payload, headers=None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        st = self.state
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with st.lock:
            st.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            fail = st.fail.pop(0) if st.fail else None
        if st.delay:
            import time

            time.sleep(st.delay)
        if self.headers.get("Authorization") != f"Bearer {st.key}":
            return self._send(401, {"error": {"message": "invalid api key"}})
        if fail:
            return self._send(fail[0], {"error": {"message": "try later"}}, fail[1])
        content = body["messages"][0]["content"]
        text = next(c["text"] for c in content if c["type"] == "text")
        url = next(c["image_url"]["url"] for c in content if c["type"] == "image_url")
        im = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
        if body.get("logprobs"):
            if st.no_logprobs:
                return self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "1"}}]})
            top = st.logprobs(text, im.size)[: body.get("top_logprobs", 20)]
            first = max(top, key=lambda t: t[1])
            return self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": first[0]},
                                                 "logprobs": {"content": [{
                                                     "token": first[0], "logprob": first[1], "bytes": None,
                                                     "top_logprobs": [{"token": t, "logprob": lp, "bytes": None}
                                                                      for t, lp in top]}]}}]})
        return self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": st.judge(text)}}]})


@pytest.fixture()
def server():
    state = FakeState()
    handler = type("H", (Handler,), {"state": state})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def client(state, **kw):
    kw.setdefault("api_key", "test-key")
    kw.setdefault("backoff", 0.001)
    return OpenAIChatVLM("fake-gpt", state.base_url, **kw)


def test_openai_soft_tifa_exact_scores(server, spec):
    row = make_row(spec)
    questions = [q["question"] for q in row["subquestions"]]
    assert questions[0].startswith("How many purple objects") and row["subquestions"][0]["bind"] == "c"
    assert questions[1].startswith("How many purple metal objects") and row["subquestions"][1]["expect"] == "=c"
    tifa = SoftTIFA(client(server, max_workers=3), aggregate="gm")
    res = tifa.evaluate([img(64, 48), img(48, 64, 1)], [row, row])
    # image 0 (wide): P(0)=.1 P(1)=.6 P(2)=.3 -> 0.9, c = 1 -> P(1) = .2 + .1 ("One"); yes: .5+.2+.1 ("TRUE");
    # brown count >0: 1 - .25; "Are all objects cubes?" expects no: .7; purple count again .9; yellow: .4
    s0 = [e["score"] for e in res[0].details["subquestions"]]
    assert s0 == pytest.approx([0.9, 0.3, 0.8, 0.75, 0.7, 0.9, 0.4])
    assert res[0].details["subquestions"][0]["bound"] == {"c": 1}
    # image 1 (tall): argmax count 2 -> =c scores P(2) = .5
    s1 = [e["score"] for e in res[1].details["subquestions"]]
    assert s1 == pytest.approx([0.9, 0.5, 0.8, 0.75, 0.7, 0.9, 0.4])
    assert res[0].score == pytest.approx((0.9 * 0.3 * 0.8 * 0.75 * 0.7 * 0.9 * 0.4) ** (1 / 7))
    assert res[0].details["am"] == pytest.approx(4.75 / 7)
    assert SoftTIFA(client(server), aggregate="am").score([img(64, 48)], [spec]) == pytest.approx([4.75 / 7])
    # what was sent: one request per sub-question, single token, top-20 logprobs, PNG data URL of the image
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1/chat/completions" and server.requests[0]["auth"] == "Bearer test-key"
    assert body["model"] == "fake-gpt" and body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["max_tokens"] == 1 and body["temperature"] == 0
    url = body["messages"][0]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    texts = sorted(r["body"]["messages"][0]["content"][0]["text"] for r in server.requests[:14])
    assert any(t.startswith("How many purple objects are there? Answer with a single word, one of: 0, 1, 2")
               for t in texts)
    assert sent.size in ((64, 48), (48, 64))
    assert image_data_url(img(64, 48)) == image_data_url(np.asarray(img(64, 48)))


def test_openai_judge(server):
    judge = VLMJudge(client(server))
    res = judge.evaluate([img(32, 32)] * 3, ["a GOOD prompt", {"full_prompt_short": "a BAD prompt"}, "other"])
    assert [r.score for r in res] == [0.75, 0.0, None]
    assert res[0].details["rationale"] == "Mostly right." and res[0].details["raw_score"] == 4
    assert "no 'SCORE" in res[2].details["reason"] and res[2].details["answer"] == "I cannot rate this image."
    sent = {r["body"]["messages"][0]["content"][0]["text"]: r["body"] for r in server.requests}
    assert set(sent) == {judge_prompt(p) for p in ("a GOOD prompt", "a BAD prompt", "other")}
    body = sent[judge_prompt("a GOOD prompt")]
    assert "logprobs" not in body and body["max_tokens"] == 128


def test_openai_retries_and_errors(server):
    sleeps = []
    vlm = client(server, max_retries=2, sleep=sleeps.append, backoff=0.5)
    server.fail = [(503, {}), (429, {"Retry-After": "0.05"})]
    assert vlm.generate([img(8, 8)], ["GOOD"]) == ["SCORE: 4 RATIONALE: Mostly right."]
    assert len(server.requests) == 3 and sleeps == [0.5, 0.05]
    server.fail = [(503, {}), (503, {}), (502, {})]
    with pytest.raises(VLMRequestError, match=r"failed after 3 attempts.*HTTP 502"):
        vlm.generate([img(8, 8)], ["GOOD"])
    # a client error is not retried; the key never appears in messages
    n = len(server.requests)
    bad = client(server, api_key="wrong-key", max_retries=3)
    with pytest.raises(VLMRequestError, match="HTTP 401") as e:
        bad.top_logprobs([img(8, 8)], ["q"])
    assert len(server.requests) == n + 1 and "wrong-key" not in str(e.value) and "wrong-key" not in repr(bad)
    # a server without logprobs support
    server.no_logprobs = True
    with pytest.raises(VLMResponseError, match="logprobs"):
        client(server).top_logprobs([img(8, 8)], ["q"])


def test_openai_timeout_then_record(server):
    server.delay = 0.4
    vlm = client(server, timeout=0.1, max_retries=1)
    with pytest.raises(VLMRequestError, match="failed after 2 attempts"):
        vlm.generate([img(8, 8)], ["GOOD"])
    assert len(server.requests) == 2
    res = VLMJudge(vlm, on_error="record").evaluate([img(8, 8)], ["GOOD"])
    assert res[0].score is None and res[0].details["reason"].startswith("request failed")
    res = SoftTIFA(vlm, on_error="record").evaluate([img(8, 8)], [[sq("n?", "count", ">0")]])
    assert res[0].score is None and "request failed" in res[0].details["reason"]


def test_openai_key_handling(monkeypatch, server):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BaselineError, match="OPENAI_API_KEY"):
        OpenAIChatVLM("gpt-4o")
    monkeypatch.delenv("MY_VLM_KEY", raising=False)
    with pytest.raises(BaselineError, match="MY_VLM_KEY"):
        OpenAIChatVLM("gpt-4o", api_key_env="MY_VLM_KEY")
    monkeypatch.setenv("MY_VLM_KEY", "test-key")
    vlm = OpenAIChatVLM("fake-gpt", server.base_url, api_key_env="MY_VLM_KEY")
    assert vlm.generate([img(8, 8)], ["BAD"])[0].startswith("SCORE: 1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    assert OpenAIChatVLM("fake-gpt").url == server.base_url + "/chat/completions"


def test_pairs_must_match(server):
    with pytest.raises(ValueError, match="pairwise"):
        VLMJudge(client(server)).score([img(8, 8)], ["a", "b"])


# ---------------------------------------------------------------------------------------------------
# CLIPScore
# ---------------------------------------------------------------------------------------------------
# the model tests need the optional stack; the arithmetic and HTTP tests above do not (and collecting this file
# imports none of it: every xdist worker collects it)
open_clip, torch = lazy("open_clip"), lazy("torch")
needs_models = requires("torch", "transformers", "open_clip")
TINY = "logicval-test-tiny-clip-baselines"


@pytest.fixture(scope="module")
def tiny_clip_name(tmp_path_factory):
    d = tmp_path_factory.mktemp("clipcfg_b")
    cfg = {"embed_dim": 32,
           "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
           "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}
    (d / f"{TINY}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(str(d))
    return TINY


@needs_models
def test_clipscore_open_clip_raw_cosine_and_truncation(tiny_clip_name, spec):
    torch.manual_seed(0)
    metric = CLIPScore.from_open_clip(tiny_clip_name, pretrained=None, device="cpu")
    assert metric.context_length == 77
    short, long = "a red cube", make_row(spec)  # the full prompt is several hundred tokens
    images = [img(40, 30), img(30, 40, 2)]
    res = metric.evaluate(images, [short, long])
    model, tok, pre = metric.encoder.model, metric.encoder.tokenizer, metric.encoder.preprocess
    with torch.no_grad():
        fi = model.encode_image(torch.stack([pre(im) for im in images]))
        ft = model.encode_text(tok([short, long["full_prompt_short"]]))
    want = torch.nn.functional.cosine_similarity(fi, ft).tolist()
    assert [r.score for r in res] == pytest.approx(want, abs=1e-5)
    assert all(-1 <= r.score <= 1 for r in res)
    n_long = len(tok.encode(long["full_prompt_short"])) + 2
    assert res[0].details == {"prompt": short, "n_tokens": 5, "context_length": 77, "truncated": False,
                              "dropped_tokens": 0}
    assert res[1].details["truncated"] and res[1].details["dropped_tokens"] == n_long - 77 > 100
    # the truncated encoding equals the encoding of the first 75 text tokens
    ids = tok([long["full_prompt_short"]])[0]
    assert int((ids != 0).sum()) == 77 and int(ids[-1]) == tok.eot_token_id


@needs_models
def test_clipscore_long_clip_checkpoint(tiny_clip_name, tmp_path):
    """A 248-position checkpoint keeps its context; Long-CLIP's two tables are merged (first 20 + rest)."""
    torch.manual_seed(1)
    base = open_clip.create_model(tiny_clip_name, pretrained=None, force_context_length=248)
    sd = base.state_dict()
    res = torch.randn_like(sd["positional_embedding"])
    sd_long = {**sd, "positional_embedding_res": res}
    path = tmp_path / "longclip.pt"
    torch.save(sd_long, path)
    metric = CLIPScore.from_open_clip(tiny_clip_name, pretrained=str(path), device="cpu")
    assert metric.context_length == 248
    pe = metric.encoder.model.positional_embedding.detach()
    assert torch.equal(pe[:20], sd["positional_embedding"][:20]) and torch.equal(pe[20:], res[20:])
    assert convert_longclip_state_dict(sd_long)["positional_embedding"].shape == (248, 32)
    text = " ".join(["red cube"] * 60)  # 120 text tokens: truncated at 77, not at 248
    r = metric.evaluate([img(32, 32)], [text])[0]
    assert r.details["context_length"] == 248 and not r.details["truncated"] and r.details["n_tokens"] == 122
    # a plain 248-context checkpoint (no _res table) keeps 248 too; a 77 one stays 77
    torch.save(sd, tmp_path / "plain248.pt")
    assert CLIPScore.from_open_clip(tiny_clip_name, pretrained=str(tmp_path / "plain248.pt"), device="cpu") \
        .context_length == 248
    short = open_clip.create_model(tiny_clip_name, pretrained=None)
    torch.save(short.state_dict(), tmp_path / "plain77.pt")
    m77 = CLIPScore.from_open_clip(tiny_clip_name, pretrained=str(tmp_path / "plain77.pt"), device="cpu")
    assert m77.context_length == 77 and m77.evaluate([img(32, 32)], [text])[0].details["dropped_tokens"] == 45
    with pytest.raises(BaselineError, match="does not fit"):
        torch.save({"positional_embedding": torch.zeros(77, 8)}, tmp_path / "bad.pt")
        CLIPScore.from_open_clip(tiny_clip_name, pretrained=str(tmp_path / "bad.pt"), device="cpu")


@needs_models
def test_clipscore_transformers_from_local_dir(tmp_path):
    from tiny_models import save_tiny_hf_clip

    _, proc = save_tiny_hf_clip(tmp_path)
    tok = proc.tokenizer
    metric = CLIPScore.from_transformers(str(tmp_path), device="cpu")
    assert metric.context_length == 248
    text = " ".join(["red cube"] * 150)
    res = metric.evaluate([img(40, 30), img(32, 32)], ["a red cube", text])
    assert res[0].details["n_tokens"] == 5 and not res[0].details["truncated"]
    assert res[1].details["n_tokens"] == 302 and res[1].details["dropped_tokens"] == 54
    m = metric.encoder.model
    with torch.no_grad():
        enc = tok(["a red cube"], return_tensors="pt")
        ft = m.get_text_features(**enc)
        ft = ft if hasattr(ft, "shape") else ft.pooler_output
        pix = proc.image_processor(images=[img(40, 30)], return_tensors="pt")["pixel_values"]
        fi = m.get_image_features(pixel_values=pix)
        fi = fi if hasattr(fi, "shape") else fi.pooler_output
    assert res[0].score == pytest.approx(float(torch.nn.functional.cosine_similarity(fi, ft)[0]), abs=1e-5)


# ---------------------------------------------------------------------------------------------------
# local transformers VLM: tiny LLaVA
# ---------------------------------------------------------------------------------------------------
def tiny_llava():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    words = ("yes no true false 0 1 2 3 4 5 6 7 8 9 10 gray red blue green brown cyan purple yellow cube sphere "
             "cylinder rubber metal How many objects are there Is Answer with a single word one of SCORE RATIONALE")
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>", "</s>", "<image>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator([words, " " + words] * 5, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                  extra_special_tokens={"image_token": "<image>"})
    chat = ("{% for m in messages %}{{ m['role'] }}: {% for c in m['content'] %}{% if c['type'] == 'image' %}"
            "<image>{% else %}{{ c['text'] }}{% endif %}{% endfor %} {% endfor %}"
            "{% if add_generation_prompt %}assistant:{% endif %}")
    proc = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32},
                                                             crop_size={"height": 32, "width": 32}),
                          tokenizer=tok, patch_size=8, vision_feature_select_strategy="default", chat_template=chat,
                          num_additional_image_tokens=1)
    cfg = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                                       image_size=32, patch_size=8, projection_dim=32).to_dict(),
        text_config=LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                                pad_token_id=tok.pad_token_id).to_dict(),
        image_token_id=tok.convert_tokens_to_ids("<image>"), vision_feature_layer=-1,
        vision_feature_select_strategy="default")
    torch.manual_seed(0)
    return LlavaForConditionalGeneration(cfg).eval(), proc


@pytest.fixture(scope="module")
def llava():
    model, proc = tiny_llava()
    return TransformersVLM(model, proc, device="cpu", batch_size=2)


@needs_models
def test_local_vlm_top_logprobs_match_a_manual_forward(llava):
    images = [img(40, 30), img(30, 40, 1), img(33, 33, 2)]
    prompts = ["How many cubes are there?", "Is there a red sphere? Answer with a single word", "yes"]
    tops = llava.top_logprobs(images, prompts, k=20)
    assert [len(t) for t in tops] == [20, 20, 20]
    for i, (im, p) in enumerate(zip(images, prompts, strict=True)):
        assert [lp for _, lp in tops[i]] == sorted((lp for _, lp in tops[i]), reverse=True)
        assert sum(math.exp(lp) for _, lp in tops[i]) <= 1 + 1e-6
        single = llava.top_logprobs([im], [p], k=20)[0]  # no padding: batched (left-padded) == single
        assert [t for t, _ in single[:5]] == [t for t, _ in tops[i][:5]]
        assert np.allclose([lp for _, lp in single], [lp for _, lp in tops[i]], atol=1e-4)
        enc = llava.processor(images=[im], text=[llava.chat_text(p)], return_tensors="pt")
        with torch.no_grad():
            manual = torch.log_softmax(llava.model(**enc).logits[0, -1].float(), -1)
        best = int(manual.argmax())
        assert tops[i][0][0] == llava.tokenizer.decode([best])
        assert tops[i][0][1] == pytest.approx(float(manual[best]), abs=1e-4)


@needs_models
def test_local_vlm_soft_tifa_and_judge(llava, spec, tmp_path):
    row = make_row(spec)
    images = [img(40, 30), img(30, 40, 1)]
    tifa = SoftTIFA(llava, aggregate="am", top_k=20)
    res = tifa.evaluate(images, [row, row])
    for r in res:
        assert isinstance(r, BaselineResult) and 0 <= r.details["am"] <= 1 and 0 <= r.details["gm"] <= 1
        assert len(r.details["subquestions"]) == len(row["subquestions"])
        # the metric's arithmetic equals the pure function on the same top-k lists
        again = score_subquestions(row["subquestions"], [e["top_logprobs"] for e in r.details["subquestions"]])
        assert again["am"] == pytest.approx(r.score)
    judge = VLMJudge(llava, max_new_tokens=8)
    out = judge.evaluate(images, [row, "a red cube"])
    for r in out:  # a random model does not follow the rubric: no score is made up
        assert r.score is None and r.details["reason"] and isinstance(r.details["answer"], str)
    # loading through the Auto classes from a local directory
    llava.model.save_pretrained(tmp_path)
    llava.processor.save_pretrained(tmp_path)
    loaded = TransformersVLM.from_pretrained(str(tmp_path), device="cpu")
    assert type(loaded.model).__name__ == "LlavaForConditionalGeneration"
    a = loaded.top_logprobs(images[:1], ["How many cubes are there?"], k=5)[0]
    b = llava.top_logprobs(images[:1], ["How many cubes are there?"], k=5)[0]
    assert [t for t, _ in a] == [t for t, _ in b] and np.allclose([x for _, x in a], [x for _, x in b], atol=1e-5)
