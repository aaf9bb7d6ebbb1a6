"""Stage 1 of the main job: the built-in generators draw one image per spec, with the scene they intended.

Each image is ``images/<generator>/<id>.png``; its intended scene and the generator's metadata (the known truth,
the change a perturbation made) are ``intended/<generator>/<id>.json``. Both are reused on resume while the
generator, seed, size, renderer and code are unchanged (`logicval_hf.job.cache.intended_ok`).
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from logicval_hf.asp.solver import default_solver
from logicval_hf.benchmark.rows import BenchmarkRow
from logicval_hf.common.atomic import atomic_write_bytes, atomic_write_json
from logicval_hf.job import cache
from logicval_hf.job.options import render_settings
from logicval_hf.job.workers import WORKER, Workers

__all__ = ["generate", "render_settings"]


def png_bytes(image: Any) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _gen_task(task: tuple[str, int, tuple[int, int], BenchmarkRow, str, str, dict]
              ) -> tuple[tuple[str, dict], float]:
    from logicval_hf.generation.builtin import make_generator

    c0 = time.process_time()
    name, seed, size, row, img_path, meta_path, render = task
    key = (name, seed, size, json.dumps(render, sort_keys=True))
    gen = WORKER.get(key)
    if gen is None:
        solver = WORKER.get("solver") or default_solver()
        gen = WORKER[key] = make_generator(name, seed=seed, image_size=size, solver=solver, **render)
    image, scene, meta = gen.generate(row)
    data = png_bytes(image)
    atomic_write_bytes(img_path, data)
    record = {
        "generator": name,
        "id": row.id,
        "seed": seed,
        "image_size": list(size),
        "renderer": render.get("renderer", "numpy"),
        "spec_json": row.spec_json,
        "image_sha1": cache.sha1(data),
        "generator_fingerprint": cache.generator_fingerprint(),
        "metadata": meta,
        "intended": scene.to_dict(),
    }
    atomic_write_json(meta_path, record)
    return (row.id, record), time.process_time() - c0


def generate(name: str, seed: int, size: tuple[int, int], rows: Sequence[BenchmarkRow], out: Path, resume: bool,
             workers: Workers, progress: bool, render: Mapping[str, Any] | None = None
             ) -> tuple[dict[str, dict], dict[str, int], float]:
    """Images and intended scenes of one built-in generator: ``({id: record}, work counters, worker CPU s)``."""
    from tqdm.auto import tqdm

    img_dir, meta_dir = out / "images" / name, out / "intended" / name
    renderer = (render or {}).get("renderer", "numpy")
    records: dict[str, dict] = {}
    tasks = []
    for row in rows:
        img, meta = img_dir / f"{row.id}.png", meta_dir / f"{row.id}.json"
        if resume and img.is_file():
            rec = cache.read_json(meta)
            if rec is not None and cache.intended_ok(rec, name, seed, size, row, renderer):
                records[row.id] = rec
                continue
        tasks.append((name, seed, tuple(size), row, str(img), str(meta), dict(render or {})))
    work = {"generated": len(tasks), "reused": len(records)}
    cpu = 0.0
    with tqdm(total=len(rows), initial=len(records), desc=f"generate {name}", unit="img", disable=not progress,
              leave=False, file=sys.stderr) as bar:
        for (rid, rec), c in workers.imap(_gen_task, tasks):
            records[rid] = rec
            cpu += c
            bar.update(1)
    return records, work, cpu
