"""Tiny random-weight FLUX / Qwen-Image pipelines for the tests (offline, CPU, seconds).

`tiny_pipeline(model_type)` builds the real diffusers pipeline class of a family of
`logicval_hf.generation.families` from tiny configs with random weights (seeded) and in-memory tokenizers
(character-level CLIP BPE, a small T5 unigram vocabulary, a byte-level Qwen2 vocabulary). FLUX: VAE factor
2, 16 latent channels after packing, guidance-distilled like FLUX.1-dev; Qwen-Image: VAE factor 4, no
guidance embedding. Images are cheap at 32-64 px. `BUILDERS` has one builder per family name (a test checks
that every registered family has one). Moved here from ``logicval_hf/training/lora.py``: no shipped script
uses it.

Tiny perception models too: `tiny_grounding_dino` (a Grounding DINO detector over a word-level vocabulary) and
`tiny_clip` (an open_clip model registered from a config), for the neural backend's tests; `tiny_qwen25_vl` (a
Qwen2.5-VL over a byte-level vocabulary), for the vlm backend's transformers transport; `save_tiny_hf_clip` (a
``transformers`` CLIP with a 248-token context, saved as a model folder), for the CLIPScore baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["BUILDERS", "tiny_pipeline"]


def _byte_level_chars() -> list[str]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return list(bytes_to_unicode().values())


def _tiny_flux(chars: list[str]) -> Any:
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
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


def _tiny_qwen_image(chars: list[str]) -> Any:
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImagePipeline,
        QwenImageTransformer2DModel,
    )
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


#: one tiny builder per family name of `logicval_hf.generation.families.FAMILIES`
BUILDERS: dict[str, Callable[[list[str]], Any]] = {"flux": _tiny_flux, "qwen-image": _tiny_qwen_image}


def tiny_pipeline(model_type: str, seed: int = 0) -> Any:
    """A pipeline of the family ``model_type`` with the real classes, tiny configs and random weights
    (offline; the same ``seed`` gives the same weights)."""
    from logicval_hf.generation.families import get_family

    get_family(model_type)  # an unknown family: the registry's did-you-mean error
    if model_type not in BUILDERS:
        raise ValueError(f"no tiny builder for the family {model_type!r} in tests/tiny_models.py")
    torch.manual_seed(seed)
    chars = _byte_level_chars()
    return BUILDERS[model_type](chars)


def _eval(pipe: Any) -> Any:
    """Modules built from configs start in training mode (T5 dropout!); pipelines loaded by
    ``from_pretrained`` are in eval mode: match that."""
    for m in pipe.components.values():
        if isinstance(m, torch.nn.Module):
            m.eval()
    return pipe


# ---------------------------------------------------------------------------------------------------
# tiny perception models: a Grounding DINO detector and an open_clip CLIP (random weights, offline)
# ---------------------------------------------------------------------------------------------------
#: the special tokens of the tiny detector's BERT vocabulary, then the prompt's own words
DETECTOR_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "an"]

#: name of the tiny open_clip model `register_tiny_clip` adds to open_clip's model configs
TINY_CLIP = "logicval-test-tiny-clip"


def tiny_grounding_dino(words: Any = ("cube", "sphere", "cylinder", "object"), max_text_len: int = 32,
                        num_queries: int = 12, seed: int = 0) -> tuple[Any, Any]:
    """``(GroundingDinoForObjectDetection, GroundingDinoProcessor)``: Swin backbone of width 16, BERT text encoder
    of width 32, 2 decoder layers, ``num_queries`` queries, reading at most ``max_text_len`` text tokens; a
    word-level ``BertTokenizer`` over `DETECTOR_SPECIALS` plus the words of ``words`` (each string split on
    spaces), so that every prompt word is one token."""
    from transformers import (
        BertConfig,
        BertTokenizer,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
    )

    vocab = list(DETECTOR_SPECIALS)
    for phrase in words:
        for w in str(phrase).lower().split():
            if w not in vocab:
                vocab.append(w)
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    proc = GroundingDinoProcessor(
        image_processor=GroundingDinoImageProcessor(size={"shortest_edge": 96, "longest_edge": 160}), tokenizer=tok)
    cfg = GroundingDinoConfig(
        backbone_config={"model_type": "swin", "embed_dim": 16, "depths": [1, 1, 1, 1], "num_heads": [1, 1, 1, 1],
                         "window_size": 4, "out_indices": [2, 3, 4], "image_size": 96},
        text_config=BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=64).to_dict(),
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        encoder_attention_heads=2, decoder_attention_heads=2, num_queries=num_queries, max_text_len=max_text_len,
        num_feature_levels=4, encoder_n_points=2, decoder_n_points=2)
    torch.manual_seed(seed)
    return GroundingDinoForObjectDetection(cfg).eval(), proc


def register_tiny_clip(config_dir: Any) -> str:
    """Register `TINY_CLIP` (64 px, width 64, embedding 32) with open_clip from a config written into
    ``config_dir``; returns its name (use ``open_clip.create_model(name, pretrained=None)`` and
    ``open_clip.get_tokenizer(name)``: the real BPE tokenizer)."""
    import json
    from pathlib import Path

    import open_clip

    cfg = {"embed_dim": 32,
           "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
           "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2}}
    (Path(config_dir) / f"{TINY_CLIP}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(str(config_dir))
    return TINY_CLIP


def tiny_clip(config_dir: Any, seed: int = 1) -> tuple[Any, Any]:
    """``(open_clip model, tokenizer)`` of `TINY_CLIP` with random weights (seeded)."""
    import open_clip

    name = register_tiny_clip(config_dir)
    torch.manual_seed(seed)
    return open_clip.create_model(name, pretrained=None).eval(), open_clip.get_tokenizer(name)


def save_tiny_hf_clip(folder: Any, seed: int = 0) -> Any:
    """Save a ``transformers`` ``CLIPModel`` + ``CLIPProcessor`` into ``folder`` (``from_pretrained`` loads it):
    widths 32, one layer each, 32 px images, a 248-position text context (Long-CLIP's), and open_clip's real BPE
    vocabulary (so a prompt tokenises as CLIP's does). Returns ``(model, processor)``."""
    import open_clip
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    bpe = open_clip.tokenizer.SimpleTokenizer()
    vocab = dict(bpe.encoder)  # same BPE; transformers names the two special tokens differently
    vocab["<|startoftext|>"] = vocab.pop("<start_of_text>")
    vocab["<|endoftext|>"] = vocab.pop("<end_of_text>")
    tok = CLIPTokenizer(vocab=vocab, merges=[tuple(m) for m in bpe.bpe_ranks])
    proc = CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32},
                                                            crop_size={"height": 32, "width": 32}), tokenizer=tok)
    cfg = CLIPConfig(text_config={"vocab_size": len(vocab), "hidden_size": 32, "intermediate_size": 64,
                                  "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 248},
                     vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                    "num_attention_heads": 2, "image_size": 32, "patch_size": 16},
                     projection_dim=16)
    torch.manual_seed(seed)
    model = CLIPModel(cfg).eval()
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return model, proc


# ---------------------------------------------------------------------------------------------------
# a tiny grounding VLM: Qwen2.5-VL (random weights, offline)
# ---------------------------------------------------------------------------------------------------
#: Qwen-VL's special tokens, after the 256 byte-level ones
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]
#: Qwen-VL's chat template, cut down to what one user turn with images and text needs
QWEN_CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
             "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}"
             "{% endif %}{% endfor %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
             "{% endif %}")


def tiny_qwen25_vl(seed: int = 0) -> tuple[Any, Any]:
    """``(Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor)``: the real classes, a byte-level vocabulary (one
    token per byte, so any text encodes), a text model of width 32 with one layer, a vision tower of width 32 with
    one block, and an image processor that resizes into 4-16 patches of 28 px (a 480x320 image is seen at 112x84)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2Tokenizer,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    vocab = {c: i for i, c in enumerate(_byte_level_chars())}
    for s in QWEN_SPECIALS:
        vocab[s] = len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=[], unk_token=None, pad_token="<|endoftext|>", eos_token="<|im_end|>",
                         extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                                               "vision_start_token": "<|vision_start|>",
                                               "vision_end_token": "<|vision_end|>"})
    tok.add_special_tokens({"additional_special_tokens": QWEN_SPECIALS})
    pixels = {"min_pixels": 4 * 28 * 28, "max_pixels": 16 * 28 * 28}
    proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=tok,
                               video_processor=Qwen2VLVideoProcessor(**pixels), chat_template=QWEN_CHAT)
    ids = {s: vocab[s] for s in QWEN_SPECIALS}
    cfg = Qwen2_5_VLConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 4096,
                     "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
                     "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"],
                     "bos_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
                       "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "window_size": 56,
                       "fullatt_block_indexes": [0]},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    torch.manual_seed(seed)
    return Qwen2_5_VLForConditionalGeneration(cfg).eval(), proc
