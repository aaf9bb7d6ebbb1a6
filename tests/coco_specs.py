"""Random COCO constraints, specs and scenes over a small vocabulary, for the differential tests of the box
domain (a few classes and colours, so that random constraints meet on the same objects and both labels occur)."""

from __future__ import annotations

import random
from typing import Any

from logicval_hf.contract.catalog import load_catalog
from logicval_hf.contract.domain import load_domain
from logicval_hf.contract.scene import Scene, SceneObject
from logicval_hf.contract.spec import Constraint, Spec
from logicval_hf.errors import SpecError

COCO = load_domain("coco")
CATALOG = load_catalog()
#: a small vocabulary: dogs and cats have 4 legs, birds 2 (COCO's "legs" constant)
VOCAB = {"class": ("dog", "cat", "bird"), "color": ("red", "blue")}


def usable(template_id: str) -> bool:
    """Whether the template has COCO instances over `VOCAB` (every attribute slot maps to a COCO attribute, and
    its slot rules can be met with COCO's two attributes)."""
    t = CATALOG.template(template_id)
    if not all(COCO.slot_attributes(s.props) for s in t.slots if s.type == "attr"):
        return False
    try:
        random_constraint(template_id, random.Random(0), tries=200)
    except RuntimeError:
        return False
    return True


def random_constraint(template_id: str, rng: random.Random, max_count: int = 3,
                      relations: tuple[str, ...] = COCO.relations, tries: int = 1000) -> Constraint:
    """A valid COCO instance of the template over `VOCAB` (counts up to ``max_count``)."""
    t = CATALOG.template(template_id)
    for _ in range(tries):
        params: dict[str, Any] = {}
        for s in t.slots:
            if s.type == "attr":
                prop = rng.choice(COCO.slot_attributes(s.props))
                params[s.name] = {"prop": prop, "value": rng.choice(VOCAB[prop]), "negated": bool(s.negated)}
            elif s.type == "rel":
                allowed = [r for r in COCO.slot_relations(s.values) if r in relations]
                params[s.name] = {"rel": rng.choice(allowed), "negated": bool(s.negated)}
            elif s.type == "count":
                params[s.name] = rng.randint(max(int(s.min or 0), 0), max(max_count, int(s.min or 0)))
            elif s.type == "theta":
                params[s.name] = rng.choice(s.values)
            else:  # a domain constant
                params[s.name] = "legs"
        try:
            return Constraint.from_dict({"template": template_id, "params": params}, domain=COCO)
        except SpecError:
            continue
    raise RuntimeError(f"no valid COCO parameters for {template_id}")


#: every template with COCO instances, the CLEVR classes' and the extensions (X1-X5)
TEMPLATES = sorted(t for t in [*CATALOG.templates, *CATALOG.extensions] if usable(t))


def random_spec(rng: random.Random, templates: list[str], m: int, max_count: int = 3,
                relations: tuple[str, ...] = COCO.relations) -> Spec:
    cons = tuple(random_constraint(rng.choice(templates), rng, max_count, relations) for _ in range(m))
    return Spec(None, cons, COCO)


def random_scene(rng: random.Random, k: int, lattice: bool = False) -> Scene:
    """k detections: boxes anywhere (or on a coarse lattice, so ties, equal sizes and nesting occur), scores
    with ties."""
    objs = []
    for _ in range(k):
        if lattice:
            x, y = rng.randrange(4) * 128 + 16, rng.randrange(4) * 128 + 16
            w = h = rng.choice([16, 48, 96, 112])
        else:
            x, y = rng.uniform(0, 450), rng.uniform(0, 450)
            w, h = rng.uniform(4, 200), rng.uniform(4, 200)
        objs.append(SceneObject({"class": rng.choice(VOCAB["class"]), "color": rng.choice(VOCAB["color"])},
                                (x, y, min(512.0, x + w), min(512.0, y + h)), rng.choice([0.4, 0.6, 0.6, 0.9, 0.95])))
    return Scene((512, 512), tuple(objs), COCO)
