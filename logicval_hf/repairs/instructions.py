"""One English sentence per edit, naming each object so that a person finds it in the image.

An object is named by the fewest of its attributes that single it out in the input scene (the noun always, then the
domain's adjectives: ``the cube``, ``the red cube``, ``the red metal cube``), then by where it is (``the red cube at
the back left``), and when several objects look the same by its place among them (``one of the two cyan spheres:
the one on the right``). Words come from the verbaliser (`logicval_hf.contract.verbalise`): noun phrases, articles,
plurals and the relations' phrases.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from logicval_hf.contract.domain import Domain
from logicval_hf.contract.scene import Scene
from logicval_hf.contract.spatial import area
from logicval_hf.contract.spec import AttrLit
from logicval_hf.contract.verbalise import (
    ATTRIBUTE_PHRASES,
    REGION_COLUMN_WORDS,
    REGION_ROW_WORDS,
    noun_phrase,
    with_article,
)
from logicval_hf.repairs.model import Edit

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
#: rows of a domain without CLEVR's floor (an image's top and bottom rather than the back and the front)
FLAT_ROW_WORDS = ("top", "bottom")


def _number(k: int) -> str:
    return NUMBER_WORDS[k] if k < len(NUMBER_WORDS) else str(k)


def _ordinal(k: int) -> str:
    return ORDINAL_WORDS[k] if k < len(ORDINAL_WORDS) else f"{k + 1}th"


def place_words(domain: Domain, centre: tuple[float, float], image_size: tuple[float, float]) -> str:
    """``the back left`` (CLEVR's regions; ``the top left`` in a domain without them) of a centre."""
    rows = REGION_ROW_WORDS if "region" in domain.derived else FLAT_ROW_WORDS
    col = int(centre[0] >= image_size[0] / 2)
    row = int(centre[1] >= image_size[1] / 2)
    return f"the {rows[row]} {REGION_COLUMN_WORDS[col]}"


@dataclass(frozen=True)
class Name:
    """How to refer to one object: ``the red cube``, or ``one of the two cyan spheres`` + ``the one on the right``."""

    phrase: str
    which: str | None = None

    @property
    def unique(self) -> bool:
        return self.which is None


class Namer:
    """Referring expressions for the objects of one scene (the input, as the image shows it)."""

    def __init__(self, scene: Scene):
        self.scene = scene
        dom = scene.domain
        self.noun = dom.noun or dom.perceived_attributes[0]
        self.adjectives = [a for a in dom.adjectives if a in dom.perceived_attributes and a != self.noun]
        self.size = scene.image_size

    def _lits(self, values: Mapping[str, str], attrs: Sequence[str]) -> list[AttrLit]:
        return [AttrLit(a, values[a]) for a in (*attrs, self.noun)]

    def _matching(self, values: Mapping[str, str], attrs: Sequence[str]) -> list[int]:
        keys = (*attrs, self.noun)
        return [j for j, o in enumerate(self.scene.objects) if all(o.attributes[a] == values[a] for a in keys)]

    def _where(self, i: int) -> str:
        return place_words(self.scene.domain, self.scene.objects[i].center, self.size)

    def name(self, i: int) -> Name:
        obj = self.scene.objects[i]
        subsets = [c for k in range(len(self.adjectives) + 1) for c in itertools.combinations(self.adjectives, k)]
        for attrs in subsets:
            if self._matching(obj.attributes, attrs) == [i]:
                return Name("the " + noun_phrase(self._lits(obj.attributes, attrs)))
        group = self._matching(obj.attributes, self.adjectives)
        for attrs in subsets:  # the fewest attributes that, with the place, single it out
            if [j for j in self._matching(obj.attributes, attrs) if self._where(j) == self._where(i)] == [i]:
                return Name(f"the {noun_phrase(self._lits(obj.attributes, attrs))} at {self._where(i)}")
        attrs = next(a for a in subsets if self._matching(obj.attributes, a) == group)
        phrase = f"one of the {_number(len(group))} {noun_phrase(self._lits(obj.attributes, attrs), plural_form=True)}"
        return Name(phrase, self._which(i, group))

    def _which(self, i: int, group: list[int]) -> str:
        """Its place among look-alikes: on x where the centres differ, else on y."""
        cent = {j: self.scene.objects[j].center for j in group}
        xs = {cent[j][0] for j in group}
        k, words = (0, ("left", "right")) if len(xs) == len(group) else (1, ("back", "front"))
        if k == 1 and self.scene.domain.derived.get("region") is None:
            words = ("top", "bottom")
        order = sorted(group, key=lambda j: (cent[j][k], j))
        pos = order.index(i)
        if len(group) == 2:
            side = words[pos]
            return f"the one on the {side}" if k == 0 else f"the one at the {side}"
        if pos == 0:
            return "the leftmost one" if k == 0 else f"the one farthest to the {words[0]}"
        if pos == len(order) - 1:
            return "the rightmost one" if k == 0 else f"the one farthest to the {words[1]}"
        return f"the {_ordinal(pos)} from the {words[0]}"


def _value_words(attribute: str, value: str, noun: str) -> str:
    return with_article(value) if attribute == noun else value


def _sentence(verb_phrase: str, name: Name, rest: str = "") -> str:
    """``Remove the red cube.`` / ``Remove one of the two cyan spheres: the one on the right.``"""
    text = verb_phrase.format(name=name.phrase, rest=rest).strip()
    text = text[:1].upper() + text[1:]
    return f"{text}: {name.which}." if name.which else f"{text}."


def describe(scene: Scene, edits: Sequence[Edit], repaired: Scene, read: Collection[str] = ()) -> list[str]:
    """One sentence per edit, objects named as they appear in ``scene`` (the input); a moved or added object is
    placed by its relations to objects left as they were (on both axes, and in a box domain in the other families
    of the relations ``read``: "larger than the dog", "inside the cat")."""
    namer = Namer(scene)
    noun = namer.noun
    dom = scene.domain
    pairs = _pairs(dom, read)
    # indices of the repaired scene's objects in the input (None: added), in the order `apply` builds them
    gone = {e.object for e in edits if e.kind == "remove"}
    kept = [i for i in range(len(scene)) if i not in gone]
    touched = {e.object for e in edits if e.kind in ("move", "remove")}
    untouched_after = [k for k, i in enumerate(kept) if i not in touched]
    names_after = {k: namer.name(kept[k]) for k in untouched_after}
    out = []
    for e in edits:
        if e.kind == "remove":
            out.append(_sentence("Remove {name}", namer.name(e.object)))  # type: ignore[arg-type]
        elif e.kind == "set" and dom.is_open(e.attribute or ""):  # free text: "Change ... to read "sale""
            phrase = f'to read "{e.new}"' if e.attribute in ATTRIBUTE_PHRASES else f'to "{e.new}"'
            out.append(_sentence("Change {name} {rest}", namer.name(e.object), phrase))  # type: ignore[arg-type]
        elif e.kind == "set":
            words = _value_words(e.attribute or "", str(e.new), noun)
            out.append(_sentence("Make {name} {rest}", namer.name(e.object), words))  # type: ignore[arg-type]
        elif e.kind == "move":
            k = kept.index(e.object)  # type: ignore[arg-type]
            where = _move_anchors(scene, repaired, e.object, k, untouched_after, kept, names_after,  # type: ignore
                                  pairs)
            new_place = place_words(dom, repaired.objects[k].center, repaired.image_size)
            old_place = place_words(dom, scene.objects[e.object].center, scene.image_size)  # type: ignore[index]
            # a box domain names the place always: its anchors may be containment ("containing the dog")
            parts = ([f"to {new_place}"] if new_place != old_place or not where or not dom.ordered else []) + where
            out.append(_sentence("Move {name} {rest}", namer.name(e.object), ", ".join(parts)))  # type: ignore
        else:
            k = len(kept) + sum(1 for f in edits[: edits.index(e)] if f.kind == "add")
            values = e.new if isinstance(e.new, Mapping) else {}
            np = noun_phrase([AttrLit(a, values[a]) for a in (*namer.adjectives, noun) if a in values])
            where = [f"at {place_words(dom, repaired.objects[k].center, repaired.image_size)}"]
            where += _add_anchors(repaired, k, untouched_after, names_after, pairs)
            out.append(_sentence("Add {name} {rest}", Name(with_article(np)), ", ".join(where)))
    return out


def _pairs(domain: Domain, read: Collection[str]) -> list[tuple[str, str]]:
    """The relation pairs a sentence may anchor on: the two axes, and in a box domain every other family the spec
    reads (areas, containment)."""
    pairs = domain.canonical_relations()
    return pairs[:2] + [p for p in pairs[2:] if set(p) & set(read)]


def _gap(after: Scene, rel: str, a: int, b: int) -> float:
    """How far apart two objects are for a relation's anchor: their centres on its axis, else their areas."""
    axis = after.domain.rules[rel].axis
    if axis is not None:
        k = 0 if axis == "x" else 1
        return abs(after.objects[a].center[k] - after.objects[b].center[k])
    return abs(area(after.objects[a].bbox) - area(after.objects[b].bbox))


def _nearest(after: Scene, index: int, among: Sequence[int], names: Mapping[int, Name],
             changed: Mapping[int, Sequence[bool]] | None, pairs: Sequence[tuple[str, str]]) -> list[str]:
    dom = after.domain
    out = []
    for k, pair in enumerate(pairs):
        best: tuple[float, int, str] | None = None
        for j in among:
            if not names[j].unique or (changed is not None and not changed[j][k]):
                continue
            now = [r for r in pair if after.holds(r, index, j)]
            if not now:
                continue
            dist = _gap(after, now[0], index, j)
            if best is None or (dist, j) < best[:2]:
                best = (dist, j, f"{dom.rules[now[0]].phrase} {names[j].phrase}")
        if best is not None:
            out.append(best[2])
    return out


def _add_anchors(after: Scene, index: int, among: Sequence[int], names: Mapping[int, Name],
                 pairs: Sequence[tuple[str, str]]) -> list[str]:
    return _nearest(after, index, among, names, None, pairs)


def _move_anchors(before: Scene, after: Scene, old: int, index: int, among: Sequence[int], kept: Sequence[int],
                  names: Mapping[int, Name], pairs: Sequence[tuple[str, str]]) -> list[str]:
    """Relations of the moved object to unedited objects that the move changed, nearest first on each axis."""
    changed = {}
    for j in among:
        flags = []
        for pair in pairs:
            was = [r for r in pair if before.holds(r, old, kept[j])]
            now = [r for r in pair if after.holds(r, index, j)]
            flags.append(was != now)
        changed[j] = flags
    return _nearest(after, index, among, names, changed, pairs)


__all__ = ["Name", "Namer", "describe", "place_words"]
