"""The contract: the catalog of templates, specs, scenes, the spatial vocabulary, parameter sampling, English
verbalisation and the independent plain-Python reference semantics. Everything else builds on these."""
