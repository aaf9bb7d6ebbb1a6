"""Gradio app of the LogicVal metric Space: evaluate's standard metric widget.

Run ``python app.py`` (a Space with ``sdk: gradio`` does this). The widget takes a table of
``predictions`` (scene-graph JSON) and ``references`` (spec or benchmark-row JSON). evaluate 0.4.6's
``launch_gradio_widget`` is written against gradio 3 (``gr.inputs``); on gradio 4 and later the same widget
is built here with the current component names.
"""

import inspect
import sys
from pathlib import Path

from logicval_hf.common.extras import MissingExtraError, require

try:  # the metric itself works without gradio: evaluate.load('logicval/logicval')
    gr = require("gradio", "space", "the LogicVal metric app")
except MissingExtraError as e:  # exercised by hiding gradio in the tests
    if __name__ == "__main__":
        print(f"logicval: error: {e}", file=sys.stderr)
        sys.exit(2)
    raise

import evaluate
from evaluate.utils import launch_gradio_widget
from evaluate.utils.gradio import infer_gradio_input_types, json_to_string_type, parse_gradio_data, parse_readme

HERE = Path(__file__).resolve().parent


def module_script() -> Path:
    """The metric script next to this app (``logicval.py``, or ``<space name>.py`` on the Hub)."""
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != "app.py")
    if not scripts:
        raise FileNotFoundError(f"no metric script next to {__file__}")
    return scripts[0]


def load_module(**kwargs):
    """Load the metric from the script next to this file (never from the Hub by name)."""
    return evaluate.load(str(module_script()), **kwargs)


def build_widget(module):
    """evaluate's metric widget for gradio >= 4: a Dataframe of inputs -> the metric's result."""
    features = module.features[0] if isinstance(module.features, list) else module.features
    names, types = zip(*features.items(), strict=True)
    input_types = infer_gradio_input_types(types)

    def compute(data):
        return module.compute(**parse_gradio_data(data, input_types))

    columns = "column_count" if "column_count" in inspect.signature(gr.Dataframe).parameters else "col_count"
    table = gr.Dataframe(headers=list(names), row_count=1, datatype=json_to_string_type(input_types),
                         **{columns: len(names)})
    return gr.Interface(
        fn=compute,
        inputs=table,
        outputs=gr.Textbox(label=module.name),
        description=module.info.description + "\nEach cell holds one JSON document: a scene graph on the left, "
                                               "a specification (or benchmark row) on the right.",
        title=f"Metric: {module.name}",
        article=parse_readme(HERE / "README.md"),
    )


def main() -> None:
    module = load_module()
    if hasattr(gr, "inputs"):  # gradio 3.x: evaluate's own widget
        sys.path.insert(0, str(HERE))  # it reads README.md from sys.path[0]
        launch_gradio_widget(module)
    else:
        build_widget(module).launch()


if __name__ == "__main__":
    main()
