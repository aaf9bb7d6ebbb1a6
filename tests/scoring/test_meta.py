"""Meta-evaluation: point-biserial correlation, ROC-AUC, agreement, scene-graph accuracy, the `meta` command."""

import csv
import itertools
import json
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import attr, lazy, obj

from logicval_hf import Scene
from logicval_hf.cli.meta import main as meta_main
from logicval_hf.scoring.meta import (
    MetaRecord,
    agreement,
    format_markdown,
    load_records,
    match_objects,
    meta_evaluate,
    point_biserial,
    roc_auc,
    roc_curve,
    scene_graph_accuracy,
)

stats = lazy("scipy.stats")  # the reference implementations; scipy.stats costs 0.6 s to import at collection


def brute_auc(s, h):
    pos = [x for x, y in zip(s, h, strict=True) if y == 1]
    neg = [x for x, y in zip(s, h, strict=True) if y == 0]
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p, q in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_auc_and_point_biserial_on_hand_examples():
    s, h = [0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]
    assert roc_auc(s, h) == pytest.approx(0.75)  # 3 of the 4 (pos, neg) pairs are ordered correctly
    r = stats.pointbiserialr(h, s)
    assert point_biserial(s, h) == pytest.approx(r.statistic)
    # perfectly separated, reversed, and all tied
    assert roc_auc([0.9, 0.8, 0.2], [1, 1, 0]) == 1.0
    assert roc_auc([0.1, 0.2, 0.9], [1, 1, 0]) == 0.0
    assert roc_auc([0.5, 0.5, 0.5, 0.5], [1, 0, 1, 0]) == 0.5
    # a binary metric with ties: AUC = (TPR + TNR) / 2 = (2/3 + 1/2) / 2
    s, h = [1, 1, 0, 0, 1], [1, 0, 0, 1, 1]
    assert roc_auc(s, h) == pytest.approx((2 / 3 + 1 / 2) / 2) == pytest.approx(brute_auc(s, h))
    assert point_biserial(s, h) == pytest.approx(stats.pearsonr(s, h).statistic)
    # undefined cases
    assert roc_auc([0.1, 0.2], [1, 1]) is None and point_biserial([0.3, 0.3, 0.3], [1, 0, 1]) is None
    with pytest.raises(ValueError, match="0 or 1"):
        roc_auc([0.1, 0.2], [1, 2])
    with pytest.raises(ValueError, match="equally long"):
        point_biserial([0.1, 0.2], [1])


def test_auc_against_brute_force_and_scipy_with_ties():
    rng = random.Random(0)
    for _ in range(50):
        k = rng.randint(2, 40)
        s = [rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, rng.random()]) for _ in range(k)]
        h = [rng.randint(0, 1) for _ in range(k)]
        if len(set(h)) < 2:
            continue
        auc = roc_auc(s, h)
        assert auc == pytest.approx(brute_auc(s, h))
        pairs = list(zip(s, h, strict=True))
        u = stats.mannwhitneyu([x for x, y in pairs if y], [x for x, y in pairs if not y]).statistic
        assert auc == pytest.approx(u / (sum(h) * (k - sum(h))))
        fpr, tpr, _thr = roc_curve(s, h)
        assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
        assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
        assert np.trapezoid(tpr, fpr) == pytest.approx(auc)  # ties give diagonal segments
        if len(set(s)) > 1:
            assert point_biserial(s, h) == pytest.approx(stats.pointbiserialr(h, s).statistic)


def test_agreement_of_binary_metrics():
    a = agreement([1, 1, 0, 0, 1], [1, 0, 0, 1, 1])
    assert a == {"agreement": 0.6, "tp": 2, "tn": 1, "fp": 1, "fn": 1, "false_positive_share": 0.5}
    assert agreement([0.2, 1, 0], [1, 0, 0]) is None


def sc(*objs, size=(480, 320)):
    return Scene.from_dict({"image_size": list(size), "objects": list(objs)})


def test_matching_hungarian_versus_greedy():
    # 1-D example: greedy grabs the closest pair (p, b) first and is left with a poor (q, a)
    ann = sc(obj("red", "cube", "metal", 0.00 * 480 + 10, 100), obj("blue", "cube", "metal", 0.20 * 480 + 10, 100))
    pred = sc(obj("red", "cube", "metal", 0.11 * 480 + 10, 100), obj("blue", "cube", "metal", 0.30 * 480 + 10, 100))
    assert match_objects(pred, ann, "greedy", None) == [(0, 1), (1, 0)]
    assert match_objects(pred, ann, "hungarian", None) == [(0, 0), (1, 1)]
    # the distance limit (fraction of the image diagonal) leaves far objects unmatched
    assert match_objects(pred, ann, "hungarian", 0.05) == []
    assert match_objects(sc(), ann) == []
    with pytest.raises(ValueError, match="hungarian"):
        match_objects(pred, ann, "nearest")


def test_scene_graph_accuracy_by_hand():
    ann = sc(obj("red", "cube", "metal", 100, 80), obj("blue", "sphere", "rubber", 300, 80),
             obj("gray", "cylinder", "rubber", 200, 250))
    same_other_order_and_resolution = sc(
        obj("gray", "cylinder", "rubber", 400, 500), obj("red", "cube", "metal", 200, 160),
        obj("blue", "sphere", "rubber", 600, 160), size=(960, 640))
    wrong_colour_missing_one = sc(obj("green", "cube", "metal", 104, 82), obj("blue", "sphere", "rubber", 298, 84))
    out = scene_graph_accuracy([(same_other_order_and_resolution, ann), (wrong_colour_missing_one, ann)])
    assert out["n"] == 2 and out["exact"] == 0.5 and out["count"] == 0.5
    assert out["matched_objects"] == 5
    assert out["color"] == pytest.approx(4 / 5) and out["shape"] == out["material"] == out["region"] == 1.0
    assert out["precision"] == 1.0 and out["recall"] == pytest.approx(5 / 6)
    assert scene_graph_accuracy([]) == {"n": 0}


def _scene_json(*objs):
    return json.dumps({"image_size": [480, 320], "objects": list(objs)})


SPEC = json.dumps({"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]})


def write_inputs(tmp_path):
    rng = random.Random(1)
    rows, annotations = [], []
    good = [obj("red", "cube", "metal", 100, 80), obj("blue", "sphere", "rubber", 300, 80),
            obj("gray", "cylinder", "rubber", 200, 250)]
    bad = [dict(good[0], color="green"), good[1], good[2]]
    for model in ("flux", "qwen"):
        for i in range(12):
            h = int(rng.random() < 0.5)
            rows.append({
                "id": f"1SAT-{i:04d}", "model": model, "human": h,
                "logicval": h if i % 5 else 1 - h,  # binary, wrong on every fifth image
                "clipscore": round(rng.uniform(0.1, 0.3), 3),
                "soft_tifa": round(min(1.0, max(0.0, 0.3 + 0.4 * h + rng.uniform(-0.2, 0.2))), 3),
                "prompt": "There is a red object.",
                "predicted_scene": _scene_json(*(good if (h if i % 5 else 1 - h) else bad)),
            })
            annotations.append({"id": f"1SAT-{i:04d}", "model": model, "scene": json.loads(_scene_json(
                *(good if h else bad))), "spec_json": SPEC})
    csv_path = tmp_path / "scores.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    ann_path = tmp_path / "annotations.jsonl"
    ann_path.write_text("".join(json.dumps(a) + "\n" for a in annotations))
    return csv_path, ann_path, rows


def test_meta_evaluate_wide_csv_with_annotations(tmp_path):
    csv_path, ann_path, rows = write_inputs(tmp_path)
    records = load_records(csv_path, annotations=ann_path)
    assert len(records) == 24 and all(r.annotated_scene is not None and r.predicted_scene is not None for r in records)
    assert set(records[0].scores) == {"logicval", "clipscore", "soft_tifa"}  # "prompt" is not a metric
    result = meta_evaluate(records)
    assert result["models"] == ["flux", "qwen", "all"]
    for model in ("flux", "qwen"):
        sub = [r for r in rows if r["model"] == model]
        h = [r["human"] for r in sub]
        for name in ("logicval", "clipscore", "soft_tifa"):
            s = [r[name] for r in sub]
            e = result["by_metric"][name][model]
            assert e["roc_auc"] == pytest.approx(brute_auc(s, h))
            assert e["point_biserial"] == pytest.approx(stats.pointbiserialr(h, s).statistic)
        lv = result["by_metric"]["logicval"][model]
        assert lv["agreement"] == pytest.approx(np.mean([r["logicval"] == r["human"] for r in sub]))
        assert "agreement" not in result["by_metric"]["clipscore"][model]
        acc = result["scene_graph_accuracy"][model]
        assert acc["exact"] == pytest.approx(lv["agreement"])  # the scene differs exactly where logicval errs
    assert result["by_metric"]["logicval"]["all"]["n"] == 24
    md = format_markdown(result)
    assert "## Point-biserial correlation" in md and "## ROC-AUC" in md and "## Exact agreement" in md
    assert "## Scene-graph extraction accuracy" in md


def test_long_format_and_derived_human_verdicts(tmp_path):
    good = _scene_json(obj("red", "cube", "metal", 100, 80), obj("blue", "sphere", "rubber", 300, 80),
                       obj("gray", "cylinder", "rubber", 200, 250))
    bad = _scene_json(obj("green", "cube", "metal", 100, 80), obj("blue", "sphere", "rubber", 300, 80),
                      obj("gray", "cylinder", "rubber", 200, 250))
    lines = []
    for i, (ann, s) in enumerate([(good, 0.9), (bad, 0.2), (good, 0.4), (bad, 0.6)]):
        # no human column: h = [annotated scene |= spec]
        lines.append({"id": str(i), "model": "m", "metric": "vlm_judge", "score": s, "annotated_scene": ann,
                      "spec_json": SPEC})
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = meta_evaluate(load_records(path))
    assert result["n_human_derived"] == 4 and result["images"]["m"]["human_correct"] == 0.5
    assert result["by_metric"]["vlm_judge"]["m"]["roc_auc"] == pytest.approx(0.75)
    assert result["models"] == ["m"]


def test_bad_inputs(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("id,model,human,score_a\n1,m,2,0.5\n")
    with pytest.raises(ValueError, match=r"row 1: human verdict must be 0 or 1"):
        load_records(p)
    p.write_text("id,model,human,a\n1,m,1,0.5\n1,m,0,0.4\n")
    with pytest.raises(ValueError, match="conflicting human verdicts"):
        load_records(p)
    p.write_text('id,model,human,predicted_scene\n1,m,1,"{""image_size"": [1, 1]}"\n')
    with pytest.raises(ValueError, match="predicted_scene"):
        load_records(p)
    with pytest.raises(ValueError, match="no such file"):
        load_records(tmp_path / "missing.csv")
    assert meta_main(["meta", str(tmp_path / "missing.csv")]) == 2


@pytest.mark.slow  # draws the plot with matplotlib (~1.5 s); the tables alone are tested above
def test_meta_cli_writes_tables_and_plot(tmp_path, capsys):
    csv_path, ann_path, _ = write_inputs(tmp_path)
    out = tmp_path / "report"
    assert meta_main(["meta", str(csv_path), "--annotations", str(ann_path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| metric | flux | qwen | all |" in printed and "wrote" in printed
    assert (out / "meta.md").read_text().startswith("# Meta-evaluation")
    data = json.loads((out / "meta.json").read_text())
    assert set(data["by_metric"]) == {"logicval", "clipscore", "soft_tifa"}
    assert set(data["scene_graph_accuracy"]) == {"flux", "qwen", "all"}
    png = (out / "roc.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    # metric selection and greedy matching
    assert meta_main(["meta", str(csv_path), "--metrics", "clipscore", "--matching", "greedy"]) == 0
    assert "soft_tifa" not in capsys.readouterr().out


def test_records_can_be_built_in_python():
    recs = [MetaRecord(str(i), "m", h, {"x": s}) for i, (h, s) in enumerate([(1, 0.9), (0, 0.1), (1, 0.5)])]
    result = meta_evaluate(recs)
    assert result["by_metric"]["x"]["m"]["roc_auc"] == 1.0 and result["scene_graph_accuracy"] == {}


# ---- annotation flags (paper Table 4) ----------------------------------------------------------
def _annotate_and_export(tmp_path):
    """Two models' images annotated through the Space's store and exported as the Annotate tab does."""
    from PIL import Image

    from logicval_hf.space.annotate import AnnotationStore, export_model

    root = tmp_path / "images"
    store = AnnotationStore(tmp_path / "ann.sqlite")
    plan = {  # model -> id -> (deformed, rendering_error)
        "flux": {"1SAT-0000": (True, False), "1SAT-0001": (True, False), "1SAT-0002": (False, False),
                 "3SAT-0000": (False, True)},
        "gemini": {"1SAT-0000": (False, False), "1SAT-0001": (False, False), "1SAT-0002": (False, False),
                   "3SAT-0000": (False, False)},
    }
    for model, images in plan.items():
        (root / model).mkdir(parents=True)
        for image_id, (deformed, broken) in images.items():
            Image.new("RGB", (64, 48), "white").save(root / model / f"{image_id}.png")
            store.save(model, image_id, "empty_scene", True, "ann")  # exported without boxes
            store.save(model, image_id, "deformed", deformed, "ann")
            store.save(model, image_id, "rendering_error", broken, "ann")
    paths = [export_model(store, root, m, tmp_path / "export")["annotations_file"] for m in plan]
    merged = tmp_path / "annotations.jsonl"
    merged.write_text("".join(Path(p).read_text() for p in paths))
    return plan, merged


def test_annotation_flags_reach_meta(tmp_path, capsys):
    plan, ann = _annotate_and_export(tmp_path)
    rows = []
    for model, images in plan.items():
        for k, image_id in enumerate(images):
            human = int(model == "gemini" or k == 2)  # flux is right only on its one clean 1SAT image
            rows.append({"id": image_id, "model": model, "human": human, "logicval": human})
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records = load_records(scores, annotations=ann)
    assert all(set(r.scores) == {"logicval"} for r in records)  # flags are never metric columns
    result = meta_evaluate(records)
    flux, gemini = result["flags"]["flux"], result["flags"]["gemini"]
    assert flux["deformed"] == 0.5 and flux["rendering_error"] == 0.25 and flux["empty_scene"] == 1.0
    assert flux["by_package"]["1SAT"]["deformed"] == pytest.approx(2 / 3)
    assert flux["by_package"]["3SAT"]["deformed"] == 0
    assert gemini["deformed"] == 0.0 and gemini["flagged"] == 0.0
    assert flux["success"]["all"] == {"n": 4, "human": 0.25, "logicval": 0.25}
    assert flux["success"]["unflagged"] == {"n": 1, "human": 1.0, "logicval": 1.0}
    assert flux["success"]["flagged"]["n"] == 3 and flux["success"]["flagged"]["human"] == 0.0
    assert result["flags"]["all"]["success"]["unflagged"]["n"] == 5
    md = format_markdown(result)
    assert "## Images with a deformed object (%, paper Table 4)" in md
    assert "| flux | 4 | 66.7 | 0.0 | 50.0 | 25.0 | 100.0 |" in md
    assert "## Success with and without flagged images" in md and "| flux | unflagged | 1 | 100.0 | 1.000 |" in md
    # and through the command
    assert meta_main(["meta", str(scores), "--annotations", str(ann), "--out", str(tmp_path / "out")]) == 0
    assert "paper Table 4" in capsys.readouterr().out
    assert json.loads((tmp_path / "out" / "meta.json").read_text())["flags"]["flux"]["deformed"] == 0.5


def test_without_flags_there_is_no_flag_section():
    recs = [MetaRecord(str(i), "m", h, {"x": s}) for i, (h, s) in enumerate([(1, 0.9), (0, 0.1)])]
    result = meta_evaluate(recs)
    assert result["flags"] == {} and "Table 4" not in format_markdown(result)


def test_known_truth_stands_in_where_no_human_verdict_is_given(tmp_path):
    """A run's ``known_truth`` column is the verdict of a record without a human one; a human verdict (given, or
    derived from an annotated scene graph) comes first; the report says which verdicts it is against."""
    rows = [{"id": str(i), "model": m, "known_truth": t, "logicval": t, "clip": s}
            for i, (m, t, s) in enumerate([("a", 1, 0.9), ("a", 0, 0.2), ("b", 1, 0.4), ("b", 0, 0.6)])]
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    records = load_records(path)
    assert all(set(r.scores) == {"logicval", "clip"} for r in records)  # known_truth is never a metric
    result = meta_evaluate(records)
    assert result["verdicts"] == {"human": 0, "derived from annotated scene graphs": 0, "known truth": 4}
    assert result["by_metric"]["clip"]["all"]["roc_auc"] == pytest.approx(0.75)
    md = format_markdown(result)
    assert md.startswith("# Meta-evaluation against known-truth verdicts") and "## Metrics compared" in md
    assert "| clip | 4 | 0.650 | 0.400 |" in md and "| logicval | 4 | 1.000 | 0.000 |" in md
    # a human verdict overrides the known truth: the logicval column now errs on image 0
    ann = tmp_path / "ann.jsonl"
    ann.write_text(json.dumps({"id": "0", "model": "a", "human": 0}) + "\n")
    result = meta_evaluate(load_records(path, annotations=ann))
    assert result["verdicts"]["human"] == 1 and result["verdicts"]["known truth"] == 3
    assert result["by_metric"]["logicval"]["all"]["agreement"] == pytest.approx(0.75)
    assert format_markdown(result).startswith("# Meta-evaluation against human and known-truth verdicts")
