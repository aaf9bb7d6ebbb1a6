"""The table of T2I model families (`logicval_hf.generation.families`): every family resolves, unknown names
get the registry's did-you-mean error, a pipeline / folder / hub id is recognised, the generation settings
follow the table, and a tiny random FLUX and Qwen-Image pipeline each run one LoRA step and save the same
diffusers LoRA keys as before the table existed. No network, no model download."""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import pytest

from logicval_hf.common.registry import UnknownNameError
from logicval_hf.generation import families as F
from logicval_hf.generation.families import FAMILIES, ModelFamily, detect_model_type, get_family

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------
def test_every_family_resolves():
    assert FAMILIES.names() == ["flux", "qwen-image"]
    for name in FAMILIES.names():
        fam = get_family(name)
        assert isinstance(fam, ModelFamily) and fam.name == name and FAMILIES[name] is fam
        assert "num_inference_steps" in fam.generation_defaults and fam.max_sequence_length > 0
        assert fam.text_encoders and set(fam.text_encoders) <= set(fam.text_components)
        assert all(callable(f) for f in (fam.encode_prompts, fam.denoise, fam.normalise_latents,
                                         fam.vae_scale_factor))
        with pytest.raises(TypeError):  # read-only table
            fam.generation_defaults["num_inference_steps"] = 1
        with pytest.raises(AttributeError):
            fam.max_sequence_length = 1
    # the paper's settings (Appendix C) and the pipelines' prompt lengths, as before the table
    assert dict(get_family("flux").generation_defaults) == {"num_inference_steps": 28, "guidance_scale": 3.5}
    assert dict(get_family("qwen-image").generation_defaults) == {"num_inference_steps": 50, "true_cfg_scale": 4.0,
                                                                  "negative_prompt": " "}
    assert (get_family("flux").max_sequence_length, get_family("qwen-image").max_sequence_length) == (512, 1024)


def test_the_public_names_read_the_table():
    from logicval_hf.generation import t2i

    assert {n: dict(get_family(n).generation_defaults) for n in FAMILIES.names()} == t2i.DIFFUSERS_SETTINGS
    pytest.importorskip("torch")
    from logicval_hf.training import lora as L

    assert L.MODEL_TYPES == ("flux", "qwen-image") == tuple(FAMILIES.names())
    assert L.MAX_SEQUENCE_LENGTH == {"flux": 512, "qwen-image": 1024}
    assert L.detect_model_type is detect_model_type and L.pipeline_class is F.pipeline_class


@pytest.mark.slow  # resolving both pipelines imports most of diffusers and transformers (~6 s)
def test_diffusers_classes_resolve():
    diffusers = pytest.importorskip("diffusers")
    for name in FAMILIES.names():
        fam = get_family(name)
        assert fam.pipeline_class() is getattr(diffusers, fam.pipeline_class_name) is F.pipeline_class(name)
        assert fam.pipeline_class().__name__.startswith(fam.class_prefix)
        assert fam.transformer_class().__name__ == fam.transformer_class_name
        assert fam.vae_class().__name__ == fam.vae_class_name


def test_unknown_family_names_suggest_close_ones():
    with pytest.raises(UnknownNameError, match=r"did you mean 'qwen-image'"):
        get_family("qwen_image")
    with pytest.raises(ValueError, match=r"did you mean 'flux'.*known: flux, qwen-image"):
        F.pipeline_class("flux1")
    with pytest.raises(KeyError):  # also a KeyError, for mapping-style callers
        FAMILIES["sdxl"]
    # the harness fails on the name before touching a model
    from logicval_hf.generation import t2i

    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="unknown T2I model family 'fluxx'"):
        t2i.DiffusersGenerator(pipeline=object(), model_type="fluxx")


def test_model_type_choices_come_from_the_table():
    from logicval_hf.cli import generate as generate_cli

    parser = argparse.ArgumentParser()
    generate_cli.add_subcommands(parser.add_subparsers())
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["generate"]
    action = next(a for a in sub._actions if "--model-type" in a.option_strings)
    assert list(action.choices) == FAMILIES.names()
    steps = next(a for a in sub._actions if "--steps" in a.option_strings)
    assert "FLUX.1-dev 28" in steps.help and "Qwen-Image 50" in steps.help


def test_no_model_type_chains_left():
    """The code that used to branch on the family name reads the table instead."""
    files = ["logicval_hf/training/lora.py", "logicval_hf/generation/t2i.py", "logicval_hf/cli/generate.py",
             "lora_training/train_lora.py", "logicval_hf/training/train_lora.py", "lora_training/gpu_check.py"]
    chain = re.compile(r"""(==|!=|\bin)\s*\(?\s*["'](flux|qwen-image)["']""")
    for f in files:
        text = (ROOT / f).read_text(encoding="utf-8")
        assert not chain.search(text), f
        assert '("flux", "qwen-image")' not in text, f


# ---------------------------------------------------------------------------------------------------------
# Recognising a family
# ---------------------------------------------------------------------------------------------------------
def _fake_pipeline(class_name: str):
    return type(class_name, (), {"transformer": None, "vae": None})()


@pytest.mark.parametrize("class_name, expected", [
    ("FluxPipeline", "flux"), ("FluxImg2ImgPipeline", "flux"), ("QwenImagePipeline", "qwen-image"),
    ("QwenImageEditPipeline", "qwen-image")])
def test_detect_on_pipeline_class_names(class_name, expected):
    assert detect_model_type(_fake_pipeline(class_name)) == expected


def test_detect_rejects_other_pipelines():
    with pytest.raises(ValueError, match="unsupported pipeline StableDiffusionPipeline"):
        detect_model_type(_fake_pipeline("StableDiffusionPipeline"))


@pytest.mark.parametrize("hub_id, expected", [
    ("black-forest-labs/FLUX.1-dev", "flux"), ("Qwen/Qwen-Image", "qwen-image"), ("my-org/flux-clevr-lora", "flux"),
    ("/models/QWEN", "qwen-image"),
    ("someone/qwen-vs-flux", "qwen-image")])  # both names: Qwen first (detect_priority), as before
def test_detect_on_hub_ids(hub_id, expected):
    assert detect_model_type(hub_id) == expected


def test_detect_unknown_hub_id():
    with pytest.raises(ValueError, match=r"cannot tell the model type of 'some/other-model'; pass model_type "
                                         r"\('flux' or 'qwen-image'\)"):
        detect_model_type("some/other-model")


def test_detect_reads_model_index_json(tmp_path):
    # the index wins over the folder's name
    for folder_name, class_name, expected in (("qwen-named", "FluxPipeline", "flux"),
                                              ("flux-named", "QwenImagePipeline", "qwen-image")):
        folder = tmp_path / folder_name
        folder.mkdir()
        (folder / "model_index.json").write_text(json.dumps({"_class_name": class_name}))
        assert detect_model_type(folder) == expected == detect_model_type(str(folder))
    sdxl = tmp_path / "flux-sdxl"
    sdxl.mkdir()
    (sdxl / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionXLPipeline"}))
    with pytest.raises(ValueError, match="unsupported pipeline class 'StableDiffusionXLPipeline'"):
        detect_model_type(sdxl)


# ---------------------------------------------------------------------------------------------------------
# Generation settings
# ---------------------------------------------------------------------------------------------------------
def test_generation_overrides_apply_only_where_the_family_has_the_setting():
    over = {"num_inference_steps": 4, "guidance_scale": 2.0, "true_cfg_scale": 3.0, "negative_prompt": "blurry"}
    assert get_family("flux").generation_settings(**over) == {"num_inference_steps": 4, "guidance_scale": 2.0}
    assert get_family("qwen-image").generation_settings(**over) == {"num_inference_steps": 4, "true_cfg_scale": 3.0,
                                                                    "negative_prompt": "blurry"}
    assert get_family("flux").generation_settings(guidance_scale=None) == {"num_inference_steps": 28,
                                                                           "guidance_scale": 3.5}


# ---------------------------------------------------------------------------------------------------------
# One LoRA step per family on a tiny random pipeline
# ---------------------------------------------------------------------------------------------------------
_ATTN = ("to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out")


def _keys(blocks: str, count: int, modules=_ATTN) -> set[str]:
    return {f"transformer.{blocks}.{i}.attn.{m}.lora_{ab}.weight" for i in range(count) for m in modules
            for ab in "AB"}


#: the diffusers LoRA keys the tiny pipelines saved before the family table (1 double + 1 single FLUX block,
#: 2 Qwen-Image blocks; FLUX's single blocks have no to_out / text-stream projections)
SAVED_KEYS = {
    "flux": _keys("transformer_blocks", 1) | _keys("single_transformer_blocks", 1, ("to_q", "to_k", "to_v")),
    "qwen-image": _keys("transformer_blocks", 2),
}


@pytest.fixture
def one_thread():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: intra-op threads only add hand-off cost
    yield torch
    torch.set_num_threads(before)


@pytest.mark.slow  # ~6 s (most of diffusers imported); the LoRA script's test trains a tiny flux in the inner loop
@pytest.mark.parametrize("model_type", ["flux", "qwen-image"])
def test_tiny_pipeline_one_lora_step(model_type, one_thread, tmp_path):
    torch = one_thread
    pytest.importorskip("diffusers")
    pytest.importorskip("peft")
    from safetensors import safe_open
    from tiny_models import BUILDERS, tiny_pipeline

    from logicval_hf.generation import t2i
    from logicval_hf.training import lora as L

    assert set(BUILDERS) == set(FAMILIES.names())  # every family has a tiny builder for the tests
    fam = get_family(model_type)
    pipe = tiny_pipeline(model_type)
    assert detect_model_type(pipe) == model_type
    gen = t2i.DiffusersGenerator(pipeline=pipe, guidance_scale=2.0, true_cfg_scale=3.0, negative_prompt="x")
    assert gen.model_type == model_type
    assert gen.settings == {**fam.generation_settings(guidance_scale=2.0, true_cfg_scale=3.0, negative_prompt="x"),
                            "width": 1024, "height": 688}

    comp = L.components_from_pipeline(pipe)
    assert comp.family is fam and comp.vae_scale_factor == {"flux": 2, "qwen-image": 4}[model_type]
    L.add_lora(comp.transformer, rank=4, alpha=8)
    params = L.lora_parameters(comp.transformer)
    before = [p.detach().clone() for p in params]
    opt = torch.optim.AdamW(params, lr=1e-2)
    g = torch.Generator().manual_seed(0)
    pixels = torch.rand(1, 3, 32, 48, generator=g) * 2 - 1
    z = L.encode_images(comp, pixels, generator=g)
    assert z.shape == (1, 4, 32 // comp.vae_scale_factor, 48 // comp.vae_scale_factor) and z.dtype == torch.float32
    cond = L.encode_prompts(comp, ["There are 3 objects in the scene."], 48)
    expected_cond = {"flux": {"prompt_embeds", "pooled_prompt_embeds", "text_ids"},
                     "qwen-image": {"prompt_embeds", "prompt_embeds_mask"}}[model_type]
    assert set(cond) == expected_cond
    loss = L.flow_matching_loss(comp, comp.transformer, z, cond, torch.randn(z.shape, generator=g),
                                L.sample_timestep_indices(comp.scheduler, 1, g))
    loss.backward()
    opt.step()
    assert math.isfinite(float(loss.detach()))
    assert any(not torch.equal(a, p.detach()) for a, p in zip(before, params, strict=False))  # the step moved the LoRA

    out = L.save_lora(tmp_path / "lora", comp.transformer, model_type)
    with safe_open(str(out / L.LORA_WEIGHT_NAME), "pt") as f:
        keys = set(f.keys())
        meta = json.loads(f.metadata()["lora_adapter_metadata"])
    assert keys == SAVED_KEYS[model_type]
    assert meta["transformer.r"] == 4 and meta["transformer.lora_alpha"] == 8
