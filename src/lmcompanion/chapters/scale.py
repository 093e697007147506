"""How far a chapter's runs at a profile are from the write-up's, computed, never typed (issue 50, item 5): the
parameters of its models, each counted by the models' own count (:func:`lmcompanion.models.num_params`, on the meta
device) against the same experiment's at the ``paper`` profile (the write-up's settings), and the passes its runs
make over their training data (:func:`lmcompanion.experiments.passes`) against the passes the write-up's own runs
made over theirs (the data kind's ``write_up_passes``). The chapters' conclusions say both
(:func:`lmcompanion.pages.conclusion`), so no landing page types a model size or a data caveat.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Sequence

from .. import experiments, models
from ..config import WriteUpPasses
from ..errors import LMCError
from ..formats import count, number, shown
from ..verdicts import percent


@functools.lru_cache(maxsize=None)
def parameters(name: str, profile: str) -> int:
    """The parameters of experiment ``name``'s model at ``profile``, as the write-ups count them."""
    return models.num_params(experiments.config(name, profile, device="cpu").model)


@dataclass(frozen=True)
class Size:
    """One experiment's model at a profile against the write-up's (the ``paper`` profile's)."""

    name: str
    profile: str
    params: int
    write_up: int

    @property
    def ratio(self) -> float:
        return self.params / self.write_up

    @property
    def label(self) -> str:
        return self.name.split("/")[-1]


def sizes(names: Sequence[str], profile: str) -> list[Size]:
    """The models of the experiments of ``names`` that run at ``profile``, each with the write-up's count."""
    return [
        Size(n, profile, parameters(n, profile), parameters(n, "paper"))
        for n in names
        if experiments.runs_at(n, profile)
    ]


def size_text(names: Sequence[str], profile: str, trained_nothing: bool = False) -> str:
    """What the models of ``names`` are at ``profile`` in one clause, counted: "the write-up's sizes, 16,036,800
    parameters" where each has the ``paper`` profile's count, else each model's count and its share of the
    write-up's ("flat_d512 with 4,207,616 parameters (18% of the write-up's 23,109,632) and ...").
    ``trained_nothing``: the write-up trained no model, so the ``paper`` profile's count is the book's choice, not
    the write-up's."""
    found = sizes(names, profile)
    if not found:
        return ""
    theirs = "the `paper` profile's" if trained_nothing else "the write-up's"
    if all(s.params == s.write_up for s in found):
        counts = sorted({s.params for s in found})
        shown = count(counts[0]) if len(counts) == 1 else f"{count(counts[0])} to {count(counts[-1])}"
        return f"{theirs} sizes, {shown} parameters"
    each = [
        f"{s.label} with {count(s.params)} parameters ("
        + ("as many as" if s.params == s.write_up else f"{percent(s.ratio)} of")
        + f" {theirs} {count(s.write_up)})"
        for s in found
    ]
    return ", ".join(each[:-1]) + (" and " if len(each) > 1 else "") + each[-1]


# A setting the book adds (the mixer's Wikipedia arms) has no experiment in the write-up.
BOOKS_OWN_SETTING = WriteUpPasses(None, words="no experiment in the write-up (the book's setting)")


def write_up_passes(name: str) -> tuple[float | None, str]:
    """The passes the write-up's runs of experiment ``name`` made over their training data, as the book shows the
    number (None where the write-up ran no such experiment or its data's size is unknown), and its text ("≈ 3.12 (of
    2,000,000 stories)", :func:`write_up_passes_text`), from the ``paper`` profile's config."""
    stated = stated_passes(experiments.config(name, "paper", device="cpu"))
    return _shown_passes(stated), passes_text(stated)


def stated_passes(cfg) -> WriteUpPasses:
    """The write-up's passes over its training data as the data kind of the run config ``cfg`` (the ``paper``
    profile's) states them; :data:`BOOKS_OWN_SETTING` for a setting the book adds."""
    if cfg.name in experiments.mixer.WIKIPEDIA_ARMS:
        return BOOKS_OWN_SETTING
    return cfg.data.write_up_passes(cfg)


def passes_text(stated: WriteUpPasses) -> str:
    """A data kind's statement of the write-up's passes in the book's format: an estimate to three significant
    digits ("≈ 550 (of 180,000 queries; ...)", stated as 550.0), a whole count ("1,536 (2.0 epochs of every
    stride-1 window)"), or the words alone where there is no number. The format is the book's, applied here rather
    than by the data kinds, because a data module's code is part of every run's key (a change of format there would
    retrain every cached run of that kind)."""
    if stated.passes is None:
        return stated.words
    figure = f"≈ {number(stated.passes)}" if stated.approximate else count(stated.passes)
    return f"{figure} {stated.words}" if stated.words else figure


def _shown_passes(stated: WriteUpPasses) -> float | None:
    """The number :func:`passes_text` writes (an estimate to its significant digits, a count as it is)."""
    if stated.passes is None or not stated.approximate:
        return stated.passes
    return shown(stated.passes)


def write_up_passes_text(cfg) -> str:
    """The write-up's passes over its training data as its data kind states them, in the book's format
    (:func:`passes_text`), for the run config ``cfg`` (the ``paper`` profile's)."""
    return passes_text(stated_passes(cfg))


@dataclass(frozen=True)
class Passes:
    """One experiment's passes over its training data at a profile, beside the write-up's over its own."""

    name: str
    profile: str
    here: float
    write_up: float | None
    write_up_text: str

    @property
    def more(self) -> bool:
        """Whether the runs here go over their data more times than the write-up's went over theirs."""
        return self.write_up is not None and self.here > self.write_up


def passes(names: Sequence[str], profile: str) -> list[Passes]:
    """The passes of the experiments of ``names`` that run at ``profile`` (those whose data's size cannot be known
    here, e.g. a corpus on the hub offline, are left out)."""
    out = []
    for n in names:
        if not experiments.runs_at(n, profile):
            continue
        try:
            here = experiments.passes(experiments.config(n, profile, device="cpu"))
            theirs, text = write_up_passes(n)
        except (LMCError, OSError):  # data that would have to be fetched: no count here
            continue
        if here is not None:
            out.append(Passes(n, profile, here, theirs, text))
    return out


def passes_caveat(names: Sequence[str], profile: str) -> str:
    """The data caveat of ``profile``'s runs of ``names``, counted: where they go over their training data more times
    than the write-up's runs went over theirs, which ones and how many times each, and what that changes; "" where
    none does."""
    more = [p for p in passes(names, profile) if p.more]
    if not more:
        return ""
    each = "; ".join(
        f"{p.name.split('/')[-1]}: {number(p.here)} passes here, {p.write_up_text} in the write-up" for p in more
    )
    return (
        f"**Data.** The `{profile}` runs of {plural_arms(len(more))} go over their training data more times than "
        f"the write-up's runs went over theirs ({each}): each training example is seen more often, so a verdict "
        f"there measures which model memorises its training examples less as much as which one models text "
        f"better, and a small model's advantage can be memorisation. The `paper` profile reads the write-up's "
        f"data."
    )


def plural_arms(n: int) -> str:
    return "its arm" if n == 1 else f"{n} of its arms"


__all__ = [
    "BOOKS_OWN_SETTING",
    "Passes",
    "Size",
    "parameters",
    "passes",
    "passes_caveat",
    "passes_text",
    "size_text",
    "sizes",
    "stated_passes",
    "write_up_passes",
    "write_up_passes_text",
]
