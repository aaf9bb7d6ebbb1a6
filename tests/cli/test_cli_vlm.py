"""The ``vlm`` perception backend on the command line (``--backend vlm --setting url=URL --setting model=NAME``),
against a fake OpenAI-compatible server on 127.0.0.1 (tests/fake_vlm.py) that answers the true objects of each
image: ``logicval check``, ``repair`` and ``run`` give exactly the verdicts of the true scene graphs (CLEVR and
COCO specs); each kind of bad answer is that image's one error line while the others are scored; the requests
are 8 in flight; the run's verdict cache is keyed by the model; the prompt reaches ``verdicts/``; a missing
setting, an unreachable endpoint or an unknown domain is one line, exit 2, before any work."""

from __future__ import annotations

import json
import random
import socket
from pathlib import Path

import numpy as np
import pytest
from coco_specs import TEMPLATES as COCO_TEMPLATES
from coco_specs import random_scene as coco_scene
from coco_specs import random_spec as coco_spec
from fake_vlm import FakeVLM
from helpers import random_scene, random_spec
from PIL import Image

from logicval_hf.asp.solver import default_solver
from logicval_hf.cli.main import main
from logicval_hf.contract.scene import Scene
from logicval_hf.job.cache import load_rows
from logicval_hf.job.plan import limit_rows
from logicval_hf.perception.vlm import clear_cache
from logicval_hf.repairs import repair

VERDICT = ("ok", "count_ok", "violated")


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()  # every test sends its own requests
    yield
    clear_cache()


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def vlm(fake: FakeVLM, *more: str) -> list[str]:
    return ["--backend", "vlm", "--setting", f"url={fake.base_url}", "--setting", "model=fake-vlm",
            "--setting", f"boxes={fake.boxes}", *[x for m in more for x in ("--setting", m)]]


def save(path: Path, rgb) -> Path:
    Image.fromarray(rgb).save(path)  # PNG: lossless, the fake knows the image by its colour
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("domain", ["clevr", "coco"])
def test_check_gives_the_verdicts_of_the_true_scene_graphs(tmp_path, capsys, domain):
    rng = random.Random(5)
    solver = default_solver()
    if domain == "clevr":
        specs = [random_spec(rng, rng.choice((1, 3))) for _ in range(6)]
        truth = [solver.solve(s).witness if k % 2 == 0 and solver.solve(s).satisfiable else
                 random_scene(rng, rng.randint(0, 6), grid=4) for k, s in enumerate(specs)]
    else:
        specs = [coco_spec(rng, COCO_TEMPLATES, rng.choice((1, 3))) for _ in range(6)]
        truth = [coco_scene(rng, rng.randint(0, 5), lattice=k % 2 == 0) for k in range(6)]
    verdicts = []
    with FakeVLM(boxes="norm1000" if domain == "coco" else "pixels") as fake:
        for k, (spec, scene) in enumerate(zip(specs, truth, strict=True)):
            (tmp_path / f"spec{k}.json").write_text(spec.to_json())
            image = save(tmp_path / f"image{k}.png", fake.image(scene))
            rc, out, err = run(capsys, "check", tmp_path / f"spec{k}.json", image, *vlm(fake))
            assert rc == 0, err
            verdicts.append(json.loads(out))
    for got, spec, scene in zip(verdicts, specs, truth, strict=True):
        want = solver.verify(spec, scene).to_dict()
        assert [got[k] for k in VERDICT] == [want[k] for k in VERDICT]
        assert got["backend"] == "vlm" and got["scene"]["provenance"]["model"] == "fake-vlm"
        assert len(got["scene"]["objects"]) == len(scene.objects)
    assert len({v["ok"] for v in verdicts}) == 2  # both verdicts occur


def test_repair_reads_the_image_with_the_vlm(tmp_path, capsys):
    solver = default_solver()
    spec = random_spec(random.Random(2), 1)
    scene = random_scene(random.Random(3), 4)
    (tmp_path / "spec.json").write_text(spec.to_json())
    with FakeVLM() as fake:
        image = save(tmp_path / "image.png", fake.image(scene))
        rc, out, err = run(capsys, "repair", tmp_path / "spec.json", image, *vlm(fake))
    assert rc == 0, err
    got = json.loads(out)
    assert got["backend"] == "vlm" and len(got["perceived"]["objects"]) == 4
    assert got["cost"] == repair(spec, scene, solver=solver).cost


@pytest.mark.parametrize("setting, says", [
    (["url=URL"], "the setting 'model' is missing"),
    (["model=fake-vlm"], "the setting 'url' is missing"),
    (["url=URL", "model=fake-vlm", "boxes=corners"], "boxes must be one of pixels, norm1000"),
    (["url=URL", "model=fake-vlm", "domain=cocoa"], "unknown domain 'cocoa'; did you mean 'coco'"),
    (["url=URL", "model=other"], "model 'other' is not served at"),
    (["url=http://127.0.0.1:PORT/v1", "model=fake-vlm"], "cannot reach the endpoint"),
    (["url=URL", "model=fake-vlm", "api_key=sk-123"], "the API key is never a setting"),
])
@pytest.mark.parametrize("command", ["check", "repair", "run"])
def test_bad_settings_are_one_line_before_any_work(tmp_path, capsys, monkeypatch, setting, says, command):
    def work(*a, **k):
        raise AssertionError("the command started working before checking its backend")

    monkeypatch.setattr("logicval_hf.scoring.judge.judge", work)
    monkeypatch.setattr("logicval_hf.job.plan.run_rows", work)
    spec = tmp_path / "spec.json"
    spec.write_text(random_spec(random.Random(1), 1).to_json())
    image = save(tmp_path / "image.png", np.zeros((32, 48, 3), np.uint8))
    with FakeVLM() as fake:
        settings = [s.replace("URL", fake.base_url).replace("PORT", str(closed_port())) for s in setting]
        argv = {"check": ["check", spec, image], "repair": ["repair", spec, image],
                "run": ["run", "--out", tmp_path / "out", "--quiet"]}[command]
        rc, out, err = run(capsys, *argv, "--backend", "vlm", *[x for s in settings for x in ("--setting", s)])
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("logicval: error: "), err
    assert says in err and "sk-123" not in err
    assert not fake.requests  # nothing was sent to be read
    assert not (tmp_path / "out").exists()


def _own_images(tmp_path: Path, fake: FakeVLM, bad: dict[int, str], limit: int = 2) -> tuple[Path, dict, dict]:
    """A folder of images named by benchmark id (``limit`` per package), each the fake's image of a true scene: the
    solver's witness for half the satisfiable ones, random scenes otherwise; ``bad``: the kind of bad answer of some."""
    rng = random.Random(11)
    rows = limit_rows(load_rows(), limit)
    folder = tmp_path / "my_images"
    folder.mkdir()
    truth = {}
    for k, row in enumerate(rows):
        witness = row.witness if k % 2 == 0 and row.label == "SAT" else None
        scene = Scene.from_dict(witness) if witness else random_scene(rng, rng.randint(2, 6), grid=4)
        truth[row.id] = scene
        save(folder / f"{row.id}.png", fake.image(scene, bad.get(k)))
    return folder, {r.id: r for r in rows}, truth


def test_run_on_ones_own_images_gives_the_true_verdicts_and_one_line_per_bad_answer(tmp_path, capsys):
    solver = default_solver()
    kinds = {1: "malformed", 4: "vocabulary", 6: "outside", 8: "cut", 10: "silent"}
    with FakeVLM(delay=0.2) as fake:
        folder, rows, truth = _own_images(tmp_path, fake, kinds)
        out = tmp_path / "report"
        rc, stdout, err = run(capsys, "run", "--generator", folder, "--limit", 2, "--out", out, "--quiet",
                              "--no-repair", *vlm(fake, "timeout=3"))
        prompts = {c["text"] for r in fake.requests for c in r["body"]["messages"][0]["content"] if c["type"] == "text"}
        in_flight = fake.max_in_flight
    assert rc == 0, err
    summary = json.loads((out / "summary.json").read_text())
    entry = summary["generators"]["my_images"]
    bad_ids = {list(rows)[k]: kind for k, kind in kinds.items()}
    assert sorted(entry["unreadable"]) == sorted(bad_ids)
    reasons = entry["unreadable_reasons"]
    assert sorted(reasons) == sorted(bad_ids) and all("\n" not in r for r in reasons.values())
    says = {"malformed": "malformed JSON", "vocabulary": "is outside the vocabulary", "outside": "lies outside",
            "cut": "cut off at max_tokens", "silent": "no answer within the timeout"}
    for rid, kind in bad_ids.items():
        assert says[kind] in reasons[rid] and f"{rid}.png" in reasons[rid], reasons[rid]
        on_disk = json.loads((out / "verdicts" / "my_images" / f"{rid}.json").read_text())
        assert on_disk["verdict"] is None and on_disk["unreadable"] == reasons[rid]
    for rid, scene in truth.items():
        if rid in bad_ids:
            continue
        got = json.loads((out / "verdicts" / "my_images" / f"{rid}.json").read_text())
        want = solver.verify(rows[rid].spec, scene).to_dict()
        assert [got["verdict"][k] for k in VERDICT] == [want[k] for k in VERDICT], rid
        provenance = got["verdict"]["scene"]["provenance"]
        assert provenance["model"] == "fake-vlm" and provenance["prompt"] in prompts
    assert {json.loads((out / "verdicts" / "my_images" / f"{rid}.json").read_text())["verdict"]["ok"]
            for rid in truth if rid not in bad_ids} == {True, False}
    assert in_flight == 8  # 12 images, 0.2 s each: eight requests at once, in this process
    assert entry["repair"] is None and not (out / "repairs").exists()  # --no-repair
    assert summary["backend_settings"]["model"] == "fake-vlm"
    report = (out / "report.md").read_text()
    assert all(r in report for r in reasons.values())
    assert "Not computed: the run skipped the cheapest repairs (`--no-repair`)." in report
    assert "unreadable" in stdout


def test_the_runs_verdicts_are_cached_per_model(tmp_path, capsys):
    with FakeVLM(models=("fake-vlm", "other-vlm")) as fake:
        folder, _, _ = _own_images(tmp_path, fake, {}, limit=1)
        argv = ["run", "--generator", folder, "--limit", 1, "--out", tmp_path / "report", "--quiet", "--no-repair"]
        rc, _, err = run(capsys, *argv, *vlm(fake))
        assert rc == 0, err
        first = json.loads((tmp_path / "report" / "summary.json").read_text())
        clear_cache()
        rc, _, err = run(capsys, *argv, *vlm(fake))  # the same model: every verdict reused, no request
        again = json.loads((tmp_path / "report" / "summary.json").read_text())
        sent = len(fake.requests)
        clear_cache()
        rc, _, err = run(capsys, *argv, *vlm(fake, "timeout=30", "concurrency=2"))  # how, not what: reused
        assert rc == 0 and len(fake.requests) == sent
        rc, _, err = run(capsys, *argv, *[a.replace("model=fake-vlm", "model=other-vlm") for a in vlm(fake)])
        other = json.loads((tmp_path / "report" / "summary.json").read_text())
    n = first["n_specs"]
    assert first["work"]["my_images"]["scored"] == n and again["work"]["my_images"]["reused_verdicts"] == n
    assert other["work"]["my_images"]["scored"] == n  # another model: read again
    assert first["backend_fingerprint"] == again["backend_fingerprint"] != other["backend_fingerprint"]
    assert sent == n and len(fake.requests) == sent + n
