"""Reusable pieces of the LoRA fine-tuning of FLUX.1-dev and Qwen-Image on captioned CLEVR (paper, App. F).

`lora_training/train_lora.py` is a thin loop over these:

* **Models** — `load_components` (hub id or local folder; transformer, VAE, training noise scheduler and a
  text-only pipeline), `components_from_pipeline` (the same from an in-memory pipeline), `add_lora`
  (rank 16, alpha 16 on the attention projections ``TARGET_MODULES``), `tiny_pipeline` (a random-weight
  FLUX / Qwen-Image pipeline from small configs with offline tokenizers, for tests and dry runs).
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
* **Selection** — `SelectionTracker` keeps the history of held-out losses and the best (lowest) one and
  writes ``selection.json`` atomically; the trainer copies the best LoRA to ``<output>/best``.
* **Checkpoints** — `save_lora` (diffusers LoRA format, ``pytorch_lora_weights.safetensors`` with the
  adapter metadata, so ``pipe.load_lora_weights(dir)`` restores rank *and* alpha), `load_lora_into`,
  `save_checkpoint` / `load_checkpoint` / `latest_checkpoint` (LoRA, optimizer, LR scheduler, RNG states and
  the loop position; written to a temporary folder and renamed).

Requires the ``train`` extras (torch, diffusers, peft, transformers, accelerate); nothing here is imported
by ``import logicval_hf``.
"""

from __future__ import annotations

import copy
import json
import math
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from logicval_hf.common.atomic import atomic_write_json, replace_dir

__all__ = [
    "MODEL_TYPES", "DEFAULT_RANK", "DEFAULT_ALPHA", "DEFAULT_LEARNING_RATE", "DEFAULT_TRAIN_BATCH_SIZE",
    "DEFAULT_WIDTH", "DEFAULT_HEIGHT", "DEFAULT_SEED", "DEFAULT_GUIDANCE_SCALE", "TARGET_MODULES",
    "LORA_WEIGHT_NAME", "Components", "HeldoutSet", "PairDataset", "SelectionTracker", "add_lora",
    "batch_order", "components_from_pipeline", "detect_model_type", "encode_images", "encode_prompts",
    "flow_matching_loss", "heldout_loss", "latest_checkpoint", "load_checkpoint", "load_components",
    "load_image", "load_lora_into", "lora_state_dict", "pipeline_class", "predict", "prepare_heldout",
    "prune_checkpoints", "sample_timestep_indices", "save_checkpoint", "save_lora", "tiny_pipeline",
]

MODEL_TYPES = ("flux", "qwen-image")
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
#: prompt tokens kept by the text encoders (the pipelines' defaults)
MAX_SEQUENCE_LENGTH = {"flux": 512, "qwen-image": 1024}
LORA_WEIGHT_NAME = "pytorch_lora_weights.safetensors"
TRAINER_STATE = "trainer_state.json"
_PIPELINE_NAMES = {"FluxPipeline": "flux", "QwenImagePipeline": "qwen-image"}


def _check_type(model_type: str) -> str:
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type must be one of {list(MODEL_TYPES)}, got {model_type!r}")
    return model_type


def pipeline_class(model_type: str):
    """The diffusers pipeline class of a model type (it also carries ``save_lora_weights``)."""
    from diffusers import FluxPipeline, QwenImagePipeline

    return {"flux": FluxPipeline, "qwen-image": QwenImagePipeline}[_check_type(model_type)]


def detect_model_type(model: Any) -> str:
    """``flux`` or ``qwen-image`` from a pipeline, a local folder's ``model_index.json`` or a hub id's name."""
    if hasattr(model, "transformer") and hasattr(model, "vae"):
        name = type(model).__name__
        for prefix, kind in (("Flux", "flux"), ("QwenImage", "qwen-image")):
            if name.startswith(prefix):
                return kind
        raise ValueError(f"unsupported pipeline {name}")
    path = Path(str(model))
    index = path / "model_index.json"
    if index.is_file():
        name = json.loads(index.read_text(encoding="utf-8")).get("_class_name", "")
        if name in _PIPELINE_NAMES:
            return _PIPELINE_NAMES[name]
        raise ValueError(f"{index}: unsupported pipeline class {name!r}; pass model_type explicitly")
    low = str(model).lower()
    if "qwen" in low:
        return "qwen-image"
    if "flux" in low:
        return "flux"
    raise ValueError(f"cannot tell the model type of {model!r}; pass model_type ('flux' or 'qwen-image')")


# ---------------------------------------------------------------------------------------------------------
# Components
# ---------------------------------------------------------------------------------------------------------
@dataclass
class Components:
    """What training needs: the transformer (gets the LoRA), the VAE, a fresh training noise scheduler and a
    text-only pipeline (tokenizers + text encoders) for ``encode_prompt``."""

    model_type: str
    transformer: torch.nn.Module
    vae: torch.nn.Module
    scheduler: Any
    text_pipeline: Any

    @property
    def vae_scale_factor(self) -> int:
        if self.model_type == "qwen-image":
            return 2 ** len(self.vae.temperal_downsample)
        return 2 ** (len(self.vae.config.block_out_channels) - 1)

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
    """Load the parts of a FLUX.1-dev / Qwen-Image pipeline (hub id or local folder) for LoRA training."""
    from diffusers import AutoencoderKL, AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler
    from diffusers import FluxTransformer2DModel, QwenImageTransformer2DModel

    _check_type(model_type)
    kw = {"revision": revision}
    scheduler = FlowMatchEulerDiscreteScheduler.from_pretrained(pretrained, subfolder="scheduler", **kw)
    if model_type == "flux":
        transformer = FluxTransformer2DModel.from_pretrained(pretrained, subfolder="transformer", variant=variant,
                                                             dtype=weight_dtype, **kw)
        vae = AutoencoderKL.from_pretrained(pretrained, subfolder="vae", variant=variant, **kw)
    else:
        transformer = QwenImageTransformer2DModel.from_pretrained(pretrained, subfolder="transformer",
                                                                  variant=variant, dtype=weight_dtype, **kw)
        vae = AutoencoderKLQwenImage.from_pretrained(pretrained, subfolder="vae", variant=variant, **kw)
    text_pipeline = pipeline_class(model_type).from_pretrained(
        pretrained, transformer=None, vae=None, scheduler=None, dtype=weight_dtype, **kw)
    for m in (transformer, vae, *_text_encoders(text_pipeline)):
        m.requires_grad_(False)
        m.eval()
    # the VAE stays in float32 unless the weights are half precision anyway (FLUX's VAE is stable in bf16)
    vae.to(device=device, dtype=weight_dtype if weight_dtype == torch.bfloat16 else torch.float32)
    transformer.to(device=device, dtype=weight_dtype)
    text_pipeline.to(device)
    return Components(model_type, transformer, vae, _fresh_scheduler(scheduler), text_pipeline)


def _text_encoders(pipe: Any) -> list[torch.nn.Module]:
    return [m for m in (getattr(pipe, "text_encoder", None), getattr(pipe, "text_encoder_2", None)) if m is not None]


def components_from_pipeline(pipe: Any, model_type: str | None = None) -> Components:
    """`Components` sharing the modules of an in-memory pipeline (the scheduler is a fresh copy)."""
    model_type = model_type or detect_model_type(pipe)
    cls = pipeline_class(model_type)
    if model_type == "flux":
        text = cls(scheduler=None, vae=None, text_encoder=pipe.text_encoder, tokenizer=pipe.tokenizer,
                   text_encoder_2=pipe.text_encoder_2, tokenizer_2=pipe.tokenizer_2, transformer=None)
    else:
        text = cls(scheduler=None, vae=None, text_encoder=pipe.text_encoder, tokenizer=pipe.tokenizer,
                   transformer=None)
    for m in (pipe.transformer, pipe.vae, *_text_encoders(text)):
        m.requires_grad_(False)
    for m in (pipe.vae, *_text_encoders(text)):
        m.eval()
    return Components(model_type, pipe.transformer, pipe.vae, _fresh_scheduler(pipe.scheduler), text)


def add_lora(
    transformer: torch.nn.Module,
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

    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, init_lora_weights=init_lora_weights,
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
    """Prompt embeddings as the pipeline computes them (``prompt_2 = prompt`` for FLUX's T5)."""
    prompts = list(prompts)
    msl = max_sequence_length or MAX_SEQUENCE_LENGTH[comp.model_type]
    device = device or comp.transformer.device
    pipe = comp.text_pipeline
    if comp.model_type == "flux":
        embeds, pooled, text_ids = pipe.encode_prompt(prompt=prompts, prompt_2=prompts, device=device,
                                                      max_sequence_length=msl)
        return {"prompt_embeds": embeds, "pooled_prompt_embeds": pooled, "text_ids": text_ids}
    embeds, mask = pipe.encode_prompt(prompt=prompts, device=device, max_sequence_length=msl)
    return {"prompt_embeds": embeds, "prompt_embeds_mask": mask}


def _cat_conds(conds: Sequence[Mapping[str, torch.Tensor | None]]) -> dict[str, torch.Tensor | None]:
    """Concatenate per-example prompt embeddings along the batch (Qwen-Image: pad to the longest)."""
    if len(conds) == 1:
        return dict(conds[0])
    out: dict[str, torch.Tensor | None] = {}
    if "text_ids" in conds[0]:
        out["prompt_embeds"] = torch.cat([c["prompt_embeds"] for c in conds])
        out["pooled_prompt_embeds"] = torch.cat([c["pooled_prompt_embeds"] for c in conds])
        out["text_ids"] = conds[0]["text_ids"]
        return out
    longest = max(c["prompt_embeds"].shape[1] for c in conds)
    embeds, masks = [], []
    for c in conds:
        e = c["prompt_embeds"]
        m = c["prompt_embeds_mask"]
        if m is None:
            m = torch.ones(e.shape[:2], dtype=torch.long, device=e.device)
        pad = longest - e.shape[1]
        embeds.append(torch.nn.functional.pad(e, (0, 0, 0, pad)))
        masks.append(torch.nn.functional.pad(m, (0, pad)))
    out["prompt_embeds"] = torch.cat(embeds)
    mask = torch.cat(masks)
    out["prompt_embeds_mask"] = None if bool(mask.all()) else mask
    return out


@torch.no_grad()
def encode_images(comp: Components, pixel_values: torch.Tensor, sample: bool = True,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """Normalised VAE latents ``(B, C, h, w)`` of images in [-1, 1] (``sample=False``: the posterior mean)."""
    vae = comp.vae
    x = pixel_values.to(device=vae.device, dtype=vae.dtype)
    if comp.model_type == "qwen-image":
        x = x.unsqueeze(2)  # (B, C, 1, H, W): one frame
    dist = vae.encode(x).latent_dist
    z = dist.sample(generator=generator) if sample else dist.mode()
    if comp.model_type == "flux":
        z = (z - vae.config.shift_factor) * vae.config.scaling_factor
        return z.float()
    zc = vae.config.z_dim
    mean = torch.tensor(vae.config.latents_mean, device=z.device, dtype=z.dtype).view(1, zc, 1, 1, 1)
    std = torch.tensor(vae.config.latents_std, device=z.device, dtype=z.dtype).view(1, zc, 1, 1, 1)
    return ((z - mean) / std).squeeze(2).float()


def predict(comp: Components, transformer: torch.nn.Module, noisy: torch.Tensor, timesteps: torch.Tensor,
            cond: Mapping[str, torch.Tensor | None], guidance_scale: float = DEFAULT_GUIDANCE_SCALE) -> torch.Tensor:
    """The transformer's velocity prediction for noisy latents ``(B, C, h, w)``, unpacked to the same shape."""
    cls = pipeline_class(comp.model_type)
    b, c, h, w = noisy.shape
    dtype = next(p for p in transformer.parameters() if not p.requires_grad).dtype
    packed = cls._pack_latents(noisy, b, c, h, w).to(dtype)
    t = (timesteps.float() / 1000.0).to(noisy.device)
    sf = comp.vae_scale_factor
    if comp.model_type == "flux":
        config = transformer.config
        guidance = torch.full((b,), float(guidance_scale), device=noisy.device) if config.guidance_embeds else None
        img_ids = cls._prepare_latent_image_ids(b, h // 2, w // 2, noisy.device, dtype)
        out = transformer(hidden_states=packed, timestep=t, guidance=guidance,
                          pooled_projections=cond["pooled_prompt_embeds"].to(dtype),
                          encoder_hidden_states=cond["prompt_embeds"].to(dtype),
                          txt_ids=cond["text_ids"], img_ids=img_ids, return_dict=False)[0]
        return cls._unpack_latents(out, h * sf, w * sf, sf)
    mask = cond.get("prompt_embeds_mask")
    out = transformer(hidden_states=packed, timestep=t, guidance=None, encoder_hidden_states_mask=mask,
                      encoder_hidden_states=cond["prompt_embeds"].to(dtype),
                      img_shapes=[[(1, h // 2, w // 2)]] * b, return_dict=False)[0]
    return cls._unpack_latents(out, h * sf, w * sf, sf).squeeze(2)


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
    """``(3, height, width)`` float tensor in [-1, 1]: resized to cover the target, centre-cropped."""
    from PIL import Image

    with Image.open(path) as im:
        im = im.convert("RGB")
        scale = max(width / im.width, height / im.height)
        size = (max(width, round(im.width * scale)), max(height, round(im.height * scale)))
        im = im.resize(size, Image.BICUBIC)
        left, top = (im.width - width) // 2, (im.height - height) // 2
        im = im.crop((left, top, left + width, top + height))
        arr = np.asarray(im, dtype=np.float32) / 127.5 - 1.0
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
    for z, c, e, idx in zip(held.latents, held.conds, held.noise, held.indices):
        losses.append(float(flow_matching_loss(comp, transformer, z, c, e, idx, weighting_scheme, guidance_scale)))
    if was_training:
        transformer.train()
    per_class: dict[str, list[float]] = {}
    for cls, v in zip(held.classes, losses):
        per_class.setdefault(cls, []).append(v)
    return {"loss": float(np.mean(losses)) if losses else float("nan"),
            "per_class": {k: float(np.mean(v)) for k, v in sorted(per_class.items())}}


# ---------------------------------------------------------------------------------------------------------
# Selection bookkeeping
# ---------------------------------------------------------------------------------------------------------
@dataclass
class SelectionTracker:
    """History of held-out evaluations and the selected (lowest held-out loss) checkpoint.

    `update` returns True when the new loss is strictly lower than the best so far (ties keep the earlier,
    shorter-trained checkpoint). ``selection.json`` holds ``criterion``, ``best`` and ``history``.
    """

    path: Path | None = None
    info: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None

    CRITERION = ("lowest mean held-out flow-matching loss (fixed latents, noise and timesteps per held-out pair), "
                 "evaluated every --heldout_every optimizer steps and at the end of every batch")

    def update(self, record: Mapping[str, Any]) -> bool:
        rec = dict(record)
        if not math.isfinite(float(rec["heldout_loss"])):
            rec["note"] = "non-finite held-out loss; never selected"
            self.history.append(rec)
            return False
        improved = self.best is None or rec["heldout_loss"] < self.best["heldout_loss"]
        rec["best_so_far"] = improved
        self.history.append(rec)
        if improved:
            self.best = {k: v for k, v in rec.items() if k != "best_so_far"}
        return improved

    def truncate(self, global_step: int) -> None:
        """Forget evaluations after ``global_step`` (used when resuming from an earlier checkpoint)."""
        self.history = [h for h in self.history if h["global_step"] <= global_step]
        self.best = None
        for h in self.history:
            if math.isfinite(float(h["heldout_loss"])) and (self.best is None
                                                           or h["heldout_loss"] < self.best["heldout_loss"]):
                self.best = {k: v for k, v in h.items() if k not in ("best_so_far", "note")}

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.CRITERION, **self.info, "best": self.best, "history": self.history}

    def save(self, path: str | Path | None = None) -> None:
        target = Path(path or self.path)
        atomic_write_json(target, self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | Path | None = None) -> "SelectionTracker":
        info = {k: v for k, v in d.items() if k not in ("criterion", "best", "history")}
        return cls(Path(path) if path else None, info, list(d.get("history", [])), d.get("best"))

    @classmethod
    def load(cls, path: str | Path) -> "SelectionTracker":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")), path)


# ---------------------------------------------------------------------------------------------------------
# Saving and loading
# ---------------------------------------------------------------------------------------------------------
def _unwrap(model: torch.nn.Module) -> torch.nn.Module:
    model = getattr(model, "module", model)
    return getattr(model, "_orig_mod", model)


def lora_state_dict(transformer: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The adapter's weights in diffusers/PEFT naming (a ``base_model.model.`` prefix is stripped)."""
    from peft.utils import get_peft_model_state_dict

    sd = get_peft_model_state_dict(_unwrap(transformer))
    prefix = "base_model.model."
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
            tmp, transformer_lora_layers=lora_state_dict(model), transformer_lora_adapter_metadata=metadata,
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


def _rng_state(generator: torch.Generator | None) -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if generator is not None:
        state["generator"] = generator.get_state()
    return state


def _set_rng_state(state: Mapping[str, Any], generator: torch.Generator | None) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None and "generator" in state:
        generator.set_state(state["generator"])


def save_checkpoint(
    ckpt_dir: str | Path,
    transformer: torch.nn.Module,
    model_type: str,
    optimizer: torch.optim.Optimizer,
    lr_scheduler: Any,
    generator: torch.Generator | None,
    state: Mapping[str, Any],
    best_lora: str | Path | None = None,
) -> Path:
    """A resumable checkpoint: LoRA (diffusers format), optimizer, LR scheduler, RNG states, loop ``state``
    and a copy of the currently selected LoRA (``best_lora/``); written to a temporary folder, then renamed."""
    out = Path(ckpt_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        save_lora(tmp / "lora", transformer, model_type)
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save(lr_scheduler.state_dict(), tmp / "lr_scheduler.pt")
        torch.save(_rng_state(generator), tmp / "rng.pt")
        if best_lora is not None and Path(best_lora).is_dir():
            shutil.copytree(best_lora, tmp / "best_lora")
        (tmp / TRAINER_STATE).write_text(json.dumps(dict(state), indent=2) + "\n", encoding="utf-8")
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def load_checkpoint(
    ckpt_dir: str | Path,
    transformer: torch.nn.Module,
    model_type: str,
    optimizer: torch.optim.Optimizer,
    lr_scheduler: Any,
    generator: torch.Generator | None,
) -> dict[str, Any]:
    """Restore what `save_checkpoint` wrote; returns the loop state."""
    ckpt = Path(ckpt_dir)
    load_lora_into(transformer, ckpt / "lora", model_type)
    optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", map_location="cpu", weights_only=False))
    lr_scheduler.load_state_dict(torch.load(ckpt / "lr_scheduler.pt", map_location="cpu", weights_only=False))
    _set_rng_state(torch.load(ckpt / "rng.pt", map_location="cpu", weights_only=False), generator)
    return json.loads((ckpt / TRAINER_STATE).read_text(encoding="utf-8"))


def _checkpoints(output_dir: str | Path) -> list[tuple[int, Path]]:
    out = []
    for p in Path(output_dir).glob("checkpoint-*"):
        step = p.name.split("-", 1)[1]
        if step.isdigit() and (p / TRAINER_STATE).is_file():
            out.append((int(step), p))
    return sorted(out)


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The complete checkpoint with the highest step under ``output_dir`` (None if there is none)."""
    found = _checkpoints(output_dir)
    return found[-1][1] if found else None


def prune_checkpoints(output_dir: str | Path, keep: int | None) -> list[Path]:
    """Delete all but the ``keep`` newest checkpoints; returns the deleted paths."""
    if keep is None or keep <= 0:
        return []
    found = _checkpoints(output_dir)
    gone = [p for _, p in found[:-keep]]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone


# ---------------------------------------------------------------------------------------------------------
# Tiny random pipelines (tests, dry runs)
# ---------------------------------------------------------------------------------------------------------
def _byte_level_chars() -> list[str]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return list(bytes_to_unicode().values())


def tiny_pipeline(model_type: str, seed: int = 0) -> Any:
    """A FLUX or Qwen-Image pipeline with the real classes, tiny configs and random weights (offline).

    Tokenizers are built in memory (character-level CLIP BPE, a small T5 unigram vocabulary, a byte-level
    Qwen2 vocabulary). FLUX: VAE factor 2, 16 latent channels after packing, guidance-distilled like
    FLUX.1-dev; Qwen-Image: VAE factor 4, no guidance embedding. Images are cheap at 32-64 px.
    """
    _check_type(model_type)
    from diffusers import FlowMatchEulerDiscreteScheduler

    torch.manual_seed(seed)
    chars = _byte_level_chars()
    if model_type == "flux":
        from diffusers import AutoencoderKL, FluxPipeline, FluxTransformer2DModel
        from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer, T5Config, T5EncoderModel, T5Tokenizer

        vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
        for c in chars:
            vocab[c] = len(vocab)
        for c in chars:
            vocab[c + "</w>"] = len(vocab)
        clip_tok = CLIPTokenizer(vocab=vocab, merges=[], bos_token="<|startoftext|>", eos_token="<|endoftext|>",
                                 pad_token="<|endoftext|>", unk_token="<|endoftext|>", model_max_length=77)
        pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
        pieces += [(c, -1.0) for c in "\u2581abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;()-'"]
        t5_tok = T5Tokenizer(vocab=pieces, extra_ids=0)
        clip = CLIPTextModel(CLIPTextConfig(bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=32,
                                            intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
                                            vocab_size=len(clip_tok), projection_dim=32, max_position_embeddings=77))
        t5 = T5EncoderModel(T5Config(vocab_size=len(t5_tok), d_model=32, d_ff=37, d_kv=8, num_layers=2, num_heads=4,
                                     relative_attention_num_buckets=8, decoder_start_token_id=0))
        transformer = FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1,
                                             attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                                             pooled_projection_dim=32, axes_dims_rope=[4, 4, 8], guidance_embeds=True)
        vae = AutoencoderKL(sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4, 8),
                            down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                            layers_per_block=1, latent_channels=4, norm_num_groups=1, use_quant_conv=False,
                            use_post_quant_conv=False, shift_factor=0.0609, scaling_factor=1.5035)
        scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True, base_shift=0.5,
                                                    max_shift=1.15, base_image_seq_len=256, max_image_seq_len=4096)
        pipe = FluxPipeline(scheduler=scheduler, vae=vae, text_encoder=clip, tokenizer=clip_tok, text_encoder_2=t5,
                            tokenizer_2=t5_tok, transformer=transformer)
        return _eval(pipe)
    from diffusers import AutoencoderKLQwenImage, QwenImagePipeline, QwenImageTransformer2DModel
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2Tokenizer

    qv = {c: i for i, c in enumerate(chars)}
    for s in ("<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        qv[s] = len(qv)
    tok = Qwen2Tokenizer(vocab=qv, merges=[], unk_token=None, pad_token="<|endoftext|>", eos_token="<|im_end|>")
    vocab_size = 300
    text_config = {"hidden_size": 16, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                   "num_key_value_heads": 2, "vocab_size": vocab_size, "rope_theta": 1000000.0,
                   "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
                   "bos_token_id": qv["<|endoftext|>"], "eos_token_id": qv["<|im_end|>"],
                   "pad_token_id": qv["<|endoftext|>"]}
    config = Qwen2_5_VLConfig(text_config=text_config,
                              vision_config={"depth": 2, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2,
                                             "out_hidden_size": 16},
                              hidden_size=16, vocab_size=vocab_size, vision_start_token_id=295, vision_end_token_id=296,
                              vision_token_id=297, image_token_id=298, video_token_id=299,
                              bos_token_id=qv["<|endoftext|>"], eos_token_id=qv["<|im_end|>"])
    text_encoder = Qwen2_5_VLForConditionalGeneration(config)
    transformer = QwenImageTransformer2DModel(patch_size=2, in_channels=16, out_channels=4, num_layers=2,
                                              attention_head_dim=16, num_attention_heads=3, joint_attention_dim=16,
                                              guidance_embeds=False, axes_dims_rope=(8, 4, 4))
    z = 4
    vae = AutoencoderKLQwenImage(base_dim=4, z_dim=z, dim_mult=[1, 1, 1], num_res_blocks=1,
                                 temperal_downsample=[False, True], latents_mean=[0.1] * z, latents_std=[1.5] * z)
    scheduler = FlowMatchEulerDiscreteScheduler(shift=1.0, use_dynamic_shifting=True, base_shift=0.5, max_shift=0.9,
                                                base_image_seq_len=256, max_image_seq_len=8192, shift_terminal=0.02,
                                                time_shift_type="exponential")
    pipe = QwenImagePipeline(scheduler=scheduler, vae=vae, text_encoder=text_encoder, tokenizer=tok,
                             transformer=transformer)
    return _eval(pipe)


def _eval(pipe: Any) -> Any:
    """Modules built from configs start in training mode (T5 dropout!); pipelines loaded by
    ``from_pretrained`` are in eval mode: match that."""
    for m in pipe.components.values():
        if isinstance(m, torch.nn.Module):
            m.eval()
    return pipe


def copy_module(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy (tests compare an adapted model with a reloaded one)."""
    return copy.deepcopy(module)


def lora_parameters(transformer: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The trainable (LoRA) parameters."""
    return [p for p in transformer.parameters() if p.requires_grad]


def iter_rows(path: str | Path) -> Iterable[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
