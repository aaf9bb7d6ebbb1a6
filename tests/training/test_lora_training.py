"""LoRA fine-tuning on TINY random FLUX / Qwen-Image pipelines (offline, CPU, seconds).

What is checked: the flow-matching loss (its formula and that training moves it), the saved LoRA (diffusers
keys, adapter metadata with rank *and* alpha) and its exact restoration through ``pipe.load_lora_weights``,
the training script end to end for both model types (held-out evaluation, selection of the lowest held-out
loss, outputs), resumability (stop + ``--resume_from_checkpoint latest`` gives the same weights and the same
selection history as an uninterrupted run), and the selection bookkeeping.
"""

from __future__ import annotations

import importlib
import json
import math
import random
from pathlib import Path

import pytest
from helpers import lazy, load_script, requires

from logicval_hf.generation.families import FAMILIES  # the family table imports no torch
from logicval_hf.training.lora_data import build_pairs, split_pairs, write_split

pytestmark = requires("torch", "diffusers", "peft", "accelerate", "safetensors")
torch = lazy("torch")
L = lazy("logicval_hf.training.lora")
C = lazy("logicval_hf.training.lora_checkpoints")
builders = lazy("tiny_models")  # tests/tiny_models.py (tests/ is on sys.path: tests/conftest.py)
MODEL_TYPES = tuple(FAMILIES.names())  # = L.MODEL_TYPES, known at collection without torch

ROOT = Path(__file__).resolve().parents[2]
W, H = 48, 32  # training resolution of the tiny runs (a multiple of 8: both tiny VAEs x 2x2 packing)
TRAIN_ARGS = ["--width", str(W), "--height", str(H), "--rank", "4", "--lora_alpha", "8", "--learning_rate", "1e-2",
              "--max_sequence_length", "48", "--no_progress"]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy 2-core machine the thread hand-offs cost
    milliseconds per op (a 32-wide linear layer: ~0.05 ms on one thread, 1-5 ms on two)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _train_module():
    """The training loop: `logicval_hf.training.train_lora` (lora_training/train_lora.py only runs it)."""
    return importlib.import_module("logicval_hf.training.train_lora")


def _shell_module():
    return load_script(ROOT / "lora_training" / "train_lora.py", "train_lora_shell")


def make_clevr_folder(folder: Path, count: int = 30, seed: int = 0, size=(96, 64)) -> Path:
    """Rendered CLEVR-style images + an official-format scenes.json (pixel_coords = drawn box centres)."""
    from logicval_hf.benchmark.sampler import random_scene
    from logicval_hf.generation.render import render_scene

    (folder / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    scenes = []
    for i in range(count):
        scene = random_scene(rng.randint(3, 6), rng, image_size=size)
        img, drawn = render_scene(scene, size, seed=i)
        name = f"TINY_{i:03d}.png"
        img.save(folder / "images" / name)
        objs = [dict(o.attributes, pixel_coords=[(o.bbox[0] + o.bbox[2]) / 2, (o.bbox[1] + o.bbox[3]) / 2, 10.0])
                for o in drawn.objects]
        scenes.append({"image_index": i, "image_filename": name, "objects": objs})
    (folder / "scenes.json").write_text(json.dumps({"info": {"split": "tiny"}, "scenes": scenes}))
    return folder


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    """A split over 30 rendered scenes: 1 held-out pair per class, 2 batches of one pair per common template."""
    root = make_clevr_folder(tmp_path_factory.mktemp("clevr"))
    pairs = build_pairs(root / "scenes.json", root / "images", seed=1)
    split = split_pairs(pairs, seed=1, heldout_per_class=1, batch_size=10, max_batches=2, min_template_count=5)
    assert len(split.batches) == 2 and len(split.heldout) == 9
    out = tmp_path_factory.mktemp("split")
    write_split(split, out)
    return out


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """The two tiny pipelines saved as local diffusers folders (what --pretrained_model_name_or_path gets)."""
    out = {}
    for mt in L.MODEL_TYPES:
        d = tmp_path_factory.mktemp(mt)
        builders.tiny_pipeline(mt).save_pretrained(d)
        out[mt] = d
    return out


# ---------------------------------------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------------------------------------
def test_flow_matching_loss_is_the_rectified_flow_objective(monkeypatch):
    comp = L.components_from_pipeline(builders.tiny_pipeline("flux"))
    x = torch.randn(2, 4, 8, 12)
    e = torch.randn(2, 4, 8, 12)
    idx = torch.tensor([100, 900])
    seen = {}

    def fake_predict(comp_, transformer, noisy, timesteps, cond, guidance_scale):
        seen["noisy"], seen["timesteps"] = noisy, timesteps
        return torch.zeros_like(noisy)

    monkeypatch.setattr("logicval_hf.training.lora.predict", fake_predict)  # the module, not the lazy handle
    loss = L.flow_matching_loss(comp, comp.transformer, x, {}, e, idx)
    s = comp.scheduler.sigmas[idx].view(-1, 1, 1, 1)
    assert torch.allclose(seen["noisy"], (1 - s) * x + s * e)
    assert torch.equal(seen["timesteps"], comp.scheduler.timesteps[idx])
    assert torch.allclose(loss, ((e - x) ** 2).mean())  # target = noise - latents, uniform weighting
    per = L.flow_matching_loss(comp, comp.transformer, x, {}, e, idx, reduce=False)
    assert per.shape == (2,)
    # timestep indices cover the training schedule and are reproducible from a generator
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = L.sample_timestep_indices(comp.scheduler, 64, g1)
    assert torch.equal(a, L.sample_timestep_indices(comp.scheduler, 64, g2))
    assert int(a.min()) >= 0 and int(a.max()) < len(comp.scheduler.timesteps)


def test_load_image_covers_and_crops(tmp_path):
    from PIL import Image

    Image.new("RGB", (480, 320), (255, 0, 0)).save(tmp_path / "a.png")
    t = L.load_image(tmp_path / "a.png", 1024, 688)
    assert t.shape == (3, 688, 1024)
    assert torch.allclose(t[0], torch.ones_like(t[0])) and float(t[1].max()) == -1.0


# ---------------------------------------------------------------------------------------------------------
# Save / reload
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.slow  # the inner loop keeps one training run (flux)
@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_lora_round_trip_through_load_lora_weights(model_type, tiny_data, tmp_path):
    pipe = builders.tiny_pipeline(model_type)
    comp = L.components_from_pipeline(pipe)
    config = L.add_lora(comp.transformer, rank=4, alpha=8)
    assert all(p.dtype == torch.float32 for p in L.lora_parameters(comp.transformer))
    opt = torch.optim.AdamW(L.lora_parameters(comp.transformer), lr=1e-2)
    rows = [json.loads(line) for line in (tiny_data / "batch_000.jsonl").read_text().splitlines()][:3]
    gen = torch.Generator().manual_seed(0)
    losses = []
    for row in rows:
        z = L.encode_images(comp, L.load_image(row["image"], W, H).unsqueeze(0), generator=gen)
        cond = L.encode_prompts(comp, [row["prompt"]], 48)
        loss = L.flow_matching_loss(comp, comp.transformer, z, cond, torch.randn(z.shape, generator=gen),
                                    L.sample_timestep_indices(comp.scheduler, 1, gen))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    assert all(math.isfinite(v) for v in losses) and len(set(losses)) == len(losses)

    out = L.save_lora(tmp_path / "lora", comp.transformer, model_type)
    weights = out / L.LORA_WEIGHT_NAME
    with lazy("safetensors").safe_open(str(weights), "pt") as f:
        keys = list(f.keys())
        meta = json.loads(f.metadata()["lora_adapter_metadata"])
    assert keys and all(k.startswith("transformer.") and (".lora_A." in k or ".lora_B." in k) for k in keys)
    assert not any("base_model.model" in k or ".default." in k for k in keys)
    assert {k.split(".attn.")[1].rsplit(".lora_", 1)[0] for k in keys if ".attn." in k} <= set(L.TARGET_MODULES)
    # diffusers stores the LoraConfig per component ("transformer.<field>")
    assert meta["transformer.r"] == 4 and meta["transformer.lora_alpha"] == 8
    assert set(meta["transformer.target_modules"]) == set(config.target_modules)

    fresh = builders.tiny_pipeline(model_type)  # same seed -> same base weights
    fresh.load_lora_weights(str(out))
    cfg = next(iter(fresh.transformer.peft_config.values()))
    assert cfg.r == 4 and cfg.lora_alpha == 8  # alpha restored from the metadata, not defaulted to r
    z = torch.randn(1, 4, H // comp.vae_scale_factor, W // comp.vae_scale_factor, generator=gen)
    cond = L.encode_prompts(comp, [rows[0]["prompt"]], 48)
    with torch.no_grad():
        a = L.predict(comp, comp.transformer, z, torch.tensor([500]), cond)
        b = L.predict(L.components_from_pipeline(fresh), fresh.transformer, z, torch.tensor([500]), cond)
    assert torch.equal(a, b)
    kw = {"guidance_scale": 3.5} if model_type == "flux" else {"negative_prompt": " ", "true_cfg_scale": 4.0}
    images = []
    for p in (pipe, fresh):
        p.set_progress_bar_config(disable=True)
        images.append(p("There are 3 objects in the scene.", height=32, width=32, num_inference_steps=2,
                        max_sequence_length=48, generator=torch.Generator().manual_seed(1), output_type="np",
                        **kw).images[0])
    assert (images[0] == images[1]).all()


# ---------------------------------------------------------------------------------------------------------
# The training script
# ---------------------------------------------------------------------------------------------------------
# the inner loop trains the first family only
@pytest.mark.parametrize("model_type", [pytest.param(m, marks=() if i == 0 else pytest.mark.slow)
                                        for i, m in enumerate(MODEL_TYPES)])
def test_train_script_trains_selects_and_saves(model_type, tiny_data, tiny_models, tmp_path):
    tl = _train_module()
    out = tmp_path / "run"
    summary = tl.main(["--pretrained_model_name_or_path", str(tiny_models[model_type]), "--data_dir", str(tiny_data),
                       "--output_dir", str(out), "--steps_per_batch", "2", "--heldout_every", "1",
                       "--checkpointing_steps", "1", *TRAIN_ARGS])
    losses = summary["train_losses"]
    assert len(losses) == 4 and all(math.isfinite(v) for v in losses) and len(set(losses)) > 1
    sel = json.loads((out / "selection.json").read_text())
    assert sel["model_type"] == model_type and sel["heldout_pairs"] == 9
    hist = sel["history"]
    assert [h["global_step"] for h in hist] == [1, 2, 3, 4] and [h["batch"] for h in hist] == [0, 0, 1, 1]
    vals = [h["heldout_loss"] for h in hist]
    assert all(math.isfinite(v) for v in vals) and len(set(vals)) > 1  # the LoRA moves the held-out loss
    best = min(range(len(vals)), key=lambda i: vals[i])  # lowest, first on ties
    assert sel["best"]["global_step"] == hist[best]["global_step"]
    assert set(sel["best"]["per_class"]) == {f"C{i}" for i in range(1, 10)}
    info = json.loads((out / "best" / "lora_info.json").read_text())
    assert info["global_step"] == sel["best"]["global_step"]
    ckpt = out / f"checkpoint-{sel['best']['global_step']}" / "lora" / L.LORA_WEIGHT_NAME
    load = lazy("safetensors.torch").load_file
    best_w, ckpt_w = load(out / "best" / L.LORA_WEIGHT_NAME), load(ckpt)
    assert best_w.keys() == ckpt_w.keys() and all(torch.equal(best_w[k], ckpt_w[k]) for k in best_w)
    for d in ("best", "last", "batch-0", "batch-1"):
        assert (out / d / L.LORA_WEIGHT_NAME).is_file()
    log = [json.loads(line) for line in (out / "losses.jsonl").read_text().splitlines()]
    assert sum(r["event"] == "train" for r in log) == 4 and sum(r["event"] == "heldout" for r in log) == 4

    # reloading the selected LoRA with load_lora_weights reproduces its recorded held-out loss
    pipe = L.pipeline_class(model_type).from_pretrained(str(tiny_models[model_type]))
    pipe.load_lora_weights(str(out / "best"))
    comp = L.components_from_pipeline(pipe)
    rows = [json.loads(line) for line in (tiny_data / "heldout.jsonl").read_text().splitlines()]
    held = L.prepare_heldout(comp, rows, W, H, seed=42, max_sequence_length=48)
    again = L.heldout_loss(comp, pipe.transformer, held)["loss"]
    assert again == pytest.approx(sel["best"]["heldout_loss"], rel=1e-5, abs=1e-6)


def test_the_script_is_a_shell_over_the_package():
    """lora_training/train_lora.py keeps no loop of its own."""
    shell, tl = _shell_module(), _train_module()
    assert shell.main is tl.main and shell.parse_args is tl.parse_args
    code = (ROOT / "lora_training" / "train_lora.py").read_text(encoding="utf-8")
    assert "def " not in code and "for " not in code


def test_a_bad_training_image_stops_the_run_before_the_model_loads(tiny_data, tmp_path):
    """One line naming the file (not a data-loader traceback mid-run), before any model is loaded: the model
    path does not even exist."""
    from helpers import png_header

    data = tmp_path / "data"
    data.mkdir()
    for f in tiny_data.iterdir():
        (data / f.name).write_bytes(f.read_bytes())
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_header(100_000, 100_000))
    rows = [json.loads(line) for line in (data / "heldout.jsonl").read_text().splitlines()]
    rows[0]["image"] = str(bomb)
    (data / "heldout.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SystemExit) as e:
        _train_module().main(["--pretrained_model_name_or_path", str(tmp_path / "no-model"), "--model_type", "flux",
                              "--data_dir",
                              str(data), "--output_dir", str(tmp_path / "run"), *TRAIN_ARGS])
    msg = str(e.value.code)
    assert msg.startswith(f"train_lora: error: training image '{bomb}': image of 10000 megapixels exceeds")
    assert "\n" not in msg


@pytest.mark.slow  # two training runs
def test_resume_gives_the_same_run(tiny_data, tiny_models, tmp_path):
    tl = _train_module()
    common = ["--pretrained_model_name_or_path", str(tiny_models["flux"]), "--data_dir", str(tiny_data),
              "--steps_per_batch", "2", "--heldout_every", "1", "--checkpointing_steps", "1", *TRAIN_ARGS]
    full = tl.main([*common, "--output_dir", str(tmp_path / "a")])
    part = tl.main([*common, "--output_dir", str(tmp_path / "b"), "--max_train_steps", "3"])
    assert part["global_step"] == 3 and C.latest_checkpoint(tmp_path / "b").name == "checkpoint-3"
    rest = tl.main([*common, "--output_dir", str(tmp_path / "b"), "--resume_from_checkpoint", "latest"])
    assert rest["global_step"] == 4 and rest["train_losses"] == full["train_losses"][3:]
    wa = lazy("safetensors.torch").load_file(tmp_path / "a" / "last" / L.LORA_WEIGHT_NAME)
    wb = lazy("safetensors.torch").load_file(tmp_path / "b" / "last" / L.LORA_WEIGHT_NAME)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    ha = json.loads((tmp_path / "a" / "selection.json").read_text())
    hb = json.loads((tmp_path / "b" / "selection.json").read_text())
    assert [(h["global_step"], h["heldout_loss"]) for h in ha["history"]] == \
           [(h["global_step"], h["heldout_loss"]) for h in hb["history"]]
    assert ha["best"]["global_step"] == hb["best"]["global_step"]


# ---------------------------------------------------------------------------------------------------------
# Selection bookkeeping
# ---------------------------------------------------------------------------------------------------------
def test_selection_tracker(tmp_path):
    t = C.SelectionTracker(tmp_path / "selection.json", {"model_type": "flux"})
    assert t.update({"global_step": 50, "batch": 0, "heldout_loss": 0.5})
    assert not t.update({"global_step": 100, "batch": 0, "heldout_loss": 0.5})  # a tie keeps the earlier one
    assert t.update({"global_step": 150, "batch": 1, "heldout_loss": 0.3})
    assert not t.update({"global_step": 200, "batch": 1, "heldout_loss": float("nan")})  # never selected
    assert not t.update({"global_step": 250, "batch": 2, "heldout_loss": 0.4})
    assert t.best["global_step"] == 150
    t.save()
    back = C.SelectionTracker.load(tmp_path / "selection.json")
    assert back.best == t.best and len(back.history) == 5 and back.info == {"model_type": "flux"}
    assert not list(tmp_path.glob(".*tmp"))  # atomic write leaves no temporary file


def test_checkpoint_helpers(tmp_path):
    for step in (5, 10, 15):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-20").mkdir()  # incomplete: no trainer_state.json
    assert C.latest_checkpoint(tmp_path).name == "checkpoint-15"
    gone = C.prune_checkpoints(tmp_path, 2)
    assert [p.name for p in gone] == ["checkpoint-5"] and C.latest_checkpoint(tmp_path).name == "checkpoint-15"
    assert L.detect_model_type("black-forest-labs/FLUX.1-dev") == "flux"
    assert L.detect_model_type("Qwen/Qwen-Image") == "qwen-image"
    with pytest.raises(ValueError):
        L.detect_model_type("some/other-model")
