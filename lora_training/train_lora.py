#!/usr/bin/env python
"""LoRA fine-tuning of FLUX.1-dev or Qwen-Image on CLEVR images captioned with constraints that hold (paper,
Appendix F): a thin shell over `logicval_hf.training.train_lora`, which holds the loop, its flags and its
outputs (``python lora_training/train_lora.py --help``). See ``lora_training/README.md``.

    accelerate launch lora_training/train_lora.py --model_type flux \\
        --pretrained_model_name_or_path black-forest-labs/FLUX.1-dev \\
        --data_dir clevr_lora_data --output_dir lora-flux --gradient_checkpointing
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(_ROOT))

from logicval_hf.training.train_lora import main, parse_args  # noqa: E402

__all__ = ["main", "parse_args"]

if __name__ == "__main__":
    main()
