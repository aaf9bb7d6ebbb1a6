"""Answer Set Programming: spec -> ASP text (`encoding`, `programs`, `universe`; the `.lp` files in the repository's
top-level ``asp/``, read as ``lp/``), clingo controls
(`solver`: labels, witnesses, cores, verification) and the safety gate for untrusted programs (`safety`,
`sandbox`)."""
