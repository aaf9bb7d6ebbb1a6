"""Training data for the LoRA fine-tuning (paper, Appendix F): (prompt, image) pairs, held-out set, batches.

* **Pairs.** Every CLEVR image of a scenes file gets up to nine captions, one per class C1..C9 that can be
  grounded on its annotation (`logicval_hf.training.captions`); each caption with its image is one pair. The caption
  seed of an image is derived from the global seed and the image file name, so an image keeps its captions
  whatever else is in the file.
* **Held-out set.** A fixed, class-balanced set of ``heldout_per_class`` (11) pairs per class, 99 in all, on
  99 *distinct* images. Classes are served scarcest first; within a class the templates take turns (in a
  random order) so the held-out set is also spread over templates. Held-out images never appear in any
  batch: all their other pairs are dropped from the training pool.
* **Batches.** Batches of about ``batch_size`` (2,000) pairs. The (class, template) pairs present in the pool
  (at least ``min_template_count`` pairs) all get the same quota per batch, ``batch_size // #present``, so a
  batch holds exactly ``quota * #present`` pairs (1,952 with 61 present). No image appears twice in a batch
  (a bipartite matching of quota slots to images: greedy, rarest template first, then augmenting paths).
  A pair is used at most once over all batches; batches are built until some template runs out (a partial
  batch is never emitted) or ``max_batches`` is reached. Pairs inside a batch are shuffled.
* Everything is deterministic given the pairs and ``seed`` (`random.Random` seeded with strings).

On disk (`write_split` / `read_split`): ``heldout.jsonl``, ``batch_000.jsonl``, ... (one pair per line:
``image``, ``image_filename``, ``class``, ``template``, ``n``, ``constraint``, ``prompt``) and ``split.json``
(settings and counts). ``python -m logicval_hf.training.lora_data --scenes S --images DIR --out OUT`` builds them.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from logicval_hf.common.atomic import atomic_write_text
from logicval_hf.training.captions import CaptionGrounder, clevr_scene_to_scene, load_clevr_scenes, scene_seed

__all__ = [
    "HELDOUT_PER_CLASS", "BATCH_SIZE", "Pair", "LoraSplit", "build_pairs", "split_pairs", "write_split",
    "read_split", "main",
]

HELDOUT_PER_CLASS = 11
BATCH_SIZE = 2000
_GROUND_CHUNK = 64


@dataclass(frozen=True)
class Pair:
    """One (prompt, image) training pair."""

    image: str
    image_filename: str
    cls: str
    template: str
    n: int
    constraint: Mapping[str, Any]
    prompt: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.cls, self.template)

    def to_dict(self) -> dict[str, Any]:
        return {"image": self.image, "image_filename": self.image_filename, "class": self.cls,
                "template": self.template, "n": self.n, "constraint": dict(self.constraint), "prompt": self.prompt}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Pair:
        return cls(d["image"], d["image_filename"], d["class"], d["template"], int(d["n"]), d["constraint"],
                   d["prompt"])


def build_pairs(
    scenes: str | Path | Sequence[Mapping[str, Any]],
    image_dir: str | Path | None,
    seed: int = 42,
    limit: int | None = None,
    image_size: Sequence[float] | None = None,
    grounder: CaptionGrounder | None = None,
    progress: bool = False,
) -> list[Pair]:
    """Caption every scene (a scenes.json path or the loaded list) and return its pairs, in scene order.

    ``image`` of a pair is ``image_dir / image_filename`` (the file's size, when it exists, sets the scene's
    image size; see `logicval_hf.training.captions`). Scenes without ``image_filename`` are named ``scene_<index>``.
    """
    from tqdm.auto import tqdm

    if isinstance(scenes, (str, Path)):
        scenes = load_clevr_scenes(scenes)
    scenes = list(scenes)[:limit] if limit is not None else list(scenes)
    grounder = grounder or CaptionGrounder()
    names = [str(s.get("image_filename") or f"scene_{i:06d}") for i, s in enumerate(scenes)]
    paths = [str(Path(image_dir) / name) if image_dir is not None else name for name in names]
    out: list[Pair] = []
    with tqdm(total=len(scenes), desc="grounding captions", unit="scene", disable=not progress) as bar:
        for start in range(0, len(scenes), _GROUND_CHUNK):
            idx = range(start, min(start + _GROUND_CHUNK, len(scenes)))
            objs = [clevr_scene_to_scene(scenes[i], image_size, paths[i] if image_dir is not None else None,
                                         grounder.catalog) for i in idx]
            caps = grounder.ground_many(objs, [scene_seed(seed, names[i]) for i in idx])
            for i, cs in zip(idx, caps, strict=True):
                for c in cs:
                    out.append(Pair(paths[i], names[i], c["class"], c["template"], c["n"], c["constraint"],
                                    c["prompt"]))
            bar.update(len(idx))
    return out


@dataclass
class LoraSplit:
    """The held-out set and the training batches, with the settings that produced them."""

    heldout: list[Pair]
    batches: list[list[Pair]]
    settings: dict[str, Any] = field(default_factory=dict)
    templates: list[tuple[str, str]] = field(default_factory=list)  # (class, template) pairs present
    quota: int = 0
    pool_size: int = 0
    unused: int = 0

    def summary(self) -> dict[str, Any]:
        per_class = collections.Counter(p.cls for p in self.heldout)
        return {
            "settings": self.settings,
            "heldout": {"pairs": len(self.heldout), "images": len({p.image_filename for p in self.heldout}),
                        "per_class": dict(sorted(per_class.items(), key=lambda kv: int(kv[0][1:])))},
            "templates_present": len(self.templates),
            "templates": [f"{c}|{t}" for c, t in self.templates],
            "quota_per_template": self.quota,
            "batches": [len(b) for b in self.batches],
            "pool_pairs": self.pool_size,
            "unused_pairs": self.unused,
        }


def _choose_heldout(pairs: Sequence[Pair], per_class: int, rng: random.Random) -> list[Pair]:
    by_class: dict[str, list[Pair]] = collections.defaultdict(list)
    for p in pairs:
        by_class[p.cls].append(p)
    classes = sorted(by_class, key=lambda c: (len({p.image_filename for p in by_class[c]}), int(c[1:])))
    taken_images: set[str] = set()
    heldout: list[Pair] = []
    for cls in classes:
        by_t: dict[str, list[Pair]] = collections.defaultdict(list)
        for p in by_class[cls]:
            by_t[p.template].append(p)
        order = sorted(by_t)
        rng.shuffle(order)
        for t in order:
            rng.shuffle(by_t[t])
        got: list[Pair] = []
        while len(got) < per_class and any(by_t[t] for t in order):
            for t in order:
                while by_t[t] and by_t[t][-1].image_filename in taken_images:
                    by_t[t].pop()
                if by_t[t] and len(got) < per_class:
                    p = by_t[t].pop()
                    got.append(p)
                    taken_images.add(p.image_filename)
        if len(got) < per_class:
            raise ValueError(
                f"held-out set: only {len(got)} distinct images can carry a {cls} caption, {per_class} needed "
                "(use more scenes or a smaller heldout_per_class)")
        heldout.extend(got)
    class_rank = {c: i for i, c in enumerate(sorted(by_class, key=lambda c: int(c[1:])))}
    heldout.sort(key=lambda p: (class_rank[p.cls], p.template, p.image_filename))
    return heldout


def _fill_batch(
    remaining: Mapping[tuple[str, str], list[Pair]], keys: Sequence[tuple[str, str]], quota: int
) -> dict[tuple[str, str], list[int]] | None:
    """``quota`` pairs of every key on pairwise distinct images (indices into ``remaining[key]``), or None.

    An image has at most one pair per (class, template) key (one caption per class), so this is a bipartite
    matching of quota slots to images: greedy in the (shuffled) pool order, rarest key first, then
    breadth-first augmenting paths for the slots the greedy pass could not fill.
    """
    index = {k: {p.image_filename: i for i, p in enumerate(remaining[k])} for k in keys}
    cands = {k: [p.image_filename for p in remaining[k]] for k in keys}
    slots = [k for k in sorted(keys, key=lambda k: (len(remaining[k]), k)) for _ in range(quota)]
    slot_img: list[str | None] = [None] * len(slots)
    img_slot: dict[str, int] = {}
    cursor = dict.fromkeys(keys, 0)
    unfilled = []
    for s, k in enumerate(slots):  # greedy pass
        lst, c = cands[k], cursor[k]
        while c < len(lst) and lst[c] in img_slot:
            c += 1
        cursor[k] = c + 1
        if c < len(lst):
            slot_img[s] = lst[c]
            img_slot[lst[c]] = s
        else:
            unfilled.append(s)
    for s0 in unfilled:  # augmenting paths
        parent: dict[int, int | None] = {s0: None}
        queue = collections.deque([s0])
        seen: set[str] = set()
        free = None
        while queue and free is None:
            s = queue.popleft()
            for img in cands[slots[s]]:
                if img in seen:
                    continue
                seen.add(img)
                t = img_slot.get(img)
                if t is None:
                    free = (s, img)
                    break
                if t not in parent:
                    parent[t] = s
                    queue.append(t)
        if free is None:
            return None
        cur, img = free
        while True:  # shift the images along the path back to s0, which had none
            old = slot_img[cur]
            slot_img[cur] = img
            img_slot[img] = cur
            prev = parent[cur]
            if prev is None or old is None:
                break
            img, cur = old, prev
    out: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    for s, filled in enumerate(slot_img):
        out[slots[s]].append(index[slots[s]][cast(str, filled)])  # every slot holds an image by now
    return out


def split_pairs(
    pairs: Sequence[Pair],
    seed: int = 42,
    heldout_per_class: int = HELDOUT_PER_CLASS,
    batch_size: int = BATCH_SIZE,
    max_batches: int | None = None,
    min_template_count: int = 1,
) -> LoraSplit:
    """Held-out set and batches (module docstring). Raises ValueError when not even one batch can be made."""
    rng = random.Random(f"logicval-lora-split/{seed}")
    heldout = _choose_heldout(pairs, heldout_per_class, rng) if heldout_per_class > 0 else []
    held_images = {p.image_filename for p in heldout}
    pool = [p for p in pairs if p.image_filename not in held_images]
    remaining: dict[tuple[str, str], list[Pair]] = collections.defaultdict(list)
    for p in pool:
        remaining[p.key].append(p)
    keys = sorted((k for k, v in remaining.items() if len(v) >= min_template_count),
                  key=lambda k: (int(k[0][1:]), k[1]))
    if not keys:
        raise ValueError("no training pairs left after the held-out set")
    for k in keys:
        rng.shuffle(remaining[k])
    quota = max(1, batch_size // len(keys))
    batches: list[list[Pair]] = []
    while max_batches is None or len(batches) < max_batches:
        if any(len(remaining[k]) < quota for k in keys):
            break
        picked = _fill_batch(remaining, keys, quota)
        if picked is None:
            break
        batch: list[Pair] = []
        for k in keys:
            idx = set(picked[k])
            batch.extend(remaining[k][i] for i in sorted(idx))
            remaining[k] = [p for i, p in enumerate(remaining[k]) if i not in idx]
        rng.shuffle(batch)
        batches.append(batch)
    if not batches:
        worst = min(keys, key=lambda k: len(remaining[k]))
        images = len({p.image_filename for p in pool})
        why = (f"a batch needs {quota * len(keys)} distinct images but the pool has {images}"
               if quota * len(keys) > images else
               f"{worst[1]} has only {len(remaining[worst])} pairs"
               if len(remaining[worst]) < quota else "the images cannot be spread without repeating one")
        raise ValueError(
            f"cannot fill one batch with quota {quota} per template (batch_size {batch_size} over {len(keys)} "
            f"templates): {why}; use more scenes, a smaller batch_size or a larger min_template_count")
    settings = {"seed": seed, "heldout_per_class": heldout_per_class, "batch_size": batch_size,
                "max_batches": max_batches, "min_template_count": min_template_count}
    used = sum(len(b) for b in batches)
    return LoraSplit(heldout, batches, settings, list(keys), quota, len(pool), len(pool) - used)


# ---------------------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------------------
def _jsonl(pairs: Iterable[Pair]) -> str:
    return "".join(json.dumps(p.to_dict(), separators=(",", ":")) + "\n" for p in pairs)


def write_split(split: LoraSplit, out_dir: str | Path) -> list[Path]:
    """Write ``heldout.jsonl``, ``batch_###.jsonl`` and ``split.json`` (each atomically); returns the paths."""
    out = Path(out_dir)
    paths = [out / "heldout.jsonl"]
    atomic_write_text(paths[0], _jsonl(split.heldout))
    for b, batch in enumerate(split.batches):
        p = out / f"batch_{b:03d}.jsonl"
        atomic_write_text(p, _jsonl(batch))
        paths.append(p)
    p = out / "split.json"
    atomic_write_text(p, json.dumps(split.summary(), indent=2) + "\n")
    paths.append(p)
    return paths


def _read_jsonl(path: Path) -> list[Pair]:
    with open(path, encoding="utf-8") as fh:
        return [Pair.from_dict(json.loads(line)) for line in fh if line.strip()]


def read_split(folder: str | Path) -> LoraSplit:
    """Read a folder written by `write_split`."""
    folder = Path(folder)
    if not (folder / "heldout.jsonl").is_file():
        raise ValueError(f"{folder}: no heldout.jsonl; build the data with "
                         "`python -m logicval_hf.training.lora_data`")
    batches = [_read_jsonl(p) for p in sorted(folder.glob("batch_*.jsonl"))]
    split_file = folder / "split.json"
    summary = json.loads(split_file.read_text(encoding="utf-8")) if split_file.is_file() else {}
    templates = [tuple(s.split("|", 1)) for s in summary.get("templates", [])]
    return LoraSplit(_read_jsonl(folder / "heldout.jsonl"), batches, summary.get("settings", {}),
                     templates, summary.get("quota_per_template", 0), summary.get("pool_pairs", 0),
                     summary.get("unused_pairs", 0))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m logicval_hf.training.lora_data",
                                description="Caption CLEVR scenes with constraints that hold and split them into "
                                            "a held-out set and class/template-balanced training batches.")
    p.add_argument("--scenes", required=True, help="CLEVR scenes JSON (official {'scenes': [...]} or a list)")
    p.add_argument("--images", required=True, help="folder with the scenes' image files")
    p.add_argument("--out", required=True, help="output folder (heldout.jsonl, batch_###.jsonl, split.json)")
    p.add_argument("--seed", type=int, default=42, help="seed of captions, held-out set and batches (default 42)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="target pairs per batch (default 2000)")
    p.add_argument("--heldout-per-class", type=int, default=HELDOUT_PER_CLASS,
                   help="held-out pairs per class, each on its own image (default 11, i.e. 99 images)")
    p.add_argument("--max-batches", type=int, default=None, help="stop after this many batches (default: all)")
    p.add_argument("--min-template-count", type=int, default=1,
                   help="a (class, template) pair counts as present with at least this many pairs (default 1)")
    p.add_argument("--limit", type=int, default=None, help="use only the first K scenes")
    args = p.parse_args(argv)
    pairs = build_pairs(args.scenes, args.images, seed=args.seed, limit=args.limit, progress=True)
    split = split_pairs(pairs, seed=args.seed, heldout_per_class=args.heldout_per_class,
                        batch_size=args.batch_size, max_batches=args.max_batches,
                        min_template_count=args.min_template_count)
    for path in write_split(split, args.out):
        print(path)
    print(json.dumps({k: v for k, v in split.summary().items() if k != "templates"}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
