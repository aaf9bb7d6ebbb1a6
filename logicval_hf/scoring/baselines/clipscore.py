"""CLIPScore as used in the paper (§4.3, Appendix E): the *raw* cosine similarity between the image and text
embeddings of a CLIP model (no ``2.5 * max(cos, 0)`` rescaling), in [-1, 1].

The paper uses Long-CLIP (LongCLIP-GmP-ViT-L-14, 248 text tokens) because the prompts are long; tokens past a
model's context are truncated. Every result records whether its prompt was truncated and how many tokens
were dropped (``details``: ``n_tokens`` including start/end tokens, ``context_length``, ``truncated``,
``dropped_tokens``).

Models:

* `CLIPScore.from_open_clip` (name, pretrained tag or local checkpoint): any open_clip model. A local
  checkpoint's text context is read from its ``positional_embedding`` (248 for Long-CLIP) and the model is
  built with that context (open_clip would otherwise silently interpolate it down to the config's 77). An
  original Long-CLIP checkpoint (``positional_embedding_res``; github.com/beichenzbc/Long-CLIP) is merged
  into one positional table (rows ``< 20`` from ``positional_embedding``, the rest from
  ``positional_embedding_res``, as its ``mask1`` / ``mask2`` do) and built with QuickGELU (OpenAI weights).
* `CLIPScore.from_transformers` (hub id or local directory): a ``transformers`` ``CLIPModel`` + processor,
  e.g. the Hugging Face export of LongCLIP-GmP-ViT-L-14 (context from ``text_config.max_position_embeddings``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.scoring.baselines.base import (
    DEFAULT_PROMPT_FIELD,
    BaselineError,
    BaselineMetric,
    BaselineResult,
    check_pairs,
    prompt_text,
    to_pil,
)

__all__ = ["CLIPScore", "DEFAULT_LONGCLIP", "LONGCLIP_KEEP", "convert_longclip_state_dict",
           "checkpoint_context_length", "read_state_dict"]

#: The paper's CLIPScore model (Hugging Face ``transformers`` format).
DEFAULT_LONGCLIP = "zer0int/LongCLIP-GmP-ViT-L-14"
#: Long-CLIP keeps the first 20 positions of the original table (knowledge-preserved stretching).
LONGCLIP_KEEP = 20


def read_state_dict(path: str | Path) -> dict[str, Any]:
    """A checkpoint's state dict (``.pt``/``.bin``/``.safetensors``; a ``state_dict`` wrapper and a
    ``module.`` prefix are removed; a TorchScript archive is read through ``torch.jit.load``)."""
    import torch

    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        sd = load_file(str(path))
    else:
        try:
            sd = torch.load(str(path), map_location="cpu", weights_only=True)
        except RuntimeError as e:  # TorchScript archives (OpenAI CLIP .pt files)
            if "TorchScript" not in str(e) and "jit" not in str(e).lower():
                raise
            sd = torch.jit.load(str(path), map_location="cpu").state_dict()
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict):
        raise BaselineError(f"{path}: not a state dict")
    if sd and all(k.startswith("module.") for k in sd):
        sd = {k[len("module."):]: v for k, v in sd.items()}
    return dict(sd)


def checkpoint_context_length(sd: dict[str, Any]) -> int | None:
    """The text context length of a CLIP state dict (rows of its text positional embedding)."""
    for key in ("positional_embedding", "text.positional_embedding",
                "text_model.embeddings.position_embedding.weight"):
        if key in sd and getattr(sd[key], "ndim", 0) == 2:
            return int(sd[key].shape[0])
    return None


def convert_longclip_state_dict(sd: dict[str, Any], keep: int = LONGCLIP_KEEP) -> dict[str, Any]:
    """Merge Long-CLIP's two positional tables into the single one open_clip's CLIP uses.

    Long-CLIP adds ``positional_embedding * mask1 + positional_embedding_res * mask2`` with ``mask1`` = 1 on
    the first ``keep`` rows and ``mask2`` = 1 on the others; the merged table is identical. OpenAI-style
    bookkeeping keys (``input_resolution``, ``context_length``, ``vocab_size``) are dropped.
    """
    sd = dict(sd)
    for k in ("input_resolution", "context_length", "vocab_size"):
        sd.pop(k, None)
    if "positional_embedding_res" in sd:
        pe, res = sd["positional_embedding"], sd.pop("positional_embedding_res")
        if pe.shape != res.shape:
            raise BaselineError(f"Long-CLIP tables differ in shape: {tuple(pe.shape)} vs {tuple(res.shape)}")
        merged = pe.clone()
        merged[keep:] = res[keep:]
        sd["positional_embedding"] = merged
    return sd


class _OpenClipEncoder:
    kind = "open_clip"

    def __init__(self, model: Any, tokenizer: Any, preprocess: Callable[[Any], Any], context_length: int | None):
        self.model, self.tokenizer, self.preprocess = model, tokenizer, preprocess
        ctx = context_length or getattr(model, "context_length", None)
        if ctx is None and hasattr(model, "positional_embedding"):
            ctx = int(model.positional_embedding.shape[0])
        if not ctx:
            ctx = getattr(tokenizer, "context_length", 77)
        self.context_length = int(ctx)

    def count_tokens(self, text: str) -> int:
        tok = self.tokenizer
        if hasattr(tok, "encode") and hasattr(tok, "sot_token_id"):  # SimpleTokenizer
            return len(tok.encode(text)) + 2
        inner = getattr(tok, "tokenizer", None)  # open_clip HFTokenizer
        if inner is not None and callable(inner):
            return len(inner(text)["input_ids"])
        ids = tok([text], context_length=10_000)
        return int((ids != 0).sum())

    def encode_text(self, texts: list[str], device: Any) -> Any:
        try:
            tokens = self.tokenizer(texts, context_length=self.context_length)
        except TypeError:
            tokens = self.tokenizer(texts)
        return self.model.encode_text(tokens.to(device))

    def encode_image(self, images: list[Any], device: Any) -> Any:
        import torch

        x = torch.stack([self.preprocess(im) for im in images]).to(device)
        return self.model.encode_image(x)


class _HFClipEncoder:
    kind = "transformers"

    def __init__(self, model: Any, processor: Any, context_length: int | None):
        self.model, self.processor = model, processor
        cfg = getattr(model.config, "text_config", model.config)
        self.context_length = int(context_length or cfg.max_position_embeddings)

    @property
    def tokenizer(self) -> Any:
        return getattr(self.processor, "tokenizer", self.processor)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, truncation=False)["input_ids"])

    @staticmethod
    def _features(out: Any) -> Any:
        return out if hasattr(out, "shape") else out.pooler_output

    def encode_text(self, texts: list[str], device: Any) -> Any:
        enc = self.tokenizer(texts, padding="max_length", truncation=True, max_length=self.context_length,
                             return_tensors="pt")
        enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        return self._features(self.model.get_text_features(**enc))

    def encode_image(self, images: list[Any], device: Any) -> Any:
        ip = getattr(self.processor, "image_processor", self.processor)
        pix = ip(images=images, return_tensors="pt")["pixel_values"].to(device)
        pix = pix.to(next(self.model.parameters()).dtype)
        return self._features(self.model.get_image_features(pixel_values=pix))


class CLIPScore(BaselineMetric):
    """Raw image-text cosine of a CLIP model, with truncation reporting (see the module docstring).

    Build with `from_open_clip`, `from_transformers` or `from_pretrained` (or
    `logicval_hf.scoring.baselines.build_baseline` from settings).
    """

    name = "clipscore"

    def __init__(self, encoder: Any, *, device: str | None = None, batch_size: int = 32,
                 prompt_field: str = DEFAULT_PROMPT_FIELD) -> None:
        torch = require("torch", "neural", "the CLIPScore baseline")

        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.encoder = encoder
        encoder.model.to(self.device).eval()
        self.batch_size = int(batch_size)
        self.prompt_field = prompt_field

    @property
    def context_length(self) -> int:
        return self.encoder.context_length

    # ---- construction --------------------------------------------------------------------------
    @classmethod
    def from_open_clip(cls, name: str = "ViT-L-14", pretrained: str | None = "openai", *,
                       quick_gelu: bool | None = None, device: str | None = None, **kwargs: Any) -> CLIPScore:
        """An open_clip model: ``pretrained`` is an open_clip tag, a local checkpoint file or None (random)."""
        open_clip = require("open_clip", "neural", "the CLIPScore baseline (open_clip)")

        dev = device or None
        if pretrained is not None and Path(str(pretrained)).is_file():
            sd = read_state_dict(pretrained)
            ctx = checkpoint_context_length(sd)
            longclip = "positional_embedding_res" in sd
            qg = bool(quick_gelu) if quick_gelu is not None else longclip
            model, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=None, force_context_length=ctx, force_quick_gelu=qg)
            sd = convert_longclip_state_dict(sd)
            if "logit_scale" in sd and sd["logit_scale"].ndim != model.logit_scale.ndim:
                sd["logit_scale"] = sd["logit_scale"].reshape(model.logit_scale.shape)
            try:
                missing, unexpected = model.load_state_dict(sd, strict=False)
            except RuntimeError as e:  # shape mismatches
                raise BaselineError(f"{pretrained}: does not fit open_clip model {name!r}: {e}") from None
            missing = [k for k in missing if k not in ("logit_bias",)]
            if missing or unexpected:
                raise BaselineError(f"{pretrained}: does not fit open_clip model {name!r} "
                                    f"(missing {missing[:5]}, unexpected {unexpected[:5]})")
        else:
            model, _, preprocess = open_clip.create_model_and_transforms(
                name, pretrained=pretrained, force_quick_gelu=bool(quick_gelu))
        tokenizer = open_clip.get_tokenizer(name, context_length=getattr(model, "context_length", None))
        return cls(_OpenClipEncoder(model.eval(), tokenizer, preprocess, None), device=dev, **kwargs)

    @classmethod
    def from_transformers(cls, model_id_or_path: str = DEFAULT_LONGCLIP, *, device: str | None = None,
                          **kwargs: Any) -> CLIPScore:
        """A ``transformers`` CLIP model + processor from a hub id or a local directory."""
        require("transformers", "neural", "the CLIPScore baseline (transformers)")
        from transformers import AutoModel, AutoProcessor

        processor = AutoProcessor.from_pretrained(model_id_or_path)
        model = AutoModel.from_pretrained(model_id_or_path)
        if not hasattr(model, "get_text_features"):
            raise BaselineError(f"{model_id_or_path}: {type(model).__name__} is not a CLIP-like dual encoder")
        return cls(_HFClipEncoder(model.eval(), processor, None), device=device, **kwargs)

    from_pretrained = from_transformers

    # ---- scoring -------------------------------------------------------------------------------
    def truncation(self, text: str) -> dict[str, Any]:
        """``{"n_tokens", "context_length", "truncated", "dropped_tokens"}`` of one text (start and end
        tokens included in ``n_tokens``; truncation keeps the end token, so ``context - 2`` text tokens fit)."""
        n = self.encoder.count_tokens(text)
        ctx = self.context_length
        dropped = max(0, n - ctx)
        return {"n_tokens": n, "context_length": ctx, "truncated": dropped > 0, "dropped_tokens": dropped}

    def evaluate(self, images: Sequence[Any], items: Sequence[Any]) -> list[BaselineResult]:
        import torch

        images, items = check_pairs(images, items)
        texts = [prompt_text(it, self.prompt_field) for it in items]
        out: list[BaselineResult] = []
        for s in range(0, len(texts), self.batch_size):
            ims = [to_pil(im, f"images[{s + i}]") for i, im in enumerate(images[s:s + self.batch_size])]
            tx = texts[s:s + self.batch_size]
            with torch.inference_mode():
                fi = torch.nn.functional.normalize(self.encoder.encode_image(ims, self.device).float(), dim=-1)
                ft = torch.nn.functional.normalize(self.encoder.encode_text(tx, self.device).float(), dim=-1)
            cos = (fi * ft).sum(-1).tolist()
            for c, t in zip(cos, tx, strict=True):
                out.append(BaselineResult(float(c), {"prompt": t, **self.truncation(t)}))
        return out
