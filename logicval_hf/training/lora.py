"""Reusable pieces of the LoRA fine-tuning of FLUX.1-dev and Qwen-Image on captioned CLEVR (paper, App. F).

`logicval_hf.training.train_lora` (run by ``lora_training/train_lora.py``) is the loop over these:

* **Models** — `load_components` (hub id or local folder; transformer, VAE, training noise scheduler and a
  text-only pipeline), `components_from_pipeline` (the same from an in-memory pipeline), `add_lora`
  (rank 16, alpha 16 on the attention projections ``TARGET_MODULES``). What differs between FLUX.1-dev and
  Qwen-Image (classes, text encoders, prompt length, latent normalisation, the transformer call, the
  guidance embedding) is read from the family table `logicval_hf.generation.families`; ``model_type`` is
  a family name there (`MODEL_TYPES`, `detect_model_type` and `pipeline_class` are re-exported from it).
  Tiny random-weight pipelines for tests are in ``tests/tiny_models.py``.
* **Loss** — the models' native rectified-flow (flow-matching) objective as in diffusers'
  ``train_dreambooth_lora_flux.py`` / ``train_dreambooth_lora_qwen_image.py``: latents ``x`` (VAE, shifted and
  scaled: FLUX ``(z - shift) * scale``, Qwen-Image ``(z - mean) / std``), noise ``e``, a timestep index drawn
  by `sample_timestep_indices` from the scheduler's 1,000 training sigmas (``weighting_scheme="none"``:
  uniform, the diffusers default), ``x_t = (1 - s) x + s e``, target ``e - x``, loss the (weighted) mean
  squared error of the transformer's prediction on the packed 2x2 latent patches (`flow_matching_loss`).
  FLUX.1-dev is guidance-distilled: its guidance embedding gets ``guidance_scale`` (3.5) in training.
* **Data** — `load_image` (resize to cover, centre-crop to ``width x height``, scale to [-1, 1]),
  `PairDataset`, `batch_order` (the seeded order of a batch's pairs).
* **Held-out loss** — `prepare_heldout` fixes, per held-out pair, the latent (the VAE posterior mean), the
  prompt embedding, the noise and the timestep (from ``seed``), so `heldout_loss` is a deterministic function
  of the LoRA weights and checkpoints are compared on exactly the same noise.
* **The adapter on disk** — `save_lora` (diffusers LoRA format, ``pytorch_lora_weights.safetensors`` with the
  adapter metadata, so ``pipe.load_lora_weights(dir)`` restores rank *and* alpha), `load_lora_into`. Which
  checkpoint the held-out loss selects, and resumable checkpoints, are `logicval_hf.training.lora_checkpoints`.

Requires the ``train`` extras (torch, diffusers, peft, transformers, accelerate); nothing here is imported
by ``import logicval_hf``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from logicval_hf.common.atomic import replace_dir
from logicval_hf.generation.families import (
    FAMILIES,
    PEFT_PREFIX,
    ModelFamily,
    detect_model_type,
    get_family,
    pipeline_class,
)

__all__ = [
    "MODEL_TYPES", "DEFAULT_RANK", "DEFAULT_ALPHA", "DEFAULT_LEARNING_RATE", "DEFAULT_TRAIN_BATCH_SIZE",
    "DEFAULT_WIDTH", "DEFAULT_HEIGHT", "DEFAULT_SEED", "DEFAULT_GUIDANCE_SCALE", "TARGET_MODULES",
    "LORA_WEIGHT_NAME", "Components", "HeldoutSet", "PairDataset", "add_lora", "batch_order",
    "components_from_pipeline", "detect_model_type", "encode_images", "encode_prompts", "flow_matching_loss",
    "heldout_loss", "load_components", "load_image", "load_lora_into", "lora_parameters", "lora_state_dict",
    "pipeline_class", "predict", "prepare_heldout", "sample_timestep_indices", "save_lora",
]

#: the family names of `logicval_hf.generation.families.FAMILIES` (at import time)
MODEL_TYPES = tuple(FAMILIES.names())
DEFAULT_RANK = 16
DEFAULT_ALPHA = 16
DEFAULT_LEARNING_RATE = 1e-4
DEFAULT_TRAIN_BATCH_SIZE = 1
DEFAULT_WIDTH = 1024
DEFAULT_HEIGHT = 688
DEFAULT_SEED = 42
#: FLUX.1-dev's distilled guidance value during training (diffusers' default; also the generation value)
DEFAULT_GUIDANCE_SCALE = 3.5
#: LoRA targets: the attention projections of the image and the text stream (both models use these names)
TARGET_MODULES = ("to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out")
#: prompt tokens kept by the text encoders (the pipelines' defaults), per family
MAX_SEQUENCE_LENGTH = {name: FAMILIES.get(name).max_sequence_length for name in FAMILIES.names()}
LORA_WEIGHT_NAME = "pytorch_lora_weights.safetensors"


# ---------------------------------------------------------------------------------------------------------
# Components
# ---------------------------------------------------------------------------------------------------------
#: a diffusers model of the family's classes (FluxTransformer2DModel, AutoencoderKL, ...), possibly wrapped by
#: accelerate or torch.compile. Typed Any rather than torch.nn.Module: mypy types a Module's unknown attributes
#: as Tensor | Module, and these models' own (.device, .dtype, .config, .encode, add_adapter) are neither.
DiffusersModel = Any


@dataclass
class Components:
    """What training needs: the transformer (gets the LoRA), the VAE, a fresh training noise scheduler and a
    text-only pipeline (tokenizers + text encoders) for ``encode_prompt``."""

    model_type: str
    transformer: DiffusersModel
    vae: DiffusersModel
    scheduler: Any
    text_pipeline: Any

    @property
    def family(self) -> ModelFamily:
        return get_family(self.model_type)

    @property
    def vae_scale_factor(self) -> int:
        return self.family.vae_scale_factor(self.vae)

    @property
    def patch_multiple(self) -> int:
        """Image sides must be multiples of this (VAE factor x 2x2 packing)."""
        return self.vae_scale_factor * 2


def _fresh_scheduler(scheduler: Any) -> Any:
    from diffusers import FlowMatchEulerDiscreteScheduler

    return FlowMatchEulerDiscreteScheduler.from_config(scheduler.config)


def load_components(
    model_type: str,
    pretrained: str | Path,
    weight_dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    revision: str | None = None,
    variant: str | None = None,
) -> Components:
    """Load the parts of a FLUX.1-dev / Qwen-Image pipeline (hub id or local folder) for LoRA training.

    ``model_type`` is a family name (`MODEL_TYPES`); its classes come from the family table."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    family = get_family(model_type)
    kw = {"revision": revision}
    scheduler = FlowMatchEulerDiscreteScheduler.from_pretrained(pretrained, subfolder="scheduler", **kw)
    transformer = family.transformer_class().from_pretrained(pretrained, subfolder="transformer", variant=variant,
                                                             dtype=weight_dtype, **kw)
    vae = family.vae_class().from_pretrained(pretrained, subfolder="vae", variant=variant, **kw)
    text_pipeline = family.pipeline_class().from_pretrained(
        pretrained, transformer=None, vae=None, scheduler=None, dtype=weight_dtype, **kw)
    for m in (transformer, vae, *_text_encoders(text_pipeline, family)):
        m.requires_grad_(False)
        m.eval()
    # the VAE stays in float32 unless the weights are half precision anyway (FLUX's VAE is stable in bf16)
    vae.to(device=device, dtype=weight_dtype if weight_dtype == torch.bfloat16 else torch.float32)
    transformer.to(device=device, dtype=weight_dtype)
    text_pipeline.to(device)
    return Components(model_type, transformer, vae, _fresh_scheduler(scheduler), text_pipeline)


def _text_encoders(pipe: Any, family: ModelFamily) -> list[torch.nn.Module]:
    return [m for m in (getattr(pipe, name, None) for name in family.text_encoders) if m is not None]


def components_from_pipeline(pipe: Any, model_type: str | None = None) -> Components:
    """`Components` sharing the modules of an in-memory pipeline (the scheduler is a fresh copy)."""
    model_type = model_type or detect_model_type(pipe)
    family = get_family(model_type)
    text = family.pipeline_class()(scheduler=None, vae=None, transformer=None,
                                   **{name: getattr(pipe, name) for name in family.text_components})
    for m in (pipe.transformer, pipe.vae, *_text_encoders(text, family)):
        m.requires_grad_(False)
    for m in (pipe.vae, *_text_encoders(text, family)):
        m.eval()
    return Components(model_type, pipe.transformer, pipe.vae, _fresh_scheduler(pipe.scheduler), text)


def add_lora(
    transformer: DiffusersModel,
    rank: int = DEFAULT_RANK,
    alpha: float = DEFAULT_ALPHA,
    target_modules: Sequence[str] = TARGET_MODULES,
    dropout: float = 0.0,
    init_lora_weights: str | bool = "gaussian",
) -> Any:
    """Add the trainable ``default`` LoRA adapter to the (frozen) transformer; returns the `LoraConfig`.

    The LoRA parameters are kept in float32 whatever the base weights' dtype.
    """
    from peft import LoraConfig

    # peft annotates lora_alpha as int and init_lora_weights as a Literal; it uses alpha / r and checks the
    # initialisation name itself, so a float alpha and a plain string are what it gets here (unused-ignore: a
    # later peft may widen its annotations)
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout,  # type: ignore[arg-type, unused-ignore]
                        init_lora_weights=init_lora_weights,  # type: ignore[arg-type, unused-ignore]
                        target_modules=list(target_modules))
    transformer.add_adapter(config)
    for p in transformer.parameters():
        if p.requires_grad:
            p.data = p.data.to(torch.float32)
    return config


# ---------------------------------------------------------------------------------------------------------
# Text, images, prediction
# ---------------------------------------------------------------------------------------------------------
@torch.no_grad()
def encode_prompts(comp: Components, prompts: Sequence[str], max_sequence_length: int | None = None,
                   device: str | torch.device | None = None) -> dict[str, torch.Tensor | None]:
    """Prompt embeddings as the pipeline computes them (the family's ``encode_prompts``; FLUX: ``prompt_2 =
    prompt`` for its T5)."""
    family = comp.family
    msl = max_sequence_length or family.max_sequence_length
    device = device or comp.transformer.device
    return family.encode_prompts(comp.text_pipeline, list(prompts), device, msl)


@torch.no_grad()
def encode_images(comp: Components, pixel_values: torch.Tensor, sample: bool = True,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Normalised VAE latents ``(B, C, h, w)`` of images in [-1, 1] (``sample=False``: the posterior mean).

    The family says how: a video VAE (Qwen-Image) gets one frame; FLUX ``(z - shift) * scale``, Qwen-Image
    ``(z - mean) / std``."""
    family = comp.family
    vae = comp.vae
    x = pixel_values.to(device=vae.device, dtype=vae.dtype)
    if family.video_vae:
        x = x.unsqueeze(2)  # (B, C, 1, H, W): one frame
    dist = vae.encode(x).latent_dist
    z = dist.sample(generator=generator) if sample else dist.mode()
    z = family.normalise_latents(vae, z)
    if family.video_vae:
        z = z.squeeze(2)
    return z.float()


def predict(comp: Components, transformer: DiffusersModel, noisy: torch.Tensor, timesteps: torch.Tensor,
            cond: Mapping[str, torch.Tensor | None], guidance_scale: float = DEFAULT_GUIDANCE_SCALE) -> torch.Tensor:
    """The transformer's velocity prediction for noisy latents ``(B, C, h, w)``, unpacked to the same shape.

    A guidance-distilled family (FLUX.1-dev) gets ``guidance_scale`` in its guidance embedding when the
    transformer has one; the transformer call itself is the family's ``denoise``."""
    family = comp.family
    cls = family.pipeline_class()
    b, c, h, w = noisy.shape
    dtype = next(p for p in transformer.parameters() if not p.requires_grad).dtype
    packed = cls._pack_latents(noisy, b, c, h, w).to(dtype)
    t = (timesteps.float() / 1000.0).to(noisy.device)
    sf = comp.vae_scale_factor
    guidance = None
    if family.guidance_embeds and transformer.config.guidance_embeds:
        guidance = torch.full((b,), float(guidance_scale), device=noisy.device)
    out = family.denoise(cls, transformer, packed, t, guidance, cond, b, h // 2, w // 2, dtype)
    pred = cls._unpack_latents(out, h * sf, w * sf, sf)
    return pred.squeeze(2) if family.video_vae else pred


# ---------------------------------------------------------------------------------------------------------
# Noise schedule and loss
# ---------------------------------------------------------------------------------------------------------
def sample_timestep_indices(
    scheduler: Any,
    batch_size: int,
    generator: torch.Generator | None = None,
    weighting_scheme: str = "none",
    logit_mean: float = 0.0,
    logit_std: float = 1.0,
    mode_scale: float = 1.29,
) -> torch.Tensor:
    """Indices into the scheduler's training ``timesteps``/``sigmas`` (diffusers' density sampling)."""
    from diffusers.training_utils import compute_density_for_timestep_sampling

    gen_device = generator.device if generator is not None else "cpu"
    u = compute_density_for_timestep_sampling(weighting_scheme=weighting_scheme, batch_size=batch_size,
                                              logit_mean=logit_mean, logit_std=logit_std, mode_scale=mode_scale,
                                              device=gen_device, generator=generator)
    n = len(scheduler.timesteps)
    return (u * n).long().clamp(0, n - 1).cpu()


def flow_matching_loss(
    comp: Components,
    transformer: torch.nn.Module,
    latents: torch.Tensor,
    cond: Mapping[str, torch.Tensor | None],
    noise: torch.Tensor,
    indices: torch.Tensor,
    weighting_scheme: str = "none",
    guidance_scale: float = DEFAULT_GUIDANCE_SCALE,
    reduce: bool = True,
) -> torch.Tensor:
    """Rectified-flow loss: ``x_t = (1 - s) x + s e``, target ``e - x``, weighted MSE of the prediction.

    ``reduce=False`` returns one loss per example.
    """
    from diffusers.training_utils import compute_loss_weighting_for_sd3

    sched = comp.scheduler
    sigmas = sched.sigmas[indices].to(device=latents.device, dtype=latents.dtype).view(-1, 1, 1, 1)
    timesteps = sched.timesteps[indices].to(latents.device)
    noisy = (1.0 - sigmas) * latents + sigmas * noise
    pred = predict(comp, transformer, noisy, timesteps, cond, guidance_scale)
    target = noise - latents
    weighting = compute_loss_weighting_for_sd3(weighting_scheme=weighting_scheme, sigmas=sigmas)
    per = torch.mean((weighting.float() * (pred.float() - target.float()) ** 2).reshape(latents.shape[0], -1), 1)
    return per.mean() if reduce else per


# ---------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------
def load_image(path: str | Path, width: int, height: int) -> torch.Tensor:
    """``(3, height, width)`` float tensor in [-1, 1]: resized to cover the target, centre-cropped.

    Raises:
        PerceptionError: not an image, corrupt, or over the pixel cap (named by its path).
    """
    from PIL import Image

    from logicval_hf.perception.images import open_checked

    with open_checked(path, f"training image {str(path)!r}") as opened:
        rgb = opened.convert("RGB")
        scale = max(width / rgb.width, height / rgb.height)
        size = (max(width, round(rgb.width * scale)), max(height, round(rgb.height * scale)))
        rgb = rgb.resize(size, Image.Resampling.BICUBIC)
        left, top = (rgb.width - width) // 2, (rgb.height - height) // 2
        rgb = rgb.crop((left, top, left + width, top + height))
        arr = np.asarray(rgb, dtype=np.float32) / 127.5 - 1.0
    return torch.from_numpy(arr).permute(2, 0, 1).contiguous()


def resolve_image(row: Mapping[str, Any], image_root: str | Path | None = None) -> Path:
    """The image file of a manifest row (``image``, or ``image_root / image_filename`` when given)."""
    if image_root is not None:
        return Path(image_root) / row["image_filename"]
    return Path(row["image"])


class PairDataset(torch.utils.data.Dataset):
    """(prompt, image) rows of a batch manifest, images loaded at ``width x height``."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], width: int, height: int,
                 image_root: str | Path | None = None):
        self.rows = list(rows)
        self.width, self.height = int(width), int(height)
        self.image_root = image_root

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        row = self.rows[i]
        return {"pixel_values": load_image(resolve_image(row, self.image_root), self.width, self.height),
                "prompt": row["prompt"], "cls": row.get("class"), "template": row.get("template")}


def collate(examples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"pixel_values": torch.stack([e["pixel_values"] for e in examples]),
            "prompts": [e["prompt"] for e in examples]}


def batch_order(n: int, seed: int, batch_index: int) -> list[int]:
    """The seeded order in which a batch's n pairs are visited."""
    order = list(range(n))
    random.Random(f"logicval-lora-order/{seed}/{batch_index}").shuffle(order)
    return order


# ---------------------------------------------------------------------------------------------------------
# Held-out loss
# ---------------------------------------------------------------------------------------------------------
@dataclass
class HeldoutSet:
    """Fixed latents, prompt embeddings, noise and timestep indices of the held-out pairs."""

    latents: list[torch.Tensor]
    conds: list[dict[str, torch.Tensor | None]]
    noise: list[torch.Tensor]
    indices: list[torch.Tensor]
    classes: list[str]
    templates: list[str]

    def __len__(self) -> int:
        return len(self.latents)


@torch.no_grad()
def prepare_heldout(
    comp: Components,
    rows: Sequence[Mapping[str, Any]],
    width: int,
    height: int,
    seed: int = DEFAULT_SEED,
    max_sequence_length: int | None = None,
    image_root: str | Path | None = None,
    weighting_scheme: str = "none",
    progress: bool = False,
) -> HeldoutSet:
    """Encode the held-out pairs once and draw their noise and timesteps from ``seed`` (one generator per
    pair, so a pair's draw does not depend on the others)."""
    from tqdm.auto import tqdm

    latents, conds, noise, indices = [], [], [], []
    for i, row in enumerate(tqdm(rows, desc="held-out set", disable=not progress, leave=False)):
        px = load_image(resolve_image(row, image_root), width, height).unsqueeze(0)
        z = encode_images(comp, px, sample=False)
        g = torch.Generator(device="cpu").manual_seed(int(seed) * 1_000_003 + i)
        noise.append(torch.randn(z.shape, generator=g, dtype=torch.float32).to(z.device))
        indices.append(sample_timestep_indices(comp.scheduler, 1, g, weighting_scheme))
        latents.append(z)
        conds.append(encode_prompts(comp, [row["prompt"]], max_sequence_length))
    return HeldoutSet(latents, conds, noise, indices, [r.get("class", "") for r in rows],
                      [r.get("template", "") for r in rows])


@torch.no_grad()
def heldout_loss(comp: Components, transformer: torch.nn.Module, held: HeldoutSet,
                 guidance_scale: float = DEFAULT_GUIDANCE_SCALE, weighting_scheme: str = "none") -> dict[str, Any]:
    """Mean flow-matching loss over the held-out set (fixed noise and timesteps), overall and per class."""
    was_training = transformer.training
    transformer.eval()
    losses = []
    for z, c, e, idx in zip(held.latents, held.conds, held.noise, held.indices, strict=True):
        losses.append(float(flow_matching_loss(comp, transformer, z, c, e, idx, weighting_scheme, guidance_scale)))
    if was_training:
        transformer.train()
    per_class: dict[str, list[float]] = {}
    for cls, v in zip(held.classes, losses, strict=True):
        per_class.setdefault(cls, []).append(v)
    return {"loss": float(np.mean(losses)) if losses else float("nan"),
            "per_class": {k: float(np.mean(v)) for k, v in sorted(per_class.items())}}


# ---------------------------------------------------------------------------------------------------------
# Saving and loading
# ---------------------------------------------------------------------------------------------------------
def _unwrap(model: torch.nn.Module) -> DiffusersModel:
    model = getattr(model, "module", model)
    return getattr(model, "_orig_mod", model)


def lora_state_dict(transformer: torch.nn.Module, model_type: str | None = None) -> dict[str, torch.Tensor]:
    """The adapter's weights in diffusers/PEFT naming (the family's ``lora_strip_prefix``, by default PEFT's
    ``base_model.model.`` wrapper prefix, is stripped)."""
    from peft.utils import get_peft_model_state_dict

    sd = get_peft_model_state_dict(_unwrap(transformer))
    prefix = get_family(model_type).lora_strip_prefix if model_type is not None else PEFT_PREFIX
    if not prefix:
        return {k: v.detach().clone() for k, v in sd.items()}
    return {(k[len(prefix):] if k.startswith(prefix) else k): v.detach().clone() for k, v in sd.items()}


def save_lora(out_dir: str | Path, transformer: torch.nn.Module, model_type: str,
              extra: Mapping[str, Any] | None = None) -> Path:
    """Save the LoRA in the diffusers format with its adapter metadata (``pipe.load_lora_weights(out_dir)``).

    Written to a temporary sibling folder and renamed over ``out_dir``. ``extra`` goes to ``lora_info.json``.
    """
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        model = _unwrap(transformer)
        metadata = model.peft_config["default"].to_dict()
        pipeline_class(model_type).save_lora_weights(
            tmp, transformer_lora_layers=lora_state_dict(model, model_type),
            transformer_lora_adapter_metadata=metadata,
            weight_name=LORA_WEIGHT_NAME, safe_serialization=True)
        if extra is not None:
            (tmp / "lora_info.json").write_text(json.dumps(dict(extra), indent=2) + "\n", encoding="utf-8")
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def load_lora_into(transformer: torch.nn.Module, lora_dir: str | Path, model_type: str) -> None:
    """Load saved LoRA weights into the transformer's existing ``default`` adapter (for resuming)."""
    from diffusers.utils import convert_unet_state_dict_to_peft
    from peft.utils import set_peft_model_state_dict

    sd = pipeline_class(model_type).lora_state_dict(str(lora_dir), weight_name=LORA_WEIGHT_NAME)
    if isinstance(sd, tuple):
        sd = sd[0]
    sd = {k[len("transformer."):]: v for k, v in sd.items() if k.startswith("transformer.")}
    sd = convert_unet_state_dict_to_peft(sd)
    result = set_peft_model_state_dict(_unwrap(transformer), sd, adapter_name="default")
    unexpected = getattr(result, "unexpected_keys", None)
    if unexpected:
        raise ValueError(f"{lora_dir}: LoRA keys not in the model: {unexpected[:5]}")


def lora_parameters(transformer: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The trainable (LoRA) parameters."""
    return [p for p in transformer.parameters() if p.requires_grad]
