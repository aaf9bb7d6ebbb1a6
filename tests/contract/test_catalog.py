import json

from shared_data import needs_shared, shared_path

from logicval_hf import load_catalog
from logicval_hf.contract.catalog import catalog_path

#: the template contract the shipped catalog was copied from, where the test data root has it
CONTRACT = shared_path("spec", "catalog.json")


@needs_shared("spec", "catalog.json")
def test_shipped_catalog_equals_the_contract():
    assert catalog_path().read_bytes() == CONTRACT.read_bytes()


def test_catalog_shape():
    cat = load_catalog()
    raw = json.loads(catalog_path().read_text())
    assert len(cat.templates) == 71
    counts = {c: len(cat.by_class(c)) for c in cat.classes}
    assert counts == raw["class_counts"]
    assert cat.domain.perceived_attributes == ("color", "shape", "material")
    assert set(cat.domain.attributes["region"]) == {"r0", "r1", "r2", "r3"}
    assert (cat.domain.n_min, cat.domain.n_max) == (3, 9)


def test_every_slot_reference_names_a_slot():
    cat = load_catalog()

    def refs(node):
        if isinstance(node, dict):
            for v in node.values():
                yield from refs(v)
        elif isinstance(node, list):
            for v in node:
                yield from refs(v)
        elif isinstance(node, str) and node.startswith("$"):
            yield node[1:]

    for t in cat.templates.values():
        names = {s.name for s in t.slots}
        used = set(refs(t.formula)) | set(refs(t.anti_vacuity or {}))
        assert used <= names, t.id
