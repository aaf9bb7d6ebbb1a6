"""Thin shell: ``build.py`` and ``push.py`` run ``logicval build-dataset`` and ``logicval push-dataset``."""
