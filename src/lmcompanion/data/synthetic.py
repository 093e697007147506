"""A deterministic GENERATED corpus for the smoke profile, CI and the nbval references.

It is not language: short sentences drawn from a tiny seeded grammar, so that a model has something learnable
and the smoke runs need no data files. Anything trained on it is labelled as such in the book.
"""

from __future__ import annotations

import functools
import random

_NAMES = ["ada", "ben", "cleo", "dev", "eli", "fay", "gus", "hal"]
_ANIMALS = ["cat", "dog", "fox", "owl", "bee", "cow"]
_ADJ = ["red", "big", "small", "old", "new", "soft", "loud"]
_THINGS = ["ball", "box", "hat", "cup", "kite", "book", "drum"]
_PLACES = ["park", "barn", "hill", "lake", "shop", "yard"]
_VERBS = [("saw", "sees"), ("took", "takes"), ("found", "finds"), ("liked", "likes")]


def _sentence(rng: random.Random) -> str:
    who = rng.choice(_NAMES) if rng.random() < 0.5 else f"the {rng.choice(_ANIMALS)}"
    past, present = rng.choice(_VERBS)
    verb = past if rng.random() < 0.6 else present
    obj = f"a {rng.choice(_ADJ)} {rng.choice(_THINGS)}"
    if rng.random() < 0.4:
        return f"{who} {verb} {obj} at the {rng.choice(_PLACES)}."
    if rng.random() < 0.5:
        n = rng.randint(2, 9)
        return f"{who} had {n} {rng.choice(_THINGS)}s and gave {n - 1} away, so one was left."
    return f"{who} {verb} {obj}, then went to the {rng.choice(_PLACES)}."


@functools.lru_cache(maxsize=4)
def generate(n_chars: int = 300_000, seed: int = 1234) -> str:
    """About ``n_chars`` characters of paragraphs of 3-6 generated sentences, the same on every machine."""
    rng = random.Random(seed)
    paragraphs, total = [], 0
    while total < n_chars:
        para = " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))
        paragraphs.append(para)
        total += len(para) + 1
    return "\n".join(paragraphs)[:n_chars]
