"""Thin shell around `logicval_hf.hub_builder` for building and publishing the LogicVal dataset folder."""
