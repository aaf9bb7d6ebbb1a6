"""Former name of `logicval_hf.repairs.costs` (repair costs as a score), kept so that old imports keep working."""

from logicval_hf.repairs.costs import mean_costs, repair_many, sample_fields

__all__ = ["mean_costs", "repair_many", "sample_fields"]
