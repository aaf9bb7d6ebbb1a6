"""Commands that need a missing optional extra exit 2 with one line naming it (each extra hidden in a fresh
interpreter: ``sys.modules[name] = None`` makes ``import name`` fail as if it were not installed)."""

import json
import subprocess
import sys

import pytest
from helpers import attr

from logicval_hf.common.extras import EXTRAS, MissingExtraError, extra_for_module, require

SPEC = {"n": 3, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]}


def run_hidden(hidden, argv, cwd=None, timeout=300):
    prelude = "".join(f"sys.modules[{m!r}] = None; " for m in hidden)
    code = f"import sys; {prelude}from logicval_hf.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def one_line(proc):
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    return proc.stderr.strip()


@pytest.fixture
def spec_and_image(tmp_path):
    from PIL import Image

    (tmp_path / "spec.json").write_text(json.dumps(SPEC))
    Image.new("RGB", (96, 64), "white").save(tmp_path / "img.png")
    return tmp_path / "spec.json", tmp_path / "img.png"


def test_require_names_the_extra():
    assert require("json", "neural", "x").dumps([]) == "[]"
    with pytest.raises(MissingExtraError) as e:
        require("no_such_module_for_logicval", "space", "the Space")
    assert isinstance(e.value, ImportError) and e.value.extra == "space"
    assert str(e.value) == ('the Space needs the "space" extra (no_such_module_for_logicval is not installed): '
                            'pip install "logicval-hf[space]"')
    import pickle  # it crosses process boundaries (perception workers) intact

    back = pickle.loads(pickle.dumps(e.value))
    assert (type(back), str(back), back.extra) == (MissingExtraError, str(e.value), "space")
    assert extra_for_module("torch.nn") == "neural" and extra_for_module("diffusers") == "train"
    assert extra_for_module("gradio") == "space" and extra_for_module("numpy") is None
    assert set(EXTRAS) >= {"neural", "space", "train"}


@pytest.mark.slow
@pytest.mark.parametrize("hidden", ["torch", "transformers", "open_clip"])
def test_check_with_the_neural_backend_needs_the_neural_extra(spec_and_image, hidden):
    spec, image = spec_and_image
    line = one_line(run_hidden([hidden], ["check", spec, image, "--backend", "neural"]))
    assert line == (f'logicval: error: the neural perception backend needs the "neural" extra ({hidden} is not '
                    'installed): pip install "logicval-hf[neural]"')


def test_the_metric_with_the_neural_backend_names_the_extra(spec_and_image):
    _spec, image = spec_and_image
    code = ("import sys; sys.modules['torch'] = None\n"
            "from logicval_hf.scoring.evaluation import compute\n"
            "try:\n"
            f"    compute([{str(image)!r}], [{json.dumps(SPEC)!r}], backend='neural')\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == ('MissingExtraError the neural perception backend needs the "neural" extra (torch '
                                   'is not installed): pip install "logicval-hf[neural]"')


def test_the_default_commands_need_no_extra(spec_and_image):
    spec, image = spec_and_image
    hidden = ["torch", "torchvision", "transformers", "open_clip", "gradio", "diffusers", "peft", "accelerate"]
    proc = run_hidden(hidden, ["check", spec, image])
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"] is False  # an empty white image
    proc = run_hidden(hidden, ["solve", spec])
    assert proc.returncode == 0 and json.loads(proc.stdout)["label"] == "SAT"


@pytest.mark.slow
def test_generate_with_diffusers_needs_the_train_extra(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "1SAT-0000", "package": "1SAT", "full_prompt_short": "a red cube",
                                "full_prompt_white_short": "a red cube"}) + "\n")
    line = one_line(run_hidden(["diffusers"], ["generate", "--model", "black-forest-labs/FLUX.1-dev",
                                               "--backend", "diffusers", "--dataset", rows, "--config", "1SAT",
                                               "--out", tmp_path / "out", "--no-progress"]))
    assert line == ('logicval: error: `logicval generate` needs the "train" extra (diffusers is not installed): '
                    'pip install "logicval-hf[train]"')


@pytest.mark.parametrize("build, line", [
    ("from logicval_hf.scoring.baselines.clipscore import CLIPScore; CLIPScore(object())",
     'the CLIPScore baseline needs the "neural" extra (torch is not installed): pip install "logicval-hf[neural]"'),
    ("from logicval_hf.scoring.baselines.vlm import TransformersVLM; TransformersVLM(object(), object())",
     'the local transformers VLM needs the "neural" extra (torch is not installed): '
     'pip install "logicval-hf[neural]"'),
])
def test_baselines_name_the_neural_extra(build, line):
    code = f"import sys; sys.modules['torch'] = None\ntry:\n    {build}\nexcept ImportError as e:\n    print(e)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == line, proc.stderr


@pytest.mark.slow
def test_run_with_the_neural_backend_needs_the_neural_extra(tmp_path):
    line = one_line(run_hidden(["open_clip"], ["run", "--backend", "neural", "--limit", "1", "--out", tmp_path / "r"]))
    assert line == ('logicval: error: the neural perception backend needs the "neural" extra (open_clip is not '
                    'installed): pip install "logicval-hf[neural]"')
    assert not (tmp_path / "r").exists()  # refused before any work
