"""Logic behind the LogicVal Gradio Space (``space/app.py``), kept free of any UI code so that it can be tested
and reused without a browser.

Modules:

* `common`: benchmark rows by id, spec input (benchmark id or JSON), object labels and scene tables.
* `explore`: everything the Explore tab shows for one benchmark row.
* `compose`: menus of valid template parameters, building and solving composed specs (``/solve``).
* `explain`: which objects make a violated constraint fail (counterexamples, counts, missing witnesses).
* `check`: image upload hygiene, perception, strict / count-relaxed verdicts, probabilistic score (``/check``).
* `annotate`: the annotation store (SQLite, WAL, one transaction per edit, edit log with who/when), image
  folders, box labels from the closed vocabulary and export to scene-graph JSON files.
"""
