"""The official CLEVR generator's assets folder (``image_generation/data/``): checked and loaded, no Blender needed.

The folder holds ``base_scene.blend``, ``shapes/*.blend``, ``materials/*.blend`` and ``properties.json``
(facebookresearch/clevr-dataset-gen; BSD + PATENTS). It is not shipped: commands take its path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ASSETS_HINT", "AssetsError", "ClevrAssets", "load_assets"]

ASSETS_HINT = ("point --assets at the official CLEVR generator's image_generation/data/ folder "
               "(github.com/facebookresearch/clevr-dataset-gen)")


class AssetsError(ValueError):
    """The CLEVR assets folder is missing or incomplete."""


@dataclass(frozen=True)
class ClevrAssets:
    """The official generator's data folder: base scene, shape and material files, properties."""

    root: Path
    properties: Mapping[str, Any]

    @property
    def base_scene(self) -> Path:
        return self.root / "base_scene.blend"

    def shape_file(self, obj_name: str) -> Path:
        return self.root / "shapes" / f"{obj_name}.blend"

    def material_file(self, group: str) -> Path:
        return self.root / "materials" / f"{group}.blend"

    @property
    def sizes(self) -> list[tuple[str, float]]:
        return [(k, float(v)) for k, v in self.properties["sizes"].items()]

    @property
    def shapes(self) -> list[tuple[str, str]]:
        return list(self.properties["shapes"].items())

    @property
    def colors(self) -> list[tuple[str, tuple[float, float, float]]]:
        return [(k, (float(v[0]), float(v[1]), float(v[2]))) for k, v in self.properties["colors"].items()]

    @property
    def materials(self) -> list[tuple[str, str]]:
        return list(self.properties["materials"].items())

    def rgba(self, color: str) -> tuple[float, float, float, float]:
        r, g, b = self.properties["colors"][color]
        return (r / 255.0, g / 255.0, b / 255.0, 1.0)


def load_assets(path: str | os.PathLike | ClevrAssets) -> ClevrAssets:
    """Check an assets folder (every file ``properties.json`` names) and load it.

    Raises:
        AssetsError: the folder, ``properties.json`` or a file it names is missing or unreadable.
    """
    if isinstance(path, ClevrAssets):
        return path
    root = Path(path)
    if not root.is_dir():
        raise AssetsError(f"CLEVR assets folder {str(root)!r} does not exist: {ASSETS_HINT}")
    prop_file = root / "properties.json"
    try:
        props = json.loads(prop_file.read_text(encoding="utf-8"))
    except OSError:
        raise AssetsError(f"CLEVR assets folder {str(root)!r} has no properties.json: {ASSETS_HINT}") from None
    except json.JSONDecodeError as e:
        raise AssetsError(f"{str(prop_file)!r} is not valid JSON ({e}): {ASSETS_HINT}") from None
    keys = ("shapes", "colors", "materials", "sizes")
    if not isinstance(props, dict) or any(not isinstance(props.get(k), dict) or not props[k] for k in keys):
        raise AssetsError(f"{str(prop_file)!r} needs non-empty {list(keys)}: {ASSETS_HINT}")
    assets = ClevrAssets(root, props)
    needed = [assets.base_scene, *(assets.shape_file(v) for v in props["shapes"].values()),
              *(assets.material_file(v) for v in props["materials"].values())]
    missing = [str(p.relative_to(root)) for p in needed if not p.is_file()]
    if missing:
        raise AssetsError(f"CLEVR assets folder {str(root)!r} lacks {', '.join(missing)}: {ASSETS_HINT}")
    return assets
