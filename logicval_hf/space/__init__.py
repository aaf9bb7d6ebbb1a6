"""Logic behind the LogicVal Gradio Space (``space/app.py``), kept free of any UI code so that it can be tested
and reused without a browser, but for the two modules that hold the Space's gradio side.

Modules:

* `config`: the settings, read from the environment (``LOGICVAL_SPACE_*``, ``LOGICVAL_ANNOTATION_*``).
* `images`: the one gate for every image input (file size, type, pixel cap from the header).
* `common`: benchmark rows by id (built once, cached on disk), spec input (benchmark id or JSON), object
  labels, scene tables, quoting and escaping of echoed user text.
* `explore`: everything the Explore tab shows for one benchmark row.
* `compose`: menus of valid template parameters, building and solving composed specs (``/solve``).
* `explain`: which objects make a violated constraint fail (counterexamples, counts, missing witnesses).
* `check`: image upload hygiene, perception, strict / count-relaxed verdicts, probabilistic score (``/check``).
* `annotate`: the annotation store (SQLite, WAL, one transaction per edit, edit log with who/when), image
  folders, box labels from the closed vocabulary, save-time checks of boxes and export to scene-graph JSON files.
* `widgets` (gradio): handlers' errors as messages, upload and menu inputs that check what they are sent, scenes as
  what widgets show.
* `annotate_handlers` (gradio): the Annotate tab's handlers, the annotation desk's answers as widget updates.
"""
