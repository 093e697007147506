"""Named experiments taken from the write-ups, at every profile.

An experiment is a function ``profile -> RunConfig`` registered under a name such as ``ar_ed/baseline``, with
the write-up's label and published numbers, and where and how it runs (:mod:`.registry`). ``plan(chapter or names,
profile)`` gives the runs a notebook reads and the CLI trains (:mod:`.plan`), each trained or reused by
``PlannedRun.train()``; ``config(name, profile, seed=..., device=..., overrides=...)`` gives one run config.

Each chapter's module (``ar_ed``, ``deepsight``, ...) registers its experiments in :mod:`.registry` when this
package imports it.
"""

from __future__ import annotations

from ..config import suggest
from ..errors import ConfigError
from . import ar_ed, baselines, deepsight, formal_ed, hourglass, mixer, retrieval  # noqa: F401  (they register their experiments)
from .labels import arm_label, passes, published
from .plan import (DEFAULT_SEEDS, HEADLINE_SEEDS, ILLUSTRATION_SEEDS, PlannedRun, chapter_names, config, has_short_run, illustrates,
                   minutes_total, plan, planned, reads_illustrations, resolve_device, runs_at, seeds_of, shortened, steps_scaled)
from .headline_comparisons import (CPU_RULE, HEADLINES, ILLUSTRATION_RULE, Headline, headline, headline_arms, headlines,
                                   illustration_steps, is_headline)
from .registry import PROCEDURES, REGISTRY, TRAINED_NOTHING, Experiment, Procedure, get, register, where_they_run

CHAPTERS = ("prologue", "formal_ed", "ar_ed", "deepsight", "mixer", "retrieval", "hourglass")


def all_experiments() -> dict[str, Experiment]:
    return dict(REGISTRY)


def chapters() -> list[str]:
    """The chapters that have experiments, in registration order."""
    return list(dict.fromkeys(e.chapter for e in REGISTRY.values()))


def names(chapter: str | None = None) -> list[str]:
    if chapter is not None and chapter not in chapters():
        raise ConfigError(f"unknown chapter {chapter!r}{suggest(chapter, chapters())}; chapters with experiments: "
                          f"{', '.join(chapters())}")
    return [n for n, e in REGISTRY.items() if chapter is None or e.chapter == chapter]



__all__ = ["CHAPTERS", "CPU_RULE", "DEFAULT_SEEDS", "Experiment", "HEADLINES", "HEADLINE_SEEDS", "Headline", "ILLUSTRATION_RULE",
           "ILLUSTRATION_SEEDS", "PROCEDURES", "PlannedRun", "Procedure", "TRAINED_NOTHING", "all_experiments",
           "arm_label", "chapter_names", "chapters", "config", "get", "has_short_run", "headline", "headline_arms", "headlines",
           "illustrates", "illustration_steps", "is_headline", "minutes_total", "names", "passes", "plan", "planned",
           "published", "reads_illustrations", "register", "resolve_device", "runs_at", "seeds_of", "shortened",
           "steps_scaled", "where_they_run"]
