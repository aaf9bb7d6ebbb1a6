"""Sudoku made and read back: how fast puzzles are made with their uniqueness proofs, and how well answer images
are read after JPEG, scaling, rotation and reframing, against baselines measured in the same run.

* **Making.** ``--make`` puzzles through `make_puzzles` (files written, every solution proved unique); the baseline
  makes ``--baseline-make`` puzzles the plain way: the same removal, but each uniqueness check grounds the rules
  anew and counts models up to two.
* **Reading.** ``--images`` answer images, each re-saved as JPEG (quality 85), scaled 0.75-1.5x, rotated up to
  2 degrees either way, padded 0-80 px on each side at random, a third of them inside a drawn frame. Each is read
  and checked (`check_image`): cells read right, answers found valid, and the same image with two digits of
  different empty cells swapped must never be valid. The baseline, on every ``--every``-th image, runs OCR on the
  whole image and puts each line's digits into the cells under the line (GIR-Bench's own reading, by position).

    python benchmarks/bench_sudoku.py [--make 100] [--images 200] [--seed 0] [--every 10] [--out FILE]

``--out`` (JSON, written atomically every ten images) keeps what was read so far; a second run resumes there.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import clingo
import numpy as np
from PIL import Image, ImageDraw
from tqdm import tqdm

from logicval_hf.asp.programs import read_program
from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.perception.ocr import read_lines
from logicval_hf.tasks.sudoku.api import check_image, make_puzzles, solver
from logicval_hf.tasks.sudoku.draw import draw_grid
from logicval_hf.tasks.sudoku.puzzle import Puzzle
from logicval_hf.tasks.sudoku.read import find_grid


def distort(image: Image.Image, rng: random.Random) -> tuple[Image.Image, dict]:
    scale, angle = rng.uniform(0.75, 1.5), rng.uniform(-2.0, 2.0)
    pad = [rng.randint(0, 80) for _ in range(4)]
    framed = rng.random() < 1 / 3
    im = image.resize((round(image.width * scale), round(image.height * scale)), Image.BICUBIC)
    im = im.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor="white")
    canvas = Image.new("RGB", (im.width + pad[0] + pad[2], im.height + pad[1] + pad[3]), "white")
    canvas.paste(im, (pad[0], pad[1]))
    if framed:
        ImageDraw.Draw(canvas).rectangle([3, 3, canvas.width - 4, canvas.height - 4], outline="black", width=3)
    buf = io.BytesIO()
    canvas.save(buf, "JPEG", quality=85)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), {"scale": scale, "angle": angle, "pad": pad,
                                                                    "framed": framed}


def naive_make(rng: random.Random) -> float:
    """The baseline maker: a fresh grounding and a count of up to two models for every uniqueness check; returns
    the seconds its removal took (the starting grid, drawn as the fast maker draws it, is not timed)."""
    def models(cells: set) -> int:
        ctl = clingo.Control(["--models=2"], logger=lambda code, msg: None)
        ctl.add("base", [], read_program("sudoku.lp") + "".join(f"given({r},{c},{v}).\n" for r, c, v in cells))
        ctl.ground([("base", [])])
        n = 0
        with ctl.solve(yield_=True) as handle:
            for _ in handle:
                n += 1
        return n

    m = solver().make(rng)
    start = time.perf_counter()
    givens = {(r, c, v) for r, row in enumerate(m.solution) for c, v in enumerate(row)}
    order = sorted(givens)
    rng.shuffle(order)
    for cell in order:
        givens.discard(cell)
        if models(givens) > 1:
            givens.add(cell)
    return time.perf_counter() - start


def naive_read(image: Image.Image) -> list[list[int]]:
    """GIR-Bench's way: OCR lines of the whole image, each line's digits spread over the cells its box covers."""
    rgb = np.asarray(image)
    gray = np.asarray(image.convert("L"))
    _, corners = find_grid(gray)
    (x0, y0), (x1, _), (_, y2) = corners[0], corners[1], corners[2]
    cell_w, cell_h = (x1 - x0) / 9, (y2 - y0) / 9
    grid = [[0] * 9 for _ in range(9)]
    for line in read_lines(rgb):
        digits = [int(ch) for ch in line.text if ch in "123456789"]
        if not digits:
            continue
        bx0, by0, bx1, by1 = line.box
        r = int(((by0 + by1) / 2 - y0) // cell_h)
        step = (bx1 - bx0) / len(digits)
        for k, d in enumerate(digits):
            c = int((bx0 + (k + 0.5) * step - x0) // cell_w)
            if 0 <= r < 9 and 0 <= c < 9:
                grid[r][c] = d
    return grid


def swapped(puzzle: Puzzle, rng: random.Random) -> tuple[tuple[int, ...], ...]:
    empty = [(r, c) for r in range(9) for c in range(9) if not puzzle.grid[r][c]]
    g = [list(row) for row in puzzle.solution]
    while True:
        (r1, c1), (r2, c2) = rng.sample(empty, 2)
        if g[r1][c1] != g[r2][c2]:
            g[r1][c1], g[r2][c2] = g[r2][c2], g[r1][c1]
            return tuple(tuple(row) for row in g)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make", type=int, default=100, help="puzzles made and timed (default 100)")
    ap.add_argument("--baseline-make", type=int, default=5, help="puzzles the baseline maker makes (default 5)")
    ap.add_argument("--images", type=int, default=200, help="answer images read (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--every", type=int, default=10, help="the whole-image baseline on every k-th image (default 10)")
    ap.add_argument("--out", type=Path, help="JSON of the results so far (resumed when it exists)")
    args = ap.parse_args(argv)

    state = json.loads(args.out.read_text()) if args.out and args.out.is_file() else {}
    if "make" not in state:
        with tempfile.TemporaryDirectory() as tmp:
            summary = make_puzzles(args.make, args.seed, Path(tmp) / "p", progress=True)
        rng = random.Random(args.seed)
        naive = sum(naive_make(rng) for _ in range(args.baseline_make)) / args.baseline_make
        state["make"] = {"count": summary["count"], "unique": summary["unique"], "seconds": summary["seconds"],
                         "givens": summary["givens"], "baseline_seconds_per_puzzle": naive}
        if args.out:
            atomic_write_json(args.out, state)
    rows = state.setdefault("images", [])
    rng = random.Random(args.seed + 1)
    puzzles = []
    for k in range(args.images):
        m = solver().make(rng)
        puzzles.append(Puzzle(f"{k}", m.grid, m.solution))
    for k in tqdm(range(len(rows), args.images), desc="read", unit="image"):
        p = puzzles[k]
        r = random.Random(f"{args.seed}:{k}")
        image, how = distort(draw_grid(p.solution, p.grid), r)
        t = time.perf_counter()
        res = check_image(p, image)
        seconds = time.perf_counter() - t
        wrong_image, _ = distort(draw_grid(swapped(p, r), p.grid), r)
        row = {"k": k, **how, "seconds": seconds, "valid": res["valid"],
               "cells_right": sum(a == b for ra, rb in zip(res["cells"], p.solution, strict=True)
                                  for a, b in zip(ra, rb, strict=True)),
               "swapped_valid": check_image(p, wrong_image)["valid"]}
        if k % args.every == 0:
            t = time.perf_counter()
            try:
                naive = naive_read(image)
                row["baseline_cells_right"] = sum(a == b for ra, rb in zip(naive, p.solution, strict=True)
                                                  for a, b in zip(ra, rb, strict=True))
            except ValueError:
                row["baseline_cells_right"] = 0
            row["baseline_seconds"] = time.perf_counter() - t
        rows.append(row)
        if args.out and len(rows) % 10 == 0:
            atomic_write_json(args.out, state)
    if args.out:
        atomic_write_json(args.out, state)
    mk = state["make"]
    cells = sum(r["cells_right"] for r in rows)
    secs = [r["seconds"] for r in rows]
    base = [r for r in rows if "baseline_cells_right" in r]
    each, naive = mk["seconds"] / mk["count"], mk["baseline_seconds_per_puzzle"]
    print(f"make: {mk['count']} puzzles in {mk['seconds']:.1f} s ({each:.3f} s each, images written), "
          f"{mk['unique']} proved unique, givens {mk['givens']}; baseline maker (a grounding per check) "
          f"{naive:.3f} s each for its removal alone: {naive / each:.1f}x slower")
    print(f"read: {len(rows)} images, cells right {cells}/{81 * len(rows)} = {cells / (81 * len(rows)):.4%}, "
          f"answers valid {sum(r['valid'] for r in rows)}/{len(rows)}, swapped grids valid "
          f"{sum(r['swapped_valid'] for r in rows)}/{len(rows)}")
    print(f"time per image: median {statistics.median(secs):.2f} s, p90 {np.percentile(secs, 90):.2f} s, "
          f"max {max(secs):.2f} s")
    if base:
        bc = sum(r["baseline_cells_right"] for r in base)
        ours = sum(r["cells_right"] for r in base)
        bs = statistics.median(r["baseline_seconds"] for r in base)
        print(f"baseline (whole-image OCR lines by position) on {len(base)} of them: cells right "
              f"{bc / (81 * len(base)):.2%} vs {ours / (81 * len(base)):.2%}; median {bs:.2f} s per image "
              f"({bs / statistics.median(r['seconds'] for r in base):.2f}x ours)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
