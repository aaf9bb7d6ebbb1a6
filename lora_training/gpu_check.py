#!/usr/bin/env python
"""Real-size GPU check of the LoRA training and generation (NOT run in CI; needs a GPU and local weights).

For one model (FLUX.1-dev or Qwen-Image, from a LOCAL diffusers folder: no hub access is assumed), it

1. renders ``--scenes`` CLEVR-style scenes at 480x320 (`logicval_hf.generation.render`), captions them
   (`logicval_hf.training.lora_data.build_pairs`) and builds a tiny split (1 held-out pair per class, one batch);
2. runs the real ``train_lora.py`` for ``--steps`` optimizer steps at 1024x688 (rank 16, alpha 16, lr 1e-4,
   batch size 1, bf16, gradient checkpointing unless ``--no_gradient_checkpointing``), with one held-out
   evaluation on ``--heldout_limit`` pairs at the end;
3. reloads the selected LoRA with ``pipe.load_lora_weights`` and generates one 1024x688 image with the paper's
   settings (FLUX 28 steps guidance 3.5, Qwen-Image 50 steps true-CFG 4.0), unless ``--no_generate``.

It reports (stdout and ``--report`` JSON): peak GPU memory allocated/reserved during training and during
generation, seconds per training step (first step separately: it includes CUDA warm-up), held-out
evaluation time, load times and the generation time. Everything it writes goes under ``--workdir``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))


def parse_args(argv=None) -> argparse.Namespace:
    from logicval_hf.generation.families import FAMILIES

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model_type", choices=FAMILIES.names(), required=True, help="model family")
    p.add_argument("--pretrained_model_name_or_path", required=True, help="LOCAL diffusers folder of the model")
    p.add_argument("--workdir", default="gpu_check_out", help="where data, LoRA and images go")
    p.add_argument("--report", default=None, help="JSON report path (default <workdir>/report_<model_type>.json)")
    p.add_argument("--steps", type=int, default=6, help="training steps to time")
    p.add_argument("--scenes", type=int, default=40, help="rendered scenes for the synthetic split")
    p.add_argument("--heldout_limit", type=int, default=3, help="held-out pairs in the evaluation")
    p.add_argument("--width", type=int, default=1024, help="training / generation width")
    p.add_argument("--height", type=int, default=688, help="training / generation height")
    p.add_argument("--no_gradient_checkpointing", action="store_true", help="train without checkpointing")
    p.add_argument("--no_generate", action="store_true", help="skip the generation check")
    return p.parse_args(argv)


def _render_split(workdir: Path, count: int, seed: int = 0) -> Path:
    from logicval_hf.benchmark.sampler import random_scene
    from logicval_hf.generation.render import render_scene
    from logicval_hf.training.lora_data import build_pairs, split_pairs, write_split

    images = workdir / "clevr" / "images"
    images.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    scenes = []
    for i in range(count):
        img, drawn = render_scene(random_scene(rng.randint(3, 9), rng), (480, 320), seed=i)
        name = f"GPU_{i:03d}.png"
        img.save(images / name)
        scenes.append({"image_filename": name, "objects": [
            dict(o.attributes, pixel_coords=[(o.bbox[0] + o.bbox[2]) / 2, (o.bbox[1] + o.bbox[3]) / 2, 1.0])
            for o in drawn.objects]})
    (workdir / "clevr" / "scenes.json").write_text(json.dumps({"info": {}, "scenes": scenes}))
    pairs = build_pairs(workdir / "clevr" / "scenes.json", images, seed=42)
    for min_count in range(2, 40):  # keep only templates common enough for one batch of distinct images
        try:
            split = split_pairs(pairs, seed=42, heldout_per_class=1, batch_size=20, min_template_count=min_count,
                                max_batches=1)
            break
        except ValueError:
            continue
    else:
        raise SystemExit("could not build a split from the rendered scenes; raise --scenes")
    write_split(split, workdir / "data")
    return workdir / "data"


def main(argv=None) -> dict:
    args = parse_args(argv)
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        raise SystemExit("gpu_check needs a CUDA GPU")
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    report: dict = {"model_type": args.model_type, "model": args.pretrained_model_name_or_path,
                    "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                    "resolution": [args.width, args.height], "steps": args.steps,
                    "gradient_checkpointing": not args.no_gradient_checkpointing}
    t = time.perf_counter()
    data = _render_split(workdir, args.scenes)
    report["data_seconds"] = round(time.perf_counter() - t, 2)

    spec = importlib.util.spec_from_file_location("train_lora", Path(__file__).with_name("train_lora.py"))
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    out = workdir / f"lora_{args.model_type}"
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    train_args = ["--pretrained_model_name_or_path", args.pretrained_model_name_or_path,
                  "--model_type", args.model_type, "--data_dir", str(data), "--output_dir", str(out),
                  "--width", str(args.width), "--height", str(args.height), "--steps_per_batch", str(args.steps),
                  "--heldout_every", str(args.steps), "--heldout_limit", str(args.heldout_limit),
                  "--checkpointing_steps", "0", "--mixed_precision", "bf16", "--no_progress"]
    if not args.no_gradient_checkpointing:
        train_args.append("--gradient_checkpointing")
    summary = train.main(train_args)
    report["train_total_seconds"] = round(time.perf_counter() - t, 2)
    steps = summary["step_seconds"]
    report["first_step_seconds"] = round(steps[0], 3)
    report["median_step_seconds"] = round(statistics.median(steps[1:] or steps), 3)
    report["train_losses"] = summary["train_losses"]
    report["train_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    report["train_peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
    sel = json.loads((out / "selection.json").read_text())
    report["heldout_loss"] = sel["best"]["heldout_loss"] if sel["best"] else None
    lora_file = out / "best" / "pytorch_lora_weights.safetensors"
    report["lora_megabytes"] = round(lora_file.stat().st_size / 2**20, 1)
    del train
    import gc

    gc.collect()
    torch.cuda.empty_cache()

    if not args.no_generate:
        from logicval_hf.generation.t2i import DiffusersGenerator
        from logicval_hf.training.captions import ground_captions

        torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        gen = DiffusersGenerator(args.pretrained_model_name_or_path, model_type=args.model_type, lora=out / "best",
                                 width=args.width, height=args.height, device="cuda")
        report["pipeline_load_seconds"] = round(time.perf_counter() - t, 2)
        raw = json.loads((workdir / "clevr" / "scenes.json").read_text())["scenes"][0]
        prompt = ground_captions(raw, seed=0)[0]["prompt"]
        t = time.perf_counter()
        image = gen.generate(prompt, seed=0)
        torch.cuda.synchronize()
        report["generation_seconds"] = round(time.perf_counter() - t, 2)
        report["generation_settings"] = {k: v for k, v in gen.settings.items() if k != "negative_prompt"}
        report["generation_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        image.save(workdir / f"sample_{args.model_type}.png")
        report["image_size"] = list(image.size)
    path = Path(args.report or workdir / f"report_{args.model_type}.json")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
