"""Import every Imag-Eval prompt file with ``skip_unsupported`` and tabulate the labels.

    python benchmarks/imag_eval_import.py [--path /work/cache/imag_eval/prompts] [--out DIR]

Prints, per file group (plain ``<skills>.json`` vs ``<skills>_robust.json``) and level: prompts, prompts left out
as a whole (no label: past the solver's object limit or the time budget; none since issue 24), imported rows, SAT, UNSAT, the rules left out
by kind, then every UNSAT core in words. A diagnostic of the shared solver's box placements follows (it concerns
the solver, not the import): the SAT rows whose witness meets a larger/smaller rule only through boxes of one
nominal size (must be 0: areas are compared with a relative tolerance), and the SAT rows whose size rules chain
three classes (their witnesses use three of the lattice's four box sizes).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

from logicval_hf.benchmark.importers.imag_eval import import_source, read_source
from logicval_hf.common.markdown import md_table

LEVELS = ("hard", "medium", "easy")


def group_of(file: str) -> str:
    return "robust" if Path(file).stem.endswith("_robust") else "plain"


def rounding_only(row: dict) -> bool:
    """Whether the witness meets a larger/smaller X4 rule only with a pair of equal nominal size."""
    spec, witness = json.loads(row["spec_json"]), json.loads(row["witness"])
    objs = witness["objects"]

    def area(o):
        x0, y0, x1, y1 = o["bbox"]
        return (x1 - x0) * (y1 - y0)

    for c in spec["constraints"]:
        p = c["params"]
        if c["template"] != "X4/group_rel_all" or p["R1"]["rel"] not in ("larger", "smaller"):
            continue
        a = [o for o in objs if o["class"] == p["A1"]["value"]]
        b = [o for o in objs if o["class"] == p["B1"]["value"]]
        if any(x is not y and abs(area(x) - area(y)) <= 1e-6 * max(area(x), area(y)) for x in a for y in b):
            return True
    return False


def size_chain(scene: dict) -> int:
    """The longest strict chain of classes the prompt's size rules order (3: A > B > C needs three box areas)."""
    smaller: dict[str, set[str]] = collections.defaultdict(set)
    for a, r, b in scene.get("size_relations") or ():
        (smaller[a].add(b) if r == "larger" else smaller[b].add(a))

    def longest(x: str, seen: frozenset) -> int:
        return 1 + max((longest(y, seen | {y}) for y in smaller[x] if y not in seen), default=0)

    return max((longest(x, frozenset([x])) for x in list(smaller)), default=0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default="/work/cache/imag_eval/prompts", help="Imag-Eval's outputs/prompts folder")
    ap.add_argument("--out", help="dataset folder to write (default: a temporary one)")
    args = ap.parse_args(argv)

    import pyarrow.parquet as pq

    level_of = {source: fields["level"] for _, source, fields in read_source(args.path, skip_unsupported=True)}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or Path(tmp) / "imag-eval")
        t = time.time()
        summary = import_source(args.path, out, progress=sys.stderr.isatty(), skip_unsupported=True)
        took = time.time() - t
        skipped = summary["skipped_prompts"]
        rows = pq.read_table(out / "data" / "test.parquet").to_pylist()

    kinds = sorted({u["kind"] for r in rows for u in json.loads(r["unsupported"])})
    cells: dict[tuple[str, str], dict] = collections.defaultdict(lambda: collections.Counter())
    for source in skipped:
        cells[(group_of(source.split(":")[1]), level_of[source])]["left out"] += 1
    for r in rows:
        c = cells[(group_of(r["file"]), r["level"])]
        c["rows"] += 1
        c[r["label"]] += 1
        for u in json.loads(r["unsupported"]):
            c["u:" + u["kind"]] += 1
    table = []
    keys = [(g, lv) for g in ("plain", "robust") for lv in LEVELS]
    for g, lv in keys + [("all", "all")]:
        c = sum((cells[k] for k in keys), collections.Counter()) if g == "all" else cells[(g, lv)]
        table.append([g, lv, c["rows"] + c["left out"], c["left out"], c["rows"], c["SAT"], c["UNSAT"],
                      *(c["u:" + k] for k in kinds)])
    print(f"Imag-Eval import of {args.path}: {summary['rows']} rows, labels {summary['labels']}, "
          f"{len(skipped)} prompts left out as a whole, {took:.0f} s\n")
    print(md_table(["files", "level", "prompts", "left out (no label)", "rows", "SAT", "UNSAT",
                    *(f"left out: {k}" for k in kinds)], table))

    print("\nUNSAT cores:")
    for r in rows:
        if r["label"] == "UNSAT":
            print(f"- {r['source']} ({r['level']}): {r['core_text']}")

    noisy = [r for r in rows if r["label"] == "SAT" and rounding_only(r)]
    chains = [r for r in rows if r["label"] == "SAT" and size_chain(json.loads(r["scene"])) >= 3]
    print(f"\nSAT rows whose witness meets a larger/smaller rule only through float rounding between placement boxes "
          f"of one nominal size: {len(noisy)} of {summary['labels'].get('SAT', 0)}")
    print(f"SAT rows whose size rules chain three classes (A > B > C: three of the lattice's four box sizes): "
          f"{len(chains)}, {sum(r in noisy for r in chains)} of them among the above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
