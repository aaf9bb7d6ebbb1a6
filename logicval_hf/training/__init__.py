"""Training: the CLEVR caption grounder, LoRA data and fine-tuning, and perception training."""
