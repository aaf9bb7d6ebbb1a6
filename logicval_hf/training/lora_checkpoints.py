"""The LoRA fine-tuning's run on disk (`logicval_hf.training.train_lora`): which checkpoint the held-out loss
selects, and resumable checkpoints.

* **Selection** — `SelectionTracker` keeps the history of held-out losses and the best (lowest) one and writes
  ``selection.json`` atomically; the trainer copies the best LoRA to ``<output>/best``.
* **Checkpoints** — `save_checkpoint` / `load_checkpoint` (the LoRA in the diffusers format, optimizer, LR
  scheduler, RNG states, the loop position and a copy of the selected LoRA; written to a temporary folder and
  renamed), `latest_checkpoint`, `prune_checkpoints`.

Requires the ``train`` extras (torch, diffusers, peft); nothing here is imported by ``import logicval_hf``.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from logicval_hf.common.atomic import atomic_write_json, replace_dir
from logicval_hf.training.lora import load_lora_into, save_lora

__all__ = ["TRAINER_STATE", "SelectionTracker", "Trainables", "latest_checkpoint", "load_checkpoint",
           "prune_checkpoints", "save_checkpoint"]

TRAINER_STATE = "trainer_state.json"


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

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.CRITERION, **self.info, "best": self.best, "history": self.history}

    def save(self, path: str | Path | None = None) -> None:
        where = path or self.path
        if where is None:
            raise ValueError("SelectionTracker.save: no path given and the tracker has none")
        target = Path(where)
        atomic_write_json(target, self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | Path | None = None) -> SelectionTracker:
        info = {k: v for k, v in d.items() if k not in ("criterion", "best", "history")}
        return cls(Path(path) if path else None, info, list(d.get("history", [])), d.get("best"))

    @classmethod
    def load(cls, path: str | Path) -> SelectionTracker:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")), path)


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


@dataclass
class Trainables:
    """What a checkpoint saves and restores besides the loop position: the transformer with its LoRA (of family
    ``model_type``), the optimizer, the LR scheduler and the noise generator."""

    transformer: torch.nn.Module
    model_type: str
    optimizer: torch.optim.Optimizer
    lr_scheduler: Any
    generator: torch.Generator | None


def save_checkpoint(ckpt_dir: str | Path, run: Trainables, state: Mapping[str, Any],
                    best_lora: str | Path | None = None) -> Path:
    """A resumable checkpoint: LoRA (diffusers format), optimizer, LR scheduler, RNG states, loop ``state``
    and a copy of the currently selected LoRA (``best_lora/``); written to a temporary folder, then renamed."""
    out = Path(ckpt_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        save_lora(tmp / "lora", run.transformer, run.model_type)
        torch.save(run.optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save(run.lr_scheduler.state_dict(), tmp / "lr_scheduler.pt")
        torch.save(_rng_state(run.generator), tmp / "rng.pt")
        if best_lora is not None and Path(best_lora).is_dir():
            shutil.copytree(best_lora, tmp / "best_lora")
        (tmp / TRAINER_STATE).write_text(json.dumps(dict(state), indent=2) + "\n", encoding="utf-8")
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def load_checkpoint(ckpt_dir: str | Path, run: Trainables) -> dict[str, Any]:
    """Restore what `save_checkpoint` wrote into ``run``; returns the loop state."""
    ckpt = Path(ckpt_dir)
    load_lora_into(run.transformer, ckpt / "lora", run.model_type)
    run.optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", map_location="cpu", weights_only=False))
    run.lr_scheduler.load_state_dict(torch.load(ckpt / "lr_scheduler.pt", map_location="cpu", weights_only=False))
    _set_rng_state(torch.load(ckpt / "rng.pt", map_location="cpu", weights_only=False), run.generator)
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
