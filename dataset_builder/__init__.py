"""Thin shell around `logicval_hf.benchmark.dataset` for building and publishing the LogicVal dataset folder."""
