"""What the tables and legends call an experiment, and what a run's length means: the write-up's label of an arm
(its published size beside ours at a smaller profile), its published numbers, and how many passes over its data a run
makes. Here, below the chapters' analyses and the notebooks' helpers (:mod:`lmcompanion.nb`), so that both read them
without importing each other."""

from __future__ import annotations

import re
from typing import Sequence

from .. import models
from ..config import PROFILES
from ..formats import number
from ..run import RunConfig
from .plan import config, runs_at
from .registry import get


_SIZE_IN_TITLE = re.compile(r"\((\d+(?:\.\d+)?)M\)")


def arm_label(name: str, profile: str) -> str:
    """The write-up's label of an experiment for tables and legends. A label that names the write-up's model size
    ("Baseline transfo (20.48M)") names the model's own size at a smaller profile beside it ("(0.65M here; 20.48M
    in the write-up)"), so that a legend never gives a scaled model the published size."""
    title = get(name).title
    if profile == "paper" or not _SIZE_IN_TITLE.search(title):
        return title
    here = models.num_params(config(name, profile, device="cpu").model)

    def size(m: re.Match) -> str:
        if abs(here / 1e6 - float(m.group(1))) < 0.01:  # the write-up's size, as it prints it
            return m.group(0)
        return f"({number(here / 1e6)}M here; {m.group(1)}M in the write-up)"

    return _SIZE_IN_TITLE.sub(size, title)


def published(names: Sequence[str]) -> dict[str, dict]:
    """The write-up's label -> its published numbers (train, val, aux, params), for tables.results: under every
    label :func:`arm_label` gives the experiment at a profile it runs at."""
    return {arm_label(n, p): dict(get(n).published) for n in names for p in PROFILES if runs_at(n, p)}


def passes(cfg: RunConfig) -> float | None:
    """How many times a run goes over its training data: sequences seen / sequences in one pass (None when the
    data's size cannot be known here, e.g. a hub corpus offline)."""
    per_epoch = cfg.data.sequences_per_epoch(cfg.model)
    return None if not per_epoch else cfg.train.max_steps * cfg.train.global_batch / per_epoch


__all__ = ["arm_label", "passes", "published"]
