"""The statistics behind the verdicts: exact permutation tests over seeds, and summaries of per-seed values.

Pure functions of lists of floats (no runs, no models), so they sit at the bottom of the package and are tested by
simulation (``tests/test_stats.py``).

**Comparing two arms.** Each arm is trained with ``n`` seeds and gives one number per seed (e.g. the final
validation loss). If the two arms were in truth equal, every way of splitting the pooled numbers into two groups of
those sizes would be equally likely. :func:`permutation_p` enumerates all of them with ``scipy.stats.permutation_test`` (``C(n_a + n_b, n_a)``: 20 for
3 vs 3, 70 for 4 vs 4) and returns the share whose difference of means is at least as far in the claimed direction
as the observed one: the exact probability, under equal arms, of seeing a difference this large by chance. With
3 seeds per arm the smallest possible value is 1/20 = 0.05; with 2 it is 1/6, so two seeds can never give a
decisive verdict at the 5% level.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import formats

ALPHA = 0.05  # the largest chance, under equal arms, at which a verdict is decisive


def scipy_stats():
    """scipy's statistics, imported when a test is computed rather than with the module (about 0.4 s of every
    command line's start-up on the 2-core build machine, and most commands compute none)."""
    from scipy import stats

    return stats


def mean(values: Sequence[float]) -> float:
    values = list(values)
    return sum(values) / len(values)


def std(values: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for a single value."""
    values = list(values)
    if len(values) < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def span(values: Sequence[float], fmt: str | None = None) -> str:
    """'mean [min, max]' over seeds (just the value for one seed), in the book's number format
    (:func:`lmcompanion.formats.span`: the digits follow from the values; ``fmt`` gives only an explicit sign)."""
    return formats.span(values, fmt)


def _mean_difference(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def permutation_p(a: Sequence[float], b: Sequence[float], alternative: str = "less") -> float:
    """Exact one-sided permutation p-value of mean(a) - mean(b) (``scipy.stats.permutation_test``, every split
    enumerated).

    ``alternative="less"``: the chance, if a and b came from the same distribution, that a random split of the
    pooled values gives a difference of means <= the observed one ("a is lower"); ``"greater"``: >=. Ties count
    against the claim (scipy's comparison tolerates rounding, so the p-value is conservative).
    """
    if alternative not in ("less", "greater"):
        raise ValueError(f"alternative must be 'less' or 'greater', got {alternative!r}")
    if not len(a) or not len(b):
        raise ValueError("both arms need at least one value")
    if min(len(a), len(b)) < 2:  # scipy wants two values per arm; the same exact test, enumerated here
        return _enumerated_p(np.asarray(a, float), np.asarray(b, float), alternative)
    result = scipy_stats().permutation_test(
        (np.asarray(a, float), np.asarray(b, float)),
        _mean_difference,
        permutation_type="independent",
        alternative=alternative,
        n_resamples=np.inf,
        vectorized=True,
    )
    return float(result.pvalue)


def _enumerated_p(a: np.ndarray, b: np.ndarray, alternative: str) -> float:
    """The exact permutation p-value by enumerating the C(n_a + n_b, n_a) splits (for arms of one value, which
    ``scipy.stats.permutation_test`` refuses); ties count against the claim, as in scipy."""
    pooled, observed = np.concatenate([a, b]), a.mean() - b.mean()
    splits = [list(i) for i in itertools.combinations(range(pooled.size), a.size)]
    diffs = np.array([pooled[i].mean() - np.delete(pooled, i).mean() for i in splits])
    tolerance = 1e-12 * max(1.0, abs(observed))
    hits = diffs <= observed + tolerance if alternative == "less" else diffs >= observed - tolerance
    return float(hits.mean())


def min_p(n_a: int, n_b: int) -> float:
    """The smallest p-value an exact permutation test can give with these arm sizes."""
    return 1 / math.comb(n_a + n_b, n_a)


@dataclass(frozen=True)
class Comparison:
    """The claim "arm a is lower than arm b", judged on per-seed values."""

    n_a: int
    n_b: int
    effect: float  # mean(a) - mean(b): negative when a is lower
    se: float  # standard error of the effect (Welch)
    p_claim: float  # chance under equal arms of a difference at least this far in the claimed direction
    p_reverse: float  # the same in the opposite direction
    outcome: str  # "holds", "does not hold" or "inconclusive"

    @property
    def p(self) -> float:
        """The chance that the rule gives this verdict's direction if the arms were equal."""
        return self.p_reverse if self.outcome == "does not hold" else self.p_claim

    def effect_text(self) -> str:
        """The effect with its standard error ("-0.0123 ± 0.0041": the error to two significant digits, the effect to
        the same decimals, :func:`lmcompanion.formats.estimate`); without one where a side has a single value (no
        spread can be estimated from it)."""
        if min(self.n_a, self.n_b) < 2:
            return f"{formats.number(self.effect, sign='+')} (no spread: one seed on a side)"
        return formats.estimate(self.effect, self.se)

    @property
    def lean(self) -> str:
        return "a" if self.effect < 0 else "b" if self.effect > 0 else "neither"


def compare(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Comparison:
    """Judge "a is lower than b": holds when p_claim <= alpha, does not hold when p_reverse <= alpha (b is
    lower), inconclusive otherwise. Each decisive outcome has a chance of at most ``alpha`` under equal arms."""
    a, b = list(a), list(b)
    effect = mean(a) - mean(b)
    se = math.sqrt(std(a) ** 2 / len(a) + std(b) ** 2 / len(b))
    p_claim, p_reverse = permutation_p(a, b, "less"), permutation_p(a, b, "greater")
    outcome = "holds" if p_claim <= alpha else "does not hold" if p_reverse <= alpha else "inconclusive"
    return Comparison(len(a), len(b), effect, se, p_claim, p_reverse, outcome)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (ties get their average rank)."""
    return float(scipy_stats().spearmanr(x, y).statistic)


def spearman_p(x: Sequence[float], y: Sequence[float], alternative: str = "greater") -> float:
    """Exact one-sided permutation p-value of Spearman's rho: every ordering of ``y`` against ``x``."""
    x = np.asarray(x, float)
    sp = scipy_stats()
    result = sp.permutation_test(
        (np.asarray(y, float),),
        lambda v: sp.spearmanr(x, v).statistic,
        permutation_type="pairings",
        alternative=alternative,
        n_resamples=np.inf,
    )
    return float(result.pvalue)


def one_sample_p(values: Sequence[float], limit: float, alternative: str = "less") -> float:
    """One-sided one-sample t-test of mean(values) against ``limit`` (``scipy.stats.ttest_1samp``); 1.0 when the
    values have no spread to judge (fewer than two, or all equal)."""
    values = np.asarray(values, float)
    if values.size < 2 or np.all(values == values[0]):
        return 1.0
    return float(scipy_stats().ttest_1samp(values, limit, alternative=alternative).pvalue)


def _pooled_chi_square(counts: np.ndarray, expected: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson's χ² of ``counts`` against ``expected`` along ``axis``, with the bins expected to hold fewer than 5
    draws pooled into one (so that a rare token drawn once does not dominate the sum)."""
    small = expected < 5
    big = np.where(small, 0.0, (counts - expected) ** 2 / np.where(small, 1.0, expected)).sum(axis)
    o, e = np.where(small, counts, 0).sum(axis), np.where(small, expected, 0.0).sum(axis)
    return big + np.where(e > 0, (o - e) ** 2 / np.where(e > 0, e, 1.0), 0.0)


def goodness_of_fit_p(counts: Sequence[int], probs: Sequence[float], seed: int = 0, n_resamples: int = 9999) -> float:
    """p-value of draws ``counts`` (one count per category) against the distribution ``probs``: the pooled χ²
    statistic calibrated by ``scipy.stats.monte_carlo_test`` on ``n_resamples`` multinomial samples drawn by
    NumPy (``seed``), not by χ²'s large-sample approximation. That approximation is anti-conservative when most of
    the mass sits on one token and the rest is a handful of expected draws (over 300 seeds it put a correct sampler
    below 0.05 7% of the time); the Monte Carlo p-value, ``(1 + #{null ≥ observed}) / (n + 1)``,
    falls at or below α with probability at most α whatever the distribution. NaN when ``probs`` puts all its mass
    on one category (there is nothing to test)."""
    counts = np.asarray(counts, float)
    probs = np.asarray(probs, float)
    probs = probs / probs.sum()
    if np.count_nonzero(probs) < 2:
        return float("nan")
    n = int(round(counts.sum()))
    rng = np.random.default_rng(seed)
    result = scipy_stats().monte_carlo_test(
        counts,
        lambda size: rng.multinomial(n, probs, size=size[:-1]).astype(float),
        lambda c, axis: _pooled_chi_square(c, probs * n, axis),
        vectorized=True,
        n_resamples=n_resamples,
        alternative="greater",
        axis=-1,
    )
    return float(result.pvalue)


__all__ = [
    "ALPHA",
    "Comparison",
    "compare",
    "goodness_of_fit_p",
    "mean",
    "min_p",
    "one_sample_p",
    "permutation_p",
    "scipy_stats",
    "span",
    "spearman",
    "spearman_p",
    "std",
]
