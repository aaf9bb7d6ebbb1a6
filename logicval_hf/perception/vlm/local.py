"""A local ``transformers`` vision-language model (Qwen2-VL, Qwen2.5-VL, LLaVA, Idefics, ... anything
``AutoModelForImageTextToText`` and ``AutoProcessor`` load), run in batches with left padding and greedy
decoding. Shared by the ``vlm`` perception backend (its ``transformers`` transport) and the VLM baselines.

Chat formatting uses the processor's chat template (a user turn holding the image, then the text); without one
the prompt is ``"<image token>\\n" + prompt``. `LocalVLM.generate_sized` also reports the size each image had as
the model saw it: for processors that resize to a patch grid (Qwen-VL's ``image_grid_thw``), the grid times the
patch size, which is what a model that grounds in absolute pixels (Qwen2.5-VL) counts in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from logicval_hf.common.extras import require
from logicval_hf.perception.images import to_pil

__all__ = ["LocalVLM"]


class LocalVLM:
    """A local model and its processor (already constructed, or `from_pretrained` a hub id or a local directory).

    Args:
        model: an image-text-to-text ``transformers`` model.
        processor: its processor (tokenizer, image processor, chat template).
        device: ``"cuda"``, ``"cpu"``, ...; None: CUDA when available.
        batch_size: images per forward pass.
    """

    def __init__(self, model: Any, processor: Any, *, device: str | None = None, batch_size: int = 8) -> None:
        torch = require("torch", "neural", "the local transformers VLM")

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.processor = processor
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError("batch_size must be positive")

    @classmethod
    def from_pretrained(cls, model_id_or_path: str, *, device: str | None = None, dtype: Any = None,
                        batch_size: int = 8, **kwargs: Any) -> Any:
        """Load with ``AutoModelForImageTextToText`` / ``AutoProcessor`` from a hub id or a local directory
        (``save_pretrained`` layout)."""
        require("transformers", "neural", "the local transformers VLM")
        from transformers import AutoModelForImageTextToText, AutoProcessor

        processor = AutoProcessor.from_pretrained(model_id_or_path)
        extra = dict(kwargs)
        if dtype is not None:
            extra["dtype"] = dtype
        model = AutoModelForImageTextToText.from_pretrained(model_id_or_path, **extra)
        return cls(model, processor, device=device, batch_size=batch_size)

    @property
    def tokenizer(self) -> Any:
        return getattr(self.processor, "tokenizer", self.processor)

    def chat_text(self, prompt: str) -> str:
        """The model input text of one prompt (chat template with an image, or a plain fallback)."""
        if getattr(self.processor, "chat_template", None):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
            return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        image_token = getattr(self.processor, "image_token", None) or "<image>"
        return f"{image_token}\n{prompt}"

    def _inputs(self, images: Sequence[Any], prompts: Sequence[str]) -> dict[str, Any]:
        tok = self.tokenizer
        old = getattr(tok, "padding_side", None)
        tok.padding_side = "left"  # the next token of every row is at the last position
        try:
            batch = self.processor(images=[to_pil(im) for im in images], text=[self.chat_text(p) for p in prompts],
                                   return_tensors="pt", padding=True)
        finally:
            if old is not None:
                tok.padding_side = old
        dtype = next(self.model.parameters()).dtype
        out = {}
        for k, v in batch.items():
            if hasattr(v, "to"):
                moved = v.to(self.device)
                out[k] = moved.to(dtype) if moved.is_floating_point() else moved
            else:
                out[k] = v
        return out

    def _chunks(self, n: int) -> Iterator[slice]:
        for s in range(0, n, self.batch_size):
            yield slice(s, min(n, s + self.batch_size))

    def _seen_sizes(self, inputs: dict[str, Any], n: int) -> list[tuple[int, int] | None]:
        """(W, H) of each image as the model saw it, where the processor says (a patch grid); None elsewhere."""
        grid = inputs.get("image_grid_thw")
        patch = getattr(getattr(self.processor, "image_processor", None), "patch_size", None)
        if grid is None or not isinstance(patch, int) or len(grid) != n:
            return [None] * n
        return [(int(w) * patch, int(h) * patch) for _, h, w in grid.tolist()]

    def generate_sized(self, images: Sequence[Any], prompts: Sequence[str], max_new_tokens: int = 128
                       ) -> list[tuple[str, tuple[int, int] | None]]:
        """Greedy answers, each with the (W, H) its image had as the model saw it (None: not known, taken to
        be the image's own size)."""
        import torch

        images, prompts = list(images), list(prompts)
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        out: list[tuple[str, tuple[int, int] | None]] = []
        for sl in self._chunks(len(prompts)):
            inputs = self._inputs(images[sl], prompts[sl])
            with torch.inference_mode():
                seq = self.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad)
            new = seq[:, inputs["input_ids"].shape[1]:]
            texts = tok.batch_decode(new, skip_special_tokens=True)
            out.extend(zip(texts, self._seen_sizes(inputs, len(texts)), strict=True))
        return out

    def generate(self, images: Sequence[Any], prompts: Sequence[str], max_new_tokens: int = 128,
                 return_exceptions: bool = False) -> list[Any]:
        """Greedy text answers, one per (image, prompt) pair."""
        return [text for text, _ in self.generate_sized(images, prompts, max_new_tokens)]
