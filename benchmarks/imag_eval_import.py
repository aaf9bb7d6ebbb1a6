"""Import every Imag-Eval prompt file with ``skip_unsupported`` and tabulate the labels.

    python benchmarks/imag_eval_import.py FOLDER [--out DIR]

FOLDER is Imag-Eval's ``outputs/prompts`` (github.com/Justsecret123/Imag-Eval; not in this repository, CC BY-NC).
Prints, per file group (plain ``<skills>.json`` vs ``<skills>_robust.json``) and level: prompts, prompts left out as
a whole (no label: past the solver's object limit, a placement it cannot decide, or the time budget), imported rows,
SAT, UNSAT, the rules left out by kind, then every UNSAT core in words. With ``--out`` naming a folder that holds an
earlier import, the labels that changed are listed too (the import's ``relabelled``).
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", metavar="FOLDER", help="Imag-Eval's outputs/prompts folder")
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
    cells: dict[tuple[str, str], dict] = collections.defaultdict(collections.Counter)
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
    for g, lv in [*keys, ("all", "all")]:
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

    changes = summary.get("relabelled")
    if changes is not None:
        print(f"\nRelabelled against the import {args.out} held: {len(changes['sources'])} of {changes['compared']} "
              f"labels changed {changes['changed'] or ''}")
        for source in changes["sources"]:
            print(f"- {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
