"""Render folders whose masks show things that are not objects of the truth (``logicval render-clevr
--variations distractors,cut_by_frame``: a scene's ``uncounted`` list): the training data reads them as neither
an object nor floor, so a floor repaint keeps them and no target is put on them."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from logicval_hf.training.parser_augment import augment, recolour_floor
from logicval_hf.training.parser_data import load_folder


def _folder(root):
    for d in ("images", "masks", "scenes"):
        (root / d).mkdir(parents=True)
    rgb = np.full((30, 40, 3), 120, np.uint8)
    mask = np.zeros((30, 40), np.uint8)
    mask[5:15, 5:15] = 1      # the object
    mask[18:26, 25:35] = 2    # a distractor (a cone, say): uncounted
    rgb[mask == 1] = (200, 30, 30)
    rgb[mask == 2] = (30, 200, 30)
    Image.fromarray(rgb).save(root / "images" / "X_000.png")
    Image.fromarray(mask).save(root / "masks" / "X_000.png")
    scene = {"image_filename": "X_000.png", "mask_filename": "masks/X_000.png",
             "objects": [{"color": "red", "shape": "cube", "material": "rubber", "size": "large",
                          "pixel_coords": [10, 10, 5.0], "mask_index": 1, "bbox_xyxy": [5, 5, 14, 14]}],
             "uncounted": [{"reason": "out_of_vocabulary", "shape": "cone", "color": "other", "material": "rubber",
                            "mask_index": 2, "mask_pixels": 80, "bbox_xyxy": [25, 18, 34, 25]}]}
    (root / "scenes" / "X_000.json").write_text(json.dumps(scene))
    return root, rgb, mask


def test_uncounted_things_are_neither_objects_nor_floor(tmp_path):
    root, rgb, mask = _folder(tmp_path / "r")
    (rec,) = load_folder(root, who="test")
    assert len(rec.labels) == 1 and rec.centres.tolist() == [[10.0, 10.0]]
    assert (rec.mask[mask == 1] == 0).all() and (rec.mask[mask == 2] == -2).all() and (rec.mask[mask == 0] == -1).all()
    painted = recolour_floor(rec.rgb, rec.mask, np.random.default_rng(0))
    assert np.array_equal(painted[mask > 0], rgb[mask > 0])  # the object and the distractor keep their look
    assert not np.array_equal(painted[mask == 0], rgb[mask == 0])
    view = augment(rec, np.random.default_rng(1))
    assert view.objmap is not None and set(np.unique(view.objmap)) <= {-2, -1, 0}
    assert len(view.labels) <= 1
