"""Answer Set Programming: spec -> ASP text (`encoding`, `programs`, `universe`; the `.lp` files in the repository's
top-level ``asp/``, read as ``lp/``), labels with witnesses and minimal cores (`labelling`; box geometry decided by
`placement`, placements for given relations in `box_layout`), verdicts (`verifier`), the cached entry points
(`solver`, with time budgets from `budget` and a child process for large groundings, `isolated`) and the safety gate
for untrusted programs (`safety`, `sandbox`)."""
