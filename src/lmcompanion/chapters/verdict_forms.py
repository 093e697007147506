"""Claim forms the masked-mixer chapters need beyond :mod:`lmcompanion.verdicts`, decided by the same rule (the
prologue's): an exact permutation test between arms, or a one-sided one-sample t-test against a level, at 5%; a
claim that something is *absent* (no gain, no learning) can only be refuted, never shown.

- :func:`quote`: the write-up's numbers of a claim, read from its experiments' ``published`` dicts, in the
  write-up's order of arms, with each arm's label;
- :func:`no_gain`: "A does not reach a lower value than B" (the write-up's "no benefit", "no apparent reduction");
- :func:`not_below`: "the value does not fall below a level" (a loss "not below 3.2", "practically no learning");
- :func:`ratio_within`: "a ratio lies between lo and hi" (a step "10x to 20x" as long), on a log scale;
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import experiments, stats
from ..stats import ALPHA, span
from ..verdicts import FAILS, HOLDS, INCONCLUSIVE, Verdict, chance_text

Quote = tuple[str, str, tuple[str, ...]]  # (the arm's label, its experiment, the published keys shown as a/b)


def quote(parts: Sequence[Quote], note: str = "") -> str:
    """"label a/b vs label c/d (note)": each part's published numbers (joined by "/"), in the order given (the
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


def no_gain(text: str, published: str, a: Sequence[float], b: Sequence[float], labels: tuple[str, str],
            fmt: str = ".3f") -> Verdict:
    """The claim that ``a`` does not end lower than ``b``: refuted (does not hold) when a is significantly lower
    (the permutation test in that direction, p <= 5%); otherwise inconclusive, since no test shows the absence of
    a gain. Three seeds per arm can refute it (the smallest one-sided chance is 1/20)."""
    c = stats.compare(a, b)
    if c.p_claim <= ALPHA:  # p_claim: the chance of a as much lower than b as this if they were equal
        verdict, p = FAILS, c.p_claim
    else:
        verdict, p = f"{INCONCLUSIVE} (no significant gain; a test cannot show its absence)", c.p_claim
    return Verdict(text, published, _labels(a, b, labels, fmt), verdict, seeds=f"{c.n_a} vs {c.n_b}",
                   effect=c.effect_text(fmt), chance=chance_text(p) + " (a gain)")


def not_below(text: str, published: str, values: Sequence[float], level: float, what: str,
              fmt: str = ".3f") -> Verdict:
    """The claim that ``values`` (one per seed) do not fall below ``level`` (``what`` names it, e.g. "chance"):
    holds when they lie significantly above it, does not hold when significantly below (one-sided one-sample
    t-tests at 5%), otherwise inconclusive with the lean. With no spread the values decide directly."""
    values = list(values)
    ours = f"{span(values, fmt)} ({what}: {level:{fmt}})"
    n = f"{len(values)} seeds"
    if len(set(values)) <= 1:
        verdict = HOLDS if values and values[0] >= level else FAILS
        return Verdict(text, published, ours, verdict, seeds=n, chance="no spread across seeds")
    p_above, p_below = stats.one_sample_p(values, level, "greater"), stats.one_sample_p(values, level, "less")
    if p_above <= ALPHA:
        verdict, p = HOLDS, p_above
    elif p_below <= ALPHA:
        verdict, p = FAILS, p_below
    else:
        lean = "toward" if stats.mean(values) >= level else "against"
        verdict, p = f"{INCONCLUSIVE} (the data lean {lean} the claim)", p_above
    return Verdict(text, published, ours, verdict, seeds=n, effect=f"{stats.mean(values) - level:+{fmt}}",
                   chance=chance_text(p, verdict == FAILS))


def ratio_within(text: str, published: str, ratios: Sequence[float], lo: float, hi: float,
                 fmt: str = ".2f") -> Verdict:
    """The claim that a ratio (one value per seed) lies between ``lo`` and ``hi``, tested on log(ratio): holds when
    it is significantly above lo *and* below hi (one-sided one-sample t-tests at 5%; the larger p is reported), does
    not hold when it is significantly below lo or above hi, otherwise inconclusive with the lean."""
    ratios = list(ratios)
    ours = f"{span(ratios, fmt)}x"
    n = f"{len(ratios)} seeds"
    logs = [math.log(r) for r in ratios]
    if len(set(logs)) <= 1:
        inside = bool(logs) and lo <= ratios[0] <= hi
        return Verdict(text, published, ours, HOLDS if inside else FAILS, seeds=n, chance="no spread across seeds")
    lo_l, hi_l = math.log(lo), math.log(hi)
    p_in = max(stats.one_sample_p(logs, lo_l, "greater"), stats.one_sample_p(logs, hi_l, "less"))
    p_out = min(stats.one_sample_p(logs, lo_l, "less"), stats.one_sample_p(logs, hi_l, "greater"))
    if p_in <= ALPHA:
        verdict, p = HOLDS, p_in
    elif p_out <= ALPHA:
        verdict, p = FAILS, p_out
    else:
        lean = "toward" if lo <= math.exp(stats.mean(logs)) <= hi else "against"
        verdict, p = f"{INCONCLUSIVE} (the data lean {lean} the claim)", p_in
    return Verdict(text, published, ours, verdict, seeds=n, chance=chance_text(p, verdict == FAILS))


__all__ = ["Quote", "no_gain", "not_below", "quote", "ratio_within"]
