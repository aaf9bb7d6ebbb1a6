"""The package's version, in one place: the package root re-exports it; caches, dataset cards, reports and the
command line read it from here (pyproject.toml holds the same string; a layout test keeps the two equal)."""

__version__ = "0.1.0"
