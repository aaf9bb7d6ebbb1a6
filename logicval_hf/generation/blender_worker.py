"""The child side of `logicval_hf.generation.blender_process.RemoteSceneRenderer` (runs in the Blender
environment): one ``{"init": settings}`` line, then ``{"scene": ..., "out": PNG path}`` lines, each answered by
one JSON line on the original standard output (``{"scene": ...}`` or ``{"error": ..., "kind": ...}``).

Blender prints to file descriptor 1 from C code; that descriptor is pointed at standard error before bpy loads,
so only answers reach the parent's pipe.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def answer(obj: dict) -> None:
        answers.write(json.dumps(obj) + "\n")
        answers.flush()

    from logicval_hf.contract.scene import Scene
    from logicval_hf.generation.blender import BlenderSceneRenderer

    renderer = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if "init" in req:
                renderer = BlenderSceneRenderer(**req["init"])
                answer({"ok": True})
                continue
            if renderer is None:
                raise ValueError("the first request must be {'init': settings}")
            from PIL import Image

            rgb, scene = renderer.render(Scene.from_dict(req["scene"]))
            Image.fromarray(rgb).save(req["out"], format="PNG")
            answer({"scene": scene.to_dict()})
        except Exception as e:  # noqa: BLE001  reported to the parent, which raises it there
            answer({"error": str(e), "kind": type(e).__name__})
    return 0


if __name__ == "__main__":
    sys.exit(main())
