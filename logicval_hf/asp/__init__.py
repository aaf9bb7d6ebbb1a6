"""Answer Set Programming: spec -> ASP text (`encoding`, `programs`, the `.lp` files in ``lp/``), clingo controls
(`solver`: labels, witnesses, cores, verification) and the safety gate for untrusted programs (`safety`,
`sandbox`)."""
