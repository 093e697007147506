"""The forms of verdict rows: one vocabulary for every chapter. A row's form is the shape of the claim it tests, chosen
from the claim's words, never from what the data show; every form is decided by the prologue's rule (an exact
permutation test between arms, a one-sided one-sample t-test against a level, or Spearman's rho, each at 5%), and
every row carries its form (:attr:`lmcompanion.verdicts.Verdict.form`).

======================  ==============================================  ============================================
form                    the claim's words                               how it is decided
======================  ==============================================  ============================================
**strictly better**     "beats", "outperformed", "improved", "lower",   holds when A is significantly lower than B;
(:func:`better`)        "helps", "hurts", "performs less well",         does not hold when B is significantly lower
                        "slightly more performant"                      than A; otherwise inconclusive
**no gain**             "does not help", "no benefit", "no apparent     A's gain over B (B - A) lies within a stated
(:func:`no_gain`)       reduction", "slightly underperformed", "very    margin: holds when it is significantly below
                        similar or perhaps slightly worse"              the margin, does not hold when A is
                                                                        significantly lower than B by more than the
                                                                        margin; otherwise inconclusive
**no worse**            "approximately as or slightly more efficient",  the same test the other way: A exceeds B by
(:func:`no_worse`)      "at least as good"                              at most the margin
**about the same**      "similar", "nearly identical", "nearly the      two one-sided tests against a stated margin
(:func:`same`)          same", "virtually no change", "achieves the     (TOST): holds when the difference is within
                        same"                                           it on both sides, does not hold when beyond
                                                                        it on one side
**crossover**           "better in validation loss but worse in train   one row with both parts (each strictly
(:func:`crossover`)     loss", "outperformed ... in train loss and      better, or no gain): holds when both hold,
                        slightly underperformed in val loss"            does not hold when either does not hold;
                                                                        *not decided* where each training token is
                                                                        seen less than once (:func:`needs_passes`):
                                                                        train and validation loss then measure the
                                                                        same thing and cannot part
**at most / at least a  "below 1e-6", "near zero", "not below 3.2",     a one-sided one-sample t-test of the seeds'
bound**                 "at least 50%" (counted: exact)                 values against the bound
(:func:`at_most`,
:func:`not_below`)
**within a range**      "between 10x and 20x", "20-50% smaller"         both bounds, on a log scale
(:func:`ratio_within`)
**a trend** / **no      "correlated with", "falls as d grows" / "not    Spearman's rho of the arms' seed means; a
trend**                 very correlated"                                claim of no trend can only be refuted
(:func:`trend`,
:func:`no_trend`)
**exact**               counts, masks, arithmetic, FLOPs counted        computed: no sampling, no chance
(:func:`exact`)
======================  ==============================================  ============================================

A margin is stated with the claim and fixed from the write-up's own numbers before any result is seen (each chapter
says where its margin comes from); a claim that the ``cpu`` protocol cannot test in its own shape is *not decided*
there, with the reason, never decided in another shape. The forms that need only the statistics live in
:mod:`lmcompanion.verdicts` (so that :mod:`lmcompanion.claims` can use them) and are named here; the others are here.

Also here: :func:`quote`, the write-up's numbers of a claim, read from its experiments' ``published`` dicts, in the
write-up's order of arms, with each arm's label.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Sequence

from .. import experiments, stats, tables
from ..claims import Row
from ..formats import number
from ..stats import ALPHA, span
from ..verdicts import (
    AT_LEAST,
    CROSSOVER,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NO_GAIN,
    NO_WORSE,
    NOT_DECIDED,
    WITHIN,
    Verdict,
    arms_of,
    chance_text,
    decision,
    exact,
    gate,
    no_trend,
    published_gap,
    published_pair,
    similar,
    trend,
)
from ..verdicts import below as at_most
from ..verdicts import claim as better

same = similar  # "about the same": two one-sided tests against a margin (lmcompanion.verdicts.similar)

Quote = tuple[str, str, tuple[str, ...]]  # (the arm's label, its experiment, the published keys shown as a/b)


def quote(parts: Sequence[Quote], note: str = "") -> str:
    """ "label a/b vs label c/d (note)": each part's published numbers (joined by "/"), in the order given (the
    write-up's); the numbers come from the experiments' ``published`` dicts, so they are printed as the write-up
    prints them."""
    shown = []
    for label, name, keys in parts:
        pub = experiments.get(name).published
        missing = [k for k in keys if k not in pub]
        if missing:
            raise KeyError(f"{name} publishes no {missing}: add the write-up's number to its registration")
        shown.append(f"{label} {'/'.join(str(pub[k]) for k in keys)}".strip())
    if not shown:
        return note
    return " vs ".join(shown) + (f" ({note})" if note else "")


def _labels(a: Sequence[float], b: Sequence[float], labels: tuple[str, str], fmt: str) -> str:
    return f"{labels[0]}: {span(a, fmt)}; {labels[1]}: {span(b, fmt)}"


def _margin_text(margin: float, ratio: bool) -> str:
    return f"margin x{margin:g}" if ratio else f"margin {margin:g} nats"


def _exceeds_by_at_most(
    text: str,
    published: str,
    a: Sequence[float],
    b: Sequence[float],
    margin: float,
    *,
    labels: tuple[str, str],
    fmt: str,
    ratio: bool,
    form: str,
    shown: tuple,
) -> Verdict:
    """The claim "a exceeds b by at most ``margin``" (a - b <= margin; on a log scale with ``ratio``, a / b <=
    margin): holds when a lies significantly below b + margin (the exact permutation test, one-sided at 5%), does not
    hold when it lies significantly above it, otherwise inconclusive with the lean. ``shown``: the two value lists and
    labels the row shows, in the order of its effect (the claimed-better arm first)."""
    x, y, m = (
        ([math.log(v) for v in a], [math.log(v) for v in b], math.log(margin)) if ratio else (list(a), list(b), margin)
    )
    shifted = [u + m for u in y]
    verdict, p = decision(
        stats.permutation_p(x, shifted, "less"),
        stats.permutation_p(x, shifted, "greater"),
        stats.mean(x) - stats.mean(y) <= m,
    )
    first, second, names = shown
    c = stats.compare(*(([math.log(v) for v in first], [math.log(v) for v in second]) if ratio else (first, second)))
    effect = f"x{number(math.exp(c.effect))} (ratio of geometric means)" if ratio else c.effect_text()
    return Verdict(
        text,
        published,
        _labels(first, second, names, fmt),
        verdict,
        seeds=f"{c.n_a} vs {c.n_b}",
        effect=f"{effect}; {_margin_text(margin, ratio)}",
        chance=chance_text(p, verdict == FAILS),
        form=form,
        size=c.effect,
        log_size=ratio,
    )


def no_gain(
    text: str,
    published: str,
    a: Sequence[float],
    b: Sequence[float],
    labels: tuple[str, str],
    fmt: str = ".3f",
    margin: float | None = None,
    ratio: bool = False,
) -> Verdict:
    """The claim that ``a`` gives no gain over ``b`` ("does not help", "no benefit"): with a ``margin``, that a is not
    lower than b by more than it (b - a <= margin; a factor on a log scale with ``ratio``), decided by
    :func:`_exceeds_by_at_most` on the arms swapped. Without one (a claim whose words allow no margin), refuted
    (does not hold) when a is significantly lower than b, otherwise inconclusive: no test shows the absence of a
    gain. The effect is a - b (negative: a gains)."""
    if margin is not None:
        return _exceeds_by_at_most(
            text, published, b, a, margin, labels=labels, fmt=fmt, ratio=ratio, form=NO_GAIN, shown=(a, b, labels)
        )
    c = stats.compare(a, b)
    if c.p_claim <= ALPHA:  # p_claim: the chance of a as much lower than b as this if they were equal
        verdict, p = FAILS, c.p_claim
    else:
        verdict, p = f"{INCONCLUSIVE} (no significant gain; a test cannot show its absence)", c.p_claim
    return Verdict(
        text,
        published,
        _labels(a, b, labels, fmt),
        verdict,
        seeds=f"{c.n_a} vs {c.n_b}",
        effect=c.effect_text(),
        chance=chance_text(p) + " (a gain)",
        form=NO_GAIN,
        size=c.effect,
    )


def no_worse(
    text: str,
    published: str,
    a: Sequence[float],
    b: Sequence[float],
    labels: tuple[str, str],
    margin: float,
    fmt: str = ".3f",
    ratio: bool = False,
) -> Verdict:
    """The claim that ``a`` is no worse than ``b`` ("approximately as or slightly more efficient"): a is higher than b
    by at most ``margin`` (a factor with ``ratio``), by :func:`_exceeds_by_at_most`. The effect is a - b."""
    return _exceeds_by_at_most(
        text, published, a, b, margin, labels=labels, fmt=fmt, ratio=ratio, form=NO_WORSE, shown=(a, b, labels)
    )


_P = re.compile(r"p ([=<]) ([0-9.eE+-]+)")


def _p(v: Verdict) -> float:
    m = _P.match(v.chance or "")
    return float(m.group(2)) if m else 1.0


def _toward(v: Verdict) -> bool:
    return v.outcome == HOLDS or "toward the claim" in v.verdict or "no significant gain" in v.verdict


def crossover(text: str, published: str, parts: Sequence[tuple[str, Verdict]]) -> Verdict:
    """One row for a claim of two parts on two splits ("better in validation loss but worse in train loss"), each
    part decided in its own form (``parts``: (split, verdict), before the learning gate): holds when both hold (the
    larger p is reported: an intersection of tests, still at most 5% under equal arms), does not hold when either does
    not hold (that part's p), otherwise inconclusive with the lean. Its size is the first part's."""
    (s1, v1), (s2, v2) = parts
    failing = [v for _, v in parts if v.outcome == FAILS]
    if failing:
        verdict, chance = FAILS, failing[0].chance
    elif v1.outcome == HOLDS and v2.outcome == HOLDS:
        verdict, chance = HOLDS, max((v1, v2), key=_p).chance
    else:
        lean = "toward" if _toward(v1) and _toward(v2) else "against"
        verdict, chance = f"{INCONCLUSIVE} (the data lean {lean} the claim)", max((v1, v2), key=_p).chance
    return Verdict(
        text,
        published,
        f"{s1}: {v1.ours}. {s2}: {v2.ours}",
        verdict,
        seeds=v1.seeds,
        effect=f"{s1} {v1.effect}; {s2} {v2.effect}",
        chance=chance,
        form=CROSSOVER,
        size=v1.size,
        published_size=v1.published_size,
    )


def needs_passes(v: Verdict, cfg) -> Verdict:
    """A crossover between train and validation loss at a profile whose runs see each training token less than once:
    *not decided*, whatever the test said, since train and validation loss then measure the same thing (the claim
    cannot be tested in its own shape there). ``cfg``: a run's config."""
    passes = experiments.passes(cfg)
    if passes is None or passes >= 1:
        return v
    return dataclasses.replace(
        v,
        verdict=f"{NOT_DECIDED} (each training token is seen less than once at this profile, "
        f"{passes:.2g} passes: train and validation loss measure the same thing, so a "
        "crossover between them cannot show)",
    )


Part = tuple[str, str, str]  # (metric, the claimed-better arm, the other arm): one part of a crossover
SPLIT = {"val": "validation", "train": "train"}


def _part(runs, part: Part, margin: float | None) -> tuple[str, Verdict]:
    """One part of a crossover, before the gate: ``better`` ends lower on ``metric`` (strictly better), or, with a
    ``margin``, gives no gain over the other (:func:`no_gain`)."""
    metric, a, b = part
    labels = (a.split("/")[-1], b.split("/")[-1])
    va, vb = tables.final(runs[a], metric), tables.final(runs[b], metric)
    pub = published_pair(a, b, metric)
    v = better("", pub, va, vb, labels) if margin is None else no_gain("", pub, va, vb, labels, margin=margin)
    return SPLIT.get(metric, metric), dataclasses.replace(v, published_size=published_gap(a, b, metric))


def crossover_between(text: str, runs, first: Part, second: Part, second_margin: float | None = None) -> Verdict:
    """A crossover of two arms' final losses on two splits (:func:`crossover`): ``first`` strictly better, ``second``
    strictly better or, with ``second_margin``, no gain; every arm gated on each split it is read on, and *not
    decided* where the runs see their training data less than once (:func:`needs_passes`)."""
    parts = [_part(runs, first, None), _part(runs, second, second_margin)]
    published = "; ".join(f"{split}: {v.published}" for split, v in parts)
    v = crossover(text, published, parts)
    v = gate(v, arms_of(runs, first[0], first[1], first[2]) + arms_of(runs, second[0], second[1], second[2]))
    return needs_passes(v, runs[first[1]][0].config)


def crossover_row(text: str, first: Part, second: Part, notebook: str, second_margin: float | None = None) -> Row:
    """The row of a crossover (:func:`crossover_between`), its gap trend read on the first part (a headline row's)."""
    return Row(
        text,
        notebook,
        lambda ctx: crossover_between(text, ctx.runs, first, second, second_margin),
        arms=tuple(dict.fromkeys(first[1:] + second[1:])),
        gap=(first[1], first[2], first[0]),
    )


def not_below(text: str, published: str, values: Sequence[float], level: float, what: str, fmt: str = ".3f") -> Verdict:
    """The claim that ``values`` (one per seed) do not fall below ``level`` (``what`` names it, e.g. "chance"):
    holds when they lie significantly above it, does not hold when significantly below (one-sided one-sample
    t-tests at 5%), otherwise inconclusive with the lean. With no spread the values decide directly."""
    values = list(values)
    ours = f"{span(values, fmt)} ({what}: {level:{fmt}})"
    n = f"{len(values)} seeds"
    if len(set(values)) <= 1:
        verdict = HOLDS if values and values[0] >= level else FAILS
        return Verdict(text, published, ours, verdict, seeds=n, chance="no spread across seeds", form=AT_LEAST)
    verdict, p = decision(
        stats.one_sample_p(values, level, "greater"),
        stats.one_sample_p(values, level, "less"),
        stats.mean(values) >= level,
    )
    return Verdict(
        text,
        published,
        ours,
        verdict,
        seeds=n,
        effect=f"{stats.mean(values) - level:+{fmt}}",
        chance=chance_text(p, verdict == FAILS),
        form=AT_LEAST,
    )


def ratio_within(text: str, published: str, ratios: Sequence[float], lo: float, hi: float, fmt: str = ".2f") -> Verdict:
    """The claim that a ratio (one value per seed) lies between ``lo`` and ``hi``, tested on log(ratio): holds when
    it is significantly above lo *and* below hi (one-sided one-sample t-tests at 5%; the larger p is reported), does
    not hold when it is significantly below lo or above hi, otherwise inconclusive with the lean."""
    ratios = list(ratios)
    ours = f"{span(ratios, fmt)}x"
    n = f"{len(ratios)} seeds"
    logs = [math.log(r) for r in ratios]
    if len(set(logs)) <= 1:
        inside = bool(logs) and lo <= ratios[0] <= hi
        return Verdict(
            text, published, ours, HOLDS if inside else FAILS, seeds=n, chance="no spread across seeds", form=WITHIN
        )
    lo_l, hi_l = math.log(lo), math.log(hi)
    p_in = max(stats.one_sample_p(logs, lo_l, "greater"), stats.one_sample_p(logs, hi_l, "less"))
    p_out = min(stats.one_sample_p(logs, lo_l, "less"), stats.one_sample_p(logs, hi_l, "greater"))
    verdict, p = decision(p_in, p_out, lo <= math.exp(stats.mean(logs)) <= hi)
    return Verdict(text, published, ours, verdict, seeds=n, chance=chance_text(p, verdict == FAILS), form=WITHIN)


__all__ = [
    "Part",
    "Quote",
    "at_most",
    "better",
    "crossover",
    "crossover_between",
    "crossover_row",
    "exact",
    "needs_passes",
    "no_gain",
    "no_trend",
    "no_worse",
    "not_below",
    "quote",
    "ratio_within",
    "same",
    "trend",
]
