"""LoRA fine-tuning of FLUX.1-dev or Qwen-Image on CLEVR images captioned with constraints that hold.

The LogicVal paper (Appendix F): every CLEVR training image is paired with captions "There are N objects in
the scene. <a C1..C9 constraint that holds in it>" (`logicval_hf.training.captions`); the pairs are split into a
fixed, class-balanced held-out set of 99 images and batches of about 2,000 pairs that are balanced over the
(class, template) pairs (`logicval_hf.training.lora_data`). Training runs batch after batch, each batch continuing
from the weights the previous one ended with; every ``--heldout_every`` (50) optimizer steps and at the end
of every batch the loss on the held-out set is computed (fixed noise and timesteps), and the checkpoint with
the lowest held-out loss is kept in ``<output_dir>/best`` and recorded in ``<output_dir>/selection.json``.

Hyperparameters of the paper (the defaults): LoRA rank 16, alpha 16, learning rate 1e-4, batch size 1,
resolution 1024x688, seed 42; the models' native flow-matching loss.

Outputs in ``--output_dir``:
  best/             the selected LoRA (diffusers format + adapter metadata; ``pipe.load_lora_weights(dir)``)
  last/             the LoRA after the last step;  batch-<b>/  the LoRA at the end of batch b
  checkpoint-<N>/   resumable state (LoRA, optimizer, LR scheduler, RNG, loop position, copy of best/)
  selection.json    held-out history and the selection;  losses.jsonl  every train / held-out loss
  args.json         the arguments;  data/  the split, when built here from --scenes/--image_dir

``lora_training/train_lora.py`` runs this module (``python -m logicval_hf.training.train_lora`` does the same);
the model, loss, data, held-out and checkpoint pieces it loops over are `logicval_hf.training.lora`.

Example::

    python -m logicval_hf.training.lora_data --scenes CLEVR_v1.0/scenes/CLEVR_train_scenes.json \\
        --images CLEVR_v1.0/images/train --out clevr_lora_data
    accelerate launch lora_training/train_lora.py --model_type flux \\
        --pretrained_model_name_or_path black-forest-labs/FLUX.1-dev \\
        --data_dir clevr_lora_data --output_dir lora-flux --gradient_checkpointing

Single process (one GPU). Needs the ``train`` extras.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["check_images", "main", "parse_args"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from logicval_hf.generation.families import FAMILIES
    from logicval_hf.training import lora as L

    families = [FAMILIES.get(name) for name in FAMILIES.names()]
    msl = " / ".join(f"{f.max_sequence_length} {f.label}" for f in families)
    distilled = ", ".join(f.label for f in families if f.guidance_embeds) or "none"
    p = argparse.ArgumentParser(description="LoRA fine-tuning of FLUX.1-dev / Qwen-Image on constraint-captioned "
                                            "CLEVR (LogicVal, Appendix F).",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("model")
    g.add_argument("--pretrained_model_name_or_path", required=True,
                   help="hub id (black-forest-labs/FLUX.1-dev, Qwen/Qwen-Image) or a local diffusers pipeline folder")
    g.add_argument("--model_type", choices=FAMILIES.names(), default=None,
                   help="model family; default: read from the folder's model_index.json or guessed from the name")
    g.add_argument("--revision", default=None, help="hub revision of the pretrained model")
    g.add_argument("--variant", default=None, help="weight variant of the pretrained model (e.g. fp16)")

    g = p.add_argument_group("data")
    g.add_argument("--data_dir", default=None,
                   help="folder written by `python -m logicval_hf.training.lora_data` (heldout.jsonl, batch_###.jsonl)")
    g.add_argument("--scenes", default=None,
                   help="CLEVR scenes JSON; with --image_dir, build the split here (into <output_dir>/data)")
    g.add_argument("--image_dir", default=None,
                   help="folder of the CLEVR images; with --data_dir it overrides the image paths of the manifests")
    g.add_argument("--batch_size_pairs", type=int, default=2000,
                   help="pairs per batch when building the split from --scenes")
    g.add_argument("--heldout_per_class", type=int, default=11,
                   help="held-out pairs per class when building the split from --scenes (11 x 9 = 99 images)")
    g.add_argument("--batches", default="all",
                   help="batches to train on, in order: 'all', a list '0,1,2' or a range '0-2'")
    g.add_argument("--width", type=int, default=L.DEFAULT_WIDTH, help="training image width (pixels)")
    g.add_argument("--height", type=int, default=L.DEFAULT_HEIGHT, help="training image height (pixels)")
    g.add_argument("--max_sequence_length", type=int, default=None,
                   help=f"prompt tokens for the text encoder (default: the pipeline's, {msl})")

    g = p.add_argument_group("LoRA and optimisation")
    g.add_argument("--rank", type=int, default=L.DEFAULT_RANK, help="LoRA rank")
    g.add_argument("--lora_alpha", type=float, default=L.DEFAULT_ALPHA, help="LoRA alpha (scale = alpha / rank)")
    g.add_argument("--lora_dropout", type=float, default=0.0, help="dropout on the LoRA branch")
    g.add_argument("--lora_layers", default=",".join(L.TARGET_MODULES),
                   help="comma-separated module names that get a LoRA")
    g.add_argument("--learning_rate", type=float, default=L.DEFAULT_LEARNING_RATE, help="AdamW learning rate")
    g.add_argument("--lr_scheduler", default="constant",
                   help="diffusers LR schedule: constant, constant_with_warmup, linear, cosine, ...")
    g.add_argument("--lr_warmup_steps", type=int, default=0, help="warm-up steps of the LR schedule")
    g.add_argument("--adam_beta1", type=float, default=0.9, help="AdamW beta1")
    g.add_argument("--adam_beta2", type=float, default=0.999, help="AdamW beta2")
    g.add_argument("--adam_weight_decay", type=float, default=1e-4, help="AdamW weight decay")
    g.add_argument("--adam_epsilon", type=float, default=1e-8, help="AdamW epsilon")
    g.add_argument("--max_grad_norm", type=float, default=1.0, help="gradient clipping norm")
    g.add_argument("--train_batch_size", type=int, default=L.DEFAULT_TRAIN_BATCH_SIZE, help="pairs per micro-batch")
    g.add_argument("--gradient_accumulation_steps", type=int, default=1, help="micro-batches per optimizer step")
    g.add_argument("--steps_per_batch", type=int, default=None,
                   help="optimizer steps per data batch (default: one pass over the batch's pairs)")
    g.add_argument("--max_train_steps", type=int, default=None, help="stop after this many optimizer steps in all")
    g.add_argument("--weighting_scheme", default="none",
                   choices=["none", "sigma_sqrt", "logit_normal", "mode", "cosmap"],
                   help="timestep density / loss weighting of the flow-matching loss (diffusers)")
    g.add_argument("--logit_mean", type=float, default=0.0, help="mean for the logit_normal weighting scheme")
    g.add_argument("--logit_std", type=float, default=1.0, help="std for the logit_normal weighting scheme")
    g.add_argument("--mode_scale", type=float, default=1.29, help="scale for the mode weighting scheme")
    g.add_argument("--guidance_scale", type=float, default=L.DEFAULT_GUIDANCE_SCALE,
                   help=f"distilled guidance value during training (used by {distilled}; ignored by the others)")
    g.add_argument("--seed", type=int, default=L.DEFAULT_SEED, help="seed of everything (order, noise, held-out draws)")

    g = p.add_argument_group("held-out selection, checkpoints, logging")
    g.add_argument("--output_dir", default="lora-output", help="where LoRAs, checkpoints and logs go")
    g.add_argument("--heldout_every", type=int, default=50,
                   help="compute the held-out loss every N optimizer steps (and at the end of every batch)")
    g.add_argument("--heldout_limit", type=int, default=None,
                   help="use only the first K held-out pairs (debugging; the paper uses all 99)")
    g.add_argument("--checkpointing_steps", type=int, default=500,
                   help="save a resumable checkpoint every N optimizer steps (one is always saved after each batch)")
    g.add_argument("--checkpoints_total_limit", type=int, default=None,
                   help="keep at most this many checkpoint-<N> folders (oldest deleted)")
    g.add_argument("--resume_from_checkpoint", default=None,
                   help="a checkpoint folder, or 'latest' for the newest under --output_dir")
    g.add_argument("--report_to", default="none", choices=["none", "tensorboard", "wandb"],
                   help="also log to this accelerate tracker (losses.jsonl is always written)")

    g = p.add_argument_group("hardware")
    g.add_argument("--mixed_precision", default="auto", choices=["auto", "no", "fp16", "bf16"],
                   help="weights dtype / autocast; auto = bf16 on a GPU that supports it, else fp32")
    g.add_argument("--gradient_checkpointing", action="store_true",
                   help="recompute activations in the backward pass (less memory, ~30%% slower)")
    g.add_argument("--allow_tf32", action="store_true", help="allow TF32 matmuls on Ampere+ GPUs")
    g.add_argument("--no_progress", action="store_true", help="disable the progress bar")
    g.add_argument("--verbose", action="store_true",
                   help="keep diffusers/transformers warnings (e.g. CLIP's 77-token truncation on every prompt)")
    args = p.parse_args(argv)
    if not args.data_dir and not (args.scenes and args.image_dir):
        p.error("give --data_dir, or --scenes and --image_dir to build the split")
    for name in ("heldout_every", "train_batch_size", "gradient_accumulation_steps", "rank"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    return args


def _select_batches(spec: str, n: int) -> list[int]:
    if spec == "all":
        return list(range(n))
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    bad = [b for b in out if not 0 <= b < n]
    if bad:
        raise SystemExit(f"--batches: {bad} out of range (the split has {n} batches)")
    return out


def check_images(rows: Sequence[dict[str, Any]], image_root: str | Path | None = None) -> None:
    """Every image the run will read, checked from its header (`logicval_hf.perception.images.open_checked`:
    readable, an image, within the pixel cap) before the model loads, so a bad file stops the run at once
    with one line naming it instead of a traceback from the data loader hours later.

    Raises:
        SystemExit: the first bad image, named.
    """
    from logicval_hf.perception.images import PerceptionError, open_checked
    from logicval_hf.training.lora import resolve_image

    for path in dict.fromkeys(resolve_image(r, image_root) for r in rows):
        try:
            open_checked(path, f"training image {str(path)!r}").close()
        except PerceptionError as e:
            raise SystemExit(f"train_lora: error: {e}") from None


def _load_split(args: argparse.Namespace, output_dir: Path):
    from logicval_hf.training.lora_data import build_pairs, read_split, split_pairs, write_split

    if args.data_dir:
        return read_split(args.data_dir), (args.image_dir or None)
    data = output_dir / "data"
    if (data / "heldout.jsonl").is_file():
        return read_split(data), None
    pairs = build_pairs(args.scenes, args.image_dir, seed=args.seed, progress=not args.no_progress)
    split = split_pairs(pairs, seed=args.seed, heldout_per_class=args.heldout_per_class,
                        batch_size=args.batch_size_pairs)
    write_split(split, data)
    return split, None


class _JsonlLog:
    def __init__(self, path: Path):
        self.path = path

    def write(self, **record: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, separators=(",", ":")) + "\n")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)

    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from diffusers.optimization import get_scheduler
    from tqdm.auto import tqdm

    from logicval_hf.training import lora as L
    from logicval_hf.training import lora_checkpoints as C

    if not args.verbose:  # the pipelines warn on every prompt longer than CLIP's 77 tokens
        import diffusers
        import transformers

        diffusers.utils.logging.set_verbosity_error()
        transformers.utils.logging.set_verbosity_error()
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    mp = args.mixed_precision
    if mp == "auto":
        mp = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"
    accelerator = Accelerator(mixed_precision=mp, log_with=None if args.report_to == "none" else args.report_to,
                              project_dir=str(output_dir))
    weight_dtype = {"no": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[mp]
    if args.allow_tf32 and torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = True
    set_seed(args.seed)
    model_type = args.model_type or L.detect_model_type(args.pretrained_model_name_or_path)
    (output_dir / "args.json").write_text(json.dumps({**vars(args), "model_type": model_type,
                                                      "mixed_precision": mp}, indent=2) + "\n")

    split, image_root = _load_split(args, output_dir)
    selected = _select_batches(args.batches, len(split.batches))
    heldout_rows = [p.to_dict() for p in split.heldout][: args.heldout_limit]
    check_images([*heldout_rows, *(p.to_dict() for b in selected for p in split.batches[b])], image_root)

    comp = L.load_components(model_type, args.pretrained_model_name_or_path, weight_dtype, accelerator.device,
                             args.revision, args.variant)
    m = comp.patch_multiple
    if args.width % m or args.height % m:
        raise SystemExit(f"--width/--height must be multiples of {m} for {model_type}")
    if args.gradient_checkpointing:
        comp.transformer.enable_gradient_checkpointing()
    L.add_lora(comp.transformer, args.rank, args.lora_alpha,
               [s.strip() for s in args.lora_layers.split(",") if s.strip()], args.lora_dropout)
    params = L.lora_parameters(comp.transformer)
    optimizer = torch.optim.AdamW(params, lr=args.learning_rate, betas=(args.adam_beta1, args.adam_beta2),
                                  weight_decay=args.adam_weight_decay, eps=args.adam_epsilon)
    per_step = args.train_batch_size * args.gradient_accumulation_steps

    def steps_in(b: int) -> int:
        return args.steps_per_batch or max(1, math.ceil(len(split.batches[b]) / per_step))

    planned = sum(steps_in(b) for b in selected)
    if args.max_train_steps:
        planned = min(planned, args.max_train_steps)
    lr_scheduler = get_scheduler(args.lr_scheduler, optimizer=optimizer, num_warmup_steps=args.lr_warmup_steps,
                                 num_training_steps=max(planned, 1))
    transformer, optimizer, lr_scheduler = accelerator.prepare(comp.transformer, optimizer, lr_scheduler)
    comp.transformer = transformer
    noise_gen = torch.Generator(device="cpu").manual_seed(args.seed)

    held = L.prepare_heldout(comp, heldout_rows, args.width, args.height, args.seed, args.max_sequence_length,
                             image_root, args.weighting_scheme, progress=not args.no_progress)
    tracker = C.SelectionTracker(output_dir / "selection.json", {
        "model_type": model_type, "base_model": str(args.pretrained_model_name_or_path), "rank": args.rank,
        "lora_alpha": args.lora_alpha, "learning_rate": args.learning_rate, "resolution": [args.width, args.height],
        "seed": args.seed, "heldout_pairs": len(held), "heldout_every": args.heldout_every,
        "batches": selected, "best_dir": "best"})
    state: dict[str, Any] = {"global_step": 0, "batch_pos": 0, "step_in_batch": 0, "last_eval_step": None}
    trainables = C.Trainables(transformer, model_type, optimizer, lr_scheduler, noise_gen)
    log = _JsonlLog(output_dir / "losses.jsonl")

    if args.resume_from_checkpoint:
        ckpt = (C.latest_checkpoint(output_dir) if args.resume_from_checkpoint == "latest"
                else Path(args.resume_from_checkpoint))
        if ckpt is None:
            accelerator.print(f"no checkpoint under {output_dir}; starting a new run")
        else:
            state = C.load_checkpoint(ckpt, trainables)
            tracker = C.SelectionTracker.from_dict(state.pop("selection"), output_dir / "selection.json")
            # the selected LoRA as it was at the checkpoint (a crashed run may have replaced it later)
            shutil.rmtree(output_dir / "best", ignore_errors=True)
            if (ckpt / "best_lora").is_dir():
                shutil.copytree(ckpt / "best_lora", output_dir / "best")
            tracker.save()
            log.write(event="resume", checkpoint=str(ckpt), global_step=state["global_step"])
            accelerator.print(f"resumed from {ckpt} at step {state['global_step']}")
    if args.report_to != "none":
        accelerator.init_trackers("logicval-lora", config={k: v for k, v in vars(args).items()
                                                           if isinstance(v, (int, float, str, bool))})

    def evaluate(b: int) -> dict[str, Any]:
        res = L.heldout_loss(comp, transformer, held, args.guidance_scale, args.weighting_scheme)
        rec = {"global_step": state["global_step"], "batch": b, "step_in_batch": state["step_in_batch"],
               "heldout_loss": res["loss"], "per_class": res["per_class"], "train_loss_mean": _mean(recent)}
        recent.clear()
        if tracker.update(rec):
            L.save_lora(output_dir / "best", transformer, model_type, extra=rec)
        tracker.save()
        state["last_eval_step"] = state["global_step"]
        log.write(event="heldout", **rec)
        accelerator.log({"heldout_loss": res["loss"]}, step=state["global_step"])
        return rec

    def checkpoint() -> None:
        path = output_dir / f"checkpoint-{state['global_step']}"
        C.save_checkpoint(path, trainables, {**state, "selection": tracker.to_dict()}, best_lora=output_dir / "best")
        C.prune_checkpoints(output_dir, args.checkpoints_total_limit)

    recent: list[float] = []
    train_losses: list[float] = []
    bar = tqdm(total=planned, initial=min(state["global_step"], planned), desc="LoRA steps",
               disable=args.no_progress)
    step_times: list[float] = []
    stop = False
    transformer.train()
    for bpos in range(state["batch_pos"], len(selected)):
        b = selected[bpos]
        rows = [p.to_dict() for p in split.batches[b]]
        dataset = L.PairDataset(rows, args.width, args.height, image_root)
        order = L.batch_order(len(rows), args.seed, b)
        start = state["step_in_batch"] if bpos == state["batch_pos"] else 0
        for step in range(start, steps_in(b)):
            if args.max_train_steps and state["global_step"] >= args.max_train_steps:
                stop = True
                break
            t0 = time.perf_counter()
            total = 0.0
            for micro in range(args.gradient_accumulation_steps):
                k0 = (step * args.gradient_accumulation_steps + micro) * args.train_batch_size
                batch = L.collate([dataset[order[(k0 + j) % len(rows)]] for j in range(args.train_batch_size)])
                latents = L.encode_images(comp, batch["pixel_values"], sample=True, generator=noise_gen)
                cond = L.encode_prompts(comp, batch["prompts"], args.max_sequence_length)
                noise = torch.randn(latents.shape, generator=noise_gen, dtype=torch.float32).to(latents.device)
                idx = L.sample_timestep_indices(comp.scheduler, latents.shape[0], noise_gen, args.weighting_scheme,
                                                args.logit_mean, args.logit_std, args.mode_scale)
                loss = L.flow_matching_loss(comp, transformer, latents, cond, noise, idx, args.weighting_scheme,
                                            args.guidance_scale)
                accelerator.backward(loss / args.gradient_accumulation_steps)
                total += float(loss.detach()) / args.gradient_accumulation_steps
            accelerator.clip_grad_norm_(params, args.max_grad_norm)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step_times.append(time.perf_counter() - t0)
            state["global_step"] += 1
            state["step_in_batch"] = step + 1
            state["batch_pos"] = bpos
            recent.append(total)
            train_losses.append(total)
            lr = lr_scheduler.get_last_lr()[0]
            log.write(event="train", global_step=state["global_step"], batch=b, step_in_batch=step + 1,
                      loss=total, lr=lr)
            accelerator.log({"train_loss": total, "lr": lr}, step=state["global_step"])
            bar.update(1)
            bar.set_postfix(loss=f"{total:.4f}", batch=b)
            if state["global_step"] % args.heldout_every == 0:
                rec = evaluate(b)
                bar.set_postfix(loss=f"{total:.4f}", heldout=f"{rec['heldout_loss']:.4f}", batch=b)
            if args.checkpointing_steps and state["global_step"] % args.checkpointing_steps == 0:
                checkpoint()
        if stop:
            break
        if state["last_eval_step"] != state["global_step"]:
            evaluate(b)
        L.save_lora(output_dir / f"batch-{b}", transformer, model_type,
                    extra={"batch": b, "global_step": state["global_step"]})
        state["batch_pos"], state["step_in_batch"] = bpos + 1, 0
        checkpoint()
    bar.close()
    if state["last_eval_step"] != state["global_step"]:
        evaluate(selected[min(state["batch_pos"], len(selected) - 1)] if selected else -1)
    L.save_lora(output_dir / "last", transformer, model_type, extra={"global_step": state["global_step"]})
    tracker.save()
    accelerator.end_training()
    summary = {"global_step": state["global_step"], "best": tracker.best, "evaluations": len(tracker.history),
               "train_losses": train_losses, "step_seconds": step_times, "mean_step_seconds": _mean(step_times),
               "output_dir": str(output_dir)}
    (output_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if tracker.best is not None:
        accelerator.print(f"selected: step {tracker.best['global_step']} (batch {tracker.best['batch']}), "
                          f"held-out loss {tracker.best['heldout_loss']:.4f} -> {output_dir / 'best'}")
    return summary


def _mean(xs: Sequence[float]) -> float | None:
    return float(sum(xs) / len(xs)) if xs else None


if __name__ == "__main__":
    main()
