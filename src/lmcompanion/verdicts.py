"""Verdicts: a write-up's claim beside our measurement, judged with the spread over seeds in view.

The rule is deliberately simple and stated in every chapter: a claim that arm A beats arm B on a metric
(lower is better) **holds** when every seed of A is below every seed of B (their [min, max] ranges do not
overlap); it **does not hold** when every seed of A is above every seed of B; otherwise it is **inconclusive at
this scale**. With one seed per arm there is no spread to judge, and the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive at this scale"


def compare(better: Sequence[float], worse: Sequence[float]) -> str:
    """Verdict on "``better`` is lower than ``worse``" given one value per seed for each."""
    if len(better) < 2 or len(worse) < 2:
        return "inconclusive (one seed: no spread to judge)"
    if max(better) < min(worse):
        return HOLDS
    if min(better) > max(worse):
        return FAILS
    return INCONCLUSIVE


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's correlation of the ranks; ties get their average rank)."""
    import pandas as pd

    return float(pd.Series(list(x)).rank().corr(pd.Series(list(y)).rank()))


def span(values: Sequence[float], fmt: str = ".3f") -> str:
    """'mean [min, max]' over seeds (just the value for one seed)."""
    values = list(values)
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:{fmt}}"
    return f"{mean:{fmt}} [{min(values):{fmt}}, {max(values):{fmt}}]"


@dataclass(frozen=True)
class Verdict:
    claim: str  # the write-up's claim, in a sentence
    published: str  # the write-up's numbers behind it
    ours: str  # our measurement, with its spread
    verdict: str


def claim(text: str, published: str, better: Sequence[float], worse: Sequence[float],
          labels: tuple[str, str] = ("A", "B"), fmt: str = ".3f") -> Verdict:
    """A "``labels[0]`` < ``labels[1]``" claim with our per-seed values for each side."""
    ours = f"{labels[0]}: {span(better, fmt)}; {labels[1]}: {span(worse, fmt)}"
    return Verdict(text, published, ours, compare(better, worse))


def between(text: str, metric: str, better: str, worse: str, runs) -> Verdict:
    """The claim "experiment ``better`` beats experiment ``worse`` on ``metric``" (the final estimate, as the
    write-ups' tables report it), from their runs (experiment name -> runs) and the write-up's published numbers."""
    from . import experiments, tables

    pb, pw = experiments.get(better).published, experiments.get(worse).published
    published = f"{pb[metric]} vs {pw[metric]}" if metric in pb and metric in pw else "not in the write-up"
    labels = (better.split("/")[-1], worse.split("/")[-1])
    return claim(text, published, tables.final(runs[better], metric), tables.final(runs[worse], metric), labels)


def fewer_parameters(text: str, smaller: str, larger: str) -> Verdict:
    """The claim "experiment ``smaller`` has fewer parameters than ``larger``" at the write-up's size (paper
    profile), counted as the write-ups count; exact numbers, so no seeds are involved."""
    from . import experiments, models

    a, b = (models.num_params(experiments.config(n, "paper", device="cpu").model) for n in (smaller, larger))
    pa, pb = experiments.get(smaller).published.get("params"), experiments.get(larger).published.get("params")
    published = f"{pa:,} vs {pb:,}" if pa and pb else "not in the write-up"
    return Verdict(text, published, f"{a:,} vs {b:,}", HOLDS if a < b else FAILS)


def below(text: str, published: str, values: Sequence[float], limit: float, fmt: str = ".2e") -> Verdict:
    """The claim "the value ends below ``limit``", judged on every seed's value."""
    verdict = HOLDS if max(values) < limit else FAILS if min(values) >= limit else INCONCLUSIVE
    return Verdict(text, published, span(values, fmt), verdict)


def table(verdicts: Sequence[Verdict]):
    import pandas as pd

    return pd.DataFrame(
        [{"claim (write-up)": v.claim, "published": v.published, "ours (mean [min, max] over seeds)": v.ours,
          "verdict": v.verdict} for v in verdicts]
    )
