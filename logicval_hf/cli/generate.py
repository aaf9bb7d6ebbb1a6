"""The ``logicval generate`` subcommand: generate one image per benchmark row with a T2I model.

`add_subcommands(subparsers)` registers it on the main parser (``logicval_hf/cli/main.py``); ``python -m
logicval_hf.cli.generate generate ...`` runs it standalone. Importing this module is cheap: torch/diffusers are
imported only for ``--backend diffusers``, and only when the command runs.

The prompt of a row is its full prompt (paper, Appendix C): ``full_prompt_<register>`` for the open models,
``full_prompt_white_<register>`` (asks for a white background and an empty *white* scene) for the API models;
``--white-background`` / ``--no-white-background`` override the default of the backend; ``--register compact`` takes
``full_prompt_compact`` (the constraints first, for 77-token CLIP text encoders). A warning says how many prompts
are longer than the model's text encoder reads (diffusers pipelines; `warn_long_prompts`). Rows come from a
built dataset folder or a JSONL file of rows (``--dataset``), or from the benchmark sampled in-process
(``--benchmark-seed``, ~15 s). Output: ``<out>/<id>.png`` and ``<out>/generation_log.jsonl`` (see
`logicval_hf.generation.t2i`); a second run resumes. Exit status 0 when no generation failed (refusals are results,
not failures), 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from logicval_hf.cli.dispatch import standalone, timeout_option

__all__ = ["add_subcommands", "cmd_generate", "load_rows", "guess_backend", "make_generator", "main",
           "warn_long_prompts"]

BACKENDS = ("diffusers", "openai", "gemini")


def guess_backend(model: str) -> str:
    """``openai`` for gpt-image / dall-e ids, ``gemini`` for gemini ids, ``diffusers`` otherwise."""
    low = model.lower()
    if low.startswith(("gpt-image", "dall-e", "gpt-")):
        return "openai"
    if "gemini" in low or "imagen" in low:
        return "gemini"
    return "diffusers"


def load_rows(configs: Sequence[str], dataset: str | None = None, benchmark_seed: int | None = None
              ) -> list[dict[str, Any]]:
    """Rows of the given packages as dicts (id, package and the prompt columns): from a built folder
    (``data/<package>.parquet``), a JSONL file of rows, or the benchmark sampled in-process
    (`logicval_hf.benchmark.prompt_rows.read_prompt_rows`, which gives them typed)."""
    from logicval_hf.benchmark.prompt_rows import read_prompt_rows

    return [r.to_dict() for r in read_prompt_rows(configs, dataset, benchmark_seed)]


def make_generator(args: argparse.Namespace):
    """The generator the arguments ask for."""
    from logicval_hf.generation import t2i

    backend = args.backend or guess_backend(args.model)
    if backend == "diffusers":
        return t2i.DiffusersGenerator(
            args.model, model_type=args.model_type, lora=args.lora, lora_scale=args.lora_scale,
            width=args.width, height=args.height, steps=args.steps, guidance_scale=args.guidance_scale,
            true_cfg_scale=args.true_cfg_scale, device=args.device, dtype=args.dtype, cpu_offload=args.cpu_offload)
    if args.lora:
        raise ValueError("--lora only applies to --backend diffusers")
    if backend == "openai":
        return t2i.OpenAIImageGenerator(args.model, base_url=args.base_url, api_key_env=args.api_key_env or
                                        "OPENAI_API_KEY", size=args.size, quality=args.quality or None,
                                        timeout=args.timeout, retries=args.retries)
    return t2i.GeminiImageGenerator(args.model, base_url=args.base_url, api_key_env=args.api_key_env or
                                    "GEMINI_API_KEY", image_size=args.image_size or None, timeout=args.timeout,
                                    retries=args.retries)


def cmd_generate(args: argparse.Namespace) -> int:
    from logicval_hf.cli.dispatch import check_output_dir
    from logicval_hf.generation.t2i import run_generation

    check_output_dir(args.out, "--out")  # before sampling the benchmark and loading a model
    from logicval_hf.benchmark.prompt_rows import read_prompt_rows

    rows = read_prompt_rows([c.strip() for c in args.config.split(",") if c.strip()], args.dataset,
                            args.benchmark_seed)
    if args.ids:
        wanted = {i.strip() for i in args.ids.split(",") if i.strip()}
        rows = [r for r in rows if r.id in wanted]
    if args.limit is not None:
        rows = rows[: args.limit]
    generator = make_generator(args)
    white = generator.white_background if args.white_background is None else args.white_background
    if args.register == "compact":
        column = "full_prompt_compact"  # one variant: the empty-scene instruction has no room for a background
    else:
        column = f"full_prompt_{'white_' if white else ''}{args.register}"
    missing = [r.id for r in rows if column not in r.prompts]
    if missing:
        raise ValueError(f"rows without a {column} column: {missing[:3]}")
    prompts = [(r.id, r.prompts[column]) for r in rows]
    warn_long_prompts(generator, column, prompts)
    counts = run_generation(generator, prompts, args.out, seed=args.seed,
                            retry_refused=args.retry_refused, workers=args.workers, progress=not args.no_progress,
                            extra={"prompt": column})
    print(json.dumps({"out": str(args.out), "model": generator.model, "prompt": column, **counts}))
    return 1 if counts["failed"] else 0


def warn_long_prompts(generator: Any, column: str, items: Sequence[tuple[str, str]]) -> list[str]:
    """Warn (stderr, one line) when prompts are longer than the model's text encoder reads.

    Args:
        generator: the model (`logicval_hf.generation.t2i.Generator`); one that cannot say what it reads is not
            checked.
        column: the prompt column, named in the warning.
        items: ``(id, prompt)`` pairs.
    Returns:
        The ids of the prompts that are cut.
    """
    context = generator.text_context()
    if context is None or not items:
        return []
    limit, count = context
    cut = [i for i, prompt in items if count(prompt) > limit]
    if cut:
        hint = "" if column == "full_prompt_compact" else (
            "; --register compact gives prompts with the constraints first (within 77 CLIP tokens for every "
            "one-constraint row)")
        print(f"logicval generate: warning: {len(cut)} of {len(items)} prompts ({column}) are longer than the "
              f"{limit} tokens the model's text encoder reads, so their ends are never read (e.g. {cut[0]}){hint}",
              file=sys.stderr)
    return cut


def add_subcommands(subparsers: Any) -> None:
    """Register ``generate`` on the ``logicval`` subparsers."""
    from logicval_hf.generation.families import FAMILIES  # cheap: a table, no torch

    families = [FAMILIES.get(name) for name in FAMILIES.names()]
    g = subparsers.add_parser(
        "generate", help="generate one image per benchmark row with a T2I model (diffusers, OpenAI, Gemini)",
        description="Generate <out>/<id>.png for every row of the chosen packages, with a resumable "
                    "generation_log.jsonl (status ok|refused|failed per id).")
    g.add_argument("--model", required=True,
                   help="diffusers: hub id or local pipeline folder (FLUX.1-dev, Qwen-Image); "
                        "openai: e.g. gpt-image-2; gemini: e.g. gemini-3-pro-image-preview")
    g.add_argument("--backend", choices=BACKENDS, default=None,
                   help="default: openai for gpt-image/dall-e ids, gemini for gemini ids, diffusers otherwise")
    g.add_argument("--config", default="1SAT",
                   help="package(s): 1SAT, 1UNSAT, 3SAT, 3UNSAT, 6SAT, 6UNSAT, a comma list or 'all' (default 1SAT)")
    g.add_argument("--out", required=True, help="output folder (<id>.png, generation_log.jsonl)")
    g.add_argument("--dataset", default=None,
                   help="built dataset folder (data/<package>.parquet) or JSONL of rows; default: sample the "
                        "benchmark in-process")
    g.add_argument("--benchmark-seed", type=int, default=None, help="benchmark seed when sampling in-process (509)")
    g.add_argument("--white-background", dest="white_background", action="store_true", default=None,
                   help="use the white-background prompt variant (default for the API backends)")
    g.add_argument("--no-white-background", dest="white_background", action="store_false",
                   help="use the plain prompt variant (default for diffusers)")
    g.add_argument("--register", choices=("short", "long", "compact"), default="short",
                   help="prompt register (default short); compact: the full_prompt_compact column, the "
                        "constraints first, for 77-token CLIP text encoders (no white-background variant)")
    g.add_argument("--limit", type=int, default=None, help="only the first K rows")
    g.add_argument("--ids", default=None, help="only these row ids (comma-separated)")
    g.add_argument("--seed", type=int, default=0, help="base seed; each id gets a stable seed derived from it")
    g.add_argument("--retry-refused", action="store_true", help="retry ids logged as refused (default: keep them)")
    g.add_argument("--workers", type=int, default=1, help="concurrent requests (API backends; default 1)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    d = g.add_argument_group("diffusers backend")
    d.add_argument("--lora", default=None, help="LoRA folder or .safetensors (e.g. <train output>/best)")
    d.add_argument("--lora-scale", type=float, default=1.0, help="LoRA strength (default 1.0)")
    d.add_argument("--model-type", choices=FAMILIES.names(), default=None,
                   help="model family (default: detected from model_index.json or the name)")
    d.add_argument("--width", type=int, default=1024, help="image width (default 1024)")
    d.add_argument("--height", type=int, default=688, help="image height (default 688)")
    steps = ", ".join(f"{f.label} {f.generation_defaults['num_inference_steps']}" for f in families)
    d.add_argument("--steps", type=int, default=None, help=f"denoising steps (default: {steps})")
    d.add_argument("--guidance-scale", type=float, default=None, help="FLUX guidance (default 3.5)")
    d.add_argument("--true-cfg-scale", type=float, default=None, help="Qwen-Image true-CFG scale (default 4.0)")
    d.add_argument("--device", default=None, help="torch device (default cuda if available, else cpu)")
    d.add_argument("--dtype", default=None, choices=("bf16", "fp16", "fp32"),
                   help="weights dtype (default bf16 on cuda, fp32 on cpu)")
    d.add_argument("--cpu-offload", action="store_true", help="enable_model_cpu_offload() (less GPU memory)")
    a = g.add_argument_group("API backends")
    a.add_argument("--base-url", default=None,
                   help="API root (openai: $OPENAI_BASE_URL or https://api.openai.com/v1; gemini: "
                        "https://generativelanguage.googleapis.com/v1beta)")
    a.add_argument("--api-key-env", default=None,
                   help="environment variable with the key (default OPENAI_API_KEY / GEMINI_API_KEY)")
    a.add_argument("--size", default="1024x1024", help="openai image size (default 1024x1024)")
    a.add_argument("--quality", default="low", help="openai quality tier (default low; '' to omit)")
    a.add_argument("--image-size", default="1K", help="gemini imageConfig.imageSize (default 1K; '' to omit)")
    timeout_option(a, 300.0, "seconds per HTTP request", none_ok=False)
    a.add_argument("--retries", type=int, default=3, help="extra attempts on 429/5xx/timeouts (default 3)")
    g.set_defaults(func=cmd_generate)


#: ``python -m logicval_hf.cli.generate``: these commands alone, with the ``logicval`` error convention
main = standalone(add_subcommands, "LogicVal generation commands.")


if __name__ == "__main__":
    sys.exit(main())
