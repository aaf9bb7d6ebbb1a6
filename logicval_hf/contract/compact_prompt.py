"""The compact prompt: the constraints within what a 77-token CLIP text encoder reads.

The full prompt (`logicval_hf.contract.verbalise.full_prompt`, the paper's Appendix C) opens with a domain
description of about 220 words, so a model that encodes its prompt with CLIP (Stable Diffusion 1.x/2.x, SDXL)
reads the first 75 tokens of that description and never a constraint. The compact prompt puts what decides the
verdict first and the description last, shortened:

1. the number of objects, in a one-line description of the scene (the domain file's ``compact_description``);
2. the constraints (numbered ``(1) ... (2) ...`` when there are several);
3. the instruction to draw an empty scene when nothing can satisfy the description;
4. then, each only while the whole prompt stays within `CLIP_CONTEXT` tokens: what the regions are when a
   constraint names one, and the attribute vocabulary.

Parts 1-3 always appear, so a prompt whose constraints alone are longer than the context is longer than it too;
`compact_fits` says whether a CLIP encoder reads the compact prompt whole. The words are fixed here, in one place,
and every value comes from the spec's domain, so the compact prompt of a spec never changes unless the spec does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from logicval_hf.contract.catalog import Catalog, Domain, load_catalog
from logicval_hf.contract.clip_tokens import CLIP_CONTEXT, clip_token_count
from logicval_hf.contract.grammar import REGION_ATTRIBUTE, count_phrase, join_words
from logicval_hf.contract.spec import Spec, as_spec
from logicval_hf.contract.verbalise import constraint_text

__all__ = ["COMPACT_CLOSING", "COMPACT_LEAD", "compact_fits", "compact_prompt"]

#: the scene in one line, with the number of objects (``{objects}``: "5 objects"), for a domain whose file has no
#: ``compact_description`` (CLEVR's: "A CLEVR scene, seen from the front and above, with exactly {objects}.")
COMPACT_LEAD = "A scene with exactly {objects}."
#: the empty-scene instruction, shortened
COMPACT_CLOSING = "If this is impossible, show an empty scene."
#: the vocabulary: "Objects: gray, ... or yellow; cube, sphere or cylinder; rubber or metal."
COMPACT_VOCABULARY = "Objects: {values}."
#: what the regions are, when a constraint names one
COMPACT_REGIONS = "Regions are quarters of the floor: back is higher in the image."


def _vocabulary(domain: Domain) -> str:
    values = [join_words(list(domain.values(a)), "or") for a in domain.perceived_attributes]
    return COMPACT_VOCABULARY.format(values="; ".join(values))




def _names_a_region(spec: Spec) -> bool:
    return any(f'"{REGION_ATTRIBUTE}"' in json.dumps(c.to_dict()) for c in spec.constraints)


def _core(spec: Spec, n: int, domain: Domain) -> str:
    texts = [constraint_text(c, n, "short") for c in spec.constraints]
    body = texts[0] if len(texts) == 1 else " ".join(f"({i}) {t}" for i, t in enumerate(texts, 1))
    lead = domain.compact_description or COMPACT_LEAD
    return " ".join((lead.format(objects=count_phrase(n, [])), body, COMPACT_CLOSING))


def compact_prompt(spec: Spec | Mapping[str, Any] | str, catalog: Catalog | None = None) -> str:
    """The compact prompt of a spec (module docstring): constraints first, the description after, cut to fit.

    Args:
        spec: a specification with a fixed number of objects.
        catalog: the template catalog (default: the shipped one).
    Returns:
        The prompt, one paragraph.
    """
    catalog = catalog or load_catalog()
    spec = as_spec(spec, catalog)
    n = spec.fixed_n("a compact prompt")
    domain = spec.domain or catalog.domain
    text = _core(spec, n, domain)
    # the constraints name regions by their full names ("the back-left region (r0)"): what is left to say is
    # where back is
    extras = [COMPACT_REGIONS, _vocabulary(domain)] if _names_a_region(spec) else [_vocabulary(domain)]
    for extra in extras:
        if clip_token_count(f"{text} {extra}") <= CLIP_CONTEXT:
            text = f"{text} {extra}"
    return text


def compact_fits(spec: Spec | Mapping[str, Any] | str, catalog: Catalog | None = None) -> bool:
    """Whether a 77-token CLIP text encoder reads the spec's compact prompt whole (its constraints included).

    Args:
        spec: a specification with a fixed number of objects.
        catalog: the template catalog (default: the shipped one).
    Returns:
        True when `compact_prompt` takes at most `CLIP_CONTEXT` tokens, start and end tokens included.
    """
    return clip_token_count(compact_prompt(spec, catalog)) <= CLIP_CONTEXT
