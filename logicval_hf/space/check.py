"""The Check tab and the ``/check`` endpoint: image + spec -> scene graph, verdicts, failing constraints (the
judge, `logicval_hf.scoring.judge`, reads the image in the spec's domain and verifies it).

Uploads go through `logicval_hf.space.images` (file size, "is this an image at all", pixel count from the
header, then `logicval_hf.perception.load_image`). Errors are `CheckError` (a `ValueError`) with a sentence a
user can act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image

import logicval_hf.perception as perception
from logicval_hf.asp.budget import DEFAULT_TIMEOUT
from logicval_hf.asp.solver import Solver
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spec import Spec
from logicval_hf.contract.verbalise import constraint_names, constraint_text
from logicval_hf.scoring.judge import Judgement, JudgeOptions, judge_one
from logicval_hf.space import images
from logicval_hf.space.common import boxes_json, listed, object_label, parse_spec_input
from logicval_hf.space.config import default_backend
from logicval_hf.space.explain import explain_constraint
from logicval_hf.space.images import DEFAULT_MAX_FILE_BYTES


class CheckError(ValueError):
    """An upload or a check request that cannot be served; the message says why."""


def backend_choices(environ: Mapping[str, str] | None = None) -> list[str]:
    """Image backends to offer: the registered ones (``given`` takes scene graphs, not images) and the default."""
    names = [b for b in perception.BACKENDS if b != "given"]
    d = default_backend(environ)
    if d not in names:
        names.append(d)
    return sorted(names, key=lambda b: (b != d, b))


def load_upload(path: Any, max_bytes: int | None = DEFAULT_MAX_FILE_BYTES, name: str | None = None) -> np.ndarray:
    """An uploaded file as an RGB uint8 array, after size, type and pixel-count checks (`images.decode`)."""
    try:
        return images.decode(path, max_bytes, name)
    except images.ImageInputError as e:
        raise CheckError(str(e)) from None


def probability_of(spec: Spec, scene: Scene, label: str | None) -> dict[str, Any]:
    """The probabilistic score (`logicval_hf.scoring.probabilistic`) of a scene on its own, or ``p: None`` with the
    reason it is n/a."""
    from logicval_hf.scoring.probabilistic import probability

    try:
        r = probability(spec, scene, label=label)
    except Exception as e:  # noqa: BLE001 - shown to the user, the verdicts still stand
        return {"p": None, "available": True, "note": f"n/a: {type(e).__name__}: {e}"}
    return _probability_view(r, None)


def _probability_view(result: Any, error: str | None) -> dict[str, Any]:
    """The judge's probabilistic score (a ``ProbResult``) as the page shows it, or ``p: None`` with why not."""
    if result is None:
        return {"p": None, "available": True, "note": f"n/a: {error or 'not computed'}"}
    note = "exact" if result.exact else f"Monte Carlo estimate ± {result.stderr:.3f}"
    return {**result.to_dict(), "available": True, "note": note}


def _options(backend: str, timeout: float | None) -> JudgeOptions:
    """What the Check tab asks of the judge: both verdicts, the probabilistic score and the cheapest repair."""
    return JudgeOptions(backend=backend, probabilistic=True, repair=True, timeout=timeout)


def _judged(j: Judgement) -> Judgement:
    """``j`` when it was judged (a failed probabilistic score is shown as n/a); its error raised otherwise: a
    `CheckError` for an image the backend cannot read, the solver's own error (a `SolverTimeout`) for a spec."""
    if j.error is None or j.stage == "probability":
        return j
    if j.stage == "prediction":
        raise CheckError(j.error)
    assert j.exception is not None
    raise j.exception


def evaluate_scene(spec: Spec, scene: Scene, meta: Mapping[str, Any] | None = None,
                   solver: Solver | None = None, timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """Verdicts (strict and count-relaxed), the failing constraints with the objects involved, the score and the
    cheapest repair, for a scene graph (the judge, `logicval_hf.scoring.judge`, with the scene as given).

    The scene is verified once: the count-relaxed verdict is derived from the strict one. A spec without a label
    is labelled within ``timeout`` seconds, else `SolverTimeout` (a ValueError: the UI shows its message)."""
    meta = dict(meta or {})
    j = judge_one(spec, scene, _options("given", timeout), solver=solver, label=meta.get("label"), name="scene")
    return answer(_judged(j), meta)


def answer(j: Judgement, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The ``/check`` answer of a judged item: verdicts, failing constraints with why and the objects involved,
    notes, the probabilistic score and the repair."""
    spec, scene, strict, label = j.spec, j.scene, j.strict, j.label
    assert spec is not None and scene is not None and strict is not None and j.relaxed is not None and label
    constraints = []
    violated = []
    for i, c in enumerate(spec.constraints):
        bad = i in strict.violated
        text = constraint_text(c, spec.n, "short")
        constraints.append({"index": i, "template": c.template_id, "text": text, "holds": not bad})
        if bad:
            ex = explain_constraint(c, scene, spec.n)
            if ex["holds"]:  # the reference semantics disagrees: report the solver's verdict only
                ex["explanation"] = "the solver reports this constraint violated"
            violated.append({"index": i, **ex})
    notes = []
    if not strict.count_ok:
        notes.append(f"the scene has {len(scene)} objects, the spec asks for exactly {spec.n}")
    if label == "UNSAT":
        notes.append("the spec is UNSAT: the correct image is an empty scene"
                     + ("" if len(scene) == 0 else f", this one shows {len(scene)} object(s)"))
    return {
        "id": meta.get("id"),
        "package": meta.get("package"),
        "label": label,
        "n": spec.n,
        "spec": spec.to_dict(),
        "scene": scene.to_dict(),
        "objects": boxes_json(scene),
        "verdict": {"strict": strict.to_dict(), "relaxed": j.relaxed.to_dict()},
        "constraints": constraints,
        "violated": violated,
        "notes": notes,
        "probability": _probability_view(j.probability, j.error),
        "repair": j.repair.to_dict() if j.repair is not None else {"error": j.repair_error},
    }


def check_image(image: Any, spec_input: Any, backend: str | None = None,
                max_bytes: int | None = DEFAULT_MAX_FILE_BYTES, name: str | None = None) -> dict[str, Any]:
    """The ``/check`` answer for an uploaded image path and a spec (benchmark id or JSON): the image perceived
    in the spec's domain (a coco spec in the coco domain, by a backend that perceives it)."""
    spec, meta = parse_spec_input(spec_input)
    rgb = load_upload(image, max_bytes, name)
    backend = backend or default_backend()
    j = judge_one(spec, rgb, _options(backend, DEFAULT_TIMEOUT), label=meta.get("label"), name="image")
    out = answer(_judged(j), meta)
    out["backend"] = backend
    return out


# ---- presentation helpers -----------------------------------------------------------------------------------
def _fails(indices: Any) -> str:
    return f"{constraint_names(indices)} {'fails' if len(indices) == 1 else 'fail'}"


def verdict_story(result: Mapping[str, Any]) -> str:
    """The strict verdict in one sentence that says why: the count, the failing constraints, the UNSAT rule.

    The verdict and the list of failing constraints below it both follow from it, so the page never says "not
    satisfied" above "every constraint holds" without saying that the count is what fails.
    """
    s, n = result["verdict"]["strict"], result["n"]
    k, failing = s["n_objects"], s["violated"]
    if result["label"] == "UNSAT":
        if s["ok"]:
            return ("✓ Satisfied: the spec is UNSAT (no scene can satisfy it), and the right answer, an empty "
                    "scene, is what the image shows.")
        return (f"✗ Not satisfied: the spec is UNSAT (no scene can satisfy it), so the right image is an empty "
                f"scene; this one shows {k} object(s).")
    if s["ok"]:
        return f"✓ Satisfied: {k} object(s) detected, as the spec asks, and every constraint holds."
    count = f"{k} object(s) detected where the spec asks for exactly {n}"
    if not s["count_ok"] and not failing:
        return (f"✗ Not satisfied, because of the count only: {count}. Every constraint holds on the detected "
                "objects, so the count-relaxed verdict is ✓.")
    if not s["count_ok"]:
        return f"✗ Not satisfied: {count}, and {_fails(failing)}."
    return f"✗ Not satisfied: the count matches (n = {n}), but {_fails(failing)}."


def verdict_markdown(result: Mapping[str, Any]) -> str:
    s, r = result["verdict"]["strict"], result["verdict"]["relaxed"]

    def mark(ok: bool) -> str:
        return "✓ satisfied" if ok else "✗ not satisfied"
    which = f" for {result['id']}" if result.get("id") else ""
    head = f"### Verdict{which} ({result['label']} spec, n = {result['n']})"
    prob = result["probability"]
    p = f"{prob['p']:.3f}" + (f" ({prob['note']})" if prob.get("note") else "") if prob.get("p") is not None \
        else prob.get("note", "n/a")
    failing = f"; failing: {constraint_names(s['violated'])}" if s["violated"] else "; no constraint fails"
    return "\n".join([
        head, "", f"**{verdict_story(result)}**", "",
        f"- **Strict:** {mark(s['ok'])} — {s['n_objects']} object(s) detected, count "
        f"{'matches' if s['count_ok'] else 'does not match'} n{failing}",
        f"- **Count-relaxed** (the count ignored): {mark(r['ok'])}",
        f"- **Probabilistic score:** {p}"])


def violations_markdown(result: Mapping[str, Any]) -> str:
    """The failing constraints, each with why and the objects involved; without any, what that means for the
    verdict above (`verdict_story`)."""
    if not result["violated"]:
        s = result["verdict"]["strict"]
        if result["label"] == "UNSAT":
            tail = ("" if s["ok"] else " The verdict fails because the spec is UNSAT: only an empty scene is "
                    "right.")
        elif s["count_ok"]:
            tail = ""
        else:
            tail = (f" The strict verdict fails on the count alone: {s['n_objects']} object(s) detected, "
                    f"{result['n']} asked for.")
        return f"**No constraint fails on the detected objects.**{tail}"
    lines = ["### Failing constraints", ""]
    for v in result["violated"]:
        lines.append(f"**{constraint_names([v['index']])}** (`{v['template']}`): {v['text']}")
        lines.append(f"- why: {v['explanation']}")
        if v["object_labels"]:
            lines.append(f"- objects involved: {listed(v['object_labels'])}")
        for lo in v.get("literal_objects", []):
            lines.append(f"- `{lo['slot']}` ({lo['literal']}): {listed(lo['labels']) or 'no object'}")
        lines.append("")
    return "\n".join(lines)


def involved_objects(result: Mapping[str, Any]) -> set[int]:
    """The objects named by the violated constraints of a `check_image` answer (highlighted in the drawing)."""
    return {i for v in result["violated"] for i in v["objects"]}


#: box colours (dark enough for white label text; no red, which marks objects of failing constraints)
_PALETTE = [(0, 114, 178), (0, 150, 80), (213, 94, 0), (120, 60, 170), (0, 128, 128), (190, 40, 160),
            (140, 100, 30), (40, 40, 140), (100, 120, 0), (60, 60, 60)]


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def draw_boxes(image: Any, scene: Scene, highlight: Any = (), min_width: int = 800) -> Image.Image:
    """The image with every object's box and label (``#i colour material shape``); objects in ``highlight``
    (those involved in a failing constraint) get a thicker red frame. Small images are upscaled to
    ``min_width`` first so that the labels stay legible; labels are placed so that they do not overlap."""
    im, draw, sx, sy, font = images.drawing_canvas(image, scene.image_size, min_width)
    W, H = im.size
    hl = set(highlight)
    width = max(2, round(min(W, H) / 250))
    placed: list[tuple[float, float, float, float]] = []
    boxes = [(o.bbox[0] * sx, o.bbox[1] * sy, o.bbox[2] * sx, o.bbox[3] * sy) for o in scene.objects]
    for i, box in enumerate(boxes):
        col = (220, 20, 20) if i in hl else _PALETTE[i % len(_PALETTE)]
        draw.rectangle(box, outline=col, width=width * (2 if i in hl else 1))
    for i, box in enumerate(boxes):
        col = (220, 20, 20) if i in hl else _PALETTE[i % len(_PALETTE)]
        text = object_label(scene, i)
        tb = draw.textbbox((0, 0), text, font=font)
        tw, th = tb[2] - tb[0] + 6, tb[3] - tb[1] + 6
        cands = [(box[0], box[1] - th), (box[0], box[3]), (box[0], box[1]), (box[2] - tw, box[1] - th),
                 (box[2] - tw, box[3])]
        cands += [(box[0], box[1] - th - k * th) for k in range(1, 4)]
        cands += [(box[0], box[3] + k * th) for k in range(1, 4)]
        best = None
        for cx, cy in cands:
            x = min(max(0.0, cx), max(0.0, W - tw))
            y = min(max(0.0, cy), max(0.0, H - th))
            r = (x, y, x + tw, y + th)
            if not any(_overlaps(r, q) for q in placed):
                best = r
                break
        if best is None:
            x, y = min(max(0.0, box[0]), max(0.0, W - tw)), min(max(0.0, box[1] - th), max(0.0, H - th))
            best = (x, y, x + tw, y + th)
        placed.append(best)
        draw.rectangle(best, fill=col)
        draw.text((best[0] + 3, best[1] + 3 - tb[1]), text, fill=(255, 255, 255), font=font)
    return im
