"""The scene parser's recipe end to end on a tiny scale: two steps of each training stage on a few renders, the
refit and the 8-bit copy, each stage reading what the one before wrote, and the parser reading the result
(`docs/training.md` runs the same commands at full scale)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import render_folder

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from logicval_hf.contract.scene import Scene  # noqa: E402
from logicval_hf.perception import load_image  # noqa: E402
from logicval_hf.perception.parser_decoding import CROP  # noqa: E402
from logicval_hf.perception.parser_models import AttributeClassifier  # noqa: E402
from logicval_hf.perception.parser_settings import CONFIDENCE_FEATURES  # noqa: E402
from logicval_hf.perception.scene_parser import SceneParser, attribute_model_beside, int8_copy_of  # noqa: E402
from logicval_hf.training import (  # noqa: E402
    quantize_parser,
    refit_parser,
    train_attribute_classifier,
    train_scene_parser,
)

QUICK = ["--no-progress", "--threads", "1"]


class Recipe:
    """The files each stage wrote, under one temporary folder."""

    def __init__(self, root: Path):
        self.renders = render_folder(root / "renders", 4, masks=True)
        self.classifier_run, self.detector_run = root / "classifier", root / "detector"
        self.shipped = root / "ship"
        self.shipped.mkdir()
        self.detector = self.shipped / "scene_parser.onnx"  # what the refit writes
        self.classifier = attribute_model_beside(self.detector)
        self.classifier_argv = ["--data", str(self.renders), "--out", str(self.classifier_run), "--steps", "2",
                                "--batch-size", "8", "--export", str(root / "classifier.onnx"), "--white-balance",
                                "0.3", *QUICK]
        self.detector_argv = ["--data", f"{self.renders}#weight=2", "--out", str(self.detector_run), "--steps", "2",
                              "--batch-size", "2", "--canvas", "160", "128", "--numpy-fraction", "0.5",
                              "--numpy-val", "1", "--export", str(root / "detector.onnx"), "--attribute-model",
                              str(root / "classifier.onnx"), *QUICK]

    def run(self) -> None:
        assert train_attribute_classifier.main(self.classifier_argv) == 0
        assert train_scene_parser.main(self.detector_argv) == 0
        shutil.copy(self.classifier_run.parent / "classifier.onnx", self.classifier)
        assert refit_parser.main(["--model", str(self.detector_run.parent / "detector.onnx"), "--attribute-model",
                                  str(self.classifier), "--data", f"{self.renders}:0.5",
                                  "--out", str(self.detector)]) == 0
        assert quantize_parser.main(["--model", str(self.detector), "--data", str(self.renders),
                                     "--images", "2"]) == 0


@pytest.fixture(scope="module")
def recipe(tmp_path_factory) -> Recipe:
    r = Recipe(tmp_path_factory.mktemp("recipe"))
    r.run()
    return r


def test_the_classifier_trains_two_steps_and_exports_what_the_parser_reads(recipe):
    ck = torch.load(recipe.classifier_run / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    clf = AttributeClassifier(recipe.classifier)
    provenance = clf.meta["provenance"]
    assert provenance["trained_steps"] == 2 and provenance["augmentation"]["white_balance_log"] == 0.3
    assert [d["folder"] for d in provenance["data"]] == ["$RENDERS/renders"]  # never an absolute path
    probs = clf.classify(np.zeros((3, 4, CROP, CROP), np.float32))
    assert set(probs) >= {"color", "shape", "material"} and np.allclose(probs["color"].sum(1), 1)


def test_the_detector_trains_two_steps_and_exports_with_its_classifier(recipe):
    ck = torch.load(recipe.detector_run / "last.pt", map_location="cpu", weights_only=False)
    assert ck["step"] == 2
    model = SceneParser(recipe.detector_run.parent / "detector.onnx", attribute_model=False)
    assert [o.name for o in model.session.get_outputs()] == ["peak", "reg", "logits", "heat", "vis"]
    val = model.meta["provenance"]["val"]
    # the second look is on; a few held-out images are too few to fit its threshold
    assert model.settings.second_look is not None and not val["second_look"]["fitted"]
    # the two networks' product is fitted for the classifier that ships beside
    assert val["expert_weights"]["weights"] == model.meta["expert_weights"]
    assert set(model.settings.expert_weights) == {"color", "shape", "material"}
    assert model.meta["provenance"]["data"][0]["folder"] == "$RENDERS/renders"


def test_the_refit_fits_the_pair_and_keeps_the_rest(recipe):
    trained = SceneParser(recipe.detector_run.parent / "detector.onnx", attribute_model=False).meta
    refitted = SceneParser(recipe.detector, attribute_model=False).meta
    refit = refitted["provenance"]["refit"]
    assert refit["attribute_model"] == recipe.classifier.name and refit["data"][0]["images"] == 2
    # the confidence's terms are fitted with the power, each weight <= 0, and read back by the parser
    terms = refit["confidence_terms"]
    assert set(terms["terms"]) <= set(CONFIDENCE_FEATURES) and all(w < 0 for w in terms["terms"].values())
    assert refitted["confidence"]["terms"] == terms["terms"] and refitted["confidence"]["scale"] == terms["scale"]
    assert terms["images"] == 2 and {"ece", "read_at_0.5", "exact_at_0.5"} <= set(terms["after"])
    keep = ("expert_weights", "confidence", "provenance")
    assert {k: v for k, v in refitted.items() if k not in keep} == {k: v for k, v in trained.items() if k not in keep}


def test_the_8_bit_copy_lies_beside_and_the_parser_reads_the_pair(recipe):
    int8 = int8_copy_of(recipe.detector)
    assert int8.is_file() and int8.stat().st_size < recipe.detector.stat().st_size
    for path in (recipe.detector, int8):
        model = SceneParser(path)  # the classifier is found beside either file
        assert model.attributes is not None and model.attributes.path == recipe.classifier
        scene = model.parse_batch([load_image(recipe.renders / "images" / "R_000.png")])[0]
        assert isinstance(scene, Scene) and scene.confidence is not None


def test_a_run_resumes_where_it_stopped(recipe):
    argv = list(recipe.classifier_argv)
    argv[argv.index("--steps") + 1] = "3"
    assert train_attribute_classifier.main(argv) == 0
    assert torch.load(recipe.classifier_run / "last.pt", map_location="cpu", weights_only=False)["step"] == 3
