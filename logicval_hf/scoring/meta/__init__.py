"""Meta-evaluation: how well automatic metrics agree with human verdicts (paper §4.4, §6; Tables 5–7,
Figure 5).

Input: one record per (model, image) with the human verdict ``h`` (1 = the image satisfies its spec) and
one or more metric scores ``s``. Per metric and model (and pooled over models) this computes

* the point-biserial correlation between ``s`` and ``h`` (Pearson's r with a binary variable; Table 5);
* the ROC-AUC of ``s`` for ``h`` from ranks (Mann-Whitney U with mid-ranks, so ties count one half;
  Figure 5), with the ROC curve for the plot;
* for binary metrics (every score 0 or 1, e.g. LogicVal): the exact agreement with ``h`` and the confusion
  counts (Table 6);

and, when predicted and human-annotated scene graphs are given, the scene-graph extraction accuracy per model
(Table 7): exact recovery of the full object list (count, colour, shape, material and region, as multisets),
count accuracy, and per-attribute accuracy on objects matched by box centre (Hungarian or greedy, within a
distance threshold), with detection precision and recall.

File formats (`load_records`): CSV, JSON Lines or a JSON list. *Wide*: columns ``id``, ``model``, ``human``
and one numeric column per metric. *Long*: columns ``id``, ``model``, ``metric``, ``score``, ``human``.
Optional columns: ``predicted_scene`` (or ``scene``) and ``annotated_scene`` (scene-graph JSON), and
``spec_json``: a record without ``human`` but with an annotated scene and a spec gets the paper's human
verdict ``h = [annotated scene |= spec]`` (an empty scene for UNSAT specs).

Annotation flags (the Space's Annotate export, ``annotations.jsonl`` / ``flags.jsonl``, or columns of the input):
``rendering_error``, ``deformed`` and ``empty_scene`` (0/1). With them, `meta_evaluate` reports per model (and
per package) the rate of each flag, the rate of images with a deformed object (paper Table 4), and the success
rates with and without the *flagged* images (a rendering error or a deformed object; an empty scene is an
answer, not a defect): the human verdicts' and each metric's mean score.

`meta_evaluate` returns a JSON-ready dict; `format_markdown` and `plot_roc` render it.

Modules: `statistics` (correlation, ROC, agreement), `scene_accuracy` (scene graphs against annotations),
`records` (reading the files), `analysis` (`meta_evaluate`, flags), `report` (Markdown, JSON, ROC plot).
"""

from logicval_hf.scoring.meta.analysis import ALL_MODELS, flag_summary, meta_evaluate
from logicval_hf.scoring.meta.records import DEFECT_FLAGS, FLAGS, RESERVED, MetaRecord, load_records
from logicval_hf.scoring.meta.report import format_markdown, plot_roc, write_report
from logicval_hf.scoring.meta.scene_accuracy import match_objects, scene_graph_accuracy
from logicval_hf.scoring.meta.statistics import agreement, point_biserial, roc_auc, roc_curve

__all__ = [
    "MetaRecord", "point_biserial", "roc_auc", "roc_curve", "agreement", "match_objects", "scene_graph_accuracy",
    "load_records", "meta_evaluate", "format_markdown", "plot_roc", "write_report", "FLAGS", "DEFECT_FLAGS",
    "flag_summary", "ALL_MODELS", "RESERVED",
]
