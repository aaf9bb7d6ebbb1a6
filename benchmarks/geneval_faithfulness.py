"""How faithfully LogicVal's import of GenEval reproduces GenEval's own scoring rule, and what a plain-logic
reading of the same prompts would change.

    python benchmarks/geneval_faithfulness.py [METADATA] [--per-line 8] [--seed 0] [--no-labels]

METADATA is GenEval's ``prompts/evaluation_metadata.jsonl`` (553 prompts, github.com/djghosh13/geneval, MIT;
docs/data.md); it defaults to ``peers/geneval/evaluation_metadata.jsonl`` under the data root,
``$LOGICVAL_SHARED_DATA``. For every line, ``--per-line`` random detection sets are drawn
(seeded; `tests/benchmark/geneval_rule.random_detections`: 0..count+2 detections of each class the line names,
mostly of the asked colours, scores near the tag's threshold, random boxes, a few distractor classes, half of
the sets "clean" so that verdicts are often true and often false). Each set is scored by an independent
re-implementation of GenEval's rule (`tests/benchmark/geneval_rule.geneval_correct`) and verified by clingo
against the imported spec (`logicval_hf.benchmark.importers.geneval.spec_for`, batched ``verify_many``) and
against the plain-logic reading (``spec_for(..., plain=True)``: any K detections of the colour, some pair in
the relation, no confidence ranks).

Printed per tag: cases, how often GenEval scores the set correct, agreement of the import with GenEval's rule
(must be 100 %), and how often the plain reading disagrees with GenEval; then the SAT/UNSAT labels of the
imported specs (``--no-labels`` skips labelling, which takes 0.1-0.2 s per spec) with every UNSAT core. Exits 1 if the
import disagrees with the rule on any case.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import random
import sys
import time
from pathlib import Path

from logicval_hf.asp.solver import Solver
from logicval_hf.benchmark.importers.geneval import read_specs
from logicval_hf.common.markdown import md_table
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene

ROOT = Path(__file__).resolve().parents[1]
_RULE = importlib.util.spec_from_file_location("geneval_rule", ROOT / "tests" / "benchmark" / "geneval_rule.py")
assert _RULE is not None and _RULE.loader is not None
_geneval_rule = importlib.util.module_from_spec(_RULE)
_RULE.loader.exec_module(_geneval_rule)  # GenEval's rule as published, written out independently of the package
geneval_correct, random_detections = _geneval_rule.geneval_correct, _geneval_rule.random_detections
#: the data root (docs/data.md): $LOGICVAL_SHARED_DATA, else the folder "shared" beside the checkout
SHARED = Path(os.environ.get("LOGICVAL_SHARED_DATA") or ROOT.parent / "shared")
DEFAULT = SHARED / "peers" / "geneval" / "evaluation_metadata.jsonl"


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metadata", nargs="?", default=str(DEFAULT),
                    help="GenEval's prompts/evaluation_metadata.jsonl (default: "
                         "$LOGICVAL_SHARED_DATA/peers/geneval/evaluation_metadata.jsonl)")
    ap.add_argument("--per-line", type=int, default=8, help="random detection sets per line (default 8)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--no-labels", action="store_true", help="skip labelling the imported specs SAT/UNSAT")
    args = ap.parse_args()
    if not Path(args.metadata).is_file():
        ap.error(f"no file {args.metadata}: pass GenEval's prompts/evaluation_metadata.jsonl (docs/data.md)")

    t0 = time.perf_counter()
    ranked = read_specs(args.metadata)
    plain = read_specs(args.metadata, plain=True)
    coco = load_domain("coco")
    rng = random.Random(args.seed)
    tags, ref, pairs, plain_pairs = [], [], [], []
    for (_, meta, spec), (_, _, pspec) in zip(ranked, plain, strict=False):
        for _ in range(args.per_line):
            detections = random_detections(meta, rng)
            scene = Scene.from_dict({"image_size": [512, 512], "domain": "coco", "objects": detections}, coco)
            tags.append(meta["tag"])
            ref.append(geneval_correct(meta, detections))
            pairs.append((spec, scene))
            plain_pairs.append((pspec, scene))
    t_draw = time.perf_counter() - t0

    solver = Solver(max_specs=10_000, max_verifiers=10_000)
    t = time.perf_counter()
    # constraints_ok: every constraint holds (for an open scene size the verdict itself, whatever the label)
    got = [v.constraints_ok for v in solver.verify_many(pairs, labels=["SAT"] * len(pairs))]
    got_plain = [v.constraints_ok for v in solver.verify_many(plain_pairs, labels=["SAT"] * len(plain_pairs))]
    t_verify = time.perf_counter() - t

    by = collections.defaultdict(lambda: [0, 0, 0, 0])  # cases, GenEval true, agree, plain disagrees
    for tag, r, g, p in zip(tags, ref, got, got_plain, strict=False):
        for key in (tag, "all"):
            c = by[key]
            c[0] += 1
            c[1] += r
            c[2] += g == r
            c[3] += p != r
    order = [*sorted(k for k in by if k != "all"), "all"]
    print(f"GenEval faithfulness: {len(ranked)} lines of {args.metadata}, {args.per_line} detection sets per line, "
          f"seed {args.seed}")
    print()
    print(md_table(["tag", "cases", "GenEval correct", "import agrees with GenEval", "plain reading disagrees"],
                   [[k, by[k][0], pct(by[k][1], by[k][0]), pct(by[k][2], by[k][0]), pct(by[k][3], by[k][0])]
                    for k in order]))
    print()
    print(f"drew and scored {len(pairs)} detection sets in {t_draw:.1f} s; verified them against both readings in "
          f"{t_verify:.1f} s")

    if not args.no_labels:
        t = time.perf_counter()
        labels = collections.Counter()
        unsat = []
        for number, meta, spec in ranked:
            res = solver.solve(spec)
            labels[res.label] += 1
            if not res.satisfiable:
                unsat.append((number, meta["prompt"], list(res.core)))
        print(f"labels of the {len(ranked)} imported specs: {labels.get('SAT', 0)} SAT, {labels.get('UNSAT', 0)} "
              f"UNSAT ({time.perf_counter() - t:.1f} s)")
        for number, prompt, core in unsat:
            print(f"  UNSAT line {number}: {json.dumps(prompt)} core {core}")

    disagreements = by["all"][0] - by["all"][2]
    if disagreements:
        print(f"FAIL: the import disagrees with GenEval's rule on {disagreements} cases")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
