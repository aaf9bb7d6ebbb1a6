"""Importers of other benchmarks' prompt files, one module per source, each with ``import_source(path, out,
progress=False, timeout=DEFAULT_TIMEOUT) -> dict`` (``timeout``: each label's budget in seconds; returns the
summary of `logicval_hf.benchmark.imported.write_import`) and a module docstring that documents its semantic
choices. `IMPORTERS` maps the CLI's source names to them."""

from __future__ import annotations

from logicval_hf.common.registry import Registry

IMPORTERS: Registry = Registry("import source", {
    "geneval": "logicval_hf.benchmark.importers.geneval:import_source",
    "imag-eval": "logicval_hf.benchmark.importers.imag_eval:import_source",
    "gir-bench": "logicval_hf.benchmark.importers.gir_bench:import_source",
})
