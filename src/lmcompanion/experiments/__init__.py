"""Named experiments taken from the write-ups, at every profile.

An experiment is a function ``profile -> RunConfig`` registered under a name such as ``ar_ed/baseline``, with
the write-up's label and published numbers, and where and how it runs (:mod:`.registry`). ``plan(chapter or names,
profile)`` gives the runs a notebook reads and the CLI trains (:mod:`.plan`), each trained or reused by
``PlannedRun.train()``; ``config(name, profile, seed=..., device=..., overrides=..., protocol=...)`` gives one run
config; ``arm(name, profile)`` says which protocols an arm trains at (its own, the illustrations') and
``page_protocol(names, profile)`` the one a page that shows them together reads them at.

Each chapter's modules here (``ar_ed``, ``deepsight``, ...) register its experiments in :mod:`.registry` when this
package imports them: the modules the chapters declare (``experiments`` in ``chapters/<name>/chapter.toml``, read
by :mod:`lmcompanion.contents`), in the book's order.
"""

from __future__ import annotations

import importlib

from .. import contents
from ..config import suggest
from ..errors import ConfigError
from .labels import arm_label, passes, published
from .plan import (
    DEFAULT_SEEDS,
    HEADLINE_SEEDS,
    ILLUSTRATION_SEEDS,
    ArmProtocol,
    PlannedRun,
    Protocol,
    arm,
    chapter_names,
    config,
    minutes_total,
    page_protocol,
    plan,
    planned,
    resolve_device,
    runs_at,
    seeds_of,
    steps_scaled,
)
from .headline_comparisons import (
    CPU_RULE,
    HEADLINES,
    ILLUSTRATION_RULE,
    Headline,
    headline,
    headline_arms,
    headlines,
    illustration_steps,
    is_headline,
)
from .registry import PROCEDURES, REGISTRY, TRAINED_NOTHING, Experiment, Procedure, get, register, where_they_run

# The book's own settings, which the write-up never ran (each experiment module's ``BOOKS_OWN``): their ``paper``
# profile is the book's size for them, not the write-up's, so no share of "the write-up's tokens" counts them.
BOOKS_OWN: frozenset[str] = frozenset()
for _module in contents.experiment_modules():  # each registers its experiments
    BOOKS_OWN |= frozenset(getattr(importlib.import_module(f"{__name__}.{_module}"), "BOOKS_OWN", ()))

CHAPTERS = contents.names()  # every chapter of the book, in its order (the prologue's runs are another chapter's)


def all_experiments() -> dict[str, Experiment]:
    return dict(REGISTRY)


def chapters() -> list[str]:
    """The chapters that have experiments, in the book's order."""
    have = {e.chapter for e in REGISTRY.values()}
    return [c for c in CHAPTERS if c in have]


def names(chapter: str | None = None) -> list[str]:
    if chapter is not None and chapter not in chapters():
        raise ConfigError(
            f"unknown chapter {chapter!r}{suggest(chapter, chapters())}; chapters with experiments: "
            f"{', '.join(chapters())}"
        )
    return [n for n, e in REGISTRY.items() if chapter is None or e.chapter == chapter]


__all__ = [
    "BOOKS_OWN",
    "CHAPTERS",
    "CPU_RULE",
    "DEFAULT_SEEDS",
    "ArmProtocol",
    "Experiment",
    "HEADLINES",
    "HEADLINE_SEEDS",
    "Headline",
    "ILLUSTRATION_RULE",
    "ILLUSTRATION_SEEDS",
    "PROCEDURES",
    "PlannedRun",
    "Procedure",
    "Protocol",
    "TRAINED_NOTHING",
    "all_experiments",
    "arm",
    "arm_label",
    "chapter_names",
    "chapters",
    "config",
    "get",
    "headline",
    "headline_arms",
    "headlines",
    "illustration_steps",
    "is_headline",
    "minutes_total",
    "names",
    "page_protocol",
    "passes",
    "plan",
    "planned",
    "published",
    "register",
    "resolve_device",
    "runs_at",
    "seeds_of",
    "steps_scaled",
    "where_they_run",
]
