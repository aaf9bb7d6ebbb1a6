"""What the models are asked: where each attribute comes from (`attribute_sources`), the detector's prompt of a
domain's nouns (`default_detector_prompt`, and `class_prompt_chunks` when the noun is the detector's label),
CLIP's prompt templates per attribute and GenEval's colour prompts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from logicval_hf.contract.catalog import Domain, load_catalog
from logicval_hf.contract.domain import DEFAULT_DOMAIN

__all__ = ["GENEVAL_LOGIT_SCALE", "GENEVAL_TEMPLATES", "SOURCES", "TEMPLATES", "VIEW_DOMAINS", "attribute_sources",
           "class_prompt_chunks", "default_detector_prompt", "find_run", "noun_of", "prompt_piece", "PromptChunk"]

#: How an attribute can be perceived (see `logicval_hf.perception.neural`).
SOURCES = ("views", "detector", "geneval")

#: Domains perceived as in the paper (Appendix E): the detector gives boxes, CLIP over views every attribute.
#: Every other domain takes its noun from the detector's label and its ``color`` from GenEval's classifier.
VIEW_DOMAINS = (DEFAULT_DOMAIN,)

#: GenEval's colour prompts (``{c}``: the colour, ``{classname}``: the object's class); per colour, the
#: L2-normalised text embeddings are averaged (and normalised again), as ``clip_benchmark``'s zero-shot classifier.
GENEVAL_TEMPLATES = ("a photo of a {c} {classname}", "a photo of a {c}-colored {classname}",
                     "a photo of a {c} object")

#: GenEval scores crops with this fixed CLIP logit scale (``100 * cos``).
GENEVAL_LOGIT_SCALE = 100.0

#: Prompt templates per attribute ("{}" is the class name); logits are averaged over the templates.
TEMPLATES: dict[str, tuple[str, ...]] = {
    "shape": (
        "a photo of a {}.",
        "a 3D render of a {}.",
        "a {} on a grey background.",
        "a rendering of a {} object.",
        "a close-up photo of a {}.",
    ),
    "color": (
        "a photo of a {} object.",
        "a {} object in a 3D render.",
        "a {} thing on a grey background.",
        "a rendering of a {} coloured object.",
        "the colour {}.",
    ),
    "material": (
        "a photo of a {} object.",
        "a {} object in a 3D render.",
        "an object made of {}.",
        "a rendering of a {} thing on a floor.",
        "a close-up photo of something made of {}.",
    ),
    "default": (
        "a photo of a {} object.",
        "a {} object in a 3D render.",
        "a rendering of a {} thing.",
    ),
}


def noun_of(domain: Domain) -> str:
    from logicval_hf.contract.verbalise import NOUN_ATTRIBUTE

    return domain.noun or NOUN_ATTRIBUTE


def prompt_piece(phrase: str) -> str:
    from logicval_hf.contract.verbalise import with_article

    return f"{with_article(phrase)}.".lower()


def default_detector_prompt(domain: Domain | None = None) -> str:
    """``"a cube. a sphere. a cylinder."`` from the values of the domain's noun (``domain.noun``: CLEVR's shape,
    COCO's class; ``"an object."`` without one). A noun taken from the detector is prompted in chunks that fit
    the detector's text length (`NeuralPipeline.class_prompts`)."""
    domain = domain or load_catalog().domain
    nouns = domain.attributes.get(noun_of(domain), ())
    if not nouns:
        return "an object."
    return " ".join(prompt_piece(s) for s in nouns)


def attribute_sources(domain: Domain, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{attribute: source}`` for every perceived attribute of ``domain`` (see `logicval_hf.perception.neural`).

    Defaults: in `VIEW_DOMAINS` (CLEVR) every attribute from CLIP over views (the paper's pipeline); elsewhere
    the noun from the detector's label, ``color`` from GenEval's classifier and the rest from CLIP over views.
    ``overrides`` replace single entries. Raises `ValueError` for an unknown attribute or source, a detector
    source on an attribute other than the noun, or a GenEval source on the noun (its prompts name the class).
    """
    noun = noun_of(domain)
    perceived = domain.perceived_attributes
    if domain.name in VIEW_DOMAINS:
        out = dict.fromkeys(perceived, "views")
    else:
        out = {a: "detector" if a == noun else "geneval" if a == "color" and noun in perceived else "views"
               for a in perceived}
    for a, src in (overrides or {}).items():
        if a not in perceived:
            raise ValueError(f"sources: {a!r} is not a perceived attribute of domain {domain.name!r}; "
                             f"it has {list(perceived)}")
        if src not in SOURCES:
            raise ValueError(f"sources.{a}: {src!r} is not one of {list(SOURCES)}")
        out[a] = src
    for a, src in out.items():
        if src == "detector" and a != noun:
            raise ValueError(f"sources.{a}: only the domain's noun ({noun!r}) can come from the detector's label")
        if src == "geneval" and (a == noun or noun not in perceived):
            raise ValueError(f"sources.{a}: GenEval's classifier names the object's {noun!r} in its prompts; "
                             f"it cannot classify the noun itself")
    return out


def find_run(seq: Sequence[int], sub: Sequence[int], start: int = 0) -> int | None:
    """The first index ``>= start`` where ``sub`` runs in ``seq`` (None if nowhere)."""
    n = len(sub)
    for i in range(start, len(seq) - n + 1):
        if list(seq[i:i + n]) == list(sub):
            return i
    return None


#: one prompt chunk for the detector: (prompt, noun values, token positions of each value's name, prompt's tokens)
PromptChunk = tuple[str, tuple[str, ...], tuple[tuple[int, ...], ...], tuple[int, ...]]


def class_prompt_chunks(values: Sequence[str], phrases: Sequence[str], tokenizer: Callable[..., Any],
                        max_len: int, noun: str = "class") -> list[PromptChunk]:
    """The detector prompts naming every noun value (``"a dog."``, its phrase), as few chunks as fit the
    detector's ``max_len`` text tokens with [CLS] and [SEP], each with the positions of every value's name
    tokens (not the article, not the dot) in the tokenised prompt.

    Args:
        values: the noun's values (COCO's 80 classes).
        phrases: what each value is called in the prompt (lower-case).
        tokenizer: the detector's tokenizer (``tokenizer(text, add_special_tokens=...)["input_ids"]``).
        max_len: the detector's text length (``config.max_text_len``).
        noun: the noun attribute's name, for messages.
    Raises:
        ValueError: one value's prompt alone is too long; the tokenizer does not split a prompt into its pieces.
    """
    def ids(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    budget = max_len - 2  # [CLS] ... [SEP]
    chunks: list[list[int]] = [[]]
    used = 0
    pieces = [ids(prompt_piece(p)) for p in phrases]
    for k, piece in enumerate(pieces):
        if len(piece) > budget:
            raise ValueError(f"the prompt of {noun} {values[k]!r} alone is longer than the detector's {max_len} "
                             "text tokens")
        if used + len(piece) > budget and chunks[-1]:
            chunks.append([])
            used = 0
        chunks[-1].append(k)
        used += len(piece)
    out = []
    for chunk in chunks:
        prompt = " ".join(prompt_piece(phrases[k]) for k in chunk)
        full = list(tokenizer(prompt)["input_ids"])
        cursor, spans = 0, []
        for k in chunk:
            start = find_run(full, pieces[k], cursor)
            name = ids(phrases[k])
            off = find_run(pieces[k], name, 0) if name else None
            if start is None:
                raise ValueError(f"the detector's tokenizer does not split the prompt {prompt!r} into its "
                                 f"phrases; cannot locate {phrases[k]!r}")
            if off is None:  # the name is not a token run of its piece: use the piece but its final dot
                span = tuple(range(start, start + max(1, len(pieces[k]) - 1)))
            else:
                span = tuple(range(start + off, start + off + len(name)))
            spans.append(span)
            cursor = start + len(pieces[k])
        out.append((prompt, tuple(values[k] for k in chunk), tuple(spans), tuple(full)))
    return out
