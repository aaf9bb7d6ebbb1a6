"""The ``logicval`` command: `main` is the one entry point; one module per command group."""

from logicval_hf.cli.main import main

__all__ = ["main"]
