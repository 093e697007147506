"""One claims interface: every chapter declares the rows of its verdict table in one shape, and one function makes them
verdicts, for the verdict pages, the summaries, the scorecard, the ledger and the GPU campaign alike.

A chapter registers its rows (:func:`register`) in the write-up's order, each a :class:`Row`: the claim's text (the
ledger names a row by it), the notebook whose page shows what decides it, the experiments whose runs decide it
(``arms``; none for a row decided by computation), what kind of row it is (a claim about training, which the
learning gate guards; a cost measured here; a statement of the write-up checked by computation; a check of our code;
:mod:`lmcompanion.verdicts`), whether it is the book's own extension beyond the write-up, which pair of arms it times
side by side (the verdict notebook times them), and how it is decided (``decide``: a function of the
:class:`Context`, the runs and what the chapter's notebook computed).

:func:`verdicts` decides every row of a chapter the same way: a row whose arms the profile does not run, or runs with
one seed on a side, is *not decided at this scale* and says why; a row whose runs are missing (recorded runs of
another profile may cover some arms only) is left out; every other row is decided by its ``decide`` and stamped with
its notebook, kind, extension and whether it is a headline row (its arms are a headline comparison's, declared in the
experiment registry).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from . import experiments, ledger
from .errors import LMCError
from .train.store import NoRunFiles
from .verdicts import KINDS, NOT_DECIDED, TRAINING, Verdict, between, gap_trend, have, not_decided, sized, with_trend

PROFILE_ORDER = ("smoke", "cpu", "gpu", "paper")


class NotComputed(KeyError):
    """A row asked for a value that its verdict notebook computes (``Context.extra``), and the context has none."""


class Extra(dict):
    """``Context.extra``: a missing value raises :class:`NotComputed` (a ``KeyError``; ``get`` still defaults)."""

    def __missing__(self, key):
        raise NotComputed(key)


@dataclass(frozen=True)
class Context:
    """What rows are decided from: the runs of the chapter's experiments (name -> runs, in seed order), the profile
    whose plan says which arms run (None: recorded runs, whatever they cover), the side-by-side timings of the
    verdict notebook, anything else the chapter's notebook computed for its rows (``extra``), and the runs of the
    headline arms at the illustrations' protocol (``illustrating``), which a row that compares a headline arm with
    illustrating ones reads (:func:`lmcompanion.experiments.page_protocol`)."""

    runs: Mapping[str, Sequence]
    profile: str | None = None
    timings: Sequence = ()
    extra: Mapping[str, Any] = field(default_factory=Extra)
    illustrating: Mapping[str, Sequence] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "extra", Extra(self.extra))

    @property
    def recorded(self) -> bool:
        """Recorded runs, judged outside the page that made them (no profile plans them here)."""
        return self.profile is None

    def timing(self, a: str, b: str):
        """The side-by-side timing of arms ``a`` and ``b`` (None where they were not timed)."""
        return next((t for t in self.timings if {a, b} <= set(t.names)), None)


@dataclass(frozen=True)
class Row:
    """One verdict row of a chapter, declared (see the module doc)."""

    text: str
    notebook: str  # the notebook of the chapter (its file name without .py) whose page shows what decides the row
    decide: Callable[[Context], Verdict]
    arms: tuple[str, ...] = ()  # the experiments whose runs decide it (none: decided by computation)
    kind: str = TRAINING
    extension: bool = False  # the book's own claim, beyond the write-up
    timed: tuple[str, str] | None = None  # the two arms the verdict notebook times side by side for it
    published: str = ""  # the write-up's numbers, shown where this profile does not run its arms
    gap: tuple[str, str, str] | None = None  # (claimed-better arm, other arm, metric): a headline row's gap trend

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"row {self.text!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.text.strip() or "/" in self.notebook:
            raise ValueError(f"row {self.text!r}: a claim text and a notebook name (no folder) are needed")


ROWS: dict[str, list[Row]] = {}


def between_row(text: str, metric: str, better: str, worse: str, notebook: str, extension: bool = False) -> Row:
    """The row of the claim "``better`` ends lower than ``worse`` on ``metric``" (the final estimates, both arms
    gated on them: :func:`lmcompanion.verdicts.between`)."""
    return Row(
        text,
        notebook,
        lambda ctx: between(text, metric, better, worse, ctx.runs),
        arms=(better, worse),
        extension=extension,
        gap=(better, worse, metric),
    )


def register(chapter: str, rows: Sequence[Row]) -> list[Row]:
    """Register a chapter's rows (once), in the write-up's order; their texts are unique."""
    if chapter in ROWS:
        raise ValueError(f"the rows of {chapter!r} are registered twice")
    texts = [r.text for r in rows]
    twice = sorted({t for t in texts if texts.count(t) > 1})
    if twice:
        raise ValueError(f"{chapter}: two rows share a claim text: {twice[:2]}")
    ROWS[chapter] = list(rows)
    return ROWS[chapter]


def rows(chapter: str) -> list[Row]:
    """The registered rows of ``chapter``. A chapter whose rows are not registered is an error, not an empty list: a
    page that forgot to import its chapter module would otherwise decide nothing and say nothing (importing
    :mod:`lmcompanion.chapters` registers every chapter)."""
    if chapter not in ROWS:
        raise LMCError(
            f"no claims are registered for the chapter {chapter!r} (registered: {sorted(ROWS) or 'none'}): "
            "import lmcompanion.chapters, which registers every chapter's rows"
        )
    return list(ROWS[chapter])


def _where(arms: Sequence[str], profile: str) -> str:
    profiles = {p for a in arms for p in experiments.get(a).profiles} - {profile}
    shared = [p for p in PROFILE_ORDER if p in profiles and all(experiments.runs_at(a, p) for a in arms)]
    return ", ".join(shared) or "no profile"


def _stamp(v: Verdict, row: Row, chapter: str) -> Verdict:
    if v.claim != row.text:
        raise ValueError(f"{chapter}: the row {row.text!r} decided a verdict for another claim, {v.claim!r}")
    return dataclasses.replace(
        v,
        notebook=f"{chapter}/{row.notebook}",
        kind=row.kind,
        extension=row.extension,
        headline=experiments.is_headline(chapter, row.arms),
    )


SHORT = "at the illustrations' protocol"  # how a row names a headline arm it read at that protocol


def _at_one_protocol(row: Row, ctx: Context) -> tuple[Context, set[str]]:
    """The context a row is decided in, and the arms it swapped: where the row compares a headline arm with
    illustrating arms whose chapter trains them for fewer steps, the headline arm's runs at the illustrations'
    protocol, so that it never compares runs of different lengths. A context without them is a defect of its page,
    not a row to decide."""
    illustrations = experiments.Protocol.ILLUSTRATIONS
    if ctx.recorded or not row.arms or experiments.page_protocol(row.arms, ctx.profile) is not illustrations:
        return ctx, set()
    long = [a for a in row.arms if illustrations in experiments.arm(a, ctx.profile).trains_at and a in ctx.runs]
    missing = [a for a in long if a not in ctx.illustrating]
    if missing:
        raise LMCError(
            f"the row {row.text!r} compares {', '.join(missing)} with illustrating arms, which train fewer "
            f"steps at {ctx.profile}: give the context their runs at the illustrations' protocol "
            "(Context.illustrating; lmcompanion.nb.verdict_page does)"
        )
    return dataclasses.replace(ctx, runs={**ctx.runs, **{a: ctx.illustrating[a] for a in long}}), set(long)


def decide(chapter: str, row: Row, ctx: Context) -> Verdict | None:
    """The verdict of one row (None: its runs are missing, as in recorded runs that cover other arms)."""
    if row.arms and ctx.profile is not None and not all(experiments.runs_at(a, ctx.profile) for a in row.arms):
        v = not_decided(
            row.text,
            row.published or "see the chapter",
            "not run at this profile",
            f"its arms are not run at this profile; they run at {_where(row.arms, ctx.profile)}",
        )
        return _stamp(v, row, chapter)
    ctx, swapped = _at_one_protocol(row, ctx)
    runs = ctx.runs
    if row.arms and not have(runs, *row.arms):
        return None
    try:
        v = row.decide(ctx)
    except (NoRunFiles, NotComputed) as exc:
        # recorded runs carry their metrics and provenance only: a row whose measure reads a run's own files, or a
        # value its page computes from the build's own runs, cannot be decided from them. In the build's own
        # context that is a defect, and it stops the page.
        if not ctx.recorded:
            raise
        files = isinstance(exc, NoRunFiles)
        v = not_decided(
            row.text,
            row.published or "see the chapter",
            "needs the run's files" if files else "computed on its page",
            (
                "its measure reads the trained run's own files (weights, embeddings), and a recorded run "
                "carries metrics, not files"
            )
            if files
            else (
                "its measure is computed on its page from the trained runs, and a recorded run carries "
                "metrics, not files"
            ),
        )
    if swapped:  # a headline arm read at the illustrations' protocol says so wherever its label is shown
        labels = {n.split("/")[-1] for n in swapped}
        v = dataclasses.replace(
            v,
            arms=tuple(
                dataclasses.replace(a, label=f"{a.label} ({SHORT})") if a.label in labels else a for a in v.arms
            ),
        )
    if row.arms and row.kind == TRAINING and min(len(runs[a]) for a in row.arms) < 2 and v.outcome != NOT_DECIDED:
        v = dataclasses.replace(
            v, verdict=f"{NOT_DECIDED} (one seed on a side at this profile: an illustration, no test is possible)"
        )
    v = _stamp(v, row, chapter)
    if v.headline and row.gap is not None and have(runs, *row.gap[:2]):
        points, line = gap_trend(runs[row.gap[0]], runs[row.gap[1]], row.gap[2])
        return with_trend(v, line, points)
    return sized(v)


def verdicts(chapter: str, ctx: Context, notebook: str | None = None) -> list[Verdict]:
    """Every registered row of ``chapter`` (of its notebook ``notebook`` only, when given) decided from ``ctx``, in
    the registered order."""
    return [
        v
        for row in rows(chapter)
        if notebook is None or row.notebook == notebook
        if (v := decide(chapter, row, ctx)) is not None
    ]


LEADS: dict[str, Callable[[Sequence[Mapping]], str]] = {}


def register_lead(chapter: str, lead: Callable[[Sequence[Mapping]], str]) -> None:
    """Register a chapter's lead: a function of its glued verdict rows at one profile (dicts, as the pages read them)
    that returns the sentence its summaries state first (its clearest result at that scale), or "" for none."""
    if chapter in LEADS:
        raise ValueError(f"the lead of {chapter!r} is registered twice")
    LEADS[chapter] = lead


def lead(chapter: str, rows: Sequence[Mapping]) -> str:
    """The chapter's lead from its glued rows ("" where it registers none)."""
    fn = LEADS.get(chapter)
    return fn(rows) if fn is not None and rows else ""


def arm_claims(chapter: str) -> list[tuple[str, tuple[str, ...]]]:
    """(claim, arms) of every row of ``chapter`` that runs decide: what the GPU campaign completes."""
    return [(r.text, r.arms) for r in rows(chapter) if r.arms]


def timed_pairs(chapter: str, profile: str | None = None) -> list[tuple[str, str]]:
    """The pairs of arms ``chapter``'s verdict notebook times side by side (those both run at ``profile``), once each."""
    pairs = dict.fromkeys(r.timed for r in rows(chapter) if r.timed)
    return [p for p in pairs if profile is None or all(experiments.runs_at(a, profile) for a in p)]


def timed_claims(chapter: str) -> list[str]:
    """The claims of ``chapter`` decided by a side-by-side timing (shown beside it, apart from the other rows)."""
    return [r.text for r in rows(chapter) if r.timed]


def register_ledger(chapter: str, claims: Sequence[ledger.Claim], unnamed: Sequence[str] = ()) -> list[ledger.Claim]:
    """Register a chapter's ledger (:mod:`lmcompanion.ledger`, the write-up's claims in its order), after its rows,
    checked against them: every row a claim names is one of the chapter's rows, and every row of the write-up's
    (not the book's own, ``extension``) is named by a claim, but the rows of ``unnamed`` (the chapter says why)."""
    texts = {r.text for r in rows(chapter)}
    named = {c.row for c in claims if c.row is not None}
    unknown = sorted(named - texts)
    if unknown:
        raise KeyError(f"the {chapter} ledger names rows the chapter does not declare: {unknown}")
    lonely = sorted({r.text for r in rows(chapter) if not r.extension} - named - set(unnamed))
    if lonely:
        raise KeyError(f"{chapter} rows of the write-up's that no ledger claim names: {lonely}")
    return ledger.register(chapter, list(claims))


__all__ = [
    "Context",
    "Extra",
    "LEADS",
    "NotComputed",
    "ROWS",
    "Row",
    "arm_claims",
    "between_row",
    "decide",
    "lead",
    "register",
    "register_lead",
    "register_ledger",
    "rows",
    "timed_claims",
    "timed_pairs",
    "verdicts",
]
