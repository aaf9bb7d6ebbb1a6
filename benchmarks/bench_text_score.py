"""GIR-Bench's text rendering score on rendered phrases read by the OCR: the mean score for the right phrase and for
a different one, against a baseline scored in the same run.

Each image shows one phrase (2-6 words; wrapped onto two lines when long) in one of the fonts found (Pillow's
bundled Aileron always; DejaVu Sans, Sans Bold, Serif, Serif Italic, Sans Mono, Sans Condensed where installed), at
24-64 px, in a colour that contrasts with its background, which is plain white, a plain pale or dark colour, a
gradient with pixel noise, or a blotchy texture with pixel noise; every image is re-saved as JPEG (quality 70-95).
The right phrase's score and a different phrase's (another phrase of the list) are recorded. The baseline is an
exact match: 1 when the folded text read equals the folded phrase, else 0.

    python benchmarks/bench_text_score.py [--images 200] [--seed 0] [--out FILE]

``--out`` (JSON, written atomically every ten images) keeps what was scored so far; a second run resumes there.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from tqdm import tqdm

from logicval_hf.common.atomic import atomic_write_json
from logicval_hf.contract.folding import fold_text
from logicval_hf.tasks.text_rendering import score_image, text_score

PHRASES = [
    "Grand Opening Sale", "Fresh Coffee Daily", "Keep Calm and Carry On", "Welcome to Paris", "Open 24 Hours",
    "Happy Birthday Emma", "No Parking Anytime", "Save the Planet", "Think Different", "Just Do It",
    "Live Laugh Love", "Best Pizza in Town", "Stay Hungry Stay Foolish", "Knowledge is Power", "Dream Big",
    "Made with Love", "Exit Only", "Caution Wet Floor", "Summer Music Festival 2025", "Hello World",
    "The Future is Now", "Handmade Soap", "Organic Farm Market", "Night Owl Bookstore", "Vote for Change",
    "Less is More", "Time Flies", "Mind the Gap", "Believe in Yourself", "Coffee First",
    "Bakery and Cafe", "Adventure Awaits", "Good Vibes Only", "Fly High", "Quiet Please",
    "Winter Clearance 50% Off", "Route 66 Diner", "Ocean View Hotel", "Team Spirit", "Never Give Up",
]
_DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
_FACES = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Italic.ttf", "DejaVuSansMono.ttf",
          "DejaVuSansCondensed.ttf")


def font(rng: random.Random, size: int) -> tuple[str, ImageFont.FreeTypeFont]:
    faces = [f for f in _FACES if (_DEJAVU / f).is_file()]
    name = rng.choice(["Aileron", *faces])
    if name == "Aileron":
        return name, ImageFont.load_default(size=size)
    return name, ImageFont.truetype(str(_DEJAVU / name), size)


def background(rng: random.Random, w: int, h: int) -> tuple[str, np.ndarray, bool]:
    """(kind, RGB float array, dark): plain white, plain colour, gradient + noise, texture + noise."""
    kind = rng.choice(["white", "plain", "gradient", "texture"])
    dark = kind == "plain" and rng.random() < 0.3
    if kind == "white":
        return kind, np.full((h, w, 3), 255.0), False
    base = np.array([rng.randint(10, 60) for _ in range(3)] if dark else [rng.randint(190, 250) for _ in range(3)],
                    float)
    img = np.broadcast_to(base, (h, w, 3)).copy()
    nrng = np.random.default_rng(rng.randrange(2**32))
    if kind == "gradient":
        ramp = np.linspace(-30, 30, w)[None, :, None]
        img = img + ramp + nrng.normal(0, 10, img.shape)
    elif kind == "texture":
        small = nrng.normal(0, 25, (max(2, h // 24), max(2, w // 24), 3))
        blot = np.asarray(Image.fromarray(np.clip(small + 128, 0, 255).astype(np.uint8)).resize((w, h),
                                                                                                 Image.BICUBIC))
        img = img + (blot.astype(float) - 128) + nrng.normal(0, 8, img.shape)
    return kind, img, dark


def render(phrase: str, rng: random.Random) -> tuple[Image.Image, dict]:
    size = rng.randint(24, 64)
    face, f = font(rng, size)
    words = phrase.split()
    lines = [phrase] if len(phrase) <= 18 or rng.random() < 0.5 else [" ".join(words[:len(words) // 2]),
                                                                       " ".join(words[len(words) // 2:])]
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    widths = [probe.textbbox((0, 0), ln, font=f)[2] for ln in lines]
    w, h = max(widths) + 2 * rng.randint(20, 60), len(lines) * int(size * 1.6) + 2 * rng.randint(15, 40)
    kind, bg, dark = background(rng, w, h)
    im = Image.fromarray(np.clip(bg, 0, 255).astype(np.uint8))
    d = ImageDraw.Draw(im)
    colour = tuple(rng.randint(200, 255) for _ in range(3)) if dark else tuple(rng.randint(0, 110) for _ in range(3))
    y = (h - len(lines) * int(size * 1.6)) // 2
    for ln, lw in zip(lines, widths, strict=True):
        d.text(((w - lw) // 2, y), ln, fill=colour, font=f)
        y += int(size * 1.6)
    quality = rng.randint(70, 95)
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), {"font": face, "size": size, "background": kind,
                                                                   "lines": len(lines), "quality": quality}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=200, help="images rendered and read (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--out", type=Path, help="JSON of the results so far (resumed when it exists)")
    args = ap.parse_args(argv)
    rows = json.loads(args.out.read_text()) if args.out and args.out.is_file() else []
    for k in tqdm(range(len(rows), args.images), desc="text", unit="image"):
        rng = random.Random(f"{args.seed}:{k}")
        phrase = rng.choice(PHRASES)
        other = rng.choice([p for p in PHRASES if p != phrase])
        image, how = render(phrase, rng)
        t = time.perf_counter()
        out = score_image(image, phrase)
        seconds = time.perf_counter() - t
        rows.append({"k": k, "phrase": phrase, "other": other, **how, "read": out["read"], "score": out["score"],
                     "other_score": text_score(other, out["read"]), "seconds": seconds,
                     "exact": float(fold_text(out["read"]) == fold_text(phrase))})
        if args.out and len(rows) % 10 == 0:
            atomic_write_json(args.out, rows)
    if args.out:
        atomic_write_json(args.out, rows)
    right = [r["score"] for r in rows]
    print(f"{len(rows)} images: mean score {statistics.fmean(right):.3f} for the right phrase "
          f"({sum(s == 1 for s in right)} read in full), {statistics.fmean(r['other_score'] for r in rows):.3f} for a "
          f"different phrase; exact-match baseline {statistics.fmean(r['exact'] for r in rows):.3f} for the right "
          "phrase")
    for key in ("font", "background"):
        groups: dict[str, list[float]] = {}
        for r in rows:
            groups.setdefault(r[key], []).append(r["score"])
        parts = [f"{g} {statistics.fmean(v):.3f} ({len(v)})" for g, v in sorted(groups.items())]
        print(f"  by {key}: " + ", ".join(parts))
    secs = [r["seconds"] for r in rows]
    print(f"time per image: median {statistics.median(secs):.2f} s, p90 {np.percentile(secs, 90):.2f} s")
    misses = [r for r in rows if r["score"] < 1][:8]
    for r in misses:
        print(f"  miss: {r['phrase']!r} read {r['read']!r} ({r['font']}, {r['size']} px, {r['background']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
