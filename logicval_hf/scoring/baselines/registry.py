"""The baseline metrics by name (paper, §4.3 and Appendix E), in one `Registry`.

    from logicval_hf.scoring.baselines import BASELINES

    BASELINES.names()                     # ['clipscore', 'soft-tifa', 'vlm-judge']
    SoftTIFA = BASELINES.get("soft-tifa")   # the class; build it as usual: SoftTIFA(vlm, aggregate="gm")

Entries are lazy ``"module:Class"`` references, imported on first `get`; an unknown name raises the
registry's did-you-mean error. The registry names are the command-line spelling (hyphens); each class's own
``name`` attribute (``clipscore``, ``vlm_judge``, ``soft_tifa``) is unchanged.
"""

from __future__ import annotations

from logicval_hf.common.registry import Registry
from logicval_hf.scoring.baselines.base import BaselineMetric

__all__ = ["BASELINES"]

#: Baseline metric classes by name (lazy ``"module:Class"`` references).
BASELINES: Registry[type[BaselineMetric]] = Registry("baseline metric", {
    "clipscore": "logicval_hf.scoring.baselines.clipscore:CLIPScore",
    "vlm-judge": "logicval_hf.scoring.baselines.vlm_judge:VLMJudge",
    "soft-tifa": "logicval_hf.scoring.baselines.soft_tifa:SoftTIFA",
})
