"""The text-to-image model families of the diffusers harness and the LoRA trainer, declared as data.

One frozen `ModelFamily` per family, kept in the `FAMILIES` registry (`logicval_hf.common.registry`):

* ``flux`` — FLUX.1-dev (``FluxPipeline``): 28 steps, distilled guidance 3.5 (paper, Appendix C); CLIP +
  T5 prompts (512 tokens); latents ``(z - shift) * scale``; a guidance embedding that gets the guidance
  scale in training too.
* ``qwen-image`` — Qwen-Image (``QwenImagePipeline``): 50 steps, true-CFG 4.0 with the negative prompt
  ``" "``; Qwen2.5-VL prompts (1024 tokens); a one-frame video VAE, latents ``(z - mean) / std``; no
  guidance embedding.

Everything `logicval_hf.generation.t2i`, `logicval_hf.training.lora`, ``logicval generate --model-type`` and
``lora_training/train_lora.py --model_type`` used to branch on lives here: the diffusers class names, how a
pipeline / local folder / hub id is recognised, the generation defaults, the prompt length, the text
encoders, the VAE's scale factor and latent normalisation, the guidance embedding, the LoRA key prefix, and
two small callables for the steps that are genuinely different (prompt encoding, the transformer call). Adding
a family means one more `ModelFamily(...)` registered in `FAMILIES` (and a tiny random builder in
``tests/tiny_models.py`` so the tests cover it).

Importing this module is cheap: no torch, no diffusers (the callables import them when called).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from logicval_hf.common.registry import Registry

__all__ = [
    "FAMILIES", "PEFT_PREFIX", "ModelFamily", "detect_model_type", "get_family", "mean_and_std",
    "pipeline_class", "shift_and_scale",
]


#: the key prefix of a PEFT-wrapped model's state dict (not part of the diffusers LoRA format)
PEFT_PREFIX = "base_model.model."


# ---------------------------------------------------------------------------------------------------------
# Latent normalisation (VAE latents -> what the transformer is trained on)
# ---------------------------------------------------------------------------------------------------------
def shift_and_scale(vae: Any, z: Any) -> Any:
    """FLUX: ``(z - shift_factor) * scaling_factor`` from the VAE config."""
    return (z - vae.config.shift_factor) * vae.config.scaling_factor


def mean_and_std(vae: Any, z: Any) -> Any:
    """Qwen-Image: ``(z - latents_mean) / latents_std`` per latent channel (channel axis 1)."""
    import torch

    zc = vae.config.z_dim
    shape = (1, zc) + (1,) * (z.dim() - 2)
    mean = torch.tensor(vae.config.latents_mean, device=z.device, dtype=z.dtype).view(shape)
    std = torch.tensor(vae.config.latents_std, device=z.device, dtype=z.dtype).view(shape)
    return (z - mean) / std


# ---------------------------------------------------------------------------------------------------------
# FLUX.1-dev
# ---------------------------------------------------------------------------------------------------------
def _flux_vae_scale_factor(vae: Any) -> int:
    return 2 ** (len(vae.config.block_out_channels) - 1)


def _flux_encode_prompts(pipe: Any, prompts: list[str], device: Any, max_sequence_length: int) -> dict[str, Any]:
    """CLIP (pooled) + T5 (sequence) embeddings; ``prompt_2 = prompt`` as the pipeline does."""
    embeds, pooled, text_ids = pipe.encode_prompt(prompt=prompts, prompt_2=prompts, device=device,
                                                  max_sequence_length=max_sequence_length)
    return {"prompt_embeds": embeds, "pooled_prompt_embeds": pooled, "text_ids": text_ids}


def _flux_denoise(pipeline_cls: Any, transformer: Any, packed: Any, timestep: Any, guidance: Any,
                  cond: Mapping[str, Any], batch: int, height: int, width: int, dtype: Any) -> Any:
    """FLUX transformer call on packed latents (``height x width`` latent patches of 2x2)."""
    img_ids = pipeline_cls._prepare_latent_image_ids(batch, height, width, packed.device, dtype)
    return transformer(hidden_states=packed, timestep=timestep, guidance=guidance,
                       pooled_projections=cond["pooled_prompt_embeds"].to(dtype),
                       encoder_hidden_states=cond["prompt_embeds"].to(dtype),
                       txt_ids=cond["text_ids"], img_ids=img_ids, return_dict=False)[0]


# ---------------------------------------------------------------------------------------------------------
# Qwen-Image
# ---------------------------------------------------------------------------------------------------------
def _qwen_vae_scale_factor(vae: Any) -> int:
    return 2 ** len(vae.temperal_downsample)


def _qwen_encode_prompts(pipe: Any, prompts: list[str], device: Any, max_sequence_length: int) -> dict[str, Any]:
    """Qwen2.5-VL embeddings and their attention mask (None when nothing is padded)."""
    embeds, mask = pipe.encode_prompt(prompt=prompts, device=device, max_sequence_length=max_sequence_length)
    return {"prompt_embeds": embeds, "prompt_embeds_mask": mask}


def _qwen_denoise(pipeline_cls: Any, transformer: Any, packed: Any, timestep: Any, guidance: Any,
                  cond: Mapping[str, Any], batch: int, height: int, width: int, dtype: Any) -> Any:
    """Qwen-Image transformer call on packed latents (one frame of ``height x width`` 2x2 patches)."""
    return transformer(hidden_states=packed, timestep=timestep, guidance=guidance,
                       encoder_hidden_states_mask=cond.get("prompt_embeds_mask"),
                       encoder_hidden_states=cond["prompt_embeds"].to(dtype),
                       img_shapes=[[(1, height, width)]] * batch, return_dict=False)[0]


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per family
class ModelFamily:
    """One T2I model family: what the harness and the LoRA trainer need to know about it.

    Recognition: a pipeline object whose class name starts with ``class_prefix``; a local folder whose
    ``model_index.json`` names ``pipeline_class_name``; otherwise a hub id / path containing one of
    ``name_substrings`` (case-insensitive; families are tried in ``detect_priority`` order, lowest first).

    Generation: ``generation_defaults`` are the pipeline call's keyword arguments (paper, Appendix C); a
    user override (steps, guidance, true-CFG, negative prompt) applies to a setting only if the family has
    a default for it (FLUX ignores ``true_cfg_scale``, Qwen-Image ignores ``guidance_scale``).

    Training: ``text_components`` are the pipeline's tokenizers and text encoders (``text_encoders`` the
    latter), ``max_sequence_length`` the prompt tokens kept; ``video_vae``: the VAE takes and returns
    ``(B, C, frames, H, W)`` (one frame is added and removed); ``normalise_latents(vae, z)`` maps VAE
    latents to the transformer's space; ``guidance_embeds``: a guidance-distilled transformer gets the
    training guidance scale in its guidance embedding (when its config has one); ``lora_strip_prefix`` is
    removed from PEFT state-dict keys before saving in the diffusers format.

    The callables: ``encode_prompts(text_pipeline, prompts, device, max_sequence_length) -> cond``,
    ``denoise(pipeline_cls,
    transformer, packed, timestep, guidance, cond, batch, h, w, dtype) -> packed prediction`` (``h x w`` in
    2x2 latent patches) and ``vae_scale_factor(vae) -> int``.
    """

    name: str
    label: str
    pipeline_class_name: str
    transformer_class_name: str
    vae_class_name: str
    class_prefix: str
    name_substrings: tuple[str, ...]
    detect_priority: int
    generation_defaults: Mapping[str, Any]
    max_sequence_length: int
    text_encoders: tuple[str, ...]
    text_components: tuple[str, ...]
    video_vae: bool
    guidance_embeds: bool
    normalise_latents: Callable[[Any, Any], Any]
    vae_scale_factor: Callable[[Any], int]
    encode_prompts: Callable[..., dict[str, Any]]
    denoise: Callable[..., Any]
    lora_strip_prefix: str | None = PEFT_PREFIX

    def __post_init__(self) -> None:
        object.__setattr__(self, "generation_defaults", MappingProxyType(dict(self.generation_defaults)))
        object.__setattr__(self, "name_substrings", tuple(s.lower() for s in self.name_substrings))

    def pipeline_class(self) -> Any:
        """The diffusers pipeline class (it also carries ``save_lora_weights`` / ``lora_state_dict``)."""
        import diffusers

        return getattr(diffusers, self.pipeline_class_name)

    def transformer_class(self) -> Any:
        import diffusers

        return getattr(diffusers, self.transformer_class_name)

    def vae_class(self) -> Any:
        import diffusers

        return getattr(diffusers, self.vae_class_name)

    def generation_settings(self, **overrides: Any) -> dict[str, Any]:
        """The defaults with the overrides that apply to this family (None = keep the default)."""
        settings = dict(self.generation_defaults)
        for key, value in overrides.items():
            if value is not None and key in settings:
                settings[key] = value
        return settings

    def matches_name(self, name: str) -> bool:
        low = str(name).lower()
        return any(s in low for s in self.name_substrings)


FLUX = ModelFamily(
    name="flux", label="FLUX.1-dev",
    pipeline_class_name="FluxPipeline", transformer_class_name="FluxTransformer2DModel",
    vae_class_name="AutoencoderKL",
    class_prefix="Flux", name_substrings=("flux",), detect_priority=1,
    generation_defaults={"num_inference_steps": 28, "guidance_scale": 3.5},
    max_sequence_length=512,
    text_encoders=("text_encoder", "text_encoder_2"),
    text_components=("text_encoder", "tokenizer", "text_encoder_2", "tokenizer_2"),
    video_vae=False, guidance_embeds=True,
    normalise_latents=shift_and_scale, vae_scale_factor=_flux_vae_scale_factor,
    encode_prompts=_flux_encode_prompts, denoise=_flux_denoise,
)

QWEN_IMAGE = ModelFamily(
    name="qwen-image", label="Qwen-Image",
    pipeline_class_name="QwenImagePipeline", transformer_class_name="QwenImageTransformer2DModel",
    vae_class_name="AutoencoderKLQwenImage",
    class_prefix="QwenImage", name_substrings=("qwen",), detect_priority=0,
    generation_defaults={"num_inference_steps": 50, "true_cfg_scale": 4.0, "negative_prompt": " "},
    max_sequence_length=1024,
    text_encoders=("text_encoder",),
    text_components=("text_encoder", "tokenizer"),
    video_vae=True, guidance_embeds=False,
    normalise_latents=mean_and_std, vae_scale_factor=_qwen_vae_scale_factor,
    encode_prompts=_qwen_encode_prompts, denoise=_qwen_denoise,
)

#: The T2I model families by name (``flux``, ``qwen-image``).
FAMILIES: Registry[ModelFamily] = Registry("T2I model family", {FLUX.name: FLUX, QWEN_IMAGE.name: QWEN_IMAGE})


def get_family(name: str) -> ModelFamily:
    """The family registered as ``name`` (an `UnknownNameError`, a ValueError, suggests close names)."""
    return FAMILIES.get(name)


def pipeline_class(model_type: str) -> Any:
    """The diffusers pipeline class of a model type (it also carries ``save_lora_weights``)."""
    return get_family(model_type).pipeline_class()


def _by_priority() -> list[ModelFamily]:
    return sorted((FAMILIES.get(n) for n in FAMILIES.names()), key=lambda f: (f.detect_priority, f.name))


def detect_model_type(model: Any) -> str:
    """The family name of a pipeline object, a local folder's ``model_index.json`` or a hub id's name.

    Raises:
        ValueError: an unsupported pipeline (class) or a name that matches no family.
    """
    families = _by_priority()
    if hasattr(model, "transformer") and hasattr(model, "vae"):
        name = type(model).__name__
        for fam in families:
            if name.startswith(fam.class_prefix):
                return fam.name
        raise ValueError(f"unsupported pipeline {name}")
    index = Path(str(model)) / "model_index.json"
    if index.is_file():
        name = json.loads(index.read_text(encoding="utf-8")).get("_class_name", "")
        for fam in families:
            if name == fam.pipeline_class_name:
                return fam.name
        raise ValueError(f"{index}: unsupported pipeline class {name!r}; pass model_type explicitly")
    for fam in families:
        if fam.matches_name(str(model)):
            return fam.name
    known = " or ".join(repr(n) for n in FAMILIES.names())
    raise ValueError(f"cannot tell the model type of {model!r}; pass model_type ({known})")
